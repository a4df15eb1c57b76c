#!/usr/bin/env python3
"""Ground truth for the differential accounting campaign (`tests/campaign.rs`).

Every value is computed with mpmath from a closed form re-derived here (not copied from the
crate), at WORK_DPS working digits, and checked:

  * the Gaussian mechanism composed T times is one Gaussian with ratio s = f*sqrt(T)/sigma
    (sensitivity 1; f = Neighbouring::sum_sensitivity_factor: 1 add/remove, 2 replace-one,
    as `Mechanism::gaussian` + `profile::profiles` define it). Balle & Wang 2018, Thm 8:
        delta(eps) = Phi(-eps/s + s/2) - e^eps Phi(-eps/s - s/2).
  * Laplace, one release, r = f/b:  delta(eps) = 1 - exp((eps - r)/2) for |eps| < r, 0 above
    (from the privacy loss (|x - D| - |x|)/b of Lap(0, b) against Lap(D, b)).
  * Poisson-subsampled Gaussian, one step, add/remove: the worse of
      remove: P = (1-q)N(0,z^2) + qN(1,z^2), Q = N(0,z^2):
              w(o) = log(1 - q + q exp((2o-1)/(2z^2))) > eps  <=>  o > t,
              t = z^2 log((e^eps - 1 + q)/q) + 1/2,
              delta = q Phibar((t-1)/z) - (e^eps - 1 + q) Phibar(t/z);
      add:    the pair swapped: w(o) > eps <=> o < t', t' = z^2 log((e^-eps - 1 + q)/q) + 1/2
              (no such o when e^-eps <= 1 - q),
              delta = (1 - e^eps (1-q)) Phi(t'/z) - e^eps q Phi((t'-1)/z).
    With q = 1 both reduce to the Gaussian with s = f/z; that is how the crate treats q = 1
    under replace-one too (the only replace-one Poisson case it accepts).
  * Objective perturbation (paper 001, Redberg, Koskela & Wang 2023, Thm 3.1 / Lemma D.4):
    privacy loss c + mu + s|N|, N ~ N(0,1), s = L/sigma, mu = s^2/2, c = -log(1 - beta/lambda):
        delta(eps) = E[(1 - e^{eps - c - mu - s|N|})_+]
                   = 1 - 2 e^{eps-c} Phi(-s)                         if eps - c <= mu,
                   = 2 [Phi(-(eps-c)/s + s/2) - e^{eps-c} Phi(-(eps-c)/s - s/2)]  otherwise.
    Add/remove only.

Checks made before anything is written (the script stops on a failure):
  1. every closed form against direct numerical integration of the definition
     delta(eps) = E_P[(1 - e^{eps - w(o)})_+] (mpmath quad, 40 digits) on a seeded subsample
     with delta > 1e-200, to 1e-9 relative (worst gap printed);
  2. every stored value recomputed at CHECK_DPS digits on a seeded subsample, to 1e-35
     relative (guards against cancellation at WORK_DPS);
  3. each eps*(delta) satisfies delta(eps*(1 - 1e-30)) > delta >= delta(eps*(1 + 1e-30)).

eps(delta) queries store eps*(delta), the smallest eps >= 0 with delta(eps) <= delta (found by
bisection to 1e-45 relative). Each value is stored as the f64 rounded DOWN ("down": a reported
bound must be >= it) and the nearest f64 ("near"); a delta below the smallest subnormal is
stored as down = "0.0" with its decimal exponent in "log10".

Output: tests/fixtures/campaign.json (next to the tests, path relative to this script).
All floats are written as strings holding Python's repr (exact round trip; the Rust test
parses them with str::parse::<f64>, which is correctly rounded; serde_json's own float
parser is not guaranteed to be without its `float_roundtrip` feature).

Format:
  {"meta": {...},
   "groups": [ {"id": str, "name": str|null (issue 9 reproducer), "mech": "gaussian" |
                "laplace" | "subsampled-gaussian" | "objpert", "rel": "add-remove" |
                "replace-one", "region": str, "T": int, "params": {name: str},
                "q": [[kind, arg, down, near, log10], ...]} ]}
  with kind "eps" (arg = delta, value eps*) or "delta" (arg = eps, value delta(eps)).

Run from anywhere (about 2 minutes):  python3 crates/dp-accounting/tools/campaign.py
Requires: mpmath (pip install mpmath). Deterministic (seeded).
"""

import json
import math
import os
import random
import sys

import mpmath as mp
from mpmath import mpf

WORK_DPS = 50
CHECK_DPS = 100
SEED = 20261124
# Quadrature near a kink deep in a Gaussian tail is the weak side of check 1; a wrong closed
# form would be off by O(1).
QUAD_TOL = mpf(10) ** -9

DELTAS = [0.5, 0.1, 1e-2, 1e-3, 1e-5, 1e-8, 1e-10, 1e-12, 1e-15, 1e-20, 1e-30]
EPS_FIXED = [0.0, 0.1, 1.0, 10.0]

# --------------------------------------------------------------------------------------------
# Profiles: delta(eps) for exact mpf parameters.


def phi_bar(x):
    """Upper tail of the standard normal."""
    return mp.erfc(x / mp.sqrt(2)) / 2


def phi_cdf(x):
    return mp.erfc(-x / mp.sqrt(2)) / 2


def gauss_delta(s, eps):
    return phi_cdf(-eps / s + s / 2) - mp.exp(eps) * phi_cdf(-eps / s - s / 2)


def laplace_delta(r, eps):
    if eps >= r:
        return mpf(0)
    if eps <= -r:
        return 1 - mp.exp(eps)
    return 1 - mp.exp((eps - r) / 2)


def poisson_remove_delta(z, q, eps):
    a = mp.expm1(eps) + q
    t = z * z * mp.log(a / q) + mpf(1) / 2
    return q * phi_bar((t - 1) / z) - a * phi_bar(t / z)


def poisson_add_delta(z, q, eps):
    a = mp.expm1(-eps) + q
    if a <= 0:
        return mpf(0)
    t = z * z * mp.log(a / q) + mpf(1) / 2
    return (1 - mp.exp(eps) * (1 - q)) * phi_cdf(t / z) - mp.exp(eps) * q * phi_cdf((t - 1) / z)


def objpert_delta(c, s, eps):
    e = eps - c
    mu = s * s / 2
    if e <= mu:
        return 1 - 2 * mp.exp(e) * phi_cdf(-s)
    return 2 * (phi_cdf(-e / s + s / 2) - mp.exp(e) * phi_cdf(-e / s - s / 2))


def exact(x):
    """A f64 (or int) as an exact mpf."""
    return mpf(x)


def make_delta_fn(g):
    """delta(eps) of group g at the current precision."""
    p = {k: exact(v) for k, v in g["_params"].items()}
    f = 1 if g["rel"] == "add-remove" else 2
    m = g["mech"]
    if m == "gaussian":
        s = f * mp.sqrt(exact(g["T"])) / p["sigma"]
        return lambda e: gauss_delta(s, e)
    if m == "laplace":
        r = f / p["scale"]
        return lambda e: laplace_delta(r, e)
    if m == "subsampled-gaussian":
        z, q = p["sigma"], p["q"]
        if q == 1:
            s = f / z
            return lambda e: gauss_delta(s, e)
        assert f == 1
        return lambda e: max(poisson_remove_delta(z, q, e), poisson_add_delta(z, q, e))
    if m == "objpert":
        c = -mp.log1p(-p["beta"] / p["lambda"])
        s = p["L"] / p["sigma"]
        return lambda e: objpert_delta(c, s, e)
    raise ValueError(m)


# --------------------------------------------------------------------------------------------
# Independent check: delta(eps) = E_P[(1 - e^{eps - w(o)})_+] by quadrature.


def kink(loss, eps, lo, hi):
    """The o in [lo, hi] where the monotone loss crosses eps (bisection; None if it does not)."""
    a, b = loss(lo) - eps, loss(hi) - eps
    if a * b > 0:
        return None
    for _ in range(120):
        m = (lo + hi) / 2
        if (loss(m) - eps) * a > 0:
            lo = m
        else:
            hi = m
    return (lo + hi) / 2


def quad_delta(g, eps):
    p = {k: exact(v) for k, v in g["_params"].items()}
    f = 1 if g["rel"] == "add-remove" else 2
    m = g["mech"]
    inf = mp.inf

    def hs(dens_p, loss, pts, lo, hi, scale):
        # Break points at the kink and geometrically around it at the density's local scale.
        k = kink(loss, eps, lo, hi)
        if k is not None:
            pts = pts + [k] + [k + sg * scale * mpf(2) ** j for j in range(-8, 12) for sg in (-1, 1)]
        pts = sorted(set(pts))
        return mp.quad(lambda o: dens_p(o) * max(mpf(0), -mp.expm1(eps - loss(o))), pts, maxdegree=10)

    npdf = mp.npdf
    if m == "gaussian" or (m == "subsampled-gaussian" and p["q"] == 1):
        sd = p["sigma"] if m == "subsampled-gaussian" else p["sigma"] / mp.sqrt(exact(g["T"]))
        # P = N(D, sd^2), Q = N(0, sd^2), D = f.
        d = mpf(f)
        loss = lambda o: mp.log(npdf(o, d, sd) / npdf(o, 0, sd))
        pts = [-inf] + [d + k * sd for k in range(-40, 41, 4)] + [inf]
        t = (eps * sd * sd + d * d / 2) / d  # only to size the break points
        scale = sd / max(1, abs(t - d) / sd)
        return hs(lambda o: npdf(o, d, sd), loss, pts, d - 60 * sd - 60 * d, d + 60 * sd + 60 * d, scale)
    if m == "laplace":
        b, d = p["scale"], mpf(f)
        dens = lambda o: mp.exp(-abs(o) / b) / (2 * b)
        loss = lambda o: mp.log(dens(o) / dens(o - d))
        return hs(dens, loss, [-inf, -60 * b, 0, d, d + 60 * b, inf], -mpf(1), d + 1, b / 4)
    if m == "subsampled-gaussian":
        z, q = p["sigma"], p["q"]
        mix = lambda o: (1 - q) * npdf(o, 0, z) + q * npdf(o, 1, z)
        w = lambda o: mp.log(mix(o) / npdf(o, 0, z))
        pts = [-inf] + [k * z for k in range(-14, 15)] + [1 + k * z for k in range(-14, 15)] + [inf]
        lo, hi = -1 - 200 * z - 200 * z * z, 2 + 200 * z + 200 * z * z
        scale = z / (1 + (1 + abs(eps)) / z)
        rem = hs(mix, w, pts, lo, hi, scale)
        add = hs(lambda o: npdf(o, 0, z), lambda o: -w(o), pts, lo, hi, scale)
        return max(rem, add)
    if m == "objpert":
        c = -mp.log1p(-p["beta"] / p["lambda"])
        s = p["L"] / p["sigma"]
        # |N| half-normal: density 2 phi(x) on x >= 0; loss c + s^2/2 + s x.
        return hs(lambda x: 2 * npdf(x, 0, 1), lambda x: c + s * s / 2 + s * x,
                  [0, 1, 3, 6, 12, 40, inf], mpf(0), mpf(40), 1 / (1 + abs(eps) / s))
    raise ValueError(m)


# --------------------------------------------------------------------------------------------
# Inversion and rounding.


def eps_star(dfun, delta):
    """Smallest eps >= 0 with dfun(eps) <= delta: bisection to 1e-12 relative, then the
    bracketing Illinois iteration to ~1e-48 (bisection again if it fails)."""
    delta = exact(delta)
    if dfun(mpf(0)) <= delta:
        return mpf(0)
    hi = mpf(1)
    while dfun(hi) > delta:
        hi *= 2
        if hi > mpf(10) ** 30:
            raise ValueError("no eps up to 1e30")
    lo = hi / 2 if hi > 1 else mpf(0)
    while hi - lo > mpf(10) ** -12 * hi:
        mid = (lo + hi) / 2
        if dfun(mid) <= delta:
            hi = mid
        else:
            lo = mid
    tol = mpf(10) ** -48
    try:
        r = mp.findroot(lambda e: dfun(e) - delta, (lo, hi), solver="illinois", tol=(tol * delta) ** 2)
        if lo <= r <= hi:
            # Return the feasible side of a 1e-48 bracket around the root.
            a, b = r * (1 - tol), r * (1 + tol)
            if dfun(a) > delta >= dfun(b):
                return b
    except (ValueError, ZeroDivisionError):
        pass
    while hi - lo > tol * hi:
        mid = (lo + hi) / 2
        if dfun(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def down_near(x):
    """(largest f64 <= x, nearest f64, log10 x) as strings / float."""
    x = mpf(x)
    assert x >= 0 and mp.isfinite(x), x
    near = float(x)
    down = near
    if mpf(down) > x:
        down = math.nextafter(down, -math.inf)
    assert mpf(down) <= x
    lg = float(mp.log10(x)) if x > 0 else None
    return repr(down), repr(near), lg


# --------------------------------------------------------------------------------------------
# The groups.

ZG = [10 ** (k / 2) for k in range(-6, 7)]  # 1e-3 .. 1e3 at half decades
TG = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]
QG = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0]


def log_uniform(rng, lo, hi):
    return 10 ** rng.uniform(math.log10(lo), math.log10(hi))


def region_of(g):
    m = g["mech"]
    p = g["_params"]
    if m == "gaussian":
        f = 1 if g["rel"] == "add-remove" else 2
        s = f * math.sqrt(g["T"]) / p["sigma"]
        return "s<0.1" if s < 0.1 else "s<10" if s < 10 else "s<1e3" if s < 1e3 else "s>=1e3"
    if m == "laplace":
        return "b<0.1" if p["scale"] < 0.1 else "b<10" if p["scale"] < 10 else "b>=10"
    if m == "subsampled-gaussian":
        z = p["sigma"]
        zr = "z<0.1" if z < 0.1 else "z<10" if z < 10 else "z>=10"
        qr = "q=1" if p["q"] == 1 else "q<1e-3" if p["q"] < 1e-3 else "q<1"
        return zr + "," + qr
    if m == "objpert":
        return "s<0.1" if p["L"] / p["sigma"] < 0.1 else "s<10" if p["L"] / p["sigma"] < 10 else "s>=10"
    raise ValueError(m)


def groups():
    rng = random.Random(SEED)
    out = []

    def add(mech, rel, T, params, name=None, extra_delta=(), extra_eps=()):
        out.append({"mech": mech, "rel": rel, "T": T, "_params": params, "name": name,
                    "_xd": list(extra_delta), "_xe": list(extra_eps)})

    rels = ["add-remove", "replace-one"]
    # Issue 9 reproducers (section 1), by name.
    for sg in [0.006, 0.0062, 0.005, 0.001]:
        add("gaussian", "add-remove", 1, {"sigma": sg}, name=f"issue9 gaussian sigma={sg} delta=1e-5")
    add("gaussian", "add-remove", 100, {"sigma": 0.05}, name="issue9 gaussian sigma=0.05 T=100")
    add("gaussian", "add-remove", 10, {"sigma": 0.016666666666666666},
        name="issue9 gaussian sigma=1/60 T=10 (above eps 709)")
    add("gaussian", "add-remove", 1_000_000, {"sigma": 100.0},
        name="issue9 gaussian sigma=100 T=1e6 delta=1e-10")
    add("gaussian", "add-remove", 1000, {"sigma": 3.162277660168379},
        name="issue9 gaussian sigma=sqrt(10) T=1000 delta=1e-12")
    add("subsampled-gaussian", "add-remove", 1, {"sigma": 0.005, "q": 0.5},
        name="issue9 subsampled sigma=0.005 q=0.5 delta=1e-5")
    add("subsampled-gaussian", "add-remove", 1, {"sigma": 0.01, "q": 0.5},
        name="issue9 subsampled sigma=0.01 q=0.5 eps=800", extra_eps=[800.0])
    add("subsampled-gaussian", "add-remove", 1, {"sigma": 1.9e-6, "q": 0.01},
        name="issue9 calibrate q=0.01 target eps=1000 region", extra_eps=[705.0, 1000.0])
    add("objpert", "add-remove", 1, {"sigma": 50.0, "lambda": 100.0, "beta": 0.5, "L": math.sqrt(2)},
        name="issue9 objpert sigma=50 lambda=100")

    # Gaussian: full grid sigma x T x relation, then random points.
    for sg in ZG:
        for T in TG:
            for rel in rels:
                add("gaussian", rel, T, {"sigma": sg})
    for _ in range(150):
        add("gaussian", rng.choice(rels), max(1, int(round(log_uniform(rng, 1, 1e6)))),
            {"sigma": log_uniform(rng, 1e-3, 1e3)})
    # Laplace, one release.
    for b in ZG:
        for rel in rels:
            add("laplace", rel, 1, {"scale": b})
    for _ in range(40):
        add("laplace", rng.choice(rels), 1, {"scale": log_uniform(rng, 1e-3, 1e3)})
    # Poisson-subsampled Gaussian, one step (add/remove; q = 1 also replace-one).
    for z in ZG:
        for q in QG:
            add("subsampled-gaussian", "add-remove", 1, {"sigma": z, "q": q})
        add("subsampled-gaussian", "replace-one", 1, {"sigma": z, "q": 1.0})
    for _ in range(120):
        add("subsampled-gaussian", "add-remove", 1,
            {"sigma": log_uniform(rng, 1e-3, 1e3), "q": log_uniform(rng, 1e-6, 1)})
    # Objective perturbation, one release (add/remove).
    for sg in [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]:
        for lam, beta in [(1.0, 0.5), (100.0, 0.5), (0.6, 0.5), (1e4, 0.0)]:
            add("objpert", "add-remove", 1, {"sigma": sg, "lambda": lam, "beta": beta, "L": math.sqrt(2)})
    for _ in range(40):
        beta = rng.choice([0.0, 0.25, 0.5, 1.0])
        lam = beta + log_uniform(rng, 1e-3, 1e4)
        add("objpert", "add-remove", 1, {"sigma": log_uniform(rng, 1e-3, 1e3), "lambda": lam,
                                         "beta": beta, "L": log_uniform(rng, 0.1, 10)})
    return out


def queries(g, dfun):
    qs = []
    e5 = None
    for d in DELTAS + g["_xd"]:
        e = eps_star(dfun, d)
        if d == 1e-5:
            e5 = e
        qs.append(["eps", d, e])
    eps_args = list(EPS_FIXED)
    if e5 is not None and e5 > 0:
        eps_args += [float(e5 / 2), float(e5), float(e5 * 3 / 2)]
    eps_args += g["_xe"]
    for e in eps_args:
        qs.append(["delta", e, dfun(exact(e))])
    return qs


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_path = os.path.join(here, "..", "tests", "fixtures", "campaign.json")
    mp.mp.dps = WORK_DPS
    gs = groups()
    rng = random.Random(SEED + 1)
    rows = []
    n_cases = 0
    for i, g in enumerate(gs):
        g["region"] = region_of(g)
        dfun = make_delta_fn(g)
        qs = queries(g, dfun)
        g["_qs"] = qs
        n_cases += len(qs)
        if i % 100 == 0:
            print(f"{i}/{len(gs)} groups, {n_cases} cases", file=sys.stderr)

    # Check 1: closed forms against quadrature of the definition.
    nq = 0
    worst = mpf(0)
    with mp.workdps(40):
        for g in rng.sample(gs, 50):
            for kind, arg, val in g["_qs"]:
                if kind != "delta" or not (val > mpf(10) ** -200) or val > 1 - mpf(10) ** -6:
                    continue
                qv = quad_delta(g, exact(arg))
                worst = max(worst, abs(qv / val - 1))
                if abs(qv / val - 1) > QUAD_TOL:
                    raise SystemExit(f"quadrature disagrees: {g} eps={arg}: {qv} vs {val}")
                nq += 1
    print(f"check 1: {nq} delta values agree with quadrature, worst relative gap {float(worst):.2e}",
          file=sys.stderr)

    # Check 2: recompute a subsample at CHECK_DPS.
    nh = 0
    for g in rng.sample(gs, 60):
        with mp.workdps(CHECK_DPS):
            dfun = make_delta_fn(g)
            for kind, arg, val in g["_qs"]:
                v2 = dfun(exact(arg)) if kind == "delta" else eps_star(dfun, arg)
                if v2 == 0 and val == 0:
                    continue
                if abs(v2 / val - 1) > mpf(10) ** -35:
                    raise SystemExit(f"precision check failed: {g} {kind} {arg}: {val} vs {v2}")
                nh += 1
    print(f"check 2: {nh} values agree at {CHECK_DPS} digits to 1e-35", file=sys.stderr)

    # Check 3: eps* brackets (on everything).
    for g in gs:
        dfun = make_delta_fn(g)
        for kind, arg, val in g["_qs"]:
            if kind == "eps" and val > 0:
                d = exact(arg)
                assert dfun(val * (1 - mpf(10) ** -30)) > d >= dfun(val * (1 + mpf(10) ** -30)), (g, arg)
    print("check 3: every eps* brackets its delta", file=sys.stderr)

    for i, g in enumerate(gs):
        qrows = []
        for kind, arg, val in g["_qs"]:
            down, near, lg = down_near(val)
            qrows.append([kind, repr(float(arg)), down, near, lg])
        rows.append({
            "id": f"{g['mech']}-{i}",
            "name": g["name"],
            "mech": g["mech"],
            "rel": g["rel"],
            "region": g["region"],
            "T": g["T"],
            "params": {k: repr(float(v)) for k, v in g["_params"].items()},
            "q": qrows,
        })
    meta = {
        "generator": "crates/dp-accounting/tools/campaign.py",
        "mpmath": mp.__version__,
        "work_dps": WORK_DPS,
        "check_dps": CHECK_DPS,
        "seed": SEED,
        "groups": len(rows),
        "cases": n_cases,
    }
    with open(out_path, "w") as fh:
        json.dump({"meta": meta, "groups": rows}, fh, separators=(",", ":"), allow_nan=False)
        fh.write("\n")
    print(f"wrote {out_path}: {len(rows)} groups, {n_cases} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
