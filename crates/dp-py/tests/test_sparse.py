"""scipy.sparse input: fits on sparse rows equal the fits on the same rows dense (every
learner with a sparse path, tuned DP-SGD too), the other formats and non-canonical matrices,
the densified fallback and its warning, scoring sparse rows, and the input errors.

Every fit uses a fixed random_state, so the outcomes are deterministic.
"""

import warnings

import numpy as np
import pytest

import dpglm
from dpglm import _dpglm

sp = pytest.importorskip(
    "scipy.sparse", reason="scipy is not installed: the sparse-input tests need scipy.sparse"
)

LEARNERS = {l["name"]: l for l in _dpglm.learners()}
# Every learner with a sparse path when the tests run (dp-gd and noisy-gd at least).
SPARSE = sorted({n for n, l in LEARNERS.items() if l["sparse"]} | {"dp-gd", "noisy-gd"})
DENSE_ONLY = [n for n, l in LEARNERS.items() if not l["sparse"] and l["losses"] == "any"]


def sparse_rows(n=3000, d=20, density=0.15, seed=0):
    """A CSR matrix of n rows (row 5 empty) and d columns (the last two empty)."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n, d)) < density, rng.standard_normal((n, d)), 0.0)
    dense[:, d - 2 :] = 0.0
    dense[5] = 0.0
    return sp.csr_array(dense)


def labels(x, regression, seed=0):
    rng = np.random.default_rng(seed)
    w = np.linspace(-1.0, 1.0, x.shape[1])
    z = x @ w + 0.1 * rng.standard_normal(x.shape[0])
    return z if regression else (z > 0).astype(int)


def estimator(regression, **kw):
    return (dpglm.LinearRegression if regression else dpglm.LogisticRegression)(**kw)


def close(a, b, tol=1e-12):
    """|a - b| ≤ tol·max(1, |b|) entrywise."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.all(np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b))), np.max(np.abs(a - b))


def assert_same_fit(a, b, tol=1e-12):
    close(a.coef_, b.coef_, tol)
    close(a.intercept_, b.intercept_, tol)
    assert a.privacy_report_ == b.privacy_report_


def fit_quietly(m, x, y):
    """Fits, failing on any warning (a sparse fit that densified would warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return m.fit(x, y)


def cases():
    for name in SPARSE:
        if LEARNERS[name]["losses"] == "any":
            yield pytest.param(name, False, id=f"{name}-logistic")
        yield pytest.param(name, True, id=f"{name}-squared")


@pytest.mark.parametrize("algorithm,regression", list(cases()))
def test_sparse_fit_equals_the_dense_fit(algorithm, regression):
    x = sparse_rows()
    y = labels(x, regression)
    kw = dict(epsilon=2.0, algorithm=algorithm, scale="none", random_state=7)
    s = fit_quietly(estimator(regression, **kw), x, y)
    d = estimator(regression, **kw).fit(x.toarray(), y)
    assert_same_fit(s, d)
    assert s.n_features_in_ == 20
    scores = (lambda m, x: m.predict(x)) if regression else (lambda m, x: m.decision_function(x))
    close(scores(s, x), scores(d, x.toarray()))
    assert s.score(x, y) == pytest.approx(d.score(x.toarray(), y), abs=1e-12)


@pytest.mark.parametrize("tune,regression", [("honest", False), ("honest", True), ("unaccounted", False)])
def test_tuned_dp_sgd_keeps_sparse_rows_and_equals_the_dense_fit(tune, regression):
    x = sparse_rows(n=2000)
    y = labels(x, regression)
    kw = dict(
        epsilon=2.0,
        algorithm="dp-sgd",
        batch_size=100,
        tune=tune,
        learning_rates=[0.1, 0.5, 1.0],
        scale="none",
        random_state=11,
    )
    s = fit_quietly(estimator(regression, **kw), x, y)  # no densify warning
    d = estimator(regression, **kw).fit(x.toarray(), y)
    assert np.array_equal(s.coef_, d.coef_)
    assert s.privacy_report_ == d.privacy_report_
    assert not any("densified" in w for w in s.privacy_report_["warnings"])


def test_auto_scaling_is_none_for_sparse_rows():
    x = sparse_rows()
    y = labels(x, False)
    auto = fit_quietly(dpglm.LogisticRegression(algorithm="dp-gd", random_state=3), x, y)
    none = dpglm.LogisticRegression(algorithm="dp-gd", scale="none", random_state=3).fit(x.toarray(), y)
    assert_same_fit(auto, none)
    assert "unit norm" in auto.privacy_report_["statement"]


@pytest.mark.parametrize("fmt", ["csr_matrix", "csc_array", "csc_matrix", "coo_array", "coo_matrix", "lil_array"])
def test_every_format_gives_the_csr_fit(fmt):
    x = sparse_rows(n=800)
    y = labels(x, False)
    kw = dict(algorithm="dp-gd", random_state=5)
    ref = fit_quietly(dpglm.LogisticRegression(**kw), x, y)
    other = getattr(sp, fmt)(x)
    got = fit_quietly(dpglm.LogisticRegression(**kw), other, y)
    assert np.array_equal(got.coef_, ref.coef_)
    assert np.array_equal(got.predict_proba(other), ref.predict_proba(x))


def test_float32_and_integer_values_are_converted():
    x = sparse_rows(n=800)
    y = labels(x, True)
    kw = dict(algorithm="dp-gd", random_state=5)
    for values in (x.astype(np.float32), (10 * x).astype(np.int64)):
        a = fit_quietly(dpglm.LinearRegression(**kw), values, y)
        b = dpglm.LinearRegression(**kw).fit(values.toarray().astype(np.float64), y)
        assert_same_fit(a, b)
        close(a.predict(values), b.predict(values.toarray().astype(np.float64)))


def test_duplicates_are_summed_and_columns_sorted_on_a_copy():
    # Row 0 holds column 2 twice (1 + 2) and its columns out of order.
    data = np.array([1.0, 0.5, 2.0, -1.0, 3.0])
    indices = np.array([2, 0, 2, 1, 0], dtype=np.int32)
    indptr = np.array([0, 3, 5])
    x = sp.csr_matrix((data, indices, indptr), shape=(2, 3))
    assert not x.has_canonical_format
    dense = x.toarray()
    assert dense[0, 2] == 3.0
    big = sp.csr_matrix(sp.vstack([x] * 200))
    big_dense = np.vstack([dense] * 200)
    y = np.tile([1.0, -2.0], 200)
    kw = dict(algorithm="noisy-gd", random_state=1)
    a = fit_quietly(dpglm.LinearRegression(**kw), x, np.array([1.0, 2.0]))
    assert np.array_equal(x.indices, indices) and np.array_equal(x.data, data)  # untouched
    b = fit_quietly(dpglm.LinearRegression(**kw), big, y)
    c = dpglm.LinearRegression(**kw).fit(big_dense, y)
    assert_same_fit(b, c)
    assert np.array_equal(a.predict(x), a.predict(dense))


def test_densified_with_a_warning_when_the_learner_has_no_sparse_path():
    if not DENSE_ONLY:
        pytest.skip("every classification learner has a sparse path")
    algorithm = DENSE_ONLY[0]
    x = sparse_rows(n=1500)
    y = labels(x, False)
    kw = dict(algorithm=algorithm, random_state=2)
    with pytest.warns(UserWarning, match=rf"densified.*algorithm='{algorithm}' has no sparse path \(.*dp-gd"):
        s = dpglm.LogisticRegression(**kw).fit(x, y)
    d = dpglm.LogisticRegression(scale="none", **kw).fit(x.toarray(), y)
    close(s.coef_, d.coef_)
    assert any("densified" in w for w in s.privacy_report_["warnings"])


def test_densified_with_a_warning_for_a_feature_scaling():
    x = sparse_rows(n=6000)
    y = labels(x, False)
    kw = dict(algorithm="dp-gd", scale="minmax", random_state=4)
    with pytest.warns(UserWarning, match=r"densified.*scale='minmax' maps zeros to non-zero values"):
        s = dpglm.LogisticRegression(**kw).fit(x, y)
    d = dpglm.LogisticRegression(**kw).fit(x.toarray(), y)
    close(s.coef_, d.coef_)
    assert s.privacy_report_["statement"] == d.privacy_report_["statement"]
    ranges = [(-3.0, 3.0)] * x.shape[1]
    with pytest.warns(UserWarning, match=r"densified.*feature_ranges maps zeros"):
        r = dpglm.LogisticRegression(algorithm="dp-gd", feature_ranges=ranges, random_state=4).fit(x, y)
    close(r.coef_, dpglm.LogisticRegression(algorithm="dp-gd", feature_ranges=ranges, random_state=4).fit(x.toarray(), y).coef_)
    # A scaled model scores sparse rows densified block by block: the dense scores.
    assert np.array_equal(s.decision_function(x), d.decision_function(x.toarray()))
    many = sp.vstack([x] * 6, format="csr")  # 36,000 rows: three blocks of 2^14
    assert np.array_equal(s.decision_function(many), d.decision_function(many.toarray()))
    assert np.array_equal(s.predict_proba(x), d.predict_proba(x.toarray()))


def test_a_dense_fit_scores_sparse_rows():
    x = sparse_rows(n=1000)
    y = labels(x, False)
    m = dpglm.LogisticRegression(algorithm="amp", scale="none", random_state=8).fit(x.toarray(), y)
    close(m.decision_function(x), m.decision_function(x.toarray()))
    close(m.predict_proba(sp.csc_matrix(x)), m.predict_proba(x.toarray()))
    assert np.array_equal(m.predict(x), m.predict(x.toarray()))
    assert m.score(x, y) == m.score(x.toarray(), y)


def test_rows_a_model_projects_score_as_dense_rows_even_when_huge():
    """A model that projects rows onto its row bound (output perturbation on raw rows) scores
    sparse rows whose norm or unprojected margin overflows as it scores the rows dense: the
    projection comes before the margins (the sparse scores were NaN or the intercept)."""
    x = sparse_rows(n=600, d=6)
    y = labels(x, False)
    m = dpglm.LogisticRegression(
        algorithm="output-perturbation", preprocess="none", x_bound=1.0, random_state=4
    ).fit(x, y)
    huge = x.toarray()
    signs = np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
    huge[:4] = 1.5e308 * signs * np.array([[1.0], [-1.0], [0.5], [-0.5]])
    dense = m.decision_function(huge)
    assert np.all(np.isfinite(dense))
    close(m.decision_function(sp.csr_array(huge)), dense)
    assert np.array_equal(m.predict(sp.csr_array(huge)), m.predict(huge))
    assert m.score(sp.csr_array(huge), y) == m.score(huge, y)


def test_sparse_input_errors_name_the_row_and_column():
    dense = sparse_rows(n=500, d=6).toarray()
    dense[9, 2] = 0.25  # row 9 holds an entry
    x = sp.csr_array(dense)
    y = labels(x, False)
    bad = x.copy()
    k = bad.indptr[9]  # the first stored entry of row 9
    bad.data[k] = np.nan
    with pytest.raises(dpglm.InvalidInputError, match=rf"NaN.*row 9, column {bad.indices[k]}"):
        dpglm.LogisticRegression(algorithm="dp-gd").fit(bad, y)
    out = x.copy()
    out.indices[k] = 17
    with pytest.raises(dpglm.InvalidInputError, match=r"column index 17 at row 9, outside the 6 columns"):
        dpglm.LogisticRegression(algorithm="dp-gd").fit(out, y)
    m = dpglm.LogisticRegression(algorithm="dp-gd", random_state=1).fit(x, y)
    with pytest.raises(dpglm.InvalidInputError, match=r"NaN.*row 9"):
        m.predict(bad)
    with pytest.raises(ValueError, match="X has 5 features, but LogisticRegression is expecting 6"):
        m.predict(x[:, :5])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        m.fit(x, y[:-1])
    with pytest.raises(dpglm.InvalidInputError, match="2D sparse"):
        m.predict(sp.coo_array(np.ones(6)))
    with pytest.raises(dpglm.InvalidInputError, match="0 sample"):
        m.predict(sp.csr_array((0, 6)))
    with pytest.raises(dpglm.InvalidInputError, match="Complex"):
        m.predict(x.astype(np.complex128))


def test_sparse_fit_pickles():
    import pickle

    x = sparse_rows(n=600)
    y = labels(x, False)
    m = dpglm.LogisticRegression(algorithm="dp-gd", random_state=3).fit(x, y)
    back = pickle.loads(pickle.dumps(m))
    assert np.array_equal(back.predict_proba(x), m.predict_proba(x))
