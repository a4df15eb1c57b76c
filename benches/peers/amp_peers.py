"""Times IBM diffprivlib's LogisticRegression on the shape of benches/benches/amp.rs
(45,000 x 104: unit rows plus a bias feature), so the ratio in an issue note comes from one
run on one machine.

    pip install diffprivlib==0.6.6 "scikit-learn<1.6"
    OPENBLAS_NUM_THREADS=1 python3 benches/peers/amp_peers.py

Prints the median seconds of one fit at epsilon = 1 over 7 runs.
"""
import statistics
import time
import warnings

import numpy as np
from diffprivlib.models import LogisticRegression

N, D = 45_000, 104


def data():
    rng = np.random.default_rng(3)
    x = rng.random((N, D - 1)) - 0.5
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x = np.hstack([x, np.ones((N, 1))])
    w = ((np.arange(D) * 7) % 5) - 2.0
    flip = rng.random(N) < 0.1
    y = np.where((x @ w >= 0) != flip, 1, -1)
    return x, y


def main():
    x, y = data()
    warnings.simplefilter("ignore")
    times = []
    for seed in range(7):
        model = LogisticRegression(epsilon=1.0, data_norm=np.sqrt(2.0), random_state=seed)
        t0 = time.perf_counter()
        model.fit(x, y)
        times.append(time.perf_counter() - t0)
    print(f"diffprivlib LogisticRegression fit {N}x{D} eps=1: {statistics.median(times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
