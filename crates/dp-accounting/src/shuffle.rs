//! Amplification by shuffling: Feldman, McMillan & Talwar 2021 (*Hiding among the clones*,
//! FOCS), closed form as in MATH §8.

use crate::error::{Result, ensure, open_unit, positive};

/// ε of the shuffled output of `n` independent ε0-DP local randomisers, at `delta`.
///
/// # Privacy
/// Feldman, McMillan & Talwar 2021, Thm 3.1 (closed form as in the authors' reference code;
/// MATH §8): for `ε0 ≤ log(n/(16 log(4/δ)))`, with `a = 8√(e^{ε0} log(4/δ))/√n` and
/// `c = 8e^{ε0}/n`, `ε = log(1 + (1 − e^{−ε0})/(1 + e^{−ε0−e})·(a + c))`,
/// `e = log(1 + a + c)`; otherwise no amplification is claimed and `ε = ε0`. Replace-one.
/// Rounded up.
///
/// # Errors
/// ε0 not positive, `n` = 0, δ ∉ (0, 1).
pub fn shuffle_epsilon(eps0: f64, n: u64, delta: f64) -> Result<f64> {
    positive("eps0", eps0)?;
    ensure(n >= 1, "n", n as f64, "must be >= 1")?;
    open_unit("delta", delta)?;
    let nf = n as f64;
    let l = (4.0 / delta).ln();
    if eps0 > (nf / (16.0 * l)).ln() {
        return Ok(eps0);
    }
    let a = 8.0 * (eps0.exp() * l).sqrt() / nf.sqrt();
    let c = 8.0 * eps0.exp() / nf;
    let e = (a + c).ln_1p();
    let factor = -(-eps0).exp_m1() / (1.0 + (-eps0 - e).exp());
    Ok(crate::gaussian::round_up_eps((factor * (a + c)).ln_1p()).min(eps0))
}

/// δ of the shuffled output when each local randomiser is (ε0, δ0)-DP: the shuffle's `delta`
/// plus `(e^ε + 1)(1 + e^{−ε0}/2)·n·δ0`, where `ε` is [`shuffle_epsilon`]'s value.
///
/// # Privacy
/// Feldman, McMillan & Talwar 2021, Thm 3.8 (as used in the authors' code and MATH §8).
///
/// # Errors
/// As [`shuffle_epsilon`], and δ0 ∉ [0, 1).
pub fn shuffle_delta(eps0: f64, delta0: f64, n: u64, delta: f64) -> Result<(f64, f64)> {
    ensure(
        (0.0..1.0).contains(&delta0),
        "delta0",
        delta0,
        "must be in [0, 1)",
    )?;
    let eps = shuffle_epsilon(eps0, n, delta)?;
    let total = delta + (eps.exp() + 1.0) * (1.0 + 0.5 * (-eps0).exp()) * n as f64 * delta0;
    Ok((eps, crate::gaussian::round_up(total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplifies_and_falls_back() {
        let e = shuffle_epsilon(1.0, 100_000, 1e-6).unwrap();
        assert!(e < 0.1 && e > 0.0, "{e}");
        assert_eq!(shuffle_epsilon(5.0, 100, 1e-6).unwrap(), 5.0);
        assert!(shuffle_epsilon(1.0, 1000, 1e-6).unwrap() <= 1.0);
        let (_, d) = shuffle_delta(1.0, 1e-12, 100_000, 1e-6).unwrap();
        assert!(d > 1e-6);
    }
}
