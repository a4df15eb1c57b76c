"""dpglm's Python package side by side with its Python peers, in one run.

    python -m venv /tmp/dplv
    /tmp/dplv/bin/pip install diffprivlib==0.6.6 'scikit-learn<1.7' pandas dp-accounting
    /tmp/dplv/bin/pip install target/wheels/dpglm-*.whl     # maturin build --release
    /tmp/dplv/bin/python benches/peers/python_peers.py [--data /work/shared/data] [--seeds 5]

1. Adult (UCI), dpglm.LogisticRegression(algorithm="amp") vs
   diffprivlib.models.LogisticRegression at epsilon = 0.1, 1, 8: test accuracy (mean and
   standard deviation over the seeds) and fit time. The same preprocessing for both: rows
   with "?" dropped; the six numeric columns min-max scaled by their training ranges
   (treated as public, as in diffprivlib's examples); the eight categorical columns one-hot
   with the training file's levels; every row scaled to unit norm. Both are told the public
   row-norm bound 1 (dpglm: preprocess="unit-norm", scale="none"; diffprivlib: data_norm=1).
   dpglm is (epsilon, 1e-6)-DP (AMP needs delta > 0); diffprivlib's is epsilon-DP.
2. Linear regression, x ~ N(0, I_20), y = <x, w> + N(0, 1), w uniform on the sphere of
   radius 2, n = 50,000 (test: 10,000 more), epsilon = 1: test MSE of dpglm.LinearRegression
   with its defaults (delta 1e-5, bounds estimated privately) and of diffprivlib's
   LinearRegression (defaults: it reads the bounds from the data and warns that this leaks;
   and with public bounds |x_j| <= 4, |y| <= 12), against least squares.
3. PLD epsilon for DP-SGD (Poisson q = 0.004, sigma = 1, T = 10^4, delta = 1e-5):
   dpglm.accounting vs Google's dp_accounting (value, time).
"""

import argparse
import gzip
import io
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dpglm

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def read_adult(path):
    text = gzip.decompress(Path(path).read_bytes()).decode()
    lines = [l for l in text.splitlines() if l.strip() and not l.startswith("|")]
    df = pd.read_csv(io.StringIO("\n".join(lines)), header=None, names=COLUMNS,
                     sep=r",\s*", engine="python")
    df = df[~df.isin(["?"]).any(axis=1)]
    y = df["income"].str.startswith(">50K").astype(int).to_numpy()
    return df.drop(columns="income"), y


def adult(data):
    train, ytr = read_adult(Path(data) / "adult" / "adult.data.gz")
    test, yte = read_adult(Path(data) / "adult" / "adult.test.gz")
    lo, hi = train[NUMERIC].min(), train[NUMERIC].max()

    def features(df):
        num = ((df[NUMERIC] - lo) / (hi - lo)).clip(0, 1)
        cats = [c for c in COLUMNS[:-1] if c not in NUMERIC]
        parts = [num]
        for c in cats:
            levels = sorted(train[c].unique())
            parts.append(pd.DataFrame({f"{c}={v}": (df[c] == v).astype(float) for v in levels},
                                      index=df.index))
        x = pd.concat(parts, axis=1).to_numpy(dtype=np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    return features(train), ytr, features(test), yte


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def logistic(data, seeds):
    from diffprivlib.models import LogisticRegression as DplLR

    xtr, ytr, xte, yte = adult(data)
    print(f"\n## Adult: n = {len(ytr)} train, {len(yte)} test, d = {xtr.shape[1]}")
    print("| epsilon | dpglm amp accuracy | dpglm fit s | diffprivlib accuracy | diffprivlib fit s |")
    print("|---:|---:|---:|---:|---:|")
    for eps in (0.1, 1.0, 8.0):
        acc = {"dpglm": [], "dpl": []}
        sec = {"dpglm": [], "dpl": []}
        for s in range(seeds):
            m = dpglm.LogisticRegression(epsilon=eps, delta=1e-6, algorithm="amp",
                                         preprocess="unit-norm", scale="none", random_state=s)
            _, t = timed(lambda: m.fit(xtr, ytr))
            assert m.privacy_report_["epsilon"] <= eps
            acc["dpglm"].append(m.score(xte, yte))
            sec["dpglm"].append(t)
            d = DplLR(epsilon=eps, data_norm=1.0, random_state=s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, t = timed(lambda: d.fit(xtr, ytr))
            acc["dpl"].append(d.score(xte, yte))
            sec["dpl"].append(t)

        def ms(v):
            return f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}"

        print(f"| {eps} | {ms(acc['dpglm'])} | {statistics.mean(sec['dpglm']):.3f} "
              f"| {ms(acc['dpl'])} | {statistics.mean(sec['dpl']):.3f} |")
    from sklearn.linear_model import LogisticRegression as SkLR

    sk = SkLR(max_iter=1000).fit(xtr, ytr)
    print(f"non-private scikit-learn LogisticRegression: accuracy {sk.score(xte, yte):.4f}")


def linear(seeds):
    from diffprivlib.models import LinearRegression as DplLin

    d, n = 20, 50_000
    rng = np.random.default_rng(2026)
    w = rng.normal(size=d)
    w *= 2.0 / np.linalg.norm(w)
    x = rng.normal(size=(n + 10_000, d))
    y = x @ w + rng.normal(size=n + 10_000)
    xtr, ytr, xte, yte = x[:n], y[:n], x[n:], y[n:]
    xb = np.column_stack([xtr, np.ones(n)])
    beta = np.linalg.lstsq(xb, ytr, rcond=None)[0]
    ls = float(np.mean((np.column_stack([xte, np.ones(len(yte))]) @ beta - yte) ** 2))
    print(f"\n## Linear regression: n = {n}, d = {d}, epsilon = 1; least squares test MSE {ls:.4f}")
    rows = {"dpglm LinearRegression() (defaults)": [], "diffprivlib (defaults: bounds from data)": [],
            "diffprivlib (public bounds)": []}
    times = {k: [] for k in rows}
    for s in range(seeds):
        m = dpglm.LinearRegression(epsilon=1.0, random_state=s)
        _, t = timed(lambda: m.fit(xtr, ytr))
        assert m.privacy_report_["epsilon"] <= 1.0
        k = "dpglm LinearRegression() (defaults)"
        rows[k].append(float(np.mean((m.predict(xte) - yte) ** 2)))
        times[k].append(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dl = DplLin(epsilon=1.0, random_state=s)
            _, t = timed(lambda: dl.fit(xtr, ytr))
            k = "diffprivlib (defaults: bounds from data)"
            rows[k].append(float(np.mean((dl.predict(xte) - yte) ** 2)))
            times[k].append(t)
            dl = DplLin(epsilon=1.0, bounds_X=(-4.0, 4.0), bounds_y=(-12.0, 12.0), random_state=s)
            _, t = timed(lambda: dl.fit(np.clip(xtr, -4, 4), np.clip(ytr, -12, 12)))
            k = "diffprivlib (public bounds)"
            rows[k].append(float(np.mean((dl.predict(np.clip(xte, -4, 4)) - yte) ** 2)))
            times[k].append(t)
    print("| model | test MSE (median over seeds) | worst | ratio to least squares | fit s |")
    print("|---|---:|---:|---:|---:|")
    for k, v in rows.items():
        med = statistics.median(v)
        print(f"| {k} | {med:.4g} | {max(v):.4g} | {med / ls:.4f} | {statistics.mean(times[k]):.3f} |")


def accounting():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    q, sigma, steps, delta = 0.004, 1.0, 10_000, 1e-5
    acc = dpglm.accounting

    def ours():
        event = acc.SelfComposedDpEvent(acc.PoissonSampledDpEvent(q, acc.GaussianDpEvent(sigma)), steps)
        return acc.PLDAccountant().compose(event).get_epsilon(delta)

    def google():
        event = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
        return pld_privacy_accountant.PLDAccountant().compose(event).get_epsilon(delta)

    ours()  # warm-up (module load)
    e1, t1 = min((timed(ours) for _ in range(5)), key=lambda r: r[1])
    e2, t2 = min((timed(google) for _ in range(3)), key=lambda r: r[1])
    print(f"\n## PLD epsilon of DP-SGD (q = {q}, sigma = {sigma}, T = {steps}, delta = {delta})")
    print("| accountant | epsilon | time s (best of runs) |")
    print("|---|---:|---:|")
    print(f"| dpglm.accounting PLDAccountant | {e1:.6f} | {t1:.4f} |")
    from importlib.metadata import version

    print(f"| dp_accounting {version('dp-accounting')} PLDAccountant | {e2:.6f} | {t2:.4f} |")
    print(f"speed-up: {t2 / t1:.1f}x")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/work/shared/data")
    p.add_argument("--seeds", type=int, default=5)
    a = p.parse_args()
    import diffprivlib
    import sklearn

    print(f"dpglm {dpglm.__version__}, diffprivlib {diffprivlib.__version__}, "
          f"scikit-learn {sklearn.__version__}, numpy {np.__version__}")
    logistic(a.data, a.seeds)
    linear(a.seeds)
    accounting()


if __name__ == "__main__":
    main()
