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
from schedlab.engine.reliability import assess
from schedlab.model.spec import SimulationSpec


@dataclass
class Result:
    """What :func:`schedlab.simulate` returns.

    ``metrics`` maps names (``mean_response_time``, ``mean_number_in_system``,
    ``utilization[servers]``, ``mean_response_time[<class>]`` ...) to :class:`Estimate`.
    ``stable`` is False when the run shows no steady state (``instability`` says why: a known
    stability limit, or the trend test of :mod:`schedlab.engine.stability`). The metrics that only
    mean something in steady state (response and waiting times and their quantiles, numbers in
    system and in queue) are then NaN with NaN intervals; their raw averages over the window are
    kept apart in ``transient`` (not estimates of anything: they grow with the run length).
    Throughput, utilization and reward rate stay: an overloaded system serves at its saturated
    throughput, which they estimate.

    ``unreliable`` maps each metric of a stable run that cannot be taken as an estimate to the
    reason (:mod:`schedlab.engine.reliability`); ``reliable`` is True when there is none.
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
    counters: dict[str, float]  # engine counts (int) and policy reports
    warnings: list[str]
    timeseries: pa.Table
    jobs_path: Path | None = None  # the per-job Parquet table (run.jobs), streamed during the run
    jobs_table: pa.Table | None = None  # or the table itself when small (run.jobs = true)
    replications: list[Result] = field(default_factory=list)
    too_short: str | None = None  # the relaxation-time rule's reason (engine/reliability.py)
    transient: dict[str, Estimate] = field(default_factory=dict)
    unreliable: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        """An unstable run never carries a finite steady-state mean: move them to transient.
        A stable run's metrics are checked for reliability."""
        if self.stable:
            self.unreliable = assess(self.metrics, self.too_short)
            return
        for name, est in list(self.metrics.items()):
            if steady_state_only(name):
                if math.isfinite(est.mean):
                    self.transient[name] = est
                self.metrics[name] = NO_ESTIMATE

    @property
    def reliable(self) -> bool:
        return self.stable and not self.unreliable

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

    def __repr__(self) -> str:
        return "\n".join(self._summary_lines())

    def _summary_lines(self, metrics: int = 4) -> list[str]:
        """A few lines: policy, load, stability, the first metrics (mean and 95% CI)."""
        reps = f", {len(self.replications)} replications" if self.replications else ""
        lines = [
            f"Result(policy={self.policy!r}, family={self.family!r}, load={self.load:.4g}, "
            f"arrivals={self.counters.get('arrivals', 0):,}{reps}, "
            f"stable={self.stable})"
        ]
        if not self.stable:
            lines.append(f"  unstable: {self.instability}")
            return lines
        for name, est in list(self.metrics.items())[:metrics]:
            lines.append(f"  {name}: {est.short()}")
        if len(self.metrics) > metrics:
            lines.append(f"  ... {len(self.metrics) - metrics} more in .metrics")
        return lines

    def _repr_html_(self) -> str:
        import html

        head = html.escape(self._summary_lines()[0])
        if not self.stable:
            why = html.escape(str(self.instability))
            return f"<p><code>{head}</code><br><b>unstable</b>: {why}</p>"
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{html.escape(est.short())}</td></tr>"
            for name, est in self.metrics.items()
        )
        return (
            f"<p><code>{head}</code></p><table><thead><tr><th>metric</th>"
            f"<th>mean (95% CI)</th></tr></thead><tbody>{rows}</tbody></table>"
        )

    def to_dict(self, *, transient: bool = False) -> dict[str, Any]:
        """JSON-ready: ``{"metrics": {name: {"mean", "ci95"}}, "stable", "events", "wall_s", ...}``.

        Steady-state metrics of an unstable run are reported with mean null: they estimate
        nothing. ``transient=True`` adds ``"transient_averages"``: their raw window averages."""
        metrics = {name: est.to_dict() for name, est in self.metrics.items()}
        extra = (
            {"transient_averages": {n: e.to_dict() for n, e in self.transient.items()}}
            if transient
            else {}
        )
        return {
            "metrics": metrics,
            **extra,
            "stable": self.stable,
            "reliable": self.reliable,
            "unreliable": self.unreliable,
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


NO_ESTIMATE = Estimate(math.nan, (math.nan, math.nan))
STEADY_STATE_ONLY = ("_response_time", "_waiting_time", "mean_number_in_")


def steady_state_only(name: str) -> bool:
    """Whether metric ``name`` has a meaning only in steady state (NaN for unstable runs)."""
    base = name.split("[", 1)[0]
    return base.endswith(STEADY_STATE_ONLY) or base.startswith(STEADY_STATE_ONLY)


def combine_replications(reps: list[Result]) -> Result:
    """Independent replications: mean of the replication means with a Student-t interval
    (R - 1 degrees of freedom); NaN when any replication is unstable (they stay in
    ``replications`` for diagnosis)."""
    first = reps[0]
    unstable = [r.instability for r in reps if not r.stable]
    metrics: dict[str, Estimate] = {}
    for name in first.metrics:
        values = np.array(
            [r.transient.get(name, r.metrics[name]).mean for r in reps if name in r.metrics]
        )
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
        too_short=first.too_short,
    )
