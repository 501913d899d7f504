"""One point split across workers as independent long replications (issue 33 item 5).

Near rho = 1 a single run cannot be both long and parallel: grosof2023's authors ran up to 10^10
arrivals per point. Here a point's length is cut into ``pieces`` independent replications (their
own random streams: the runner's replication index), each run by whichever worker is free. Every
replication starts empty, so each one first discards a warm-up sized from the relaxation time,
then measures; the point's estimate combines the replications' means.

**Relaxation time** (:func:`relaxation_time`): (1 + C^2) / 2 / (1 - sqrt(rho))^2 mean sizes. For
the M/M/1 queue (C^2 = 1) this is exactly the relaxation time 1 / (mu (1 - sqrt(rho))^2) of Morse
(1955), the rate at which its transient dies out (Abate & Whitt, "Simple spectral representations
for the M/M/1 queue", Queueing Systems 3, 1988). For other size laws the factor (1 + C^2) / 2 is
the ratio of the workload's variance rate lambda E[S^2] to the M/M/1's: as rho -> 1 the time is
the relaxation time 2 lambda E[S^2] / (1 - rho)^2 of the regulated Brownian motion that
approximates the workload (Abate & Whitt, "Transient behavior of regulated Brownian motion I",
Adv. Appl. Prob. 19, 1987; Whitt, "Planning queueing simulations", Management Science 35(11),
1989). The workload is the same for every work-conserving policy, so the time scale is the
setting's, not the policy's. (The single-run rule of measurement/reliability.py measures its unit as
(1 + C^2) / 2 / (1 - rho)^2, about a quarter of this one as rho -> 1.)

**Warm-up**: ``WARMUP_RELAXATIONS`` (10) relaxation times per replication. A deviation from the
stationary mean that decays as exp(-t / tau) contributes at most tau x exp(-10) / m of the mean
to a window of m after it: below 10^-4 of the mean for any window longer than tau.

**Interval**: the Student-t interval of the replication means (``pieces`` - 1 degrees of
freedom), not pooled batch means. The replications are independent by construction, so the only
assumption left is that each replication's mean is close to normal (each measures many
relaxation times); pooled batch means would gain degrees of freedom but keep the assumption that
batches inside one run are uncorrelated, which is exactly what fails near rho = 1. Replication r
of every policy at a point sees the same jobs (common random numbers), as a single run does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schedlab.experiments.stats import PointStat, summarize
from schedlab.model.spec import SimulationSpec

WARMUP_RELAXATIONS = 10


def relaxation_time(load: float, scv: float) -> float:
    """(1 + C^2) / 2 / (1 - sqrt(rho))^2 mean sizes (module docstring); inf at rho >= 1."""
    if load >= 1:
        return math.inf
    return (1 + scv) / 2 / (1 - math.sqrt(load)) ** 2


@dataclass(frozen=True)
class SplitPlan:
    """How one point is split: ``pieces`` replications, each ``warmup`` arrivals discarded then
    ``measured`` arrivals measured."""

    load: float
    pieces: int
    warmup: int
    measured: int

    @property
    def arrivals_per_piece(self) -> int:
        return self.warmup + self.measured

    @property
    def total_arrivals(self) -> int:
        return self.pieces * self.arrivals_per_piece

    @property
    def warmup_fraction(self) -> float:
        """``run.warmup`` of a piece: floor(fraction x arrivals) = ``warmup`` jobs."""
        return (self.warmup + 0.5) / self.arrivals_per_piece

    def describe(self) -> str:
        return (
            f"rho={self.load}: {self.pieces} replications x ({self.warmup:,} warm-up + "
            f"{self.measured:,} measured arrivals) = {self.total_arrivals:,} arrivals"
        )


def plan_split(
    load: float, scv: float, relaxations: float, pieces: int, mean_size: float = 1.0
) -> SplitPlan:
    """``relaxations`` relaxation times measured in all, cut into ``pieces`` replications, each
    after a warm-up of WARMUP_RELAXATIONS relaxation times (arrivals = rho / E[S] x time)."""
    arrivals_per_time = load / mean_size
    tau = relaxation_time(load, scv) * mean_size * arrivals_per_time
    return SplitPlan(
        load=load,
        pieces=pieces,
        warmup=math.ceil(WARMUP_RELAXATIONS * tau),
        measured=math.ceil(relaxations * tau / pieces),
    )


def split_spec(spec: SimulationSpec, plan: SplitPlan) -> SimulationSpec:
    """``spec`` as one piece of ``plan`` (its replications are the pieces)."""
    from schedlab.simulation.simulate import with_run

    return with_run(spec, arrivals=plan.arrivals_per_piece, warmup=plan.warmup_fraction)


def combine(records: Sequence[dict[str, Any]], metric: str) -> PointStat:
    """The point's estimate of ``metric`` from its pieces' records: the mean of the replication
    means with its Student-t 95% interval (unstable if any piece is; unreliable as
    :func:`schedlab.experiments.stats.summarize` says)."""
    (stat,) = summarize(records, (), metric)
    return stat
