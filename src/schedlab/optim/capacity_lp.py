"""The maximum supportable workload of a finite-type system: the capacity LP (psychas2019 eq. (4)).

For J job types of sizes r_j, arrival probabilities P_j and servers with configuration sets K_l
(Definition 1), psychas2019 §III-A gives

    rho* = sup { rho : rho P < sum_l x^l,  x^l in Conv(K_l) }                             (4)

where rho = lambda/mu is the workload. With pools of identical servers (L_c servers of capacity
c_c) this is the LP

    max rho  s.t.  rho P_j <= sum_c L_c sum_k p_{c,k} k_j  (all j),   sum_k p_{c,k} = 1,  p >= 0,

solved with scipy.optimize.linprog(method="highs"). Because the configuration sets grow
exponentially with the number of small types, the LP is solved by column generation: the pricing
problem for pool c is the unbounded knapsack max sum_j y_j k_j s.t. sum_j r_j k_j <= c_c (y the LP
duals), solved exactly by dynamic programming when the sizes and capacities are integer multiples
of a common grid (detected automatically, e.g. sizes 0.4 and 0.6 are multiples of 1/5), or, for
few types, by enumerating the maximal configurations. The column generation stops when no column
has a positive reduced cost, which certifies optimality: the value is the LP optimum, not a bound.

For a general (continuous, or many-valued empirical) size distribution use
:mod:`schedlab.optim.rounded_bounds`, which brackets rho* between two such LPs (Theorem 1).

Units: rho* is a workload lambda/mu (mean arrivals per unit of mean service time). With mean
service time E[S], the largest supportable arrival rate is rho*/E[S]; the traffic intensity of
§VII-A3 (the engine's ``load``) at rho* is rho* E[R] / total capacity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from schedlab._jit import kernel
from schedlab.optim.configurations import TooManyConfigurations, feasible_configurations

MAX_GRID = 1 << 20  # largest capacity in grid units for the DP pricing
MAX_DENOMINATOR = 1 << 20
REDUCED_COST_TOL = 1e-9


@dataclass(frozen=True)
class CapacityResult:
    """rho* of eq. (4) with an optimal mix of configurations.

    ``configurations[c]`` (rows) and ``weights[c]`` are the configurations of pool c used with
    positive probability p_{c,k} in the optimal solution; ``sizes``/``probabilities`` are the job
    types after dropping types of probability 0."""

    rho_star: float
    sizes: np.ndarray
    probabilities: np.ndarray
    pools: tuple[tuple[int, float], ...]
    configurations: list[np.ndarray]
    weights: list[np.ndarray]
    method: str  # "grid-dp", "enumeration" or "given"
    grid: int | None = None  # grid units per unit of size (grid-dp)
    iterations: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def total_capacity(self) -> float:
        return float(sum(n * c for n, c in self.pools))

    @property
    def mean_size(self) -> float:
        return float(self.probabilities @ self.sizes)

    @property
    def traffic_intensity(self) -> float:
        """alpha = rho* E[R] / total capacity: the engine's ``load`` at the maximum workload."""
        return self.rho_star * self.mean_size / self.total_capacity

    def arrival_rate(self, mean_service: float) -> float:
        """The largest supportable arrival rate lambda* = rho* / E[S] (e.g. per slot)."""
        return self.rho_star / mean_service


def _pools(
    servers: int, capacity: float, pools: Sequence[tuple[int, float]] | None
) -> tuple[tuple[int, float], ...]:
    if pools is None:
        if servers < 1:
            raise ValueError("servers must be >= 1")
        return ((int(servers), float(capacity)),)
    out = tuple((int(n), float(c)) for n, c in pools)
    if not out or any(n < 1 or c <= 0 for n, c in out):
        raise ValueError("pools must be (count >= 1, capacity > 0) pairs")
    return out


def _types(
    sizes: Sequence[float] | np.ndarray, probabilities: Sequence[float] | np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(sizes, dtype=float).ravel()
    p = (
        np.full(r.size, 1.0 / r.size)
        if probabilities is None
        else np.asarray(probabilities, dtype=float).ravel()
    )
    if r.size == 0 or r.size != p.size:
        raise ValueError("give one probability per job size")
    if np.any(p < 0) or not np.all(np.isfinite(p)) or p.sum() <= 0:
        raise ValueError("probabilities must be finite, >= 0 and not all 0")
    if np.any(r < 0) or not np.all(np.isfinite(r)):
        raise ValueError("job sizes must be finite and >= 0")
    keep = p > 0
    return r[keep], p[keep] / p.sum()


def common_grid(values: Sequence[float], max_units: int = MAX_GRID) -> int | None:
    """The smallest G such that every value times G is (within 1e-12) an integer, if G * max(values)
    <= max_units; else None. E.g. (0.4, 0.6, 1.0) -> 5, (2, 5, 10) -> 1."""
    g = 1
    for v in values:
        f = Fraction(float(v)).limit_denominator(MAX_DENOMINATOR)
        if abs(float(f) - v) > 1e-12 * max(1.0, abs(v)):
            return None
        g = math.lcm(g, f.denominator)
        if g * max(values) > max_units:
            return None
    return g


@kernel
def knapsack_table(weights: np.ndarray, values: np.ndarray, capacity: int):
    """Unbounded-knapsack DP: best[c] = max sum_j values_j k_j s.t. sum_j weights_j k_j <= c, for
    every c <= capacity (weights >= 1), and the item chosen last at each c (-1: none). Exact,
    O(len(weights) * capacity)."""
    n = weights.shape[0]
    best = np.zeros(capacity + 1)
    choice = np.full(capacity + 1, -1, dtype=np.int64)
    for c in range(1, capacity + 1):
        b = best[c - 1]
        ch = -1
        for j in range(n):
            w = weights[j]
            if w <= c:
                v = best[c - w] + values[j]
                if v > b:
                    b = v
                    ch = j
        best[c] = b
        choice[c] = ch
    return best, choice


@kernel
def knapsack_solution(weights: np.ndarray, choice: np.ndarray, capacity: int) -> np.ndarray:
    """The configuration behind best[capacity] of :func:`knapsack_table`."""
    k = np.zeros(weights.shape[0], dtype=np.int64)
    c = capacity
    while c > 0:
        j = choice[c]
        if j == -1:
            c -= 1
        else:
            k[j] += 1
            c -= weights[j]
    return k


def unbounded_knapsack(
    weights: np.ndarray, values: np.ndarray, capacity: int
) -> tuple[float, np.ndarray]:
    """max sum_j values_j k_j s.t. sum_j weights_j k_j <= capacity, k integer >= 0: (value, k)."""
    w = np.asarray(weights, dtype=np.int64)
    best, choice = knapsack_table(w, np.asarray(values, dtype=float), int(capacity))
    return float(best[capacity]), knapsack_solution(w, choice, int(capacity))


class _Master:
    """The restricted master LP of the column generation, built up column by column."""

    def __init__(self, probs: np.ndarray, counts: Sequence[int]) -> None:
        self.probs = probs
        self.counts = list(counts)
        n = probs.size
        self.rows: list[int] = list(range(n))
        self.cols: list[int] = [0] * n
        self.vals: list[float] = probs.tolist()
        self.eq_rows: list[int] = []
        self.eq_cols: list[int] = []
        self.columns: list[list[np.ndarray]] = [[] for _ in self.counts]
        self.seen: list[set[bytes]] = [set() for _ in self.counts]

    def add(self, pool: int, k: np.ndarray) -> bool:
        key = k.tobytes()
        if key in self.seen[pool]:
            return False
        self.seen[pool].add(key)
        col = 1 + len(self.eq_cols)
        nz = np.flatnonzero(k)
        self.rows.extend(nz.tolist())
        self.cols.extend([col] * nz.size)
        self.vals.extend((-self.counts[pool] * k[nz]).astype(float).tolist())
        self.eq_rows.append(pool)
        self.eq_cols.append(col)
        self.columns[pool].append(k)
        return True

    def solve(self) -> tuple[float, list[np.ndarray], np.ndarray, np.ndarray]:
        """Solve; returns (rho, p per pool, y >= 0 duals of the type rows, v pool duals)."""
        from scipy import sparse  # on use: importing scipy takes ~0.5 s
        from scipy.optimize import linprog  # on use: importing scipy takes ~0.5 s

        n_types = self.probs.size
        n_cols = len(self.eq_cols) + 1
        a_ub = sparse.csc_matrix((self.vals, (self.rows, self.cols)), shape=(n_types, n_cols))
        a_eq = sparse.csc_matrix(
            (np.ones(len(self.eq_cols)), (self.eq_rows, self.eq_cols)),
            shape=(len(self.counts), n_cols),
        )
        cost = np.zeros(n_cols)
        cost[0] = -1.0
        res = linprog(
            cost,
            A_ub=a_ub,
            b_ub=np.zeros(n_types),
            A_eq=a_eq,
            b_eq=np.ones(len(self.counts)),
            bounds=(0, None),
            method="highs",
            options={"presolve": False},  # small, well-scaled LPs re-solved many times
        )
        if res.status != 0:
            raise RuntimeError(f"capacity LP failed: {res.message}")
        x = res.x
        p_pools = []
        pos = np.array(self.eq_cols)
        owner = np.array(self.eq_rows)
        for c in range(len(self.counts)):
            p_pools.append(x[pos[owner == c]])
        y = -np.asarray(res.ineqlin.marginals)  # >= 0: value of one more unit of type-j service
        v = np.asarray(res.eqlin.marginals)
        return float(x[0]), p_pools, y, v


def _solve_master(
    columns: list[list[np.ndarray]], probs: np.ndarray, counts: Sequence[int]
) -> tuple[float, list[np.ndarray], np.ndarray, np.ndarray]:
    """The LP over fixed columns (per pool). Returns (rho, p per pool, y, v)."""
    master = _Master(probs, counts)
    for c, pool in enumerate(columns):
        for k in pool:
            master.add(c, np.asarray(k, dtype=np.int64))
    return master.solve()


def _result_configs(
    columns: list[list[np.ndarray]], p_pools: list[np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    confs, weights = [], []
    for pool, p in zip(columns, p_pools, strict=True):
        used = [i for i, w in enumerate(p) if w > 1e-12]
        confs.append(
            np.array([pool[i] for i in used], dtype=np.int64).reshape(len(used), -1)
            if used
            else np.zeros((0, len(pool[0]) if pool else 0), dtype=np.int64)
        )
        weights.append(np.array([p[i] for i in used]))
    return confs, weights


def solve_on_grid(
    weights: np.ndarray,
    probabilities: np.ndarray,
    pools: Sequence[tuple[int, int]],
    *,
    columns_per_round: int = 32,
    max_iterations: int = 100_000,
) -> tuple[float, list[np.ndarray], list[np.ndarray], int]:
    """eq. (4) for integer sizes ``weights`` (>= 1) and pools of (count, integer capacity), by
    column generation with exact DP pricing. Returns (rho*, configurations, weights, iterations).

    Each round adds, per pool, up to ``columns_per_round`` improving columns: for each type j the
    best configuration containing j (y_j + best[cap - w_j] from the DP table); the round with none
    certifies optimality. Types larger than every capacity make rho* = 0."""
    w = np.asarray(weights, dtype=np.int64)
    probs = np.asarray(probabilities, dtype=float)
    caps = [int(c) for _, c in pools]
    counts = [int(n) for n, _ in pools]
    n = w.size
    if np.any(w < 1):
        raise ValueError("grid sizes must be >= 1 (drop size-0 types: they fit without limit)")
    if np.any(w > max(caps)):
        zero = [np.zeros((0, n), dtype=np.int64) for _ in pools]
        return 0.0, zero, [np.zeros(0) for _ in pools], 0
    master = _Master(probs, counts)
    for c, cap in enumerate(caps):  # each type alone, as many times as it fits
        added = False
        for j in range(n):
            if w[j] <= cap:
                k = np.zeros(n, dtype=np.int64)
                k[j] = cap // w[j]
                added |= master.add(c, k)
        if not added:
            master.add(c, np.zeros(n, dtype=np.int64))
    it = 0
    while True:
        it += 1
        rho, p_pools, y, v = master.solve()
        added = False
        tol = REDUCED_COST_TOL * max(1.0, abs(rho))
        for c, cap in enumerate(caps):
            useful = np.flatnonzero((y > 0) & (w <= cap))
            if useful.size == 0:
                continue
            wu = w[useful]
            best, choice = knapsack_table(wu, y[useful], cap)
            if counts[c] * best[cap] + v[c] <= tol:
                continue
            # best configuration containing each type: y_j + best[cap - w_j]
            with_j = y[useful] + best[cap - wu]
            order = np.argsort(-with_j, kind="stable")[:columns_per_round]
            for i in order:
                if counts[c] * with_j[i] + v[c] <= tol:
                    break
                k_sub = knapsack_solution(wu, choice, cap - int(wu[i]))
                k_sub[i] += 1
                k = np.zeros(n, dtype=np.int64)
                k[useful] = k_sub
                added |= master.add(c, k)
        if not added or it >= max_iterations:
            break
    confs, wts = _result_configs(master.columns, p_pools)
    return rho, confs, wts, it


def lp_over_configurations(
    configurations: np.ndarray, probabilities: Sequence[float] | np.ndarray, servers: int = 1
) -> float:
    """rho* of eq. (4) when each of ``servers`` identical servers may only use the given
    configurations (rows; their convex hull and everything below it). E.g. the region VQS reaches
    with K_RED (Theorem 3) for a distribution concentrated on the upper-rounded sizes."""
    confs = [np.asarray(k, dtype=np.int64) for k in np.atleast_2d(configurations)]
    probs = np.asarray(probabilities, dtype=float)
    probs = probs / probs.sum()
    rho, _, _, _ = _solve_master([confs], probs, [servers])
    return rho


def max_workload(
    sizes: Sequence[float] | np.ndarray,
    probabilities: Sequence[float] | np.ndarray | None = None,
    *,
    servers: int = 1,
    capacity: float = 1.0,
    pools: Sequence[tuple[int, float]] | None = None,
    enumeration_limit: int = 200_000,
) -> CapacityResult:
    """rho* of eq. (4) for job types of the given sizes and probabilities (uniform if omitted).

    Servers: ``servers`` identical servers of ``capacity``, or ``pools`` of (count, capacity).
    Exact: on a common grid of sizes and capacities by column generation with DP pricing, else by
    enumerating the maximal configurations (at most ``enumeration_limit`` per pool).

    >>> round(max_workload([0.4, 0.6]).rho_star, 12)   # psychas2019 §VII-A1: one server
    2.0
    """
    r, p = _types(sizes, probabilities)
    pl = _pools(servers, capacity, pools)
    free = r == 0
    notes = []
    if free.any():
        notes.append(f"{int(free.sum())} size-0 type(s) use no capacity and were dropped")
    rr, pp = r[~free], p[~free]
    if rr.size == 0:
        return CapacityResult(math.inf, r, p, pl, [], [], "given", notes=notes)
    values = [*rr.tolist(), *(c for _, c in pl)]
    grid = common_grid(values)
    if grid is not None:
        w = np.rint(rr * grid).astype(np.int64)
        rho, confs, wts, it = solve_on_grid(w, pp, [(n, round(c * grid)) for n, c in pl])
        return CapacityResult(rho, rr, pp, pl, confs, wts, "grid-dp", grid, it, notes)
    columns = []
    try:
        for _, c in pl:
            fitting = rr <= c * (1 + 1e-12)
            if not fitting.all():
                return CapacityResult(0.0, rr, pp, pl, [], [], "enumeration", notes=notes)
            columns.append(
                list(feasible_configurations(rr, c, maximal=True, limit=enumeration_limit))
            )
    except TooManyConfigurations:
        raise ValueError(
            "the sizes share no common grid and have too many configurations to enumerate; "
            "use schedlab.optim.rounded_bounds.rounded_bounds, which brackets rho* between "
            "upper- and lower-rounded LPs (psychas2019 Theorem 1)"
        ) from None
    rho, p_pools, _, _ = _solve_master(columns, pp, [n for n, _ in pl])
    confs, wts = _result_configs(columns, p_pools)
    return CapacityResult(rho, rr, pp, pl, confs, wts, "enumeration", None, 1, notes)
