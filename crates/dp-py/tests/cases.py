"""Accounting cases shared by make_golden.py (which asks the CLI) and test_accounting.py
(which asks dpglm.accounting): the same question, as `dpglm account` flags and as events."""

from dpglm.accounting import (
    ApproximateMinimaPerturbationDpEvent,
    GammaBallDpEvent,
    GaussianDpEvent,
    LaplaceDpEvent,
    ObjectivePerturbationDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
)

DPSGD = ["--mechanism", "subsampled-gaussian", "--sigma", "1", "--q", "0.004", "--steps", "10000"]


def dpsgd():
    return SelfComposedDpEvent(PoissonSampledDpEvent(0.004, GaussianDpEvent(1.0)), 10_000)


# id -> (CLI flags after `dpglm account`, event factory, accountant or None, relation or None,
#        query: ("delta", value) asks epsilon, ("epsilon", value) asks delta)
CASES = {
    "dpsgd-default": (DPSGD, dpsgd, None, None, ("delta", 1e-5)),
    "dpsgd-pld": (DPSGD + ["--accountant", "pld"], dpsgd, "pld", None, ("delta", 1e-5)),
    "dpsgd-rdp": (DPSGD + ["--accountant", "rdp"], dpsgd, "rdp", None, ("delta", 1e-5)),
    "dpsgd-delta-pld": (DPSGD + ["--accountant", "pld"], dpsgd, "pld", None, ("epsilon", 2.0)),
    "dpsgd-delta-rdp": (DPSGD + ["--accountant", "rdp"], dpsgd, "rdp", None, ("epsilon", 2.0)),
    "gaussian-exact": (
        ["--mechanism", "gaussian", "--sigma", "2", "--sensitivity", "0.5", "--steps", "5",
         "--accountant", "exact"],
        lambda: SelfComposedDpEvent(GaussianDpEvent(2.0, 0.5), 5),
        "exact", None, ("delta", 1e-6)),
    "gaussian-zcdp": (
        ["--mechanism", "gaussian", "--sigma", "3", "--steps", "20", "--accountant", "zcdp"],
        lambda: SelfComposedDpEvent(GaussianDpEvent(3.0), 20),
        "zcdp", None, ("delta", 1e-5)),
    "gaussian-replace-one-pld": (
        ["--mechanism", "gaussian", "--sigma", "4", "--steps", "3", "--accountant", "pld",
         "--neighbouring", "replace-one"],
        lambda: SelfComposedDpEvent(GaussianDpEvent(4.0), 3),
        "pld", "replace-one", ("delta", 1e-5)),
    "laplace-pld": (
        ["--mechanism", "laplace", "--scale", "2", "--steps", "10", "--accountant", "pld"],
        lambda: SelfComposedDpEvent(LaplaceDpEvent(2.0), 10),
        "pld", None, ("delta", 1e-5)),
    "without-replacement-default": (
        ["--mechanism", "subsampled-gaussian", "--sampling", "without-replacement", "--sigma",
         "1.1", "--batch-size", "100", "--n", "10000", "--steps", "1000"],
        lambda: SelfComposedDpEvent(
            SampledWithoutReplacementDpEvent(10_000, 100, GaussianDpEvent(1.1)), 1000),
        None, None, ("delta", 1e-5)),
    "gamma-ball-pld": (
        ["--mechanism", "gamma-ball", "--scale", "5", "--q", "0.01", "--dim", "10", "--steps",
         "100", "--accountant", "pld"],
        lambda: SelfComposedDpEvent(PoissonSampledDpEvent(0.01, GammaBallDpEvent(5.0, 10)), 100),
        "pld", None, ("delta", 1e-5)),
    "objpert-default": (
        ["--mechanism", "objpert", "--sigma", "2", "--lambda", "1", "--beta", "0.25",
         "--lipschitz", "1"],
        lambda: ObjectivePerturbationDpEvent(2.0, 1.0, 0.25, 1.0),
        None, None, ("delta", 1e-5)),
    "amp-rdp": (
        ["--mechanism", "amp", "--sigma", "2", "--lambda", "1", "--beta", "0.25",
         "--lipschitz", "1", "--tau", "0.01", "--sigma-out", "0.1", "--accountant", "rdp"],
        lambda: ApproximateMinimaPerturbationDpEvent(2.0, 1.0, 0.25, 1.0, 0.01, 0.1),
        "rdp", None, ("delta", 1e-5)),
}

# `dpglm calibrate` cases: id -> (CLI flags after `dpglm calibrate`, noise -> event,
#                                 accountant, target epsilon, delta)
CALIBRATIONS = {
    "dpsgd-sigma-pld": (
        ["--mechanism", "subsampled-gaussian", "--q", "0.004", "--steps", "10000",
         "--target-epsilon", "1", "--delta", "1e-5", "--accountant", "pld"],
        lambda s: SelfComposedDpEvent(PoissonSampledDpEvent(0.004, GaussianDpEvent(s)), 10_000),
        "pld", 1.0, 1e-5),
    "gaussian-sigma-rdp": (
        ["--mechanism", "gaussian", "--steps", "50", "--target-epsilon", "2", "--delta", "1e-6",
         "--accountant", "rdp"],
        lambda s: SelfComposedDpEvent(GaussianDpEvent(s), 50),
        "rdp", 2.0, 1e-6),
}

# `dpglm account --mechanism shuffling` cases: id -> (flags, eps0, n, delta0, delta)
SHUFFLES = {
    "shuffle-1e4": (["--eps0", "1", "--n", "10000", "--delta", "1e-6"], 1.0, 10_000, 0.0, 1e-6),
    "shuffle-delta0": (
        ["--eps0", "2", "--n", "100000", "--delta0", "1e-9", "--delta", "1e-6"],
        2.0, 100_000, 1e-9, 1e-6),
}
