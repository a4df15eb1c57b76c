"""A vectorised NumPy DP-SGD epoch on the shapes of benches/benches/glm.rs, so the speed ratio
in an issue note comes from one run on one machine.

    OPENBLAS_NUM_THREADS=1 python3 benches/peers/dpsgd_numpy.py

The fastest NumPy formulation we know for a GLM: per step, gather the Poisson batch's rows,
one matrix-vector product for the margins, the logistic derivative, clip each example's
scalar coefficient with the precomputed row norms (never per-example gradient vectors), one
transposed matrix-vector product for the clipped sum, Gaussian noise, an SGD step. Prints the
median seconds per epoch over 7 runs and examples per second.
"""
import statistics
import time

import numpy as np

N, Q_BATCH = 50_000, 256
CLIP, SIGMA, LR = 1.0, 1.0, 0.1


def data(d, rng):
    x = rng.random((N, d)) - 0.5
    y = np.where((np.arange(N) * 7919) % 3 == 0, 1.0, -1.0)
    return x, y


def epoch(x, y, norms, rng):
    n, d = x.shape
    q = Q_BATCH / n
    theta = np.zeros(d)
    for _ in range(int(np.ceil(1.0 / q))):
        batch = np.flatnonzero(rng.random(n) < q)
        xb = x[batch]
        z = xb @ theta
        yb = y[batch]
        deriv = -yb / (1.0 + np.exp(yb * z))
        coef = deriv * np.minimum(1.0, CLIP / np.maximum(np.abs(deriv) * norms[batch], 1e-300))
        g = xb.T @ coef + rng.normal(0.0, SIGMA * CLIP, d)
        theta -= LR * g / (q * n)
    return theta


def main():
    rng = np.random.default_rng(1)
    for d in (100, 1000):
        x, y = data(d, rng)
        norms = np.linalg.norm(x, axis=1)
        epoch(x, y, norms, rng)  # warm-up
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            epoch(x, y, norms, rng)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"numpy dpsgd epoch {N}x{d} b{Q_BATCH}: {med * 1e3:.2f} ms, {N / med / 1e6:.3f} M examples/s")


if __name__ == "__main__":
    main()
