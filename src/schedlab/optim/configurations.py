"""Feasible server configurations (psychas2019 Def. 1) and the reduced set K_RED (Def. 5).

Paper: Psychas & Ghaderi, "Scheduling Jobs with Random Resource Requirements in Computing Clusters",
INFOCOM 2019 (psychas2019).

* :func:`feasible_configurations` enumerates the integer vectors k >= 0 with sum_j k_j r_j <= 1
  (Definition 1), optionally only the maximal ones (no further job of any type fits), which are the
  vertices that matter in the capacity LP (eq. (4)) since the configuration set is closed downwards.
* :func:`universal_partition` is partition I of (1/2^J, 1] of eq. (6): I_2m =
  (2/3 2^-m, 2^-m], I_2m+1 = (1/2 2^-m, 2/3 2^-m], m = 0..J-1; jobs of size <= 1/2^J join the last
  virtual queue VQ_{2J-1} (§V-A).
* :func:`reduced_configurations` is K_RED^(J) of eq. (7), 4J - 4 configurations, each feasible for
  upper-rounded virtual queues (Definition 4).
* :func:`max_weight` returns a max-weight configuration <k, Q> (Definition 2, eq. (5)) over a given
  set, used by VQS (eq. (8)) and in the Proposition 1 checks.

Sizes are normalized to the server capacity (a server has capacity 1) unless a ``capacity`` is
given. Exact float comparisons use a tolerance of 1e-12 relative to the capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TOL = 1e-12


class TooManyConfigurations(ValueError):
    """Enumeration stopped: the configuration set is larger than the requested limit."""


def _as_sizes(sizes: Sequence[float] | np.ndarray, capacity: float) -> np.ndarray:
    r = np.asarray(sizes, dtype=float).ravel()
    if r.size == 0:
        raise ValueError("no job sizes given")
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError("job sizes must be finite and > 0 (a size-0 type fits without limit)")
    if capacity <= 0:
        raise ValueError("capacity must be > 0")
    return r


VISITS = 4


def feasible_configurations(
    sizes: Sequence[float] | np.ndarray,
    capacity: float = 1.0,
    *,
    maximal: bool = False,
    limit: int = 1_000_000,
) -> np.ndarray:
    """All feasible configurations k (Definition 1) for job types of the given sizes, one per row.

    With ``maximal=True`` only the maximal ones: no job of any type fits in what is left. The zero
    configuration is included when ``maximal`` is False. Raises :class:`TooManyConfigurations`
    beyond ``limit`` rows (the set grows exponentially with the number of small types; use the
    column-generation LP of :mod:`schedlab.optim.capacity_lp` instead).
    """
    r = _as_sizes(sizes, capacity)
    n = r.size
    order = np.argsort(-r, kind="stable")  # large sizes first: fewer branches near the root
    rs = r[order]
    tol = TOL * max(1.0, capacity)
    smallest = rs.min()
    out: list[np.ndarray] = []
    k = np.zeros(n, dtype=np.int64)
    visited = [0]  # leaves of the search, kept or not: the search stops after VISITS x limit

    def rec(i: int, left: float) -> None:
        if i == n:
            visited[0] += 1
            if visited[0] > VISITS * limit:
                raise TooManyConfigurations(
                    f"more than {VISITS * limit} candidate configurations for {n} job types"
                )
            if maximal and left + tol >= smallest:
                return
            if len(out) >= limit:
                raise TooManyConfigurations(
                    f"more than {limit} feasible configurations for {n} job types"
                )
            row = np.empty(n, dtype=np.int64)
            row[order] = k
            out.append(row)
            return
        most = int(np.floor((left + tol) / rs[i]))
        for c in range(most, -1, -1):
            k[i] = c
            rec(i + 1, left - c * rs[i])
        k[i] = 0

    rec(0, float(capacity))
    return np.array(out, dtype=np.int64).reshape(len(out), n)


def is_feasible(k: np.ndarray, sizes: np.ndarray, capacity: float = 1.0) -> bool:
    """Whether configuration k fits: sum_j k_j r_j <= capacity (Definition 1)."""
    k = np.asarray(k)
    return bool(np.all(k >= 0) and float(k @ np.asarray(sizes)) <= capacity * (1.0 + TOL))


# ---------------------------------------------------------------------------------------------
# Partition I (eq. (6)) and K_RED (eq. (7))


@dataclass(frozen=True)
class PartitionI:
    """Partition I of eq. (6) with parameter J: 2J intervals (lower[j], upper[j]], j = 0..2J-1.

    ``upper`` are the upper-rounded sizes of Definition 4. ``lower[2J-1]`` is 1/2^J; smaller jobs
    also join VQ_{2J-1} (§V-A), so the virtual queue of a size is given by :meth:`index`."""

    J: int
    lower: np.ndarray
    upper: np.ndarray

    def index(self, size: float) -> int:
        """The virtual queue of a job of normalized size in (0, 1] (sizes <= 1/2^J: 2J - 1)."""
        return int(vq_index(np.array([size]), self.J)[0])


def universal_partition(J: int) -> PartitionI:
    """Partition I of (1/2^J, 1] into 2J subintervals, eq. (6). J must be > 1 (§V-A)."""
    if J < 2:
        raise ValueError("partition I needs J > 1 (psychas2019 §V-A)")
    lower = np.empty(2 * J)
    upper = np.empty(2 * J)
    for m in range(J):
        top = 2.0**-m
        upper[2 * m] = top
        lower[2 * m] = 2.0 / 3.0 * top
        upper[2 * m + 1] = 2.0 / 3.0 * top
        lower[2 * m + 1] = 0.5 * top
    return PartitionI(J=J, lower=lower, upper=upper)


def vq_index(sizes: np.ndarray, J: int) -> np.ndarray:
    """Virtual-queue index of each normalized size (eq. (6)); sizes <= 1/2^J go to 2J - 1.

    The comparisons are exactly those of the compiled policies (``size > lower[j]`` walking down
    the partition), so theory and simulation agree on boundary sizes such as 1/2 (which is in I_2).
    """
    part = universal_partition(J)
    y = np.asarray(sizes, dtype=float)
    out = np.full(y.shape, 2 * J - 1, dtype=np.int64)
    assigned = np.zeros(y.shape, dtype=bool)
    for j in range(2 * J):
        hit = ~assigned & (y > part.lower[j])
        out[hit] = j
        assigned |= hit
    return out


@dataclass(frozen=True)
class ReducedConfiguration:
    """One configuration of K_RED in compact form: k = k1 e_1 + km e_jm (eq. (7))."""

    k1: int  # 0 or 1: one job of VQ_1 (reserving 2/3 of the server under VQS, §V-B step 2(i))
    main: int  # the other virtual queue jm (never 1)
    count: int  # km >= 1

    def vector(self, J: int) -> np.ndarray:
        k = np.zeros(2 * J, dtype=np.int64)
        k[1] += self.k1
        k[self.main] += self.count
        return k


def reduced_compact(J: int) -> list[ReducedConfiguration]:
    """K_RED^(J) of eq. (7) in the paper's order, as (k1, jm, km) triples (4J - 4 of them)."""
    if J < 2:
        raise ValueError("K_RED needs J > 1 (psychas2019 §V-A)")
    out = [ReducedConfiguration(0, 2 * m, 2**m) for m in range(J)]
    out += [ReducedConfiguration(0, 2 * m + 1, 3 * 2 ** (m - 1)) for m in range(1, J)]
    out += [ReducedConfiguration(1, 2 * m, 2**m // 3) for m in range(2, J)]
    out += [ReducedConfiguration(1, 2 * m + 1, 2 ** (m - 1)) for m in range(1, J)]
    return out


def reduced_configurations(J: int) -> np.ndarray:
    """K_RED^(J) of eq. (7) as a (4J - 4, 2J) integer array, rows in the paper's order."""
    return np.array([c.vector(J) for c in reduced_compact(J)], dtype=np.int64)


def max_weight(configurations: np.ndarray, queues: np.ndarray) -> tuple[int, float]:
    """Index and weight of a max-weight configuration <k, Q> (Definition 2, eq. (8)); ties go to
    the first row (the order of eq. (7) for K_RED)."""
    w = np.asarray(configurations, dtype=float) @ np.asarray(queues, dtype=float)
    i = int(np.argmax(w))
    return i, float(w[i])
