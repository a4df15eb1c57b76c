//! Seeded fits are bit-identical on 1 and 4 rayon threads: the full-batch sums cut the rows
//! into leaves at fixed boundaries and combine them by a fixed tree, whatever the pool (and
//! the exact clipped sums the private solvers release are integers, equal on any pool).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{Amp, Dataset, DpGd, GlmObjective, LinearModel, Loss, ObjectivePerturbation, Scale};
use dp_optim::{ClippedSum, ExactSum, Objective, sum_multiplier};
use ndarray::{Array1, Array2};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

/// 20,000 rows (3 leaves of 8192, the last one partial) of 7 features, labels ±1.
fn data() -> Dataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut g = || -> f64 { StandardNormal.sample(&mut rng) };
    let w: Vec<f64> = (0..7).map(|_| g()).collect();
    let x = Array2::from_shape_simple_fn((20_000, 7), &mut g);
    let y = Array1::from_shape_fn(20_000, |i| {
        let z: f64 = x.row(i).iter().zip(&w).map(|(a, b)| a * b).sum();
        if z + 0.5 * g() > 0.0 { 1.0 } else { -1.0 }
    });
    Dataset::new(x / 3.0, y).unwrap()
}

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn bits(m: &LinearModel) -> Vec<u64> {
    m.coef().iter().map(|v| v.to_bits()).collect()
}

fn same_on_1_and_4(name: &str, fit: impl Fn() -> LinearModel + Sync) {
    let (one, four) = (on_threads(1, &fit), on_threads(4, &fit));
    assert_eq!(bits(&one), bits(&four), "{name}");
    assert_eq!(one.privacy().epsilon, four.privacy().epsilon, "{name}");
}

#[test]
fn seeded_fits_are_bit_identical_on_1_and_4_threads() {
    let data = data();
    let rng = || Xoshiro256PlusPlus::seed_from_u64(11);
    let mut gd = DpGd::new(Loss::Logistic);
    gd.steps = 20;
    same_on_1_and_4("DP-GD", || gd.fit(&data, &mut rng()).unwrap());
    same_on_1_and_4("ObjPert", || {
        ObjectivePerturbation::new(Loss::Logistic)
            .fit(&data, &mut rng())
            .unwrap()
    });
    same_on_1_and_4("AMP", || {
        Amp::new(Loss::Logistic).fit(&data, &mut rng()).unwrap()
    });
}

/// The objective's full-batch sums themselves, on 1, 2, 3 and 4 threads.
#[test]
fn full_batch_sums_do_not_depend_on_the_pool() {
    let data = data();
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.1, Scale::Mean).unwrap();
    let theta = Array1::from_shape_fn(7, |j| 0.3 - 0.1 * j as f64);
    let run = || {
        let mut g = Array1::zeros(7);
        let v = obj.value_grad(theta.view(), g.view_mut());
        let mut c = Array1::zeros(7);
        obj.clipped_sum(theta.view(), None, 0.5, c.view_mut());
        // The exact sum the private solvers release (integers: equal whatever the pool).
        let (release, _) = sum_multiplier(1.0, 0.5, 7).unwrap();
        let mut exact = ExactSum::new(*release.quantiser());
        obj.exact_clipped_sum(theta.view(), None, &mut exact);
        let bits = |a: &Array1<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        (
            obj.value(theta.view()).to_bits(),
            v.to_bits(),
            bits(&g),
            bits(&c),
            exact.totals().to_vec(),
        )
    };
    let one = on_threads(1, run);
    // value and value_grad agree on the value (same leaves, same order).
    assert_eq!(one.0, one.1);
    for t in 2..=4 {
        assert_eq!(on_threads(t, run), one, "{t} threads");
    }
}
