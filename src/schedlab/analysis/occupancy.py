"""What a one-server run's job records say about the server's occupancy (psychas2019 §VII-A).

psychas2019's Fig. 3 arguments are about which jobs share the server: VQS never packs a 0.4 and a
0.6 job together (§VII-A1), and BF-J/S locks into configuration (2,1) of sizes 2 and 5
(§VII-A2). These functions count that from the per-job records of a run (``run.jobs = true``):
the columns ``demand[resource]``, ``start`` and ``finish``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def job_columns(result: Any) -> dict[str, np.ndarray]:
    """The per-job records of a :class:`schedlab.Result` as NumPy columns by name."""
    return {k: np.asarray(v) for k, v in result.jobs.to_pydict().items()}


def co_location(jobs: dict[str, np.ndarray], a: float, b: float) -> int:
    """How many times a job of size a started while one of size b ran, or vice versa (1 server)."""
    d = jobs["demand[resource]"]
    ev = []
    for j in np.flatnonzero((d == a) | (d == b)):
        ev.append((jobs["finish"][j], 0, d[j]))
        ev.append((jobs["start"][j], 1, d[j]))
    ev.sort()
    active = {a: 0, b: 0}
    hits = 0
    for _, kind, size in ev:
        if kind:
            other = b if size == a else a
            hits += active[other] > 0
            active[size] += 1
        else:
            active[size] -= 1
    return int(hits)


def time_in_mix(jobs: dict[str, np.ndarray], mix: dict[float, int], t0: float, t1: float) -> float:
    """Fraction of [t0, t1) during which the server holds exactly ``mix`` (size -> count)."""
    d = jobs["demand[resource]"]
    ev = []
    for j in np.flatnonzero(np.isin(d, list(mix))):
        ev.append((jobs["start"][j], 1, d[j]))
        ev.append((jobs["finish"][j], -1, d[j]))
    ev.sort(key=lambda e: (e[0], e[1]))
    count = dict.fromkeys(mix, 0)
    inside, last = 0.0, t0
    for t, k, size in ev:
        lo, hi = max(last, t0), min(t, t1)
        if hi > lo and all(count[s] == n for s, n in mix.items()):
            inside += hi - lo
        last = t
        count[size] += k
    if t1 > last and all(count[s] == n for s, n in mix.items()):
        inside += t1 - max(last, t0)
    return inside / (t1 - t0)
