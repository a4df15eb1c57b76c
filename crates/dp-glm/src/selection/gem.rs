//! The generalised exponential mechanism (Raskhodnikova & Smith 2016, "Lipschitz extensions
//! for node-private graph statistics and the generalized exponential mechanism", FOCS), as
//! paper 003's Alg. 4 uses it (MATH §9).

use rand::{Rng, RngExt};

use crate::error::{Error, Result, ensure};

/// One candidate: a score to minimise and the score's sensitivity (how much one record can
/// change it; 0 for a data-independent score).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The score (lower is better).
    pub score: f64,
    /// Its sensitivity `Δ ≥ 0`.
    pub sensitivity: f64,
}

/// The normalised scores `s_j = max(0, max_{i ≠ j} [(ℓ_j + tΔ_j) − (ℓ_i + tΔ_i)]/(Δ_i + Δ_j))`
/// with `t = 2·log(K/β)/ε`; a pair of data-independent candidates (`Δ_i + Δ_j = 0`) compares
/// exactly: `s_j = ∞` when `ℓ_j > ℓ_i`.
///
/// # Errors
/// No candidates; a non-finite score or a negative or non-finite sensitivity; ε or β out of
/// range.
pub fn normalised_scores(candidates: &[Candidate], epsilon: f64, beta: f64) -> Result<Vec<f64>> {
    if candidates.is_empty() {
        return Err(Error::EmptyData {
            what: "no candidates",
        });
    }
    ensure(
        epsilon > 0.0 && epsilon.is_finite(),
        "epsilon",
        epsilon,
        "must be finite and > 0",
    )?;
    ensure(beta > 0.0 && beta < 1.0, "beta", beta, "must be in (0, 1)")?;
    for c in candidates {
        ensure(c.score.is_finite(), "score", c.score, "must be finite")?;
        ensure(
            c.sensitivity >= 0.0 && c.sensitivity.is_finite(),
            "sensitivity",
            c.sensitivity,
            "must be finite and >= 0",
        )?;
    }
    let t = 2.0 * (candidates.len() as f64 / beta).ln() / epsilon;
    let adjusted: Vec<f64> = candidates
        .iter()
        .map(|c| c.score + t * c.sensitivity)
        .collect();
    Ok(candidates
        .iter()
        .enumerate()
        .map(|(j, cj)| {
            candidates
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != j)
                .map(|(i, ci)| {
                    let gap = adjusted[j] - adjusted[i];
                    let width = ci.sensitivity + cj.sensitivity;
                    if width > 0.0 {
                        gap / width
                    } else if gap > 0.0 {
                        f64::INFINITY
                    } else {
                        0.0
                    }
                })
                .fold(0.0, f64::max)
        })
        .collect())
}

/// The selection probabilities `p_j ∝ exp(−ε·s_j/2)` (computed in log space).
///
/// # Errors
/// As [`normalised_scores`].
pub fn selection_probabilities(
    candidates: &[Candidate],
    epsilon: f64,
    beta: f64,
) -> Result<Vec<f64>> {
    let s = normalised_scores(candidates, epsilon, beta)?;
    let logits: Vec<f64> = s.iter().map(|s| -0.5 * epsilon * s).collect();
    let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // Some s_j is 0 (the best adjusted score's), so top = 0 and the sum is ≥ 1.
    let w: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
    let total: f64 = w.iter().sum();
    Ok(w.into_iter().map(|w| w / total).collect())
}

/// Selects a candidate with the generalised exponential mechanism at privacy `ε`, for the
/// release `label` (its event's label, counted by `dp_optim::tally`).
///
/// # Privacy
/// Raskhodnikova & Smith 2016 (Thm 4.2 / paper 003, Alg. 4): each `s_j` has sensitivity at
/// most 1 when each score `ℓ_j` has sensitivity `Δ_j`, so sampling `∝ exp(−ε s_j/2)` is
/// ε-DP (pure) under the relation for which the `Δ_j` hold. `β` only trades utility.
///
/// # Errors
/// As [`normalised_scores`].
pub fn select<R: Rng + ?Sized>(
    label: &str,
    candidates: &[Candidate],
    epsilon: f64,
    beta: f64,
    rng: &mut R,
) -> Result<usize> {
    let p = selection_probabilities(candidates, epsilon, beta)?;
    dp_optim::tally::count(label);
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (j, pj) in p.iter().enumerate() {
        acc += pj;
        if u < acc {
            return Ok(j);
        }
    }
    // Rounding left u above the running total: the last candidate with mass.
    p.iter()
        .rposition(|&pj| pj > 0.0)
        .ok_or_else(|| Error::Privacy("no candidate has positive probability".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testdata::rng;

    fn c(score: f64, sensitivity: f64) -> Candidate {
        Candidate { score, sensitivity }
    }

    #[test]
    fn normalised_scores_by_hand() {
        // K = 2, β = 0.5: t = 2·ln 4/ε; ε = 2 ⇒ t = ln 4.
        let s = normalised_scores(&[c(1.0, 0.5), c(0.0, 0.25)], 2.0, 0.5).unwrap();
        let t = 4f64.ln();
        let gap = (1.0 + 0.5 * t) - (0.0 + 0.25 * t);
        assert!((s[0] - gap / 0.75).abs() < 1e-15, "{s:?}");
        assert_eq!(s[1], 0.0);
        // Two data-independent candidates compare exactly.
        let s = normalised_scores(&[c(2.0, 0.0), c(1.0, 0.0)], 1.0, 0.1).unwrap();
        assert_eq!(s, vec![f64::INFINITY, 0.0]);
    }

    #[test]
    fn selection_frequencies_match_the_probabilities() {
        let cands = [c(0.3, 0.1), c(0.35, 0.05), c(0.5, 0.2), c(0.4, 0.0)];
        let p = selection_probabilities(&cands, 1.0, 0.1).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let n = 200_000;
        let mut counts = [0usize; 4];
        let mut r = rng(11);
        for _ in 0..n {
            counts[select("test", &cands, 1.0, 0.1, &mut r).unwrap()] += 1;
        }
        // Pearson chi-square with 3 degrees of freedom: 16.27 is the 0.999 quantile.
        let chi2: f64 = counts
            .iter()
            .zip(&p)
            .map(|(&o, &p)| {
                let e = p * n as f64;
                (o as f64 - e).powi(2) / e
            })
            .sum();
        assert!(chi2 < 16.27, "chi2 = {chi2}, counts {counts:?}, p {p:?}");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(normalised_scores(&[], 1.0, 0.1).is_err());
        assert!(normalised_scores(&[c(f64::NAN, 1.0)], 1.0, 0.1).is_err());
        assert!(normalised_scores(&[c(1.0, -1.0)], 1.0, 0.1).is_err());
        assert!(normalised_scores(&[c(1.0, 1.0)], 0.0, 0.1).is_err());
        assert!(normalised_scores(&[c(1.0, 1.0)], 1.0, 1.0).is_err());
    }
}
