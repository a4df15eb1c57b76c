"""Times Google's dp_accounting on the cases of benches/benches/accounting.rs, so the ratios in
an issue note come from one run on one machine.

    pip install dp-accounting==0.6.0
    python3 benches/peers/accounting_peers.py

Prints one line per case: name, median seconds over 5 runs, and the value computed.
"""
import statistics
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
    print(f"{name}\t{statistics.median(times):.6f}\t{value!r}")
