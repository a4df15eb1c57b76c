//! Repeats the PLD headline computation for profiling:
//! `cargo run --release -p dp-accounting --example pld_profile`.

use dp_accounting::{Accountant, Mechanism, Neighbouring, PldAccountant, PldConfig};

fn main() -> Result<(), dp_accounting::Error> {
    let step = Mechanism::subsampled_gaussian(1.0, 0.004)?;
    let t0 = std::time::Instant::now();
    let mut eps = 0.0;
    for _ in 0..10 {
        let mut acc = PldAccountant::new(PldConfig::default(), Neighbouring::AddRemove);
        acc.compose(&step, 10_000)?;
        eps = acc.epsilon(1e-5)?;
    }
    println!(
        "epsilon {eps}: {:.4} s per run",
        t0.elapsed().as_secs_f64() / 10.0
    );
    Ok(())
}
