//! AdaSSP on exact sufficient statistics: the streamed fit (row blocks) equals the in-memory
//! fit bit for bit, for every block size and row order; the public row count takes the
//! data's count out of the release; the statistics are exact.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_data::{LoadedData, RowBlock};
use dp_glm::learners::Ssp;
use dp_glm::sufficient::{StreamError, SufficientStats};
use dp_glm::{Error, LinearModel};
use dp_optim::seeded_rng;
use ndarray::{Array1, Array2, Axis};
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

mod common;
use common::{bits, dataset, loaded, uniform_rows};

/// `n × d` rows with entries uniform in `[−1, 1)` scaled so some rows exceed `B_X = 2` (and
/// are clipped), `y = ⟨x, 1/√d⟩ + noise`, some beyond `B_Y = 1.5`.
fn data(n: usize, d: usize, seed: u64) -> LoadedData {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x = uniform_rows(&mut r, n, d, 1.5);
    let w = Array1::from_elem(d, 1.0 / (d as f64).sqrt());
    let y = x.dot(&w) + Array1::from_shape_fn(n, |_| 0.3 * r.random_range(-1.0..1.0));
    loaded(x, y)
}

fn in_memory(ssp: &Ssp, data: &LoadedData, seed: u64) -> LinearModel {
    ssp.fit(&dataset(data), &mut seeded_rng(seed)).unwrap()
}

fn streamed(ssp: &Ssp, data: &LoadedData, block_rows: usize, seed: u64) -> LinearModel {
    ssp.fit_blocks(data.blocks(block_rows), &mut seeded_rng(seed))
        .unwrap()
}

/// Same rows, same seed: the same model (coefficients and report), for blocks of 1, 7, 64,
/// 1000 and more rows than the data has.
#[test]
fn streamed_and_in_memory_fits_are_bit_identical() {
    let d = 6;
    let data = data(3001, d, 1);
    let ssp = Ssp::new(2.0, 1.5);
    let whole = in_memory(&ssp, &data, 42);
    for block in [1, 7, 64, 1000, 10_000] {
        let s = streamed(&ssp, &data, block, 42);
        assert_eq!(s, whole, "block of {block} rows");
        assert_eq!(bits(&s), bits(&whole));
    }
    // Another seed gives another model (the test can fail).
    assert_ne!(in_memory(&ssp, &data, 43).coef(), whole.coef());
}

/// The statistics are exact sums: reversing the rows changes nothing in the model.
#[test]
fn row_order_does_not_matter() {
    let data = data(500, 4, 2);
    let mut rev = data.clone();
    rev.x.invert_axis(Axis(0));
    rev.y.invert_axis(Axis(0));
    let ssp = Ssp::new(2.0, 1.5);
    assert_eq!(in_memory(&ssp, &data, 5), in_memory(&ssp, &rev, 5));
    assert_eq!(streamed(&ssp, &rev, 33, 5), in_memory(&ssp, &data, 5));
}

/// The exact Gram matrix against an f64 one on values exactly on the grid (multiples of
/// 2^-20, norms ≤ B_X): equal, and equal to the sum computed in i128 by hand.
#[test]
fn statistics_are_exact_on_grid_values() {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(3);
    let (n, d) = (2000, 5);
    let ints = Array2::from_shape_fn((n, d), |_| r.random_range(-(1i64 << 18)..(1i64 << 18)));
    let x = ints.mapv(|v| v as f64 * 2f64.powi(-20));
    let mut stats = SufficientStats::new(d, 2.0, 1.0).unwrap();
    // Norms ≤ √5/4 < 2: no clipping; labels 0.
    stats
        .add_block(x.view(), Array1::zeros(n).view(), 0)
        .unwrap();
    let g = stats.gram();
    for i in 0..d {
        for j in 0..d {
            let exact: i128 = (0..n)
                .map(|k| i128::from(ints[[k, i]]) * i128::from(ints[[k, j]]))
                .sum();
            assert_eq!(g[[i, j]], exact as f64 * 2f64.powi(-40), "({i}, {j})");
        }
    }
    assert_eq!(stats.n_samples(), n as u64);
}

/// With a public row count the report is the same for data sets of different sizes (the
/// noise grids and λ_min's sensitivity do not depend on n); more rows than it are refused
/// before anything is released; without it the report depends on n and says so.
#[test]
fn public_n_takes_the_count_out_of_the_release() {
    let small = data(400, 3, 4);
    let big = data(4000, 3, 4);
    let mut ssp = Ssp::new(2.0, 1.5);
    ssp.public_n = Some(5000);
    let (a, b) = (in_memory(&ssp, &small, 1), in_memory(&ssp, &big, 1));
    assert_eq!(a.privacy().noise, b.privacy().noise);
    assert_eq!(a.privacy().event, b.privacy().event);
    assert!(
        a.privacy()
            .notes
            .iter()
            .any(|n| n.contains("public row count n = 5000"))
    );
    ssp.public_n = Some(3999);
    let ds = dataset(&big);
    assert!(matches!(
        ssp.fit(&ds, &mut seeded_rng(1)),
        Err(Error::InvalidHyperParameter {
            name: "public_n",
            ..
        })
    ));
    ssp.public_n = Some(0);
    assert!(ssp.fit(&ds, &mut seeded_rng(1)).is_err());
    // Without it: λ_min's recorded sensitivity grows with n (the allowance).
    let plain = Ssp::new(2.0, 1.5);
    let sens = |m: &LinearModel| m.privacy().event.releases()[0].mechanism.parameters()[1].1;
    let (s_small, s_big) = (
        sens(&in_memory(&plain, &small, 1)),
        sens(&in_memory(&plain, &big, 1)),
    );
    assert!(s_small < s_big, "{s_small} {s_big}");
    assert!(s_big < 4.0 * (1.0 + 1e-6), "{s_big}");
    assert!(
        in_memory(&plain, &small, 1)
            .privacy()
            .notes
            .iter()
            .any(|n| n.contains("treated as public"))
    );
}

/// λ_min's allowance: `B_X²(1 + 2η(N + 1))` with `η = u(1 + 16d²(1 + u))`.
#[test]
fn lambda_sensitivity_has_the_stated_allowance() {
    let ssp = Ssp::new(2.0, 1.0);
    let u = f64::EPSILON / 2.0;
    for (n, d) in [(1_000_000usize, 100usize), (1_000_000_000, 800)] {
        let eta = u * (1.0 + 16.0 * (d * d) as f64 * (1.0 + u));
        let want = 4.0 * (1.0 + 2.0 * eta * (n as f64 + 1.0));
        let got = ssp.lambda_sensitivity(n, d);
        assert!(got >= want && got <= want * (1.0 + 1e-11), "{got} {want}");
    }
}

/// Errors of a streamed fit: the source's, empty sources, blocks of different widths.
#[test]
fn streamed_errors_are_typed() {
    #[derive(Debug)]
    struct Broken;
    impl std::fmt::Display for Broken {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "broken")
        }
    }
    impl std::error::Error for Broken {}
    let ssp = Ssp::new(1.0, 1.0);
    let block = |d: usize| RowBlock {
        x: Array2::zeros((2, d)),
        y: Array1::zeros(2),
    };
    let mut rng = seeded_rng(1);
    let r = ssp.fit_blocks([Ok(block(2)), Err(Broken)], &mut rng);
    assert!(matches!(r, Err(StreamError::Source(Broken))));
    let r = ssp.fit_blocks(Vec::<Result<RowBlock, Broken>>::new(), &mut rng);
    assert!(matches!(r, Err(StreamError::Fit(Error::EmptyData { .. }))));
    let r = ssp.fit_blocks([Ok::<_, Broken>(block(2)), Ok(block(3))], &mut rng);
    assert!(matches!(
        r,
        Err(StreamError::Fit(Error::ShapeMismatch { .. }))
    ));
    let nan = RowBlock {
        x: ndarray::array![[0.0, f64::NAN]],
        y: Array1::zeros(1),
    };
    let r = ssp.fit_blocks([Ok::<_, Broken>(block(2)), Ok(nan)], &mut rng);
    assert!(matches!(
        r,
        Err(StreamError::Fit(Error::NonFinite { row: 2, col: 1, .. }))
    ));
    // Invalid hyper-parameters are refused before the source is read.
    let mut bad = Ssp::new(1.0, 1.0);
    bad.failure_prob = 2.0;
    let r = bad.fit_blocks([Err::<RowBlock, _>(Broken)], &mut rng);
    assert!(matches!(r, Err(StreamError::Fit(_))));
}
