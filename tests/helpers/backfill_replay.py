"""Replays of small hand-made traces through a backfilling policy: the start time of every job
(tests of policies/pooled/backfill.py)."""

from __future__ import annotations

import math
from pathlib import Path

import schedlab


def write_trace(path: Path, jobs: list[tuple[float, float, float, float]]) -> Path:
    """jobs: (arrival, run time, need, requested time) with NaN for no requested time."""
    lines = ["arrival,duration,need,estimate"]
    lines += [f"{a},{d},{n},{'' if math.isnan(e) else e}" for a, d, n, e in jobs]
    path.write_text("\n".join(lines) + "\n")
    return path


def replay(path: Path, policy: str, k: int = 4, **settings) -> tuple[list[float], dict]:
    """Start time of every job (arrival order) and the counters of one replay."""
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": policy, **settings},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    result = schedlab.simulate(spec)
    assert result.counters["preemptions"] == 0
    return [float(x) for x in result.jobs.to_pydict()["start"]], result.counters
