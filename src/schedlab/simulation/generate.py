"""Generate the job sequence of a run before the run, independently of the policy.

Every random quantity comes from its own named stream, spawned from the run's seed and replication
(``SeedSequence(seed, spawn_key=(replication, stream))``, PCG64). Arrival times, classes, demands
and durations therefore do not depend on the policy or on each other's draws: two policies run on
the same seed see the same jobs (common random numbers), and a run is reproducible bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.errors import SpecError
from schedlab.model.compile import CompiledModel
from schedlab.model.distributions import Exponential, _Dist
from schedlab.streams import stream


@dataclass(frozen=True)
class Jobs:
    """A job sequence in arrival order."""

    arrival: np.ndarray
    job_class: np.ndarray
    demand: np.ndarray  # (N, R)
    work: np.ndarray
    estimate: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival.shape[0])


def per_slot_counts(dist: _Dist, mean: float) -> _Dist:
    """The per-slot count distribution rescaled to the required mean (compile_model checked
    that it stays whole-numbered)."""
    if math.isclose(dist.mean, mean, rel_tol=1e-12):
        return dist
    return dist.with_mean(mean)


def _arrival_times(model: CompiledModel, rng: np.random.Generator, n: int) -> np.ndarray:
    arrivals = model.spec.workload.arrivals
    rate = model.rate
    if model.slotted:
        counts_dist = (
            per_slot_counts(arrivals.batch_size, rate) if arrivals.process == "batch" else None
        )
        return _batched(rng, n, rate, counts_dist, slotted=True, gaps=None)
    if arrivals.process == "poisson":
        return np.cumsum(rng.exponential(1.0 / rate, n))
    if arrivals.process == "renewal":
        gaps = arrivals.interarrival.with_mean(1.0 / rate)  # type: ignore[union-attr]
        return np.cumsum(gaps.sample(rng, n))
    sizes = arrivals.batch_size  # whole numbers (compile_model)
    mean_batch = sizes.mean  # type: ignore[union-attr]
    gaps = (arrivals.interarrival or Exponential(dist="exponential", mean=1.0)).with_mean(
        mean_batch / rate
    )
    return _batched(rng, n, mean_batch, sizes, slotted=False, gaps=gaps)


def _batched(
    rng: np.random.Generator,
    n: int,
    mean_batch: float,
    sizes: _Dist | None,
    *,
    slotted: bool,
    gaps: _Dist | None,
) -> np.ndarray:
    """Arrival times of n jobs arriving in batches (per slot when slotted)."""
    times: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    total = 0
    t0 = 0.0
    while total < n:
        m = int((n - total) / mean_batch * 1.1) + 16
        size = rng.poisson(mean_batch, m) if sizes is None else sizes.sample(rng, m)
        size = size.astype(np.int64)
        if slotted:
            epochs = t0 + np.arange(m, dtype=float)
            t0 += m
        else:
            epochs = t0 + np.cumsum(gaps.sample(rng, m))  # type: ignore[union-attr]
            t0 = float(epochs[-1])
        times.append(epochs)
        counts.append(size)
        total += int(size.sum())
    return np.repeat(np.concatenate(times), np.concatenate(counts))[:n]


def _length(model: CompiledModel, rng_factory) -> np.ndarray:
    """Arrival times for the run length: a number of arrivals or a time horizon."""
    run = model.spec.run
    if run.arrivals is not None:
        return _arrival_times(model, rng_factory(), run.arrivals)
    expected = model.rate * run.horizon  # type: ignore[operator]
    n = int(expected + 10.0 * math.sqrt(expected) + 100)
    while True:
        times = _arrival_times(model, rng_factory(), n)
        if times[-1] > run.horizon:  # type: ignore[operator]
            return times[times <= run.horizon]
        n *= 2


def generate_jobs(model: CompiledModel, seed: int, replication: int = 0) -> Jobs:
    """The job sequence of one replication."""
    if model.trace is not None:
        return _trace_jobs(model)
    arrival = _length(model, lambda: stream(seed, replication, "arrivals"))
    n = arrival.shape[0]
    if n == 0:
        raise SpecError("the run has no arrivals; lengthen run.horizon", field="run.horizon")
    classes = model.classes
    rng_class = stream(seed, replication, "classes")
    if len(classes) == 1:
        job_class = np.zeros(n, dtype=np.int32)
    else:
        probs = np.array([c.probability for c in classes])
        job_class = rng_class.choice(len(classes), size=n, p=probs / probs.sum()).astype(np.int32)
    n_res = len(model.resources)
    demand = np.empty((n, n_res))
    work = np.empty(n)
    rng_demand = stream(seed, replication, "demand")
    rng_duration = stream(seed, replication, "duration")
    for c, cls in enumerate(classes):
        idx = np.flatnonzero(job_class == c)
        for r, dist in enumerate(cls.demand):
            demand[idx, r] = dist.sample(rng_demand, idx.size)
        work[idx] = cls.duration.sample(rng_duration, idx.size)
    if np.any(work <= 0):
        c = int(job_class[np.argmax(work <= 0)])
        raise SpecError(
            "durations must be > 0; this distribution produced 0",
            field=f"workload.classes[{c}].duration",
        )
    if model.family != "pooled":
        _check_every_job_fits(model, job_class, demand)
    return Jobs(
        arrival=arrival, job_class=job_class, demand=demand, work=work, estimate=np.full(n, np.nan)
    )


def _check_every_job_fits(model: CompiledModel, job_class: np.ndarray, demand: np.ndarray) -> None:
    fits = np.zeros(demand.shape[0], dtype=bool)
    for cap in np.unique(model.capacity, axis=0):
        fits |= np.all(demand <= cap + 1e-12, axis=1)
    if not fits.all():
        j = int(np.argmin(fits))
        c = int(job_class[j])
        need = ", ".join(f"{r}={v:.4g}" for r, v in zip(model.resources, demand[j], strict=True))
        raise SpecError(
            f"a job of this class demands ({need}), more than any server offers; bound the "
            "demand distribution by the largest server",
            field=f"workload.classes[{c}].demand",
        )


def _trace_jobs(model: CompiledModel) -> Jobs:
    trace = model.trace
    assert trace is not None
    arrival = model.trace_arrivals()  # compile_model checked that it is not empty
    keep = arrival.size
    job_class = np.zeros(keep, dtype=np.int32)
    demand = trace.demand[:keep]
    if model.spec.workload.classes:  # declared classes: each job takes its class's demand
        job_class = trace.job_class[:keep].astype(np.int32)
        per_class = np.array([[d.support[0] for d in c.demand] for c in model.classes])
        demand = per_class[job_class]
    return Jobs(
        arrival=arrival,
        job_class=job_class,
        demand=demand,
        work=trace.duration[:keep],
        estimate=trace.estimate[:keep],
    )
