//! Bernoulli(`e^{−1}`) from one uniform word, exactly.
//!
//! The event is `U < e^{−1}` for a uniform real `U ∈ [0, 1)` whose first 64 bits are one word
//! `w`, so `U ∈ [w, w + 1)·2^{−64}`. Every word but `⌊e^{−1}·2^{64}⌋` puts the whole cell on one
//! side of `e^{−1}` and decides; that one word (probability `2^{−64}`) goes to
//! [`below_inverse_e`], which draws more bits of `U` and compares them exactly with partial sums
//! of the series of `e^{−1}`. The law is exactly Bernoulli(`e^{−1}`), in one word where
//! Canonne, Kamath & Steinke's Algorithm 1 ("The discrete Gaussian for differential privacy",
//! NeurIPS 2020) draws `e − 1 ≈ 1.72` uniform integers on average.

use num_bigint::BigInt;
use rand::Rng;

/// `⌊e^{−1}·2^{64}⌋`: `e^{−1}·2^{64} = 6786177901268885274.72996…` (Python's `decimal` at 60
/// digits); the test `constant_is_the_floor` checks it against the series.
const E_INVERSE_Q64: u64 = 6_786_177_901_268_885_274;

/// Bernoulli(`e^{−1}`) (module docs).
#[inline]
pub(super) fn bernoulli_exp_one<R: Rng + ?Sized>(rng: &mut R) -> bool {
    let w = rng.next_u64();
    match w.cmp(&E_INVERSE_Q64) {
        // `w + 1 ≤ ⌊e^{−1}2^{64}⌋`: the cell lies below `e^{−1}`.
        std::cmp::Ordering::Less => true,
        // `w ≥ ⌊e^{−1}2^{64}⌋ + 1 > e^{−1}2^{64}`: above.
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => below_inverse_e(rng, w),
    }
}

/// Whether `U < e^{−1}` exactly, for `U = (w + V)·2^{−64}` with `V`'s bits drawn from `rng` 64
/// at a time as needed.
///
/// The partial sums `S_n = Σ_{j ≤ n} (−1)^j/j! = sum/n!` alternate around `e^{−1}` (the terms
/// `1/j!` decrease): `S_1 ≤ S_3 ≤ … ≤ e^{−1} ≤ … ≤ S_2 ≤ S_0`. With `k` words drawn,
/// `U ∈ [u, u + 1)·2^{−64k}`: `(u + 1)·2^{−64k} ≤` the lower sum decides "below",
/// `u·2^{−64k} ≥` the upper one "not below"; otherwise one more term while the bracket is wider
/// than `2^{−10}` of the cell, else one more word (`e^{−1}` is irrational, so this ends with
/// probability 1). A cell whose distance from `e^{−1}` exceeds that is decided without a draw.
#[cold]
#[inline(never)]
fn below_inverse_e<R: Rng + ?Sized>(rng: &mut R, w: u64) -> bool {
    let mut u = BigInt::from(w);
    let mut bits = 64usize;
    // `S_0 = 1/0!` and `S_1 = 0/1!`, as (sum, n!).
    let mut older = (BigInt::from(1u8), BigInt::from(1u8));
    let mut newer = (BigInt::from(0u8), BigInt::from(1u8));
    let mut n = 1u32;
    loop {
        let (lower, upper) = if n % 2 == 1 {
            (&newer, &older)
        } else {
            (&older, &newer)
        };
        if (&u + 1u8) * &lower.1 <= &lower.0 << bits {
            return true;
        }
        if &u * &upper.1 >= &upper.0 << bits {
            return false;
        }
        // Bracket width `1/n!` against `2^{−10}` of the cell's `2^{−64k}`.
        if newer.1 < BigInt::from(1u8) << (bits + 10) {
            n += 1;
            let sign = if n.is_multiple_of(2) { 1i8 } else { -1i8 };
            let next = (&newer.0 * n + sign, &newer.1 * n);
            older = std::mem::replace(&mut newer, next);
        } else {
            u = (u << 64) + rng.next_u64();
            bits += 64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded_rng;

    /// `⌊e^{−1}·2^{64}⌋` from two consecutive partial sums 30 terms on, which agree (their
    /// gap is below `1/31! < 2^{−112}`).
    #[test]
    fn constant_is_the_floor() {
        let mut sum = BigInt::from(1u8);
        let mut fact = BigInt::from(1u8);
        let mut floors = Vec::new();
        for n in 1..=31u32 {
            sum = sum * n + if n.is_multiple_of(2) { 1i8 } else { -1i8 };
            fact *= n;
            if n >= 30 {
                floors.push((&sum << 64usize) / &fact);
            }
        }
        assert_eq!(floors[0], floors[1]);
        assert_eq!(floors[0], BigInt::from(E_INVERSE_Q64));
    }

    /// The boundary word's law: "below" with the probability of the fractional part of
    /// `e^{−1}·2^{64}`, `0.72996…` (binomial z-test, |z| ≤ 5.5); there the second word and later
    /// terms decide. Neighbouring words decide without drawing.
    #[test]
    fn boundary_word_is_decided_exactly() {
        let mut rng = seeded_rng(41);
        let n = 20_000;
        let hits = (0..n)
            .filter(|_| below_inverse_e(&mut rng, E_INVERSE_Q64))
            .count();
        let frac = 0.729_961_842_895;
        let sd = (frac * (1.0 - frac) / n as f64).sqrt();
        crate::testutil::assert_z(hits as f64 / n as f64, frac, sd, "boundary word");
        let mut untouched = seeded_rng(42);
        let before = untouched.clone();
        assert!(below_inverse_e(&mut untouched, E_INVERSE_Q64 - 1));
        assert!(!below_inverse_e(&mut untouched, E_INVERSE_Q64 + 1));
        assert_eq!(untouched, before);
    }

    /// Bernoulli(`e^{−1}`) frequencies (binomial z-test, |z| ≤ 5.5).
    #[test]
    fn frequency_is_inverse_e() {
        let mut rng = seeded_rng(43);
        let n = 200_000;
        let hits = (0..n).filter(|_| bernoulli_exp_one(&mut rng)).count();
        let p = (-1f64).exp();
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        crate::testutil::assert_z(hits as f64 / n as f64, p, sd, "bernoulli_exp_one");
    }
}
