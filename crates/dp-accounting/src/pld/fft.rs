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

use std::sync::{Arc, Mutex, OnceLock};

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use super::pmf::LatticePmf;
use crate::error::{Error, Result};

/// Number of Chernoff parameters `t` tried for each side of a window.
const NT: usize = 32;

/// The Chernoff parameters: `t_k = 1e-3·2^k`.
fn chernoff_ts() -> [f64; NT] {
    std::array::from_fn(|k| 1e-3 * 2f64.powi(k as i32))
}

/// `ln Σ p_i e^{s·t_k ω_i}` for every `t_k` of `ts` (ascending, all > 0) and the sign `s`
/// (`up` for `+1`), in one pass over the atoms: a running product per `t` (no `exp` per atom),
/// starting from the atom where `e^{s·tω}` is largest among those with positive mass. The products
/// are independent, so the pass runs at the machine's throughput rather than at the latency of
/// one chain of multiply-adds.
///
/// The result is an upper bound up to rounding: each product of `j` factors carries a relative
/// error of at most `(j + 1)·u` (and the rounded step another `j·u`), so the sum is inflated by
/// `(2n + 4)·u` relative, which keeps Chernoff bounds built on it on the safe side.
fn log_mgfs<const N: usize>(pmf: &LatticePmf, ts: &[f64; N], up: bool) -> [f64; N] {
    let m = &pmf.masses;
    let (Some(first), Some(last)) = (
        m.iter().position(|&p| p > 0.0),
        m.iter().rposition(|&p| p > 0.0),
    ) else {
        return [f64::NEG_INFINITY; N];
    };
    let step: [f64; N] = std::array::from_fn(|k| (-ts[k] * pmf.h).exp());
    let mut v = [1.0f64; N];
    let mut s = [0.0f64; N];
    let span = &m[first..=last];
    let mut accumulate = |p: f64| {
        for k in 0..N {
            s[k] += p * v[k];
            v[k] *= step[k];
        }
        // `ts` is ascending, so `v[0]` is the largest: once it is 0, all are.
        v[0] == 0.0
    };
    if up {
        for &p in span.iter().rev() {
            if accumulate(p) {
                break;
            }
        }
    } else {
        for &p in span {
            if accumulate(p) {
                break;
            }
        }
    }
    let (sign, ref_index) = if up { (1.0, last) } else { (-1.0, first) };
    let ref_value = (pmf.offset + ref_index as i64) as f64 * pmf.h;
    let inflate = ((2 * span.len() + 4) as f64 * f64::EPSILON).ln_1p();
    std::array::from_fn(|k| sign * ts[k] * ref_value + s[k].ln() + inflate)
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

/// The forward FFT plan of size `n`, from a planner shared by every call (plans and their
/// twiddle tables are reused, which matters in calibration loops). The inverse transform is
/// done with the same plan by conjugation, `ifft(x) = conj(fft(conj(x)))` (unnormalised), which
/// halves the twiddle tables computed per size.
fn plan(n: usize) -> Arc<dyn Fft<f64>> {
    static PLANNER: OnceLock<Mutex<FftPlanner<f64>>> = OnceLock::new();
    let planner = PLANNER.get_or_init(|| Mutex::new(FftPlanner::new()));
    let mut guard = match planner.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard.plan_fft_forward(n)
}

/// The Chernoff window of one direction: `[lo_idx, hi_idx]` and the bound on the mass above
/// `hi_idx`.
pub(crate) struct Window {
    /// Lowest grid index kept.
    pub(crate) lo_idx: i64,
    /// Highest grid index kept.
    pub(crate) hi_idx: i64,
    /// Chernoff bound on the mass above `hi_idx`.
    pub(crate) upper_tail: f64,
}

/// Atoms per part when choosing the Chernoff parameter (block sums of the grid's masses).
const CHOICE_ATOMS: usize = 2048;

/// The distribution with its masses summed over blocks of consecutive atoms, at most
/// [`CHOICE_ATOMS`] atoms: an approximation used only to *choose* `t`, never for a bound.
fn blocks(p: &LatticePmf) -> LatticePmf {
    let b = p.masses.len().div_ceil(CHOICE_ATOMS).max(1);
    LatticePmf {
        h: p.h * b as f64,
        offset: p.offset.div_euclid(b as i64),
        masses: p.masses.chunks(b).map(|c| c.iter().sum()).collect(),
        inf_mass: 0.0,
        error_l2: 0.0,
    }
}

/// `ln E[e^{±t S}]` of the composition `S` of `parts`, for every `t` of `ts`.
fn composed_log_mgfs<'a, const N: usize>(
    parts: impl Iterator<Item = (&'a LatticePmf, u64)>,
    ts: &[f64; N],
    up: bool,
) -> [f64; N] {
    let mut out = [0.0; N];
    for (p, c) in parts {
        for (o, v) in out.iter_mut().zip(log_mgfs(p, ts, up)) {
            *o += c as f64 * v;
        }
    }
    out
}

/// The parameter of `ts` next to index `k`, and `k` itself, and the one after.
fn around<const N: usize>(ts: &[f64; N], k: usize) -> [f64; 3] {
    [ts[k.saturating_sub(1)], ts[k], ts[(k + 1).min(N - 1)]]
}

/// Chooses the window of the composition of `parts` from Chernoff bounds
/// `P[S ≥ U] ≤ e^{−tU}·E[e^{tS}]` (and the mirror one below).
///
/// The parameter `t` is chosen on block sums of the masses over the grid `1e-3·2^k`; the
/// bounds themselves are then evaluated exactly at the chosen `t` and its two neighbours on
/// the full distributions (any `t` gives a valid bound; the choice only affects the width).
pub(crate) fn window(parts: &[(&LatticePmf, u64)], h: f64, tail: f64) -> Window {
    let (mut lo, mut hi) = (0.0, 0.0);
    for (p, t) in parts {
        lo += *t as f64 * p.offset as f64 * h;
        hi += *t as f64 * (p.offset as f64 + p.masses.len() as f64 - 1.0) * h;
    }
    let log_half_tail = (0.5 * tail).ln();
    let grid = chernoff_ts();
    let coarse: Vec<(LatticePmf, u64)> = parts.iter().map(|(p, c)| (blocks(p), *c)).collect();
    let coarse_iter = || coarse.iter().map(|(p, c)| (p, *c));
    let cu = composed_log_mgfs(coarse_iter(), &grid, true);
    let cd = composed_log_mgfs(coarse_iter(), &grid, false);
    let best = |score: &dyn Fn(usize) -> f64| {
        (0..NT)
            .filter(|&k| score(k).is_finite())
            .min_by(|&a, &b| score(a).total_cmp(&score(b)))
            .unwrap_or(0)
    };
    let tu = around(&grid, best(&|k| (cu[k] - log_half_tail) / grid[k]));
    let td = around(&grid, best(&|k| (cd[k] - log_half_tail) / grid[k]));
    let ups = composed_log_mgfs(parts.iter().copied(), &tu, true);
    let downs = composed_log_mgfs(parts.iter().copied(), &td, false);
    let mut upper = hi;
    let mut lower = lo;
    for k in 0..3 {
        upper = upper.min((ups[k] - log_half_tail) / tu[k]);
        lower = lower.max((log_half_tail - downs[k]) / td[k]);
    }
    if !(lower.is_finite() && lower >= lo && lower <= hi) {
        lower = lo;
    }
    if !(upper.is_finite() && upper <= hi && upper >= lower) {
        upper = hi;
    }
    let lo_idx = (lower / h).floor() as i64;
    let hi_idx = (upper / h).ceil() as i64;
    // The mass above the window's actual top goes to +∞: its Chernoff bound there.
    let top = hi_idx as f64 * h;
    let upper_tail = if top < hi {
        tu.iter()
            .zip(&ups)
            .map(|(t, up)| up - t * top)
            .fold(f64::INFINITY, f64::min)
            .exp()
    } else {
        0.0
    };
    Window {
        lo_idx,
        hi_idx,
        upper_tail,
    }
}

/// Composes the parts of every direction (at most two, each a list of a PLD and how many
/// times it is applied). Two directions share one complex FFT: the first is placed in the
/// real part, the second in the imaginary part, and their spectra are separated by
/// conjugate symmetry. `tail` bounds the mass outside each window (added to `+∞`); a window
/// wider than `max_points` is refused before anything is allocated for it.
pub(crate) fn compose(
    dirs: &[Vec<(&LatticePmf, u64)>],
    tail: f64,
    max_points: usize,
) -> Result<Vec<LatticePmf>> {
    if dirs.is_empty() || dirs.len() > 2 {
        return Err(Error::Numerical(format!(
            "compose takes one or two directions, not {}",
            dirs.len()
        )));
    }
    let count_exp = |c: u64| {
        u32::try_from(c)
            .map_err(|_| Error::OutOfRange(format!("composition count {c} exceeds 2^32 − 1")))
    };
    // Counts are checked before any window, plan or buffer is made for them.
    for (_, c) in dirs.iter().flatten() {
        count_exp(*c)?;
    }
    let mut out: Vec<Option<LatticePmf>> = vec![None; dirs.len()];
    let mut todo = Vec::new();
    for (d, parts) in dirs.iter().enumerate() {
        match parts.as_slice() {
            [] => {
                out[d] = Some(LatticePmf {
                    h: 1.0,
                    offset: 0,
                    masses: vec![1.0],
                    inf_mass: 0.0,
                    error_l2: 0.0,
                })
            }
            [(p, 1)] => out[d] = Some((*p).clone()),
            _ if parts
                .iter()
                .any(|(p, c)| *c > 0 && p.masses.iter().all(|&m| m <= 0.0)) =>
            {
                // No finite mass in one part leaves none in the composition.
                out[d] = Some(LatticePmf {
                    h: parts[0].0.h,
                    offset: 0,
                    masses: vec![0.0],
                    inf_mass: 1.0,
                    error_l2: 0.0,
                })
            }
            _ => todo.push(d),
        }
    }
    if todo.is_empty() {
        return Ok(out.into_iter().flatten().collect());
    }
    let h = dirs[todo[0]][0].0.h;
    let windows: Vec<Window> = todo.iter().map(|&d| window(&dirs[d], h, tail)).collect();
    let width = windows
        .iter()
        .map(|w| {
            let points = w.hi_idx.saturating_sub(w.lo_idx).saturating_add(1);
            usize::try_from(points.max(1)).unwrap_or(usize::MAX)
        })
        .max()
        .unwrap_or(1);
    let longest = todo
        .iter()
        .flat_map(|&d| dirs[d].iter().map(|(p, _)| p.masses.len()))
        .max()
        .unwrap_or(1);
    let n = fast_size(width.max(longest));
    if width.max(longest) > max_points {
        return Err(Error::OutOfRange(format!(
            "the composed privacy-loss distribution needs {n} grid points, more than the \
             {max_points} allowed (max_grid); use a larger max_grid or another accountant"
        )));
    }
    let forward = plan(n);
    let mut scratch = vec![Complex::new(0.0, 0.0); forward.get_inplace_scratch_len()];
    let zero = Complex::new(0.0, 0.0);
    // Spectra accumulators per direction, and the index offsets of the composed sums.
    let mut acc = vec![vec![Complex::new(1.0, 0.0); n]; todo.len()];
    let mut base = vec![0i64; todo.len()];
    let mut buf = vec![zero; n];
    let max_parts = todo.iter().map(|&d| dirs[d].len()).max().unwrap_or(0);
    for k in 0..max_parts {
        buf.iter_mut().for_each(|z| *z = zero);
        for (slot, &d) in todo.iter().enumerate() {
            if let Some((p, _)) = dirs[d].get(k) {
                // `n` is at least the longest part, so the masses fit without wrapping.
                for (z, &m) in buf.iter_mut().zip(&p.masses) {
                    if slot == 0 {
                        z.re += m;
                    } else {
                        z.im += m;
                    }
                }
            }
        }
        forward.process_with_scratch(&mut buf, &mut scratch);
        for (slot, &d) in todo.iter().enumerate() {
            let Some((p, c)) = dirs[d].get(k) else {
                continue;
            };
            let e = count_exp(*c)?;
            base[slot] = i64::try_from(*c)
                .ok()
                .and_then(|c| c.checked_mul(p.offset))
                .and_then(|x| x.checked_add(base[slot]))
                .ok_or_else(|| {
                    Error::OutOfRange(format!("composition of {c} steps leaves the grid's range"))
                })?;
            // |z|^e underflows to 0 below this squared modulus: skip the power there.
            let negligible = (-1500.0 / f64::from(e)).exp();
            for (i, a) in acc[slot].iter_mut().enumerate() {
                let z = if todo.len() == 1 {
                    buf[i]
                } else {
                    // Separate the two real sequences' spectra.
                    let zc = buf[(n - i) % n].conj();
                    if slot == 0 {
                        (buf[i] + zc) * 0.5
                    } else {
                        (buf[i] - zc) * Complex::new(0.0, -0.5)
                    }
                };
                if z.norm_sqr() < negligible {
                    *a = zero;
                } else {
                    *a *= z.powu(e);
                }
            }
        }
    }
    // One inverse FFT: the first result in the real part, the second in the imaginary part.
    let mut w: Vec<Complex<f64>> = if todo.len() == 1 {
        acc.pop().unwrap_or_default()
    } else {
        acc[0]
            .iter()
            .zip(&acc[1])
            .map(|(a, b)| a + Complex::new(0.0, 1.0) * b)
            .collect()
    };
    w.iter_mut().for_each(|z| *z = z.conj());
    forward.process_with_scratch(&mut w, &mut scratch);
    w.iter_mut().for_each(|z| *z = z.conj());
    let scale = 1.0 / n as f64;
    for (slot, &d) in todo.iter().enumerate() {
        let win = &windows[slot];
        // Output k (grid index lo_idx + k) sits at position (lo_idx + k − base) mod n.
        let start = (win.lo_idx - base[slot]).rem_euclid(n as i64) as usize;
        let raw: Vec<f64> = w[start..]
            .iter()
            .chain(&w[..start])
            .map(|z| scale * if slot == 0 { z.re } else { z.im })
            .collect();
        if let Some(bad) = raw.iter().find(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "the FFT composition produced a non-finite mass ({bad})"
            )));
        }
        // Rounding error of the masses, as an L2 norm E over the output: any K atoms then
        // err by at most √K·E in total (Cauchy–Schwarz), which the queries add to δ. E is the
        // larger of (a) the textbook estimate for one transform, 2·log₂n·u·‖y‖₂, and (b) three
        // times the L2 norm of the negative masses — rounding made visible where the true mass
        // is ~0, which includes what the powers z^T add — scaled up to all n entries. An
        // estimate, not a proof: the FFT's error is not bounded rigorously here.
        let norm = raw.iter().map(|v| v * v).sum::<f64>().sqrt();
        let (neg_sq, neg_count) = raw
            .iter()
            .filter(|v| **v < 0.0)
            .fold((0.0, 0usize), |(s, k), v| (s + v * v, k + 1));
        let visible = if neg_count > 0 {
            3.0 * (neg_sq * n as f64 / neg_count as f64).sqrt()
        } else {
            0.0
        };
        let textbook = 2.0 * (n as f64).log2() * f64::EPSILON * norm;
        let error_l2 = visible.max(textbook);
        let masses: Vec<f64> = raw.into_iter().map(|v| v.max(0.0)).collect();
        let ln_keep: f64 = dirs[d]
            .iter()
            .map(|(p, c)| *c as f64 * (-p.inf_mass).ln_1p())
            .sum();
        out[d] = Some(LatticePmf {
            h,
            offset: win.lo_idx,
            masses,
            inf_mass: (-ln_keep.exp_m1() + win.upper_tail).min(1.0),
            error_l2,
        });
    }
    Ok(out.into_iter().flatten().collect())
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
            error_l2: 0.0,
        };
        let c = compose(&[vec![(&coin, 10)]], 1e-30, 1024)
            .unwrap()
            .remove(0);
        // S = 2K − 10, K ~ Bin(10, 1/2): P[S = 10] = 2^-10.
        assert!((c.delta(9.0) - (2f64.powi(-10) * -(-1f64).exp_m1())).abs() < 1e-12);
        let total = c.finite_mass() + c.inf_mass;
        assert!((total - 1.0).abs() < 1e-12);
    }
}
