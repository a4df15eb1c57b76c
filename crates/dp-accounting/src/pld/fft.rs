//! Composition of grid PLDs by FFT (Koskela, Jälkö, Prediger, Honkela 2021; Gopi, Lee,
//! Wutschitz 2021), with a pessimistic treatment of everything left outside the window.
//!
//! The composed loss `S = Σ ω` is computed on a window `[L, L + N)` of the grid by one
//! zero-padded FFT per distinct component, a power in the frequency domain, and one inverse
//! FFT. The window comes from Chernoff bounds `P[S ≥ U] ≤ e^{−tU} Π M_m(t)^{T_m}`. The
//! circular convolution folds the mass outside the window back into it; folded mass only
//! ever *adds* to in-window atoms, and the upper tail's bound is added to the atom at `+∞`,
//! so the result still dominates the exact composition. (The floating-point error of the
//! FFT, of order 1e-16 per atom, is not bounded rigorously.)

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

use super::pmf::LatticePmf;
use crate::error::{Error, Result};

/// `ln Σ p_i e^{t ω_i}` by a running product (no `exp` per atom), starting from the atom
/// where `e^{tω}` is largest among those with positive mass.
fn log_mgf(pmf: &LatticePmf, t: f64) -> f64 {
    let m = &pmf.masses;
    let (Some(first), Some(last)) = (
        m.iter().position(|&p| p > 0.0),
        m.iter().rposition(|&p| p > 0.0),
    ) else {
        return f64::NEG_INFINITY;
    };
    let step = (-t.abs() * pmf.h).exp();
    let mut v = 1.0;
    let mut s = 0.0;
    let ref_index = if t >= 0.0 { last } else { first };
    for k in 0..=(last - first) {
        let i = if t >= 0.0 { last - k } else { first + k };
        s += m[i] * v;
        v *= step;
        if v == 0.0 {
            break;
        }
    }
    t * (pmf.offset + ref_index as i64) as f64 * pmf.h + s.ln()
}

/// The smallest size ≥ `n` of the form `2^a·3^b` (fast for rustfft).
fn fast_size(n: usize) -> usize {
    let mut best = n.next_power_of_two();
    let mut p3 = 1usize;
    while p3 <= best {
        let mut m = p3;
        while m < n {
            m *= 2;
        }
        best = best.min(m);
        p3 *= 3;
    }
    best
}

/// Composes `parts` (each a PLD and how many times it is applied); `tail` bounds the mass
/// outside the computed window (it is added to the atom at `+∞`).
pub(crate) fn compose(parts: &[(&LatticePmf, u64)], tail: f64) -> Result<LatticePmf> {
    let Some((first, _)) = parts.first() else {
        return Ok(LatticePmf {
            h: 1.0,
            offset: 0,
            masses: vec![1.0],
            inf_mass: 0.0,
        });
    };
    let h = first.h;
    if parts.len() == 1 && parts[0].1 == 1 {
        return Ok(parts[0].0.clone());
    }
    // Mass kept finite: Π (1 − m∞)^T.
    let mut ln_keep = 0.0;
    for (p, t) in parts {
        ln_keep += *t as f64 * (-p.inf_mass).ln_1p();
    }
    // A part with no finite mass leaves no finite mass in the composition.
    if parts
        .iter()
        .any(|(p, c)| *c > 0 && p.masses.iter().all(|&m| m <= 0.0))
    {
        return Ok(LatticePmf {
            h,
            offset: 0,
            masses: vec![0.0],
            inf_mass: 1.0,
        });
    }
    // Trivial window, then Chernoff-tightened.
    let (mut lo, mut hi) = (0.0, 0.0);
    for (p, t) in parts {
        lo += *t as f64 * p.offset as f64 * h;
        hi += *t as f64 * (p.offset + p.masses.len() as i64 - 1) as f64 * h;
    }
    let log_half_tail = (0.5 * tail).ln();
    let mut upper = hi;
    let mut lower = lo;
    let mut t = 1e-3;
    while t < 1e5 {
        let (mut up, mut down) = (0.0, 0.0);
        for (p, c) in parts {
            up += *c as f64 * log_mgf(p, t);
            down += *c as f64 * log_mgf(p, -t);
        }
        upper = upper.min((up - log_half_tail) / t);
        lower = lower.max((log_half_tail - down) / t);
        t *= 1.5;
    }
    if !(lower.is_finite() && lower >= lo && lower <= hi) {
        lower = lo;
    }
    if !(upper.is_finite() && upper <= hi && upper >= lower) {
        upper = hi;
    }
    let lo_idx = (lower / h).floor() as i64;
    let hi_idx = (upper / h).ceil() as i64;
    // The upper tail beyond the window goes to +∞: evaluate its Chernoff bound at the
    // window's actual top.
    let top = hi_idx as f64 * h;
    let mut upper_tail: f64 = 0.0;
    if top < hi {
        let mut best = f64::INFINITY;
        let mut t = 1e-3;
        while t < 1e5 {
            let up: f64 = parts.iter().map(|(p, c)| *c as f64 * log_mgf(p, t)).sum();
            best = best.min(up - t * top);
            t *= 1.5;
        }
        upper_tail = best.exp();
    }
    let width = (hi_idx - lo_idx + 1).max(1) as usize;
    let longest = parts.iter().map(|(p, _)| p.masses.len()).max().unwrap_or(1);
    let n = fast_size(width.max(longest));
    if n > 1 << 26 {
        return Err(Error::OutOfRange(format!(
            "the composed privacy-loss distribution needs {n} grid points; use a coarser \
             discretisation"
        )));
    }
    let mut planner = FftPlanner::<f64>::new();
    let forward = planner.plan_fft_forward(n);
    let inverse = planner.plan_fft_inverse(n);
    let mut acc = vec![Complex::new(1.0, 0.0); n];
    let mut base: i64 = 0;
    let mut buf = vec![Complex::new(0.0, 0.0); n];
    for (p, c) in parts {
        buf.iter_mut().for_each(|z| *z = Complex::new(0.0, 0.0));
        for (j, &m) in p.masses.iter().enumerate() {
            buf[j % n].re += m;
        }
        forward.process(&mut buf);
        let e = u32::try_from(*c)
            .map_err(|_| Error::OutOfRange(format!("composition count {c} exceeds 2^32 − 1")))?;
        for (a, z) in acc.iter_mut().zip(&buf) {
            *a *= z.powu(e);
        }
        base += *c as i64 * p.offset;
    }
    inverse.process(&mut acc);
    let scale = 1.0 / n as f64;
    let masses: Vec<f64> = (0..n)
        .map(|k| {
            let s = lo_idx + k as i64;
            let pos = (s - base).rem_euclid(n as i64) as usize;
            (acc[pos].re * scale).max(0.0)
        })
        .collect();
    let inf_mass = (-ln_keep.exp_m1() + upper_tail).min(1.0);
    Ok(LatticePmf {
        h,
        offset: lo_idx,
        masses,
        inf_mass,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(fast_size(1000), 1024);
        assert_eq!(fast_size(1025), 1152);
        assert_eq!(fast_size(1), 1);
    }

    #[test]
    fn composing_a_coin_gives_the_binomial() {
        let coin = LatticePmf {
            h: 1.0,
            offset: -1,
            masses: vec![0.5, 0.0, 0.5],
            inf_mass: 0.0,
        };
        let c = compose(&[(&coin, 10)], 1e-30).unwrap();
        // S = 2K − 10, K ~ Bin(10, 1/2): P[S = 10] = 2^-10.
        assert!((c.delta(9.0) - (2f64.powi(-10) * -(-1f64).exp_m1())).abs() < 1e-12);
        let total = c.finite_mass() + c.inf_mass;
        assert!((total - 1.0).abs() < 1e-12);
    }
}
