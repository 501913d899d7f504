"""Known stability limits: a load at or above the model's limit is unstable whatever the run
looks like (the other verdict is the trend test of :mod:`schedlab.measurement.stability`;
docs/guarantees.md):

* any policy of the pooled or packing family at load >= 1 (the offered work is at least the
  capacity: no policy has a positive-recurrent queue, and at exactly 1 the queue is at best null
  recurrent);
* FCFS (a policy declaring the limit "fcfs-saturated", Hooks.known_limits) in the pooled family
  with rigid jobs, discrete server needs and exponential durations: the
  saturated-system CTMC limit rho* (:mod:`schedlab.analysis.saturated`, grosof2023 §3.1, Baccelli &
  Foss 1995);
* any policy of the packing family with one resource and finitely many job sizes: the capacity LP
  of psychas2019 eq. (4) (:mod:`schedlab.optim.capacity_lp`), the largest workload any policy
  supports.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np

MAX_SATURATED_STATES = 200_000  # product of k // need over the classes, before truncation
MAX_TYPES = 64  # more distinct sizes (e.g. an empirical demand): no exact limit is attempted


@dataclass(frozen=True)
class StabilityLimit:
    """The load (the engine's bottleneck load, docs/models.md) at and above which no steady
    state exists, and where that number comes from."""

    load: float
    source: str


def known_limit(model) -> StabilityLimit | None:
    """The tightest known stability limit of a compiled model, or None (loss family: always
    stable; no analysis for the policy and workload)."""
    if model.family == "loss":
        return None
    limits = [StabilityLimit(1.0, "offered load >= capacity")]
    for name in model.policy.hooks.known_limits(model.config):
        limits.append(POLICY_LIMITS[name](model))
    if model.trace is None and model.family == "packing":
        limits.append(_capacity_lp(model))
    return min((lim for lim in limits if lim is not None), key=lambda lim: lim.load)


def limit_verdict(model) -> str | None:
    """The instability reason when the model's load is at or above a known limit."""
    limit = known_limit(model)
    if limit is None or model.load < limit.load * (1 - 1e-12):
        return None
    return (
        f"load {model.load:.4g} is at or above the stability limit {limit.load:.4g} of "
        f"'{model.policy.name}' ({limit.source}): no steady state at this load"
    )


def _types(model, resource: int) -> list[tuple[float, float, object]] | None:
    """(size, probability, class) per job type, expanding each class's finitely valued demand of
    one resource; None if some demand takes a continuum of values."""
    from schedlab.model.distributions import Discrete

    types = []
    for c in model.classes:
        dist = c.demand[resource]
        values = dist.values()
        if values is None or np.unique(values).size > MAX_TYPES:
            return None
        probs = dist._p if isinstance(dist, Discrete) else np.full(values.size, 1.0 / values.size)
        types += [
            (float(v), c.probability * float(q), c) for v, q in zip(values, probs, strict=True)
        ]
    return types


def _fcfs_saturated(model) -> StabilityLimit | None:
    from schedlab.model.distributions import Exponential

    if model.trace is not None or model.family != "pooled":
        return None
    if any(c.elastic or not isinstance(c.duration, Exponential) for c in model.classes):
        return None
    types = _types(model, 0)
    if types is None:
        return None
    merged: Counter[tuple[int, float]] = Counter()
    for need, p, c in types:
        if p > 0:
            merged[(round(need), 1.0 / c.duration.mean)] += p
    k = round(model.pooled_k)
    if math.prod(k // need + 1 for need, _ in merged) > MAX_SATURATED_STATES:
        return None
    keys = sorted(merged)
    limit = _saturated_limit(
        k, tuple(n for n, _ in keys), tuple(merged[key] for key in keys), tuple(r for _, r in keys)
    )
    return StabilityLimit(limit, "saturated-system CTMC of FCFS, analysis/saturated.py")


@cache
def _saturated_limit(
    k: int, needs: tuple[int, ...], probs: tuple[float, ...], rates: tuple[float, ...]
) -> float:
    from schedlab.analysis.saturated import fcfs_saturated

    return fcfs_saturated(k, list(needs), list(probs), list(rates)).load_limit


# The limits a policy may declare it has (Hooks.known_limits), computed from the model.
POLICY_LIMITS = {"fcfs-saturated": _fcfs_saturated}


def _capacity_lp(model) -> StabilityLimit | None:
    """psychas2019 eq. (4) with the job types weighted by their mean work: type j needs
    lambda p_j E[D_j] configurations-worth of capacity, so rho* bounds lambda sum_j p_j E[D_j]."""
    if len(model.resources) != 1:
        return None
    types = _types(model, 0)
    if types is None:
        return None
    work = {}
    for size, p, c in types:
        if p > 0 and size > 0:
            work[size] = work.get(size, 0.0) + p * c.duration.mean
    if not work:
        return None
    pools = tuple(sorted(Counter(float(cap) for cap in model.capacity[:, 0]).items()))
    sizes = tuple(sorted(work))
    rho_star = _lp_limit(sizes, tuple(work[s] for s in sizes), tuple((n, c) for c, n in pools))
    if rho_star is None:
        return None
    # load = lambda sum_j p_j E[size_j] E[D_j] / total capacity; at the limit lambda W = rho*
    total_work = sum(work.values())
    mean_size_work = sum(s * w for s, w in work.items())
    per_rate = mean_size_work / float(model.capacity[:, 0].sum())
    return StabilityLimit(
        rho_star / total_work * per_rate, "capacity LP of psychas2019 eq. (4), optim/capacity_lp.py"
    )


@cache
def _lp_limit(
    sizes: tuple[float, ...], weights: tuple[float, ...], pools: tuple[tuple[int, float], ...]
) -> float | None:
    from schedlab.optim.capacity_lp import max_workload

    try:
        return max_workload(sizes, weights, pools=pools).rho_star
    except ValueError:  # no common grid and too many configurations: no exact limit
        return None
