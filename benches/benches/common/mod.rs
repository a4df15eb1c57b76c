//! The synthetic data and the two-gemv reference shared by the `glm` and `dpsgd` benches.

use dp_glm::Dataset;
use dp_optim::seeded_rng;
use ndarray::{Array1, Array2};
use rand::RngExt;

/// `n × d` entries uniform in `[−0.5, 0.5)` (seed 1), labels ±1 by a fixed pattern.
pub fn data_of(n: usize, d: usize) -> Dataset {
    let mut rng = seeded_rng(1);
    let x = Array2::from_shape_fn((n, d), |_| rng.random::<f64>() - 0.5);
    let y = Array1::from_shape_fn(n, |i| if (i * 7919) % 3 == 0 { 1.0 } else { -1.0 });
    Dataset::new(x, y).expect("valid data")
}

/// One pass of the two gemv a full gradient is made of: `z = Xθ`, then `Xᵀc`.
pub fn two_gemv(data: &Dataset, theta: &Array1<f64>, coeffs: &Array1<f64>) -> f64 {
    let z = data.x().dot(theta);
    data.x().t().dot(coeffs).sum() + z.sum()
}
