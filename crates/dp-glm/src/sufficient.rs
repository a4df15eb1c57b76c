//! Exact sufficient statistics of linear regression: `XᵀX` (upper triangle) and `Xᵀy` of the
//! clipped rows on a fixed-point grid, summed in integers.
//!
//! Each row is clipped to `‖x‖ ≤ B_X` and its label to `|y| ≤ B_Y` (in `f64`), then
//! quantised: `q(x) = round(x·2^{k_x})` coordinate-wise with `k_x` the power of two that puts
//! `B_X·2^{k_x}` in `[2^27, 2^28)`, and `q(y) = round(y·2^{k_y})` likewise. The bounds are then
//! enforced **on the integers**: `‖q(x)‖² ≤ ⌊(B_X·2^{k_x})²⌋` (an exact integer comparison,
//! equivalent to `‖q(x)·2^{-k_x}‖ ≤ B_X`; a row that fails it — only possible when rounding
//! up pushes a row clipped to norm `B_X` past it — is truncated towards zero instead, and
//! if need be its largest coordinate stepped towards zero until it holds) and
//! `|q(y)| ≤ ⌊B_Y·2^{k_y}⌋`. Every product `q_i q_j`, `q_i q_y` is below `2^56` in magnitude,
//! exact in `i64`; up to [`FLUSH_ROWS`] of them are summed in `i64` (below `2^63`) and then
//! added to `i128` totals (below `2^127` for any `u64` row count). The totals are therefore
//! the exact sums `Σ_i q(x_i)q(x_i)ᵀ` and `Σ_i q(x_i)q(y_i)`, whatever the order of the rows
//! and however they are split into blocks: the in-memory and the streamed fit see the same
//! numbers.
//!
//! Memory: `O(d²)` integers (the totals and one partial sum), independent of the row count.
//!
//! # Privacy
//! With `x̂ = q(x)·2^{-k_x}`, `ŷ = q(y)·2^{-k_y}` the rows actually summed, `‖x̂‖ ≤ B_X` and
//! `|ŷ| ≤ B_Y` hold exactly (enforced on the integers above). The statistics are exact sums,
//! so adding or removing one row changes the upper triangle (incl. the diagonal) of `X̂ᵀX̂`
//! by that of `x̂x̂ᵀ`, of L2 norm `(Σ_{i≤j} x̂_i²x̂_j²)^{1/2} ≤ ‖x̂‖² ≤ B_X²`, and `X̂ᵀŷ` by
//! `x̂ŷ`, of norm `≤ B_X·B_Y` — with no floating-point error term; replacing one row changes
//! them by at most twice that (triangle inequality). These are MATH §8's sensitivities, now
//! for the values actually computed. [`SufficientStats::release_xtx`] and
//! [`SufficientStats::release_xty`] round the exact sums to the noise grid in integer
//! arithmetic (each coordinate moves by at most `γ/2`, the rounding the grid release's slack
//! covers: dp-optim's noise module, § Privacy) and hand grid values to
//! [`GridRelease::add_to`], which leaves them unchanged and adds the discrete Gaussian.

use dp_optim::GridRelease;
use dp_optim::numeric::project_to_ball;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1};
use rand::Rng;

use crate::error::{Error, Result, ensure};
use crate::sparse::SparseDataset;

/// The label of the noisy `XᵀX` release (its upper triangle).
pub(crate) const XTX_LABEL: &str = "XtX (upper triangle)";

/// The label of the noisy `Xᵀy` release.
pub(crate) const XTY_LABEL: &str = "Xty";

/// The error of a fit that reads its data from a row-block source: the source's (a file that
/// cannot be read or parsed), or the learner's.
#[derive(Debug, thiserror::Error)]
pub enum StreamError<E: std::error::Error + 'static> {
    /// The source failed.
    #[error("reading the data: {0}")]
    Source(#[source] E),
    /// The learner failed.
    #[error(transparent)]
    Fit(#[from] Error),
}

/// Bits of a quantised coordinate's magnitude bound: `B·2^k ∈ [2^(BITS−1), 2^BITS)`.
const BITS: i32 = 28;

/// Rows whose products are summed in `i64` before they are added to the `i128` totals: each
/// product is below `2^(2·BITS) = 2^56`, so 64 of them stay below `2^62`.
pub const FLUSH_ROWS: usize = 64;

/// The smallest and largest bound accepted (`2^∓256`): every grid unit and every statistic
/// stays far from the subnormal and overflow ranges of `f64`.
const BOUND_RANGE: (f64, f64) = (8.636_168_555_094_445e-78, 1.157_920_892_373_162e77);

/// A fixed-point grid `2^-k` for values bounded by `B`: `B·2^k ∈ [2^27, 2^28)`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FixedPoint {
    /// The exponent `k`.
    k: i32,
    /// `2^k`.
    scale: f64,
    /// `⌊B·2^k⌋`: the largest magnitude of a coordinate.
    max: i64,
    /// `⌊(B·2^k)²⌋`: the largest squared norm of a quantised row.
    max_sq: i128,
}

impl FixedPoint {
    fn new(name: &'static str, bound: f64) -> Result<Self> {
        ensure(
            bound >= BOUND_RANGE.0 && bound <= BOUND_RANGE.1,
            name,
            bound,
            "must be in [2^-256, 2^256] for the exact fixed-point statistics",
        )?;
        let mut k = BITS - 1 - bound.log2().floor() as i32;
        // log2 may be off by one next to a power of two: correct it (power-of-two scalings
        // are exact in this range).
        while bound * 2f64.powi(k) >= 2f64.powi(BITS) {
            k -= 1;
        }
        while bound * 2f64.powi(k) < 2f64.powi(BITS - 1) {
            k += 1;
        }
        let scaled = bound * 2f64.powi(k); // exact, in [2^27, 2^28)
        Ok(Self {
            k,
            scale: 2f64.powi(k),
            max: scaled.floor() as i64,
            max_sq: floor_square(scaled),
        })
    }
}

/// `⌊x²⌋` exactly for `x ∈ [2^27, 2^28)`: `x = m·2^e` with a 53-bit integer `m` and
/// `e ∈ [−25, −24]`, so `x² = m²·2^{2e}` with `m² < 2^106`.
fn floor_square(x: f64) -> i128 {
    let bits = x.to_bits();
    let m = i128::from((bits & ((1u64 << 52) - 1)) | (1u64 << 52));
    let e = ((bits >> 52) & 0x7ff) as i32 - 1075;
    (m * m) >> (-2 * e)
}

/// The exact sufficient statistics of the clipped, quantised rows seen so far (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct SufficientStats {
    d: usize,
    bound_x: f64,
    bound_y: f64,
    fx: FixedPoint,
    fy: FixedPoint,
    rows: u64,
    /// `Σ q_i q_j` over the upper triangle, row-major (`(0,0), (0,1), …, (d−1,d−1)`).
    xtx: Vec<i128>,
    /// `Σ q_i q_y`.
    xty: Vec<i128>,
    /// The partial sums of the rows since the last flush.
    part_xx: Vec<i64>,
    part_xy: Vec<i64>,
    pending: usize,
    /// One row's buffers.
    row: Array1<f64>,
    q: Vec<i32>,
}

impl SufficientStats {
    /// Empty statistics for `d` features, rows clipped to `‖x‖ ≤ bound_x` and labels to
    /// `|y| ≤ bound_y`.
    ///
    /// # Errors
    /// [`Error::EmptyData`] for `d = 0`; [`Error::InvalidHyperParameter`] (naming `bound_x`
    /// or `bound_y`) for a bound outside `[2^-256, 2^256]`; [`Error::ResourceLimit`] when the
    /// `d(d+1)/2` totals exceed the learners' memory budget.
    pub fn new(d: usize, bound_x: f64, bound_y: f64) -> Result<Self> {
        if d == 0 {
            return Err(Error::EmptyData {
                what: "no features",
            });
        }
        let fx = FixedPoint::new("bound_x", bound_x)?;
        let fy = FixedPoint::new("bound_y", bound_y)?;
        let tri = d.saturating_mul(d.saturating_add(1)) / 2;
        // i128 totals and i64 partial sums: 3 f64-sized values per entry.
        crate::learners::check_memory("n_features", d as f64, 3.0 * tri as f64)?;
        Ok(Self {
            d,
            bound_x,
            bound_y,
            fx,
            fy,
            rows: 0,
            xtx: vec![0; tri],
            xty: vec![0; d],
            part_xx: vec![0; tri],
            part_xy: vec![0; d],
            pending: 0,
            row: Array1::zeros(d),
            q: vec![0; d],
        })
    }

    /// Features per row.
    pub fn n_features(&self) -> usize {
        self.d
    }

    /// Rows added so far.
    pub fn n_samples(&self) -> u64 {
        self.rows
    }

    /// The bounds `(B_X, B_Y)` the rows and labels are clipped to.
    pub fn bounds(&self) -> (f64, f64) {
        (self.bound_x, self.bound_y)
    }

    /// Adds a block of rows `x` (`rows × d`) with labels `y`; `first_row` is the index of the
    /// block's first row in the data (for error messages).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for a block whose width is not `d` or whose `y` does not have
    /// one label per row; [`Error::NonFinite`] for a NaN or infinite value (the block's
    /// earlier rows are already added: discard the statistics).
    pub fn add_block(
        &mut self,
        x: ArrayView2<'_, f64>,
        y: ArrayView1<'_, f64>,
        first_row: usize,
    ) -> Result<()> {
        if x.ncols() != self.d || y.len() != x.nrows() {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: x.shape().to_vec(),
                right: "y",
                right_shape: vec![y.len(), self.d],
            });
        }
        for (i, (xi, &yi)) in x.rows().into_iter().zip(y).enumerate() {
            let row = first_row.saturating_add(i);
            if let Some((col, &value)) = xi.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::NonFinite {
                    array: "x",
                    row,
                    col,
                    value,
                });
            }
            if !yi.is_finite() {
                return Err(Error::NonFinite {
                    array: "y",
                    row,
                    col: 0,
                    value: yi,
                });
            }
            self.add_row(xi, yi);
        }
        Ok(())
    }

    /// Adds the rows of `data`, sparse: the statistics of the same rows densified, the same
    /// integers (each row clipped to `B_X` as the dense path projects it, bit for bit; a zero
    /// entry quantises to 0 and adds nothing), in `O(Σ_i nnz_i²)` time and without an `n × d`
    /// matrix (the rows longer than `B_X` are projected into a copy of the stored entries).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `data` is not `d` features wide (its values are finite
    /// by construction).
    pub fn add_sparse(&mut self, data: &SparseDataset) -> Result<()> {
        if data.n_features() != self.d {
            return Err(Error::ShapeMismatch {
                left: "x",
                left_shape: vec![data.n_samples(), data.n_features()],
                right: "statistics",
                right_shape: vec![self.d],
            });
        }
        let projected = data.projected(self.bound_x)?;
        let rows = projected.as_ref().unwrap_or(data);
        let mut q = Vec::new();
        for (i, &y) in rows.y().iter().enumerate() {
            let (cols, values) = rows.row(i);
            q.resize(values.len(), 0);
            quantise_row(ArrayView1::from(values), &self.fx, &mut q);
            let qy = self.quantise_label(y);
            let d = self.d;
            for (a, (&i, &qi)) in cols.iter().zip(&q).enumerate() {
                let qi = i64::from(qi);
                // Row `i` of the packed upper triangle starts at `Σ_{r<i} (d − r)`.
                let at = i * d - i * i.saturating_sub(1) / 2 - i;
                for (&j, &qj) in cols[a..].iter().zip(&q[a..]) {
                    self.part_xx[at + j] += qi * i64::from(qj);
                }
                self.part_xy[i] += qi * qy;
            }
            self.counted();
        }
        Ok(())
    }

    /// Clips, quantises and adds one (finite) row.
    fn add_row(&mut self, x: ArrayView1<'_, f64>, y: f64) {
        self.row.assign(&x);
        // Scaled by the largest entry first: a row whose norm overflows keeps its direction.
        project_to_ball(self.row.view_mut(), self.bound_x);
        quantise_row(self.row.view(), &self.fx, &mut self.q);
        let qy = self.quantise_label(y);
        let d = self.d;
        let mut at = 0;
        for i in 0..d {
            let qi = i64::from(self.q[i]);
            let dst = &mut self.part_xx[at..at + d - i];
            for (acc, &qj) in dst.iter_mut().zip(&self.q[i..]) {
                *acc += qi * i64::from(qj);
            }
            at += d - i;
            self.part_xy[i] += qi * qy;
        }
        self.counted();
    }

    /// `q(y)`: the label clipped to `|y| ≤ B_Y` and quantised, `|q(y)| ≤ ⌊B_Y·2^{k_y}⌋`.
    fn quantise_label(&self, y: f64) -> i64 {
        let qy = (y.clamp(-self.bound_y, self.bound_y) * self.fy.scale).round() as i64;
        qy.clamp(-self.fy.max, self.fy.max)
    }

    /// Counts a row added to the partial sums, flushing them every [`FLUSH_ROWS`] rows.
    fn counted(&mut self) {
        self.rows += 1;
        self.pending += 1;
        if self.pending == FLUSH_ROWS {
            self.flush();
        }
    }

    /// Adds the partial sums to the totals.
    fn flush(&mut self) {
        for (t, p) in self.xtx.iter_mut().zip(self.part_xx.iter_mut()) {
            *t += i128::from(std::mem::take(p));
        }
        for (t, p) in self.xty.iter_mut().zip(self.part_xy.iter_mut()) {
            *t += i128::from(std::mem::take(p));
        }
        self.pending = 0;
    }

    /// The exact totals (partial sums flushed).
    fn totals(&mut self) -> (&[i128], &[i128]) {
        if self.pending > 0 {
            self.flush();
        }
        (&self.xtx, &self.xty)
    }

    /// `X̂ᵀX̂` (full, symmetric) in `f64`: each exact total rounded to the nearest double
    /// (relative error `≤ 2^-53`) and scaled by the grid's power of two (exact).
    pub fn gram(&mut self) -> Array2<f64> {
        let unit = self.fx.scale.powi(-2);
        let d = self.d;
        let (xtx, _) = self.totals();
        let mut g = Array2::zeros((d, d));
        let mut at = 0;
        for i in 0..d {
            for j in i..d {
                let v = xtx[at] as f64 * unit;
                g[[i, j]] = v;
                g[[j, i]] = v;
                at += 1;
            }
        }
        g
    }

    /// The upper triangle of `X̂ᵀX̂` (row-major, incl. the diagonal) released through `grid`:
    /// each exact total rounded to the grid in integer arithmetic, then
    /// [`GridRelease::add_to`].
    ///
    /// # Privacy
    /// Module docs: the exact sum's sensitivity is `B_X²` (add/remove); state the release
    /// with `B_X² + grid.slack(d(d+1)/2)` and the grid's discrete Gaussian.
    ///
    /// # Errors
    /// A total too large for the grid ([`Error::Optim`]; nothing usable is released).
    pub fn release_xtx<R: Rng + ?Sized>(
        &mut self,
        grid: &GridRelease,
        rng: &mut R,
    ) -> Result<Array1<f64>> {
        let exp = 2 * self.fx.k;
        let (xtx, _) = self.totals();
        release(xtx, exp, grid, XTX_LABEL, rng)
    }

    /// `X̂ᵀŷ` released through `grid`, as [`SufficientStats::release_xtx`].
    ///
    /// # Privacy
    /// Module docs: sensitivity `B_X·B_Y` (add/remove); state the release with
    /// `B_X·B_Y + grid.slack(d)` and the grid's discrete Gaussian.
    ///
    /// # Errors
    /// As [`SufficientStats::release_xtx`].
    pub fn release_xty<R: Rng + ?Sized>(
        &mut self,
        grid: &GridRelease,
        rng: &mut R,
    ) -> Result<Array1<f64>> {
        let exp = self.fx.k + self.fy.k;
        let (_, xty) = self.totals();
        release(xty, exp, grid, XTY_LABEL, rng)
    }
}

/// `q ← round(x·2^k)` with `‖q‖² ≤ ⌊(B·2^k)²⌋` enforced (module docs).
fn quantise_row(x: ArrayView1<'_, f64>, f: &FixedPoint, q: &mut [i32]) {
    // |v| ≤ max < 2^28 after the clamp: the cast to i32 is exact.
    let clamp = |v: f64| (v as i64).clamp(-f.max, f.max) as i32;
    for (qj, &xj) in q.iter_mut().zip(x) {
        *qj = clamp((xj * f.scale).round());
    }
    if norm_sq(q) <= f.max_sq {
        return;
    }
    // Rounding up pushed a row of norm ≈ B past the bound: truncate towards zero with a
    // relative 2^-40 margin (covering project_to_ball's few ulps), ...
    let shrink = f.scale * (1.0 - 2f64.powi(-40));
    for (qj, &xj) in q.iter_mut().zip(x) {
        *qj = clamp((xj * shrink).trunc());
    }
    // ... and, should that not suffice, step the largest coordinate towards zero: the squared
    // norm falls strictly at each step, so this ends.
    while norm_sq(q) > f.max_sq {
        let Some(top) = q.iter_mut().max_by_key(|v| v.unsigned_abs()) else {
            return;
        };
        *top -= top.signum();
    }
}

/// `Σ q_j²` exactly.
fn norm_sq(q: &[i32]) -> i128 {
    q.iter().map(|&v| i128::from(v) * i128::from(v)).sum()
}

/// Releases the exact totals `s` (in units of `2^-exp`) through `grid`: `round(s·2^-exp/γ)`
/// (half away from zero) in integers, times `γ` — exact in `f64` below `2^53` grid units —
/// then [`GridRelease::add_to`], which finds them on its grid and adds its noise.
fn release<R: Rng + ?Sized>(
    s: &[i128],
    exp: i32,
    grid: &GridRelease,
    label: &str,
    rng: &mut R,
) -> Result<Array1<f64>> {
    let gamma = grid.gamma();
    // γ = 2^g is a normal power of two (dp-optim keeps its exponent in [−1000, 960]).
    let g = ((gamma.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    // value/γ = s·2^{−exp−g}.
    let shift = exp + g;
    let too_large = |v: i128| {
        Error::Optim(dp_optim::Error::InvalidParameter {
            name: "released value",
            value: v as f64,
            reason: "too large for the noise grid",
        })
    };
    let mut out = Array1::zeros(s.len());
    for (o, &v) in out.iter_mut().zip(s) {
        let r = if shift <= 0 {
            // A finer grid than the statistic's: an exact multiplication, refused past 2^52.
            match (v, shift.unsigned_abs()) {
                (0, _) => 0,
                (_, up) if up > 52 => return Err(too_large(v)),
                (_, up) => v.checked_mul(1i128 << up).ok_or_else(|| too_large(v))?,
            }
        } else {
            round_shift(v, shift.unsigned_abs())
        };
        if r.unsigned_abs() >= 1u128 << 52 {
            return Err(too_large(v));
        }
        *o = r as f64 * gamma;
    }
    add_noise(grid, label, rng, out.view_mut())?;
    Ok(out)
}

/// The grid release's noise, with this crate's error type.
fn add_noise<R: Rng + ?Sized>(
    grid: &GridRelease,
    label: &str,
    rng: &mut R,
    out: ArrayViewMut1<'_, f64>,
) -> Result<()> {
    grid.add_to(label, rng, out).map_err(Error::from)
}

/// `v / 2^t` rounded half away from zero, exactly (`t ≥ 1`).
fn round_shift(v: i128, t: u32) -> i128 {
    if t > 128 {
        return 0;
    }
    // ⌊(m/2^(t−1) + 1)/2⌋ = ⌊m/2^t + 1/2⌋: no overflow, m ≤ 2^127.
    let m = v.unsigned_abs();
    let r = (((m >> (t - 1)) + 1) >> 1) as i128;
    if v < 0 { -r } else { r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn fixed_point_grid_puts_the_bound_in_range() {
        for b in [1.0, 0.75, 3.0, 2f64.powi(-200), 1e50, 4.0, 0.1] {
            let f = FixedPoint::new("bound_x", b).unwrap();
            let scaled = b * f.scale;
            assert!((2f64.powi(27)..2f64.powi(28)).contains(&scaled), "{b}");
            assert_eq!(f.max, scaled.floor() as i64);
            // ⌊x²⌋ against an exact check: max_sq ≤ x² < max_sq + 1 in rationals, via
            // (x·2^25)² = m²·2^(2e+50) with an integer m.
            let sq = scaled * scaled;
            assert!(
                (f.max_sq as f64 - sq).abs() <= 1.0,
                "{b}: {} vs {sq}",
                f.max_sq
            );
        }
        assert_eq!(floor_square(3.0 * 2f64.powi(26)), 9 * (1i128 << 52));
        assert_eq!(
            floor_square(2f64.powi(27) + 0.5),
            (1i128 << 54) + (1i128 << 27)
        );
        assert!(FixedPoint::new("bound_x", 1e300).is_err());
        assert!(FixedPoint::new("bound_y", 0.0).is_err());
    }

    #[test]
    fn rounding_shift_is_half_away_from_zero() {
        assert_eq!(round_shift(5, 1), 3);
        assert_eq!(round_shift(-5, 1), -3);
        assert_eq!(round_shift(4, 1), 2);
        assert_eq!(round_shift(7, 2), 2);
        assert_eq!(round_shift(-6, 2), -2);
        assert_eq!(round_shift(i128::MAX, 127), 1);
        assert_eq!(round_shift(i128::MIN + 1, 128), 0);
        assert_eq!(round_shift(i128::MIN, 128), -1);
        assert_eq!(round_shift(i128::MAX, 200), 0);
    }

    /// Rows on the bound stay within it after quantisation, exactly; the statistics equal
    /// the exact integer sums whatever the blocking.
    #[test]
    fn quantised_rows_meet_the_bound_and_sums_are_exact() {
        let f = FixedPoint::new("bound_x", 1.0).unwrap();
        let mut q = vec![0; 3];
        for x in [
            array![0.6, 0.8, 0.0],
            array![1.0 / 3f64.sqrt(), 1.0 / 3f64.sqrt(), 1.0 / 3f64.sqrt()],
            array![1.0, 0.0, 0.0],
        ] {
            quantise_row(x.view(), &f, &mut q);
            assert!(norm_sq(&q) <= f.max_sq, "{x}");
            for (&qj, &xj) in q.iter().zip(&x) {
                assert!((qj as f64 - xj * f.scale).abs() <= 2.0, "{x}");
            }
        }
        let x = array![[0.5, -0.25], [0.125, 1.0], [-3.0, 4.0]];
        let y = array![2.0, -0.5, 10.0];
        let mut all = SufficientStats::new(2, 5.0, 3.0).unwrap();
        all.add_block(x.view(), y.view(), 0).unwrap();
        let mut split = SufficientStats::new(2, 5.0, 3.0).unwrap();
        for r in [2, 1, 0] {
            let rows = ndarray::Slice::from(r..r + 1);
            split
                .add_block(
                    x.slice_axis(ndarray::Axis(0), rows),
                    y.slice_axis(ndarray::Axis(0), rows),
                    r,
                )
                .unwrap();
        }
        assert_eq!(all.totals(), split.totals());
        // These values are exact on the grid: the Gram matrix is exact too (y clipped to 3).
        assert_eq!(all.gram(), array![[9.265625, -12.0], [-12.0, 17.0625]]);
        let unit = all.fx.scale * all.fy.scale;
        let xty: Vec<f64> = all.totals().1.iter().map(|&v| v as f64 / unit).collect();
        assert_eq!(xty, [1.0 - 0.0625 - 9.0, -0.5 - 0.5 + 12.0]);
        let bad = array![[f64::NAN, 0.0]];
        assert!(matches!(
            all.add_block(bad.view(), array![0.0].view(), 7),
            Err(Error::NonFinite { row: 7, .. })
        ));
        assert!(all.add_block(x.view(), array![1.0].view(), 0).is_err());
    }

    /// The releases land near the exact statistics, on the noise grid: noise of std 2^-20 on
    /// a grid coarser than the statistics' unit, and of std 2^-76 (grid 2^-100) on a finer
    /// one (small rows under `B_X = B_Y = 2^-20`: unit 2^-94).
    #[test]
    fn releases_are_the_statistics_plus_grid_noise() {
        let x = array![[0.5, -0.25], [0.125, 1.0], [-3.0, 4.0]];
        let y = array![2.0, -0.5, 10.0];
        let mut s = SufficientStats::new(2, 5.0, 3.0).unwrap();
        s.add_block(x.view(), y.view(), 0).unwrap();
        let p = |e: i32| 2f64.powi(e);
        let mut small = SufficientStats::new(2, p(-20), p(-20)).unwrap();
        small
            .add_block(array![[p(-40), -p(-41)]].view(), array![p(-41)].view(), 0)
            .unwrap();
        let mut rng = dp_optim::seeded_rng(1);
        for (stats, std, upper, xty) in [
            (
                &mut s,
                p(-20),
                vec![9.265625, -12.0, 17.0625],
                vec![-8.0625, 11.0],
            ),
            (
                &mut small,
                p(-76),
                vec![p(-80), -p(-81), p(-82)],
                vec![p(-81), -p(-82)],
            ),
        ] {
            let grid = dp_optim::Noise::Gaussian { std }.on_grid(None).unwrap();
            let a = stats.release_xtx(&grid, &mut rng).unwrap();
            let b = stats.release_xty(&grid, &mut rng).unwrap();
            for (got, want) in a.iter().chain(&b).zip(upper.iter().chain(&xty)) {
                assert!((got - want).abs() < 8.0 * std, "{got} {want} at std {std}");
                assert_eq!((got / grid.gamma()).fract(), 0.0);
            }
        }
        // A grid so fine that the values leave its exact range: an error, not a number.
        let grid = dp_optim::Noise::Gaussian {
            std: 2f64.powi(-200),
        }
        .on_grid(None)
        .unwrap();
        assert!(s.release_xtx(&grid, &mut rng).is_err());
    }
}
