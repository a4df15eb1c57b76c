//! Sparse rows through preprocessing and the catalog (issue 12 §2): the per-row steps on CSR
//! rows give [`Preprocessing::apply`]'s values bit for bit; the catalog's `fit_sparse` gives
//! `fit`'s model on the rows densified (public bounds and bounds estimated privately, DP-GD
//! and noisy projected GD), and exactly the learners that say so fit sparse rows.
//!
//! Every comparison is bit for bit, with BLAS too: where the dense row norms or decision values
//! are compared (computed by `ddot`/`dgemv` in builds with BLAS, in an unspecified order;
//! module `dp_glm::sparse`), the values are multiples of 1/8 of a few bits, whose products and
//! sums are exact in any order.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_data::CsrData;
use dp_glm::bounds::PrivateBounds;
use dp_glm::catalog::{self, NoProgress, Params, Request, Value};
use dp_glm::sparse::SparseDataset;
use dp_glm::{Error, Loss, Preprocessing};
use ndarray::Array1;

/// Deterministic pseudo-random numbers (SplitMix64), so the rows need no generator crate.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` rows of `d` features, each entry present with probability `density`, its value from
/// `value`; rows 3, 10, 17, … empty; labels ±1, or in `[−2, 2)` with `real`.
fn rows(
    n: usize,
    d: usize,
    density: f64,
    real: bool,
    mut value: impl FnMut(&mut Mix) -> f64,
) -> CsrData {
    let mut mix = Mix(7);
    let (mut indptr, mut indices, mut values, mut y) = (vec![0], vec![], vec![], vec![]);
    for i in 0..n {
        for j in 0..d {
            if i % 7 != 3 && mix.unit() < density {
                let v = value(&mut mix);
                if v != 0.0 {
                    indices.push(j);
                    values.push(v);
                }
            }
        }
        indptr.push(values.len());
        y.push(match (real, mix.next() % 2) {
            (true, _) => mix.unit() * 4.0 - 2.0,
            (false, 0) => -1.0,
            (false, _) => 1.0,
        });
    }
    CsrData {
        n_features: d,
        indptr,
        indices,
        values,
        y,
    }
}

/// Multiples of 1/8 in `(−4, 4)`: sums of their squares are exact in any order.
fn dyadic(mix: &mut Mix) -> f64 {
    (mix.next() % 63) as f64 / 8.0 - 3.875
}

/// Values of any magnitude from 1e-3 to 1e2, either sign.
fn anything(mix: &mut Mix) -> f64 {
    (mix.unit() - 0.5) * 10f64.powi((mix.next() % 6) as i32 - 3)
}

#[test]
fn per_row_steps_on_sparse_rows_are_the_dense_values() {
    let mut csr = rows(120, 45, 0.2, false, anything);
    // Rows whose squares overflow and underflow, as `Preprocessing::apply` handles them.
    csr.values[0] = 1.7e308;
    csr.values[1] = -1.5e308;
    let last = csr.values.len() - 1;
    csr.values[last] = 2.7e-162;
    let raw = SparseDataset::new(csr.clone()).unwrap().to_dense().unwrap();
    for (unit_norm, bias) in [(true, Some(1.0)), (true, None), (false, Some(-0.25))] {
        let prep = Preprocessing {
            unit_norm,
            bias,
            ..Preprocessing::default()
        };
        let sparse = SparseDataset::preprocessed(csr.clone(), &prep).unwrap();
        let dense = prep.apply(raw.x().view()).unwrap();
        let bits = |x: &ndarray::Array2<f64>| x.mapv(f64::to_bits);
        assert_eq!(
            bits(&sparse.to_dense().unwrap().x().to_owned()),
            bits(&dense)
        );
        assert_eq!(sparse.y(), raw.y());
        // The bias is stored in every row, empty ones too; no other entry is added.
        let extra = usize::from(bias.is_some());
        assert_eq!(sparse.nnz(), csr.nnz() + extra * csr.n_samples());
        assert_eq!(sparse.n_features(), 45 + extra);
    }
    // Without steps the rows are unchanged.
    let same = SparseDataset::preprocessed(csr.clone(), &Preprocessing::default()).unwrap();
    assert_eq!(same.csr(), &csr);
}

#[test]
fn steps_that_densify_or_project_are_refused_by_name() {
    let csr = rows(20, 6, 0.5, false, dyadic);
    let name = |prep: Preprocessing| match SparseDataset::preprocessed(csr.clone(), &prep) {
        Err(Error::InvalidHyperParameter { name, .. }) => name,
        other => panic!("{other:?}"),
    };
    let projected = Preprocessing {
        row_bound: Some(1.0),
        ..Preprocessing::default()
    };
    assert_eq!(name(projected), "row_bound");
    let zero_bias = Preprocessing {
        bias: Some(0.0),
        ..Preprocessing::default()
    };
    assert_eq!(name(zero_bias), "bias");
    // Malformed rows are caught before any step indexes them.
    let mut bad = csr.clone();
    bad.indptr[3] = bad.values.len() + 5;
    let unit = Preprocessing {
        unit_norm: true,
        bias: Some(1.0),
        ..Preprocessing::default()
    };
    assert!(matches!(
        SparseDataset::preprocessed(bad, &unit),
        Err(Error::MalformedSparse { .. })
    ));
}

#[test]
fn margins_are_the_dense_decision_values() {
    let data = SparseDataset::new(rows(90, 40, 0.3, false, dyadic)).unwrap();
    let w = Array1::from_shape_fn(40, |j| (j as f64 - 19.5) / 8.0);
    let dense = data.to_dense().unwrap();
    assert_eq!(data.margins(w.view()).unwrap(), dense.x().dot(&w));
    assert!(matches!(
        data.margins(Array1::zeros(39).view()),
        Err(Error::ShapeMismatch { .. })
    ));
}

/// The catalog's fit of `name` on `data` with `params`, sparse or densified; `row_bound` as
/// the preprocessing guarantees.
fn fit(
    name: &str,
    loss: Loss,
    params: &Params,
    data: &SparseDataset,
    row_bound: Option<f64>,
    sparse: bool,
) -> Result<String, catalog::CatalogError> {
    let learner = catalog::learner(name).unwrap();
    let needs = learner.needs(loss, row_bound, params)?;
    let planned = needs.iter().filter(|n| n.is_estimated()).count();
    let bounds = PrivateBounds::new(1.0, 1e-5, 0.1, planned).unwrap();
    let request = Request {
        loss,
        delta: 1e-5,
        params,
        needs: &needs,
    };
    let mut rng = dp_optim::seeded_rng(11);
    let (model, _) = if sparse {
        learner.fit_sparse(&request, data, bounds, &mut rng, &mut NoProgress)?
    } else {
        let dense = data.to_dense().unwrap();
        learner.fit(&request, &dense, bounds, &mut rng, &mut NoProgress)?
    };
    Ok(model.to_json().unwrap())
}

#[test]
fn catalog_sparse_fits_are_the_dense_fits() {
    let mut params = Params::new();
    params.set("steps", Value::Count(15));
    // Classification rows with a bias, and regression rows: without a public row bound the
    // clip (DP-GD) and x_bound and y_bound (noisy GD) are estimated privately, from the same
    // norms and labels; with one (as unit rows give), the defaults are public.
    let bias = Preprocessing {
        bias: Some(0.5),
        ..Preprocessing::default()
    };
    let class = SparseDataset::preprocessed(rows(400, 50, 0.1, false, dyadic), &bias).unwrap();
    let real = SparseDataset::new(rows(400, 50, 0.1, true, dyadic)).unwrap();
    let cases = [
        (Loss::Logistic, &class, None),
        (Loss::Logistic, &class, Some(40.0)),
        (Loss::Squared, &real, None),
    ];
    for name in ["dp-gd", "noisy-gd"] {
        for &(loss, data, row_bound) in &cases {
            let sparse = fit(name, loss, &params, data, row_bound, true).unwrap();
            let dense = fit(name, loss, &params, data, row_bound, false).unwrap();
            assert_eq!(sparse, dense, "{name}, {}", loss.name());
        }
    }
    // Every other learner: no sparse path, said as a conflict naming it.
    for learner in catalog::LEARNERS {
        assert_eq!(
            learner.fits_sparse(),
            ["dp-gd", "noisy-gd"].contains(&learner.name)
        );
        if learner.fits_sparse() {
            continue;
        }
        let loss = match learner.losses {
            catalog::Losses::Squared => Loss::Squared,
            catalog::Losses::Any => Loss::Logistic,
        };
        match fit(learner.name, loss, &Params::new(), &class, Some(1.5), true) {
            Err(catalog::CatalogError::Conflict(m)) => {
                assert!(m.contains(learner.name) && m.contains("sparse"), "{m}")
            }
            other => panic!("{}: {other:?}", learner.name),
        }
    }
}
