"""Human labels for what a person reads: one table from a machine name to its label.

Stored rows, CSVs and SQL keep the machine names (``mean_response_time``, ``workload.load``); every
figure axis, table header and report heading goes through :func:`label`, which uses the papers'
symbols: E[T] for the mean response time (grosof2023 §2), rho for the load, k for the number of
servers, lambda for the arrival rate. Per-class metrics (``mean_response_time[need4]``) take the
label of their base metric with the class appended; policies are labelled by the title they are
registered with (e.g. ``server-filling-srpt`` -> ServerFilling-SRPT).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

LABELS: dict[str, str] = {
    # metrics (measurement/metrics.py)
    "mean_response_time": "mean response time E[T]",
    "mean_waiting_time": "mean waiting time E[T_Q]",
    "p50_waiting_time": "median waiting time",
    "p90_waiting_time": "90th percentile of T_Q",
    "p95_waiting_time": "95th percentile of T_Q",
    "p99_waiting_time": "99th percentile of T_Q",
    "mean_slowdown": "mean slowdown",
    "mean_bounded_slowdown": "mean bounded slowdown",
    "p50_bounded_slowdown": "median bounded slowdown",
    "p90_bounded_slowdown": "90th percentile of the bounded slowdown",
    "p95_bounded_slowdown": "95th percentile of the bounded slowdown",
    "p99_bounded_slowdown": "99th percentile of the bounded slowdown",
    "makespan": "makespan",
    "p50_response_time": "median response time",
    "p90_response_time": "90th percentile of T",
    "p95_response_time": "95th percentile of T",
    "p99_response_time": "99th percentile of T",
    "mean_number_in_system": "mean number in system E[N]",
    "mean_number_in_queue": "mean number in queue E[N_Q]",
    "utilization": "utilization",
    "utilization_over_makespan": "utilization over the makespan",
    "loss_of_capacity": "loss of capacity",
    "reward_rate": "reward rate",
    "throughput": "throughput",
    "loss_probability": "loss probability",
    # axes and run columns (experiments/run_rows.py, spec paths)
    "load": "load ρ",
    "workload.load": "load ρ",
    "arrival_rate": "arrival rate λ",
    "workload.rate": "arrival rate λ",
    "cluster.servers": "servers k",
    "servers": "servers k",
    "cluster.pools[0].count": "servers",
    "workload.arrivals.interarrival.dist": "inter-arrival distribution",
    "policy": "policy",
    "policy.name": "policy",
    "variant": "variant",
    "family": "family",
    "arrivals": "arrivals per run",
    "run.arrivals": "arrivals per run",
    "run.horizon": "horizon",
    "workload.arrivals.path": "trace",
    "run.warmup": "warm-up fraction",
    "run.seed": "seed",
    "seed": "seed",
    "replication": "replication",
    "wall_s": "wall time (s)",
    "events": "events",
}

# What HPC operators read (issue 30 item 3), in the order compare tables show them; "utilization"
# stands for each utilization[<resource>] column.
HPC_METRICS = (
    "mean_waiting_time",
    "p50_waiting_time",
    "p95_waiting_time",
    "p99_waiting_time",
    "mean_bounded_slowdown",
    "p95_bounded_slowdown",
    "mean_response_time",
    "utilization",
    "utilization_over_makespan",
    "loss_of_capacity",
    "makespan",
)
HIGHER_IS_BETTER = ("utilization", "utilization_over_makespan", "throughput", "reward_rate")
_TIMES = ("_response_time", "_waiting_time", "makespan")
_SLOWDOWNS = ("_bounded_slowdown",)
_FRACTIONS = ("utilization", "utilization_over_makespan", "loss_of_capacity", "loss_probability")


@dataclass(frozen=True)
class Units:
    """The units of a set of runs: their time unit ("s" for converted logs, else the model's
    time units) and the bounded slowdown's threshold tau in that unit."""

    time: str = "time units"
    tau: float = 10.0

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]]) -> Units:
        """The units the stored runs state (``time_unit``, ``slowdown_threshold`` columns)."""
        units = {str(r.get("time_unit") or "time units") for r in rows}
        taus = {float(r["slowdown_threshold"]) for r in rows if r.get("slowdown_threshold")}
        return cls(
            time=units.pop() if len(units) == 1 else "time units",
            tau=taus.pop() if len(taus) == 1 else 10.0,
        )


def base_metric(name: str) -> str:
    return name.split("[", 1)[0]


def unit_of(name: str, units: Units) -> str:
    """The unit of a metric, as a label's suffix shows it: "s", "time units", "tau = 10 s"
    (bounded slowdowns: a ratio, with their threshold), "fraction of capacity"; "" if none (a
    ratio of two metrics: ``mean_response_time / mean_response_time[policy=srpt-1]``)."""
    if _RATIO.match(name):
        return ""
    base = base_metric(name)
    if base.endswith(_TIMES):
        return units.time
    if base.endswith(_SLOWDOWNS):
        return f"ratio, τ = {units.tau:g} {units.time}"
    if base.endswith("_slowdown"):
        return "ratio"
    if base in _FRACTIONS:
        return "fraction" if base == "loss_probability" else "fraction of capacity"
    if base.startswith("mean_number_in"):
        return "jobs"
    if base in ("throughput", "reward_rate"):
        return "per time unit" if units.time == "time units" else f"per {units.time}"
    return ""


def with_unit(name: str, units: Units) -> str:
    """The label of a metric with its unit, e.g. "mean waiting time E[T_Q] (s)"."""
    unit = unit_of(name, units)
    return f"{label(name)} ({unit})" if unit else label(name)


# Column headers of the terminal's compare table, where width is short.
TERSE = {
    "mean_waiting_time": "mean wait",
    "p50_waiting_time": "p50 wait",
    "p95_waiting_time": "p95 wait",
    "p99_waiting_time": "p99 wait",
    "mean_bounded_slowdown": "mean BSLD",
    "p95_bounded_slowdown": "p95 BSLD",
    "mean_response_time": "E[T]",
    "utilization": "util.",
    "utilization_over_makespan": "util. (makespan)",
    "loss_of_capacity": "loss of capacity",
    "makespan": "makespan",
}


def terse(name: str, units: Units) -> str:
    """A short header with the unit: ``p95 wait (s)``, ``mean BSLD (ratio, τ = 10 s)``."""
    base = base_metric(name)
    text = TERSE.get(base, label(base))
    if name != base:
        text += f" {name[len(base) + 1 : -1]}"
    unit = unit_of(name, units)
    return f"{text} ({unit})" if unit else text


def higher_is_better(name: str) -> bool:
    return base_metric(name) in HIGHER_IS_BETTER


_CLASS = re.compile(r"^(?P<base>[\w.]+)\[(?P<cls>[^\]]+)\]$")
_RATIO = re.compile(r"^(?P<y>[\w.\[\]]+) / (?P=y)\[(?P<hue>[\w.]+)=(?P<ref>.+)\]$")


def label(name: str) -> str:
    """The human label of a metric, column or spec path (the name itself when unknown)."""
    if name in LABELS:
        return LABELS[name]
    m = _CLASS.match(name)
    if m and m["base"] in LABELS:
        return f"{LABELS[m['base']]}, {m['cls']}"
    m = _RATIO.match(name)
    if m:
        return f"{short(m['y'])} / {short(m['y'])} of {policy_label(m['ref'])}"
    return name


def people_values(values: Sequence[Any]) -> list[str]:
    """Values of one table column as people read them: numbers to 3 significant digits (more
    only where two values distinct to 12 digits would print alike: 0.9995 and 0.9999; 2500, not
    2.5e+03), an unset parameter (None) as "default", booleans as yes/no, anything else as
    text."""

    def one(v: Any, digits: int) -> str:
        if v is None:
            return "default"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float) and 10**digits <= abs(v) < 1e9:  # 2500, never 2.5e+03
            return f"{round(v, digits - 1 - math.floor(math.log10(abs(v)))):.0f}"
        if isinstance(v, float):
            return f"{v:.{digits}g}"
        return str(v)

    distinct = {one(v, 12) for v in values}  # 1.1975000000000002 is 1.1975
    for digits in range(3, 13):
        shown = [one(v, digits) for v in values]
        if len(set(shown)) == len(distinct):
            return shown
    return shown


def short(name: str) -> str:
    """The symbol alone where the label has one (``E[T]`` for the mean response time)."""
    text = label(name)
    tail = text.rsplit(" ", 1)[-1]
    return tail if any(c in tail for c in "[ρλ") else text


@cache
def _policy_titles() -> dict[str, str]:
    from schedlab.policies.registry import all_policies

    return {p.name: p.about.title for p in all_policies()}


def policy_label(name: str) -> str:
    """A registered policy's title (``server-filling-srpt`` -> ServerFilling-SRPT) or the name."""
    return _policy_titles().get(name, name)
