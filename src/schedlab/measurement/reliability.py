"""Which estimates of a stable run can be trusted as estimates (issue 15 item 12).

A metric of a stable run is *unreliable* when

* it has no finite 95% interval (a run too short for batch means, a single job, a class that never
  completed): an estimate without an interval is no estimate;
* its 95% interval reaches 0 or below for a positive metric (response times, number in system,
  throughput, utilization) or below 0 for a nonnegative one (waiting time, number in queue,
  reward rate, loss probability): the interval cannot be right;
* its relative half-width exceeds ``MAX_RELATIVE_HALF_WIDTH`` (50%): the run says little more than
  the order of magnitude;
* the run is shorter than the relaxation-time rule: ``RELAXATIONS`` relaxation times of an M/G/1
  at the run's load, about (1 + C^2) / 2 / (1 - rho)^2 mean sizes each (C^2 the squared coefficient
  of variation of the job size, the heavy-traffic time scale; the rule the reproductions use,
  reproduce/grosof2023.py). A shorter run starting from empty is biased low by more than its
  batch-means interval shows.

A *measured* quantity (``EXACT``: the makespan of a finite log replay) is a value of the one
replay, not an estimate of a mean: it has no interval and is never unreliable for lack of one.

Reliability is judged per metric (issue 32 item 4): each metric's ``Estimate.reliable`` says
whether *its* interval can be trusted, a stored run has one ``<metric>_reliable`` column per
metric, and a point, table cell or plotted marker of metric M is flagged only when M is (a loose
p90 waiting time never flags the same run's mean response time). Unreliable values are kept (with
the reason) but never shown or plotted as ordinary estimates: tables print ``unreliable`` with the
reason, plots draw them as hollow markers without a band.
Every metric is nonnegative, so an interval is never reported below 0: :func:`clipped` cuts it at
0 (the true value lies there anyway) after the reason recorded where it reached.
"""

from __future__ import annotations

import math
from dataclasses import replace

from schedlab.measurement.metrics import Estimate

RELAXATIONS = 100
MAX_RELATIVE_HALF_WIDTH = 0.5
POSITIVE = ("_response_time", "mean_number_in_system", "throughput", "utilization")
EXACT = frozenset({"makespan"})


def relaxation_arrivals(load: float, scv: float) -> float:
    """Arrivals spanning RELAXATIONS relaxation times (1 + C^2) / 2 / (1 - rho)^2 at ``load``."""
    if load >= 1:
        return math.inf
    return RELAXATIONS * (1 + scv) / 2 / (1 - load) ** 2


def size_scv(model) -> float | None:
    """C^2 of the job size demand x duration on the bottleneck resource (independent within a
    class, mixed over the classes); None for trace workloads (no size distribution)."""
    if model.trace is not None or not model.classes:
        return None
    r = max(range(len(model.resources)), key=lambda i: model.load_by_resource[model.resources[i]])
    m1 = sum(c.probability * c.demand[r].mean * c.duration.mean for c in model.classes)
    m2 = sum(
        c.probability * c.demand[r].second_moment * c.duration.second_moment for c in model.classes
    )
    return m2 / (m1 * m1) - 1 if m1 > 0 else None


def short_run(model, arrivals: int) -> str | None:
    """The reason when ``arrivals`` is shorter than the relaxation-time rule (loss family and
    trace workloads: no rule)."""
    scv = size_scv(model)
    if model.family == "loss" or scv is None:
        return None
    needed = relaxation_arrivals(model.load, scv)
    if arrivals >= needed:
        return None
    return (
        f"run of {arrivals:,} arrivals is shorter than {RELAXATIONS} relaxation times at load "
        f"{model.load:.4g} ({needed:,.0f} arrivals): the mean is biased low beyond its interval"
    )


def is_positive(name: str) -> bool:
    base = name.split("[", 1)[0]
    return base.endswith(POSITIVE) or base.startswith(POSITIVE)


def interval_problem(name: str, mean: float, lo: float, hi: float) -> str | None:
    """Why an interval around ``mean`` cannot be taken as an estimate of metric ``name``."""
    if name in EXACT:
        return None if math.isfinite(mean) else "no finite value"
    if not (math.isfinite(mean) and math.isfinite(lo) and math.isfinite(hi)):
        return "no finite 95% interval"
    cut = " (reported cut at 0)" if lo < 0 else ""
    if is_positive(name) and lo <= 0:
        return f"95% interval reaches {lo:.3g} for a positive quantity{cut}"
    if lo < 0:
        return f"95% interval reaches {lo:.3g} for a nonnegative quantity{cut}"
    if mean > 0 and (hi - lo) / 2 > MAX_RELATIVE_HALF_WIDTH * mean:
        return f"95% half-width is {(hi - lo) / 2 / mean:.0%} of the mean"
    return None


def clipped(est: Estimate) -> Estimate:
    """``est`` with its interval cut at 0 below (every metric is nonnegative)."""
    lo, hi = est.ci95
    return est if not lo < 0 else replace(est, ci95=(0.0, hi))


def assess(metrics: dict[str, Estimate], short: str | None) -> dict[str, str]:
    """metric name -> reason, for every unreliable metric (all of them when the run is short)."""
    out = {}
    for name, est in metrics.items():
        reason = interval_problem(name, est.mean, *est.ci95) or short
        if reason is not None:
            out[name] = reason
    return out


def describe(unreliable: dict[str, str]) -> str:
    """One line: each reason once, with the metrics it concerns."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in unreliable.items():
        by_reason.setdefault(reason, []).append(name)
    return "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())
