//! The native part of the `dpglm` Python package (`dpglm._dpglm`): the privacy events,
//! accountants and functions of the [`dp_accounting`] crate, exposed with PyO3 under names a
//! user of Google's `dp_accounting` recognises (events composed into an accountant:
//! `PLDAccountant().compose(SelfComposedDpEvent(PoissonSampledDpEvent(q,
//! GaussianDpEvent(sigma)), steps)).get_epsilon(delta)`).
//!
//! Every number comes from `dp-accounting`: the bindings translate events into its
//! mechanisms, release the GIL while it computes, and raise its errors as Python exceptions
//! (the `dpglm.DPGLMError` hierarchy) carrying its message. The Python side (`python/dpglm`)
//! re-exports these as `dpglm.accounting` and ships the type stubs.

mod accountants;
mod budget;
mod errors;
mod estimators;
mod events;
mod functions;
mod rows;
mod unscaled;

use pyo3::prelude::*;

/// The extension module `dpglm._dpglm`.
#[pymodule]
fn _dpglm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<events::DpEvent>()?;
    m.add_class::<events::GaussianDpEvent>()?;
    m.add_class::<events::LaplaceDpEvent>()?;
    m.add_class::<events::PureDpEvent>()?;
    m.add_class::<events::ZCdpDpEvent>()?;
    m.add_class::<events::GammaBallDpEvent>()?;
    m.add_class::<events::ObjectivePerturbationDpEvent>()?;
    m.add_class::<events::ApproximateMinimaPerturbationDpEvent>()?;
    m.add_class::<events::PoissonSampledDpEvent>()?;
    m.add_class::<events::SampledWithoutReplacementDpEvent>()?;
    m.add_class::<events::SelfComposedDpEvent>()?;
    m.add_class::<events::ComposedDpEvent>()?;
    m.add_class::<events::RepeatAndSelectDpEvent>()?;
    m.add_class::<events::ModelDpEvent>()?;
    m.add_class::<accountants::NeighboringRelation>()?;
    m.add_class::<accountants::PrivacyAccountant>()?;
    m.add_class::<accountants::PLDAccountant>()?;
    m.add_class::<accountants::PyRdpAccountant>()?;
    m.add_class::<accountants::ZCdpAccountant>()?;
    m.add_class::<accountants::ExactAccountant>()?;
    m.add_class::<functions::Answer>()?;
    m.add_class::<functions::Calibration>()?;
    m.add_function(wrap_pyfunction!(functions::account, m)?)?;
    m.add_function(wrap_pyfunction!(functions::epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(functions::delta, m)?)?;
    m.add_function(wrap_pyfunction!(functions::gaussian_epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(functions::gaussian_delta, m)?)?;
    m.add_function(wrap_pyfunction!(functions::gaussian_sigma, m)?)?;
    m.add_function(wrap_pyfunction!(functions::zcdp_epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(functions::zcdp_delta, m)?)?;
    m.add_function(wrap_pyfunction!(functions::shuffle_epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(functions::shuffle_delta, m)?)?;
    m.add_function(wrap_pyfunction!(functions::calibrate_noise, m)?)?;
    m.add_function(wrap_pyfunction!(functions::calibrate_sampling_rate, m)?)?;
    m.add_function(wrap_pyfunction!(functions::calibrate_steps, m)?)?;
    m.add_class::<budget::Budget>()?;
    m.add_class::<estimators::Model>()?;
    m.add_function(wrap_pyfunction!(estimators::learners, m)?)?;
    m.add_function(wrap_pyfunction!(estimators::fit, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
