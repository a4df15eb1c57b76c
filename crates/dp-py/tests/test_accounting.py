"""dpglm.accounting against the Rust crates (golden.json, written by make_golden.py from the
`dpglm` CLI), its errors, pickling, and the GIL released while it computes."""

import json
import math
import pathlib
import pickle
import subprocess
import sys
import threading

import pytest

import dpglm
from dpglm import accounting as acc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from cases import CALIBRATIONS, CASES, SHUFFLES  # noqa: E402

GOLDEN = json.loads((pathlib.Path(__file__).parent / "golden.json").read_text())

# The CLI and the wheel run the same Rust code; the tolerance only absorbs the last bits that
# may move between optimisation levels (a release CLI against a wheel built otherwise).
REL = 1e-12


def same(a, b):
    return math.isclose(a, b, rel_tol=REL, abs_tol=0.0)


ACCOUNTANTS = {
    "pld": acc.PLDAccountant,
    "rdp": acc.RdpAccountant,
    "zcdp": acc.ZCdpAccountant,
    "exact": acc.ExactAccountant,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_account_equals_the_cli(name):
    _, make, accountant, relation, (what, value) = CASES[name]
    want = GOLDEN["account"][name]
    kwargs = {what: value, "accountant": accountant, "neighboring_relation": relation}
    got = acc.account(make(), **kwargs)
    assert got.accountant == want["accountant"]
    assert str(got.neighboring_relation).endswith(
        {"add-remove": "ADD_OR_REMOVE_ONE", "replace-one": "REPLACE_ONE"}[want["neighbouring"]]
    )
    assert same(got.epsilon, want["epsilon"]), (got.epsilon, want["epsilon"])
    assert same(got.delta, want["delta"]), (got.delta, want["delta"])
    # The same number through an accountant object, dp_accounting style.
    cls = ACCOUNTANTS[want["accountant"]]
    a = cls(neighboring_relation=want["neighbouring"]).compose(make())
    answer = a.get_epsilon(value) if what == "delta" else a.get_delta(value)
    assert same(answer, want["epsilon" if what == "delta" else "delta"])


def test_dpsgd_reference_value():
    # The DP-SGD case (q = 0.004, sigma = 1, T = 1e4, delta = 1e-5): the PLD answer is
    # between its own optimistic estimate and the RDP bound.
    a = acc.PLDAccountant().compose(CASES["dpsgd-pld"][1]())
    eps = a.get_epsilon(1e-5)
    lower = a.get_epsilon_lower(1e-5)
    rdp = acc.RdpAccountant().compose(CASES["dpsgd-rdp"][1]()).get_epsilon(1e-5)
    assert lower is not None and lower <= eps < rdp
    assert same(eps, GOLDEN["account"]["dpsgd-pld"]["epsilon"])
    notes = a.notes(1e-5)
    assert notes["discretisation"] > 0 and notes["epsilon_error_estimate"] >= 0


@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_calibration_equals_the_cli(name):
    _, make, accountant, target, delta = CALIBRATIONS[name]
    want = GOLDEN["calibrate"][name]
    got = acc.calibrate_noise(make, target, delta, accountant=accountant)
    assert same(got.value, want["sigma"]) and same(got.epsilon, want["epsilon"])
    assert got.epsilon <= target


@pytest.mark.parametrize("name", sorted(SHUFFLES))
def test_shuffling_equals_the_cli(name):
    _, eps0, n, delta0, delta = SHUFFLES[name]
    want = GOLDEN["shuffle"][name]
    eps, total_delta, method = acc.shuffle_epsilon(eps0, n, delta, delta0)
    assert same(eps, want["epsilon"]) and same(total_delta, want["delta"])
    assert method == want["method"]


def test_closed_forms_agree_with_the_accountants():
    e = acc.gaussian_epsilon(2.0, 1e-6, sensitivity=0.5)
    ex = acc.ExactAccountant().compose(acc.GaussianDpEvent(2.0, 0.5)).get_epsilon(1e-6)
    assert same(e, ex)
    # sigma(epsilon, delta) meets delta at epsilon (each function rounds its own answer up,
    # so epsilon(sigma) comes back within rounding of the target, not necessarily below).
    s = acc.gaussian_sigma(1.0, 1e-5)
    assert acc.gaussian_delta(s, 1.0) <= 1e-5
    assert math.isclose(acc.gaussian_epsilon(s, 1e-5), 1.0, rel_tol=1e-9)
    # A rho-zCDP event in the zCDP accountant is the closed form.
    z = acc.ZCdpAccountant().compose(acc.ZCdpDpEvent(0.1), 3).get_epsilon(1e-5)
    assert same(z, acc.zcdp_epsilon(0.3, 1e-5))
    # Steps and sampling rate calibrations land on the feasible side.
    step = acc.PoissonSampledDpEvent(0.01, acc.GaussianDpEvent(1.0))
    t = acc.calibrate_steps(step, 2.0, 1e-5)
    assert t.epsilon <= 2.0 and t.value >= 1
    over = acc.PLDAccountant().compose(step, int(t.value) + 1).get_epsilon(1e-5)
    assert over > 2.0 * (1 - 1e-2)  # one more step reaches the target (up to grid jitter)
    q = acc.calibrate_sampling_rate(
        lambda q: acc.SelfComposedDpEvent(acc.PoissonSampledDpEvent(q, acc.GaussianDpEvent(1.0)), 1000),
        1.0, 1e-5)
    assert 0 < q.value <= 1 and q.epsilon <= 1.0


def test_repeat_and_select_costs_more_than_one_run():
    base = acc.SelfComposedDpEvent(acc.PoissonSampledDpEvent(0.01, acc.GaussianDpEvent(1.0)), 500)
    one = acc.RdpAccountant().compose(base).get_epsilon(1e-5)
    tuned = acc.RdpAccountant().compose(acc.RepeatAndSelectDpEvent(base, 10.0)).get_epsilon(1e-5)
    geometric = acc.RdpAccountant().compose(
        acc.RepeatAndSelectDpEvent(base, None, 1.0, 0.1)).get_epsilon(1e-5)
    assert one < tuned and one < geometric
    assert same(acc.epsilon(acc.RepeatAndSelectDpEvent(base, 10.0), 1e-5), tuned)
    # Only alone in an RDP accountant.
    with pytest.raises(dpglm.UnsupportedError):
        acc.PLDAccountant().compose(acc.RepeatAndSelectDpEvent(base, 10.0))
    with pytest.raises(dpglm.UnsupportedError):
        acc.RdpAccountant().compose(base).compose(acc.RepeatAndSelectDpEvent(base, 10.0))
    orders, curve = acc.RdpAccountant().compose(acc.RepeatAndSelectDpEvent(base, 10.0)).get_rdp_curve()
    assert len(orders) == len(curve) and (curve > 0).all()


def test_errors_are_exceptions_with_the_rust_message():
    with pytest.raises(dpglm.InvalidParameterError, match="sigma"):
        acc.GaussianDpEvent(-1.0)
    with pytest.raises(dpglm.InvalidParameterError, match="q"):
        acc.PoissonSampledDpEvent(1.5, acc.GaussianDpEvent(1.0))
    with pytest.raises(dpglm.InvalidParameterError, match="delta"):
        acc.PLDAccountant().compose(acc.GaussianDpEvent(1.0)).get_epsilon(0.0)
    with pytest.raises(dpglm.InvalidParameterError, match="lambda"):
        acc.ObjectivePerturbationDpEvent(1.0, 0.5, 0.5, 1.0)
    with pytest.raises(dpglm.InvalidParameterError, match="eps0"):
        acc.shuffle_epsilon(-1.0, 100, 1e-6)
    # Poisson sampling is analysed under add/remove only; the accountant stays unchanged.
    a = acc.PLDAccountant(neighboring_relation=acc.NeighboringRelation.REPLACE_ONE)
    step = acc.PoissonSampledDpEvent(0.01, acc.GaussianDpEvent(1.0))
    assert not a.supports(step)
    with pytest.raises(dpglm.UnsupportedError, match="replace-one"):
        a.compose(step)
    assert a.events == []
    # A nesting dp-accounting has no analysis for.
    with pytest.raises(dpglm.UnsupportedError):
        acc.PoissonSampledDpEvent(0.1, acc.LaplaceDpEvent(1.0))
    # The zCDP accountant has no analysis of objective perturbation; the default chain
    # reports why PLD and exact could not answer sampling without replacement.
    with pytest.raises(dpglm.UnsupportedError, match="zcdp"):
        acc.ZCdpAccountant().compose(acc.ObjectivePerturbationDpEvent(2.0, 1.0, 0.25, 1.0))
    swr = acc.SampledWithoutReplacementDpEvent(1000, 10, acc.GaussianDpEvent(1.0))
    answer = acc.account(swr, delta=1e-5)
    assert answer.accountant == "rdp" and [k for k, _ in answer.fallback] == ["pld", "exact"]
    with pytest.raises(dpglm.InvalidParameterError):
        acc.account(swr)
    with pytest.raises(dpglm.InvalidParameterError, match="unknown accountant"):
        acc.epsilon(swr, 1e-5, accountant="moments")
    with pytest.raises(TypeError):
        acc.PLDAccountant().compose("not an event")
    with pytest.raises(dpglm.CalibrationError, match="above the range"):
        acc.calibrate_noise(lambda s: acc.LaplaceDpEvent(s), 1e7, 1e-5)
    # An error raised by the event factory is raised as itself.
    def broken(s):
        raise KeyError("factory")
    with pytest.raises(KeyError, match="factory"):
        acc.calibrate_noise(broken, 1.0, 1e-5)
    assert issubclass(dpglm.UnsupportedError, dpglm.DPGLMError)
    assert issubclass(dpglm.DPGLMError, Exception)


def test_pickling_round_trips_events_and_accountants():
    ev = CASES["dpsgd-pld"][1]()
    assert pickle.loads(pickle.dumps(ev)) == ev
    for cls in ACCOUNTANTS.values():
        a = cls(neighboring_relation="add-remove").compose(acc.GaussianDpEvent(3.0), 4)
        b = pickle.loads(pickle.dumps(a))
        assert type(b) is cls and b.events == a.events
        assert b.get_epsilon(1e-5) == a.get_epsilon(1e-5)
    p = acc.PLDAccountant(value_discretization_interval=1e-3, epsilon_error=None).compose(ev)
    q = pickle.loads(pickle.dumps(p))
    assert q.get_epsilon(1e-5) == p.get_epsilon(1e-5)
    r = acc.RdpAccountant(orders=[2.0, 4.0, 8.0, 16.0, 32.0]).compose(ev)
    assert pickle.loads(pickle.dumps(r)).get_epsilon(1e-5) == r.get_epsilon(1e-5)


def test_the_gil_is_released_while_accounting():
    # With a switch interval of 100 s the main thread runs only when the worker lets go of
    # the GIL. The worker's PLD computation (a fine fixed grid, ~0.1-1 s) holds it throughout
    # unless the binding releases it; the main thread counts its turns while the worker is
    # inside Rust. It fails if the GIL is held (no turn can happen), and if released it fails
    # only if the OS does not schedule the main thread once during the whole computation (no
    # seed: this is a scheduling argument, not a random one).
    heavy = acc.PLDAccountant(value_discretization_interval=2e-5, epsilon_error=None).compose(
        CASES["dpsgd-pld"][1]())
    started, done = threading.Event(), threading.Event()
    result = []

    def worker():
        started.set()
        result.append(heavy.get_epsilon(1e-5))
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        turns = 0
        while not done.is_set():
            turns += 1
            done.wait(0.001)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert turns >= 1
    assert result and result[0] > 0


def test_import_is_light():
    code = (
        "import sys, dpglm, dpglm.accounting;"
        "heavy = [m for m in ('numpy', 'sklearn', 'pandas') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_names_a_dp_accounting_user_knows():
    assert acc.GaussianEvent is acc.GaussianDpEvent
    assert acc.SelfComposedEvent is acc.SelfComposedDpEvent
    assert acc.PoissonSampledEvent is acc.PoissonSampledDpEvent
    a = acc.PLDAccountant()
    assert a.compose(acc.GaussianEvent(1.0)) is a  # compose chains
    assert a.name == "pld" and a.neighboring_relation == acc.NeighboringRelation.ADD_OR_REMOVE_ONE
    assert a.mechanisms() == [("gaussian", [("sigma", 1.0), ("sensitivity", 1.0)], 1)]
    # Composing step by step (the dp_accounting idiom) merges repeats into one part and gives
    # the same answer as composing the count at once.
    step = acc.PoissonSampledDpEvent(0.004, acc.GaussianDpEvent(1.0))
    for cls in (acc.PLDAccountant, acc.RdpAccountant):
        loop = cls()
        for _ in range(100):
            loop.compose(step)
        assert loop.mechanisms() == [
            ("subsampled-gaussian", [("noise_multiplier", 1.0), ("q", 0.004)], 100)]
        assert loop.get_epsilon(1e-5) == cls().compose(step, 100).get_epsilon(1e-5)
    assert "GaussianDpEvent(1.0" in repr(acc.GaussianDpEvent(1.0))
