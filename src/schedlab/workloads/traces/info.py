"""Summary statistics of a canonical job table (``schedlab trace info``).

Jobs, time span, arrival rate, inter-arrival, duration, demand and need statistics, and the
offered load, defined as for simulations (docs/models.md, decision 0001 §6): for resource r,

    rho_r = lambda * E[demand_r * duration] / (servers * capacity_r)

with lambda = (jobs - 1) / span the trace's arrival rate, demands normalized to one server
(capacity 1) and, for the pooled family, rho = lambda * E[need * duration] / k. This is exactly
the load ``schedlab simulate`` reports when it replays the table (with ``time_scale`` = 1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from schedlab.workloads.traces.canonical import demand_columns, get_meta

STAT_COLUMNS = ("duration", "estimate")


def info_columns(names: list[str]) -> list[str]:
    """The columns :func:`summarize` reads (the rest, e.g. ``source_id``, need not be loaded)."""
    wanted = ("arrival", "duration", "estimate", "demand", "need")
    return [c for c in names if c in wanted or c.startswith("demand_")]


@dataclass(frozen=True)
class Stats:
    """Distribution summary of one column (NaN/null values are counted as ``missing``)."""

    mean: float
    cv: float
    min: float
    p50: float
    p90: float
    p99: float
    max: float
    missing: int

    @classmethod
    def of(cls, values: np.ndarray) -> Stats:
        v = values[np.isfinite(values)]
        missing = int(values.size - v.size)
        if v.size == 0:
            nan = math.nan
            return cls(nan, nan, nan, nan, nan, nan, nan, missing)
        mean = float(v.mean())
        cv = float(v.std() / mean) if mean else math.nan
        p50, p90, p99 = (float(x) for x in np.percentile(v, [50, 90, 99]))
        return cls(mean, cv, float(v.min()), p50, p90, p99, float(v.max()), missing)


@dataclass
class TraceInfo:
    """What ``schedlab trace info`` prints."""

    jobs: int
    first_arrival: float
    last_arrival: float
    span: float
    rate: float
    arrival_instants: int
    interarrival: Stats | None
    columns: dict[str, Stats]
    work_rate: dict[str, float]  # lambda * E[d_r * s]: busy servers' worth of work
    servers: int | None
    load: dict[str, float]
    k: int | None
    pooled_load: float | None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["meta"] = {k: v for k, v in self.meta.items() if k != "machines"}
        if "machines" in self.meta:
            d["machines"] = self.meta["machines"]
        return d


def _numpy(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def summarize(table: pa.Table, servers: int | None = None, k: int | None = None) -> TraceInfo:
    """Statistics of a canonical table; loads on ``servers`` unit servers (demand columns) and
    on ``k`` pooled servers (``need``; default: the k the trace gives, e.g. SWF MaxProcs)."""
    meta = get_meta(table)
    n = table.num_rows
    arrival = _numpy(table, "arrival") if n else np.empty(0)
    if n and not np.all(arrival[1:] >= arrival[:-1]):  # canonical tables are sorted already
        arrival = np.sort(arrival)
    duration = _numpy(table, "duration") if n else np.empty(0)
    first = float(arrival[0]) if n else math.nan
    last = float(arrival[-1]) if n else math.nan
    span = last - first if n else 0.0
    rate = (n - 1) / span if span > 0 else math.nan
    gaps = np.diff(arrival) if n > 1 else None
    columns: dict[str, Stats] = {}
    work: dict[str, float] = {}
    names = [c for c in STAT_COLUMNS if c in table.column_names]
    names += demand_columns(table)
    names += [c for c in ("demand", "need") if c in table.column_names]
    for name in names:
        values = _numpy(table, name) if n else np.empty(0)
        columns[name] = Stats.of(values)
        if name.startswith("demand") or name == "need":
            product = values * duration
            work[name] = float(rate * np.nanmean(product)) if n > 1 else math.nan
    load: dict[str, float] = {}
    if servers:
        load = {c: w / servers for c, w in work.items() if c.startswith("demand")}
    k = k or meta.get("k")
    pooled = work["need"] / k if k and "need" in work else None
    return TraceInfo(
        jobs=n,
        first_arrival=first,
        last_arrival=last,
        span=span,
        rate=rate,
        arrival_instants=int(np.count_nonzero(np.diff(arrival)) + 1) if n else 0,
        interarrival=Stats.of(gaps) if gaps is not None else None,
        columns=columns,
        work_rate=work,
        servers=servers,
        load=load,
        k=int(k) if k else None,
        pooled_load=pooled,
        meta=meta,
    )


def human_time(seconds: float) -> str:
    """``90061 s`` -> ``1.04 d``; short spans in s, min or h."""
    if not math.isfinite(seconds):
        return "-"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{float(f'{seconds / size:.3g}'):,.10g} {unit}"
    return f"{float(f'{seconds:.3g}'):,.10g} s"
