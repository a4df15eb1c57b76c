"""Writes golden.json: the answers of the `dpglm` CLI (the Rust crates) to the cases in
cases.py, which test_accounting.py compares dpglm.accounting against.

Run from the repository root after `cargo build --release -p dp-cli`, with dpglm installed
(cases.py builds events with it):

    python crates/dp-py/tests/make_golden.py [path/to/dpglm]
"""

import json
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from cases import CALIBRATIONS, CASES, SHUFFLES  # noqa: E402

HERE = pathlib.Path(__file__).parent
CLI = sys.argv[1] if len(sys.argv) > 1 else "target/release/dpglm"


def run(args):
    out = subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    golden = {"account": {}, "calibrate": {}, "shuffle": {}}
    for name, (flags, _, _, _, (what, value)) in CASES.items():
        r = run(["account", *flags, f"--{what}", repr(value)])
        golden["account"][name] = {k: r[k] for k in ("epsilon", "delta", "accountant", "neighbouring")}
    for name, (flags, *_rest) in CALIBRATIONS.items():
        r = run(["calibrate", *flags])
        golden["calibrate"][name] = {"sigma": r["sigma"], "epsilon": r["epsilon"]}
    for name, (flags, *_rest) in SHUFFLES.items():
        r = run(["account", "--mechanism", "shuffling", *flags])
        golden["shuffle"][name] = {k: r[k] for k in ("epsilon", "delta", "method")}
    path = HERE / "golden.json"
    path.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
