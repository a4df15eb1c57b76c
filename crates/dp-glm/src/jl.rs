//! Data-oblivious Johnson–Lindenstrauss projections `Φ ∈ R^{k×d}` (MATH §9, paper 003
//! Alg. 2): map the rows `x ↦ Φx`, learn `w̃ ∈ R^k`, return `Φᵀw̃`.
//!
//! Every kind has independent entries of mean 0 and variance `1/k`, so `E‖Φx‖² = ‖x‖²`, and
//! `‖Φx‖²/‖x‖²` concentrates around 1 with relative fluctuations of order `√(2/k)`.
//! `Φ` is drawn from the caller's random generator and never looks at the data: projecting
//! costs no privacy.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result, ensure};
use crate::learners::check_memory;

/// The distribution of the entries of `Φ`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JlKind {
    /// `N(0, 1/k)` entries.
    Gaussian,
    /// `±1/√k` with probability 1/2 each (dense Rademacher).
    Sign,
    /// Sparse sign: `±1/√(k·s)` with probability `s/2` each, 0 with probability `1 − s`
    /// (Achlioptas 2003 for `s = 1/3`; `s = 1` is [`JlKind::Sign`]).
    SparseSign {
        /// Density `s ∈ (0, 1]`.
        density: f64,
    },
}

/// A JL projection matrix `Φ ∈ R^{k×d}`.
#[derive(Debug, Clone, PartialEq)]
pub struct JlProjection {
    kind: JlKind,
    phi: Array2<f64>,
}

impl JlProjection {
    /// Draws `Φ ∈ R^{k×d}` with entries of the given kind from `rng`.
    ///
    /// # Errors
    /// [`Error::InvalidHyperParameter`] if `k = 0`, `d = 0`, or a sparse density outside
    /// `(0, 1]`; [`Error::ResourceLimit`] if `Φ` (`k·d` values) exceeds
    /// [`MEMORY_BUDGET_BYTES`](crate::learners::MEMORY_BUDGET_BYTES).
    pub fn new<R: Rng + ?Sized>(kind: JlKind, k: usize, d: usize, rng: &mut R) -> Result<Self> {
        ensure(k > 0, "k", k as f64, "must be >= 1")?;
        ensure(d > 0, "d", d as f64, "must be >= 1")?;
        check_memory("k", k as f64, k as f64 * d as f64)?;
        let kf = k as f64;
        let phi = match kind {
            JlKind::Gaussian => {
                let sd = 1.0 / kf.sqrt();
                Array2::from_shape_simple_fn((k, d), || {
                    let g: f64 = StandardNormal.sample(rng);
                    sd * g
                })
            }
            JlKind::Sign => {
                let a = 1.0 / kf.sqrt();
                Array2::from_shape_simple_fn((k, d), || if rng.random::<bool>() { a } else { -a })
            }
            JlKind::SparseSign { density } => {
                ensure(
                    density > 0.0 && density <= 1.0,
                    "density",
                    density,
                    "must be in (0, 1]",
                )?;
                let a = 1.0 / (kf * density).sqrt();
                let half = 0.5 * density;
                Array2::from_shape_simple_fn((k, d), || {
                    let u: f64 = rng.random();
                    if u < half {
                        a
                    } else if u < density {
                        -a
                    } else {
                        0.0
                    }
                })
            }
        };
        Ok(Self { kind, phi })
    }

    /// `N(0, 1/k)` entries.
    ///
    /// # Errors
    /// As [`JlProjection::new`].
    pub fn gaussian<R: Rng + ?Sized>(k: usize, d: usize, rng: &mut R) -> Result<Self> {
        Self::new(JlKind::Gaussian, k, d, rng)
    }

    /// `±1/√k` entries.
    ///
    /// # Errors
    /// As [`JlProjection::new`].
    pub fn sign<R: Rng + ?Sized>(k: usize, d: usize, rng: &mut R) -> Result<Self> {
        Self::new(JlKind::Sign, k, d, rng)
    }

    /// Sparse sign entries with density `density`.
    ///
    /// # Errors
    /// As [`JlProjection::new`].
    pub fn sparse_sign<R: Rng + ?Sized>(
        k: usize,
        d: usize,
        density: f64,
        rng: &mut R,
    ) -> Result<Self> {
        Self::new(JlKind::SparseSign { density }, k, d, rng)
    }

    /// The kind of entries.
    pub fn kind(&self) -> JlKind {
        self.kind
    }

    /// Target dimension `k`.
    pub fn k(&self) -> usize {
        self.phi.nrows()
    }

    /// Source dimension `d`.
    pub fn d(&self) -> usize {
        self.phi.ncols()
    }

    /// `Φ`, `k × d`.
    pub fn matrix(&self) -> ArrayView2<'_, f64> {
        self.phi.view()
    }

    /// The projected rows `XΦᵀ` (`n × k`) of `x` (`n × d`): one matrix product.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `x` does not have `d` columns.
    pub fn apply(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        if x.ncols() != self.d() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "projection",
                right_shape: self.phi.shape().to_vec(),
            });
        }
        Ok(x.dot(&self.phi.t()))
    }

    /// `Φᵀw` (length `d`): a parameter learnt in `R^k` lifted back to `R^d`, so that
    /// `⟨Φᵀw, x⟩ = ⟨w, Φx⟩`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `w` does not have length `k`.
    pub fn lift(&self, w: ArrayView1<'_, f64>) -> Result<Array1<f64>> {
        if w.len() != self.k() {
            return Err(Error::ShapeMismatch {
                left: "w",
                left_shape: w.shape().to_vec(),
                right: "projection",
                right_shape: self.phi.shape().to_vec(),
            });
        }
        Ok(self.phi.t().dot(&w))
    }
}
