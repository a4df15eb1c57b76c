//! AdaSSP on sparse rows (issue 12 §2): [`SufficientStats::add_sparse`] gives the integers of
//! the same rows densified, so [`Ssp::fit_sparse`] releases [`Ssp::fit`]'s model bit for bit
//! with the same generator — for rows longer than the bound (projected), rows whose norm
//! overflows, empty rows, labels beyond the label bound, and with a public row count.
//!
//! The values are multiples of 1/8 of a few bits, so a row's norm is exact in any order of
//! its squares (with BLAS, the dense norm of a row of 32 entries or more is `ddot`'s; module
//! `dp_glm::sparse`), and the rows whose norm overflows are powers of two apart.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_data::CsrData;
use dp_glm::sparse::SparseDataset;
use dp_glm::sufficient::SufficientStats;
use dp_glm::{Error, Ssp};
use dp_optim::seeded_rng;

/// `n` rows of `d` features: about a quarter of the entries present, each `k/8` for an
/// integer `|k| ≤ 32`; every sixth row empty, row 1 of entries up to `2^1020` (its norm
/// overflows); labels in `[−3, 3)`, multiples of 1/16.
fn rows(n: usize, d: usize) -> CsrData {
    let mut state = 11u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let (mut indptr, mut indices, mut values, mut y) = (vec![0], vec![], vec![], vec![]);
    for i in 0..n {
        for j in 0..d {
            let k = (next() % 65) as i64 - 32;
            if i % 6 != 5 && next() % 4 == 0 && k != 0 {
                indices.push(j);
                values.push(if i == 1 {
                    k as f64 * 2f64.powi(1015)
                } else {
                    k as f64 / 8.0
                });
            }
        }
        indptr.push(values.len());
        y.push((next() % 96) as f64 / 16.0 - 3.0);
    }
    CsrData {
        n_features: d,
        indptr,
        indices,
        values,
        y,
    }
}

#[test]
fn sparse_statistics_and_fits_are_the_dense_ones() {
    for (n, d) in [(300, 40), (120, 7), (64, 1)] {
        let sparse = SparseDataset::new(rows(n, d)).unwrap();
        let dense = sparse.to_dense().unwrap();
        // Bounds that clip most rows and some labels.
        for (bx, by) in [(1.5, 2.0), (40.0, 0.5)] {
            let mut from_sparse = SufficientStats::new(d, bx, by).unwrap();
            from_sparse.add_sparse(&sparse).unwrap();
            let mut from_dense = SufficientStats::new(d, bx, by).unwrap();
            from_dense
                .add_block(dense.x().view(), dense.y(), 0)
                .unwrap();
            assert_eq!(
                from_sparse, from_dense,
                "n = {n}, d = {d}, bounds {bx}, {by}"
            );
            let gram = from_sparse.gram();
            assert!(gram.iter().any(|&v| v != 0.0), "nothing was summed");

            let public = Ssp {
                public_n: Some(2 * n),
                ..Ssp::new(bx, by)
            };
            for ssp in [Ssp::new(bx, by), public] {
                let a = ssp.fit_sparse(&sparse, &mut seeded_rng(5)).unwrap();
                let b = ssp.fit(&dense, &mut seeded_rng(5)).unwrap();
                assert_eq!(a.coef(), b.coef(), "n = {n}, d = {d}");
                assert_eq!(a.intercept().to_bits(), b.intercept().to_bits());
                assert_eq!(a.privacy(), b.privacy());
                // Another stream gives another (private) model: the fit is not a constant.
                let c = ssp.fit_sparse(&sparse, &mut seeded_rng(6)).unwrap();
                assert_ne!(a.coef(), c.coef());
            }
        }
    }
}

#[test]
fn sparse_rows_of_another_width_are_refused() {
    let sparse = SparseDataset::new(rows(20, 9)).unwrap();
    let mut stats = SufficientStats::new(8, 1.0, 1.0).unwrap();
    assert!(matches!(
        stats.add_sparse(&sparse),
        Err(Error::ShapeMismatch { .. })
    ));
    assert_eq!(stats.n_samples(), 0);
}
