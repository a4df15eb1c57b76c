//! DP-SGD on sparse rows: [`DpSgd::fit_sparse`] releases the model of [`DpSgd::fit`] on the
//! same rows densified, bit for bit, with the same seed — for every batch schedule (Poisson,
//! with a public `n` and with a given rate; shuffled; fixed-size), every update rule, and for
//! Gamma-ball noise on the `f64` sum — on rows of any magnitude, rows whose squares overflow or
//! underflow, and empty rows. Tuned DP-SGD too ([`HonestTuning::fit_sparse`],
//! [`TuningWithoutPrivacyAccounting::fit_sparse`]): the same split, runs, validation counts
//! and choice, so the same model and report. The catalog's `dp-sgd` fits sparse rows, tuned or
//! not (`sparse_fit.rs` compares its untuned catalog fits with the dense ones; the tuned ones
//! are compared here).
//!
//! The rows have fewer than 32 entries, so the dense row norms are the sparse ones in builds
//! with BLAS too (module `dp_glm::sparse`).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use dp_accounting::Repetitions;
use dp_accounting::{AccountantKind, Neighbouring};
use dp_data::CsrData;
use dp_glm::bounds::PrivateBounds;
use dp_glm::catalog::{self, Params, Request, Value};
use dp_glm::learners::SgdSchedule;
use dp_glm::selection::{HonestTuning, TuningWithoutPrivacyAccounting};
use dp_glm::sparse::SparseDataset;
use dp_glm::{Dataset, DpSgd, LinearModel, Loss, SgdNoise};
use dp_optim::UpdateRule;
use ndarray::Array2;
use rand::RngExt;

/// `n` rows of 24 features, about 30% of the entries present, of any magnitude (1e-4 to 1e2,
/// either sign); every seventh row empty; row 1 of entries near `f64::MAX` (their squares
/// overflow), row 2 of entries near 1e-170 (their squares underflow). Labels ±1, or in
/// `[−2, 2)` with `real`. Drawn dense, stored as the non-zero entries of each row.
fn rows(n: usize, real: bool) -> SparseDataset {
    let mut rng = dp_optim::seeded_rng(17);
    let x = Array2::from_shape_fn((n, 24), |(i, _)| {
        let size = match i {
            1 => 1.6e308,
            2 => 1e-170,
            _ => 10f64.powi(rng.random_range(-3..3)),
        };
        let present = i % 7 != 3 && rng.random::<f64>() < 0.3;
        let value = (0.1 + 0.9 * rng.random::<f64>()) * size;
        match (present, rng.random::<bool>()) {
            (false, _) => 0.0,
            (true, positive) => value.copysign(if positive { 1.0 } else { -1.0 }),
        }
    });
    let y = (0..n).map(|_| match real {
        true => rng.random::<f64>() * 4.0 - 2.0,
        false => f64::from(2 * i32::from(rng.random::<bool>()) - 1),
    });
    let mut csr = CsrData {
        n_features: 24,
        indptr: vec![0],
        indices: vec![],
        values: vec![],
        y: y.collect(),
    };
    for row in x.rows() {
        for (j, &v) in row.iter().enumerate().filter(|&(_, &v)| v != 0.0) {
            csr.indices.push(j);
            csr.values.push(v);
        }
        csr.indptr.push(csr.values.len());
    }
    SparseDataset::new(csr).unwrap()
}

/// A fit on sparse rows and the same fit on dense rows, each with a seeded rng.
type Fits<'a> = (
    &'a dyn Fn(&SparseDataset, &mut Rng) -> dp_glm::Result<LinearModel>,
    &'a dyn Fn(&Dataset, &mut Rng) -> dp_glm::Result<LinearModel>,
);

/// The rng of the fits.
type Rng = rand_xoshiro::Xoshiro256PlusPlus;

/// The model files of `fits` on `data` sparse and densified, with seed `seed`.
fn both_fits((sparse, dense): Fits<'_>, data: &SparseDataset, seed: u64) -> (String, String) {
    let rows = data.to_dense().unwrap();
    let s = sparse(data, &mut dp_optim::seeded_rng(seed));
    let d = dense(&rows, &mut dp_optim::seeded_rng(seed));
    (s.unwrap().to_json().unwrap(), d.unwrap().to_json().unwrap())
}

/// The model files of `learner` fitted on `data` sparse and densified, with seed `seed`.
fn both(learner: &DpSgd, data: &SparseDataset, seed: u64) -> (String, String) {
    let sparse = |d: &SparseDataset, r: &mut Rng| learner.fit_sparse(d, r);
    let dense = |d: &Dataset, r: &mut Rng| learner.fit(d, r);
    both_fits((&sparse, &dense), data, seed)
}

/// DP-SGD for `loss` with batches of 40 over 2 epochs, `configure`d.
fn learner(loss: Loss, configure: impl FnOnce(&mut DpSgd)) -> DpSgd {
    let mut l = DpSgd::new(loss)
        .budget(4.0, 1e-5)
        .batch_size(40)
        .epochs(2)
        .learning_rate(0.3);
    configure(&mut l);
    l
}

/// Replace-one with the RDP accountant (the shuffled and fixed-size schedules).
fn replace_one(l: &mut DpSgd, schedule: SgdSchedule) {
    l.schedule = schedule;
    l.budget.neighbouring = Neighbouring::ReplaceOne;
    l.budget.accountant = AccountantKind::Rdp;
}

#[test]
fn sparse_fits_are_the_dense_fits_bit_for_bit() {
    let class = rows(700, false);
    let real = rows(700, true);
    // Not vacuous: empty rows, and rows of extreme magnitude.
    assert_eq!(class.row(3).0.len(), 0);
    assert!(class.row(1).1.iter().all(|v| v.abs() > 1e307));
    let squares = |i: usize| class.row(i).1.iter().map(|v| v * v).sum::<f64>();
    assert!(squares(1).is_infinite());
    assert!(class.row(2).1.iter().all(|v| v.abs() < 1e-169) && squares(2) == 0.0);
    let cases: Vec<(&str, DpSgd)> = vec![
        ("poisson", learner(Loss::Logistic, |_| {})),
        (
            "poisson, public n, adam",
            learner(Loss::Logistic, |l| {
                l.public_n = Some(650);
                l.update = UpdateRule::adam();
            }),
        ),
        (
            "poisson, given rate and public n, momentum, averaged",
            learner(Loss::Logistic, |l| {
                l.sampling_rate = Some(0.07);
                l.public_n = Some(720);
                l.update = UpdateRule::Momentum { beta: 0.9 };
                l.averaging = dp_optim::Averaging::Uniform;
            }),
        ),
        (
            "poisson, squared loss, ridge",
            learner(Loss::Squared, |l| l.lambda = 0.1),
        ),
        (
            "shuffle",
            learner(Loss::Logistic, |l| {
                l.epochs = 1;
                replace_one(l, SgdSchedule::Shuffle);
            }),
        ),
        (
            "fixed",
            learner(Loss::Logistic, |l| replace_one(l, SgdSchedule::Fixed)),
        ),
        (
            "fixed, squared loss",
            learner(Loss::Squared, |l| replace_one(l, SgdSchedule::Fixed)),
        ),
        (
            "gamma ball (f64 sums)",
            learner(Loss::Logistic, |l| {
                l.noise = SgdNoise::GammaBall;
                l.allow_float_noise = true;
            }),
        ),
    ];
    for (name, l) in &cases {
        let data = if l.loss == Loss::Squared {
            &real
        } else {
            &class
        };
        let (sparse, dense) = both(l, data, 5);
        assert_eq!(sparse, dense, "{name}");
        // Not vacuous: the model moved from zero, and another seed gives another model.
        let model = l.fit_sparse(data, &mut dp_optim::seeded_rng(5)).unwrap();
        assert!(model.coef().iter().all(|c| c.is_finite()), "{name}");
        assert!(model.coef().iter().any(|&c| c != 0.0), "{name}");
        let (other, _) = both(l, data, 6);
        assert_ne!(sparse, other, "{name}");
    }
}

#[test]
fn sparse_fits_refuse_what_dense_fits_refuse() {
    let data = rows(100, false);
    let hp = |l: DpSgd| match l.fit_sparse(&data, &mut dp_optim::seeded_rng(1)) {
        Err(dp_glm::Error::InvalidHyperParameter { name, .. }) => name,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        hp(learner(Loss::Logistic, |l| l.batch_size = 101)),
        "batch_size"
    );
    assert_eq!(hp(learner(Loss::Logistic, |l| l.clip = f64::NAN)), "clip");
    // Labels outside the loss's domain, named.
    assert!(matches!(
        learner(Loss::Logistic, |_| {}).fit_sparse(&rows(100, true), &mut dp_optim::seeded_rng(1)),
        Err(dp_glm::Error::LabelOutOfDomain { .. })
    ));
}

/// A [`catalog::Progress`] recording the stages begun (an estimate begins one).
struct Stages(Vec<String>);

impl catalog::Progress for Stages {
    fn stage(&mut self, name: &str, _: Option<u64>) {
        self.0.push(name.to_string());
    }

    fn advance(&mut self) {}
}

/// The reported value `name` of `model`'s privacy report.
fn reported(model: &str, name: &str) -> f64 {
    let m = LinearModel::from_json(model).unwrap();
    let found = m.privacy().noise.iter().find(|(n, _)| n == name);
    found
        .map(|&(_, v)| v)
        .unwrap_or_else(|| panic!("{name}: {:?}", m.privacy()))
}

/// Tuned DP-SGD, honest and unaccounted, on sparse rows is the tuned fit on the rows densified,
/// bit for bit (model and report): logistic and squared loss, with and without a public `n`,
/// on rows that need clipping (norms up to 1e2 and beyond 1e308 against a clip of 1) and
/// empty rows. Each honest case runs at least one trial (or the model is the zero model).
#[test]
fn tuned_sparse_fits_are_the_dense_fits_bit_for_bit() {
    let class = rows(600, false);
    let real = rows(600, true);
    assert!(class.row_norms().iter().any(|&r| r > 10.0));
    assert_eq!(class.row(3).0.len(), 0);
    let rates = vec![0.05, 0.3, 1.0];
    let honest = |loss, public_n| {
        let mut base = learner(loss, |l| l.public_n = public_n);
        base.batch_size = 30;
        let mut t = HonestTuning::new(base, rates.clone(), 3.0);
        // K ≥ 1 always: every case runs trials.
        t.trials = Repetitions::TruncatedNegativeBinomial {
            eta: 1.0,
            gamma: 0.4,
        };
        t
    };
    let cases = [
        ("honest, logistic", honest(Loss::Logistic, None)),
        (
            "honest, logistic, public n",
            honest(Loss::Logistic, Some(500)),
        ),
        ("honest, squared", honest(Loss::Squared, None)),
        (
            "honest, squared, public n",
            honest(Loss::Squared, Some(450)),
        ),
    ];
    for (name, t) in &cases {
        let data = if t.base.loss == Loss::Squared {
            &real
        } else {
            &class
        };
        let sparse = |d: &SparseDataset, r: &mut Rng| t.fit_sparse(d, r);
        let dense = |d: &Dataset, r: &mut Rng| t.fit(d, r);
        let (s, d) = both_fits((&sparse, &dense), data, 9);
        assert_eq!(s, d, "{name}");
        // Not vacuous: trials ran, a rate was chosen, the model moved from zero, and another
        // seed gives another model.
        assert!(
            rates.contains(&reported(&s, "chosen_learning_rate")),
            "{name}"
        );
        let m = LinearModel::from_json(&s).unwrap();
        assert!(m.coef().iter().any(|&c| c != 0.0), "{name}");
        let (other, _) = both_fits((&sparse, &dense), data, 10);
        assert_ne!(s, other, "{name}");
    }
    for (loss, data) in [(Loss::Logistic, &class), (Loss::Squared, &real)] {
        let t = TuningWithoutPrivacyAccounting::new(learner(loss, |_| {}), rates.clone());
        let sparse = |d: &SparseDataset, r: &mut Rng| t.fit_sparse(d, r);
        let dense = |d: &Dataset, r: &mut Rng| t.fit(d, r);
        let (s, d) = both_fits((&sparse, &dense), data, 11);
        assert_eq!(s, d, "unaccounted, {loss:?}");
        assert!(s.contains("NOT ACCOUNTED"), "{s}");
    }
    // Refused alike: a split that leaves no training rows, a replace-one budget.
    let mut split = honest(Loss::Logistic, None);
    split.validation_fraction = 1.0;
    let err = |t: &HonestTuning| {
        let dense = t.fit(&class.to_dense().unwrap(), &mut dp_optim::seeded_rng(1));
        let sparse = t.fit_sparse(&class, &mut dp_optim::seeded_rng(1));
        (
            sparse.unwrap_err().to_string(),
            dense.unwrap_err().to_string(),
        )
    };
    let (s, d) = err(&split);
    assert!(s.contains("validation_fraction"), "{s}");
    assert_eq!(s, d);
    let mut replace = honest(Loss::Logistic, None);
    replace.base.budget.neighbouring = Neighbouring::ReplaceOne;
    let (s, d) = err(&replace);
    assert_eq!(s, d);
}

/// The catalog's `dp-sgd` fits sparse rows tuned too: honest and
/// unaccounted, the clip estimated privately from the same row norms, the same model and bounds
/// as its fit on the rows densified.
#[test]
fn the_catalog_fits_tuned_dp_sgd_on_sparse_rows() {
    let data = rows(500, false);
    let dense = data.to_dense().unwrap();
    let learner = catalog::learner("dp-sgd").unwrap();
    assert!(learner.fits_sparse());
    for tune in ["honest", "unaccounted"] {
        let mut params = Params::new();
        params.set("batch_size", Value::Count(50));
        params.set("tune", Value::Choice(tune.into()));
        params.set("learning_rates", Value::RealList(vec![0.1, 0.5]));
        // The clip is estimated (no row bound).
        let needs = learner.needs(Loss::Logistic, None, &params).unwrap();
        assert_eq!(needs.iter().filter(|n| n.is_estimated()).count(), 1);
        let request = Request {
            loss: Loss::Logistic,
            delta: 1e-5,
            params: &params,
            needs: &needs,
        };
        let fit = |sparse: bool, progress: &mut Stages| {
            let bounds = PrivateBounds::new(2.0, 1e-5, 0.1, 1).unwrap();
            let rng = &mut dp_optim::seeded_rng(1);
            let fitted = match sparse {
                true => learner.fit_sparse(&request, &data, bounds, rng, progress),
                false => learner.fit(&request, &dense, bounds, rng, progress),
            };
            fitted.unwrap()
        };
        let mut progress = Stages(Vec::new());
        let (s_model, s_bounds) = fit(true, &mut progress);
        let (d_model, d_bounds) = fit(false, &mut Stages(Vec::new()));
        assert_eq!(s_model, d_model, "{tune}");
        assert_eq!(s_bounds, d_bounds, "{tune}");
        assert!(s_bounds.bounds().iter().any(|b| b.name == "clip"), "{tune}");
        assert!(!progress.0.is_empty(), "{tune}");
    }
}
