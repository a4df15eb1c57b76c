"""Chebyshev coefficients of g(x) = t·R(t), R(t) = Φ̄(t)/φ(t) the Mills ratio, used by
crates/dp-accounting/src/special.rs (`MILLS_CHEB`).

Map: t ∈ [2, ∞) ↦ y = (t − K)/(t + K) ∈ [y0, 1), y0 = (2 − K)/(2 + K), K = 4;
x = (y − y0)·2/(1 − y0) − 1 ∈ [−1, 1). Coefficients by the discrete cosine transform at 48
Chebyshev nodes, in 40-digit arithmetic (mpmath), printed in their shortest round-trip form;
coefficients below 1e-19 are dropped.

Rerun: python3 crates/dp-accounting/tools/mills_chebyshev.py
"""
import mpmath as mp

mp.mp.dps = 40
K, N, T0 = mp.mpf(4), 48, mp.mpf(2)
y0 = (T0 - K) / (T0 + K)


def g(x):
    y = y0 + (x + 1) * (1 - y0) / 2
    t = K * (1 + y) / (1 - y)
    return t * mp.ncdf(-t) / mp.npdf(t)


nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / N) for k in range(N)]
vals = [g(x) for x in nodes]
coef = []
for j in range(N):
    c = 2 * mp.fsum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / N) for k in range(N)) / N
    coef.append(c / 2 if j == 0 else c)
# Keep the coefficients that matter in double precision; print the shortest round-trip form.
coef = [c for c in coef]
while abs(coef[-1]) < mp.mpf("1e-19"):
    coef.pop()
print("const MILLS_CHEB: [f64; %d] = [" % len(coef))
for c in coef:
    print("    %r," % float(c))
print("];")
