use std::cell::RefCell;

use super::*;
use crate::rng::seeded_rng;
use crate::testutil::glm::{DenseGlm, Loss, random_problem, ridge_closed_form};
use crate::testutil::{assert_ks, assert_z, mean_var};
use crate::{L2Ball, Objective, Unconstrained};
use ndarray::array;
use statrs::distribution::{ContinuousCDF, Gamma, Normal};

/// A clipped-sum oracle whose sum is exactly zero, recording the batches it was asked for.
struct ZeroSum {
    n: usize,
    d: usize,
    batches: RefCell<Vec<Vec<usize>>>,
}

impl ZeroSum {
    fn new(n: usize, d: usize) -> Self {
        Self {
            n,
            d,
            batches: RefCell::new(Vec::new()),
        }
    }
}

impl ClippedSum for ZeroSum {
    fn n_examples(&self) -> usize {
        self.n
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn clipped_sum(
        &self,
        _x: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        _clip: f64,
        mut out: ArrayViewMut1<'_, f64>,
    ) {
        self.batches
            .borrow_mut()
            .push(batch.map_or_else(|| (0..self.n).collect(), <[usize]>::to_vec));
        out.fill(0.0);
    }
    fn exact_clipped_sum(
        &self,
        _x: ArrayView1<'_, f64>,
        batch: Option<&[usize]>,
        out: &mut ExactSum,
    ) {
        self.batches
            .borrow_mut()
            .push(batch.map_or_else(|| (0..self.n).collect(), <[usize]>::to_vec));
        out.clear();
    }
}

/// Records every gradient the solver used.
#[derive(Default)]
struct Grads(Vec<Array1<f64>>);

impl Observer for Grads {
    fn observe(&mut self, _info: &IterationInfo) -> bool {
        true
    }
    fn observe_gradient(&mut self, _t: usize, g: ArrayView1<'_, f64>) {
        self.0.push(g.to_owned());
    }
}

/// The discrete Gaussian the solvers attach to the ledger's mechanism.
fn discrete(sigma: f64, clip: f64, d: usize) -> dp_accounting::GridGaussian {
    sum_multiplier(sigma, clip, d)
        .unwrap()
        .0
        .discrete_gaussian()
        .unwrap()
}

/// The multiplier the solvers record.
fn multiplier(sigma: f64, clip: f64, d: usize) -> f64 {
    sum_multiplier(sigma, clip, d).unwrap().1
}

/// The exact release costs a relative `σ√d·2^-25` of the noise multiplier, no more.
#[test]
fn sum_multiplier_is_close_to_the_requested_one() {
    for (sigma, clip, d) in [(0.9, 2.0, 5), (1.0, 1.0, 104), (8.0, 0.1, 1)] {
        let (release, z) = sum_multiplier(sigma, clip, d).unwrap();
        assert!(z < sigma && z > sigma * (1.0 - 2.0 * sigma * (d as f64).sqrt() * 2f64.powi(-25)));
        assert!(release.sensitivity() > clip);
    }
}

fn flat(grads: &Grads) -> Vec<f64> {
    grads.0.iter().flat_map(|g| g.iter().copied()).collect()
}

fn normal_cdf(std: f64) -> impl Fn(f64) -> f64 {
    let law = Normal::new(0.0, std).unwrap();
    move |x| law.cdf(x)
}

/// Released noise of NoisyGd: with a zero clipped sum, every coordinate of every step's
/// gradient is `N(0, (σC/n)²)` (KS, p > 1e-6; variance z-test |z| ≤ 5.5), and the ledger
/// holds `T × gaussian(σC, C)` under the caller's relation.
#[test]
fn noisy_gd_releases_the_claimed_gaussian() {
    let (n, d, steps, sigma, clip) = (40, 4, 6000, 1.3, 0.7);
    let oracle = ZeroSum::new(n, d);
    let mut grads = Grads::default();
    let sol = NoisyGd::new(
        StepSize::Constant(0.1),
        steps,
        clip,
        sigma,
        Neighbouring::ReplaceOne,
    )
    .minimize(
        &oracle,
        &NoRegulariser,
        &Unconstrained,
        Array1::zeros(d).view(),
        &mut seeded_rng(20),
        Some(&mut grads),
    )
    .unwrap();
    let std = sigma * clip / n as f64;
    let z = flat(&grads);
    assert_eq!(z.len(), steps * d);
    assert_ks(&z, normal_cdf(std), "noisy GD noise");
    let (m, v) = mean_var(&z);
    let k = z.len() as f64;
    assert_z(m, 0.0, std / k.sqrt(), "mean");
    assert_z(v, std * std, std * std * (2.0 / k).sqrt(), "variance");
    // Full batches every step.
    assert!(oracle.batches.borrow().iter().all(|b| b.len() == n));
    let ledger = sol.ledger.unwrap();
    assert_eq!(ledger.neighbouring(), Neighbouring::ReplaceOne);
    assert_eq!(ledger.entries().len(), 1);
    let e = &ledger.entries()[0];
    assert_eq!(e.count, steps as u64);
    assert_eq!(
        e.mechanism,
        Mechanism::gaussian(
            sigma * clip,
            sum_multiplier(sigma, clip, d).unwrap().0.sensitivity()
        )
        .unwrap()
        .with_grid(discrete(sigma, clip, d))
    );
    assert_eq!(e.label, NOISY_GRADIENT_LABEL);
    assert_eq!(sol.status, Status::IterationLimit);
    assert_eq!(sol.iterations, steps);
}

/// DP-SGD with Poisson sampling: noise `N(0, (σC/(qn))²)` per coordinate and
/// `subsampled_gaussian(σ, q)` per step under add/remove.
#[test]
fn dp_sgd_poisson_releases_the_claimed_gaussian() {
    let (n, d, steps, sigma, clip, q) = (200, 5, 4000, 0.9, 2.0, 0.05);
    let oracle = ZeroSum::new(n, d);
    let mut grads = Grads::default();
    let sol = DpSgd::new(
        BatchSchedule::Poisson { q },
        Length::Steps(steps),
        StepSize::Constant(0.1),
        clip,
        sigma,
    )
    .minimize(
        &oracle,
        &NoRegulariser,
        &Unconstrained,
        Array1::zeros(d).view(),
        &mut seeded_rng(21),
        Some(&mut grads),
    )
    .unwrap();
    assert_ks(
        &flat(&grads),
        normal_cdf(sigma * clip / (q * n as f64)),
        "DP-SGD Poisson noise",
    );
    let ledger = sol.ledger.unwrap();
    assert_eq!(ledger.neighbouring(), Neighbouring::AddRemove);
    assert_eq!(ledger.entries()[0].count, steps as u64);
    assert_eq!(
        ledger.entries()[0].mechanism,
        Mechanism::subsampled_gaussian(multiplier(sigma, clip, d), q)
            .unwrap()
            .with_grid(discrete(sigma, clip, d))
    );
    // Batch sizes are Binomial(n, q).
    let sizes: Vec<f64> = oracle
        .batches
        .borrow()
        .iter()
        .map(|b| b.len() as f64)
        .collect();
    let (m, _) = mean_var(&sizes);
    let var = n as f64 * q * (1.0 - q);
    assert_z(m, n as f64 * q, (var / steps as f64).sqrt(), "batch size");
}

/// Gamma-ball DP-SGD: `‖g‖·qn ~ Gamma(d, s)` (KS) and `gamma_ball(s, q, d, C)` per step.
#[test]
fn dp_sgd_gamma_ball_releases_the_claimed_noise() {
    let (n, d, steps, scale, clip, q) = (100, 6, 20_000, 0.57, 1.5, 0.1);
    let oracle = ZeroSum::new(n, d);
    let mut grads = Grads::default();
    let sol = DpSgd::new(
        BatchSchedule::Poisson { q },
        Length::Steps(steps),
        StepSize::Constant(0.1),
        clip,
        1.0,
    )
    .noise(NoiseDistribution::GammaBall { scale })
    .minimize(
        &oracle,
        &NoRegulariser,
        &Unconstrained,
        Array1::zeros(d).view(),
        &mut seeded_rng(22),
        Some(&mut grads),
    )
    .unwrap();
    let radii: Vec<f64> = grads
        .0
        .iter()
        .map(|g| g.dot(g).sqrt() * q * n as f64)
        .collect();
    let law = Gamma::new(d as f64, 1.0 / scale).unwrap();
    assert_ks(&radii, |x| law.cdf(x), "Gamma-ball norm");
    let ledger = sol.ledger.unwrap();
    assert_eq!(ledger.neighbouring(), Neighbouring::AddRemove);
    assert_eq!(
        ledger.entries()[0].mechanism,
        Mechanism::gamma_ball(scale, q, d as u64, clip).unwrap()
    );
    assert_eq!(ledger.entries()[0].count, steps as u64);
}

/// Fixed-size batches: `b` distinct indices per step, noise `N(0, (σC/b)²)`, and
/// `subsampled_gaussian_without_replacement(σ, b, n)` per step under replace-one.
#[test]
fn dp_sgd_fixed_size_batches() {
    let (n, d, b, sigma, clip) = (50, 3, 7, 1.1, 0.5);
    let oracle = ZeroSum::new(n, d);
    let mut grads = Grads::default();
    let cfg = DpSgd::new(
        BatchSchedule::FixedSizeWithoutReplacement { batch: b },
        Length::Epochs(400),
        StepSize::Constant(0.1),
        clip,
        sigma,
    );
    let steps = (400 * n).div_ceil(b);
    assert_eq!(cfg.steps(n).unwrap(), steps);
    let sol = cfg
        .minimize(
            &oracle,
            &NoRegulariser,
            &Unconstrained,
            Array1::zeros(d).view(),
            &mut seeded_rng(23),
            Some(&mut grads),
        )
        .unwrap();
    assert_ks(
        &flat(&grads),
        normal_cdf(sigma * clip / b as f64),
        "fixed-size noise",
    );
    let batches = oracle.batches.borrow();
    assert_eq!(batches.len(), steps);
    let mut hits = vec![0usize; n];
    for batch in batches.iter() {
        let mut s = batch.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), b);
        assert!(s.iter().all(|&i| i < n));
        s.iter().for_each(|&i| hits[i] += 1);
    }
    // Every index is included with probability b/n per step.
    let p = b as f64 / n as f64;
    for &h in &hits {
        let se = (steps as f64 * p * (1.0 - p)).sqrt();
        assert_z(h as f64, steps as f64 * p, se, "inclusion count");
    }
    let ledger = sol.ledger.unwrap();
    assert_eq!(ledger.neighbouring(), Neighbouring::ReplaceOne);
    assert_eq!(
        ledger.entries()[0].mechanism,
        Mechanism::subsampled_gaussian_without_replacement(
            multiplier(sigma, clip, d),
            b as u64,
            n as u64
        )
        .unwrap()
        .with_grid(discrete(sigma, clip, d))
    );
    assert_eq!(ledger.entries()[0].count, steps as u64);
}

/// One shuffled pass: `⌊n/b⌋` batches of `b`, disjoint, from a permutation; one Gaussian per
/// step under replace-one.
#[test]
fn dp_sgd_shuffle_once_uses_each_example_once() {
    let (n, d, b, sigma, clip) = (103, 2, 10, 1.0, 1.0);
    let oracle = ZeroSum::new(n, d);
    let cfg = DpSgd::new(
        BatchSchedule::ShuffleOnce { batch: b },
        Length::Epochs(1),
        StepSize::Constant(0.1),
        clip,
        sigma,
    );
    let sol = cfg
        .minimize(
            &oracle,
            &NoRegulariser,
            &Unconstrained,
            Array1::zeros(d).view(),
            &mut seeded_rng(24),
            None,
        )
        .unwrap();
    let batches = oracle.batches.borrow();
    assert_eq!(batches.len(), n / b);
    let mut all: Vec<usize> = batches.iter().flatten().copied().collect();
    assert!(batches.iter().all(|x| x.len() == b));
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), (n / b) * b);
    // It is a random permutation, not the identity order.
    assert_ne!(batches[0], (0..b).collect::<Vec<_>>());
    let ledger = sol.ledger.unwrap();
    assert_eq!(ledger.neighbouring(), Neighbouring::ReplaceOne);
    assert_eq!(
        ledger.entries()[0].mechanism,
        Mechanism::gaussian(multiplier(sigma, clip, d) * clip, clip)
            .unwrap()
            .with_grid(discrete(sigma, clip, d))
    );
    assert_eq!(ledger.entries()[0].count, (n / b) as u64);
    // Fewer steps are allowed; more than one pass is not.
    let fewer = DpSgd {
        length: Length::Steps(3),
        ..cfg.clone()
    };
    assert_eq!(fewer.steps(n).unwrap(), 3);
    for length in [Length::Steps(n / b + 1), Length::Epochs(2)] {
        let more = DpSgd {
            length,
            ..cfg.clone()
        };
        assert!(matches!(more.steps(n), Err(Error::Unsupported(_))));
    }
}

/// The Poisson sampler: each index is included with probability q, independently (pairwise
/// inclusion of neighbours ≈ q²), and q = 1 takes everything.
#[test]
fn poisson_sampler_is_bernoulli() {
    let (n, q, reps) = (60, 0.15, 20_000);
    let mut rng = seeded_rng(25);
    let mut batch = Vec::new();
    let mut hits = vec![0usize; n];
    let mut pairs = 0usize;
    for _ in 0..reps {
        poisson_batch(&mut rng, n, q, &mut batch);
        assert!(batch.windows(2).all(|w| w[0] < w[1]));
        batch.iter().for_each(|&i| hits[i] += 1);
        pairs += batch
            .windows(2)
            .filter(|w| w[1] == w[0] + 1 && w[0] == 10)
            .count();
    }
    let se = (reps as f64 * q * (1.0 - q)).sqrt();
    for &h in &hits {
        assert_z(h as f64, reps as f64 * q, se, "inclusion");
    }
    let p2 = q * q;
    assert_z(
        pairs as f64,
        reps as f64 * p2,
        (reps as f64 * p2 * (1.0 - p2)).sqrt(),
        "pair inclusion",
    );
    poisson_batch(&mut rng, n, 1.0, &mut batch);
    assert_eq!(batch, (0..n).collect::<Vec<_>>());
    // Tiny q on a big n: no overflow, O(qn) work.
    poisson_batch(&mut rng, usize::MAX / 2, 1e-300, &mut batch);
    assert!(batch.is_empty());
}

/// With negligible noise and no active clipping, noisy GD on `(1/n)Σ½(⟨a,θ⟩−y)² + (μ/2)‖θ‖²`
/// converges to the ridge closed form with `λ = nμ`; the closure regulariser agrees exactly
/// with `L2Regulariser`.
#[test]
fn noisy_gd_solves_ridge_with_tiny_noise() {
    let p = random_problem(80, 4, 0.0, Loss::Squared, 30);
    let mu = 0.05;
    let exact = ridge_closed_form(&DenseGlm {
        lambda: mu * 80.0,
        ..p.clone()
    });
    let cfg = NoisyGd::new(
        StepSize::Constant(0.3),
        3000,
        1e3,
        1e-12,
        Neighbouring::AddRemove,
    );
    let run = |reg: &dyn Regulariser| {
        cfg.minimize(
            &p,
            reg,
            &Unconstrained,
            Array1::zeros(4).view(),
            &mut seeded_rng(31),
            None,
        )
        .unwrap()
        .x
    };
    let a = run(&L2Regulariser { lambda: mu });
    let closure = move |x: ArrayView1<'_, f64>, mut g: ArrayViewMut1<'_, f64>| {
        g.scaled_add(mu, &x);
    };
    let b = run(&closure);
    assert_eq!(a, b);
    let err = &a - &exact;
    assert!(err.dot(&err).sqrt() < 1e-6, "{a} vs {exact}");
}

/// Noisy projected GD stays in the ball and averaging is applied.
#[test]
fn noisy_gd_projects_and_averages() {
    let p = random_problem(50, 3, 0.0, Loss::Logistic, 32);
    let ball = L2Ball { radius: 0.2 };
    let sol = NoisyGd::new(
        StepSize::InvSqrt(1.0),
        200,
        1.0,
        2.0,
        Neighbouring::ReplaceOne,
    )
    .averaging(Averaging::Uniform)
    .minimize(
        &p,
        &NoRegulariser,
        &ball,
        array![5.0, 5.0, 5.0].view(),
        &mut seeded_rng(33),
        None,
    )
    .unwrap();
    assert!(sol.x.dot(&sol.x).sqrt() <= 0.2 + 1e-12);
}

/// Mean logistic loss at `x`.
fn mean_loss(p: &DenseGlm, x: &Array1<f64>) -> f64 {
    p.value(x.view()) / p.a.nrows() as f64
}

/// DP-SGD with each update rule, on a logistic problem with moderate noise, gets within a
/// small excess mean loss of the (clip-inactive) optimum; results are reproducible by seed.
#[test]
fn dp_sgd_update_rules_make_progress() {
    let p = random_problem(2000, 3, 0.0, Loss::Logistic, 34);
    let opt = crate::testutil::glm::newton(&DenseGlm {
        lambda: 1e-3,
        ..p.clone()
    });
    let f_opt = mean_loss(&p, &opt);
    let f0 = mean_loss(&p, &Array1::zeros(3));
    for (rule, step) in [
        (UpdateRule::Sgd, StepSize::Constant(0.5)),
        (UpdateRule::Momentum { beta: 0.9 }, StepSize::Constant(0.05)),
        (UpdateRule::adam(), StepSize::Constant(0.05)),
    ] {
        let cfg = DpSgd::new(
            BatchSchedule::Poisson { q: 0.05 },
            Length::Epochs(15),
            step,
            5.0,
            0.5,
        )
        .update(rule)
        .averaging(Averaging::Tail(0.5));
        let run = |seed| {
            cfg.minimize(
                &p,
                &NoRegulariser,
                &Unconstrained,
                Array1::zeros(3).view(),
                &mut seeded_rng(seed),
                None,
            )
            .unwrap()
        };
        let sol = run(35);
        assert_eq!(sol.iterations, 300);
        let excess = mean_loss(&p, &sol.x) - f_opt;
        assert!(
            excess < 0.02 * (f0 - f_opt),
            "{rule:?}: excess {excess}, f0 − f* = {}",
            f0 - f_opt
        );
        assert_eq!(run(35).x, sol.x);
    }
}

/// Hand-computed momentum and Adam steps.
#[test]
fn update_rules_match_hand_computation() {
    let g1 = array![1.0, -2.0];
    let g2 = array![0.5, 0.5];
    let mut x = array![0.0, 0.0];
    let mut s = UpdateState::new(UpdateRule::Momentum { beta: 0.5 }, 2);
    s.apply(0, 0.1, &g1, &mut x);
    s.apply(1, 0.1, &g2, &mut x);
    // v1 = g1, v2 = 0.5 g1 + g2; x = −0.1 (v1 + v2).
    let expect = -0.1 * (&g1 + &(0.5 * &g1 + &g2));
    assert!((&x - &expect).iter().all(|e| e.abs() < 1e-15));

    let (b1, b2, eps, eta) = (0.9, 0.99, 1e-8, 0.01);
    let mut x = array![0.0, 0.0];
    let mut s = UpdateState::new(
        UpdateRule::Adam {
            beta1: b1,
            beta2: b2,
            eps,
        },
        2,
    );
    s.apply(0, eta, &g1, &mut x);
    // First step of Adam moves every coordinate by η·g/(|g| + ε) ≈ η·sign(g).
    for i in 0..2 {
        let e = -eta * g1[i] / (g1[i].abs() + eps);
        assert!((x[i] - e).abs() < 1e-15);
    }
    s.apply(1, eta, &g2, &mut x);
    for i in 0..2 {
        let m = b1 * (1.0 - b1) * g1[i] + (1.0 - b1) * g2[i];
        let v = b2 * (1.0 - b2) * g1[i] * g1[i] + (1.0 - b2) * g2[i] * g2[i];
        let (mh, vh) = (m / (1.0 - b1 * b1), v / (1.0 - b2 * b2));
        let e = -eta * g1[i] / (g1[i].abs() + eps) - eta * mh / (vh.sqrt() + eps);
        assert!((x[i] - e).abs() < 1e-14);
    }
}

/// An observer stop ends the run; the ledger counts only the released steps.
#[test]
fn early_stop_records_released_steps() {
    struct StopAt(usize);
    impl Observer for StopAt {
        fn observe(&mut self, info: &IterationInfo) -> bool {
            info.iteration + 1 < self.0
        }
    }
    let oracle = ZeroSum::new(10, 2);
    let sol = NoisyGd::new(
        StepSize::Constant(0.1),
        100,
        1.0,
        1.0,
        Neighbouring::AddRemove,
    )
    .minimize(
        &oracle,
        &NoRegulariser,
        &Unconstrained,
        array![0.0, 0.0].view(),
        &mut seeded_rng(40),
        Some(&mut StopAt(7)),
    )
    .unwrap();
    assert_eq!(sol.status, Status::StoppedByObserver);
    assert_eq!(sol.iterations, 7);
    assert_eq!(sol.ledger.unwrap().entries()[0].count, 7);
    let sol = DpSgd::new(
        BatchSchedule::Poisson { q: 0.5 },
        Length::Steps(100),
        StepSize::Constant(0.1),
        1.0,
        1.0,
    )
    .minimize(
        &oracle,
        &NoRegulariser,
        &Unconstrained,
        array![0.0, 0.0].view(),
        &mut seeded_rng(41),
        Some(&mut StopAt(4)),
    )
    .unwrap();
    assert_eq!(sol.ledger.unwrap().entries()[0].count, 4);
}

/// Epochs to steps: `⌈e/q⌉` for Poisson (exact at q = 0.01), `⌈e·n/b⌉` for fixed size.
#[test]
fn epochs_to_steps() {
    let poisson = |q, e| {
        DpSgd::new(
            BatchSchedule::Poisson { q },
            Length::Epochs(e),
            StepSize::Constant(1.0),
            1.0,
            1.0,
        )
        .steps(1000)
        .unwrap()
    };
    assert_eq!(poisson(0.01, 3), 300);
    assert_eq!(poisson(0.1, 7), 70);
    assert_eq!(poisson(250.0 / 59_535.0, 10), 2382);
    assert_eq!(poisson(1.0, 2), 2);
    let fixed = DpSgd::new(
        BatchSchedule::FixedSizeWithoutReplacement { batch: 300 },
        Length::Epochs(2),
        StepSize::Constant(1.0),
        1.0,
        1.0,
    );
    assert_eq!(fixed.steps(1000).unwrap(), 7);
}

/// Bad hyper-parameters give the right error variant.
#[test]
fn bad_input_errors() {
    let oracle = ZeroSum::new(10, 2);
    let x0 = array![0.0, 0.0];
    let base = DpSgd::new(
        BatchSchedule::Poisson { q: 0.1 },
        Length::Steps(5),
        StepSize::Constant(0.1),
        1.0,
        1.0,
    );
    let run = |cfg: &DpSgd, oracle: &ZeroSum, x0: &Array1<f64>| {
        cfg.minimize(
            oracle,
            &NoRegulariser,
            &Unconstrained,
            x0.view(),
            &mut seeded_rng(0),
            None,
        )
    };
    let with = |f: &dyn Fn(&mut DpSgd)| {
        let mut c = base.clone();
        f(&mut c);
        run(&c, &oracle, &x0).unwrap_err()
    };
    let name = |e: Error| match e {
        Error::InvalidParameter { name, .. } => name,
        other => panic!("unexpected {other:?}"),
    };
    assert!(run(&base, &oracle, &x0).is_ok());
    for q in [0.0, -0.1, 1.5, f64::NAN] {
        assert_eq!(
            name(with(&|c| c.schedule = BatchSchedule::Poisson { q })),
            "q"
        );
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(name(with(&|c| c.clip = bad)), "clip");
        assert_eq!(
            name(with(&|c| c.step = StepSize::Constant(bad))),
            "step_size"
        );
        assert_eq!(
            name(with(&|c| {
                c.noise = NoiseDistribution::Gaussian {
                    noise_multiplier: bad,
                }
            })),
            "noise_multiplier"
        );
        assert_eq!(
            name(with(
                &|c| c.noise = NoiseDistribution::GammaBall { scale: bad }
            )),
            "scale"
        );
    }
    assert_eq!(name(with(&|c| c.length = Length::Steps(0))), "steps");
    assert_eq!(name(with(&|c| c.length = Length::Epochs(0))), "epochs");
    assert_eq!(
        name(with(&|c| c.update = UpdateRule::Momentum { beta: 1.0 })),
        "beta"
    );
    assert_eq!(
        name(with(&|c| {
            c.update = UpdateRule::Adam {
                beta1: 0.9,
                beta2: 0.999,
                eps: 0.0,
            }
        })),
        "eps"
    );
    assert_eq!(
        name(with(&|c| c.averaging = Averaging::Tail(0.0))),
        "tail_fraction"
    );
    for schedule in [
        BatchSchedule::ShuffleOnce { batch: 11 },
        BatchSchedule::FixedSizeWithoutReplacement { batch: 11 },
    ] {
        assert_eq!(
            with(&|c| c.schedule = schedule),
            Error::BatchTooLarge { batch: 11, n: 10 }
        );
    }
    assert_eq!(
        name(with(
            &|c| c.schedule = BatchSchedule::FixedSizeWithoutReplacement { batch: 0 }
        )),
        "batch"
    );
    assert!(matches!(
        with(&|c| {
            c.schedule = BatchSchedule::FixedSizeWithoutReplacement { batch: 2 };
            c.noise = NoiseDistribution::GammaBall { scale: 1.0 };
        }),
        Error::Unsupported(_)
    ));
    assert_eq!(
        run(&base, &ZeroSum::new(0, 2), &x0).unwrap_err(),
        Error::EmptyData
    );
    assert!(matches!(
        run(&base, &oracle, &array![0.0]).unwrap_err(),
        Error::DimensionMismatch { what: "x0", .. }
    ));

    let gd = NoisyGd::new(
        StepSize::Constant(0.1),
        5,
        1.0,
        1.0,
        Neighbouring::AddRemove,
    );
    let run_gd = |cfg: &NoisyGd, reg: &dyn Regulariser, proj: &dyn Projection| {
        cfg.minimize(&oracle, reg, proj, x0.view(), &mut seeded_rng(0), None)
    };
    assert!(run_gd(&gd, &NoRegulariser, &Unconstrained).is_ok());
    for (cfg, field) in [
        (
            NoisyGd {
                clip: f64::NAN,
                ..gd.clone()
            },
            "clip",
        ),
        (
            NoisyGd {
                noise_multiplier: 0.0,
                ..gd.clone()
            },
            "noise_multiplier",
        ),
        (
            NoisyGd {
                steps: 0,
                ..gd.clone()
            },
            "steps",
        ),
        (
            NoisyGd {
                step: StepSize::Inv(-1.0),
                ..gd.clone()
            },
            "step_size",
        ),
    ] {
        assert_eq!(
            name(run_gd(&cfg, &NoRegulariser, &Unconstrained).unwrap_err()),
            field
        );
    }
    assert_eq!(
        name(run_gd(&gd, &L2Regulariser { lambda: -1.0 }, &Unconstrained).unwrap_err()),
        "lambda"
    );
    assert_eq!(
        name(run_gd(&gd, &NoRegulariser, &L2Ball { radius: 0.0 }).unwrap_err()),
        "radius"
    );
    assert_eq!(
        gd.minimize(
            &ZeroSum::new(0, 2),
            &NoRegulariser,
            &Unconstrained,
            x0.view(),
            &mut seeded_rng(0),
            None
        )
        .unwrap_err(),
        Error::EmptyData
    );
}

/// The Poisson sampler's law, by two χ² goodness-of-fit tests (fixed seed; each with
/// false-failure rate 1e-4 under the exact law, so ≤ 4e-4 for the four): the batch size is
/// Binomial(n, q) (categories with expected count ≥ 5, the tails merged), and the n inclusion
/// counts over the draws are independent Binomial(draws, q) (statistic
/// `Σ_i (h_i − Rq)²/(Rq(1−q))`, χ² with n degrees of freedom in the normal limit). Both with
/// n = 200 and q = 0.03, where a gap drawn from a wrong law (e.g. off by one) is caught, and
/// with n = 40 and q = 0.6, where most gaps are 0 (the exponential's head, not its tail).
#[test]
fn poisson_sampler_chi_square() {
    poisson_laws(200, 0.03, 26);
    poisson_laws(40, 0.6, 27);
}

/// [`poisson_sampler_chi_square`] at one `n` and `q` (40,000 draws from seed `seed`).
fn poisson_laws(n: usize, q: f64, seed: u64) {
    use statrs::distribution::{Binomial, ChiSquared, Discrete};
    let reps = 40_000usize;
    let mut rng = seeded_rng(seed);
    let mut batch = Vec::new();
    let mut sizes = vec![0usize; n + 1];
    let mut hits = vec![0usize; n];
    for _ in 0..reps {
        poisson_batch(&mut rng, n, q, &mut batch);
        sizes[batch.len()] += 1;
        batch.iter().for_each(|&i| hits[i] += 1);
    }
    let critical = |df: usize| ChiSquared::new(df as f64).unwrap().inverse_cdf(1.0 - 1e-4);
    // Batch sizes: merge the categories into cells of expected count ≥ 5.
    let law = Binomial::new(q, n as u64).unwrap();
    let (mut stat, mut cells) = (0.0, 0usize);
    let (mut obs, mut exp) = (0.0, 0.0);
    for (k, &count) in sizes.iter().enumerate() {
        obs += count as f64;
        exp += reps as f64 * law.pmf(k as u64);
        let rest: f64 = (k + 1..=n).map(|j| law.pmf(j as u64)).sum::<f64>() * reps as f64;
        if exp >= 5.0 && rest >= 5.0 || k == n {
            stat += (obs - exp).powi(2) / exp;
            cells += 1;
            (obs, exp) = (0.0, 0.0);
        }
    }
    assert!(cells >= 8, "{cells} cells");
    assert!(
        stat <= critical(cells - 1),
        "batch sizes: chi2 = {stat} on {} df",
        cells - 1
    );
    // Inclusion counts.
    let (r, var) = (reps as f64 * q, reps as f64 * q * (1.0 - q));
    let stat: f64 = hits.iter().map(|&h| (h as f64 - r).powi(2) / var).sum();
    assert!(stat <= critical(n), "inclusion: chi2 = {stat} on {n} df");
}
