//! Noise samplers writing into caller-owned buffers.
//!
//! * Gaussian `N(0, s²I)`: each coordinate is `s · Z` with `Z` drawn by `rand_distr`'s
//!   [`StandardNormal`] (the ZIGNOR Ziggurat of Doornik 2005).
//! * Laplace `Lap(b)` per coordinate: `b · E · S` with `E ~ Exp(1)` (`rand_distr`'s [`Exp1`],
//!   Ziggurat) and an independent fair sign `S`.
//! * Gamma ball (paper 000, §6 and App. E): density `∝ exp(−‖z‖/s)` on `R^d`. In polar
//!   coordinates the density of the radius is `∝ r^{d−1} e^{−r/s}`, so `z = R · U` with `U`
//!   uniform on the unit sphere (a normalised standard Gaussian vector) and
//!   `R ~ Gamma(shape d, scale s)` (`rand_distr`'s [`rand_distr::Gamma`], Marsaglia–Tsang).
//!
//! Samplers take the generator explicitly. For real releases pass a CSPRNG
//! ([`crate::secure_rng`]).

use ndarray::{ArrayViewMut1, Zip};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, Exp1, StandardNormal};

use crate::error::{Error, Result, positive};

/// A noise law on `R^d`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Isotropic Gaussian `N(0, std² I)`.
    Gaussian {
        /// Standard deviation of each coordinate (finite, > 0).
        std: f64,
    },
    /// Independent Laplace coordinates with density `exp(−|z|/scale) / (2·scale)`.
    Laplace {
        /// Scale `b` (finite, > 0); the variance of a coordinate is `2b²`.
        scale: f64,
    },
    /// The Gamma ball of paper 000: density `∝ exp(−‖z‖/scale)`; `‖z‖ ~ Gamma(d, scale)`,
    /// direction uniform. Added to a query of L2 sensitivity `Δ` it is `(Δ/scale)`-DP.
    GammaBall {
        /// Scale `s` (finite, > 0); `E‖z‖ = d·s`.
        scale: f64,
    },
}

impl Noise {
    /// Checks the parameter.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when the standard deviation or scale is not finite and
    /// positive.
    pub fn check(&self) -> Result<()> {
        match *self {
            Noise::Gaussian { std } => positive("std", std).map(drop),
            Noise::Laplace { scale } | Noise::GammaBall { scale } => {
                positive("scale", scale).map(drop)
            }
        }
    }

    /// Overwrites `out` with one draw (of dimension `out.len()`).
    ///
    /// # Errors
    /// As [`Noise::check`].
    pub fn sample_into<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        mut out: ArrayViewMut1<'_, f64>,
    ) -> Result<()> {
        self.check()?;
        match *self {
            Noise::Gaussian { std } => out.map_inplace(|v| *v = std * standard_normal(rng)),
            Noise::Laplace { scale } => out.map_inplace(|v| *v = scale * standard_laplace(rng)),
            Noise::GammaBall { scale } => gamma_ball_into(rng, scale, out)?,
        }
        Ok(())
    }

    /// Adds one draw to `out` (`out += z`).
    ///
    /// # Errors
    /// As [`Noise::check`].
    pub fn add_to<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        mut out: ArrayViewMut1<'_, f64>,
    ) -> Result<()> {
        self.check()?;
        match *self {
            Noise::Gaussian { std } => out.map_inplace(|v| *v += std * standard_normal(rng)),
            Noise::Laplace { scale } => out.map_inplace(|v| *v += scale * standard_laplace(rng)),
            Noise::GammaBall { scale } => {
                let mut z = ndarray::Array1::zeros(out.len());
                gamma_ball_into(rng, scale, z.view_mut())?;
                Zip::from(&mut out).and(&z).for_each(|o, &v| *o += v);
            }
        }
        Ok(())
    }
}

/// One `N(0, 1)` draw.
pub(crate) fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    StandardNormal.sample(rng)
}

/// One standard Laplace draw (scale 1).
fn standard_laplace<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let e: f64 = Exp1.sample(rng);
    if rng.random::<bool>() { e } else { -e }
}

/// Overwrites `out` with a Gamma-ball draw of scale `scale` (checked by the caller).
fn gamma_ball_into<R: Rng + ?Sized>(
    rng: &mut R,
    scale: f64,
    mut out: ArrayViewMut1<'_, f64>,
) -> Result<()> {
    let d = out.len();
    if d == 0 {
        return Ok(());
    }
    // Uniform direction: a standard Gaussian vector, normalised. Its norm is zero with
    // probability zero; redraw in that case (and if it underflows).
    let norm = loop {
        out.map_inplace(|v| *v = standard_normal(rng));
        let n = out.dot(&out).sqrt();
        if n > 0.0 && n.is_finite() {
            break n;
        }
    };
    let radius_law =
        rand_distr::Gamma::new(d as f64, scale).map_err(|_| Error::InvalidParameter {
            name: "scale",
            value: scale,
            reason: "must be finite and positive",
        })?;
    let radius: f64 = radius_law.sample(rng);
    out *= radius / norm;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded_rng;
    use crate::testutil::{assert_ks, assert_z, mean_var};
    use ndarray::Array1;
    use statrs::distribution::{ContinuousCDF, Gamma, Laplace, Normal};

    const N: usize = 40_000;

    #[test]
    fn rejects_bad_parameters() {
        let mut rng = seeded_rng(0);
        let mut out = Array1::zeros(3);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            for noise in [
                Noise::Gaussian { std: bad },
                Noise::Laplace { scale: bad },
                Noise::GammaBall { scale: bad },
            ] {
                assert!(matches!(
                    noise.sample_into(&mut rng, out.view_mut()),
                    Err(Error::InvalidParameter { .. })
                ));
                assert!(noise.add_to(&mut rng, out.view_mut()).is_err());
            }
        }
        // Zero-dimensional draws are empty, not errors.
        let mut empty = Array1::<f64>::zeros(0);
        Noise::GammaBall { scale: 1.0 }
            .sample_into(&mut rng, empty.view_mut())
            .unwrap();
    }

    /// KS (p > 1e-6) against N(0, s²), and mean/variance z-tests (|z| ≤ 5.5).
    #[test]
    fn gaussian_has_the_right_law() {
        let mut rng = seeded_rng(1);
        let s = 2.5;
        let mut z = Array1::zeros(N);
        Noise::Gaussian { std: s }
            .sample_into(&mut rng, z.view_mut())
            .unwrap();
        let z = z.to_vec();
        let law = Normal::new(0.0, s).unwrap();
        assert_ks(&z, |x| law.cdf(x), "gaussian");
        let (m, v) = mean_var(&z);
        assert_z(m, 0.0, s / (N as f64).sqrt(), "gaussian mean");
        // Var of the sample variance of a normal: 2σ⁴/(n−1).
        assert_z(
            v,
            s * s,
            s * s * (2.0 / (N as f64 - 1.0)).sqrt(),
            "gaussian variance",
        );
    }

    /// `add_to` adds an independent draw with the same law.
    #[test]
    fn add_to_adds() {
        let mut rng = seeded_rng(11);
        let mut z = Array1::from_elem(N, 3.0);
        Noise::Gaussian { std: 1.0 }
            .add_to(&mut rng, z.view_mut())
            .unwrap();
        let law = Normal::new(3.0, 1.0).unwrap();
        assert_ks(&z.to_vec(), |x| law.cdf(x), "gaussian add_to");
        let mut l = Array1::from_elem(N, -1.0);
        Noise::Laplace { scale: 0.5 }
            .add_to(&mut rng, l.view_mut())
            .unwrap();
        let law = Laplace::new(-1.0, 0.5).unwrap();
        assert_ks(&l.to_vec(), |x| law.cdf(x), "laplace add_to");
        let d = 5;
        let mut g = Array1::from_elem(d, 1.0);
        Noise::GammaBall { scale: 1.0 }
            .add_to(&mut rng, g.view_mut())
            .unwrap();
        assert!(g.iter().all(|v| v.is_finite()) && g.iter().any(|&v| v != 1.0));
    }

    /// KS against Lap(b), mean and variance `2b²`.
    #[test]
    fn laplace_has_the_right_law() {
        let mut rng = seeded_rng(2);
        let b = 0.7;
        let mut z = Array1::zeros(N);
        Noise::Laplace { scale: b }
            .sample_into(&mut rng, z.view_mut())
            .unwrap();
        let z = z.to_vec();
        let law = Laplace::new(0.0, b).unwrap();
        assert_ks(&z, |x| law.cdf(x), "laplace");
        let (m, v) = mean_var(&z);
        let var = 2.0 * b * b;
        assert_z(m, 0.0, (var / N as f64).sqrt(), "laplace mean");
        // Fourth central moment of Laplace: 24 b⁴; Var(s²) ≈ (μ4 − σ⁴)/n.
        let se = ((24.0 * b.powi(4) - var * var) / N as f64).sqrt();
        assert_z(v, var, se, "laplace variance");
    }

    /// Gamma ball: magnitude KS against Gamma(d, s) and `E‖z‖ = d·s`; direction uniform:
    /// every coordinate of `z/‖z‖` has mean 0 and second moment `1/d`, and the direction is
    /// independent of the magnitude (checked through the first coordinate against Beta-law
    /// moments, and the correlation of `u_1²` with `‖z‖`).
    #[test]
    fn gamma_ball_has_the_right_law() {
        let mut rng = seeded_rng(3);
        let (d, s) = (8usize, 0.6);
        let draws = 20_000;
        let mut z = Array1::zeros(d);
        let mut radii = Vec::with_capacity(draws);
        let mut sum_u = Array1::<f64>::zeros(d);
        let mut sum_u2 = Array1::<f64>::zeros(d);
        let mut u1sq = Vec::with_capacity(draws);
        for _ in 0..draws {
            Noise::GammaBall { scale: s }
                .sample_into(&mut rng, z.view_mut())
                .unwrap();
            let r = z.dot(&z).sqrt();
            radii.push(r);
            let u = &z / r;
            sum_u += &u;
            sum_u2 += &u.mapv(|v| v * v);
            u1sq.push(u[0] * u[0]);
        }
        let law = Gamma::new(d as f64, 1.0 / s).unwrap(); // statrs: (shape, rate)
        assert_ks(&radii, |x| law.cdf(x), "gamma-ball magnitude");
        let (mr, _) = mean_var(&radii);
        // Gamma(d, s): mean d·s, variance d·s².
        assert_z(
            mr,
            d as f64 * s,
            ((d as f64) * s * s / draws as f64).sqrt(),
            "E|z|",
        );
        // u_i has mean 0 and variance 1/d; u_i² has mean 1/d and variance
        // 2(d−1)/(d²(d+2)) (u_i² ~ Beta(1/2, (d−1)/2)).
        let df = d as f64;
        let se1 = (1.0 / df / draws as f64).sqrt();
        let se2 = (2.0 * (df - 1.0) / (df * df * (df + 2.0)) / draws as f64).sqrt();
        for i in 0..d {
            assert_z(sum_u[i] / draws as f64, 0.0, se1, "direction mean");
            assert_z(
                sum_u2[i] / draws as f64,
                1.0 / df,
                se2,
                "direction second moment",
            );
        }
        // Independence of direction and magnitude: sample correlation ≈ 0 (se ≈ 1/√n).
        let (mu, vu) = mean_var(&u1sq);
        let (_, vr) = mean_var(&radii);
        let cov = u1sq
            .iter()
            .zip(&radii)
            .map(|(a, r)| (a - mu) * (r - mr))
            .sum::<f64>()
            / (draws as f64 - 1.0);
        assert_z(
            cov / (vu * vr).sqrt(),
            0.0,
            1.0 / (draws as f64).sqrt(),
            "corr",
        );
    }

    /// In dimension 1 the Gamma ball is the Laplace law: KS of the signed value.
    #[test]
    fn gamma_ball_in_one_dimension_is_laplace() {
        let mut rng = seeded_rng(4);
        let s = 1.3;
        let mut z = Array1::zeros(1);
        let mut v = Vec::with_capacity(N);
        for _ in 0..N {
            Noise::GammaBall { scale: s }
                .sample_into(&mut rng, z.view_mut())
                .unwrap();
            v.push(z[0]);
        }
        let law = Laplace::new(0.0, s).unwrap();
        assert_ks(&v, |x| law.cdf(x), "gamma-ball d = 1");
    }
}
