"""One flat record per run: what the result store keeps and DuckDB queries.

Columns: ``spec_hash``, ``experiment``, ``point``, axis values (dotted spec paths such as
``workload.load``), convenience columns (``policy``, ``family``, ``load``, ``arrival_rate``,
``seed``, ``replication``, ``arrivals``, and ``axes``: a JSON list of the axis columns), every
metric as ``<name>``, ``<name>_lo``, ``<name>_hi`` (95% interval), ``stable``, ``instability``,
``events``, ``wall_s``, ``schedlab_version``, ``code_hash``, ``spec_json``. An unstable run keeps
its raw means (for diagnosis) with ``stable = false``; aggregation and plots never average them
into a finite mean.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from schedlab.model.spec import SimulationSpec
from schedlab.simulation.result import Result

TIMING_COLUMNS = ("wall_s", "loop_s")


def canonical_json(spec: SimulationSpec) -> str:
    return json.dumps(
        spec.model_dump(mode="json", by_alias=True, exclude_unset=True),
        sort_keys=True,
        separators=(",", ":"),
    )


def spec_hash(spec: SimulationSpec, replication: int = 0) -> str:
    """Identity of a run: its canonical spec (policy, workload, seed, length...) and replication."""
    text = canonical_json(spec) + f"#replication={replication}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def run_record(
    result: Result,
    *,
    replication: int = 0,
    experiment: str = "",
    point: int = -1,
    axes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from schedlab import __version__
    from schedlab._jit import code_hash

    spec = result.spec
    row: dict[str, Any] = {
        "spec_hash": spec_hash(spec, replication),
        "experiment": experiment,
        "point": point,
        "policy": result.policy,
        "family": result.family,
        "load": result.load,
        "arrival_rate": result.rate,
        "seed": spec.run.seed,
        "replication": replication,
        "arrivals": result.counters["arrivals"],
    }
    for name, value in (axes or {}).items():
        row[name] = value
    row["axes"] = json.dumps(list(axes or {}))
    for name, est in result.metrics.items():
        row[name] = _num(est.mean)
        row[f"{name}_lo"] = _num(est.ci95[0])
        row[f"{name}_hi"] = _num(est.ci95[1])
    row.update(
        stable=result.stable,
        instability=result.instability or "",
        events=result.events,
        wall_s=result.wall_s,
        loop_s=result.loop_s,
        schedlab_version=__version__,
        code_hash=code_hash(),
        spec_json=canonical_json(spec),
    )
    return row
