"""Fuzzing the Python input layer: malformed rows, labels and targets, generated
deterministically (a seeded numpy generator per case), given to ``fit`` and ``predict`` of
every estimator class. Every call must succeed or raise a ``ValueError`` or a
``dpglm.DPGLMError``: no crash (a signal) and no other exception type.

The cases run in subprocesses, a batch each (this file run as a script), so that a crash is
reported as one, naming the case, instead of killing the test run.
"""

import os
import subprocess
import sys
import warnings

import numpy as np

import dpglm

# Cases and the batches they run in (one subprocess each, two at a time).
CASES = 320
BATCHES = 4
N, D = 30, 4
SEED = 32


def pick(rng, options):
    """One of ``options`` (of any types)."""
    return options[int(rng.integers(len(options)))]


def base(rng):
    """Clean rows (about half stored) and labels {0, 1}."""
    x = np.where(rng.random((N, D)) < 0.5, rng.standard_normal((N, D)), 0.0)
    x[0] = [1.0, 0.0, -1.0, 0.5]  # at least one entry in row 0
    y = (x.sum(axis=1) > 0).astype(int)
    return x, y


# The arrays of each sparse format a user can assign to.
PARTS = {
    "csr": ["indptr", "indices", "data"],
    "csc": ["indptr", "indices", "data"],
    "bsr": ["indptr", "indices", "data"],
    "coo": ["row", "col", "data"],
    "dia": ["offsets", "data"],
    "lil": ["rows", "data"],
}


def sparse_case(rng, x, sp):
    """A sparse matrix or array (CSR and CSC most often) with one of its arrays mutated in
    place, as a user can by assigning to its attributes (a mutation that fails, as ``astype``
    of LIL's lists can, leaves it as built)."""
    fmt = pick(rng, ["csr", "csr", "csc", "csc", "coo", "bsr", "dia", "lil"])
    kind = pick(rng, ["matrix", "array"])
    m = getattr(sp, f"{fmt}_{kind}")(x)
    part = pick(rng, PARTS[fmt])
    try:
        mutate(rng, m, part)
    except (TypeError, ValueError):
        pass
    return m


def mutate(rng, m, part):
    """One mutation of the array ``m.<part>``."""
    stored = m.nnz
    a = getattr(m, part)
    k = int(rng.integers(a.shape[0])) if a.shape[0] else 0
    how = int(rng.integers(9))
    if how == 0:
        a[k] = pick(rng, [-1, -(10**6), stored + 1, 10**6, D, N, 2**31 - 1])
    elif how == 1 and a.shape[0] > 1:
        j = int(rng.integers(a.shape[0]))
        a[k], a[j] = a[j], a[k]
    elif how == 2:  # one entry more or fewer
        cut = a[:-1] if rng.random() < 0.5 else np.concatenate([a, a[-1:]])
        setattr(m, part, cut)
    elif how == 3:  # another dtype
        dtype = pick(rng, ["float64", "int16", "uint64", "int8", "object", "bool", "complex128", "U3"])
        setattr(m, part, a.astype(dtype))
    elif how == 4 and part == "data":
        a[k] = pick(rng, [np.nan, np.inf, -np.inf, 1e308])
    elif how == 5:  # 2-d or empty
        setattr(m, part, a.reshape(1, -1) if rng.random() < 0.5 else a[:0])
    elif how == 6:  # several entries at once
        ks = rng.integers(a.shape[0], size=3) if a.shape[0] else []
        for j in ks:
            a[j] = int(rng.integers(-3, 2 * max(N, D, stored)))
    elif how == 7:  # a list instead of an array
        setattr(m, part, a.tolist())
    # how 8 (or a mutation that does not apply): the matrix as built


def dense_case(rng, x):
    """A dense array (or list) of a wrong shape, dtype or value."""
    how = int(rng.integers(12))
    if how == 0:
        return x[:, 0] if rng.random() < 0.5 else x[None]
    if how == 1:
        return np.empty((0, D)) if rng.random() < 0.5 else np.empty((N, 0))
    if how == 2:
        bad = x.copy()
        bad[rng.integers(N), rng.integers(D)] = pick(rng, [np.nan, np.inf, -np.inf])
        return bad.astype(pick(rng, ["float64", "float32"]))
    if how == 3:
        bad = x.astype(object)
        bad[rng.integers(N), rng.integers(D)] = pick(rng, [None, "a", {"k": 1}, [1, 2], 1j])
        return bad
    if how == 4:
        return x.astype(pick(rng, ["complex128", "U8", "bool", "int8", "float16", "uint64"]))
    if how == 5:
        return [list(r) for r in x[:-1]] + [list(x[-1][:-1])]  # ragged
    if how == 6:  # huge, refused by its shape (no row or no column)
        return np.broadcast_to(0.0, pick(rng, [(2**40, 0), (0, 2**40)]))
    if how == 7:
        return x.T
    if how == 8:
        return np.asfortranarray(x)[:, ::-1]
    if how == 9:
        return np.float64(3.0)
    if how == 10:
        return x.reshape(N, D, 1)
    return "not an array"


def frame_case(rng, x, pd):
    """A DataFrame with duplicate, mixed or missing names, or non-numeric columns."""
    frame = pd.DataFrame(x, columns=list("abcd"))
    how = int(rng.integers(6))
    if how == 0:
        frame.columns = ["a", "b", "a", "c"]
    elif how == 1:
        frame.columns = ["a", 1, "c", None]
    elif how == 2:
        frame["b"] = frame["b"].astype(str)
    elif how == 3:
        frame.iloc[int(rng.integers(N)), int(rng.integers(D))] = np.nan
    elif how == 4:
        frame["c"] = pd.Categorical(["u", "v"] * (N // 2))
    else:
        frame = frame.iloc[:0]
    return frame


def label_case(rng, y):
    """Labels of a wrong length, shape, dtype or value."""
    how = int(rng.integers(8))
    if how == 0:
        return y[:-1]
    if how == 1:
        return np.stack([y, y], axis=1)
    if how == 2:
        return y.astype(str)
    if how == 3:
        bad = y.astype(float)
        bad[rng.integers(N)] = pick(rng, [np.nan, np.inf])
        return bad
    if how == 4:
        bad = y.astype(object)
        bad[rng.integers(N)] = pick(rng, [None, {"k": 1}, "x"])
        return bad
    if how == 5:
        bad = y.copy()
        bad[rng.integers(N)] = 2
        return bad
    if how == 6:
        return None
    return np.float64(1.0)


TARGETS = [0.0, -1.0, np.nan, np.inf, 1e-300, 1e300, 1e-7, 2e6, "one", None]
OTHERS = {
    "delta": [0.0, 1.0, -1e-5, np.nan, 1e-300, 2.0, "x", None],
    "bias": [np.nan, np.inf, -1.0, "x", [1.0]],
    "bounds_budget": [0.0, 1.0, np.nan, "x", -0.5],
}


def case(i):
    """Case ``i``: ``(rows, labels, constructor keywords)``, from its own generator."""
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng([SEED, i])
    x, y = base(rng)
    kwargs = {}
    what = i % 6
    if what == 0:
        return sparse_case(rng, x, sp), y, kwargs
    if what == 1:
        return dense_case(rng, x), y, kwargs
    if what == 2:
        return frame_case(rng, x, pd), y, kwargs
    if what == 3:
        return x, label_case(rng, y), kwargs
    if what == 4:
        kwargs["epsilon"] = pick(rng, TARGETS)
    else:
        name = pick(rng, sorted(OTHERS))
        kwargs[name] = pick(rng, OTHERS[name])
    return (sparse_case(rng, x, sp) if rng.random() < 0.3 else x), y, kwargs


ESTIMATORS = [
    (dpglm.LogisticRegression, "dp-gd"),
    (dpglm.LinearRegression, "dp-gd"),
    (dpglm.LinearRegression, "ssp"),
]


def outcome(call):
    """``"ok"``, ``"typed"`` (a ValueError or DPGLMError) or the other exception's type."""
    try:
        call()
    except (ValueError, dpglm.DPGLMError):
        return "typed"
    except Exception as e:  # noqa: BLE001 - what the test counts
        return f"other:{type(e).__name__}:{e}"
    return "ok"


def run_batch(start, stop):
    """Runs cases ``start..stop``, printing each call before it and its outcome after, so a
    crash names the call it died in."""
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(SEED)
    clean_x, clean_y = base(rng)
    fitted = [cls(algorithm=a, random_state=0).fit(clean_x, clean_y) for cls, a in ESTIMATORS]
    for i in range(start, stop):
        x, y, kwargs = case(i)
        for (cls, algorithm), model in zip(ESTIMATORS, fitted):
            name = f"case {i} {cls.__name__}({algorithm})"
            est = cls(algorithm=algorithm, random_state=0, **kwargs)
            print(f"begin {name}.fit", flush=True)
            print(f"end {name}.fit {outcome(lambda: est.fit(x, y))}", flush=True)
            if kwargs:
                continue
            print(f"begin {name}.predict", flush=True)
            print(f"end {name}.predict {outcome(lambda: model.predict(x))}", flush=True)


def test_malformed_inputs_raise_typed_errors_and_never_crash():
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    bounds = np.linspace(0, CASES, BATCHES + 1).astype(int)
    procs = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        cmd = [sys.executable, __file__, str(lo), str(hi)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    calls, crashes, others = 0, [], []
    for p in procs:
        out, err = p.communicate(timeout=300)
        lines = out.splitlines()
        ends = [l for l in lines if l.startswith("end ")]
        calls += len(ends)
        others += [l for l in ends if " other:" in l]
        if p.returncode != 0:
            begun = [l for l in lines if l.startswith("begin ")]
            last = begun[-1] if begun else "before the first case"
            crashes.append(f"return code {p.returncode} at {last}: {err[-2000:]}")
    print(f"{CASES} cases, {calls} calls, {len(crashes)} crashes, {len(others)} other exceptions")
    assert crashes == []
    assert others == []
    # Every call of every case ran (predict only for cases without estimator keywords).
    with_kwargs = sum(1 for i in range(CASES) if i % 6 in (4, 5))
    assert calls == len(ESTIMATORS) * (2 * CASES - with_kwargs)


if __name__ == "__main__":
    run_batch(int(sys.argv[1]), int(sys.argv[2]))
