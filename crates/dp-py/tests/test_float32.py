"""float32 input: kept in float32 storage when the fit leaves the values as they are, and
then the same model as the same values in float64, bit for bit (rows within the learners'
row bounds, so that none is projected and stored again); widened otherwise, as before.

Every fit uses a fixed random_state, so the outcomes are deterministic.
"""

import numpy as np
import pytest

import dpglm
from dpglm import _dpglm

LEARNERS = _dpglm.learners()
STORAGE = "feature storage f32"


def rows(n=3000, d=3, seed=0):
    """float32 rows of norm below 0.9 (below 1.35 with the bias 1)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x *= 0.9 / np.linalg.norm(x, axis=1).max()
    return x.astype(np.float32)


def public_bounds(learner):
    """Public bounds the rows are within, for the learner's parameters that take them: no
    row is projected, so that the float32 fit must equal the float64 one bit for bit."""
    uses = {p["name"] for p in learner["params"]}
    return {k: v for k, v in (("x_bound", 2.0), ("y_bound", 4.0)) if k in uses}


def assert_bit_equal(a, b):
    assert np.array_equal(a.coef_, b.coef_), (a.coef_, b.coef_)
    assert np.array_equal(a.intercept_, b.intercept_)
    ra, rb = dict(a.privacy_report_), dict(b.privacy_report_)
    assert STORAGE in ra.pop("statement") and STORAGE not in rb.pop("statement")
    assert ra == rb


@pytest.mark.parametrize("learner", LEARNERS, ids=[l["name"] for l in LEARNERS])
def test_regression_on_float32_equals_float64_bit_for_bit(learner):
    x = rows()
    w = np.array([0.5, -1.0, 2.0])
    y = x.astype(np.float64) @ w + 0.05 * np.random.default_rng(1).normal(size=len(x))
    kw = dict(epsilon=2.0, algorithm=learner["name"], random_state=6, **public_bounds(learner))
    a = dpglm.LinearRegression(**kw).fit(x, y)
    b = dpglm.LinearRegression(**kw).fit(x.astype(np.float64), y)
    assert_bit_equal(a, b)
    assert np.array_equal(a.predict(x), b.predict(x.astype(np.float64)))


@pytest.mark.parametrize(
    "learner", [l for l in LEARNERS if l["losses"] == "any"], ids=lambda l: l["name"]
)
def test_classification_without_preprocessing_on_float32_equals_float64(learner):
    x = rows(seed=2)
    y = (x @ np.array([1.0, 2.0, -1.0], dtype=np.float32) > 0).astype(int)
    kw = dict(
        algorithm=learner["name"],
        scale="none",
        preprocess="none",
        random_state=3,
        **public_bounds(learner),
    )
    a = dpglm.LogisticRegression(**kw).fit(np.asfortranarray(x), y)
    b = dpglm.LogisticRegression(**kw).fit(x.astype(np.float64), y)
    assert_bit_equal(a, b)
    assert np.array_equal(a.predict_proba(x), b.predict_proba(x.astype(np.float64)))


def test_widened_when_the_preprocessing_changes_the_values():
    x = rows(seed=4)
    y = (x[:, 0] > 0).astype(int)
    for kw in (
        dict(),  # unit-norm rows (or a scaling) by default for classification
        dict(scale="none", preprocess="none", bias=0.1),  # 0.1 is not a float32
    ):
        a = dpglm.LogisticRegression(algorithm="dp-gd", random_state=5, **kw).fit(x, y)
        b = dpglm.LogisticRegression(algorithm="dp-gd", random_state=5, **kw).fit(
            x.astype(np.float64), y
        )
        assert STORAGE not in a.privacy_report_["statement"]
        assert np.array_equal(a.coef_, b.coef_)
        assert a.privacy_report_ == b.privacy_report_


def test_many_rows_go_through_float32_storage_block_by_block():
    x = rows(n=40_000, seed=7)  # three blocks of 2^14 rows, the last one partial
    y = x.astype(np.float64) @ np.array([1.0, 0.0, -1.0])
    kw = dict(algorithm="dp-gd", random_state=8)
    a = dpglm.LinearRegression(**kw).fit(x, y)
    b = dpglm.LinearRegression(**kw).fit(x.astype(np.float64), y)
    assert_bit_equal(a, b)
    assert np.array_equal(a.predict(x), b.predict(x.astype(np.float64)))
