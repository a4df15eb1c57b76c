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

A fitted model's whole event tree is ``model.privacy_event_``, a :class:`ModelDpEvent` that
composes with other events (``PLDAccountant().compose(a.privacy_event_).compose(
b.privacy_event_).get_epsilon(1e-5)`` prices two models trained on the same rows). Any
event's ``to_dp_accounting()`` converts it to Google's ``dp_accounting`` objects, for a
check by an implementation dpglm did not write.

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
    ModelDpEvent,
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
    "ModelDpEvent",
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


def _ratio_down(a, b):
    """``a / b`` rounded down when inexact (a noise ratio on the safe side)."""
    import math
    from fractions import Fraction

    r = a / b
    return r if Fraction(r) <= Fraction(a) / Fraction(b) else math.nextafter(r, 0.0)


def _unsupported(what):
    from dpglm import UnsupportedError

    return UnsupportedError(f"dp_accounting has no event for {what}; this event cannot be converted")


def _dpa_release(dpa, name, params, drop_grid=False):
    """One mechanism of a model's tree (wire name and parameters) as dp_accounting's event."""
    import math

    if "grid_sigma" in params and not drop_grid:
        raise _unsupported(
            f"a grid release's rounding slack ({name}; to_dp_accounting(without_grid_slack=True) "
            "converts its continuous mechanism, a lower reference)"
        )
    if name == "gaussian":
        s = params["sensitivity"]
        return dpa.GaussianDpEvent(_ratio_down(params["sigma"], s))
    if name == "laplace":
        s = params["sensitivity"]
        return dpa.LaplaceDpEvent(_ratio_down(params["scale"], s))
    if name == "subsampled-gaussian":
        step = dpa.GaussianDpEvent(params["noise_multiplier"])
        if "n" in params:
            n = int(params["n"])
            return dpa.SampledWithoutReplacementDpEvent(n, round(params["q"] * n), step)
        return dpa.PoissonSampledDpEvent(params["q"], step)
    if name == "pure-dp":
        # Binary randomised response at epsilon is the worst case of every epsilon-DP
        # mechanism (its privacy curve dominates theirs); its noise rounded down. dp_accounting
        # analyses it under replace-one only.
        return dpa.RandomizedResponseDpEvent(
            math.nextafter(2.0 / (1.0 + math.exp(params["epsilon"])), 0.0), 2
        )
    if name == "zcdp":
        return dpa.ZCDpEvent(params["rho"])
    names = {"objpert": "objective perturbation", "amp": "approximate minima perturbation",
             "gamma-ball": "Gamma-ball noise"}
    raise _unsupported(names.get(name, name))


def _dpa_node(dpa, node, drop_grid):
    kind = node["kind"]
    if kind == "release":
        leaf = _dpa_release(dpa, node["mechanism"], node["parameters"], drop_grid)
        return leaf if node["count"] == 1 else dpa.SelfComposedDpEvent(leaf, node["count"])
    if kind == "composed":
        return dpa.ComposedDpEvent([_dpa_node(dpa, e, drop_grid) for e in node["events"]])
    if kind == "self-composed":
        return dpa.SelfComposedDpEvent(_dpa_node(dpa, node["event"], drop_grid), node["count"])
    if kind == "repeat-and-select":
        law = node["repetitions"]
        if law["law"] != "poisson":
            raise _unsupported("a repeat-and-select given by (eta, gamma) (convert Poisson only)")
        import math

        return dpa.RepeatAndSelectDpEvent(_dpa_node(dpa, node["event"], drop_grid), law["mean"], math.inf)
    raise _unsupported("shuffling" if kind == "shuffled" else kind)


def _to_dp_accounting(event, drop_grid=False):
    """``event.to_dp_accounting()``: the event as Google's ``dp_accounting`` objects."""
    import json

    try:
        from dp_accounting import dp_event as dpa
    except ImportError as e:
        raise ImportError("to_dp_accounting() needs Google's dp_accounting: pip install dp-accounting") from e
    if isinstance(event, ModelDpEvent):
        return _dpa_node(dpa, json.loads(event.to_json())["event"], drop_grid)
    args = event.__reduce__()[1]
    name = type(event).__name__
    if name == "GaussianDpEvent":
        return _dpa_release(dpa, "gaussian", {"sigma": args[0], "sensitivity": args[1]})
    if name == "LaplaceDpEvent":
        return _dpa_release(dpa, "laplace", {"scale": args[0], "sensitivity": args[1]})
    if name == "PureDpEvent":
        return _dpa_release(dpa, "pure-dp", {"epsilon": args[0]})
    if name == "ZCdpDpEvent":
        return dpa.ZCDpEvent(args[0])
    if name == "PoissonSampledDpEvent":
        return dpa.PoissonSampledDpEvent(args[0], _to_dp_accounting(args[1], drop_grid))
    if name == "SampledWithoutReplacementDpEvent":
        return dpa.SampledWithoutReplacementDpEvent(args[0], args[1], _to_dp_accounting(args[2], drop_grid))
    if name == "SelfComposedDpEvent":
        return dpa.SelfComposedDpEvent(_to_dp_accounting(args[0], drop_grid), args[1])
    if name == "ComposedDpEvent":
        return dpa.ComposedDpEvent([_to_dp_accounting(e, drop_grid) for e in args[0]])
    if name == "RepeatAndSelectDpEvent":
        import math

        if args[2] != math.inf:
            raise _unsupported("a repeat-and-select given by (eta, gamma) (convert Poisson only)")
        return dpa.RepeatAndSelectDpEvent(_to_dp_accounting(args[0], drop_grid), args[1], math.inf)
    names = {"ObjectivePerturbationDpEvent": "objective perturbation",
             "ApproximateMinimaPerturbationDpEvent": "approximate minima perturbation",
             "GammaBallDpEvent": "Gamma-ball noise"}
    raise _unsupported(names.get(name, name))
