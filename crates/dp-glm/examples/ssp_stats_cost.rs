//! The cost of AdaSSP's exact sufficient statistics ([`dp_glm::sufficient`]: rows clipped,
//! quantised to 28-bit fixed point, `XᵀX` and `Xᵀy` summed exactly in integers) against the
//! floating-point path they replaced (rows clipped, then `XᵀX`, `Xᵀy` by ndarray's `dot`:
//! matrixmultiply, or OpenBLAS with the `blas` feature), on `n × d` Gaussian rows, for
//! `d = 100` and `d = 800`; and the whole fit (statistics, eigenvalue, releases, solve).
//!
//! Run: `cargo run --release -p dp-glm --example ssp_stats_cost`.

use std::time::Instant;

use dp_glm::sufficient::SufficientStats;
use dp_glm::{Dataset, Ssp};
use dp_optim::numeric::project_to_ball;
use dp_optim::seeded_rng;
use ndarray::{Array1, Array2, Axis};
use rand_distr::{Distribution, StandardNormal};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (n, d) in [(200_000usize, 100usize), (20_000, 800)] {
        let mut rng = seeded_rng(1);
        let x = Array2::from_shape_fn((n, d), |_| StandardNormal.sample(&mut rng));
        let y = Array1::from_shape_fn(n, |_| StandardNormal.sample(&mut rng));
        let bx = (d as f64).sqrt();
        let t = Instant::now();
        let mut clipped = x.clone();
        for row in clipped.axis_iter_mut(Axis(0)) {
            project_to_ball(row, bx);
        }
        let yc = y.mapv(|v: f64| v.clamp(-3.0, 3.0));
        let gram = clipped.t().dot(&clipped);
        let xty = clipped.t().dot(&yc);
        let float = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut stats = SufficientStats::new(d, bx, 3.0)?;
        stats.add_block(x.view(), y.view(), 0)?;
        let exact_gram = stats.gram();
        let exact = t.elapsed().as_secs_f64();
        let diff = (&exact_gram - &gram)
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let data = Dataset::new(x, y)?;
        let t = Instant::now();
        let model = Ssp::new(bx, 3.0).fit(&data, &mut seeded_rng(2))?;
        let fit = t.elapsed().as_secs_f64();
        println!(
            "n = {n}, d = {d}: f64 statistics {float:.3} s ({:.1} ns/row·pair), exact {exact:.3} s \
             ({:.1} ns/row·pair), ratio {:.2}; max |exact − f64| Gram entry {diff:.2e} \
             (‖Xᵀy‖ {:.3e}); whole fit {fit:.3} s, ‖w‖ {:.3}",
            float * 1e9 / (n * d * (d + 1) / 2) as f64,
            exact * 1e9 / (n * d * (d + 1) / 2) as f64,
            exact / float,
            xty.dot(&xty).sqrt(),
            model.coef().dot(&model.coef()).sqrt(),
        );
    }
    Ok(())
}
