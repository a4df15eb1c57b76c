"""dpglm.Budget: one privacy budget across fits on the same rows (issue 32, section 3).

Fits use a fixed random_state, so outcomes are deterministic.
"""

import copy
import json
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:features not scaled")

import dpglm


def classification(n=1500, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (x @ np.arange(1, d + 1, dtype=float) > 0).astype(int)
    return x, y


def half(budget, **kw):
    return dpglm.LogisticRegression(
        epsilon=0.5, delta=1e-6, algorithm="dp-gd", random_state=3, budget=budget, **kw
    )


def test_the_third_of_three_half_epsilon_fits_under_one_is_refused():
    x, y = classification()
    budget = dpglm.Budget(1.0, 1e-5)
    for i in range(2):
        half(budget).fit(x, y)
        assert len(budget.fits()) == i + 1
    left = budget.left(1e-6)
    assert 0.0 < left < 0.5
    with pytest.raises(dpglm.BudgetExceededError, match=f"epsilon = {left!r} is left"):
        half(budget).fit(x, y)
    assert len(budget.fits()) == 2
    # What is left can be spent; the three fits compose (PLD) to less than the sum of their
    # targets, so some is left after it, and the three together stay within the budget.
    dpglm.LogisticRegression(epsilon=left, delta=1e-6, algorithm="dp-gd", random_state=3,
                             budget=budget).fit(x, y)
    assert len(budget.fits()) == 3
    assert 0.0 <= budget.left(1e-6) < left
    assert 0.5 < budget.spent() <= 1.0


def test_a_refused_fit_fits_nothing():
    budget = dpglm.Budget(0.4, 1e-5)
    est = half(budget)
    with pytest.raises(dpglm.BudgetExceededError, match="asks for epsilon = 0.5"):
        est.fit(*classification(n=50))
    assert not hasattr(est, "coef_") and budget.fits() == []


def test_copies_and_clones_share_the_budget():
    budget = dpglm.Budget(1.0, 1e-5)
    assert copy.deepcopy(budget) is budget
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone

    est = half(budget)
    assert clone(est).budget is budget
    x, y = classification()
    clone(est).fit(x, y)
    assert len(budget.fits()) == 1


def test_a_file_budget_is_shared_with_the_cli_and_survives_the_process(tmp_path):
    path = tmp_path / "budget.json"
    x, y = classification()
    half(dpglm.Budget(1.0, 1e-5, path=str(path))).fit(x, y)
    # Another process opens the same file and is charged against the first fit.
    code = (
        "import dpglm, numpy as np\n"
        f"b = dpglm.Budget(1.0, 1e-5, path={str(path)!r})\n"
        "print(len(b.fits()), b.left(1e-6))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    fits, left = out.stdout.split()
    assert int(fits) == 1 and 0.5 < float(left) < 1.0
    saved = json.loads(path.read_text())
    assert saved["format"] == "dpglm-budget/1"
    assert saved["fits"][0]["label"] == "dp-gd (Python)"
    assert set(saved["fits"][0]) == {"label", "epsilon", "delta", "event"}
    with pytest.raises(dpglm.InvalidParameterError, match="holds epsilon = 1"):
        dpglm.Budget(2.0, 1e-5, path=str(path))
    # A file budget pickles as its path; an in-memory one refuses.
    import pickle

    again = pickle.loads(pickle.dumps(dpglm.Budget(1.0, 1e-5, path=str(path))))
    assert len(again.fits()) == 1
    with pytest.raises(TypeError, match="in-memory"):
        pickle.dumps(dpglm.Budget(1.0, 1e-5))


def test_bad_budgets_are_refused():
    for eps, delta in [(0.0, 1e-5), (float("nan"), 1e-5), (1.0, 0.0), (1.0, 1.0)]:
        with pytest.raises(dpglm.InvalidParameterError):
            dpglm.Budget(eps, delta)
    with pytest.raises(dpglm.InvalidParameterError, match="budget must be None or a dpglm.Budget"):
        half({"epsilon": 1}).fit(*classification(n=50))
