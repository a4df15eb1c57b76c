//! Row-bounding steps of the papers' recipes (shared/data/README.md, sections 1–3).

use dp_optim::numeric::{project_to_ball, scale_to_norm};
use ndarray::{Array2, Axis, Zip};

use crate::error::{Error, Result};

/// Scale every row to unit L2 norm (Redberg et al. 2023: "We normalize each row to have unit
/// L2-norm"); all-zero rows stay zero. Returns the number of all-zero rows.
pub fn normalize_rows(x: &mut Array2<f64>) -> usize {
    let mut zero = 0;
    for row in x.axis_iter_mut(Axis(0)) {
        // Scaled by the largest entry first (no overflow for entries near f64::MAX, no
        // underflow in the squares of tiny entries).
        if !scale_to_norm(row, 1.0) {
            zero += 1;
        }
    }
    zero
}

/// Project every row onto the L2 ball of `radius`: `x ← x·min(1, radius/‖x‖)`. Returns the
/// number of rows moved (those with `‖x‖ > radius`).
///
/// This is Iyengar et al.'s `clip_rows` (what its code does, whatever its docstring says) and
/// step 3 of the Cod-RNA recipe of paper 000.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `radius` is positive and finite.
pub fn project_rows_to_ball(x: &mut Array2<f64>, radius: f64) -> Result<usize> {
    check_bound("radius", radius)?;
    let mut moved = 0;
    for row in x.axis_iter_mut(Axis(0)) {
        if project_to_ball(row, radius) {
            moved += 1;
        }
    }
    Ok(moved)
}

/// Clip every entry to `[-bound, bound]` (the Frank–Wolfe variant of Iyengar et al.'s row
/// bounding). Returns the number of entries changed.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `bound` is positive and finite.
pub fn clip_entries(x: &mut Array2<f64>, bound: f64) -> Result<usize> {
    check_bound("bound", bound)?;
    let mut changed = 0;
    Zip::from(x).for_each(|v| {
        let c = v.clamp(-bound, bound);
        if c != *v {
            *v = c;
            changed += 1;
        }
    });
    Ok(changed)
}

fn check_bound(name: &'static str, value: f64) -> Result<()> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name,
            reason: format!("must be positive and finite, got {value}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn extreme_rows_keep_their_direction() {
        // Norm above f64::MAX (was a zero row), a norm whose square underflows (was 1.22).
        let mut x = array![[1.7e308, 1.7e308, 1.7e308], [2.72e-162, 0.0, 0.0]];
        assert_eq!(normalize_rows(&mut x), 0);
        let e = 1.0 / 3f64.sqrt();
        assert!(x.row(0).iter().all(|&v| (v - e).abs() < 1e-15), "{x}");
        assert_eq!(x.row(1), array![1.0, 0.0, 0.0]);
        let mut x = array![[-1.7e308, 0.0, 1e-320]];
        assert_eq!(project_rows_to_ball(&mut x, 0.5).unwrap(), 1);
        assert_eq!(x, array![[-0.5, 0.0, 0.0]]);
    }

    #[test]
    fn row_bounding() {
        let mut x = array![[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]];
        assert_eq!(project_rows_to_ball(&mut x, 1.0).unwrap(), 1);
        let expected = array![[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]];
        assert!((&x - &expected).iter().all(|d| d.abs() < 1e-15), "{x}");
        assert_eq!(normalize_rows(&mut x), 1);
        assert!((x[[1, 0]] - 0.6).abs() < 1e-15 && (x[[1, 1]] - 0.8).abs() < 1e-15);
        let mut x = array![[3.0, -4.0], [0.5, 0.0]];
        assert_eq!(clip_entries(&mut x, 1.0).unwrap(), 2);
        assert_eq!(x, array![[1.0, -1.0], [0.5, 0.0]]);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                project_rows_to_ball(&mut x, bad),
                Err(Error::InvalidParameter { .. })
            ));
            assert!(clip_entries(&mut x, bad).is_err());
        }
    }
}
