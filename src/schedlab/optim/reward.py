"""The static reward problem of psychas2022 (Psychas & Ghaderi, Stochastic Systems 2022), §2-§3.

Paper key ``psychas2022``; the paper's inline math is restored in the shared note
``notes/dra.md``, which this module follows.

Model (§2). J VM (job) types; type j needs a resource vector b_j (R entries) and earns u_j per
unit time in service. A server of capacity vector c holds a *configuration* k = (k_1..k_J) when
sum_j k_j b_j <= c (componentwise); K is the set of feasible configurations (with 0) and
K_{J'} those using only the types in J' (eq. (1)). The reward of a configuration is
u(k) = sum_j u_j k_j (Definition 2.1). rho_j = lambda_j / mu_j is the normalized workload.

What is computed here:

* :meth:`StaticProblem.max_reward` — MaxReward(J') (Definition 2.3): the configuration of K_{J'} of
  highest reward, ties broken by the ordering of Definition 2.2 (equal reward: the larger k_j at
  the smallest j where they differ; the *direction* of this tie-break is INFERRED in dra.md).
  An unbounded multidimensional knapsack, solved exactly by dynamic programming over the
  integer grid of demands and capacity, and cached per subset (it does not depend on the
  workload, Remark 1).
* :meth:`StaticProblem.optimum` — F*(rho), the optimum of the normalized LP (3):
  max sum_j u_j y_j s.t. y_j <= rho_j, sum_k k_j x_k >= y_j, sum_k x_k = 1, x >= 0, on HiGHS by
  column generation (pricing: the same knapsack with the LP duals as values; the round without an
  improving column certifies optimality).
* :meth:`StaticProblem.global_greedy` — the global greedy assignment x^g(rho) and its reward
  F^g(rho) (Proposition 3.1, Definition 3.2): the fluid limit of GPA.
* :meth:`StaticProblem.gpa` — the Greedy Placement Algorithm (Algorithm 1) on an integer target
  Yhat and L servers; the per-iteration server count rounds *up* (ceil(Yrem_j / k_i[j]), capped by
  the servers left) and the exhausted type on ties is the lowest index: both INFERRED from
  Appendices B and D (``rounding`` selects "ceil" or "floor").
* :func:`monotone_greedy_check` — Definition 3.8 (rho' <= rho implies F^g(rho') <= F^g(rho))
  checked numerically on sampled pairs: a counterexample disproves it, none found is evidence,
  not proof.
* :func:`upper_bound` — the baseline upper bound of §7.2: the unnormalized LP (3) with Yhat_j the
  number of jobs in an infinite-server system (Poisson(L rho_j) per type), averaged over samples.

Theorem 3.7: F^g >= F*/2; Theorem 3.9: F^g >= (1 - 1/e) F* under the monotone greedy property.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from schedlab._jit import kernel
from schedlab.optim.capacity_lp import common_grid

MAX_GRID_CELLS = 20_000_000
VALUE_TOL = 1e-9
Rounding = Literal["ceil", "floor"]


# ---------------------------------------------------------------------------------------------
# Exact unbounded multidimensional knapsack on an integer grid


@kernel
def _strides(cap: np.ndarray) -> np.ndarray:
    n_res = cap.shape[0]
    stride = np.ones(n_res, dtype=np.int64)
    for r in range(n_res - 2, -1, -1):
        stride[r] = stride[r + 1] * (cap[r + 1] + 1)
    return stride


@kernel
def knapsack_tables(w: np.ndarray, cap: np.ndarray, values: np.ndarray, allowed: np.ndarray):
    """Suffix value tables of the unbounded multidimensional knapsack.

    ``tables[s, idx]`` = max sum_{j >= s, allowed} values_j k_j s.t. sum_j k_j w_j <= the
    capacity vector of flat grid index ``idx`` (row-major over cap + 1 per resource); row J is 0.
    ``w`` (J, R) integer demands (each type nonzero somewhere), ``cap`` (R,) integer capacity."""
    n_types, n_res = w.shape
    stride = _strides(cap)
    size = stride[0] * (cap[0] + 1)
    offset = np.zeros(n_types, dtype=np.int64)
    for j in range(n_types):
        for r in range(n_res):
            offset[j] += w[j, r] * stride[r]
    tables = np.zeros((n_types + 1, size))
    coords = np.zeros(n_res, dtype=np.int64)
    for s in range(n_types - 1, -1, -1):
        if not allowed[s]:
            tables[s, :] = tables[s + 1, :]
            continue
        tab = tables[s]
        for idx in range(size):
            rem = idx
            for r in range(n_res):
                coords[r] = rem // stride[r]
                rem -= coords[r] * stride[r]
            best = tables[s + 1, idx]  # no type-s item at all
            for j in range(s, n_types):
                if not allowed[j]:
                    continue
                fits = True
                for r in range(n_res):
                    if w[j, r] > coords[r]:
                        fits = False
                        break
                if fits:
                    # a type-j item plus the best of types >= s in what is left: exact because
                    # every optimal packing using types >= s removes some item of type >= s.
                    v = values[j] + tab[idx - offset[j]]
                    if v > best:
                        best = v
            tab[idx] = best
    return tables


@kernel
def lexicographic_argmax(
    w: np.ndarray,
    cap: np.ndarray,
    values: np.ndarray,
    allowed: np.ndarray,
    tables: np.ndarray,
    tol: float,
) -> np.ndarray:
    """The optimal configuration with the largest k_1, then the largest k_2, ... (Definition 2.2's
    order among configurations of equal value), from :func:`knapsack_tables`."""
    n_types, n_res = w.shape
    stride = _strides(cap)
    left = cap.copy()
    idx = 0
    for r in range(n_res):
        idx += left[r] * stride[r]
    target = tables[0, idx]
    k = np.zeros(n_types, dtype=np.int64)
    for j in range(n_types):
        if not allowed[j]:
            continue
        most = np.int64(1) << 62
        for r in range(n_res):
            if w[j, r] > 0:
                most = min(most, left[r] // w[j, r])
        for c in range(most, -1, -1):
            sub = idx
            for r in range(n_res):
                sub -= c * w[j, r] * stride[r]
            if c * values[j] + tables[j + 1, sub] >= target - tol:
                k[j] = c
                target -= c * values[j]
                idx = sub
                for r in range(n_res):
                    left[r] -= c * w[j, r]
                break
    return k


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class LpOptimum:
    """F*(rho) of LP (3) with an optimal mix: ``fractions[i]`` of servers in
    ``configurations[i]`` (rows), serving ``served[j]`` = y_j."""

    value: float
    configurations: np.ndarray
    fractions: np.ndarray
    served: np.ndarray
    iterations: int


@dataclass(frozen=True)
class GreedyAssignment:
    """x^g(rho) (Definition 3.2): configuration k_i on ``fractions[i]`` of the servers, i in GPA
    order; ``exhausted[i]`` is j_i, the type whose workload ran out (-1: the servers ran out or
    the iteration stopped); ``reward`` is F^g(rho)."""

    configurations: np.ndarray
    fractions: np.ndarray
    exhausted: np.ndarray
    reward: float


@dataclass(frozen=True)
class GpaAssignment:
    """The output of GPA (Algorithm 1) on (Yhat, L): ``counts[i]`` servers in ``configurations[i]``
    (GPA order, positive counts only); ``empty`` servers are left in the 0 configuration."""

    configurations: np.ndarray
    counts: np.ndarray
    exhausted: np.ndarray
    empty: int

    def slots(self) -> np.ndarray:
        """Slots per type, sum_i counts_i k_i."""
        return self.counts @ self.configurations if self.counts.size else np.zeros(0)


@dataclass(frozen=True)
class MonotoneCheck:
    """Numerical check of the monotone greedy property (Definition 3.8) on sampled pairs."""

    holds: bool  # False: a counterexample was found
    pairs: int
    smaller: np.ndarray | None = None  # rho' <= rho with F^g(rho') > F^g(rho)
    larger: np.ndarray | None = None


@dataclass(frozen=True)
class UpperBound:
    """The §7.2 upper bound per server: E[LP(3) with Yhat ~ Poisson(L rho)] / L, with the
    standard error of the sample mean."""

    value: float
    stderr: float
    samples: int


# ---------------------------------------------------------------------------------------------
# The static problem


def _to_grid(demand: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer demands and capacity, one common grid per resource."""
    n_types, n_res = demand.shape
    w = np.zeros((n_types, n_res), dtype=np.int64)
    cap = np.zeros(n_res, dtype=np.int64)
    for r in range(n_res):
        values = [*demand[:, r][demand[:, r] > 0].tolist(), float(capacity[r])]
        grid = common_grid(values, max_units=MAX_GRID_CELLS)
        if grid is None:
            raise ValueError(
                f"resource {r}: demands and capacity share no integer grid of at most "
                f"{MAX_GRID_CELLS} units (round the demands, e.g. to powers of 1/2)"
            )
        w[:, r] = np.rint(demand[:, r] * grid).astype(np.int64)
        cap[r] = round(float(capacity[r]) * grid)
    cells = int(np.prod(cap + 1))
    if cells > MAX_GRID_CELLS:
        raise ValueError(f"the knapsack grid has {cells} cells (> {MAX_GRID_CELLS})")
    return w, cap


@dataclass
class StaticProblem:
    """VM types (``demand`` (J, R), ``reward`` (J,)) on servers of capacity vector ``capacity``.

    Demands may be in any unit shared with the capacity (absolute vCPU/GB or normalized); they
    are mapped exactly to an integer grid for the knapsack. Each type must fit an empty server
    and need some resource."""

    demand: np.ndarray
    capacity: np.ndarray
    reward: np.ndarray
    _grid: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False)
    _max_reward: dict[int, np.ndarray] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.demand = np.atleast_2d(np.asarray(self.demand, dtype=float))
        self.capacity = np.asarray(self.capacity, dtype=float).ravel()
        self.reward = np.asarray(self.reward, dtype=float).ravel()
        n_types, n_res = self.demand.shape
        if self.capacity.size != n_res or self.reward.size != n_types:
            raise ValueError("demand must be (J, R), capacity (R,) and reward (J,)")
        if np.any(self.demand < 0) or np.any(~np.isfinite(self.demand)):
            raise ValueError("demands must be finite and >= 0")
        if np.any(self.demand.max(axis=1) <= 0):
            raise ValueError("every type must need some resource (else it fits without limit)")
        if np.any(self.demand > self.capacity[None, :] * (1 + 1e-12)):
            raise ValueError("every type must fit an empty server")
        if np.any(self.reward < 0) or np.any(~np.isfinite(self.reward)):
            raise ValueError("rewards must be finite and >= 0")
        self._grid = _to_grid(self.demand, self.capacity)

    @property
    def n_types(self) -> int:
        return int(self.reward.size)

    @property
    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """(w, cap): the integer demands (J, R) and capacity (R,) of the knapsack grid (for
        compiled callers of :func:`knapsack_tables` and :func:`lexicographic_argmax`)."""
        w, cap = self._grid
        return w.copy(), cap.copy()

    def config_reward(self, k: np.ndarray) -> float:
        """u(k) = sum_j u_j k_j (Definition 2.1)."""
        return float(np.asarray(k) @ self.reward)

    def is_feasible(self, k: np.ndarray) -> bool:
        w, cap = self._grid
        return bool(np.all(np.asarray(k) >= 0) and np.all(np.asarray(k) @ w <= cap))

    def max_reward(self, subset: Sequence[int] | np.ndarray | int) -> np.ndarray:
        """MaxReward(J') (Definition 2.3) for the types in ``subset`` (indexes, a boolean mask,
        or a bit mask int); cached per subset. Returns the configuration (J,) (0 if J' empty)."""
        mask = self._bitmask(subset)
        hit = self._max_reward.get(mask)
        if hit is not None:
            return hit.copy()
        allowed = np.array([(mask >> j) & 1 for j in range(self.n_types)], dtype=np.bool_)
        w, cap = self._grid
        tables = knapsack_tables(w, cap, self.reward, allowed)
        tol = VALUE_TOL * max(1.0, float(tables[0, -1]))
        k = lexicographic_argmax(w, cap, self.reward, allowed, tables, tol)
        k.setflags(write=False)
        self._max_reward[mask] = k
        return k.copy()

    def _bitmask(self, subset: Sequence[int] | np.ndarray | int) -> int:
        if isinstance(subset, int | np.integer):
            return int(subset)
        arr = np.asarray(subset)
        idx = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.int64)
        return int(sum(1 << int(j) for j in idx))

    # -- LP (3) --------------------------------------------------------------------------------

    def optimum(self, rho: Sequence[float] | np.ndarray, *, servers: float = 1.0) -> LpOptimum:
        """F*(rho): LP (3) normalized (``servers`` = 1), or unnormalized with ``rho`` = Yhat and
        ``servers`` = L (sum_k X_k = L). Column generation on HiGHS; exact."""
        rho = np.asarray(rho, dtype=float).ravel()
        if rho.size != self.n_types or np.any(rho < 0) or np.any(~np.isfinite(rho)):
            raise ValueError("rho must be J finite values >= 0")
        n = self.n_types
        w, cap = self._grid
        columns = [np.zeros(n, dtype=np.int64)]
        for j in range(n):
            columns.append(self.max_reward([j]))
        seen = {c.tobytes() for c in columns}
        allowed = np.ones(n, dtype=np.bool_)
        it = 0
        while True:
            it += 1
            value, y, x, duals, mu = _solve_reward_lp(columns, rho, self.reward, servers)
            tables = knapsack_tables(w, cap, duals, allowed)
            tol = 1e-9 * max(1.0, float(self.reward.max()))
            if tables[0, -1] + mu <= tol:  # no column of positive reduced cost
                break
            k = lexicographic_argmax(
                w, cap, duals, allowed, tables, VALUE_TOL * (1.0 + tables[0, -1])
            )
            if k.tobytes() in seen:
                break
            seen.add(k.tobytes())
            columns.append(k)
        confs = np.array(columns, dtype=np.int64)
        keep = x > 1e-12
        return LpOptimum(
            value=value,
            configurations=confs[keep],
            fractions=x[keep],
            served=y,
            iterations=it,
        )

    # -- greedy ---------------------------------------------------------------------------------

    def global_greedy(self, rho: Sequence[float] | np.ndarray) -> GreedyAssignment:
        """x^g(rho) and F^g(rho) (Proposition 3.1, Definition 3.2), from the fluid GPA iteration:
        x_i = min over j in J_i with k_i[j] > 0 of rho_rem_j / k_i[j], total mass capped at 1;
        j_i (lowest index on ties) leaves J_i."""
        rho = np.asarray(rho, dtype=float).ravel()
        if rho.size != self.n_types or np.any(rho < 0):
            raise ValueError("rho must be J values >= 0")
        left = rho.copy()
        mass = 1.0
        active = (1 << self.n_types) - 1
        confs, fracs, gone = [], [], []
        served = np.zeros(self.n_types)
        while active and mass > 0:
            k = self.max_reward(active)
            if not k.any():
                break
            used = np.flatnonzero(k)
            ratios = left[used] / k[used]
            pick = int(np.argmin(ratios))  # first minimum: lowest index
            x = float(ratios[pick])
            j_i = int(used[pick])
            if x >= mass:
                x, j_i = mass, -1
            mass -= x
            left = np.maximum(left - x * k, 0.0)
            if j_i >= 0:
                left[j_i] = 0.0  # exhausted exactly (no float residue)
            served += x * k
            if x > 0:
                confs.append(k)
                fracs.append(x)
                gone.append(j_i)
            if j_i < 0:
                break
            active &= ~(1 << j_i)
        reward = float(np.minimum(served, rho) @ self.reward)
        n = self.n_types
        return GreedyAssignment(
            configurations=np.array(confs, dtype=np.int64).reshape(len(confs), n),
            fractions=np.array(fracs),
            exhausted=np.array(gone, dtype=np.int64),
            reward=reward,
        )

    def gpa(
        self, yhat: Sequence[float] | np.ndarray, servers: int, *, rounding: Rounding = "ceil"
    ) -> GpaAssignment:
        """GPA, Algorithm 1 (dra.md): n_i = min(min_j ceil(Yrem_j / k_i[j]), Lrem) servers of
        k_i = MaxReward(J_i); Yrem_j -= n_i k_i[j] (floored at 0); J_{i+1} = J_i - {j_i}.
        ``rounding = "floor"`` uses floor instead of ceil (the rounding is INFERRED)."""
        yhat = np.asarray(yhat, dtype=float).ravel()
        left = yhat.copy()
        l_rem = int(servers)
        active = (1 << self.n_types) - 1
        confs, counts, gone = [], [], []
        round_fn = math.ceil if rounding == "ceil" else math.floor
        while active and l_rem > 0:
            k = self.max_reward(active)
            if not k.any():
                break
            used = np.flatnonzero(k)
            need = [round_fn(left[j] / k[j]) for j in used]
            pick = int(np.argmin(need))
            n_i = min(int(need[pick]), l_rem)
            j_i = int(used[pick])
            if n_i > 0:
                confs.append(k)
                counts.append(n_i)
                gone.append(j_i)
            l_rem -= n_i
            left = np.maximum(left - n_i * k, 0.0)
            active &= ~(1 << j_i)
        n = self.n_types
        return GpaAssignment(
            configurations=np.array(confs, dtype=np.int64).reshape(len(confs), n),
            counts=np.array(counts, dtype=np.int64),
            exhausted=np.array(gone, dtype=np.int64),
            empty=l_rem,
        )

    def greedy_configurations(self) -> np.ndarray:
        """The greedy configuration set (Definition 3.3): MaxReward(J') of every nonempty J',
        sorted by decreasing order of Definition 2.2 (feasible for J <= 16)."""
        if self.n_types > 16:
            raise ValueError("the greedy configuration set needs 2^J knapsacks; J <= 16")
        found = {
            self.max_reward(m).tobytes(): self.max_reward(m) for m in range(1, 1 << self.n_types)
        }
        confs = [k for k in found.values() if k.any()]
        confs.sort(key=lambda k: (-self.config_reward(k), *(-k).tolist()))
        return np.array(confs, dtype=np.int64).reshape(len(confs), self.n_types)


@dataclass(frozen=True)
class ModelWorkload:
    """The static problem of a compiled loss-family model and its normalized workload."""

    problem: StaticProblem
    rho: np.ndarray  # rho_j = lambda_j / mu_j, lambda_j L = the type's arrival rate
    servers: int
    type_names: tuple[str, ...]


def workload_of_model(context: Any) -> ModelWorkload:
    """(StaticProblem, rho) of a loss model (``context``: its
    :class:`~schedlab.policy_api.context.PolicyContext`, duck-typed: optim/ sits below policies/):
    one VM type per job class with a fixed demand, identical servers;
    rho_j = rate * p_j * E[duration_j] / L (§2: arrivals at rate lambda_j L).
    Raises ValueError naming the class when a demand is random or the servers differ."""
    capacity = np.asarray(context.capacity, dtype=float)
    if np.any(capacity != capacity[0]):
        raise ValueError("the static problem of §3 needs identical servers")
    if context.demands_from_trace:
        raise ValueError("give job classes (a trace without declared classes has no VM types)")
    demand, reward, rho, names = [], [], [], []
    servers = int(capacity.shape[0])
    for i, cls in enumerate(context.classes):
        row = []
        for r, dist in enumerate(cls.demand):
            lo, hi = dist.support
            if lo != hi:
                raise ValueError(
                    f"workload.classes[{i}].demand.{context.resources[r]}: a VM type needs a "
                    "fixed demand"
                )
            row.append(lo)
        demand.append(row)
        reward.append(cls.reward)
        rho.append(context.rate * cls.probability * cls.duration.mean / servers)
        names.append(cls.name)
    problem = StaticProblem(np.array(demand), capacity[0], np.array(reward))
    return ModelWorkload(problem, np.array(rho), servers, tuple(names))


def _solve_reward_lp(
    columns: list[np.ndarray], rho: np.ndarray, reward: np.ndarray, servers: float
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, float]:
    """LP (3) over the given configuration columns: (value, y, x, duals of the slot rows, mu)."""
    from scipy import sparse  # on use: importing scipy takes ~0.5 s
    from scipy.optimize import linprog  # on use: importing scipy takes ~0.5 s

    n = rho.size
    m = len(columns)
    confs = np.array(columns, dtype=float)  # (m, J)
    # variables [y_0..y_{J-1}, x_0..x_{m-1}]; rows: y_j - sum_k k_j x_k <= 0
    a_ub = sparse.hstack([sparse.identity(n), sparse.csr_matrix(-confs.T)]).tocsc()
    a_eq = sparse.csr_matrix(np.concatenate([np.zeros(n), np.ones(m)])[None, :])
    cost = np.concatenate([-reward, np.zeros(m)])
    bounds = [(0.0, float(r)) for r in rho] + [(0.0, None)] * m
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(n),
        A_eq=a_eq,
        b_eq=np.array([float(servers)]),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"reward LP (3) failed: {res.message}")
    duals = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
    mu = float(res.eqlin.marginals[0])
    return -float(res.fun), res.x[:n], res.x[n:], duals, mu


# ---------------------------------------------------------------------------------------------
# Definition 3.8 and the §7.2 upper bound


def monotone_greedy_check(
    problem: StaticProblem,
    rho_max: Sequence[float] | np.ndarray,
    *,
    samples: int = 200,
    seed: int = 0,
    tol: float = 1e-9,
) -> MonotoneCheck:
    """Definition 3.8 checked numerically: for ``samples`` random rho uniform in [0, rho_max]
    and rho' = rho * U (U uniform in [0, 1]^J, and each single coordinate lowered), test
    F^g(rho') <= F^g(rho) + tol. Returns the first counterexample found."""
    rng = np.random.default_rng(seed)
    top = np.asarray(rho_max, dtype=float)
    pairs = 0
    for _ in range(samples):
        rho = rng.uniform(0, 1, top.size) * top
        f = problem.global_greedy(rho).reward
        lowered = [rho * rng.uniform(0, 1, top.size)]
        for j in range(top.size):
            one = rho.copy()
            one[j] *= rng.uniform(0, 1)
            lowered.append(one)
        for small in lowered:
            pairs += 1
            if problem.global_greedy(small).reward > f + tol * max(1.0, f):
                return MonotoneCheck(False, pairs, small, rho)
    return MonotoneCheck(True, pairs)


def upper_bound(
    problem: StaticProblem,
    rho: Sequence[float] | np.ndarray,
    servers: int,
    *,
    samples: int = 200,
    seed: int = 0,
) -> UpperBound:
    """§7.2's upper bound per server: LP (3) with Yhat_j ~ Poisson(L rho_j) (the jobs present in
    an infinite-server system that admits everything, §2), averaged over ``samples`` draws."""
    rng = np.random.default_rng(seed)
    lam = servers * np.asarray(rho, dtype=float)
    values = np.array(
        [
            problem.optimum(rng.poisson(lam).astype(float), servers=servers).value / servers
            for _ in range(samples)
        ]
    )
    stderr = float(values.std(ddof=1) / math.sqrt(samples)) if samples > 1 else math.nan
    return UpperBound(float(values.mean()), stderr, samples)
