"""The result of a simulation: metrics with confidence intervals, stability, counters, tables."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.measurement.jobs_output import read_jobs
from schedlab.measurement.metrics import Estimate, t_interval
from schedlab.measurement.reliability import assess, clipped
from schedlab.model.spec import SimulationSpec

if TYPE_CHECKING:  # pyarrow loads when a table is read, not with every run (issue 33)
    import pyarrow as pa


@dataclass
class Result:
    """What :func:`schedlab.simulate` returns.

    ``metrics`` maps names (``mean_response_time``, ``mean_number_in_system``,
    ``utilization[servers]``, ``mean_response_time[<class>]`` ...) to :class:`Estimate`.
    ``stable`` is False when the run shows no steady state (``instability`` says why: a known
    stability limit, or the trend test of :mod:`schedlab.measurement.stability`). Every metric is
    then NaN with NaN intervals (:func:`steady_state_only`) except those declared in
    ``MEANINGFUL_WHEN_UNSTABLE``: throughput, utilization, reward rates and loss probabilities (an
    overloaded system serves at its saturated throughput, which they estimate). The raw averages
    of the masked metrics over the window are kept apart in ``transient`` (not estimates of
    anything: they grow with the run length).

    ``unreliable`` maps each metric that cannot be taken as an estimate to the reason
    (:mod:`schedlab.measurement.reliability`) and that metric's ``Estimate.reliable`` is False
    (also for the masked metrics of an unstable run); ``reliable`` is True when the run is stable
    and no metric is unreliable. Intervals are cut at 0 below (every metric is nonnegative), the
    reason saying so.

    A trace replay is finite: it is always ``stable`` (no steady state to have or miss) and
    reports every metric; ``backlog`` says when its number in system grew through the whole log
    (a transient, measurement/metrics.py). ``time_unit`` is the trace's time unit ("s" for converted
    logs; None: the model's time units), in which ``spec.run.slowdown_threshold`` (tau) is given.

    ``timeseries`` is the sampled time series as a pyarrow table, built from
    ``timeseries_columns`` on first use (a run that never reads it does not import pyarrow).
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
    timeseries_columns: dict[str, np.ndarray] = field(repr=False, compare=False)
    jobs_path: Path | None = None  # the per-job Parquet table (run.jobs), streamed during the run
    jobs_table: pa.Table | None = None  # or the table itself when small (run.jobs = true)
    replications: list[Result] = field(default_factory=list)
    too_short: str | None = None  # the relaxation-time rule's reason (measurement/reliability.py)
    transient: dict[str, Estimate] = field(default_factory=dict)
    backlog: str | None = None
    time_unit: str | None = None
    unreliable: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        """An unstable run never carries a finite steady-state mean: move them to transient.
        The metrics left are checked for reliability and their intervals cut at 0."""
        for name, est in list(self.metrics.items()):
            if not self.stable and steady_state_only(name):
                if math.isfinite(est.mean):
                    self.transient[name] = est
                self.metrics[name] = NO_ESTIMATE
        kept = {n: e for n, e in self.metrics.items() if self.stable or not steady_state_only(n)}
        self.unreliable = assess(kept, self.too_short if self.stable else None)
        self.metrics = {
            name: replace(clipped(est), reliable=name in kept and name not in self.unreliable)
            for name, est in self.metrics.items()
        }

    @property
    def reliable(self) -> bool:
        return self.stable and not self.unreliable

    @functools.cached_property
    def timeseries(self) -> pa.Table:
        """The sampled time series (time, number in system and in queue, utilizations ...)."""
        return float_table(self.timeseries_columns)

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
        if self.backlog:
            lines.append(f"  {self.backlog}")
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
            "backlog": self.backlog,
            "time_unit": self.time_unit,
            "slowdown_threshold": self.spec.run.slowdown_threshold,
            "policy": self.policy,
            "family": self.family,
            "load": self.load,
            "arrival_rate": self.rate,
            "replications": max(1, len(self.replications)),
            "counters": self.counters,
            "warnings": self.warnings,
        }


NO_ESTIMATE = Estimate(math.nan, (math.nan, math.nan), reliable=False)  # estimates nothing
# Metric families (the name before any "[resource]" or "[class]") that estimate something in an
# overloaded system too: its saturated throughput and what follows from it. Every other metric,
# present or future, is steady-state only (issue 28 item 1: a list of the masked ones missed the
# slowdowns).
MEANINGFUL_WHEN_UNSTABLE = frozenset(
    {"throughput", "utilization", "reward_rate", "reward_rate_per_server", "loss_probability"}
)


def steady_state_only(name: str) -> bool:
    """Whether metric ``name`` has a meaning only in steady state (NaN for unstable runs)."""
    return name.split("[", 1)[0] not in MEANINGFUL_WHEN_UNSTABLE


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
        timeseries_columns=first.timeseries_columns,
        jobs_path=first.jobs_path,
        jobs_table=first.jobs_table,
        replications=reps,
        too_short=first.too_short,
    )


def float_table(columns: dict[str, np.ndarray]) -> pa.Table:
    """A table of float64 columns built from the arrays' buffers (zero copy): ``pa.table`` and
    ``pa.array`` look for pandas first, importing it when it is installed (half a second of a
    short run's start-up, issue 33). NaN stays NaN, as with ``pa.array``."""
    import pyarrow as pa

    arrays = [
        pa.Array.from_buffers(pa.float64(), len(v), [None, pa.py_buffer(v)])
        for v in (np.ascontiguousarray(c, dtype=np.float64) for c in columns.values())
    ]
    return pa.Table.from_arrays(arrays, names=list(columns))
