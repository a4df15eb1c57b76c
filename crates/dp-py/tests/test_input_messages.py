"""Messages that misled (issue 32), each naming the user's input: an epsilon outside the
range the estimators compute is refused naming `epsilon` (it used to surface as a derived
`lambda` or the optimiser's `scale`); a parameter that is not a number is refused naming it
(it used to be a bare TypeError); duplicate DataFrame column names are refused before the
fit, naming the column (they used to fail after the fit, as an invalid model file).
"""

import numpy as np
import pytest

import dpglm


def rows():
    rng = np.random.default_rng(0)
    x = np.where(rng.random((40, 5)) < 0.4, rng.standard_normal((40, 5)), 0.0)
    return x, (x.sum(axis=1) > 0).astype(int)


@pytest.mark.parametrize("cls", [dpglm.LogisticRegression, dpglm.LinearRegression])
@pytest.mark.parametrize("epsilon", [1e-300, 1e300, float("nan"), 0.0])
def test_an_epsilon_outside_the_computable_range_is_refused_naming_epsilon(cls, epsilon):
    x, y = rows()
    with pytest.raises(dpglm.InvalidParameterError, match=r"^epsilon = \S+ is outside the range the learners compute, 9.5367431640625e-7 \(2\^-20\) to 1.048576e6 \(2\^20\)"):
        cls(epsilon=epsilon, random_state=0).fit(x, y)


@pytest.mark.parametrize("epsilon", [2.0**-20, 2.0**20])
def test_the_ends_of_the_epsilon_range_fit(epsilon):
    x, y = rows()
    model = dpglm.LogisticRegression(epsilon=epsilon, algorithm="dp-gd", scale="none", random_state=0)
    model.fit(x, y)
    assert model.privacy_report_["epsilon"] <= epsilon


@pytest.mark.parametrize(
    "name,value",
    [(n, v) for n in ("epsilon", "delta", "bias", "bounds_budget") for v in ("one", [1.0])]
    + [("epsilon", None), ("delta", None)],
)
def test_a_target_that_is_not_a_number_is_refused_naming_it(name, value):
    x, y = rows()
    with pytest.raises(dpglm.InvalidParameterError, match=rf"^`{name}` must be a real number, not "):
        dpglm.LogisticRegression(random_state=0, **{name: value}).fit(x, y)


def test_duplicate_column_names_are_refused_before_the_fit():
    pd = pytest.importorskip("pandas")
    x, y = rows()
    frame = pd.DataFrame(x, columns=["a", "b", "a", "c", "d"])
    model = dpglm.LogisticRegression(random_state=0)
    with pytest.raises(dpglm.InvalidInputError, match=r"two columns named 'a' \(columns 0 and 2\)"):
        model.fit(frame, y)
    assert not hasattr(model, "coef_")
