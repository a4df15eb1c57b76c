"""Differential-privacy accounting, from the dp-accounting Rust crate.

Events describe what was released; compose them into an accountant and ask for epsilon at a
delta (or delta at an epsilon), as with Google's ``dp_accounting``::

    from dpglm.accounting import (
        GaussianDpEvent, PLDAccountant, PoissonSampledDpEvent, SelfComposedDpEvent)

    step = PoissonSampledDpEvent(0.004, GaussianDpEvent(1.0))      # one DP-SGD step
    eps = PLDAccountant().compose(SelfComposedDpEvent(step, 10_000)).get_epsilon(1e-5)

or in one call, with the first accountant that can answer (PLD, then exact, then RDP)::

    from dpglm.accounting import account
    answer = account(SelfComposedDpEvent(step, 10_000), delta=1e-5)
    answer.epsilon, answer.accountant, answer.notes

Every number is an upper bound under the stated neighbouring relation, rounded up; a
question an accountant cannot answer raises a :class:`dpglm.DPGLMError` subclass instead of
returning a number it cannot vouch for. The GIL is released while an answer is computed.

The short names ``GaussianEvent``, ``LaplaceEvent``, ``PoissonSampledEvent``,
``SampledWithoutReplacementEvent``, ``SelfComposedEvent``, ``ComposedEvent`` and
``RepeatAndSelectEvent`` are aliases of the ``...DpEvent`` classes.
"""

from dpglm._dpglm import (
    Answer,
    ApproximateMinimaPerturbationDpEvent,
    Calibration,
    ComposedDpEvent,
    DpEvent,
    ExactAccountant,
    GammaBallDpEvent,
    GaussianDpEvent,
    LaplaceDpEvent,
    NeighboringRelation,
    ObjectivePerturbationDpEvent,
    PLDAccountant,
    PoissonSampledDpEvent,
    PrivacyAccountant,
    PureDpEvent,
    RdpAccountant,
    RepeatAndSelectDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    ZCdpAccountant,
    ZCdpDpEvent,
    account,
    calibrate_noise,
    calibrate_sampling_rate,
    calibrate_steps,
    delta,
    epsilon,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma,
    shuffle_delta,
    shuffle_epsilon,
    zcdp_delta,
    zcdp_epsilon,
)

GaussianEvent = GaussianDpEvent
LaplaceEvent = LaplaceDpEvent
PoissonSampledEvent = PoissonSampledDpEvent
SampledWithoutReplacementEvent = SampledWithoutReplacementDpEvent
SelfComposedEvent = SelfComposedDpEvent
ComposedEvent = ComposedDpEvent
RepeatAndSelectEvent = RepeatAndSelectDpEvent

__all__ = [
    "Answer",
    "ApproximateMinimaPerturbationDpEvent",
    "Calibration",
    "ComposedDpEvent",
    "ComposedEvent",
    "DpEvent",
    "ExactAccountant",
    "GammaBallDpEvent",
    "GaussianDpEvent",
    "GaussianEvent",
    "LaplaceDpEvent",
    "LaplaceEvent",
    "NeighboringRelation",
    "ObjectivePerturbationDpEvent",
    "PLDAccountant",
    "PoissonSampledDpEvent",
    "PoissonSampledEvent",
    "PrivacyAccountant",
    "PureDpEvent",
    "RdpAccountant",
    "RepeatAndSelectDpEvent",
    "RepeatAndSelectEvent",
    "SampledWithoutReplacementDpEvent",
    "SampledWithoutReplacementEvent",
    "SelfComposedDpEvent",
    "SelfComposedEvent",
    "ZCdpAccountant",
    "ZCdpDpEvent",
    "account",
    "calibrate_noise",
    "calibrate_sampling_rate",
    "calibrate_steps",
    "delta",
    "epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "shuffle_delta",
    "shuffle_epsilon",
    "zcdp_delta",
    "zcdp_epsilon",
]
