"""Malformed scipy.sparse matrices (issue 32): refused before any scipy routine or the native
side reads them, naming the row (they used to crash the interpreter or raise a bare
RuntimeError); rows edited out of order in place are sorted, not refused.

The calls that used to crash run in a subprocess, so that a crash fails the test instead of
killing the test run.
"""

import subprocess
import sys

import numpy as np
import pytest

import dpglm

sp = pytest.importorskip("scipy.sparse", reason="the sparse-input tests need scipy.sparse")

# 40 rows, 5 columns, about 40% stored: row 4 ends at indptr[5].
SETUP = """
import numpy as np, scipy.sparse as sp, dpglm
rng = np.random.default_rng(0)
dense = np.where(rng.random((40, 5)) < 0.4, rng.standard_normal((40, 5)), 0.0)
y = (dense.sum(axis=1) > 0).astype(int)
x = sp.csr_matrix(dense)
"""


def rows():
    ns = {}
    exec(SETUP, ns)
    return ns["x"], ns["y"]


def run_isolated(body):
    """Runs SETUP then ``body`` in a fresh interpreter; its return code and output."""
    code = SETUP + body
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


CATCH = """
try:
    {call}
    print("no error")
except Exception as e:
    print(type(e).__name__, "|", e)
"""


@pytest.mark.parametrize("call", ["fit", "predict"])
def test_indptr_beyond_the_data_is_refused_naming_the_row(call):
    x, _ = rows()
    nnz = x.nnz
    body = """
model = dpglm.LogisticRegression(algorithm="dp-gd", random_state=0).fit(x, y)
bad = x.copy()
bad.indptr[5] = 10**6
""" + CATCH.format(
        call="model.fit(bad, y)" if call == "fit" else "model.predict(bad)"
    )
    rc, out = run_isolated(body)
    assert rc == 0, f"the interpreter died (return code {rc}): {out}"
    assert f"InvalidInputError | X (csr): row 4: indptr[5] = 1000000 exceeds the {nnz} stored entries" in out


@pytest.mark.parametrize("value,why", [(-3, "is negative"), (0, r"is below indptr\[4\] = \d+")])
def test_negative_or_decreasing_indptr_is_refused_naming_the_row(value, why):
    x, y = rows()
    x.indptr[5] = value
    with pytest.raises(dpglm.InvalidInputError, match=rf"row 4: indptr\[5\] = {value} {why}"):
        dpglm.LogisticRegression(algorithm="dp-gd", random_state=0).fit(x, y)


def test_columns_of_a_csc_matrix_are_checked_before_conversion():
    x, y = rows()
    model = dpglm.LinearRegression(algorithm="dp-gd", random_state=0).fit(x, y)
    csc = x.tocsc()
    csc.indptr[3] = csc.indptr[4] + 1  # column 2 ends after column 3 starts
    with pytest.raises(dpglm.InvalidInputError, match=r"X \(csc\): column 3: indptr\[4\] = \d+ is below"):
        model.predict(csc)


def test_coo_coordinates_outside_the_matrix_are_refused_naming_the_entry():
    x, y = rows()
    coo = x.tocoo()
    coo.col[7] = 5
    with pytest.raises(dpglm.InvalidInputError, match=rf"row {coo.row[7]}: entry 7: column index 5 is outside the 5 columns"):
        dpglm.LogisticRegression(algorithm="dp-gd", random_state=0).fit(coo, y)


def test_columns_swapped_in_place_are_sorted_not_refused():
    # scipy caches has_canonical_format once read: still True after the swap.
    x, _ = rows()
    target = x.toarray().sum(axis=1)
    assert x.has_canonical_format
    k = x.indptr[3]
    assert x.indptr[4] - k >= 2
    for a in (x.indices, x.data):
        a[[k, k + 1]] = a[[k + 1, k]]
    assert x.has_canonical_format
    kw = dict(algorithm="dp-gd", random_state=0)
    sparse = dpglm.LinearRegression(**kw).fit(x, target)
    dense = dpglm.LinearRegression(**kw).fit(x.toarray(), target)
    assert np.array_equal(sparse.coef_, dense.coef_)
    assert np.array_equal(sparse.predict(x), dense.predict(x.toarray()))


@pytest.mark.parametrize(
    "edit,message",
    [
        ("bad = sp.lil_matrix(dense); bad.rows[3] = bad.rows[3] + [4]",
         "X (lil): row 3: rows[3] and data[3] must be lists of equal length"),
        ("bad = sp.dia_matrix(dense); bad.offsets = bad.offsets[:-1]",
         "X (dia): data has shape (38, 5) for 37 offsets"),
        ("bad = sp.bsr_matrix(dense[:, :4], blocksize=(2, 2)); bad.indptr[3] = 10**6",
         "X (bsr): block row 2: indptr[3] = 1000000 exceeds the"),
    ],
    ids=["lil", "dia", "bsr"],
)
def test_the_arrays_of_other_formats_are_checked_before_conversion(edit, message):
    rc, out = run_isolated(edit + "\n" + CATCH.format(call="dpglm.LinearRegression().fit(bad, y)"))
    assert rc == 0, f"the interpreter died (return code {rc}): {out}"
    assert f"InvalidInputError | {message}" in out
