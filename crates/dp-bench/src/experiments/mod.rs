//! The experiment registry: one module per paper, one type per figure or table.

mod paper001;

use crate::experiment::Experiment;

/// Every experiment, in the order the runner executes them and the index lists them.
pub fn registry() -> Vec<Box<dyn Experiment>> {
    vec![
        Box::new(paper001::Fig1Profiles),
        Box::new(paper001::Fig3RdpCurves),
        Box::new(paper001::Fig4Composition),
        Box::new(paper001::Fig5ObjPertVsDpSgd),
    ]
}
