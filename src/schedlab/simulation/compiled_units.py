"""Generation units drawn in compiled code, bit-identical to the NumPy path of
:mod:`schedlab.simulation.generate` (issue 12 item 4: ~90 ns per job in Python, a fifth of a
ServerFilling run on grosof2023's Fig. 2 setting, most of it spent building the four
``SeedSequence``/``PCG64``/``Generator`` objects of each unit and in per-class fancy indexing).

Two kernels, each the port of one step of the NumPy path, drawing from the same streams in the
same order with :mod:`schedlab.simulation.compiled_streams`:

- :func:`exponential_arrivals`: the arrival times of one unit when the gaps are exponential
  (Poisson arrivals, or renewal with exponential gaps; not batched, not slotted), as
  ``ArrivalTimes.next`` does: ``exponential(mean, UNIT)`` from the "arrivals" stream, then the
  cumulative sum carried over from the previous unit's last arrival, added in sequence exactly
  as ``np.cumsum`` does;
- :func:`classes_demand_work`: the classes, demands and durations of one unit when every
  class's duration is Fixed or Exponential and every demand is Fixed (:class:`UnitLaws`), as
  ``JobSource._unit_jobs`` does: classes by inverse CDF of ``random(n)`` from the "classes"
  stream (``searchsorted(side="right")``; no stream is used with one class), then the durations
  of class 0's jobs, class 1's, ... from the "duration" stream, each class's in job order (Fixed
  draws nothing, so the "demand" stream is never used).

Every other model keeps the NumPy path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab._jit import kernel
from schedlab.model.compile import CompiledModel
from schedlab.model.distributions import Exponential, Fixed
from schedlab.simulation.compiled_streams import (
    fill_exponential,
    next_double,
    seed_state,
    standard_exponential,
    stream_entropy,
)


@kernel
def exponential_arrivals(entropy, unit, t0, mean, n):
    """Unit ``unit``'s n arrival times: t0 + the running sum of exponential(mean) gaps."""
    st = seed_state(entropy, unit)
    times = np.empty(n)
    t = t0
    for i in range(n):  # = t0 + cumsum(exponential(mean, n)), the same additions in order
        t += mean * standard_exponential(st)
        times[i] = t
    return times


_LINEAR_SEARCH = 32  # classes up to which the inverse CDF is a branch-free linear count


@kernel
def _class_of(u, cdf):
    """``cdf.searchsorted(u, side="right")`` for u < cdf[-1] = 1: the number of cumulative
    probabilities <= u, counted without branches for few classes (a data-dependent branch per
    class costs a misprediction per job), by bisection for many."""
    last = cdf.shape[0] - 1
    if last < _LINEAR_SEARCH:
        c = 0
        for k in range(last):
            c += np.int32(cdf[k] <= u)
        return c
    return np.int32(np.searchsorted(cdf[:last], u, side="right"))


@kernel
def classes_demand_work(
    class_entropy, duration_entropy, unit, n, cdf, random_duration, duration, demand
):
    """Unit ``unit``'s n classes (int32), demands (n, resources) and durations. ``cdf``: the
    classes' cumulative probabilities (last = 1); ``duration``: per class the Fixed value or the
    Exponential mean, ``random_duration`` telling which; ``demand``: per class the Fixed
    demands."""
    n_classes = cdf.shape[0]
    job_class = np.zeros(n, np.int32)
    count = np.zeros(n_classes, np.int64)
    if n_classes > 1:
        st = seed_state(class_entropy, unit)
        for j in range(n):
            c = _class_of(next_double(st), cdf)
            job_class[j] = c
            count[c] += 1
    else:
        count[0] = n
    # the durations grouped by class, class 0's first: the duration stream serves the classes
    # in that order (Fixed draws nothing), each class's jobs in arrival order
    grouped = np.empty(n)
    first = np.zeros(n_classes, np.int64)
    st = seed_state(duration_entropy, unit)
    start = 0
    for c in range(n_classes):
        first[c] = start
        group = grouped[start : start + count[c]]
        if random_duration[c]:
            fill_exponential(st, duration[c], group)
        else:
            group[:] = duration[c]
        start += count[c]
    work = np.empty(n)
    job_demand = np.empty((n, demand.shape[1]))
    for j in range(n):
        c = job_class[j]
        work[j] = grouped[first[c]]
        first[c] += 1
        for r in range(demand.shape[1]):
            job_demand[j, r] = demand[c, r]
    return job_class, job_demand, work


@dataclass(frozen=True)
class UnitLaws:
    """The class laws of a model that :func:`classes_demand_work` covers, with the streams' entropy
    of one run (:func:`schedlab.simulation.compiled_streams.stream_entropy`)."""

    class_cdf: np.ndarray
    random_duration: np.ndarray  # bool per class: Exponential (else Fixed)
    duration: np.ndarray  # per class: the Exponential mean or the Fixed value
    demand: np.ndarray  # (classes, resources): the Fixed demands
    class_entropy: np.ndarray
    duration_entropy: np.ndarray

    @staticmethod
    def of(
        model: CompiledModel, class_cdf: np.ndarray, seed: int, replication: int
    ) -> UnitLaws | None:
        """The laws, or None when a class's duration is not Fixed or Exponential or a demand
        is not Fixed (the NumPy path then draws the unit)."""
        classes = model.classes
        if not all(type(c.duration) in (Exponential, Fixed) for c in classes):
            return None
        if not all(type(d) is Fixed for c in classes for d in c.demand):
            return None
        return UnitLaws(
            class_cdf=class_cdf,
            random_duration=np.array([type(c.duration) is Exponential for c in classes]),
            duration=np.array([float(c.duration.mean) for c in classes]),
            demand=np.array([[float(d.mean) for d in c.demand] for c in classes]),
            class_entropy=stream_entropy(seed, replication, "classes"),
            duration_entropy=stream_entropy(seed, replication, "duration"),
        )

    def draw(self, unit: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit ``unit``'s classes, demands (n, resources) and durations."""
        return classes_demand_work(
            self.class_entropy,
            self.duration_entropy,
            unit,
            n,
            self.class_cdf,
            self.random_duration,
            self.duration,
            self.demand,
        )
