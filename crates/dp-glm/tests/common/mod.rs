//! Seeded data, sources and checks shared by the streamed-fit tests
//! (`perturbation_stream`, `dpgd_stream`, `ssp_stream`).

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::cell::Cell;

use dp_data::{LoadedData, RowBlock};
use dp_glm::{Dataset, LinearModel};
use ndarray::{Array1, Array2};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The rows and labels, with no feature names.
pub fn loaded(x: Array2<f64>, y: Array1<f64>) -> LoadedData {
    LoadedData {
        x,
        y,
        feature_names: None,
    }
}

/// `n × d` rows with entries uniform in `[−scale, scale)`, drawn from `r` row by row.
pub fn uniform_rows(r: &mut Xoshiro256PlusPlus, n: usize, d: usize, scale: f64) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |_| scale * r.random_range(-1.0..1.0))
}

/// `n × d` rows uniform in `[−scale, scale)`, labels ±1 from the sign of the first two
/// coordinates' sum, 10% flipped.
pub fn classification(n: usize, d: usize, scale: f64, seed: u64) -> LoadedData {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x = uniform_rows(&mut r, n, d, scale);
    let y = Array1::from_shape_fn(n, |i| {
        let s = x[[i, 0]] + x[[i, 1]];
        let flip = r.random_range(0.0..1.0) < 0.1;
        if (s >= 0.0) != flip { 1.0 } else { -1.0 }
    });
    loaded(x, y)
}

/// The rows in memory.
pub fn dataset(data: &LoadedData) -> Dataset {
    Dataset::new(data.x.clone(), data.y.clone()).unwrap()
}

/// The coefficients' bits.
pub fn bits(m: &LinearModel) -> Vec<u64> {
    m.coef().iter().map(|v| v.to_bits()).collect()
}

/// A source that must not be opened: a learner that refuses before reading passes it.
pub fn never() -> std::iter::Empty<Result<RowBlock, dp_data::Error>> {
    panic!("the source was opened")
}

/// `data` in blocks of `block` rows, pass after pass, except that the `pass`-th pass
/// (counting from 1) has an I/O error ("disk gone") for its second block.
pub fn failing_at_pass(
    data: &LoadedData,
    block: usize,
    pass: usize,
) -> impl Fn() -> Vec<Result<RowBlock, dp_data::Error>> + '_ {
    let passes = Cell::new(0);
    move || {
        passes.set(passes.get() + 1);
        let fail = passes.get() == pass;
        let blocks = data.blocks(block).enumerate().map(|(i, b)| {
            if fail && i == 1 {
                Err(dp_data::Error::Io {
                    path: "broken.csv".into(),
                    source: std::io::Error::other("disk gone"),
                })
            } else {
                b
            }
        });
        blocks.collect()
    }
}
