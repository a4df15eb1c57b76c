//! ε of the headline DP-SGD case (q = 0.004, σ = 1, T = 10⁴, δ = 1e-5) on several PLD grids:
//! the discretisation error of the upper bound and of the optimistic estimate.
//!
//! `cargo run --release -p dp-accounting --example pld_grid`

use dp_accounting::{Accountant, Mechanism, Neighbouring, PldAccountant, PldConfig};

fn main() -> Result<(), dp_accounting::Error> {
    let step = Mechanism::subsampled_gaussian(1.0, 0.004)?;
    for h in [1e-3, 1e-4, 2e-5] {
        let config = PldConfig {
            discretisation: h,
            ..PldConfig::default()
        };
        let mut acc = PldAccountant::new(config, Neighbouring::AddRemove);
        acc.compose(&step, 10_000)?;
        let upper = acc.epsilon(1e-5)?;
        let lower = acc.epsilon_optimistic(1e-5)?.unwrap_or(f64::NAN);
        println!("h = {h:e}: upper {upper:.7}, optimistic {lower:.7}");
    }
    Ok(())
}
