//! Sufficient-statistics perturbation for linear regression: AdaSSP (Wang 2018, UAI, Alg. 2).

use dp_accounting::{AccountantKind, GridGaussian, Ledger, Mechanism, Neighbouring};
use dp_data::RowBlock;
use dp_optim::{grid_multiplier, grid_noise_multiplier};
use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use ndarray::{Array1, Array2, ArrayView1};
use rand::Rng;

use super::{Budget, calibrate, positive, public_n_note, report};
use crate::data::{Dataset, WIDEN_ROWS};
use crate::error::{Error, Result};
use crate::loss::Loss;
use crate::model::LinearModel;
use crate::sparse::SparseDataset;
use crate::sufficient::{StreamError, SufficientStats, XTX_LABEL, XTY_LABEL};

/// The label of the noisy smallest eigenvalue's release.
const LAMBDA_LABEL: &str = "lambda_min(XtX)";

/// Private ridge regression by sufficient-statistics perturbation with an adaptive ridge:
/// AdaSSP (Y.-X. Wang 2018, *Revisiting differentially private linear regression*, UAI,
/// Alg. 2).
///
/// Rows are clipped to `‖x‖ ≤ B_X` and labels to `|y| ≤ B_Y`; then `XᵀX`, `Xᵀy` and
/// `λ_min(XᵀX)` are released with Gaussian noise, the ridge is chosen from the noisy
/// `λ̃_min`, and the model is `(X̂ᵀX + λI)⁻¹ X̂ᵀy`.
///
/// With `σ_M`, `σ_λ` the noise standard deviations of the matrix and of `λ_min`, Wang's
/// constants (his noise scale is `σ_W = √log(6/δ)·B_X²/(ε/3)`) rewritten in terms of the
/// calibrated σ's:
/// `λ̃_min = max(0, λ_min + σ_λ Z − σ_λ √log(6/δ))` (debiased low with high probability) and
/// `λ = max(0, σ_M √(d log(2d²/ρ)) − λ̃_min)`, i.e. Wang's `c_d/ε' =
/// √(d log(6/δ) log(2d²/ρ))·B_X²/(ε/3)` with his σ replaced by ours; `ρ` is the failure
/// probability (default 0.05, as in Wang's experiments and Google's reference
/// implementation). The noisy `X̂ᵀX + λI` is solved by Cholesky; when it is not positive
/// definite, through its eigen-decomposition with negative eigenvalues projected to
/// 0 (projection onto the PSD cone) and a pseudo-inverse for the null space — post-processing.
/// The linear algebra is faer's (pure Rust, no system library).
///
/// # Privacy
/// Wang 2018, Alg. 2 and Thm 3 (three Gaussian releases), with the sensitivities of MATH §8
/// for the values actually computed. `XᵀX` and `Xᵀy` are exact integer sums of the clipped
/// rows quantised to a fixed-point grid with the bounds enforced on the integers
/// ([`crate::sufficient`], whose § Privacy proves them): under add/remove of one row the
/// upper triangle (incl. the diagonal) of `XᵀX` changes by exactly that of `x̂x̂ᵀ`, L2 norm
/// `≤ ‖x̂‖² ≤ B_X²`, and `Xᵀy` by `x̂ŷ`, `≤ B_X·B_Y` — no floating-point term, whatever
/// the order of the rows or the blocks they are read in. `λ_min` is computed in `f64` from
/// the exact matrix; its sensitivity is `B_X²` (Weyl) plus an allowance for the rounding and
/// the eigen-solver's error that grows with the row count ([`Ssp::lambda_sensitivity`],
/// which states its assumption on the solver). Under replace-one `B_X²` and `B_X·B_Y` are
/// doubled (conservative). The three releases use the same noise multiplier `z`
/// (σ_k = z·Δ_k), so they compose *exactly* into one Gaussian mechanism with ratio `√3/z`
/// (MATH §2); `z` is calibrated for 3 such releases by the budget's accountant (default
/// `exact`, add/remove) from public values only (the bounds, `d`, the row count — the data's
/// unless [`Ssp::public_n`] is given), and the ledger of the three grid-safe
/// `Mechanism::gaussian(σ_k, Δ_k + slack_k)` is priced again afterwards. The solve is
/// post-processing.
#[derive(Debug, Clone, PartialEq)]
pub struct Ssp {
    /// Public bound `B_X` on `‖x‖` (rows are clipped to it).
    pub bound_x: f64,
    /// Public bound `B_Y` on `|y|` (labels are clipped to it).
    pub bound_y: f64,
    /// Budget; default `(1, 1e-5)`, exact accountant, add/remove (as Wang 2018).
    pub budget: Budget,
    /// Failure probability `ρ ∈ (0, 1)` of the adaptive ridge (default 0.05).
    pub failure_prob: f64,
    /// A public row count `N` (issue 10 §1): with it nothing the fit releases or records
    /// depends on the data's count, which is private under add/remove — the noise grids are
    /// sized for `N` rows and the eigen-solver's allowance in `λ_min`'s sensitivity uses `N`.
    /// A data set with more than `N` rows is refused before anything is released (the
    /// guarantee is stated for data sets of at most `N` rows). Without it the data's count is
    /// used and treated as public, as the report notes.
    pub public_n: Option<usize>,
}

/// The eigen-solver's assumed backward-error factor `p(d) = 16·d²` (see
/// [`Ssp::lambda_sensitivity`]).
fn eigen_backward_factor(d: usize) -> f64 {
    16.0 * (d as f64) * (d as f64)
}

impl Ssp {
    /// AdaSSP with public bounds `‖x‖ ≤ bound_x`, `|y| ≤ bound_y` and the defaults above.
    pub fn new(bound_x: f64, bound_y: f64) -> Self {
        Self {
            bound_x,
            bound_y,
            budget: Budget::new(1.0, 1e-5, AccountantKind::Exact, Neighbouring::AddRemove),
            failure_prob: 0.05,
            public_n: None,
        }
    }

    budget_setter!();

    /// Checks the hyper-parameters and the budget (before any data is read).
    fn check(&self) -> Result<(f64, f64)> {
        let bx = positive("bound_x", self.bound_x)?;
        let by = positive("bound_y", self.bound_y)?;
        let rho = self.failure_prob;
        if !(rho > 0.0 && rho < 1.0) {
            return Err(Error::InvalidHyperParameter {
                name: "failure_prob",
                value: rho,
                reason: "must be in (0, 1)",
            });
        }
        if self.public_n == Some(0) {
            return Err(Error::InvalidHyperParameter {
                name: "public_n",
                value: 0.0,
                reason: "must be >= 1",
            });
        }
        self.budget.target()?;
        Ok((bx, by))
    }

    /// Empty exact statistics for `d` features with this learner's bounds, to fill with
    /// [`SufficientStats::add_block`] and fit with [`Ssp::fit_statistics`].
    ///
    /// # Errors
    /// As [`Ssp::fit`] for the hyper-parameters; as [`SufficientStats::new`].
    pub fn statistics(&self, d: usize) -> Result<SufficientStats> {
        let (bx, by) = self.check()?;
        SufficientStats::new(d, bx, by)
    }

    /// Fits the model (squared loss) on data in memory: [`Ssp::fit_statistics`] of the exact
    /// statistics of `data`, accumulated in `f64` over blocks of rows (`f32` storage is widened
    /// one block at a time).
    ///
    /// # Errors
    /// Invalid bounds, failure probability, public row count or budget; an accountant that
    /// cannot analyse the Gaussian; a non-finite result.
    pub fn fit<R: Rng + ?Sized>(&self, data: &Dataset, rng: &mut R) -> Result<LinearModel> {
        let mut stats = self.statistics(data.n_features())?;
        for (rows, x) in data.features().f64_blocks(WIDEN_ROWS) {
            stats.add_block(
                x.view(),
                data.y()
                    .slice_axis(ndarray::Axis(0), ndarray::Slice::from(rows.clone())),
                rows.start,
            )?;
        }
        self.fit_statistics(stats, rng)
    }

    /// Fits the model (squared loss) on sparse rows: [`Ssp::fit_statistics`] of the exact
    /// statistics of `data` ([`SufficientStats::add_sparse`]), never densified — the same
    /// integers, hence the same model bit for bit, as [`Ssp::fit`] on the rows densified with
    /// the same generator. Memory: the `O(d²)` statistics beside the stored entries.
    ///
    /// # Errors
    /// As [`Ssp::fit`].
    pub fn fit_sparse<R: Rng + ?Sized>(
        &self,
        data: &SparseDataset,
        rng: &mut R,
    ) -> Result<LinearModel> {
        let mut stats = self.statistics(data.n_features())?;
        stats.add_sparse(data)?;
        self.fit_statistics(stats, rng)
    }

    /// Fits the model from a row-block source (e.g. [`dp_data::RowBlocks`], or
    /// [`dp_data::LoadedData::blocks`] for data in memory), reading it once: memory is the
    /// `O(d²)` statistics and one block. The model is bit-identical to [`Ssp::fit`]'s on the
    /// same rows with the same generator, however the rows are split into blocks (the
    /// statistics are exact integer sums).
    ///
    /// # Errors
    /// [`StreamError::Source`] with the source's first error; [`StreamError::Fit`] as
    /// [`Ssp::fit`], and [`Error::EmptyData`] for a source without rows,
    /// [`Error::ShapeMismatch`] for blocks of different widths or without labels.
    pub fn fit_blocks<R, I, E>(
        &self,
        blocks: I,
        rng: &mut R,
    ) -> std::result::Result<LinearModel, StreamError<E>>
    where
        R: Rng + ?Sized,
        I: IntoIterator<Item = std::result::Result<RowBlock, E>>,
        E: std::error::Error + 'static,
    {
        self.check()?;
        let mut stats: Option<SufficientStats> = None;
        let mut first_row = 0usize;
        for block in blocks {
            let block = block.map_err(StreamError::Source)?;
            let s = match &mut stats {
                Some(s) => s,
                None => stats.insert(self.statistics(block.x.ncols())?),
            };
            s.add_block(block.x.view(), block.y.view(), first_row)?;
            first_row = first_row.saturating_add(block.x.nrows());
        }
        let stats = stats.ok_or(Error::EmptyData { what: "no rows" })?;
        Ok(self.fit_statistics(stats, rng)?)
    }

    /// The sensitivity of the released `λ_min` for `rows` rows at most, under the budget's
    /// relation: `c·B_X² + 2η·(rows + 1)·B_X²` with `c` = 1 (add/remove) or 2 (replace-one)
    /// and `η = u·(1 + p(d)(1 + u))`, `u = 2^-53`, `p(d) = 16d²`.
    ///
    /// # Privacy
    /// `G` is the exact Gram matrix of the quantised rows ([`crate::sufficient`]); the exact
    /// `λ_min(G)` moves by at most `‖x̂‖² ≤ B_X²` when one row is added or removed (Weyl's
    /// inequality: `G' = G ± x̂x̂ᵀ`), `2B_X²` under replace-one. What is released is the value
    /// computed in `f64`: `G_f = fl(G)` (each entry rounded, `‖G_f − G‖₂ ≤ ‖G_f − G‖_F ≤
    /// u‖G‖_F`) and then faer's symmetric eigen-solver on `G_f`, **assumed** backward stable
    /// with `‖E‖₂ ≤ p(d)·u·‖G_f‖₂` for `p(d) = 16d²` — the classical bound for Householder
    /// tridiagonalisation followed by the implicit symmetric QR algorithm has this form with
    /// a modest constant (Higham, *Accuracy and Stability of Numerical Algorithms*, §19.3 and
    /// Thm 19.4: `r` reflections of length `m` give `r·γ̃_m`, here `r, m ≤ d`; Golub & Van
    /// Loan, *Matrix Computations*, §8.3); faer states no constant, so `16d²` is our
    /// assumption, not a proved fact about faer. Then by Weyl the computed value is within
    /// `u‖G‖₂ + p(d)u(1+u)‖G‖₂ = η‖G‖₂` of `λ_min(G)`, and `‖G‖₂ ≤ tr G = Σ‖x̂_i‖² ≤ rows·B_X²`
    /// for a data set of at most `rows` rows. So two neighbours (at most `rows + 1` rows)
    /// give computed values at most `c·B_X² + 2η(rows + 1)B_X²` apart. The clamp at 0 is
    /// 1-Lipschitz.
    pub fn lambda_sensitivity(&self, rows: usize, d: usize) -> f64 {
        let factor = match self.budget.neighbouring {
            Neighbouring::AddRemove => 1.0,
            Neighbouring::ReplaceOne => 2.0,
        };
        let u = f64::EPSILON / 2.0;
        let eta = u * (1.0 + eigen_backward_factor(d) * (1.0 + u));
        let b2 = self.bound_x * self.bound_x;
        // Rounded up by a relative 1e-12 (far above the few roundings here).
        (factor * b2 + 2.0 * eta * (rows as f64 + 1.0) * b2) * (1.0 + 1e-12)
    }

    /// Fits the model from exact statistics ([`Ssp::statistics`], filled with the data):
    /// the three grid-safe Gaussian releases of the type docs and the ridge solve.
    ///
    /// # Errors
    /// As [`Ssp::fit`]; [`Error::EmptyData`] for statistics without rows;
    /// [`Error::InvalidHyperParameter`] for statistics made with other bounds, or more rows
    /// than [`Ssp::public_n`].
    pub fn fit_statistics<R: Rng + ?Sized>(
        &self,
        mut stats: SufficientStats,
        rng: &mut R,
    ) -> Result<LinearModel> {
        let (bx, by) = self.check()?;
        let rho = self.failure_prob;
        if stats.bounds() != (bx, by) {
            return Err(Error::InvalidHyperParameter {
                name: "bound_x",
                value: stats.bounds().0,
                reason: "the statistics were clipped to other bounds than the learner's",
            });
        }
        let rows_seen = usize::try_from(stats.n_samples()).unwrap_or(usize::MAX);
        if rows_seen == 0 {
            return Err(Error::EmptyData { what: "no rows" });
        }
        // The row count the release is sized for: the public one (refusing more rows, before
        // anything is released), else the data's, treated as public.
        let rows = match self.public_n {
            Some(n) if rows_seen > n => {
                return Err(Error::InvalidHyperParameter {
                    name: "public_n",
                    value: n as f64,
                    reason: "the data has more rows than the public row count",
                });
            }
            Some(n) => n,
            None => rows_seen,
        };
        let target = self.budget.target()?;
        let rel = self.budget.neighbouring;
        let factor = match rel {
            Neighbouring::AddRemove => 1.0,
            Neighbouring::ReplaceOne => 2.0,
        };
        let d = stats.n_features();
        let (d_mat, d_vec) = (factor * bx * bx, factor * bx * by);
        let d_lam = self.lambda_sensitivity(rows, d);
        if !(d_mat.is_finite() && d_vec.is_finite() && d_lam.is_finite()) {
            return Err(Error::InvalidHyperParameter {
                name: "bound_x",
                value: bx,
                reason: "the sensitivities B_X², B_X·B_Y must be finite and > 0",
            });
        }
        // Noise multiplier shared by the three releases (calibrated from public values:
        // the bounds, d and the row count).
        // Each release is grid-safe (dp_optim's noise docs): its rounding slack lowers its
        // effective multiplier; calibrate on the smallest of the three (each release's ε is
        // at most that one's), record each with its own slack.
        let releases = [(d_lam, 1), (d_mat, d * (d + 1) / 2), (d_vec, d)];
        // The discrete noise likewise: three releases priced as three of the largest
        // dimension and smallest grid parameter (the adjustment grows with both).
        let z = calibrate(&self.budget, 3, |s| {
            let mut worst = f64::INFINITY;
            let (mut grid_sigma, mut grid_dim) = (f64::INFINITY, 1);
            for &(delta, dim) in &releases {
                let (z, grid) = grid_noise_multiplier(s, delta, rows, dim)?;
                worst = worst.min(z);
                grid_sigma = grid_sigma.min(grid.sigma());
                grid_dim = grid_dim.max(grid.dim());
            }
            let grid = GridGaussian::new(grid_sigma, grid_dim)?;
            Ok(Mechanism::gaussian(worst, 1.0)?.with_grid(grid))
        })?;
        let (s_mat, s_vec, s_lam) = (z * d_mat, z * d_vec, z * d_lam);
        let [g_lam, g_mat, g_vec] =
            releases.map(|(delta, dim)| grid_multiplier(z, delta, rows, dim));
        let (g_lam, g_mat, g_vec) = (g_lam?.0, g_mat?.0, g_vec?.0);

        // Release 1: λ_min(XᵀX), computed in f64 from the exact statistics (its error is in
        // the sensitivity: `lambda_sensitivity`).
        let gram = stats.gram();
        let lam_min = smallest_eigenvalue(&gram)?.max(0.0);
        drop(gram);
        let shift = s_lam * (6.0 / target.delta()).ln().sqrt();
        let mut lam = ndarray::arr1(&[lam_min]);
        g_lam.add_to(LAMBDA_LABEL, rng, lam.view_mut())?;
        let lam_tilde = (lam[0] - shift).max(0.0);
        let df = d as f64;
        let c = s_mat * (df * (2.0 * df * df / rho).ln()).sqrt();
        let ridge = (c - lam_tilde).max(0.0);

        // Release 2: XᵀX, noise on the exact upper triangle incl. the diagonal, mirrored.
        let upper = stats.release_xtx(&g_mat, rng)?;
        let mut m = Array2::zeros((d, d));
        let mut k = 0;
        for i in 0..d {
            for j in i..d {
                m[[i, j]] = upper[k];
                m[[j, i]] = upper[k];
                k += 1;
            }
        }
        drop(upper);
        // Release 3: Xᵀy.
        let b = stats.release_xty(&g_vec, rng)?;
        drop(stats);

        // Post-processing: solve (X̂ᵀX + λI) w = X̂ᵀy.
        let coef = solve_regularised(&m, ridge, b.view())?;

        let mut ledger = Ledger::new(rel);
        let tri = d * (d + 1) / 2;
        ledger.record(
            Mechanism::gaussian(s_lam, d_lam + g_lam.slack(1))?
                .with_grid(g_lam.discrete_gaussian(1)?),
            1,
            LAMBDA_LABEL,
        );
        ledger.record(
            Mechanism::gaussian(s_mat, d_mat + g_mat.slack(tri))?
                .with_grid(g_mat.discrete_gaussian(tri)?),
            1,
            XTX_LABEL,
        );
        ledger.record(
            Mechanism::gaussian(s_vec, d_vec + g_vec.slack(d))?
                .with_grid(g_vec.discrete_gaussian(d)?),
            1,
            XTY_LABEL,
        );
        let noise = vec![
            ("noise_multiplier".to_string(), z),
            ("sigma_xtx".to_string(), s_mat),
            ("sigma_xty".to_string(), s_vec),
            ("sigma_lambda_min".to_string(), s_lam),
            ("bound_x".to_string(), bx),
            ("bound_y".to_string(), by),
        ];
        let mut notes = vec![
            "AdaSSP (Wang 2018, Alg. 2): three Gaussian releases with one noise multiplier, \
             composed exactly"
                .to_string(),
            "X^T X and X^T y are exact integer sums of the clipped rows quantised to a \
             fixed-point grid (2^-28 of the bounds); lambda_min's sensitivity includes an \
             allowance for the eigen-solver's floating-point error (assumed backward error \
             16 d^2 u ||G||)"
                .to_string(),
        ];
        match self.public_n {
            Some(n) => notes.push(format!(
                "the noise grids and the eigen-solver allowance use the given public row count \
                 n = {n}, not the data's"
            )),
            None => notes.extend(public_n_note(
                rel,
                "the noise grids of the released sums and the eigen-solver allowance in \
                 lambda_min's sensitivity are sized for n",
            )),
        }
        let report = report(&self.budget, ledger, noise, notes)?;
        LinearModel::new(coef, 0.0, Loss::Squared, report)?.with_row_bound(bx)
    }
}

/// Solves `(m + λI) w = b` for symmetric `m`: Cholesky if `m + λI` is positive definite,
/// otherwise through the eigen-decomposition of `m` with eigenvalues `max(e, 0) + λ`
/// (PSD projection) and a pseudo-inverse of the numerically null part. Both with faer (pure
/// Rust; Householder tridiagonalisation and a symmetric tridiagonal eigen-solver).
///
/// # Errors
/// [`Error::Optim`] with [`dp_optim::Error::NonFinite`] if the eigen-solver does not converge
/// (post-processing: nothing is released).
pub(crate) fn solve_regularised(
    m: &Array2<f64>,
    lambda: f64,
    b: ArrayView1<'_, f64>,
) -> Result<Array1<f64>> {
    let d = m.nrows();
    let a = Mat::from_fn(d, d, |i, j| m[[i, j]] + if i == j { lambda } else { 0.0 });
    if let Some(w) = cholesky_solve(&a, b) {
        return Ok(w);
    }
    let evd = to_faer(m)
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| not_converged())?;
    let (u, s) = (evd.U(), evd.S().column_vector());
    let vals: Vec<f64> = (0..d).map(|k| s[k].max(0.0) + lambda).collect();
    let top = vals.iter().fold(0.0f64, |acc, &v| acc.max(v));
    let floor = top * 1e-12;
    // w = U diag(1/v) Uᵀ b over the eigenvalues above the floor.
    let mut w = Array1::zeros(d);
    for (k, &v) in vals.iter().enumerate() {
        if v > floor {
            let p = (0..d).map(|i| u[(i, k)] * b[i]).sum::<f64>() / v;
            w.iter_mut()
                .enumerate()
                .for_each(|(i, wi)| *wi += p * u[(i, k)]);
        }
    }
    Ok(w)
}

/// Cholesky solve of `a w = b` (the lower triangle of `a` is read); `None` if `a` is not
/// (numerically) positive definite or the solution is not finite.
fn cholesky_solve(a: &Mat<f64>, b: ArrayView1<'_, f64>) -> Option<Array1<f64>> {
    let llt = a.llt(Side::Lower).ok()?;
    let rhs = Mat::from_fn(b.len(), 1, |i, _| b[i]);
    let w = llt.solve(&rhs);
    let w = Array1::from_shape_fn(b.len(), |i| w[(i, 0)]);
    w.iter().all(|v| v.is_finite()).then_some(w)
}

/// The smallest eigenvalue of the symmetric matrix `a` (its lower triangle is read), by faer's
/// self-adjoint eigenvalue solver (Householder tridiagonalisation, then a tridiagonal solver).
///
/// # Privacy
/// The result feeds a Gaussian release; its floating-point error is bounded under a stated
/// assumption on the solver's backward error and added to that release's sensitivity
/// ([`Ssp::lambda_sensitivity`]).
///
/// # Errors
/// As [`solve_regularised`].
fn smallest_eigenvalue(a: &Array2<f64>) -> Result<f64> {
    let vals = to_faer(a)
        .self_adjoint_eigenvalues(Side::Lower)
        .map_err(|_| not_converged())?;
    // Sorted in non-decreasing order.
    vals.first()
        .copied()
        .filter(|v| v.is_finite())
        .ok_or_else(not_converged)
}

/// An ndarray matrix as a faer one.
fn to_faer(a: &Array2<f64>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[[i, j]])
}

/// The eigen-solver did not converge.
fn not_converged() -> Error {
    Error::Optim(dp_optim::Error::NonFinite(
        "the symmetric eigen-solver did not converge",
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand_distr::{Distribution, StandardNormal};

    fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
        StandardNormal.sample(rng)
    }
    use crate::learners::testdata::{assert_reproducible, rng};
    use ndarray::array;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// `x ~ N(0, I_d)`, `y = ⟨x, w*⟩ + N(0, noise²)`, `w*` with unit norm (fixed by `seed`).
    pub(crate) fn gaussian_linreg(
        n: usize,
        d: usize,
        noise: f64,
        seed: u64,
    ) -> (Dataset, Array1<f64>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut w = Array1::from_shape_fn(d, |_| normal(&mut rng));
        let nw = w.dot(&w).sqrt();
        w /= nw;
        let x = Array2::from_shape_fn((n, d), |_| normal(&mut rng));
        let y = x.dot(&w) + Array1::from_shape_fn(n, |_| noise * normal(&mut rng));
        (Dataset::new(x, y).unwrap(), w)
    }

    /// Excess risk `E(⟨x,w⟩−y)²/2 − min = ‖w − w*‖²/2` for `x ~ N(0, I)`.
    pub(crate) fn excess(w: ArrayView1<'_, f64>, w_star: &Array1<f64>) -> f64 {
        let e = &w - w_star;
        0.5 * e.dot(&e)
    }

    /// The reference the faer path replaced: cyclic Jacobi rotations (eigenvalues and the
    /// matrix whose columns are the eigenvectors, `a = V diag(e) Vᵀ`).
    fn jacobi_eigen(a: &Array2<f64>) -> (Array1<f64>, Array2<f64>) {
        let d = a.nrows();
        let mut m = a.clone();
        let mut v = Array2::<f64>::eye(d);
        let scale: f64 = m.iter().map(|x| x * x).sum::<f64>().sqrt();
        for _sweep in 0..100 {
            let m_ref = &m;
            let off: f64 = (0..d)
                .flat_map(|i| ((i + 1)..d).map(move |j| m_ref[[i, j]] * m_ref[[i, j]]))
                .sum();
            if off.sqrt() <= 1e-15 * scale || scale == 0.0 {
                break;
            }
            for p in 0..d {
                for q in (p + 1)..d {
                    let apq = m[[p, q]];
                    if apq == 0.0 {
                        continue;
                    }
                    let theta = (m[[q, q]] - m[[p, p]]) / (2.0 * apq);
                    let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                    let t = if theta == 0.0 { 1.0 } else { t };
                    let c = 1.0 / (t * t + 1.0).sqrt();
                    let s = t * c;
                    let rotate = |a: f64, b: f64| (c * a - s * b, s * a + c * b);
                    for k in 0..d {
                        (m[[k, p]], m[[k, q]]) = rotate(m[[k, p]], m[[k, q]]);
                    }
                    for k in 0..d {
                        (m[[p, k]], m[[q, k]]) = rotate(m[[p, k]], m[[q, k]]);
                    }
                    for k in 0..d {
                        (v[[k, p]], v[[k, q]]) = rotate(v[[k, p]], v[[k, q]]);
                    }
                }
            }
        }
        (m.diag().to_owned(), v)
    }

    /// The old path's solve, through [`jacobi_eigen`], for the PSD-projected case.
    fn jacobi_solve(m: &Array2<f64>, lambda: f64, b: &Array1<f64>) -> Array1<f64> {
        let (eig, vecs) = jacobi_eigen(m);
        let vals = eig.mapv(|e| e.max(0.0) + lambda);
        let floor = vals.iter().fold(0.0f64, |acc, &v| acc.max(v)) * 1e-12;
        let proj = vecs.t().dot(b);
        let scaled = Array1::from_shape_fn(b.len(), |k| {
            if vals[k] > floor {
                proj[k] / vals[k]
            } else {
                0.0
            }
        });
        vecs.dot(&scaled)
    }

    fn max_abs_diff(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
        (a - b).iter().fold(0.0f64, |m, x| m.max(x.abs()))
    }

    #[test]
    fn linear_algebra_is_right() {
        let a = array![[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let (e, v) = jacobi_eigen(&a);
        let back = v.dot(&Array2::from_diag(&e)).dot(&v.t());
        assert!((&back - &a).iter().all(|x| x.abs() < 1e-12));
        let lo = e.iter().fold(f64::INFINITY, |m, &x| m.min(x));
        assert!((smallest_eigenvalue(&a).unwrap() - lo).abs() < 1e-13);
        let b = array![1.0, 2.0, 3.0];
        let w = cholesky_solve(&to_faer(&a), b.view()).unwrap();
        assert!((a.dot(&w) - &b).iter().all(|x| x.abs() < 1e-12));
        // Indefinite: Cholesky refuses, the PSD-projected solve still returns a finite answer.
        let ind = array![[1.0, 0.0], [0.0, -1.0]];
        assert!(cholesky_solve(&to_faer(&ind), array![1.0, 1.0].view()).is_none());
        let w = solve_regularised(&ind, 0.0, array![1.0, 1.0].view()).unwrap();
        assert!(max_abs_diff(&w, &array![1.0, 0.0]) < 1e-15, "{w}");
    }

    /// faer agrees with the Jacobi path it replaced, on noisy Gram matrices like AdaSSP's
    /// (d = 40): the smallest eigenvalue within 1e-9 of the largest in magnitude, the
    /// Cholesky and the PSD-projected solves within 1e-9 relative.
    #[test]
    fn faer_matches_the_old_jacobi_path() {
        let (d, n) = (40, 200);
        let mut r = Xoshiro256PlusPlus::seed_from_u64(9);
        let x = Array2::from_shape_fn((n, d), |_| normal(&mut r));
        let b = Array1::from_shape_fn(d, |_| normal(&mut r));
        for noise in [0.0, 30.0] {
            let mut m = x.t().dot(&x);
            for i in 0..d {
                for j in i..d {
                    let e = noise * normal(&mut r);
                    m[[i, j]] += e;
                    m[[j, i]] = m[[i, j]];
                }
            }
            let (eig, _) = jacobi_eigen(&m);
            let old = eig.iter().fold(f64::INFINITY, |a, &v| a.min(v));
            let new = smallest_eigenvalue(&m).unwrap();
            let top = eig.iter().fold(0.0f64, |a, &v| a.max(v.abs()));
            assert!((new - old).abs() <= 1e-9 * top, "{new} vs {old}");
            for ridge in [0.0, 5.0] {
                let want = jacobi_solve(&m, ridge, &b);
                let got = solve_regularised(&m, ridge, b.view()).unwrap();
                let scale = want.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                assert!(
                    max_abs_diff(&got, &want) <= 1e-9 * scale,
                    "noise {noise}, ridge {ridge}: {}",
                    max_abs_diff(&got, &want)
                );
            }
        }
    }

    #[test]
    fn spends_at_most_the_target_and_reports_everything() {
        let (data, _) = gaussian_linreg(2000, 5, 0.1, 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let m = Ssp::new(4.0, 3.0)
            .budget(1.0, 1e-5)
            .fit(&data, &mut rng)
            .unwrap();
        let r = m.privacy();
        assert!(r.epsilon <= 1.0 && r.epsilon > 0.99, "{}", r.epsilon);
        assert_eq!(r.event.releases().len(), 3);
        assert_eq!(r.neighbouring, Neighbouring::AddRemove);
        assert_eq!(r.accountant, AccountantKind::Exact);
        // Only values fixed before the data is read: not the ridge, which depends on the
        // noisy λ_min.
        let names: Vec<&str> = r.noise.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "noise_multiplier",
                "sigma_xtx",
                "sigma_xty",
                "sigma_lambda_min",
                "bound_x",
                "bound_y"
            ]
        );
        // Replace-one doubles the sensitivities and still meets the target.
        let mut s = Ssp::new(4.0, 3.0);
        s.budget.neighbouring = Neighbouring::ReplaceOne;
        let r = s.fit(&data, &mut rng).unwrap();
        assert!(r.privacy().epsilon <= 1.0);
        // 32 plus the grid release's rounding slack.
        let sens = r.privacy().event.releases()[0].mechanism.parameters()[1].1;
        assert!(sens > 32.0 && sens < 32.0 * (1.0 + 1e-5), "{sens}");
    }

    #[test]
    fn reproducible_with_a_seed() {
        let (data, _) = gaussian_linreg(500, 3, 0.1, 2);
        assert_reproducible(|s| Ssp::new(3.0, 3.0).fit(&data, &mut rng(s)).unwrap());
    }

    #[test]
    fn rejects_bad_input() {
        let (data, _) = gaussian_linreg(50, 2, 0.1, 3);
        let bad = |m: Ssp| m.fit(&data, &mut Xoshiro256PlusPlus::seed_from_u64(1));
        assert!(matches!(
            bad(Ssp::new(f64::NAN, 1.0)),
            Err(Error::InvalidHyperParameter {
                name: "bound_x",
                ..
            })
        ));
        assert!(bad(Ssp::new(1.0, f64::INFINITY)).is_err());
        assert!(bad(Ssp::new(1.0, 1.0).budget(f64::NAN, 1e-5)).is_err());
        assert!(bad(Ssp::new(1.0, 1.0).budget(1.0, 0.0)).is_err());
        let mut s = Ssp::new(1.0, 1.0);
        s.failure_prob = 1.0;
        assert!(bad(s).is_err());
        assert!(Dataset::new(array![[f64::NAN]], array![1.0]).is_err());
    }

    /// Excess risk (averaged over 4 seeds) falls as n grows (×10) and as ε grows (×10);
    /// margin: at least halves.
    #[test]
    fn excess_risk_falls_with_n_and_epsilon() {
        let d = 5;
        let risk = |n: usize, eps: f64| {
            (0..4)
                .map(|s| {
                    let (data, w) = gaussian_linreg(n, d, 0.5, 100 + s);
                    let m = Ssp::new(2.0 * (d as f64).sqrt(), 4.0)
                        .budget(eps, 1e-6)
                        .fit(&data, &mut Xoshiro256PlusPlus::seed_from_u64(s))
                        .unwrap();
                    excess(m.coef(), &w)
                })
                .sum::<f64>()
                / 4.0
        };
        let (small, big) = (risk(2_000, 1.0), risk(20_000, 1.0));
        assert!(big < 0.5 * small, "n: {small} -> {big}");
        let (lo, hi) = (risk(2_000, 0.2), risk(2_000, 2.0));
        eprintln!("excess risk: n {small} -> {big}; eps {lo} -> {hi}");
        assert!(hi < 0.5 * lo, "eps: {lo} -> {hi}");
    }
}
