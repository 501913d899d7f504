"""grosof2023's policies on real HPC logs: KTH-SP2 and HPC2N replayed on the pooled model.

Not a figure of the paper: grosof2023 (§1, §3.1) motivates multiserver jobs with supercomputing
workloads whose server needs are not powers of two; this experiment runs the policies that accept
any need on two Parallel Workloads Archive logs (../shared/data/swf):

* k = MaxProcs of the log's header (KTH-SP2: 100, HPC2N: 240); a job's need is its allocated
  processors, its duration its run time, its user estimate the requested time (SWF fields 5, 4, 9);
* the log's arrival times are rescaled so that the offered load rho = lambda E[need duration] / k
  takes each value of LOADS (``workload.load`` of a trace replay); the order of arrivals, the needs
  and the durations are the log's;
* policies: FCFS (head-of-line blocking), EASY backfilling with the users' estimates
  (non-preemptive, what KTH ran), preemptive FirstFit (FCFS order), MostServersFirst,
  LeastServersFirst, FirstFitSRPT and GreedySRPT (sizes known, §6), and SRPT-1, the
  resource-pooled lower bound (§4.1) simulated on the same jobs.

Each point is one replay of the whole log (``--quick``: its first QUICK_JOBS jobs); the interval is
the engine's batch-means interval over that replay. A replay is a finite sample path, never
"unstable": its numbers are reported at every load, with a backlog note where its queue grew
through the whole log (docs/statistics.md). Claim checked: SRPT-1 is below every policy at
every load (it must be: no policy on k servers does better, §4.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from schedlab.datasets import data_file
from schedlab.model.spec import SimulationSpec, parse_spec
from schedlab.report.figures import Point, line_plot
from schedlab.reproduce.ordering import BELOW, compare, describe, lower_claim
from schedlab.reproduce.registry import (
    Claim,
    Context,
    Judge,
    Outcome,
    Reproduction,
    judged,
    label,
    register,
)

LOGS = {
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": "HPC2N-2002-2.1-cln.swf.gz",
}
LOADS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
QUICK_LOADS = (0.5, 0.7, 0.9)
QUICK_JOBS = 5_000
POLICIES = (
    "fcfs",
    "easy-backfill",
    "preemptive-first-fit",
    "most-servers-first",
    "least-servers-first",
    "first-fit-srpt",
    "greedy-srpt",
    "srpt-1",
)


def log_table(ctx: Context, log: str) -> tuple[Path, int]:
    """The log converted once into ``ctx.out`` (need = allocated processors), and its k."""
    from schedlab.workloads.traces import Transforms, convert
    from schedlab.workloads.traces.canonical import get_meta

    target = ctx.out / f"{log}{'-quick' if ctx.quick else ''}.parquet"
    if not target.exists():
        source = data_file(f"swf/{LOGS[log]}", f"the {log} SWF log")
        target.parent.mkdir(parents=True, exist_ok=True)
        window = Transforms(window_jobs=(0, QUICK_JOBS)) if ctx.quick else None
        convert(source, "swf", target, transforms=window)
    import pyarrow.parquet as pq

    return target, int(get_meta(pq.read_schema(target))["k"])


def log_spec(path: Path, k: int, policy: str, load: float) -> SimulationSpec:
    return parse_spec(
        {
            "cluster": {"servers": k},
            "workload": {"load": load, "arrivals": {"process": "trace", "path": str(path)}},
            "model": {"family": "pooled"},
            "policy": {"name": policy},
            "run": {"warmup": 0.0, "timeseries": 0, "check": False, "allow_unstable": True},
        }
    )


def _mean(rec: dict[str, Any]) -> float:
    """E[T] of a replay (math.inf for a run marked unstable: never a trace replay, which is
    finite and reports its numbers)."""
    value = rec["mean_response_time"]
    return math.inf if value is None or not rec["stable"] else float(value)


def _point(policy: str, load: float, rec: dict[str, Any]) -> Point:
    lo, hi = rec["mean_response_time_lo"], rec["mean_response_time_hi"]
    return Point(
        label(policy),
        load,
        _mean(rec),
        math.nan if lo is None else lo,
        math.nan if hi is None else hi,
        rec["stable"],
    )


def _exact_row(log: str, policy: str, load: float, rec: dict[str, Any]) -> Point:
    """A replay's E[T] as a claims row: one deterministic replay of the log's jobs, so an exact
    value (no interval)."""
    value = _mean(rec)
    return Point(f"{log}: {label(policy)}", load, value if math.isfinite(value) else math.nan,
                 math.nan, math.nan, bool(rec["stable"]))  # fmt: skip


def bound_judge(logs: list[str], loads: tuple[float, ...]) -> Judge:
    """SRPT-1 (the resource-pooled bound, on the same jobs) below every policy at every load,
    through :func:`compare` (a growing replay is above a settled one; two growing replays are
    NOT RESOLVED)."""

    def judge(rows: Sequence[Point]) -> list[Claim]:
        at = {(r.series, r.x): r for r in rows}
        orders, evidence = [], []
        for log in logs:
            for load in loads:
                bound = at[(f"{log}: {label('srpt-1')}", load)]
                here = [
                    compare(bound, at[(f"{log}: {label(p)}", load)])
                    for p in POLICIES
                    if p != "srpt-1"
                ]
                orders += here
                bad = [o.reason for o in here if o.order != BELOW]
                evidence.append(
                    f"{log} rho={load}: SRPT-1 {describe(bound)} s"
                    + (f" (not below: {'; '.join(bad)})" if bad else "")
                )
        return [
            lower_claim(
                "SRPT-1 lies below every policy at every load (§4.1)",
                orders,
                "; ".join(evidence),
                clear=False,
            )
        ]

    return judge


def _ranking(runs: dict, log: str, loads: tuple[float, ...]) -> str:
    rows = []
    for load in loads:
        order = sorted(
            (p for p in POLICIES if p != "srpt-1"),
            key=lambda p: _mean(runs[(log, p, load)]),
        )
        rows.append(
            f"rho={load}: "
            + " < ".join(
                f"{label(p)} "
                + (f"{m:.3g}" if math.isfinite(m := _mean(runs[(log, p, load)])) else "growing")
                for p in order
            )
        )
    return f"{log}, E[T] in seconds, best first: " + "; ".join(rows)


def run_logs(ctx: Context) -> Outcome:
    loads = QUICK_LOADS if ctx.quick else LOADS
    tables = {log: log_table(ctx, log) for log in LOGS}
    keys = [(log, p, load) for log in LOGS for load in loads for p in POLICIES]
    specs = [log_spec(*tables[log], p, load) for log, p, load in keys]
    records = ctx.run(specs, experiment="swf-logs")
    runs = {key: recs[0] for key, recs in zip(keys, records, strict=True)}
    figures, notes = [], []
    for log in LOGS:
        k = tables[log][1]
        points = [_point(p, load, runs[(log, p, load)]) for p in POLICIES for load in loads]
        paths = line_plot(
            points,
            ctx.out / f"swf-{log.lower()}",
            x="offered load rho (arrival times rescaled)",
            y="mean response time E[T] (s)",
            hue="policy",
            title=f"{log} log on k = {k} pooled servers, need = processors",
            logy=True,
        )
        figures.append(paths[0])
        notes.append(_ranking(runs, log, loads))
        notes.append(f"numbers in {paths[2]}")
    jobs = f"first {QUICK_JOBS:,} jobs of each log" if ctx.quick else "whole logs"
    notes.insert(0, f"{jobs}; one replay per point")
    rows = [_exact_row(log, p, load, rec) for (log, p, load), rec in runs.items()]
    return judged(figures, rows, bound_judge(list(LOGS), loads), notes)


register(
    Reproduction(
        "swf-logs",
        "grosof2023",
        "real logs (not a paper figure)",
        "general-need policies on the KTH-SP2 and HPC2N logs, load rescaled",
        run_logs,
        f"whole logs, loads {LOADS[0]}-{LOADS[-1]} (--quick: first {QUICK_JOBS:,} jobs, "
        f"loads {QUICK_LOADS})",
        data=tuple(f"swf/{f}" for f in LOGS.values()),
    )
)
