"""berg2020 Appendix A: SRPT-k for parallelizable jobs arriving at time 0, and the LP lower bound.

Setting (App. A): n jobs, all released at time 0, with known inherent sizes x_j; job j is
parallelizable up to k_j processors (given k' processors it is processed at rate min(k_j, k'));
k processors in total; objective: total (equivalently mean) response time, sum_j C_j.

**SRPT-k** (the paper's generalization): sort the jobs by inherent size, x_1 <= ... <= x_n (ties by
index), and at every moment hand the processors out in this order, each job up to k_j of them,
the next job getting what is left. The order is the one of the *inherent* sizes, fixed once, as
the paper's analysis defines it (U_j = sum_{i<j} x_i is the work "strictly ahead of" j).
Theorem 9: SRPT-k is a 4-approximation. Every job also meets the bound used in Lemma 10,
C_j <= U_j/k + x_j/min(k_j, k) (processors are either all busy on jobs up to j, or j runs at its
cap).

**LP_primal** (App. A): minimize sum_j sum_t (t/x_j + 1/(2 k_j)) y_jt subject to
sum_t y_jt >= x_j, sum_j y_jt <= k, y >= 0. The paper writes it over integer times t; here time is
cut into slots of width d (t = slot start, capacity k d per slot), solved with HiGHS
(``scipy.optimize.linprog(method="highs")``). Crediting the work of slot [t, t+d) at its start t
keeps it a lower bound on the optimal total response time for every d (inferred; the paper uses
d = 1): for any schedule, sum_t t y_jt/x_j <= the mean time at which j's work is done
<= C_j - x_j/(2 k_j), since j is processed at rate at most k_j. A horizon of slots + 1 slots with
d = sum_j x_j / (k slots) loses nothing: an optimal LP solution never leaves an earlier slot idle.
Since LP <= OPT, a measured ratio SRPT-k / LP <= 4 certifies SRPT-k / OPT <= 4 on the instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.errors import SchedlabError


class ParallelJobsError(SchedlabError, ValueError):
    """Invalid sizes, parallelism caps or processor count."""


def _check(sizes: np.ndarray, caps: np.ndarray, k: float) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(sizes, dtype=float)
    c = np.asarray(caps, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ParallelJobsError("sizes must be a non-empty list of numbers")
    if c.shape != x.shape:
        raise ParallelJobsError(f"{c.size} parallelism caps for {x.size} jobs")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ParallelJobsError("job sizes must be finite and > 0")
    if not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise ParallelJobsError("parallelism caps k_j must be finite and > 0")
    if not (math.isfinite(k) and k > 0):
        raise ParallelJobsError(f"the number of processors k must be > 0, got {k}")
    return x, c


@dataclass(frozen=True)
class Schedule:
    """SRPT-k's schedule: completion times and the piecewise-constant allocations."""

    sizes: np.ndarray
    caps: np.ndarray
    k: float
    order: np.ndarray  # priority order (indices, by inherent size)
    completion: np.ndarray  # C_j
    segments: list[tuple[float, float, np.ndarray]]  # (start, end, processors per job)

    @property
    def total_response_time(self) -> float:
        """sum_j C_j (all jobs arrive at 0, so response time = completion time)."""
        return float(self.completion.sum())

    @property
    def mean_response_time(self) -> float:
        return self.total_response_time / self.completion.size

    def lemma10_bounds(self) -> np.ndarray:
        """U_j/k + x_j/min(k_j, k) for every job (an upper bound on C_j)."""
        x = self.sizes[self.order]
        ahead = np.concatenate([[0.0], np.cumsum(x)[:-1]])
        bound = np.empty_like(self.sizes)
        bound[self.order] = ahead / self.k + x / np.minimum(self.caps[self.order], self.k)
        return bound


def srpt_k(sizes: np.ndarray | list[float], caps: np.ndarray | list[float], k: float) -> Schedule:
    """Run SRPT-k (App. A) on jobs all released at time 0."""
    x, c = _check(np.asarray(sizes, dtype=float), np.asarray(caps, dtype=float), float(k))
    n = x.size
    order = np.argsort(x, kind="stable")
    left = x.copy()
    done = np.zeros(n, dtype=bool)
    completion = np.zeros(n)
    segments: list[tuple[float, float, np.ndarray]] = []
    now = 0.0
    while not done.all():
        alloc = np.zeros(n)
        free = float(k)
        for j in order:
            if done[j]:
                continue
            a = min(c[j], free)
            alloc[j] = a
            free -= a
            if free <= 1e-12 * k:
                break
        rate = np.minimum(alloc, c)  # min(k_j, k'): allocations never exceed k_j here
        running = rate > 0
        dt = float(np.min(left[running] / rate[running]))
        segments.append((now, now + dt, alloc))
        now += dt
        left[running] -= rate[running] * dt
        finished = running & (left <= 1e-12 * np.maximum(x, 1.0))
        # the job attaining the minimum always finishes (guards against rounding)
        finished[np.flatnonzero(running)[np.argmin(left[running])]] = True
        left[finished] = 0.0
        done |= finished
        completion[finished] = now
    return Schedule(
        sizes=x, caps=c, k=float(k), order=order, completion=completion, segments=segments
    )


@dataclass(frozen=True)
class LPBound:
    """Optimal value of LP_primal on a slot grid: a lower bound on OPT's total response time."""

    value: float
    slot: float
    slots: int
    status: str


def lp_primal_lower_bound(
    sizes: np.ndarray | list[float],
    caps: np.ndarray | list[float],
    k: float,
    *,
    slots: int = 200,
) -> LPBound:
    """LP_primal (App. A) on ``slots`` + 1 slots of width sum(x) / (k slots), solved by HiGHS."""
    from scipy import sparse  # on use: importing scipy takes ~0.5 s
    from scipy.optimize import linprog  # on use: importing scipy takes ~0.5 s

    x, c = _check(np.asarray(sizes, dtype=float), np.asarray(caps, dtype=float), float(k))
    if slots < 1:
        raise ParallelJobsError("slots must be >= 1")
    n = x.size
    d = float(x.sum()) / (k * slots)
    h = slots + 1
    t = np.arange(h) * d
    cost = (t[None, :] / x[:, None] + 1.0 / (2.0 * c[:, None])).ravel()  # y[j, s] at j*h + s
    var = np.arange(n * h)
    # -sum_t y_jt <= -x_j
    demand = sparse.csr_matrix((-np.ones(n * h), (var // h, var)), shape=(n, n * h))
    # sum_j y_jt <= k d
    capacity = sparse.csr_matrix((np.ones(n * h), (var % h, var)), shape=(h, n * h))
    res = linprog(
        cost,
        A_ub=sparse.vstack([demand, capacity]).tocsc(),
        b_ub=np.concatenate([-x, np.full(h, k * d)]),
        bounds=(0, None),
        method="highs",
    )
    if res.status != 0:
        raise SchedlabError(f"HiGHS could not solve LP_primal: {res.message}")
    return LPBound(value=float(res.fun), slot=d, slots=slots, status=res.message)


@dataclass(frozen=True)
class RatioSample:
    n: int
    k: float
    srpt_k: float
    lp: float

    @property
    def ratio(self) -> float:
        return self.srpt_k / self.lp


def random_instance(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sizes from a 50/50 mix of Exp(1) and a heavy-tailed Pareto(1.5) (x >= 0.1), caps k_j
    uniform on {1, ..., k} (inelastic k_j = 1 and fully elastic k_j = k included)."""
    heavy = rng.random(n) < 0.5
    sizes = np.where(heavy, 0.1 * (1.0 + rng.pareto(1.5, n)), rng.exponential(1.0, n))
    caps = rng.integers(1, k + 1, n).astype(float)
    return sizes, caps


def approximation_ratios(
    instances: int, n_jobs: int, k: int, *, seed: int = 0, slots: int = 200
) -> list[RatioSample]:
    """SRPT-k against LP_primal on random instances. LP <= OPT, so each SRPT-k / LP ratio is an
    upper bound on SRPT-k / OPT, which Theorem 9 says is at most 4."""
    if instances < 1 or n_jobs < 1 or k < 1:
        raise ParallelJobsError("instances, jobs and k must be >= 1")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(instances):
        sizes, caps = random_instance(rng, n_jobs, k)
        alg = srpt_k(sizes, caps, k).total_response_time
        lp = lp_primal_lower_bound(sizes, caps, k, slots=slots).value
        out.append(RatioSample(n=n_jobs, k=float(k), srpt_k=alg, lp=lp))
    return out
