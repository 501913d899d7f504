"""rho* for any job-size distribution: upper- and lower-rounded bounds (psychas2019 Def. 4, Thm 1).

psychas2019 §III-B: for a partition X of the size axis into sets X_1..X_N, rounding every size in
X_i up to sup X_i gives a finite-type system whose maximum workload rho_up(X) (the paper's
overline-rho*(X)) is at most rho*; rounding down to inf X_i gives rho_low(X) (underline-rho*(X)) at
least rho* (Definition 4). Theorem 1: along a sequence of refining partitions both converge to
rho*. This module builds the proof's partitions (Appendix A): at level n the continuous part of F_R
is cut at its quantiles i/2^(n+1), and the atoms (points of discontinuity; all values of an
empirical distribution) form sets of their own, heavy atoms first, lighter ones grouped by mass
when there are more than 2^(n+1) of them. Each finite-type system is solved exactly by
:func:`schedlab.optim.capacity_lp.solve_on_grid`. Refinement stops when the bounds are within
``tol`` (relative) of each other.

Grid rounding (our addition, stated so the bracket stays rigorous): the exact LP solver needs the
sizes on a grid of ``grid`` units per largest server capacity. Upper-rounded sizes are rounded up
to the grid and lower-rounded ones down (capacities down and up respectively), which only widens
the bracket. A purely discrete distribution whose values share a common grid with the capacities
(e.g. 0.4 and 0.6) is solved exactly: both bounds equal rho*.

Units: rho* is the workload lambda/mu of §II. For a trace with durations correlated with sizes, pass
duration weights (:meth:`SizeLaw.from_samples`): then each type's share is its share of the
size-independent work lambda E[S 1{R in X_j}], and rho* is in units of lambda E[S].

Command line: ``python -m schedlab.optim.rounded_bounds --uniform 0.01 0.19 --servers 5``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.optim.capacity_lp import common_grid, solve_on_grid

DEFAULT_GRID = 1 << 16
GRID_TOL = 1e-9


@dataclass(frozen=True)
class SizeLaw:
    """A job-size distribution F_R: atoms plus an optional continuous part.

    ``ppf`` maps u in [0, 1] to the u-quantile of the continuous part (normalized to mass 1), whose
    support is [low, high] and whose total probability is ``continuous_mass``."""

    atoms: np.ndarray
    atom_probs: np.ndarray
    continuous_mass: float = 0.0
    ppf: Callable[[np.ndarray], np.ndarray] | None = None
    low: float = math.nan
    high: float = math.nan

    @classmethod
    def discrete(cls, values: Sequence[float], probabilities: Sequence[float] | None = None):
        v = np.asarray(values, dtype=float)
        p = (
            np.full(v.size, 1.0 / v.size)
            if probabilities is None
            else np.asarray(probabilities, dtype=float)
        )
        if v.size == 0 or v.size != p.size or np.any(p < 0) or p.sum() <= 0:
            raise ValueError("give values with non-negative probabilities")
        order = np.argsort(v)
        v, p = v[order], p[order] / p.sum()
        uniq, inv = np.unique(v, return_inverse=True)
        return cls(atoms=uniq, atom_probs=np.bincount(inv, weights=p))

    @classmethod
    def from_samples(cls, values: Sequence[float], weights: Sequence[float] | None = None):
        """The empirical distribution of observed sizes (e.g. a trace's demands), optionally
        weighted (by durations: the share of work, see the module docstring)."""
        v = np.asarray(values, dtype=float)
        w = np.ones(v.size) if weights is None else np.asarray(weights, dtype=float)
        if v.size == 0 or w.size != v.size:
            raise ValueError("give one weight per sample")
        uniq, inv = np.unique(v, return_inverse=True)
        p = np.bincount(inv, weights=w)
        return cls(atoms=uniq, atom_probs=p / p.sum())

    @classmethod
    def continuous(cls, ppf: Callable[[np.ndarray], np.ndarray], low: float, high: float):
        """A continuous distribution on [low, high] given by its quantile function."""
        if not (0 <= low < high):
            raise ValueError("need 0 <= low < high")
        return cls(np.zeros(0), np.zeros(0), 1.0, ppf, float(low), float(high))

    @classmethod
    def uniform(cls, low: float, high: float):
        return cls.continuous(lambda u: low + (high - low) * np.asarray(u), low, high)

    @property
    def support(self) -> tuple[float, float]:
        lo, hi = math.inf, -math.inf
        if self.atoms.size:
            lo, hi = float(self.atoms.min()), float(self.atoms.max())
        if self.continuous_mass > 0:
            lo, hi = min(lo, self.low), max(hi, self.high)
        return lo, hi

    @property
    def mean(self) -> float:
        m = float(self.atoms @ self.atom_probs) if self.atoms.size else 0.0
        if self.continuous_mass > 0:
            u = (np.arange(100_000) + 0.5) / 100_000
            m += self.continuous_mass * float(np.mean(self.ppf(u)))  # type: ignore[misc]
        return m


@dataclass(frozen=True)
class LevelBounds:
    """The bracket of one partition X^(n): lower = rho_up(X) <= rho* <= upper = rho_low(X)."""

    level: int
    types: int
    grid: int
    lower: float
    upper: float
    seconds: float


@dataclass
class BoundsResult:
    """rho* bracketed: ``lower`` <= rho* <= ``upper`` (best over all levels)."""

    lower: float
    upper: float
    levels: list[LevelBounds] = field(default_factory=list)
    exact: bool = False
    converged: bool = False
    mean_size: float = math.nan
    total_capacity: float = math.nan

    @property
    def rho_star(self) -> float:
        """Midpoint of the bracket (exact when ``exact``)."""
        return 0.5 * (self.lower + self.upper)

    @property
    def gap(self) -> float:
        return (self.upper - self.lower) / self.upper if self.upper > 0 else 0.0

    def traffic_intensity(self) -> tuple[float, float]:
        """The bracket in the engine's ``load`` units (alpha = rho E[R] / total capacity)."""
        f = self.mean_size / self.total_capacity
        return self.lower * f, self.upper * f


def _atom_groups(atoms: np.ndarray, probs: np.ndarray, m: int) -> list[tuple[float, float, float]]:
    """(inf, sup, prob) of sets of atoms: singletons if there are at most m atoms, else consecutive
    atoms grouped greedily to about 1/m of the atoms' mass each (a heavy atom stays alone)."""
    if atoms.size == 0:
        return []
    if atoms.size <= m:
        return [(float(a), float(a), float(p)) for a, p in zip(atoms, probs, strict=True)]
    target = probs.sum() / m
    groups = []
    start, acc = 0, 0.0
    for i in range(atoms.size):
        if i > start and acc + probs[i] > target:
            groups.append((float(atoms[start]), float(atoms[i - 1]), acc))
            start, acc = i, 0.0
        acc += probs[i]
    groups.append((float(atoms[start]), float(atoms[-1]), acc))
    return groups


def partition_level(law: SizeLaw, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sets of partition X^(n) as arrays (inf, sup, probability), Appendix A's construction."""
    m = 2 ** (n + 1)
    infs, sups, probs = [], [], []
    if law.continuous_mass > 0:
        q = np.asarray(law.ppf(np.linspace(0.0, 1.0, m + 1)), dtype=float)  # type: ignore[misc]
        q[0], q[-1] = law.low, law.high
        q = np.maximum.accumulate(q)
        infs.extend(q[:-1])
        sups.extend(q[1:])
        probs.extend([law.continuous_mass / m] * m)
    for lo, hi, p in _atom_groups(law.atoms, law.atom_probs, m):
        infs.append(lo)
        sups.append(hi)
        probs.append(p)
    return np.array(infs), np.array(sups), np.array(probs)


def _merge(w: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(w, return_inverse=True)
    return uniq, np.bincount(inv, weights=p)


def _grid_lp(
    sizes: np.ndarray,
    probs: np.ndarray,
    pools: Sequence[tuple[int, float]],
    units: float,
    up: bool,
) -> float:
    """eq. (4) with sizes rounded up (``up``) or down onto a grid of step ``units``."""
    x = sizes / units
    if up:
        w = np.maximum(np.ceil(x - GRID_TOL), 1).astype(np.int64)
        caps = [(n, math.floor(c / units + GRID_TOL)) for n, c in pools]
    else:
        w = np.floor(x + GRID_TOL).astype(np.int64)
        caps = [(n, math.ceil(c / units - GRID_TOL)) for n, c in pools]
    keep = w > 0  # size-0 types use no capacity (lower rounding only)
    if not keep.any():
        return math.inf
    w, p = _merge(w[keep], probs[keep])
    rho, _, _, _ = solve_on_grid(w, p, caps)
    return rho


def rounded_bounds(
    law: SizeLaw,
    *,
    servers: int = 1,
    capacity: float = 1.0,
    pools: Sequence[tuple[int, float]] | None = None,
    tol: float = 0.01,
    max_level: int = 7,
    grid: int = DEFAULT_GRID,
    progress: Callable[[LevelBounds], None] | None = None,
) -> BoundsResult:
    """Bracket rho* of psychas2019 (Theorem 1) for the size law on the given servers.

    Levels n = 0, 1, ... use partition X^(n) (2^(n+1) quantile cells of the continuous part, atoms
    on their own); each level gives rho_up(X) <= rho* <= rho_low(X), and the result keeps the best
    of both. Stops once (upper - lower) <= tol * upper, or after ``max_level``."""
    pl = (
        [(int(servers), float(capacity))]
        if pools is None
        else [(int(n), float(c)) for n, c in pools]
    )
    cmax = max(c for _, c in pl)
    lo_s, hi_s = law.support
    if lo_s <= 0 or hi_s > cmax * (1 + 1e-12):
        raise ValueError(
            f"job sizes must lie in (0, {cmax:g}] (the largest server); support is "
            f"[{lo_s:g}, {hi_s:g}]"
        )
    result = BoundsResult(
        lower=0.0,
        upper=math.inf,
        mean_size=law.mean,
        total_capacity=float(sum(n * c for n, c in pl)),
    )
    exact_grid = None
    if law.continuous_mass == 0 and law.atoms.size <= 2 ** (max_level + 1):
        exact_grid = common_grid([*law.atoms.tolist(), *(c for _, c in pl)])
    for n in range(max_level + 1):
        t0 = time.perf_counter()
        infs, sups, probs = partition_level(law, n)
        if exact_grid is not None and np.array_equal(infs, sups):
            units = 1.0 / exact_grid
            g = round(cmax * exact_grid)
        else:
            # grid steps well below the partition's resolution (support width / 2^(n+1))
            width = max(hi_s - lo_s, 1e-12 * cmax)
            g = min(grid, 1 << max(10, math.ceil(math.log2(8 * 2 ** (n + 1) * cmax / width))))
            units = cmax / g
        lower = _grid_lp(sups, probs, pl, units, up=True)
        upper = _grid_lp(infs, probs, pl, units, up=False)
        level = LevelBounds(n, int(probs.size), g, lower, upper, time.perf_counter() - t0)
        result.levels.append(level)
        result.lower = max(result.lower, lower)
        result.upper = min(result.upper, upper)
        if progress is not None:
            progress(level)
        if result.upper - result.lower <= 1e-9 * max(1.0, result.upper):
            result.exact = exact_grid is not None and np.array_equal(infs, sups)
            result.converged = True
            break
        if result.upper - result.lower <= tol * result.upper:
            result.converged = True
            break
    return result
