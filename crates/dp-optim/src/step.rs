//! Step-size schedules and iterate averaging, shared by the first-order methods.

use ndarray::{Array1, ArrayView1};

use crate::error::{Result, ensure, positive};

/// A step-size schedule `η_t`, `t = 0, 1, …`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepSize {
    /// `η_t = η`.
    Constant(f64),
    /// `η_t = η/√(t+1)`.
    InvSqrt(f64),
    /// `η_t = η/(t+1)`.
    Inv(f64),
}

impl StepSize {
    /// The base step `η`.
    pub fn base(&self) -> f64 {
        match *self {
            StepSize::Constant(e) | StepSize::InvSqrt(e) | StepSize::Inv(e) => e,
        }
    }

    /// `η_t`.
    pub fn at(&self, t: usize) -> f64 {
        let k = t as f64 + 1.0;
        match *self {
            StepSize::Constant(e) => e,
            StepSize::InvSqrt(e) => e / k.sqrt(),
            StepSize::Inv(e) => e / k,
        }
    }

    /// Checks that `η` is finite and positive.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `step_size`.
    pub fn check(&self) -> Result<()> {
        positive("step_size", self.base()).map(drop)
    }
}

/// Which point a fixed-horizon method returns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Averaging {
    /// The last iterate.
    #[default]
    Last,
    /// The uniform average of the iterates `x_1, …, x_T` produced by the `T` steps.
    Uniform,
    /// The average of the last `⌈fraction · T⌉` iterates (`fraction ∈ (0, 1]`; e.g. 0.5 for
    /// "the last half", as in paper 002).
    Tail(f64),
}

impl Averaging {
    /// Checks the tail fraction.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] when a tail fraction is outside `(0, 1]`.
    pub fn check(&self) -> Result<()> {
        if let Averaging::Tail(f) = *self {
            ensure(f > 0.0 && f <= 1.0, "tail_fraction", f, "must be in (0, 1]")?;
        }
        Ok(())
    }
}

/// Running average of the iterates `x_{t+1}` produced by steps `t ≥ start`.
#[derive(Debug)]
pub(crate) struct Averager {
    start: Option<usize>,
    sum: Array1<f64>,
    count: usize,
}

impl Averager {
    /// An averager for a run of `total` steps in dimension `dim` (mode already checked).
    pub(crate) fn new(mode: Averaging, total: usize, dim: usize) -> Self {
        let start = match mode {
            Averaging::Last => None,
            Averaging::Uniform => Some(0),
            Averaging::Tail(f) => {
                let k = ((f * total as f64).ceil() as usize).clamp(1, total.max(1));
                Some(total.saturating_sub(k))
            }
        };
        Self {
            start,
            sum: Array1::zeros(if start.is_some() { dim } else { 0 }),
            count: 0,
        }
    }

    /// Records the iterate produced by step `t`.
    pub(crate) fn push(&mut self, t: usize, x: ArrayView1<'_, f64>) {
        if let Some(s) = self.start
            && t >= s
        {
            self.sum += &x;
            self.count += 1;
        }
    }

    /// The averaged point, or `last` when not averaging or when no iterate of the window was
    /// produced (a run stopped before its window began).
    pub(crate) fn finish(self, last: Array1<f64>) -> Array1<f64> {
        if self.count == 0 {
            last
        } else {
            self.sum / self.count as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use ndarray::array;

    #[test]
    fn schedules() {
        assert_eq!(StepSize::Constant(0.5).at(9), 0.5);
        assert_eq!(StepSize::InvSqrt(0.5).at(3), 0.25);
        assert_eq!(StepSize::Inv(0.5).at(4), 0.1);
        assert!(StepSize::Inv(0.5).check().is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                StepSize::Constant(bad).check(),
                Err(Error::InvalidParameter {
                    name: "step_size",
                    ..
                })
            ));
        }
        assert!(Averaging::Tail(0.0).check().is_err());
        assert!(Averaging::Tail(f64::NAN).check().is_err());
        assert!(Averaging::Tail(1.0).check().is_ok());
    }

    #[test]
    fn averages() {
        let xs = [array![1.0], array![2.0], array![3.0], array![4.0]];
        let run = |mode| {
            let mut a = Averager::new(mode, 4, 1);
            for (t, x) in xs.iter().enumerate() {
                a.push(t, x.view());
            }
            a.finish(xs[3].clone())[0]
        };
        assert_eq!(run(Averaging::Last), 4.0);
        assert_eq!(run(Averaging::Uniform), 2.5);
        assert_eq!(run(Averaging::Tail(0.5)), 3.5);
        assert_eq!(run(Averaging::Tail(0.1)), 4.0);
        // A run stopped before the window began returns the last iterate.
        let mut a = Averager::new(Averaging::Tail(0.5), 4, 1);
        a.push(0, xs[0].view());
        assert_eq!(a.finish(xs[0].clone())[0], 1.0);
    }
}
