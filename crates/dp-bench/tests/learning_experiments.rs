//! The learning experiments of papers 000, 002, 003 and 004 in quick mode: each must show what
//! its paper claims (or what its note says instead), checked on the numbers it produces.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use dp_bench::{Artifact, ArtifactKind, Figure, Mode, RunContext, locate_data_dir, registry};

/// Runs experiment `id` in quick mode and returns its figures.
fn figures(id: &str, data: Option<std::path::PathBuf>) -> Vec<Figure> {
    let exp = registry()
        .into_iter()
        .find(|e| e.id() == id)
        .expect("registered");
    let out = tempfile::TempDir::new().unwrap();
    let mut ctx = RunContext::new(Mode::Quick, out.path(), data);
    exp.run(&mut ctx)
        .expect("runs")
        .into_iter()
        .map(|a: Artifact| match a.kind {
            ArtifactKind::Figure(f) => f,
            ArtifactKind::Table(t) => panic!("unexpected table {}", t.id),
        })
        .collect()
}

/// The points of the series whose label starts with `prefix`.
fn series<'a>(fig: &'a Figure, prefix: &str) -> &'a [(f64, f64)] {
    &fig.series
        .iter()
        .find(|s| s.label.starts_with(prefix))
        .unwrap_or_else(|| panic!("no series {prefix} in {}", fig.id))
        .points
}

#[test]
fn noisy_projected_gd_error_falls_with_steps_and_stays_below_the_bound() {
    let figs = figures("004-error-vs-t", None);
    let measured = series(&figs[0], "measured");
    let bound = series(&figs[0], "bound");
    let (first, last) = (measured[0].1, measured[measured.len() - 1].1);
    // It falls like 1/√T to the privacy noise floor: at least fourfold from T = 1 …
    assert!(
        last < 0.25 * first,
        "excess risk {first} at T = 1, {last} at the largest T"
    );
    // … and flattens there instead of turning up (exact composition: the privacy term does not
    // grow with T). The floor of a mean of 3 seeds varies by about a quarter between seed sets,
    // hence the margin.
    let floor = measured
        .iter()
        .filter(|p| p.0 >= 1000.0)
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min);
    assert!(
        last <= 1.5 * floor,
        "excess risk {last} at the largest T, {floor} the least for T ≥ 1000: {measured:?}"
    );
    for (m, b) in measured.iter().zip(bound) {
        assert!(m.1 <= b.1, "measured {m:?} above the bound {b:?}");
    }
}

#[test]
fn aggressive_clipping_biases_the_minimiser_as_the_closed_form_says() {
    let figs = figures("000-appd2-clipping-bias", None);
    let argmin = series(&figs[0], "argmin");
    for &(b, closed) in series(&figs[0], "2·log") {
        let got = argmin.iter().find(|p| p.0 == b).unwrap().1;
        assert!((got - closed).abs() < 1e-6, "B = {b}: {got} vs {closed}");
    }
    let excess = series(&figs[1], "clipped minimiser");
    assert!(excess.windows(2).all(|w| w[0].1 > w[1].1), "{excess:?}");
    assert!(excess[0].1 > 3.0, "excess at B = 1e-3: {}", excess[0].1);
    let dpgd = series(&figs[1], "DP-GD");
    assert!(
        dpgd[dpgd.len() - 1].1 < 1e-3,
        "DP-GD without effective clipping: {dpgd:?}"
    );
    assert!(dpgd[0].1 > 3.0, "DP-GD at B = 1e-3: {dpgd:?}");
}

#[test]
fn private_linear_regression_risks_fall_with_n() {
    let figs = figures("002-excess-risk", None);
    let by_n = &figs[0];
    let last = |name: &str| {
        let s = series(by_n, name);
        (s[0].1, s[s.len() - 1].1)
    };
    let (_, best) = last("non-private");
    for name in ["DP-AMBSSGD", "DP-SSGD", "DP-SGD", "AdaSSP"] {
        let (small, large) = last(name);
        assert!(
            large < small,
            "{name}: {small} at the smallest N, {large} at the largest"
        );
        assert!(
            large > best,
            "{name} below least squares: {large} vs {best}"
        );
    }
    // No claim that DP-AMBSSGD beats DP-SSGD at the largest N: on 8 seeds at N = 50,000
    // its excess risk ranged 0.0005–0.16 (median 0.0014, mean 0.026, DP-SSGD's mean 0.024),
    // so the quick run's mean of 2 seeds falls on either side by the seeds' luck.
}

#[test]
fn jl_method_wins_in_high_dimension() {
    let figs = figures("003-noisy-gd-vs-jl", None);
    let high = figs.iter().find(|f| f.id.contains("high")).unwrap();
    let (gd, jl) = (
        series(high, "noisy projected GD"),
        series(high, "JL method"),
    );
    let top = gd.len() - 1;
    assert!(
        jl[top].1 < gd[top].1,
        "JL {:?} vs GD {:?}",
        jl[top],
        gd[top]
    );
    let zero = high
        .ref_lines
        .iter()
        .find(|r| r.label.as_deref() == Some("zero model"));
    let zero = zero.unwrap().y;
    assert!(jl[top].1 < zero && gd[top].1 < zero);
}

#[test]
fn gaussian_noise_is_flat_in_dimension_and_gamma_noise_is_not() {
    let Some(dir) = locate_data_dir() else {
        eprintln!(
            "skipped: Cod-RNA not found (set DPGLM_DATA or stage ../shared/data); \
             000-fig2 needs the data"
        );
        return;
    };
    let figs = figures("000-fig2-codrna-dimension", Some(dir));
    let (gauss, gamma) = (series(&figs[0], "Gaussian"), series(&figs[0], "Gamma"));
    let spread = gauss.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max)
        - gauss.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    assert!(
        spread < 0.01,
        "Gaussian accuracy varies by {spread}: {gauss:?}"
    );
    let last = gauss.len() - 1;
    assert!(
        gamma[last].1 < gauss[last].1 - 0.01,
        "{gamma:?} vs {gauss:?}"
    );
    assert!(gauss[0].1 > 0.9, "{gauss:?}");
}
