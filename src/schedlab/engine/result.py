"""The result of a simulation: metrics with confidence intervals, stability, counters, tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from schedlab.engine.jobs_output import read_jobs
from schedlab.engine.metrics import Estimate, t_interval
from schedlab.model.spec import SimulationSpec


@dataclass
class Result:
    """What :func:`schedlab.simulate` returns.

    ``metrics`` maps names (``mean_response_time``, ``mean_number_in_system``,
    ``utilization[servers]``, ``mean_response_time[<class>]`` ...) to :class:`Estimate`.
    ``stable`` is False when the run shows no steady state (``instability`` says why); its means
    are then not estimates of anything and are reported as unstable, never as finite numbers.
    """

    spec: SimulationSpec
    policy: str
    family: str
    load: float
    rate: float
    metrics: dict[str, Estimate]
    stable: bool
    instability: str | None
    events: int
    wall_s: float
    loop_s: float
    counters: dict[str, int]
    warnings: list[str]
    timeseries: pa.Table
    jobs_path: Path | None = None  # the per-job Parquet table (run.jobs), streamed during the run
    jobs_table: pa.Table | None = None  # or the table itself when small (run.jobs = true)
    replications: list[Result] = field(default_factory=list)

    @property
    def jobs(self) -> pa.Table | None:
        """The per-job table in arrival order (None unless run.jobs): read from ``jobs_path``, or
        the in-memory table of a small run."""
        if self.jobs_table is not None:
            return self.jobs_table.sort_by("job")
        return None if self.jobs_path is None else read_jobs(self.jobs_path)

    def __getitem__(self, name: str) -> Estimate:
        return self.metrics[name]

    @property
    def events_per_second(self) -> float:
        return self.events / self.loop_s if self.loop_s > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"metrics": {name: {"mean", "ci95"}}, "stable", "events", "wall_s", ...}``.

        Metrics of an unstable run are reported with mean null: they estimate nothing."""
        metrics = {
            name: (est.to_dict() if self.stable else {"mean": None, "ci95": [None, None]})
            for name, est in self.metrics.items()
        }
        return {
            "metrics": metrics,
            "stable": self.stable,
            "events": self.events,
            "wall_s": round(self.wall_s, 6),
            "instability": self.instability,
            "policy": self.policy,
            "family": self.family,
            "load": self.load,
            "arrival_rate": self.rate,
            "replications": max(1, len(self.replications)),
            "counters": self.counters,
            "warnings": self.warnings,
        }


def combine_replications(reps: list[Result]) -> Result:
    """Independent replications: mean of the replication means with a Student-t interval."""
    first = reps[0]
    metrics: dict[str, Estimate] = {}
    for name in first.metrics:
        values = np.array([r.metrics[name].mean for r in reps if name in r.metrics])
        metrics[name] = t_interval(float(values.mean()), values)
    unstable = [r.instability for r in reps if not r.stable]
    counters = {k: sum(r.counters[k] for r in reps) for k in first.counters}
    warnings = sorted({w for r in reps for w in r.warnings})
    return Result(
        spec=first.spec,
        policy=first.policy,
        family=first.family,
        load=first.load,
        rate=first.rate,
        metrics=metrics,
        stable=not unstable,
        instability=(
            f"{len(unstable)} of {len(reps)} replications unstable: {unstable[0]}"
            if unstable
            else None
        ),
        events=sum(r.events for r in reps),
        wall_s=sum(r.wall_s for r in reps),
        loop_s=sum(r.loop_s for r in reps),
        counters=counters,
        warnings=warnings,
        timeseries=first.timeseries,
        jobs_path=first.jobs_path,
        jobs_table=first.jobs_table,
        replications=reps,
    )
