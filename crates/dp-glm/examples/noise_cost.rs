//! The cost of the grid-safe noise (dp_optim's noise docs) against the old floating-point
//! sampler, per coordinate and per fit, on synthetic logistic data `n = 45,000`, `d = 104`.
//!
//! * Per coordinate: old `v + std·Z` (Ziggurat `Z`, `f64`) against the grid release
//!   `γ·(round(v/γ) + K)` with `K` an exact discrete Gaussian, each with the seeded
//!   Xoshiro256++ stream and with the CSPRNG.
//! * Per fit: DP-SGD (defaults: batch 256, 5 epochs) and AMP (defaults), which now draw all
//!   their Gaussian noise on the grid, timed with the CSPRNG; the old sampler's fit time is
//!   estimated as the measured time minus (draws per fit) × (new − old cost per coordinate).
//!
//! Run: `cargo run --release -p dp-glm --example noise_cost`. Timings only; nothing is
//! asserted. Measured once on the 2-core development machine (shared with other jobs):
//! 2.8 ns → 278 ns per coordinate (seeded), 5.2 ns → 344 ns (CSPRNG); DP-SGD (879 steps ×
//! 104 = 91,416 draws) 1.66 s against an estimated 1.63 s with the old sampler (+2%); AMP
//! 0.228 s, unchanged (104 draws).

use std::time::Instant;

use dp_glm::{Amp, Dataset, DpSgd, LinearModel, Loss};
use dp_optim::{Noise, secure_rng, seeded_rng};
use ndarray::{Array1, Array2};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, StandardNormal};

const N: usize = 45_000;
const D: usize = 104;
const DRAWS: usize = 2_000_000;

fn data() -> Dataset {
    let mut rng = seeded_rng(45);
    let mut nrm = || -> f64 { StandardNormal.sample(&mut rng) };
    let w = Array1::from_shape_fn(D, |_| nrm() / (D as f64).sqrt());
    let mut x = Array2::from_shape_fn((N, D), |_| nrm());
    for mut row in x.rows_mut() {
        let norm = row.dot(&row).sqrt();
        row /= norm.max(1.0);
    }
    let mut rng = seeded_rng(46);
    let y = x.dot(&w).mapv(|m| {
        let p = 1.0 / (1.0 + (-4.0 * m).exp());
        if rng.random::<f64>() < p { 1.0 } else { -1.0 }
    });
    Dataset::new(x, y).expect("finite data")
}

/// Nanoseconds per coordinate of the old and the new sampler with generator `rng`.
fn per_coordinate<R: Rng>(rng: &mut R) -> (f64, f64) {
    let std = 1.1;
    let mut v = Array1::from_shape_fn(DRAWS, |i| (i as f64).sin());
    let t = Instant::now();
    v.map_inplace(|x| {
        let z: f64 = StandardNormal.sample(rng);
        *x += std * z;
    });
    let old = t.elapsed().as_secs_f64() * 1e9 / DRAWS as f64;
    let grid = Noise::Gaussian { std }.on_grid(None).expect("valid std");
    let t = Instant::now();
    grid.add_to("example", rng, v.view_mut())
        .expect("finite values");
    let new = t.elapsed().as_secs_f64() * 1e9 / DRAWS as f64;
    std::hint::black_box(v);
    (old, new)
}

fn timed(name: &str, fit: impl FnOnce() -> LinearModel) -> (f64, LinearModel) {
    let t = Instant::now();
    let m = fit();
    let s = t.elapsed().as_secs_f64();
    println!("{name}: {s:.3} s (epsilon = {:.6})", m.privacy().epsilon);
    (s, m)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (old_seeded, new_seeded) = per_coordinate(&mut seeded_rng(1));
    let (old_secure, new_secure) = per_coordinate(&mut secure_rng()?);
    println!("per coordinate, seeded Xoshiro256++: old {old_seeded:.1} ns, new {new_seeded:.1} ns");
    println!("per coordinate, CSPRNG (ChaCha12):  old {old_secure:.1} ns, new {new_secure:.1} ns");
    let extra = (new_secure - old_secure) * 1e-9;

    let data = data();
    let (t_sgd, m) = timed("DP-SGD fit (grid noise, CSPRNG)", || {
        DpSgd::new(Loss::Logistic)
            .fit(&data, &mut secure_rng().expect("entropy"))
            .expect("fit")
    });
    let steps = m
        .privacy()
        .noise
        .iter()
        .find(|(k, _)| k == "steps")
        .map_or(0.0, |(_, v)| *v);
    let draws = steps * D as f64;
    println!(
        "  {steps} steps x {D} = {draws} grid draws; estimated old fit {:.3} s (ratio {:.2})",
        t_sgd - draws * extra,
        t_sgd / (t_sgd - draws * extra)
    );
    let (t_amp, _) = timed("AMP fit (grid output noise, CSPRNG)", || {
        Amp::new(Loss::Logistic)
            .fit(&data, &mut secure_rng().expect("entropy"))
            .expect("fit")
    });
    println!(
        "  {D} grid draws; estimated old fit {:.3} s",
        t_amp - D as f64 * extra
    );
    Ok(())
}
