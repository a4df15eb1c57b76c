//! Overflow- and underflow-safe vector arithmetic on data rows.
//!
//! A private learner must complete on every finite input, whatever one record holds: if a
//! norm or a margin computed from a row of magnitude `1e308` (or `1e-162`) overflowed or
//! underflowed, the run would fail or change course on that one record, and its success alone
//! would reveal it. These functions compute with scaling, as LAPACK's `dnrm2` and `hypot` do:
//! the plain formula when it is safely inside the normal range (no extra cost), otherwise the
//! same formula on the vector divided by its largest absolute entry.

use ndarray::{ArrayView1, ArrayViewMut1};

/// Sums of squares inside `[SMALL, ∞)` lost no digits to underflow: a square below
/// `f64::MIN_POSITIVE` lies `SMALL/MIN_POSITIVE ≈ 1e28` times below the total, far below its
/// rounding error, even summed over `1e12` entries.
const SMALL: f64 = 1e-280;

/// `max_j |v_j|` (0 for an empty vector; NaN if an entry is NaN).
pub fn max_abs(v: ArrayView1<'_, f64>) -> f64 {
    v.iter().fold(0.0f64, |m, &a| {
        if a.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(a.abs())
        }
    })
}

/// `‖v‖₂` without spurious overflow or underflow in the squares.
///
/// For finite `v` the result is within a few ulps of the exact norm whenever that norm is at
/// most `f64::MAX`, and `+∞` only when the exact norm exceeds `f64::MAX` (e.g. three entries
/// of `1.7e308`: exact norm `2.9e308`). A NaN entry gives NaN, an infinite one `+∞`.
pub fn l2_norm(v: ArrayView1<'_, f64>) -> f64 {
    norm_from_squares(v.dot(&v), v)
}

/// [`l2_norm`] given `s`, the plain sum of the squares of `v`'s entries as some summation
/// order computed it: `√s` when `s` is finite and safely above the underflow range, else the
/// scaled computation on `v`. For a sparse row (`v` its non-zero entries), with `s` added in
/// the dense row's order, this is the dense row's [`l2_norm`] bit for bit: the scaled sum skips
/// only zero squares.
pub fn norm_from_squares(s: f64, v: ArrayView1<'_, f64>) -> f64 {
    if s.is_finite() && s >= SMALL {
        return s.sqrt();
    }
    let scale = max_abs(v);
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    scale * unit_norm(v, scale)
}

/// `‖v/scale‖₂` for `scale = max_j |v_j| > 0` finite: in `[1, √len]`, computed without
/// overflow or underflow.
fn unit_norm(v: ArrayView1<'_, f64>, scale: f64) -> f64 {
    v.iter()
        .map(|&a| {
            let t = a / scale;
            t * t
        })
        .sum::<f64>()
        .sqrt()
}

/// `⟨a, b⟩` without spurious overflow: the plain dot product when it is finite, otherwise the
/// dot product of `a/max|a|` and `b/max|b|` multiplied back, so that the result is `±∞` only
/// when the exact value exceeds `f64::MAX` in magnitude (its sign is then right), never NaN for
/// finite inputs.
///
/// # Panics
/// If `a` and `b` differ in length.
pub fn dot(a: ArrayView1<'_, f64>, b: ArrayView1<'_, f64>) -> f64 {
    let z = a.dot(&b);
    if z.is_finite() {
        return z;
    }
    scaled_dot(a, b).unwrap_or(z)
}

/// The fallback of [`dot`]: `None` when an entry is not finite.
fn scaled_dot(a: ArrayView1<'_, f64>, b: ArrayView1<'_, f64>) -> Option<f64> {
    let (sa, sb) = (max_abs(a), max_abs(b));
    if !(sa.is_finite() && sb.is_finite()) {
        return None;
    }
    if sa == 0.0 || sb == 0.0 {
        return Some(0.0);
    }
    // Each term is at most 1 in magnitude: the sum is at most len, never overflows.
    let u: f64 = a.iter().zip(&b).map(|(&x, &y)| (x / sa) * (y / sb)).sum();
    // (u·sa)·sb saturates to ±∞ with the sign of u when the exact value is beyond f64::MAX.
    Some(u * sa * sb)
}

/// Scales `v` in place to norm `radius` if `‖v‖ > radius` (projection onto the L2 ball);
/// returns whether it moved. Works for any finite row, including rows whose norm overflows
/// (`‖v‖ > f64::MAX`) and rows whose squares underflow: the row is first divided by its
/// largest entry, so its direction is kept to rounding. `radius` must be finite and `> 0`.
pub fn project_to_ball(v: ArrayViewMut1<'_, f64>, radius: f64) -> bool {
    if l2_norm(v.view()) > radius {
        scale_to_norm(v, radius);
        true
    } else {
        false
    }
}

/// Scales `v` in place to norm `radius` (a zero or non-finite row is left as it is); returns
/// whether it was scaled. The result's norm is `radius` to a few ulps for any finite non-zero
/// row: `v/‖v‖` with the scaled norm, or, when `‖v‖` exceeds `f64::MAX`, `(v/max|v|)`
/// divided by its own norm (in `[1, √len]`).
pub fn scale_to_norm(mut v: ArrayViewMut1<'_, f64>, radius: f64) -> bool {
    let norm = l2_norm(v.view());
    if norm.is_finite() && norm > 0.0 {
        // |v_j|/‖v‖ ≤ 1: no overflow, even for a subnormal norm.
        v /= norm;
        v *= radius;
        return true;
    }
    let scale = max_abs(v.view());
    if scale == 0.0 || !scale.is_finite() {
        return false;
    }
    // ‖v‖ > f64::MAX: v/‖v‖ would be 0; go through v/max|v|, of norm in [1, √len].
    v.mapv_inplace(|a| a / scale);
    let n = unit_norm(v.view(), 1.0);
    v.mapv_inplace(|a| (a / n) * radius);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, array};

    #[test]
    fn norm_is_exact_on_representable_cases() {
        assert_eq!(l2_norm(array![3.0, 4.0].view()), 5.0);
        assert_eq!(l2_norm(array![0.0, 0.0].view()), 0.0);
        assert_eq!(l2_norm(array![-2.0].view()), 2.0);
        // Scaled path, exact by powers of two: 3·2^-600, 4·2^-600 and 3·2^600, 4·2^600.
        let tiny = 2f64.powi(-600);
        assert_eq!(l2_norm(array![3.0 * tiny, 4.0 * tiny].view()), 5.0 * tiny);
        let big = 2f64.powi(600);
        assert_eq!(l2_norm(array![3.0 * big, -4.0 * big].view()), 5.0 * big);
        assert_eq!(l2_norm(array![f64::MAX, 0.0].view()), f64::MAX);
        assert_eq!(
            l2_norm(array![f64::MIN_POSITIVE, 0.0].view()),
            f64::MIN_POSITIVE
        );
        // A subnormal entry alone: exact (the plain sum of squares would be 0).
        assert_eq!(l2_norm(array![5e-324, 0.0].view()), 5e-324);
    }

    #[test]
    fn norm_neither_overflows_nor_underflows() {
        // 1e308·√d: the squares overflow, the norm does not (d = 3: 1e308·√3 > MAX → ∞ only
        // because the exact value is beyond MAX; d = 1, 2 below it).
        let v = Array1::from_elem(1, 1e308);
        assert_eq!(l2_norm(v.view()), 1e308);
        let v = array![1e308, 1e307];
        let exact = 1e308 * (1.01f64).sqrt();
        assert!((l2_norm(v.view()) / exact - 1.0).abs() < 4.0 * f64::EPSILON);
        assert_eq!(
            l2_norm(array![1.7e308, 1.7e308, 1.7e308].view()),
            f64::INFINITY
        );
        let v = Array1::from_elem(9, 1e300);
        assert!((l2_norm(v.view()) / 3e300 - 1.0).abs() < 4.0 * f64::EPSILON);
        // 1e-300: the squares underflow to 0, the norm does not.
        let v = Array1::from_elem(4, 1e-300);
        assert!((l2_norm(v.view()) / 2e-300 - 1.0).abs() < 4.0 * f64::EPSILON);
        // The row: 2.72e-162 has norm 2.72e-162, not 2.2e-162 (sqrt of a subnormal).
        let v = array![2.72e-162, 0.0, 0.0];
        assert_eq!(l2_norm(v.view()), 2.72e-162);
        let v = array![3e-200, 4e-200];
        assert!((l2_norm(v.view()) / 5e-200 - 1.0).abs() < 4.0 * f64::EPSILON);
        assert!(l2_norm(array![f64::NAN, 1.0].view()).is_nan());
        assert_eq!(l2_norm(array![f64::INFINITY, 1.0].view()), f64::INFINITY);
    }

    #[test]
    fn dot_falls_back_to_scaling() {
        assert_eq!(dot(array![1.0, 2.0].view(), array![3.0, 4.0].view()), 11.0);
        // Partial sums overflow (1e308 + 1e308) although the exact value is 1e308.
        let a = array![1e308, 1e308, -1e308];
        let b = array![1.0, 1.0, 1.0];
        assert_eq!(a.dot(&b), f64::INFINITY);
        assert!((dot(a.view(), b.view()) / 1e308 - 1.0).abs() < 4.0 * f64::EPSILON);
        // inf − inf in the plain sum is NaN; the exact value is 0.
        let a = array![1.7e308, -1.7e308];
        let b = array![2.0, 2.0];
        assert!(f64::is_nan(a.dot(&b)));
        assert_eq!(dot(a.view(), b.view()), 0.0);
        // Beyond f64::MAX: ±∞ with the right sign.
        assert_eq!(
            dot(array![1.7e308, 1.7e308].view(), array![-1.0, -1.0].view()),
            f64::NEG_INFINITY
        );
        assert!(dot(array![f64::NAN].view(), array![1.0].view()).is_nan());
    }

    #[test]
    fn projection_keeps_direction_of_extreme_rows() {
        let mut v = array![1.7e308, 1.7e308, 1.7e308];
        assert!(project_to_ball(v.view_mut(), 1.0));
        let e = 1.0 / 3f64.sqrt();
        assert!(v.iter().all(|&a| (a - e).abs() < 4.0 * f64::EPSILON), "{v}");
        let mut v = array![-1.7e308, 0.0, 1e-320];
        assert!(project_to_ball(v.view_mut(), 2.0));
        assert_eq!(v[0], -2.0);
        assert_eq!(v[1], 0.0);
        let mut v = array![2.72e-162, 0.0, 0.0];
        assert!(scale_to_norm(v.view_mut(), 1.0));
        assert_eq!(v, array![1.0, 0.0, 0.0]);
        let mut v = array![0.3, 0.4];
        assert!(!project_to_ball(v.view_mut(), 1.0));
        assert_eq!(v, array![0.3, 0.4]);
        let mut z = array![0.0, 0.0];
        assert!(!scale_to_norm(z.view_mut(), 1.0));
        assert_eq!(z, array![0.0, 0.0]);
    }
}
