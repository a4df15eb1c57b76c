//! The GLM objective's fast paths against naive per-example loops.
//!
//! These tests run unchanged with and without the `blas` feature (`cargo test -p dp-glm`
//! and `cargo test -p dp-glm --features blas`); the objective's kernels are plain loops either
//! way (the full-batch sums run on rayon workers, where a BLAS call is not wanted).
//!
//! "Relative" errors are measured against the mass of the summed terms
//! (`Σ_i |c_i|·‖x_i‖` for a gradient, `Σ_i |φ_i|` for a value), the scale at which a
//! reordered floating-point sum can differ.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_glm::{ClippedLoss, Dataset, Error, GlmObjective, Loss, Scale};
use dp_optim::{ClippedSum, FiniteSum, GlmSum, Objective};
use ndarray::{Array1, Array2, ArrayView1};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

const TOL: f64 = 1e-12;

fn norm(v: ArrayView1<'_, f64>) -> f64 {
    v.dot(&v).sqrt()
}

fn random_data(n: usize, d: usize, loss: &Loss, seed: u64) -> Dataset {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x = Array2::from_shape_simple_fn((n, d), || {
        let g: f64 = StandardNormal.sample(&mut rng);
        g
    });
    let y = Array1::from_shape_simple_fn(n, || match loss.label_domain() {
        dp_glm::LabelDomain::Signs => {
            if rng.random::<bool>() {
                1.0
            } else {
                -1.0
            }
        }
        _ => 3.0 * rng.random::<f64>() - 1.5,
    });
    Dataset::new(x, y).unwrap()
}

fn random_theta(d: usize, scale: f64, seed: u64) -> Array1<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    Array1::from_shape_simple_fn(d, || {
        let g: f64 = StandardNormal.sample(&mut rng);
        scale * g
    })
}

fn losses() -> Vec<Loss> {
    vec![
        Loss::Logistic,
        Loss::Squared,
        Loss::Huber { h: 0.8 },
        Loss::HuberSvm { h: 0.1 },
        Loss::Savage,
    ]
}

/// Per-example scalar loss of row `i` (plain or clipped), by a naive route.
fn naive_phi(
    loss: &Loss,
    clipped: Option<&ClippedLoss>,
    y: f64,
    x_norm: f64,
    z: f64,
) -> (f64, f64) {
    match clipped {
        None => (loss.value(z, y), loss.deriv(z, y)),
        Some(c) => {
            let g = c.for_example(y, x_norm).unwrap();
            (g.value(z), g.deriv(z))
        }
    }
}

/// `(J(θ), ∇J(θ), value mass, gradient mass)` by explicit loops over examples and features.
fn naive_value_grad(
    data: &Dataset,
    loss: &Loss,
    clipped: Option<&ClippedLoss>,
    lambda: f64,
    scale: f64,
    theta: &Array1<f64>,
) -> (f64, Array1<f64>, f64, f64) {
    let (x, y) = (data.x(), data.y());
    let d = data.n_features();
    let mut value = 0.0;
    let mut grad = Array1::zeros(d);
    let (mut vmass, mut gmass) = (0.0, 0.0);
    for i in 0..data.n_samples() {
        let mut z = 0.0;
        for j in 0..d {
            z += x[(i, j)] * theta[j];
        }
        let (v, dphi) = naive_phi(loss, clipped, y[i], data.row_norms()[i], z);
        value += scale * v;
        vmass += scale * v.abs();
        gmass += scale * dphi.abs() * data.row_norms()[i];
        for j in 0..d {
            grad[j] += scale * dphi * x[(i, j)];
        }
    }
    let ridge = 0.5 * lambda * theta.dot(theta);
    value += ridge;
    vmass += ridge;
    grad.scaled_add(lambda, theta);
    gmass += lambda * norm(theta.view());
    (value, grad, vmass, gmass)
}

fn check_against_naive(obj: &GlmObjective<'_>, clipped: Option<&ClippedLoss>, seed: u64) {
    let data = obj.data();
    let loss = obj.loss();
    let d = data.n_features();
    for (k, theta_scale) in [0.0, 0.1, 1.0, 5.0].into_iter().enumerate() {
        let theta = random_theta(d, theta_scale, seed + k as u64);
        let (v_naive, g_naive, vmass, gmass) =
            naive_value_grad(data, &loss, clipped, obj.lambda(), obj.scale(), &theta);
        let v = obj.value(theta.view());
        let mut g = Array1::from_elem(d, f64::NAN);
        let v2 = obj.value_grad(theta.view(), g.view_mut());
        let what = format!(
            "{loss:?} clipped={} λ={} s={}",
            clipped.is_some(),
            obj.lambda(),
            obj.scale()
        );
        assert!(
            (v - v_naive).abs() <= TOL * vmass,
            "{what}: value {v} vs {v_naive}"
        );
        assert!(
            (v2 - v_naive).abs() <= TOL * vmass,
            "{what}: value_grad {v2} vs {v_naive}"
        );
        assert!(
            norm((&g - &g_naive).view()) <= TOL * gmass,
            "{what}: gradient"
        );

        // FiniteSum / GlmSum: the terms plus the regulariser make up the gradient.
        let all: Vec<usize> = (0..data.n_samples()).collect();
        let mut gb = Array1::from_elem(d, f64::NAN);
        obj.batch_grad(theta.view(), &all, gb.view_mut());
        let mut gr = Array1::from_elem(d, f64::NAN);
        obj.regulariser_grad(theta.view(), gr.view_mut());
        assert!(
            norm((&gb + &gr - &g_naive).view()) <= TOL * gmass,
            "{what}: batch_grad"
        );
        let mut gs = Array1::zeros(d);
        for i in 0..data.n_samples() {
            let c = obj.term_scalar(theta.view(), i);
            obj.add_scaled_row(i, c, gs.view_mut());
        }
        assert!(
            norm((&gs + &gr - &g_naive).view()) <= TOL * gmass,
            "{what}: GlmSum"
        );
    }
}

#[test]
fn value_and_gradient_match_naive_loops() {
    for (li, loss) in losses().into_iter().enumerate() {
        let data = random_data(257, 13, &loss, 11 + li as u64);
        for scale in [Scale::Sum, Scale::Mean] {
            for lambda in [0.0, 0.3] {
                let obj = GlmObjective::new(&data, loss, lambda, scale).unwrap();
                assert_eq!(Objective::dim(&obj), 13);
                assert_eq!(obj.n_terms(), 257);
                check_against_naive(&obj, None, 100 + li as u64);
                if loss.is_convex() {
                    let c = ClippedLoss::new(loss, 0.7).unwrap();
                    let obj = GlmObjective::clipped(&data, c, lambda, scale).unwrap();
                    check_against_naive(&obj, Some(&c), 200 + li as u64);
                }
            }
        }
    }
}

/// A wide problem (d > n) and a single-row one go through the same products.
#[test]
fn odd_shapes_match_naive_loops() {
    for (n, d) in [(7, 300), (1, 5), (40, 1)] {
        let data = random_data(n, d, &Loss::Logistic, 5);
        let obj = GlmObjective::new(&data, Loss::Logistic, 0.01, Scale::Mean).unwrap();
        check_against_naive(&obj, None, 9);
    }
}

/// The gradient is the derivative of the value (central differences).
#[test]
fn gradient_matches_finite_differences() {
    for loss in [Loss::Logistic, Loss::Squared, Loss::Savage] {
        let data = random_data(50, 4, &loss, 3);
        let obj = GlmObjective::new(&data, loss, 0.2, Scale::Mean).unwrap();
        let theta = random_theta(4, 0.5, 4);
        let mut g = Array1::zeros(4);
        obj.value_grad(theta.view(), g.view_mut());
        for j in 0..4 {
            let e = 1e-6;
            let (mut tp, mut tm) = (theta.clone(), theta.clone());
            tp[j] += e;
            tm[j] -= e;
            let fd = (obj.value(tp.view()) - obj.value(tm.view())) / (2.0 * e);
            assert!(
                (fd - g[j]).abs() < 1e-7 * g[j].abs().max(1.0),
                "{loss:?} j={j}: {fd} vs {}",
                g[j]
            );
        }
    }
}

/// Naive per-example clip-and-sum: form each gradient vector, clip it, add it.
fn naive_clipped_sum(
    data: &Dataset,
    loss: &Loss,
    theta: &Array1<f64>,
    batch: &[usize],
    clip: f64,
) -> (Array1<f64>, f64) {
    let d = data.n_features();
    let mut out = Array1::zeros(d);
    let mut mass = 0.0;
    for &i in batch {
        let xi = data.x().row(i).to_owned();
        let z = xi.dot(theta);
        let mut v = xi * loss.deriv(z, data.y()[i]);
        let nv = norm(v.view());
        if nv > clip {
            v *= clip / nv;
        }
        mass += norm(v.view());
        out += &v;
    }
    (out, mass)
}

#[test]
fn clipped_sum_matches_naive_clip_and_sum() {
    for (li, loss) in losses().into_iter().enumerate() {
        let data = random_data(301, 9, &loss, 21 + li as u64);
        let obj = GlmObjective::new(&data, loss, 0.5, Scale::Mean).unwrap();
        let all: Vec<usize> = (0..301).collect();
        let batch = [3, 3, 17, 300, 0, 42, 17, 99];
        for (k, clip) in [1e-3, 0.1, 1.0, 10.0, 1e6].into_iter().enumerate() {
            let theta = random_theta(9, 1.0, 300 + k as u64);
            let (naive, mass) = naive_clipped_sum(&data, &loss, &theta, &all, clip);
            let mut fast = Array1::from_elem(9, f64::NAN);
            obj.clipped_sum(theta.view(), None, clip, fast.view_mut());
            assert!(
                norm((&fast - &naive).view()) <= TOL * mass,
                "{loss:?} C={clip}: full"
            );
            let mut fast_all = Array1::from_elem(9, f64::NAN);
            obj.clipped_sum(theta.view(), Some(&all), clip, fast_all.view_mut());
            assert!(
                norm((&fast_all - &naive).view()) <= TOL * mass,
                "{loss:?} C={clip}: all"
            );

            let (naive, mass) = naive_clipped_sum(&data, &loss, &theta, &batch, clip);
            let mut fast = Array1::from_elem(9, f64::NAN);
            obj.clipped_sum(theta.view(), Some(&batch), clip, fast.view_mut());
            assert!(
                norm((&fast - &naive).view()) <= TOL * mass,
                "{loss:?} C={clip}: batch"
            );
        }
        let mut out = Array1::from_elem(9, f64::NAN);
        obj.clipped_sum(
            random_theta(9, 1.0, 1).view(),
            Some(&[]),
            1.0,
            out.view_mut(),
        );
        assert!(out.iter().all(|&v| v == 0.0));
        assert_eq!(obj.n_examples(), 301);
        assert_eq!(ClippedSum::dim(&obj), 9);
    }
}

/// The clipping lemma at the level of the objective: the sum-form objective with the clipped
/// loss has gradient `Σ_i clip_C(∇ℓ_i)` (+ λθ), i.e. what `clipped_sum` returns.
#[test]
fn clipped_objective_gradient_is_the_clipped_sum() {
    for loss in [
        Loss::Logistic,
        Loss::Squared,
        Loss::Huber { h: 0.5 },
        Loss::HuberSvm { h: 0.2 },
    ] {
        let data = random_data(120, 6, &loss, 8);
        let plain = GlmObjective::new(&data, loss, 0.0, Scale::Sum).unwrap();
        for clip in [0.05, 0.5, 3.0] {
            let obj = GlmObjective::clipped(
                &data,
                ClippedLoss::new(loss, clip).unwrap(),
                0.0,
                Scale::Sum,
            )
            .unwrap();
            for k in 0..3 {
                let theta = random_theta(6, 2.0, 50 + k);
                let mut g = Array1::zeros(6);
                obj.value_grad(theta.view(), g.view_mut());
                let mut c = Array1::zeros(6);
                plain.clipped_sum(theta.view(), None, clip, c.view_mut());
                let mass = 120.0 * clip;
                assert!(norm((&g - &c).view()) <= 1e-10 * mass, "{loss:?} C={clip}");
            }
        }
    }
}

/// Every per-example contribution has norm ≤ C, whatever the data and the parameter:
/// huge, tiny, zero and cancelling rows, huge labels, huge parameters (margins that
/// overflow to ±∞ or NaN).
#[test]
fn per_example_contributions_are_bounded_for_adversarial_inputs() {
    let d = 4;
    let rows: Vec<[f64; 4]> = vec![
        [1e150, 1e150, 1e150, 1e150],
        [1e300, -1e300, 1e300, -1e300],
        [f64::MAX / 4.0, f64::MAX / 4.0, 0.0, 0.0],
        [1e-200, -3e-200, 0.0, 1e-210],
        [5e-324, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [1.0, -2.0, 0.5, 3.0],
        [1e-3, 1e3, -1e8, 7.0],
    ];
    let n = rows.len();
    let x = Array2::from_shape_fn((n, d), |(i, j)| rows[i][j]);
    let thetas = [
        Array1::from_elem(d, 1e308),
        Array1::from(vec![1e308, -1e308, 1e-300, 0.0]),
        Array1::from(vec![1e200, 1e200, -1e200, 1e200]),
        Array1::from_elem(d, 1e-300),
        Array1::zeros(d),
        Array1::from(vec![1.0, -1.0, 2.0, 0.5]),
    ];
    for loss in losses() {
        let y: Array1<f64> = match loss.label_domain() {
            dp_glm::LabelDomain::Signs => (0..n)
                .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect(),
            _ => (0..n)
                .map(|i| if i % 2 == 0 { 1e300 } else { -1e300 })
                .collect(),
        };
        let data = Dataset::new(x.clone(), y).unwrap();
        let obj = GlmObjective::new(&data, loss, 0.0, Scale::Sum).unwrap();
        for theta in &thetas {
            for clip in [1e-8, 1e-3, 1.0, 1e3, 1e100] {
                let bound = clip * (1.0 + TOL);
                let mut out = Array1::zeros(d);
                for i in 0..n {
                    obj.clipped_sum(theta.view(), Some(&[i]), clip, out.view_mut());
                    assert!(out.iter().all(|v| v.is_finite()), "{loss:?} row {i}: {out}");
                    let nv = norm(out.view());
                    assert!(nv <= bound, "{loss:?} row {i} C={clip}: ‖g_i‖ = {nv}");
                    obj.clipped_sum(theta.view(), Some(&[i, i]), clip, out.view_mut());
                    assert!(norm(out.view()) <= 2.0 * bound);
                }
                obj.clipped_sum(theta.view(), None, clip, out.view_mut());
                assert!(out.iter().all(|v| v.is_finite()));
                assert!(
                    norm(out.view()) <= n as f64 * bound,
                    "{loss:?} C={clip}: full sum"
                );
            }
            // A NaN or negative clip never lets a gradient through unclipped.
            let mut out = Array1::from_elem(d, 1.0);
            obj.clipped_sum(theta.view(), None, f64::NAN, out.view_mut());
            assert!(out.iter().all(|&v| v == 0.0));
            obj.clipped_sum(theta.view(), None, -1.0, out.view_mut());
            assert!(out.iter().all(|&v| v == 0.0));
        }
    }
}

#[test]
fn constructor_errors() {
    let data = random_data(10, 2, &Loss::Squared, 1);
    assert!(matches!(
        GlmObjective::new(&data, Loss::Logistic, 0.0, Scale::Sum),
        Err(Error::LabelOutOfDomain { .. })
    ));
    assert!(matches!(
        GlmObjective::new(&data, Loss::Squared, -1.0, Scale::Sum),
        Err(Error::InvalidHyperParameter { name: "lambda", .. })
    ));
    assert!(matches!(
        GlmObjective::new(&data, Loss::Huber { h: -1.0 }, 0.0, Scale::Sum),
        Err(Error::InvalidHyperParameter { name: "h", .. })
    ));
    let c = ClippedLoss::new(Loss::Logistic, 1.0).unwrap();
    assert!(matches!(
        GlmObjective::clipped(&data, c, 0.0, Scale::Sum),
        Err(Error::LabelOutOfDomain { .. })
    ));
}

/// The objective is `Sync`: threads sharing it each get correct values (a contended scratch
/// buffer falls back to a private one).
#[test]
fn shared_across_threads() {
    let data = random_data(500, 20, &Loss::Logistic, 77);
    let obj = GlmObjective::new(&data, Loss::Logistic, 0.1, Scale::Mean).unwrap();
    let theta = random_theta(20, 1.0, 78);
    let expected = obj.value(theta.view());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..200 {
                    let mut g = Array1::zeros(20);
                    let v = obj.value_grad(theta.view(), g.view_mut());
                    assert!((v - expected).abs() <= 1e-14 * expected.abs());
                }
            });
        }
    });
}

/// `pᵀ∇²J p` at `θ` by a central difference of the gradient.
fn curvature_at(obj: &GlmObjective<'_>, theta: &Array1<f64>, p: &Array1<f64>, h: f64) -> f64 {
    let d = theta.len();
    let (mut g1, mut g2) = (Array1::zeros(d), Array1::zeros(d));
    obj.value_grad((theta + &(p * h)).view(), g1.view_mut());
    obj.value_grad((theta - &(p * h)).view(), g2.view_mut());
    (&g1 - &g2).dot(p) / (2.0 * h)
}

/// The curvature bound L-BFGS's first step uses is `s·β·Σ⟨x_i, p⟩² + λ‖p‖²`: exact for the
/// squared loss (`φ'' = β = 1`), an upper bound at every point tried for the others, and
/// absent for clipped example losses (whose curvature the objective does not bound).
#[test]
fn curvature_bound_majorises_the_hessian_along_a_line() {
    let (n, d) = (300, 7);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let mut gauss = |k: usize| Array1::from_shape_simple_fn(k, || StandardNormal.sample(&mut rng));
    for loss in [Loss::Squared, Loss::Logistic, Loss::huber_svm(0.5).unwrap()] {
        let data = random_data(n, d, &loss, 5);
        for scale in [Scale::Sum, Scale::Mean] {
            let obj = GlmObjective::new(&data, loss, 0.3, scale).unwrap();
            let p = gauss(d);
            let bound = obj.curvature_bound(p.view()).unwrap();
            for _ in 0..5 {
                let theta = gauss(d);
                let c = curvature_at(&obj, &theta, &p, 1e-4);
                if loss == Loss::Squared {
                    assert!((c - bound).abs() <= 1e-6 * bound, "{c} vs {bound}");
                } else {
                    assert!(c <= bound * (1.0 + 1e-6), "{loss:?}: {c} > {bound}");
                    assert!(c > 0.0);
                }
            }
        }
    }
    let data = random_data(n, d, &Loss::Logistic, 6);
    let clipped = GlmObjective::clipped(
        &data,
        ClippedLoss::new(Loss::Logistic, 1.0).unwrap(),
        0.0,
        Scale::Sum,
    )
    .unwrap();
    assert_eq!(clipped.curvature_bound(Array1::ones(d).view()), None);
}
