//! ε of DP-SGD (q = 0.004, σ = 1, T = 10⁴, δ = 1e-5) by every accountant that supports it.
//!
//! `cargo run --release -p dp-accounting --example dpsgd`

use std::time::Instant;

use dp_accounting::{AccountantKind, Mechanism, Neighbouring};

fn main() -> Result<(), dp_accounting::Error> {
    let step = Mechanism::subsampled_gaussian(1.0, 0.004)?;
    for kind in [AccountantKind::Pld, AccountantKind::Rdp] {
        let t0 = Instant::now();
        let mut acc = kind.build(Neighbouring::AddRemove);
        acc.compose(&step, 10_000)?;
        let eps = acc.epsilon(1e-5)?;
        let secs = t0.elapsed().as_secs_f64();
        let lower = acc.epsilon_optimistic(1e-5)?;
        println!("{kind}: epsilon = {eps:.6} (optimistic {lower:?}) in {secs:.4} s");
    }
    Ok(())
}
