//! The discrete-Gaussian grid adjustment (`dp_accounting::discrete_gaussian`): its bounds
//! against mpmath (`tests/fixtures/generate_discrete_gaussian.py`), and the accountants
//! applying it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::{f, fixture, rel, rows};
use dp_accounting::{
    Accountant, AccountantKind, Error, ExactAccountant, GridComposition, GridGaussian, Ledger,
    Mechanism, Neighbouring, NoteValue, PldAccountant, PldConfig,
};

const AR: Neighbouring = Neighbouring::AddRemove;

fn one(sigma: f64) -> GridComposition {
    let mut g = GridComposition::new();
    g.add(GridGaussian::new(sigma, 1).unwrap(), 1);
    g
}

/// For σ from 1 (the smallest grid release) to 2^25 and c from 2 to 40: the per-coordinate
/// bounds are at least the exact log pmf ratios and tail (60-digit mpmath), and at the
/// default grid's σ ≥ 2^24 (≥ 4096 here) within the factor the proof gives away.
#[test]
fn bounds_dominate_mpmath() {
    let fx = fixture("discrete_gaussian.json");
    let table = rows(&fx, "rows");
    assert_eq!(table.len(), 40);
    for row in table {
        let (s, c) = (f(row, "sigma"), f(row, "c"));
        let g = one(s);
        let (up, down, ln_tail) = (f(row, "up"), f(row, "down"), f(row, "ln_tail"));
        assert!(g.up() >= up, "sigma {s}: a+ {} < exact {up}", g.up());
        assert!(
            g.down(c) >= down,
            "sigma {s} c {c}: a- {} < {down}",
            g.down(c)
        );
        assert!(g.ln_tail(c) >= ln_tail, "sigma {s} c {c}: {}", g.ln_tail(c));
        // Looseness: a+ is exact to second order (≤ 4% at σ = 1); a−'s c²/(24σ²) stands for
        // the exact (c² − 1)/(24σ²) once σ is large; the Chernoff tail gives away ≤ 4 nats
        // (the Mills ratio) plus the half-cell offset.
        assert!(rel(g.up(), up) <= 0.04, "sigma {s}: a+ {} vs {up}", g.up());
        if s >= 4096.0 {
            let factor = c * c / (c * c - 1.0) * (1.0 + 1e-6);
            assert!(g.down(c) <= factor * down, "sigma {s} c {c}: {}", g.down(c));
        }
        if s >= 100.0 {
            assert!(
                g.ln_tail(c) <= ln_tail + 4.5,
                "sigma {s} c {c}: {}",
                g.ln_tail(c)
            );
        }
    }
}

#[test]
fn grid_parameters_are_validated() {
    for bad in [0.5, 0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            GridGaussian::new(bad, 1),
            Err(Error::InvalidParameter {
                name: "grid_sigma",
                ..
            })
        ));
    }
    assert!(GridGaussian::new(2.0, 0).is_err());
}

/// `steps` Gaussian releases of `dim` coordinates, multiplier `z`, on a grid of parameter
/// `sigma` grid units.
fn gridded(z: f64, sigma: f64, dim: u64) -> Mechanism {
    Mechanism::gaussian(z, 1.0)
        .unwrap()
        .with_grid(GridGaussian::new(sigma, dim).unwrap())
}

/// The exact accountant's ε of a grid release is the continuous ε at the reduced δ plus
/// exactly the adjustment, and a little above the continuous ε at δ.
#[test]
fn exact_accountant_adds_exactly_the_adjustment() {
    let (z, steps, dim, delta) = (30.0, 1000, 100, 1e-5);
    let sigma = 2f64.powi(24);
    let mut acc = AccountantKind::Exact.build(AR);
    acc.compose(&gridded(z, sigma, dim), steps).unwrap();
    let eps = acc.epsilon(delta).unwrap();

    let mut cont = ExactAccountant::new(AR);
    cont.compose(&Mechanism::gaussian(z, 1.0).unwrap(), steps)
        .unwrap();
    let mut grid = GridComposition::new();
    grid.add(GridGaussian::new(sigma, dim).unwrap(), steps);
    let inner = cont.epsilon(grid.inner_delta(delta)).unwrap();
    let adjustment = grid.epsilon_adjustment(inner, delta);
    assert_eq!(eps, (inner + adjustment).next_up());
    // 10^5 coordinates at σ = 2^24: c² ≈ 2(ln 10^5 + ε' + ln(1/δ) + 32 ln 2) ≈ 96, so
    // A− ≈ 10^5·96/(24·2^48) ≈ 1.4e-9; A+ ≈ 10^5/(24·2^48) ≈ 1.5e-11.
    assert!(
        adjustment > 1e-9 && adjustment < 2e-9,
        "adjustment {adjustment}"
    );
    let plain = cont.epsilon(delta).unwrap();
    assert!(eps > plain && eps - plain < 3e-9, "{eps} vs {plain}");
    // The note reports it.
    let note = acc
        .notes()
        .into_iter()
        .find(|n| n.name == "discrete_gaussian_epsilon_adjustment")
        .expect("note");
    assert_eq!(note.value, NoteValue::Number(adjustment));
    // δ(ε) is above the continuous δ, by a relative amount of the same tiny order.
    let d = acc.delta(1.0).unwrap();
    let d_plain = cont.delta(1.0).unwrap();
    assert!(
        d > d_plain && d < d_plain * (1.0 + 1e-6),
        "{d} vs {d_plain}"
    );
    // And the two directions agree: δ at the grid ε is at most δ (up to the last rounding).
    assert!(acc.delta(eps + 1e-8).unwrap() <= delta);
}

/// Without a grid the wrapped accountants answer exactly as the bare ones; the bare PLD
/// and exact accountants refuse a grid release (they would drop the adjustment); RDP and
/// zCDP price it as the continuous mechanism.
#[test]
fn grid_releases_reach_only_the_adjusting_accountants() {
    let m = Mechanism::subsampled_gaussian(1.0, 0.01).unwrap();
    let mut wrapped = AccountantKind::Pld.build(AR);
    wrapped.compose(&m, 100).unwrap();
    let mut bare = PldAccountant::new(PldConfig::default(), AR);
    bare.compose(&m, 100).unwrap();
    assert_eq!(wrapped.epsilon(1e-5).unwrap(), bare.epsilon(1e-5).unwrap());
    assert_eq!(wrapped.delta(1.0).unwrap(), bare.delta(1.0).unwrap());

    let g = m
        .clone()
        .with_grid(GridGaussian::new(2f64.powi(24), 10).unwrap());
    assert!(matches!(
        bare.compose(&g, 1),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        ExactAccountant::new(AR).compose(&gridded(1.0, 2f64.powi(24), 3), 1),
        Err(Error::Unsupported { .. })
    ));
    for kind in [AccountantKind::Rdp, AccountantKind::Zcdp] {
        let eps = |mech: &Mechanism| {
            let mut acc = kind.build(AR);
            acc.compose(mech, 10).unwrap();
            acc.epsilon(1e-5).unwrap()
        };
        let plain = Mechanism::gaussian(3.0, 1.0).unwrap();
        assert_eq!(eps(&plain), eps(&gridded(3.0, 2f64.powi(24), 5)));
    }
}

/// DP-SGD at the headline parameters (q = 0.004, σ = 1, T = 10⁴) in dimension 100 on the
/// default grid (σ_g ≥ 2^24 grid units): the PLD ε grows by a tiny adjustment, and a ledger
/// holding the release is priced with it.
#[test]
fn dpsgd_ledger_includes_the_adjustment() {
    let (steps, delta) = (10_000, 1e-5);
    let step = Mechanism::subsampled_gaussian(1.0, 0.004).unwrap();
    let grid = GridGaussian::new(2f64.powi(24), 100).unwrap();
    let mut ledger = Ledger::new(AR);
    ledger.record(step.clone().with_grid(grid), steps, "noisy gradient");
    let eps = ledger.epsilon(AccountantKind::Pld, delta).unwrap();
    let mut plain = Ledger::new(AR);
    plain.record(step, steps, "noisy gradient");
    let cont = plain.epsilon(AccountantKind::Pld, delta).unwrap();
    let acc = ledger.accountant(AccountantKind::Pld).unwrap();
    acc.epsilon(delta).unwrap();
    let adjustment = match acc
        .notes()
        .into_iter()
        .find(|n| n.name == "discrete_gaussian_epsilon_adjustment")
    {
        Some(n) => match n.value {
            NoteValue::Number(x) => x,
            other => panic!("{other:?}"),
        },
        None => panic!("no adjustment note"),
    };
    // 10^6 coordinates: c² ≈ 2(ln 10^6 + 2.2 + 11.5 + 22.2) ≈ 99, A− ≈ 10^6·99/(24·2^48).
    assert!(
        adjustment > 1e-8 && adjustment < 2e-8,
        "adjustment {adjustment}"
    );
    assert!(eps > cont && eps - cont < 3e-8, "{eps} vs {cont}");
    println!("DP-SGD q=0.004 sigma=1 T=1e4 d=100: eps {cont} -> {eps} (adjustment {adjustment})");
}

/// Counts whose total overflows `u64` are kept in full (a saturated count would shrink the
/// adjustment): two applications of `u64::MAX` releases weigh twice one.
#[test]
fn overflowing_counts_are_not_cut_short() {
    let g = GridGaussian::new(1e3, 1).unwrap();
    let mut once = GridComposition::new();
    once.add(g, u64::MAX);
    let mut twice = GridComposition::new();
    twice.add(g, u64::MAX);
    twice.add(g, u64::MAX);
    let ratio = twice.up() / once.up();
    assert!((ratio - 2.0).abs() < 1e-12, "ratio {ratio}");
}

/// A NaN inner ε gives a NaN adjustment (refused by the accountants), never a finite number
/// from a cut-off that a `max` clamped silently.
#[test]
fn a_nan_inner_epsilon_is_not_swallowed() {
    let g = one(1e3);
    assert!(g.epsilon_adjustment(f64::NAN, 1e-5).is_nan());
    assert!(g.epsilon_adjustment(1.0, 1e-5).is_finite());
}

/// Objective perturbation with a discrete Gaussian linear term (dp-glm's grid-safe release):
/// its Rényi curve is the comparison mechanism's only, so the RDP accountant adds the
/// adjustment for it (but not for a Gaussian grid release, which the discrete Gaussian's own
/// Rényi divergences cover), exactly as much as the exact accountant adds.
#[test]
fn rdp_adjusts_objective_perturbation_grids_only() {
    let p = dp_accounting::ObjPertParams::new(5.0, 2.0, 0.5, std::f64::consts::SQRT_2).unwrap();
    // A coarse grid (σ = 4 grid units) makes the adjustment visible.
    let grid = GridGaussian::new(4.0, 3).unwrap();
    let op = Mechanism::objective_perturbation(p);
    let eps = |kind: AccountantKind, m: &Mechanism| {
        let mut acc = kind.build(AR);
        acc.compose(m, 1).unwrap();
        acc.epsilon(1e-5).unwrap()
    };
    let (plain, gridded_op) = (
        eps(AccountantKind::Rdp, &op),
        eps(AccountantKind::Rdp, &op.clone().with_grid(grid)),
    );
    let mut g = GridComposition::new();
    g.add(grid, 1);
    let mut rdp = AccountantKind::Rdp.build(AR);
    rdp.compose(&op, 1).unwrap();
    let expected = g.epsilon(rdp.as_ref(), 1e-5).unwrap();
    assert_eq!(gridded_op, expected);
    assert!(
        gridded_op > plain + 3.0 * 0.9 / (24.0 * 16.0),
        "{gridded_op} vs {plain}"
    );
    // AMP too; the Gaussian keeps the Rényi price of its discrete law.
    let amp = Mechanism::amp(p, 1e-3, 0.1).unwrap();
    assert!(
        eps(AccountantKind::Rdp, &amp.clone().with_grid(grid)) > eps(AccountantKind::Rdp, &amp)
    );
    let gauss = Mechanism::gaussian(3.0, 1.0).unwrap();
    assert_eq!(
        eps(AccountantKind::Rdp, &gauss),
        eps(AccountantKind::Rdp, &gauss.clone().with_grid(grid))
    );
    // The exact accountant adds the same adjustment to its own ε'.
    let mut exact = ExactAccountant::new(AR);
    exact.compose(&op, 1).unwrap();
    assert_eq!(
        eps(AccountantKind::Exact, &op.with_grid(grid)),
        g.epsilon(&exact, 1e-5).unwrap()
    );
}
