"""Times dpglm.accounting (the Python package) beside Google's dp_accounting in one process,
on the cases of accounting_peers.py, so the ratios in an issue note come from one run.

    pip install dp-accounting==0.6.0 ./crates/dp-py
    python3 benches/peers/accounting_python.py

Prints one line per case: name, median seconds, and the value computed; then the ratios, and
the import time of `dpglm` in a fresh interpreter (median of 11).
"""
import statistics
import subprocess
import sys
import time

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant as pld
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from dpglm import accounting as ours

Q, STEPS, DELTA = 0.004, 10_000, 1e-5


def peer_event(sigma, steps):
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(Q, dpa.GaussianDpEvent(sigma)), steps)


def our_event(sigma, steps):
    return ours.SelfComposedDpEvent(ours.PoissonSampledDpEvent(Q, ours.GaussianDpEvent(sigma)), steps)


CASES = [
    ("dp_accounting_pld", 5,
     lambda: pld.PLDAccountant(value_discretization_interval=1e-4)
     .compose(peer_event(1.0, STEPS)).get_epsilon(DELTA)),
    ("dpglm_pld_default", 21,
     lambda: ours.PLDAccountant().compose(our_event(1.0, STEPS)).get_epsilon(DELTA)),
    # Refined until the error estimate meets 3e-4: dp_accounting's own grid h = 1e-4.
    ("dpglm_pld_grid_1e-4", 21,
     lambda: ours.PLDAccountant(epsilon_error=3e-4).compose(our_event(1.0, STEPS))
     .get_epsilon(DELTA)),
    ("dp_accounting_rdp", 5,
     lambda: rdp.RdpAccountant().compose(peer_event(1.0, STEPS)).get_epsilon(DELTA)),
    ("dpglm_rdp", 21,
     lambda: ours.RdpAccountant().compose(our_event(1.0, STEPS)).get_epsilon(DELTA)),
    ("dp_accounting_calibration_T2500", 3,
     lambda: dpa.calibrate_dp_mechanism(
         lambda: pld.PLDAccountant(value_discretization_interval=1e-4),
         lambda s: peer_event(s, 2500), 1.0, DELTA)),
    ("dpglm_calibration_T2500", 5,
     lambda: ours.calibrate_noise(lambda s: our_event(s, 2500), 1.0, DELTA).value),
]

results = {}
for name, runs, f in CASES:
    times, value = [], None
    for _ in range(runs):
        t = time.perf_counter()
        value = f()
        times.append(time.perf_counter() - t)
    results[name] = statistics.median(times)
    print(f"{name}\t{results[name]:.6f}\t{value!r}")

for a, b in [("dp_accounting_pld", "dpglm_pld_default"), ("dp_accounting_pld", "dpglm_pld_grid_1e-4"),
             ("dp_accounting_rdp", "dpglm_rdp"),
             ("dp_accounting_calibration_T2500", "dpglm_calibration_T2500")]:
    print(f"ratio {a} / {b}: {results[a] / results[b]:.1f}x")

code = "import time; t = time.perf_counter(); import dpglm; print(time.perf_counter() - t)"
imports = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout) for _ in range(11)]
print(f"import_dpglm\t{statistics.median(imports):.6f}")
