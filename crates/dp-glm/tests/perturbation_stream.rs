//! Objective perturbation, AMP and output perturbation on data read block by block: the
//! streamed objective sums the in-memory leaves over the in-memory tree, so each streamed
//! fit equals the in-memory fit bit for bit, for every block size (blocks that cut the
//! 8192-row leaves, blocks of whole leaves, one block); a source error and a source that
//! changes between passes are errors, not models.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::cell::Cell;

use dp_accounting::Neighbouring;
use dp_data::{LoadedData, RowBlock};
use dp_glm::sufficient::StreamError;
use dp_glm::{Amp, AmpSolver, Dataset, Error, LinearModel, Loss};
use dp_glm::{ObjectivePerturbation, OutputPerturbation};
use dp_optim::seeded_rng;

mod common;
use common::{bits, classification, dataset, failing_at_pass, never};

/// `n × d` rows uniform in `[−1, 1)` (norms up to √d: many beyond the bound X = 1, which
/// scales them), labels ±1 from the sign of the first two coordinates' sum, 10% flipped.
fn data(n: usize, d: usize, seed: u64) -> LoadedData {
    classification(n, d, 1.0, seed)
}

/// Rows: two whole leaves of 8192 and a cut one.
const N: usize = 2 * 8192 + 1500;

/// Block sizes: cutting the leaves, whole leaves, a leaf and a half, one block.
const BLOCKS: [usize; 4] = [3000, 8192, 12_288, 40_000];

/// Compares `fit_blocks` with `fit` for every block size, and checks that another seed gives
/// another model (the comparison can fail).
fn same_as_in_memory<F, G>(name: &str, data: &LoadedData, fit: F, fit_blocks: G)
where
    F: Fn(&Dataset, u64) -> LinearModel,
    G: Fn(&LoadedData, usize, u64) -> LinearModel,
{
    let ds = dataset(data);
    let whole = fit(&ds, 7);
    for block in BLOCKS {
        let s = fit_blocks(data, block, 7);
        assert_eq!(bits(&s), bits(&whole), "{name}, blocks of {block} rows");
        assert_eq!(s, whole, "{name}, blocks of {block} rows");
    }
    assert_ne!(bits(&fit(&ds, 8)), bits(&whole), "{name}");
}

#[test]
fn streamed_objective_perturbation_and_amp_equal_the_in_memory_fits() {
    let data = data(N, 4, 1);
    let mut objpert = ObjectivePerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
    objpert.clip = Some(0.8);
    same_as_in_memory(
        "objpert",
        &data,
        |ds, seed| objpert.fit(ds, &mut seeded_rng(seed)).unwrap(),
        |d, block, seed| {
            let fitted = objpert.fit_blocks(|| d.blocks(block), &mut seeded_rng(seed));
            fitted.unwrap()
        },
    );
    let mut amp = Amp::new(Loss::HuberSvm { h: 0.5 }).budget(2.0, 1e-5);
    amp.objpert.public_n = Some(20_000);
    same_as_in_memory(
        "amp",
        &data,
        |ds, seed| amp.fit(ds, &mut seeded_rng(seed)).unwrap(),
        |d, block, seed| {
            let fitted = amp.fit_blocks(|| d.blocks(block), &mut seeded_rng(seed));
            fitted.unwrap()
        },
    );
    // SAG needs random rows: refused before the source is opened.
    amp.solver = AmpSolver::Sag;
    let e = amp.fit_blocks(never, &mut seeded_rng(1)).unwrap_err();
    assert!(
        matches!(
            e,
            StreamError::Fit(Error::InvalidHyperParameter { name: "solver", .. })
        ),
        "{e}"
    );
}

#[test]
fn streamed_output_perturbation_equals_the_in_memory_fit() {
    let data = data(N, 3, 2);
    for (relation, public_n) in [
        (Neighbouring::ReplaceOne, None),
        (Neighbouring::AddRemove, Some(18_000)),
    ] {
        let mut l = OutputPerturbation::new(Loss::Logistic).budget(1.0, 1e-5);
        l.lambda = 0.05;
        l.radius = 2.0;
        l.budget.neighbouring = relation;
        l.public_n = public_n;
        same_as_in_memory(
            "output perturbation",
            &data,
            |ds, seed| l.fit(ds, &mut seeded_rng(seed)).unwrap(),
            |d, block, seed| {
                let fitted = l.fit_blocks(|| d.blocks(block), &mut seeded_rng(seed));
                fitted.unwrap()
            },
        );
    }
    // The ridge chosen from the counted shape: the catalog's rule, as in memory.
    let l = OutputPerturbation::new(Loss::Logistic);
    let mut tuned = l.clone();
    tuned.lambda = l.default_lambda((N, 3)).unwrap();
    let whole = tuned.fit(&dataset(&data), &mut seeded_rng(3)).unwrap();
    let streamed = l
        .fit_blocks_with(
            || data.blocks(5000),
            |l, shape| {
                assert_eq!(shape, (N, 3));
                l.default_lambda(shape)
            },
            &mut seeded_rng(3),
        )
        .unwrap();
    assert_eq!(streamed, whole);
    // Add/remove without a public n is refused before the source is opened.
    let mut l = OutputPerturbation::new(Loss::Logistic);
    l.budget.neighbouring = Neighbouring::AddRemove;
    let e = l.fit_blocks(never, &mut seeded_rng(1)).unwrap_err();
    assert!(
        matches!(e, StreamError::Fit(Error::UnsupportedNeighbouring { .. })),
        "{e}"
    );
}

/// A source that fails in a later pass, and one whose values change between passes: the
/// error is returned, never a model, for each learner.
#[test]
fn source_errors_and_changed_sources_release_nothing() {
    let data = data(9000, 3, 3);
    let mut changed = data.clone();
    changed.x[[8500, 1]] += 0.25;
    let objpert = ObjectivePerturbation::new(Loss::Logistic);
    let amp = Amp::new(Loss::Logistic);
    let output = OutputPerturbation::new(Loss::Logistic);
    type Fit<'a> = Box<dyn Fn(&dyn Fn() -> Vec<Result<RowBlock, dp_data::Error>>) -> String + 'a>;
    let learners: [(&str, Fit); 3] = [
        (
            "objpert",
            Box::new(|s| fit_error(objpert.fit_blocks(s, &mut seeded_rng(1)))),
        ),
        (
            "amp",
            Box::new(|s| fit_error(amp.fit_blocks(s, &mut seeded_rng(1)))),
        ),
        (
            "output perturbation",
            Box::new(|s| fit_error(output.fit_blocks(s, &mut seeded_rng(1)))),
        ),
    ];
    for (name, fit) in &learners {
        // Fails in the fourth pass, in its second block.
        let failing = failing_at_pass(&data, 4000, 4);
        let e = fit(&failing);
        assert!(
            e.starts_with("source: ") && e.contains("disk gone"),
            "{name}: {e}"
        );
        // One value reads differently from the third pass on.
        let passes = Cell::new(0);
        let changing = || {
            passes.set(passes.get() + 1);
            let d = if passes.get() < 3 { &data } else { &changed };
            d.blocks(3000).collect()
        };
        let e = fit(&changing);
        assert!(e.contains("changed between passes"), "{name}: {e}");
    }
}

/// `"source: …"` for a source error, else the fit's error; panics on a model.
fn fit_error<E: std::error::Error>(r: Result<LinearModel, StreamError<E>>) -> String {
    match r {
        Ok(_) => panic!("a model was released"),
        Err(StreamError::Source(e)) => format!("source: {e}"),
        Err(StreamError::Fit(e)) => e.to_string(),
    }
}
