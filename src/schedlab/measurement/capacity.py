"""Utilization over the makespan and loss of capacity of a finite replay (issue 43 item 3).

Both come from the jobs' arrival a, start s, finish f and need n (servers), on k servers, over
the makespan [t0, t1] (t0: the first measured arrival, t1: the last completion;
measurement/metrics.py):

* busy processor-time B = integral over [t0, t1] of the servers in use; **utilization over the
  makespan** U = B / (k (t1 - t0)) (a fraction of the capacity);
* **loss of capacity** L = integral over [t0, t1] of the free servers k - used(t) over the times
  at which the queue holds a job whose need fits in them (a <= t < s and n <= k - used(t)),
  reported as the fraction L / (k (t1 - t0)) of the capacity. It is the capacity a scheduler
  left idle although a waiting job could have used it: what backfilling recovers (FCFS blocked
  behind the head of its queue). Zhang, Franke, Moreira and Sivasubramaniam's loss of capacity
  (IEEE TPDS 14(3), 2003) counts the free servers whenever any job waits; this one counts them
  only while a waiting job fits, so that a greedy policy loses none.

A job runs on [s, f) and waits on [a, s) (a non-preemptive run; the caller drops the metrics of a
run with preemptions). The sweep is streaming: :meth:`CapacitySweep.advance` takes the span
[t, T) since the last call with every job that was in the system during it (the jobs that left
in it, and those present at T), so no job is kept once it has left; a span's cost is O(m log m)
for its m jobs (sorts, and a near-linear pass giving each elementary span its least waiting need).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab._jit import kernel
from schedlab.engine import constants as K
from schedlab.engine.state import State


@dataclass
class CapacitySweep:
    """The running integrals over [t0, t) (module docstring); ``k`` servers."""

    k: float
    t0: float
    t: float = math.nan
    busy: float = 0.0
    lost: float = 0.0

    def __post_init__(self) -> None:
        self.t = self.t0

    def advance(
        self,
        end: float,
        arrival: np.ndarray,
        start: np.ndarray,
        finish: np.ndarray,
        need: np.ndarray,
    ) -> None:
        """Add the span [self.t, end): the jobs given are every job in the system during it
        (NaN start: still waiting at ``end``; NaN finish: still running)."""
        lo, hi = self.t, end
        if not hi > lo:
            return
        s = np.where(np.isnan(start), math.inf, start)
        f = np.where(np.isnan(finish), math.inf, finish)
        run_lo, run_hi = np.maximum(s, lo), np.minimum(f, hi)
        running = run_hi > run_lo
        self.busy += float((need[running] * (run_hi - run_lo)[running]).sum())
        wait_lo, wait_hi = np.maximum(arrival, lo), np.minimum(s, hi)
        waiting = wait_hi > wait_lo
        self.lost += _lost(
            lo,
            hi,
            self.k,
            run_lo[running],
            run_hi[running],
            need[running],
            wait_lo[waiting],
            wait_hi[waiting],
            need[waiting],
        )
        self.t = hi

    def utilization(self) -> float:
        span = self.t - self.t0
        return self.busy / (self.k * span) if span > 0 else math.nan

    def loss_of_capacity(self) -> float:
        span = self.t - self.t0
        return self.lost / (self.k * span) if span > 0 else math.nan


@dataclass
class SweepingWriter:
    """The engine session's writer of a run that measures its capacity (simulation/simulate.py):
    each time the per-job buffer is handed over (full, or at the end) the sweep advances to now
    with the jobs that left since it last ran (the buffer) and those in the system now; then the
    buffer goes to the per-job output ``jobs`` (``run.jobs``), if any (the session empties it)."""

    sweep: CapacitySweep
    jobs: Any | None = None  # measurement.jobs_output.JobsWriter

    def write(self, st: State) -> None:
        self.advance(st)
        if self.jobs is not None:
            self.jobs.write(st)

    def advance(self, st: State) -> None:
        """The sweep to now, the buffer left as it is."""
        n = int(st.ctr[K.OUT_N])
        out = st.out_f[:n]
        present = np.flatnonzero((st.status == K.WAITING) | (st.status == K.RUNNING))
        self.sweep.advance(
            float(st.clk[K.NOW]),
            np.concatenate((out[:, K.O_ARRIVAL], st.arrival[present])),
            np.concatenate((out[:, K.O_START], st.t_start[present])),
            np.concatenate((out[:, K.O_FINISH], np.full(present.size, np.nan))),
            np.concatenate((out[:, K.O_FIRST_DEMAND], st.demand[present, 0])),
        )


def _lost(
    lo: float,
    hi: float,
    k: float,
    run_lo: np.ndarray,
    run_hi: np.ndarray,
    run_need: np.ndarray,
    wait_lo: np.ndarray,
    wait_hi: np.ndarray,
    wait_need: np.ndarray,
) -> float:
    """The integral over [lo, hi) of the free servers while a waiting job fits in them."""
    if wait_lo.size == 0:
        return 0.0
    times = np.unique(np.concatenate(([lo, hi], run_lo, run_hi, wait_lo, wait_hi)))
    # servers in use on each elementary span [times[i], times[i + 1])
    delta = np.zeros(times.size)
    np.add.at(delta, np.searchsorted(times, run_lo), run_need)
    np.add.at(delta, np.searchsorted(times, run_hi), -run_need)
    free = k - np.cumsum(delta)[:-1]
    order = np.argsort(wait_need, kind="stable")
    least = _least_need(
        times.size - 1,
        np.searchsorted(times, wait_lo)[order],
        np.searchsorted(times, wait_hi)[order],
        wait_need[order],
    )
    fits = (least <= free) & (free > 0)
    return float((free * np.diff(times))[fits].sum())


@kernel(wraparound=False)
def _least_need(spans, first, end, need):
    """The least need of the jobs waiting on each elementary span: jobs taken by increasing need
    (``need`` sorted), each gives its need to the spans [first, end) of its wait not given one
    yet, found through a "next span without a need" forest with path halving (near-linear)."""
    least = np.full(spans, np.inf)
    nxt = np.arange(spans + 1)
    for j in range(need.size):
        i = _root(nxt, first[j])
        while i < end[j]:
            least[i] = need[j]
            nxt[i] = i + 1
            i = _root(nxt, i + 1)
    return least


@kernel(wraparound=False, inline="always")
def _root(nxt, i):
    while nxt[i] != i:
        nxt[i] = nxt[nxt[i]]
        i = nxt[i]
    return i
