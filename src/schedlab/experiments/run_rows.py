"""One flat row per run: what the result store keeps and DuckDB queries.

Columns: ``spec_hash``, ``experiment``, ``point``, axis values (dotted spec paths such as
``workload.load``), convenience columns (``policy``, ``family``, ``load``, ``arrival_rate``,
``seed``, ``replication``, ``arrivals``, and ``axes``: a JSON list of the axis columns), every
metric as ``<name>``, ``<name>_lo``, ``<name>_hi`` (95% interval) and ``<name>_reliable``,
``batch_values`` (JSON: each metric's batch values in batch order, for paired batch means,
experiments/stats.py),
``stable``, ``instability``, ``reliable``, ``unreliability``, ``long_enough``, ``backlog`` (a
trace replay whose backlog grew through the whole log, simulation/result.py), ``time_unit`` (the
trace's: "s"; empty: the model's time units), ``slowdown_threshold`` (tau of the bounded
slowdown), ``events``, ``wall_s``, ``schedlab_version``, ``code_hash``, ``spec_json``.

An unstable run (``stable = false``, reason in ``instability``) stores NaN in the columns of every
metric without a steady-state meaning (response times, numbers in system...), so no query can
print or average a number for it (``avg`` over a NaN is NaN). ``<name>_reliable = false`` marks a
metric whose interval cannot be taken as an estimate (measurement/reliability.py: judged per
metric);
``reliable = false`` marks a run with any such metric (or an unstable one); ``unreliability`` says
which metrics and why; ``long_enough`` is false when the run is shorter than the relaxation-time
rule. Rows stored before the per-metric flags existed have no ``<name>_reliable``: for them
:func:`metric_reliable` takes the run's ``reliable`` for each metric (as they were read then).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from schedlab.measurement.reliability import describe
from schedlab.model.spec import SimulationSpec
from schedlab.simulation.result import Result

TIMING_COLUMNS = ("wall_s", "loop_s")
BATCHES = "batch_values"  # JSON: metric -> its batch values in batch order (null: none)


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


def _num(x: float, stable: bool = True) -> float | None:
    """Finite values as they are; NaN for an unstable run's masked metrics; else null."""
    if math.isfinite(x):
        return float(x)
    return None if stable else math.nan


def metric_reliable(row: dict[str, Any], metric: str) -> bool:
    """Whether the stored run's interval of ``metric`` can be trusted: its ``<metric>_reliable``,
    or the run's ``reliable`` for rows stored before the per-metric flags (or a missing flag)."""
    flag = row.get(f"{metric}_reliable")
    if flag is None:
        flag = row.get("reliable", True)
    return flag is not False


def run_row(
    result: Result,
    *,
    replication: int = 0,
    experiment: str = "",
    point: int = -1,
    axes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from schedlab._jit import code_hash
    from schedlab._version import __version__

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
        row[name] = _num(est.mean, result.stable)
        row[f"{name}_lo"] = _num(est.ci95[0], result.stable)
        row[f"{name}_hi"] = _num(est.ci95[1], result.stable)
        row[f"{name}_reliable"] = est.reliable
    row[BATCHES] = json.dumps(
        {n: [_num(x) for x in e.batches] for n, e in result.metrics.items() if e.batches}
        if result.stable
        else {}
    )
    row.update(
        stable=result.stable,
        instability=result.instability or "",
        reliable=result.reliable,
        unreliability=describe(result.unreliable) or ("unstable" if not result.stable else ""),
        long_enough=result.too_short is None,
        backlog=result.backlog or "",
        time_unit=result.time_unit or "",
        slowdown_threshold=spec.run.slowdown_threshold,
        events=result.events,
        wall_s=result.wall_s,
        loop_s=result.loop_s,
        schedlab_version=__version__,
        code_hash=code_hash(),
        spec_json=canonical_json(spec),
    )
    return row
