//! Empirical privacy auditing: a lower bound on ε from how well a test tells two neighbouring
//! datasets apart.
//!
//! Run a mechanism many times on `D` and on a neighbour `D'`, apply a fixed test ("guess `D'`
//! when the statistic exceeds `t`"), and count its false positives (runs on `D` flagged) and
//! false negatives (runs on `D'` missed). If the mechanism is (ε, δ)-DP, every test has
//! `FPR + e^ε·FNR ≥ 1 − δ` and `FNR + e^ε·FPR ≥ 1 − δ` (Kairouz, Oh, Viswanath 2015, Thm 2.1;
//! the hypothesis-testing view of DP). With Clopper–Pearson upper confidence bounds on both
//! rates, the ε solving those inequalities is a lower bound on the mechanism's true ε with
//! the stated confidence — the method of Jagielski, Ullman, Oprea 2020 ("Auditing
//! differentially private machine learning: how private is private SGD?"). An audit that
//! finds a lower bound above a claimed ε has found a bug in the claim.

use statrs::function::beta::checked_beta_reg;

use crate::error::{Error, Result, ensure};

/// Outcome counts of a distinguishing test run on two neighbouring datasets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestCounts {
    /// Runs on `D` (the "negatives").
    pub negatives: u64,
    /// Runs on `D` the test flagged as `D'`.
    pub false_positives: u64,
    /// Runs on `D'` (the "positives").
    pub positives: u64,
    /// Runs on `D'` the test did not flag.
    pub false_negatives: u64,
}

impl TestCounts {
    /// Counts of the test "statistic `> threshold` means `D'`" on the statistics of runs on
    /// `D` and on `D'`.
    pub fn from_statistics(on_d: &[f64], on_d_prime: &[f64], threshold: f64) -> Self {
        Self {
            negatives: on_d.len() as u64,
            false_positives: on_d.iter().filter(|&&s| s > threshold).count() as u64,
            positives: on_d_prime.len() as u64,
            false_negatives: on_d_prime.iter().filter(|&&s| s <= threshold).count() as u64,
        }
    }
}

/// One-sided Clopper–Pearson upper confidence bound on a binomial proportion: the largest
/// `p` with `P[Bin(n, p) ≤ k] ≥ α`, so that `p_true ≤ bound` with probability `≥ 1 − α`.
/// Found by bisection on the regularised incomplete beta function
/// (`P[Bin(n, p) ≤ k] = 1 − I_p(k + 1, n − k)`) and returned at the upper end of the final
/// bracket and rounded up by a relative 1e-12 (covering the float error of the incomplete
/// beta function), so it is never below the exact bound.
///
/// # Errors
/// `n = 0`, `k > n`, or `α` outside `(0, 1)`.
pub fn clopper_pearson_upper(k: u64, n: u64, alpha: f64) -> Result<f64> {
    ensure(
        n >= 1 && k <= n,
        "k",
        k as f64,
        "need 0 <= k <= n and n >= 1",
    )?;
    ensure(
        alpha > 0.0 && alpha < 1.0,
        "alpha",
        alpha,
        "must be in (0, 1)",
    )?;
    if k == n {
        return Ok(1.0);
    }
    let (a, b) = ((k + 1) as f64, (n - k) as f64);
    // cdf(p) = P[Bin(n, p) <= k], decreasing in p.
    let cdf = |p: f64| -> Result<f64> {
        checked_beta_reg(a, b, p)
            .map(|i| 1.0 - i)
            .map_err(|e| Error::Numerical(format!("incomplete beta at p = {p}: {e}")))
    };
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if cdf(mid)? >= alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Round up past the incomplete beta's float error (~1e-15 relative).
    Ok((hi * (1.0 + 1e-12)).min(1.0))
}

/// A lower bound on the ε of any (ε, δ)-DP mechanism whose test produced `counts`, holding
/// with probability `≥ 1 − α` over the runs (each rate's upper bound at level `α/2`). Zero
/// when the test separates the datasets no better than chance allows.
///
/// # Privacy
/// Kairouz, Oh, Viswanath 2015 (Thm 2.1): (ε, δ)-DP implies `FPR + e^ε·FNR ≥ 1 − δ` and
/// `FNR + e^ε·FPR ≥ 1 − δ` for every test, so
/// `ε ≥ max(log((1 − δ − FNR)/FPR), log((1 − δ − FPR)/FNR))`; replacing the rates by
/// Clopper–Pearson upper bounds keeps it a lower bound (Jagielski et al. 2020). It is an
/// empirical *lower* bound on ε, never a guarantee; a claimed ε below it is wrong.
///
/// # Errors
/// Empty run sets, counts above their totals, δ outside `[0, 1)`, α outside `(0, 1)`.
pub fn epsilon_lower_bound(counts: TestCounts, delta: f64, alpha: f64) -> Result<f64> {
    ensure(
        (0.0..1.0).contains(&delta),
        "delta",
        delta,
        "must be in [0, 1)",
    )?;
    let fpr = clopper_pearson_upper(counts.false_positives, counts.negatives, alpha / 2.0)?;
    let fnr = clopper_pearson_upper(counts.false_negatives, counts.positives, alpha / 2.0)?;
    let side = |miss: f64, flag: f64| {
        let num = 1.0 - delta - miss;
        if num <= 0.0 {
            0.0
        } else if flag == 0.0 {
            f64::INFINITY
        } else {
            (num / flag).ln().max(0.0)
        }
    };
    Ok(side(fnr, fpr).max(side(fpr, fnr)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_matches_closed_forms() {
        // k = 0: P[Bin(n, p) = 0] = (1 − p)^n = α  ⇒  p = 1 − α^{1/n}.
        for (n, alpha) in [(10_u64, 0.05_f64), (1000, 0.01), (7, 0.5)] {
            let exact = 1.0 - alpha.powf(1.0 / n as f64);
            let got = clopper_pearson_upper(0, n, alpha).unwrap();
            assert!(
                got >= exact && got - exact < 1e-11,
                "{n} {alpha}: {got} vs {exact}"
            );
        }
        // k = n − 1: P[X ≤ n − 1] = 1 − p^n = α  ⇒  p = (1 − α)^{1/n}.
        let exact = 0.95_f64.powf(1.0 / 20.0);
        let got = clopper_pearson_upper(19, 20, 0.05).unwrap();
        assert!(got >= exact && got - exact < 1e-11, "{got} vs {exact}");
        assert_eq!(clopper_pearson_upper(5, 5, 0.05).unwrap(), 1.0);
        // A mid-range value against SciPy 1.17: scipy.stats.beta.ppf(0.95, 51, 50).
        let got = clopper_pearson_upper(50, 100, 0.05).unwrap();
        assert!((got - 0.586_378_285_369_088_2).abs() < 1e-9, "{got}");
    }

    #[test]
    fn lower_bound_of_a_perfect_and_a_useless_test() {
        let useless = TestCounts {
            negatives: 1000,
            false_positives: 500,
            positives: 1000,
            false_negatives: 500,
        };
        assert_eq!(epsilon_lower_bound(useless, 1e-5, 0.05).unwrap(), 0.0);
        let perfect = TestCounts {
            negatives: 1000,
            false_positives: 0,
            positives: 1000,
            false_negatives: 0,
        };
        // FPR, FNR ≤ 1 − 0.025^{1/1000} each: ε ≥ log((1 − δ − u)/u).
        let u = 1.0 - 0.025_f64.powf(1e-3);
        let want = ((1.0 - 1e-5 - u) / u).ln();
        let got = epsilon_lower_bound(perfect, 1e-5, 0.05).unwrap();
        assert!(
            (got - want).abs() < 1e-9 && got < want + 1e-9,
            "{got} vs {want}"
        );
    }

    #[test]
    fn counts_from_statistics_and_errors() {
        let c = TestCounts::from_statistics(&[0.1, 0.6, 0.2], &[0.7, 0.4, 0.9, 1.0], 0.5);
        assert_eq!(
            c,
            TestCounts {
                negatives: 3,
                false_positives: 1,
                positives: 4,
                false_negatives: 1
            }
        );
        assert!(clopper_pearson_upper(3, 2, 0.05).is_err());
        assert!(clopper_pearson_upper(0, 0, 0.05).is_err());
        assert!(clopper_pearson_upper(1, 2, 1.0).is_err());
        assert!(epsilon_lower_bound(c, 1.0, 0.05).is_err());
    }
}
