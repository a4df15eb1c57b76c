//! Statistics shared by the tests: one-sample Kolmogorov–Smirnov test and z-scores.
//!
//! Every statistical test in this crate runs with a fixed seed (so it is deterministic), and
//! states the probability that it would fail for a *correct* sampler with a random seed:
//! KS tests reject at p < 1e-6 and moment checks at |z| > 5.5 (two-sided ≈ 4e-8 each).

/// Significance level of every KS test.
pub(crate) const KS_ALPHA: f64 = 1e-6;
/// Bound on |z| for moment checks (two-sided false-failure rate ≈ 3.8e-8 each).
pub(crate) const Z_MAX: f64 = 5.5;

/// The KS statistic `D = sup |F_n − F|` of `samples` against the continuous CDF `cdf`.
pub(crate) fn ks_statistic(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in s.iter().enumerate() {
        let f = cdf(x);
        d = d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n);
    }
    d
}

/// Asymptotic p-value of the KS statistic `d` for `n` samples (Kolmogorov distribution with
/// Stephens' small-sample correction, as in Numerical Recipes §14.3).
pub(crate) fn ks_p_value(d: f64, n: usize) -> f64 {
    let sn = (n as f64).sqrt();
    let lambda = (sn + 0.12 + 0.11 / sn) * d;
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u64 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// Asserts that `samples` pass a KS test against `cdf` at level [`KS_ALPHA`].
pub(crate) fn assert_ks(samples: &[f64], cdf: impl Fn(f64) -> f64, what: &str) {
    let d = ks_statistic(samples, cdf);
    let p = ks_p_value(d, samples.len());
    assert!(
        p > KS_ALPHA,
        "{what}: KS test rejects (D = {d}, n = {}, p = {p})",
        samples.len()
    );
}

/// Mean and unbiased variance.
pub(crate) fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    (m, v)
}

/// Asserts `|estimate − expected| ≤ Z_MAX · se`.
pub(crate) fn assert_z(estimate: f64, expected: f64, se: f64, what: &str) {
    let z = (estimate - expected) / se;
    assert!(
        z.abs() <= Z_MAX,
        "{what}: estimate {estimate}, expected {expected}, z = {z}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_p_values_are_sane() {
        // Known values of the Kolmogorov distribution: Q(1.36) ≈ 0.049, Q(1.63) ≈ 0.0098.
        let n = 1_000_000;
        let sn = (n as f64).sqrt();
        assert!((ks_p_value(1.36 / sn, n) - 0.0494).abs() < 1e-3);
        assert!((ks_p_value(1.63 / sn, n) - 0.0098).abs() < 5e-4);
        assert_eq!(ks_p_value(0.0, n), 1.0);
        // A uniform grid against the uniform CDF has D = 1/n.
        let grid: Vec<f64> = (0..100).map(|i| (i as f64 + 0.5) / 100.0).collect();
        assert!((ks_statistic(&grid, |x| x) - 0.005).abs() < 1e-12);
        // A shifted sample is rejected.
        let shifted: Vec<f64> = grid.iter().map(|x| x * 0.5).collect();
        assert!(ks_p_value(ks_statistic(&shifted, |x| x.clamp(0.0, 1.0)), 100) < 1e-6);
    }
}

/// Dense GLM test objectives, independent of `dp-glm`.
pub(crate) mod glm {
    use ndarray::{Array1, Array2, ArrayView1, ArrayViewMut1, Axis};

    use crate::{ClippedSum, FiniteSum, GlmSum, Objective};

    /// The per-term loss `φ(z, y)`.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub(crate) enum Loss {
        /// `(z − y)²/2`.
        Squared,
        /// `log(1 + e^{−yz})`, `y ∈ {−1, +1}`.
        Logistic,
    }

    /// `f(θ) = Σ_i φ(⟨a_i, θ⟩, y_i) + (λ/2)‖θ‖²`.
    #[derive(Debug, Clone)]
    pub(crate) struct DenseGlm {
        pub(crate) a: Array2<f64>,
        pub(crate) y: Array1<f64>,
        pub(crate) lambda: f64,
        pub(crate) loss: Loss,
    }

    fn log1pexp(t: f64) -> f64 {
        if t > 0.0 {
            t + (-t).exp().ln_1p()
        } else {
            t.exp().ln_1p()
        }
    }

    fn sigmoid(t: f64) -> f64 {
        if t >= 0.0 {
            1.0 / (1.0 + (-t).exp())
        } else {
            let e = t.exp();
            e / (1.0 + e)
        }
    }

    impl DenseGlm {
        pub(crate) fn phi(&self, z: f64, y: f64) -> f64 {
            match self.loss {
                Loss::Squared => 0.5 * (z - y) * (z - y),
                Loss::Logistic => log1pexp(-y * z),
            }
        }
        pub(crate) fn dphi(&self, z: f64, y: f64) -> f64 {
            match self.loss {
                Loss::Squared => z - y,
                Loss::Logistic => -y * sigmoid(-y * z),
            }
        }
        pub(crate) fn ddphi(&self, z: f64) -> f64 {
            match self.loss {
                Loss::Squared => 1.0,
                Loss::Logistic => sigmoid(z) * sigmoid(-z),
            }
        }
        /// Hessian `Aᵀ diag(φ'') A + λI`.
        pub(crate) fn hessian(&self, x: ArrayView1<'_, f64>) -> Array2<f64> {
            let z = self.a.dot(&x);
            let w = z.mapv(|z| self.ddphi(z));
            let aw = &self.a * &w.insert_axis(Axis(1));
            let mut h = self.a.t().dot(&aw);
            for i in 0..h.nrows() {
                h[[i, i]] += self.lambda;
            }
            h
        }
        /// Smoothness constant of one term plus `λ/n`: `max ‖a_i‖² sup φ'' + λ/n`.
        pub(crate) fn term_lipschitz(&self) -> f64 {
            let sup = match self.loss {
                Loss::Squared => 1.0,
                Loss::Logistic => 0.25,
            };
            let max_sq = self
                .a
                .rows()
                .into_iter()
                .map(|r| r.dot(&r))
                .fold(0.0, f64::max);
            max_sq * sup + self.lambda / self.a.nrows() as f64
        }
    }

    impl Objective for DenseGlm {
        fn dim(&self) -> usize {
            self.a.ncols()
        }
        fn value(&self, x: ArrayView1<'_, f64>) -> f64 {
            let z = self.a.dot(&x);
            z.iter()
                .zip(&self.y)
                .map(|(&z, &y)| self.phi(z, y))
                .sum::<f64>()
                + 0.5 * self.lambda * x.dot(&x)
        }
        fn value_grad(&self, x: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) -> f64 {
            let z = self.a.dot(&x);
            let c: Array1<f64> = z
                .iter()
                .zip(&self.y)
                .map(|(&z, &y)| self.dphi(z, y))
                .collect();
            grad.assign(&self.a.t().dot(&c));
            grad.scaled_add(self.lambda, &x);
            self.value(x)
        }
    }

    impl FiniteSum for DenseGlm {
        fn n_terms(&self) -> usize {
            self.a.nrows()
        }
        fn batch_grad(
            &self,
            x: ArrayView1<'_, f64>,
            batch: &[usize],
            mut grad: ArrayViewMut1<'_, f64>,
        ) {
            grad.fill(0.0);
            for &i in batch {
                let c = self.term_scalar(x, i);
                grad.scaled_add(c, &self.a.row(i));
            }
        }
        fn regulariser_grad(&self, x: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) {
            grad.assign(&x);
            grad *= self.lambda;
        }
    }

    impl GlmSum for DenseGlm {
        fn term_scalar(&self, x: ArrayView1<'_, f64>, i: usize) -> f64 {
            self.dphi(self.a.row(i).dot(&x), self.y[i])
        }
        fn add_scaled_row(&self, i: usize, c: f64, mut grad: ArrayViewMut1<'_, f64>) {
            grad.scaled_add(c, &self.a.row(i));
        }
    }

    impl ClippedSum for DenseGlm {
        fn n_examples(&self) -> usize {
            self.a.nrows()
        }
        fn dim(&self) -> usize {
            self.a.ncols()
        }
        fn clipped_sum(
            &self,
            x: ArrayView1<'_, f64>,
            batch: Option<&[usize]>,
            clip: f64,
            mut out: ArrayViewMut1<'_, f64>,
        ) {
            out.fill(0.0);
            let mut add = |i: usize| {
                let row = self.a.row(i);
                let c = self.dphi(row.dot(&x), self.y[i]);
                let norm = c.abs() * row.dot(&row).sqrt();
                let c = if norm > clip { c * clip / norm } else { c };
                out.scaled_add(c, &row);
            };
            match batch {
                Some(b) => b.iter().for_each(|&i| add(i)),
                None => (0..self.a.nrows()).for_each(add),
            }
        }
    }

    /// Solves `m x = b` by Gaussian elimination with partial pivoting.
    pub(crate) fn solve(m: &Array2<f64>, b: &Array1<f64>) -> Array1<f64> {
        let n = b.len();
        let mut a = m.clone();
        let mut x = b.clone();
        for k in 0..n {
            let p = (k..n)
                .max_by(|&i, &j| a[[i, k]].abs().total_cmp(&a[[j, k]].abs()))
                .unwrap();
            if p != k {
                for j in 0..n {
                    a.swap([k, j], [p, j]);
                }
                x.swap(k, p);
            }
            for i in k + 1..n {
                let f = a[[i, k]] / a[[k, k]];
                for j in k..n {
                    a[[i, j]] -= f * a[[k, j]];
                }
                x[i] -= f * x[k];
            }
        }
        for k in (0..n).rev() {
            let s: f64 = (k + 1..n).map(|j| a[[k, j]] * x[j]).sum();
            x[k] = (x[k] - s) / a[[k, k]];
        }
        x
    }

    /// Largest eigenvalue of a symmetric positive semi-definite matrix (power iteration).
    pub(crate) fn max_eigen(m: &Array2<f64>) -> f64 {
        let mut v = Array1::from_elem(m.nrows(), 1.0);
        let mut lambda = 0.0;
        for _ in 0..500 {
            let w = m.dot(&v);
            lambda = w.dot(&w).sqrt();
            v = w / lambda;
        }
        lambda
    }

    /// Ridge closed form `(AᵀA + λI)⁻¹ Aᵀy`.
    pub(crate) fn ridge_closed_form(p: &DenseGlm) -> Array1<f64> {
        let mut m = p.a.t().dot(&p.a);
        for i in 0..m.nrows() {
            m[[i, i]] += p.lambda;
        }
        solve(&m, &p.a.t().dot(&p.y))
    }

    /// Newton's method with backtracking (a step is accepted on sufficient decrease of `f` or
    /// on halving `‖∇f‖`, so rounding in `f` near the optimum cannot stall it), iterated
    /// until `‖∇f‖` stops decreasing: a high-precision reference minimiser of a strictly
    /// convex `DenseGlm`.
    pub(crate) fn newton(p: &DenseGlm) -> Array1<f64> {
        let d = p.a.ncols();
        let mut x = Array1::<f64>::zeros(d);
        let mut g = Array1::<f64>::zeros(d);
        let mut g_new = Array1::<f64>::zeros(d);
        let mut f = p.value_grad(x.view(), g.view_mut());
        for _ in 0..200 {
            let gn = g.dot(&g).sqrt();
            let step = solve(&p.hessian(x.view()), &g);
            let mut t = 1.0;
            loop {
                let trial = &x - &(t * &step);
                let f_new = p.value_grad(trial.view(), g_new.view_mut());
                let gn_new = g_new.dot(&g_new).sqrt();
                if f_new <= f - 1e-4 * t * g.dot(&step) || gn_new <= 0.5 * gn {
                    if gn_new >= gn {
                        return x;
                    }
                    x = trial;
                    f = f_new;
                    std::mem::swap(&mut g, &mut g_new);
                    break;
                }
                t *= 0.5;
                if t < 1e-12 {
                    return x;
                }
            }
        }
        x
    }

    /// A random problem: `A` with `N(0,1)` entries scaled by `scale`, labels from a planted
    /// `θ*` (Gaussian noise for squared loss; Bernoulli-logistic ±1 for logistic).
    pub(crate) fn random_problem(
        n: usize,
        d: usize,
        lambda: f64,
        loss: Loss,
        seed: u64,
    ) -> DenseGlm {
        use rand::RngExt;
        let mut rng = crate::rng::seeded_rng(seed);
        let mut normal = || crate::noise::standard_normal(&mut rng);
        let a = Array2::from_shape_fn((n, d), |_| normal());
        let theta: Array1<f64> = (0..d).map(|_| normal()).collect();
        let z = a.dot(&theta);
        let mut rng = crate::rng::seeded_rng(seed + 1);
        let y = z.mapv(|z| match loss {
            Loss::Squared => z + crate::noise::standard_normal(&mut rng),
            Loss::Logistic => {
                if rng.random::<f64>() < sigmoid(z) {
                    1.0
                } else {
                    -1.0
                }
            }
        });
        DenseGlm { a, y, lambda, loss }
    }
}
