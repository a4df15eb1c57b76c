"""Times Google's dp_accounting on the cases of benches/benches/accounting.rs, so the ratios in
an issue note come from one run on one machine.

    pip install dp-accounting==0.6.0
    python3 benches/peers/accounting_peers.py [path/to/dpglm]

Prints one line per case: name, median seconds over 5 runs, and the value computed. Given the
path of a release `dpglm` binary, it also times `dpglm account` on the DP-SGD case as a whole
process (median of 21 runs, start-up included), at its default accuracy and refined to
dp_accounting's grid, and prints the ratios to dp_accounting's in-process PLD time measured in
the same run.
"""
import json
import statistics
import subprocess
import sys
import time

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant as pld
from dp_accounting.rdp import rdp_privacy_accountant as rdp

Q, STEPS, DELTA = 0.004, 10_000, 1e-5


def event(sigma, steps):
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(Q, dpa.GaussianDpEvent(sigma)), steps)


def pld_epsilon():
    acc = pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(event(1.0, STEPS))
    return acc.get_epsilon(DELTA)


def rdp_epsilon():
    acc = rdp.RdpAccountant()
    acc.compose(event(1.0, STEPS))
    return acc.get_epsilon(DELTA)


def pld_calibration():
    return dpa.calibrate_dp_mechanism(
        lambda: pld.PLDAccountant(value_discretization_interval=1e-4),
        lambda s: event(s, 2500),
        1.0,
        DELTA,
    )


results = {}
for name, f, runs in [
    ("pld_epsilon_dpsgd_q0.004_s1_T1e4", pld_epsilon, 5),
    ("rdp_epsilon_dpsgd_q0.004_s1_T1e4", rdp_epsilon, 5),
    ("calibration/pld_sigma_eps1_q0.004_T2500", pld_calibration, 3),
]:
    times, value = [], None
    for _ in range(runs):
        t = time.perf_counter()
        value = f()
        times.append(time.perf_counter() - t)
    results[name] = statistics.median(times)
    print(f"{name}\t{results[name]:.6f}\t{value!r}")

if len(sys.argv) > 1:
    base = [sys.argv[1], "account", "--mechanism", "subsampled-gaussian", "--sigma", "1",
            "--q", str(Q), "--steps", str(STEPS), "--delta", str(DELTA), "--json"]
    peer = results["pld_epsilon_dpsgd_q0.004_s1_T1e4"]
    # The default (the coarsest grid within 0.1% of the limit: h = 2e-4 here), and a target
    # that refines to dp_accounting's own grid h = 1e-4 (the same epsilon to 1e-9).
    for label, extra in [("default", []), ("grid_1e-4", ["--epsilon-error", "3e-4"])]:
        times, out = [], None
        for _ in range(21):
            t = time.perf_counter()
            out = subprocess.run(base + extra, check=True, capture_output=True, text=True).stdout
            times.append(time.perf_counter() - t)
        ours = statistics.median(times)
        v = json.loads(out)
        print(f"dpglm_account_process_dpsgd_{label}\t{ours:.6f}\t{v['epsilon']!r}\t"
              f"h = {v['notes'].get('discretisation')}")
        print(f"ratio dp_accounting in-process / dpglm whole process ({label}): "
              f"{peer / ours:.1f}x")
    # Calibration: the smallest sigma for (1, 1e-5) at q = 0.004, T = 2500, as a whole process.
    cmd = [sys.argv[1], "calibrate", "--mechanism", "subsampled-gaussian", "--q", str(Q),
           "--steps", "2500", "--target-epsilon", "1", "--delta", str(DELTA), "--json"]
    times, out = [], None
    for _ in range(5):
        t = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - t)
    ours = statistics.median(times)
    peer = results["calibration/pld_sigma_eps1_q0.004_T2500"]
    print(f"dpglm_calibrate_process_dpsgd\t{ours:.6f}\t{json.loads(out)['sigma']!r}")
    print(f"ratio dp_accounting in-process / dpglm whole process (calibration): {peer / ours:.1f}x")
