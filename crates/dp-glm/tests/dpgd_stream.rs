//! DP-GD and noisy projected GD on data read block by block: the exact clipped sums do not
//! depend on the blocks, so the streamed fit equals the in-memory fit bit for bit, for every
//! block size; a source error and a source that changes between passes are errors, not
//! models.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_accounting::Neighbouring;
use dp_data::{LoadedData, RowBlock};
use dp_glm::sufficient::StreamError;
use dp_glm::{Dataset, DpGd, Error, LinearModel, Loss, NoisyProjectedGd};
use dp_optim::seeded_rng;
use ndarray::Array1;

mod common;
use common::{bits, classification, dataset, failing_at_pass, never};

/// `n × d` rows uniform in `[−1.5, 1.5)` (many gradients exceed the clip), labels ±1 from
/// the sign of the first two coordinates' sum, 10% flipped.
fn data(n: usize, d: usize, seed: u64) -> LoadedData {
    classification(n, d, 1.5, seed)
}

fn learner() -> DpGd {
    let mut m = DpGd::new(Loss::Logistic);
    m.steps = 20;
    m.clip = 0.5;
    m.lambda = 1e-3;
    m
}

fn in_memory(m: &DpGd, data: &LoadedData, seed: u64) -> LinearModel {
    m.fit(&dataset(data), &mut seeded_rng(seed)).unwrap()
}

/// Same rows, same seed: the same model (coefficients bit for bit, and the report), for
/// blocks of 1, 7, 64, 1000 and more rows than the data has, under both relations and with
/// a public n.
#[test]
fn streamed_and_in_memory_fits_are_bit_identical() {
    let data = data(2503, 5, 1);
    for (relation, public_n) in [
        (Neighbouring::ReplaceOne, None),
        (Neighbouring::AddRemove, Some(2600)),
    ] {
        let mut m = learner();
        m.budget.neighbouring = relation;
        m.public_n = public_n;
        let whole = in_memory(&m, &data, 42);
        for block in [1, 7, 64, 1000, 10_000] {
            let s = m
                .fit_blocks(|| data.blocks(block), &mut seeded_rng(42))
                .unwrap();
            assert_eq!(
                bits(&s),
                bits(&whole),
                "block of {block} rows, {relation:?}"
            );
            assert_eq!(s, whole, "block of {block} rows, {relation:?}");
        }
        // Another seed gives another model (the test can fail).
        assert_ne!(bits(&in_memory(&m, &data, 43)), bits(&whole));
    }
}

/// Noisy projected GD: its default steps and step size derive from the counted rows or the
/// public n, as in memory; the same model for every block size.
#[test]
fn streamed_noisy_gd_equals_the_in_memory_fit() {
    let data = data(700, 5, 4);
    let ds = dataset(&data);
    for (steps, public_n, relation) in [
        (Some(30), None, Neighbouring::ReplaceOne),
        (None, None, Neighbouring::ReplaceOne),
        (None, Some(800), Neighbouring::AddRemove),
    ] {
        let mut m = NoisyProjectedGd::new(Loss::Logistic).radius(3.0);
        m.x_bound = 2.0;
        m.steps = steps;
        m.public_n = public_n;
        m.budget.neighbouring = relation;
        let whole = m.fit(&ds, &mut seeded_rng(9)).unwrap();
        let expected = steps.or(public_n).unwrap_or(700) as u64;
        assert_eq!(whole.privacy().event.releases()[0].count, expected);
        for block in [13, 256, 1000] {
            let s = m
                .fit_blocks(|| data.blocks(block), &mut seeded_rng(9))
                .unwrap();
            assert_eq!(bits(&s), bits(&whole), "block of {block} rows, {steps:?}");
            assert_eq!(s, whole, "block of {block} rows, {steps:?}");
        }
    }
    // A bad hyper-parameter fails before the data is read.
    let mut m = NoisyProjectedGd::new(Loss::Logistic);
    m.radius = -1.0;
    let e = m.fit_blocks(never, &mut seeded_rng(1)).unwrap_err();
    assert!(
        matches!(e, StreamError::Fit(Error::InvalidHyperParameter { .. })),
        "{e}"
    );
}

/// A source error at any pass is returned (the run's output discarded), as is a source
/// whose row count changes between passes.
#[test]
fn source_errors_and_changing_sources_are_errors() {
    let data = data(300, 3, 2);
    let m = learner();
    // Fails in the third pass (the first counts, then one per step), in its second block.
    let failing = failing_at_pass(&data, 100, 3);
    let e = m.fit_blocks(failing, &mut seeded_rng(1)).unwrap_err();
    assert!(matches!(e, StreamError::Source(_)), "{e}");
    assert!(e.to_string().contains("disk gone"), "{e}");
    // A later pass with fewer rows than the first.
    let calls = std::cell::Cell::new(0);
    let shrinking = || {
        calls.set(calls.get() + 1);
        let take = if calls.get() == 1 { 3 } else { 2 };
        data.blocks(100).take(take)
    };
    let e = m.fit_blocks(shrinking, &mut seeded_rng(1)).unwrap_err();
    assert!(
        matches!(e, StreamError::Fit(Error::ShapeMismatch { .. })),
        "{e}"
    );
    // No rows; labels outside the loss's domain.
    let none = || std::iter::empty::<Result<RowBlock, dp_data::Error>>();
    let e = m.fit_blocks(none, &mut seeded_rng(1)).unwrap_err();
    assert!(
        matches!(e, StreamError::Fit(Error::EmptyData { .. })),
        "{e}"
    );
    let mut bad = data.clone();
    bad.y[150] = 0.5;
    let e = m
        .fit_blocks(|| bad.blocks(64), &mut seeded_rng(1))
        .unwrap_err();
    assert!(
        matches!(e, StreamError::Fit(Error::LabelOutOfDomain { .. })),
        "{e}"
    );
}

/// A batch (indices into the whole data) picks the same rows from the blocks as from the
/// data in memory: the exact sums are equal, the `f64` sums equal up to the order of the
/// additions; with no batch, every row.
#[test]
fn streamed_sums_over_a_batch_are_the_in_memory_ones() {
    use dp_glm::streamed::StreamedSum;
    use dp_glm::{GlmObjective, Scale};
    use dp_optim::{ClippedSum, ExactSum, Quantiser};

    let data = data(500, 4, 3);
    let ds = dataset(&data);
    let glm = GlmObjective::new(&ds, Loss::Logistic, 0.0, Scale::Mean).unwrap();
    let sum = StreamedSum::new(|| data.blocks(37), Loss::Logistic, None).unwrap();
    assert_eq!((sum.rows(), sum.n_examples(), sum.dim()), (500, 500, 4));
    let x = ndarray::array![0.3, -1.0, 0.5, 2.0];
    let quantiser = Quantiser::new(0.5, 2f64.powi(-30), 4).unwrap();
    let batch: Vec<usize> = (0..500).filter(|i| i % 7 == 3 || *i > 480).collect();
    for b in [Some(&batch[..]), None] {
        let (mut s, mut m) = (ExactSum::new(quantiser), ExactSum::new(quantiser));
        sum.exact_clipped_sum(x.view(), b, &mut s);
        glm.exact_clipped_sum(x.view(), b, &mut m);
        assert_eq!(s.totals(), m.totals());
        assert!(s.totals().iter().any(|&t| t != 0));
        let (mut fs, mut fm) = (Array1::zeros(4), Array1::zeros(4));
        sum.clipped_sum(x.view(), b, 0.5, fs.view_mut());
        glm.clipped_sum(x.view(), b, 0.5, fm.view_mut());
        for (a, b) in fs.iter().zip(&fm) {
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{fs} vs {fm}");
        }
    }
    sum.finish().unwrap();
}

/// The kept-buffer sources the CLI streams a file through ([`Reopen`] reading into one
/// buffer, [`Preprocessed`] applying unit norm and a bias into another): the same model, bit
/// for bit, as the in-memory fit on the preprocessed rows, for blocks of 1, 100 (which do
/// not divide the rows) and more than the data has; and a pass reading one value other than
/// the first pass read is an error, not a model.
#[test]
fn kept_buffer_sources_fit_the_in_memory_model_and_catch_a_changed_value() {
    use dp_glm::Preprocessing;
    use dp_glm::streamed::{Preprocessed, Reopen};

    let data = data(1001, 4, 5);
    let prep = Preprocessing {
        scaling: None,
        unit_norm: true,
        bias: Some(1.0),
        row_bound: None,
    };
    let mut m = learner();
    m.steps = 8;
    let x = prep.apply(data.x.view()).unwrap();
    let ds = Dataset::new(x, data.y.clone()).unwrap();
    let whole = m.fit(&ds, &mut seeded_rng(5)).unwrap();
    for block in [1, 100, 5000] {
        let source = Preprocessed::new(Reopen::new(|| Ok(data.blocks(block))), &prep);
        let s = m.fit_blocks(&source, &mut seeded_rng(5)).unwrap();
        assert_eq!(bits(&s), bits(&whole), "block of {block} rows");
        assert_eq!(s, whole, "block of {block} rows");
    }
    // From the second pass on, one feature of one row reads differently (same rows, same
    // labels, still finite and in the domain).
    let mut changed = data.clone();
    changed.x[[700, 2]] += 0.25;
    let passes = std::cell::Cell::new(0);
    let source = Reopen::new(|| {
        passes.set(passes.get() + 1);
        Ok(if passes.get() == 1 { &data } else { &changed }.blocks(64))
    });
    let e = m.fit_blocks(&Preprocessed::new(source, &prep), &mut seeded_rng(5));
    let e = e.unwrap_err();
    assert!(
        matches!(&e, StreamError::Fit(Error::Privacy(r)) if r.contains("changed between passes")),
        "{e}"
    );
}
