//! The experiment registry: one module per paper, one type per figure or table.

mod paper000;
mod paper001;
mod paper001_table2;
mod paper002;
mod paper003;
mod paper003_selection;
mod paper004;
mod synthetic;

use crate::experiment::Experiment;

/// Every experiment, in the order the runner executes them and the index lists them.
pub fn registry() -> Vec<Box<dyn Experiment>> {
    vec![
        Box::new(paper000::Fig2Dimension),
        Box::new(paper000::AppD2ClippingBias),
        Box::new(paper001::Fig1Profiles),
        Box::new(paper001::Fig3RdpCurves),
        Box::new(paper001::Fig4Composition),
        Box::new(paper001::Fig5ObjPertVsDpSgd),
        Box::new(paper001_table2::Table2Accuracy),
        Box::new(paper002::ExcessRisk),
        Box::new(paper003::NoisyGdVsJl),
        Box::new(paper003_selection::GridSearchVsOracle),
        Box::new(paper004::ErrorVsSteps),
    ]
}
