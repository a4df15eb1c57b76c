"""The private row count (issue 32 §7) through the Python front door: under add/remove a fit
without ``public_n`` counts its rows privately first, and the learner reads the count, never
the true number of rows."""

import json
import re

import numpy as np

import dpglm

N = 3000


def classification(n=N, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, (x @ np.arange(1, d + 1, dtype=float) > 0).astype(int)


def releases(model):
    """The stored tree's releases, depth first."""
    out = []

    def walk(e):
        if e["kind"] == "release":
            out.append(e)
        for sub in e.get("events", []):
            walk(sub)
        if "event" in e:
            walk(e["event"])

    walk(json.loads(model.privacy_event_.to_json())["event"])
    return out


def counted(model):
    """The released count ``n̂`` of the tree's first release, or None."""
    first = releases(model)[0]
    found = re.search(r"private row count .*released n = (\d+)", first["label"])
    return int(found.group(1)) if found else None


def test_an_add_remove_fit_reads_the_private_count_not_the_true_n():
    x, y = classification()
    m = dpglm.LogisticRegression(algorithm="dp-sgd", scale="none", random_state=1).fit(x, y)
    n = counted(m)
    assert n is not None and n != N, n
    assert releases(m)[0]["mechanism"] == "pure-dp"
    # The count's ε is 5% of the target, inside the reported total.
    assert 0.049 < releases(m)[0]["parameters"]["epsilon"] <= 0.05
    assert m.privacy_report_["epsilon"] <= 1.0
    noise = m.privacy_report_["noise"]
    assert noise["sampling_rate"] == 256 / n, (noise, n)
    notes = " ".join(m.privacy_report_["notes"])
    assert "a private count" in notes and "treated as public" not in notes, notes
    assert "is a private count" in m.privacy_report_["statement"]


def test_a_public_n_or_replace_one_counts_nothing():
    x, y = classification()
    given = dpglm.LogisticRegression(
        algorithm="dp-sgd", scale="none", public_n=N, random_state=1
    ).fit(x, y)
    assert counted(given) is None
    assert given.privacy_report_["noise"]["sampling_rate"] == 256 / N
    # DP-GD's default relation is replace-one: n is public there.
    gd = dpglm.LogisticRegression(algorithm="dp-gd", scale="none", random_state=1).fit(x, y)
    assert gd.privacy_report_["neighbouring"] == "replace-one"
    assert counted(gd) is None


def test_the_default_learner_counts_and_stays_accurate():
    x, y = classification()
    m = dpglm.LogisticRegression(random_state=1).fit(x, y)
    assert counted(m) is not None
    majority = max(y.mean(), 1 - y.mean())
    assert m.score(x, y) > majority + 0.2, m.score(x, y)
