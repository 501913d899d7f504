"""The job sequence of a run, generated unit by unit while the run consumes it.

Every random quantity comes from its own named stream, and each stream is cut into generation
units of ``UNIT`` = 2^12 consecutive jobs: unit u of stream s draws from
``SeedSequence(seed, spawn_key=(replication, s, u))`` (PCG64). Arrival times, classes, demands and
durations therefore do not depend on the policy or on each other's draws: two policies run on the
same seed see the same jobs (common random numbers), a run is reproducible bit for bit, and the
sequence does not depend on how many jobs the engine holds ready at a time (its block size,
see :mod:`schedlab.simulation.simulate`): the unit is part of the definition of the sequence, the
block is not. Memory is one unit per stream, whatever the run length (decision 0003).

Arrival times carry over between units exactly: unit u's first arrival is the last arrival of unit
u - 1 plus its first gap, summed in the same order as one long cumulative sum; a batch that
straddles two units continues in the next one. With batch vectors (psychas2018 Corollary 5.3) the
classes of a request's VMs are drawn with its time, from the "arrivals" stream, and carry over the
same way, so a request is never split differently whatever the block size.

Exponential arrival gaps and Fixed/Exponential class laws (grosof2023's setting among others) are
drawn by compiled kernels (:mod:`schedlab.simulation.compiled_units`), bit-identical to the NumPy
path, which every other model uses (issue 12 item 4).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from schedlab._jit import jit_disabled
from schedlab.errors import SpecError
from schedlab.model.compile import CompiledModel
from schedlab.model.distributions import Exponential, _Dist
from schedlab.simulation.compiled_streams import stream_entropy
from schedlab.simulation.compiled_units import UnitLaws, exponential_arrivals
from schedlab.streams import stream
from schedlab.workloads.batch_vectors import VectorTable, expand, vector_table

UNIT = 1 << 12  # jobs per generation unit (part of the definition of the job sequence)


def _kernels(compiled: bool) -> bool:
    """Whether to draw with the compiled kernels: asked for, and the JIT is on (with
    ``SCHEDLAB_JIT=0`` they would run as slow Python; NumPy gives the same numbers)."""
    return compiled and not jit_disabled()


@dataclass(frozen=True)
class Jobs:
    """Consecutive jobs of the sequence, in arrival order. ``user`` and ``queue`` are a trace's
    (SWF fields 12 and 15, int32); -1 where unknown, and for every synthetic job."""

    arrival: np.ndarray
    job_class: np.ndarray
    demand: np.ndarray  # (n, R)
    work: np.ndarray
    estimate: np.ndarray
    user: np.ndarray
    queue: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    def head(self, n: int) -> Jobs:
        return Jobs(*(getattr(self, f)[:n] for f in self.__dataclass_fields__))


def synthetic_jobs(
    arrival: np.ndarray, job_class: np.ndarray, demand: np.ndarray, work: np.ndarray
) -> Jobs:
    """Jobs of a synthetic workload: no estimate (NaN), user or queue (-1)."""
    n = arrival.shape[0]
    user, queue = (np.full(n, -1, dtype=np.int32) for _ in range(2))
    return Jobs(arrival, job_class, demand, work, np.full(n, np.nan), user, queue)


def per_slot_counts(dist: _Dist, mean: float) -> _Dist:
    """The per-slot count distribution rescaled to the required mean (compile_model checked
    that it stays whole-numbered)."""
    if math.isclose(dist.mean, mean, rel_tol=1e-12):
        return dist
    return dist.with_mean(mean)


def _carry_cumsum(t0: float, gaps: np.ndarray) -> np.ndarray:
    """t0 + cumulative sum of gaps, added in sequence exactly as one long cumsum would."""
    return np.cumsum(np.concatenate(([t0], gaps)))[1:]


@dataclass(frozen=True)
class ArrivalUnit:
    """One unit of arrivals: the times and, for batch vectors, the classes (else None: the
    classes are drawn independently of the times, from the "classes" stream)."""

    time: np.ndarray
    job_class: np.ndarray | None


class ArrivalTimes:
    """Arrival times of the synthetic sequence, one unit of ``UNIT`` jobs per call.

    Batch vectors (psychas2018 Corollary 5.3): requests arrive as the batch process (Poisson, or
    renewal with ``interarrival``) at rate ``rate / E|v|`` (``workload.rate`` counts VMs), and
    each request brings the VMs of its vector v, drawn with probability p_v
    (:func:`schedlab.workloads.batch_vectors.expand`), all at the request's time.

    ``compiled=False`` draws exponential gaps with NumPy too (the reference the compiled kernel
    is tested against)."""

    def __init__(
        self, model: CompiledModel, seed: int, replication: int, *, compiled: bool = True
    ) -> None:
        self.seed = seed
        self.replication = replication
        self.unit = 0
        self.t0 = 0.0  # last arrival (or batch epoch, or next slot) so far
        self.pending = np.empty(0)  # jobs of a batch that straddles two units
        self.pending_class = np.empty(0, dtype=np.int32)  # their classes (batch vectors)
        arrivals = model.spec.workload.arrivals
        rate = model.rate
        self.gaps: _Dist | None = None
        self.sizes: _Dist | None = None
        self.table: VectorTable | None = None
        self.slotted = model.slotted
        if model.slotted:
            self.mean_batch = rate
            if arrivals.process == "batch":
                self.sizes = per_slot_counts(arrivals.batch_size, rate)
        elif arrivals.process == "poisson":
            self.gaps = Exponential(dist="exponential", mean=1.0 / rate)
        elif arrivals.process == "renewal":
            self.gaps = arrivals.interarrival.with_mean(1.0 / rate)  # type: ignore[union-attr]
        else:
            if arrivals.vectors is not None:
                self.table = vector_table(arrivals.vectors, [c.name for c in model.classes])
                self.mean_batch = self.table.mean_batch
            else:
                self.sizes = arrivals.batch_size  # whole numbers (compile_model)
                self.mean_batch = self.sizes.mean  # type: ignore[union-attr]
            self.gaps = (
                arrivals.interarrival or Exponential(dist="exponential", mean=1.0)
            ).with_mean(self.mean_batch / rate)
        self.batched = self.slotted or arrivals.process == "batch"
        self._entropy: np.ndarray | None = None  # the compiled kernel's, for exponential gaps
        if _kernels(compiled) and not self.batched and type(self.gaps) is Exponential:
            self._entropy = stream_entropy(seed, replication, "arrivals")

    def next(self) -> ArrivalUnit:
        unit = self.unit
        self.unit += 1
        if not self.batched:
            times = self._renewal_times(unit)
            self.t0 = float(times[-1])
            return ArrivalUnit(times, None)
        rng = stream(self.seed, self.replication, "arrivals", unit)
        parts, class_parts = [self.pending], [self.pending_class]
        have = self.pending.size
        while have < UNIT:
            m = int((UNIT - have) / self.mean_batch * 1.1) + 16
            if self.table is not None:
                epochs = self._epochs(rng, m)
                times, job_class = expand(rng, epochs, self.table)
                class_parts.append(job_class)
            else:
                size = (
                    rng.poisson(self.mean_batch, m)
                    if self.sizes is None
                    else self.sizes.sample(rng, m)
                )
                times = np.repeat(self._epochs(rng, m), size.astype(np.int64))
            parts.append(times)
            have += times.size
        times = np.concatenate(parts)
        self.pending = times[UNIT:]
        if self.table is None:
            return ArrivalUnit(times[:UNIT], None)
        job_class = np.concatenate(class_parts)
        self.pending_class = job_class[UNIT:]
        return ArrivalUnit(times[:UNIT], job_class[:UNIT])

    def _renewal_times(self, unit: int) -> np.ndarray:
        """Unit ``unit``'s arrival times, one per gap, carried over from the last one."""
        assert self.gaps is not None
        if self._entropy is not None:
            return exponential_arrivals(self._entropy, unit, self.t0, self.gaps.mean, UNIT)
        rng = stream(self.seed, self.replication, "arrivals", unit)
        return _carry_cumsum(self.t0, self.gaps.sample(rng, UNIT))

    def _epochs(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """The next m batch epochs (slot starts in slotted time)."""
        if self.slotted:
            epochs = self.t0 + np.arange(m, dtype=float)
            self.t0 += m
            return epochs
        epochs = _carry_cumsum(self.t0, self.gaps.sample(rng, m))  # type: ignore[union-attr]
        self.t0 = float(epochs[-1])
        return epochs


@dataclass(frozen=True)
class Window:
    """What is known of the run's length before it starts.

    ``n_jobs`` (None for a synthetic run with a horizon) and the measurement window: from
    ``t_warm`` to ``t_end``. With a number of arrivals the window starts at the arrival of job
    floor(warmup * N) and ends at the last arrival; with a horizon H it is [warmup * H, H]."""

    n_jobs: int | None
    warm_jobs: int | None
    t_warm: float
    t_end: float


class JobSource:
    """The job sequence of one replication, unit by unit (synthetic) or from a trace.

    ``compiled=False`` draws every unit with NumPy (the reference the compiled kernels of
    :mod:`schedlab.simulation.compiled_units` are tested against; both give the same jobs)."""

    def __init__(
        self, model: CompiledModel, seed: int, replication: int = 0, *, compiled: bool = True
    ) -> None:
        self.model = model
        self.seed = seed
        self.replication = replication
        self.compiled = compiled
        self._laws: UnitLaws | None = None
        run = model.spec.run
        self.horizon = run.horizon
        if model.trace is not None:
            self._scale = model.trace.rate / model.rate
            keep = model.trace.n_rows
            if run.arrivals is not None:
                keep = min(keep, run.arrivals)
            if run.horizon is not None:
                keep = min(keep, self._count_until(run.horizon))
            if keep == 0:
                raise SpecError("no trace job arrives within run.horizon", field="run.horizon")
            self.n_jobs: int | None = keep
        else:
            self.n_jobs = run.arrivals
            probs = np.array([c.probability for c in model.classes])
            self._class_cdf = np.cumsum(probs / probs.sum())  # what _classes draws from
            self._class_cdf /= self._class_cdf[-1]
            if _kernels(compiled):
                self._laws = UnitLaws.of(model, self._class_cdf, seed, replication)

    def window(self) -> Window:
        """The measurement window (a pass over the arrival times when N is given)."""
        warmup = self.model.spec.run.warmup
        if self.n_jobs is None:
            horizon = float(self.horizon)  # type: ignore[arg-type]
            return Window(None, None, warmup * horizon, horizon)
        n = self.n_jobs
        warm = min(int(warmup * n), n - 1)
        if self.model.trace is not None:
            return Window(n, warm, self._trace_arrival_of(warm), self._trace_arrival_of(n - 1))
        times = ArrivalTimes(self.model, self.seed, self.replication, compiled=self.compiled)
        t_warm = t_end = 0.0
        for start in range(0, n, UNIT):
            unit = times.next().time
            if start <= warm < start + UNIT:
                t_warm = float(unit[warm - start])
            if n - 1 < start + UNIT:
                t_end = float(unit[n - 1 - start])
        return Window(n, warm, t_warm, t_end)

    def units(self) -> Iterator[Jobs]:
        """The jobs in units of at most UNIT, until N jobs or the horizon."""
        if self.model.trace is not None:
            yield from self._trace_units()
            return
        times = ArrivalTimes(self.model, self.seed, self.replication, compiled=self.compiled)
        produced = 0
        u = 0
        while self.n_jobs is None or produced < self.n_jobs:
            unit = times.next()
            arrival = unit.time
            jobs = self._unit_jobs(arrival, u, unit.job_class)
            u += 1
            keep = len(jobs)
            if self.n_jobs is not None:
                keep = min(keep, self.n_jobs - produced)
            if self.horizon is not None:
                keep = min(keep, int(np.searchsorted(arrival, self.horizon, side="right")))
            if produced == 0 and keep == 0:
                raise SpecError(
                    "the run has no arrivals; lengthen run.horizon", field="run.horizon"
                )
            if keep > 0:
                yield jobs.head(keep)
            produced += keep
            if keep < len(jobs):
                return

    def _unit_jobs(self, arrival: np.ndarray, u: int, job_class: np.ndarray | None) -> Jobs:
        model = self.model
        n = arrival.shape[0]
        if job_class is None and self._laws is not None:
            job_class, demand, work = self._laws.draw(u, n)
        else:
            if job_class is None:  # else batch vectors: drawn with the arrival times
                job_class = self._classes(n, u)
            demand, work = self._demand_and_work(job_class, u)
        if work.size and work.min() <= 0:  # (min: no temporary array)
            c = int(job_class[np.argmax(work <= 0)])
            raise SpecError(
                "durations must be > 0; this distribution produced 0",
                field=f"workload.classes[{c}].duration",
            )
        if model.family != "pooled":
            _check_every_job_fits(model, job_class, demand)
        return synthetic_jobs(arrival, job_class, demand, work)

    def _demand_and_work(self, job_class: np.ndarray, u: int) -> tuple[np.ndarray, np.ndarray]:
        """Unit u's demands and durations, class by class: class 0's jobs draw first."""
        n = job_class.shape[0]
        demand = np.empty((n, len(self.model.resources)))
        work = np.empty(n)
        rng_demand = stream(self.seed, self.replication, "demand", u)
        rng_duration = stream(self.seed, self.replication, "duration", u)
        for c, cls in enumerate(self.model.classes):
            idx = np.flatnonzero(job_class == c)
            for r, dist in enumerate(cls.demand):
                demand[idx, r] = dist.sample(rng_demand, idx.size)
            work[idx] = cls.duration.sample(rng_duration, idx.size)
        return demand, work

    def _classes(self, n: int, u: int) -> np.ndarray:
        """The classes of unit u's n jobs, i.i.d. with the classes' probabilities."""
        classes = self.model.classes
        if len(classes) == 1:
            return np.zeros(n, dtype=np.int32)
        rng_class = stream(self.seed, self.replication, "classes", u)
        # = rng_class.choice(len(classes), size=n, p=...) draw for draw (NumPy's own algorithm:
        # inverse CDF of uniforms), without its per-call validation of p
        return self._class_cdf.searchsorted(rng_class.random(n), side="right").astype(np.int32)

    def _trace_parts(self) -> Iterator[np.ndarray]:
        """The trace's arrival times on the model's time scale, batch by batch."""
        assert self.model.trace is not None
        for cols in self.model.trace.batches():
            yield cols.arrival * self._scale

    def _count_until(self, horizon: float) -> int:
        return sum(int(np.searchsorted(a, horizon, side="right")) for a in self._trace_parts())

    def _trace_arrival_of(self, index: int) -> float:
        seen = 0
        for a in self._trace_parts():
            if index < seen + a.size:
                return float(a[index - seen])
            seen += a.size
        raise IndexError(index)

    def _trace_units(self) -> Iterator[Jobs]:
        assert self.model.trace is not None and self.n_jobs is not None
        produced = 0
        declared = bool(self.model.spec.workload.classes)
        per_class = np.array([[d.support[0] for d in c.demand] for c in self.model.classes])
        for cols in self.model.trace.batches():
            take = min(cols.arrival.size, self.n_jobs - produced)
            job_class = np.zeros(take, dtype=np.int32)
            demand = cols.demand[:take]
            if declared:  # declared classes: each job takes its class's (fixed) demand
                job_class = cols.job_class[:take].astype(np.int32)
                demand = per_class[job_class]
            yield Jobs(
                arrival=cols.arrival[:take] * self._scale,
                job_class=job_class,
                demand=demand,
                work=cols.duration[:take],
                estimate=cols.estimate[:take],
                user=cols.user[:take],
                queue=cols.queue[:take],
            )
            produced += take
            if produced == self.n_jobs:
                return


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


def concatenate(parts: list[Jobs]) -> Jobs:
    return Jobs(
        *(np.concatenate([getattr(u, f) for u in parts]) for f in Jobs.__dataclass_fields__)
    )


def generate_jobs(model: CompiledModel, seed: int, replication: int = 0) -> Jobs:
    """The whole job sequence of one replication in memory (for tests and small analyses; a
    streaming run never calls this)."""
    return concatenate(list(JobSource(model, seed, replication).units()))
