"""r-max-weight configurations of a multi-resource server (psychas2018 §2, §3 Definition 2, §6.1).

Paper: Psychas & Ghaderi, "On Non-Preemptive VM Scheduling in the Cloud", POMACS 2018
(psychas2018).

A server type has a capacity vector over R resources; VM type j needs the vector w_j. A
configuration k in N_0^J is feasible when sum_j k_j w_j <= capacity (the additive case of §2's
monotone configuration sets), maximal when no further VM of any type fits. The weight of k given
queue sizes Q is f(k, Q) = <k, Q> (Definition 1, eq. (3)); an r-max-weight configuration has
weight >= r times the maximum over the non-zero feasible configurations (Definition 2, eq. (4)).

Three interchangeable subroutines (§6.1):

* :func:`maximal_configurations` + :func:`max_weight_index` — (i) enumerate the maximal
  configurations once per server type (cached), then the max weight is a matrix-vector product
  (r = 1);
* :func:`dp_configuration` — (ii) the dynamic program G[u] = max_j {G[u - w_j] + Q_j}, G = 0
  initially, over integer resource units u <= U (r = 1; O(J prod_r U_r));
* :func:`greedy_configuration` — Lemma 6.1: the best configuration that uses one VM type only,
  r = N_f / (R (N_f + 1)) (:func:`greedy_ratio`), optionally followed by the "improved" fill of
  §6.1: scan the other types in decreasing relative value Q_j / max_n w_jn and fill the residual
  capacity with them (same worst-case r).

Every subroutine returns a maximal configuration (so never the zero configuration, §3 (3)): the DP
and the single-type greedy complete their answer by filling what is left with the types of zero
weight, which leaves the weight unchanged. The compiled kernels (``*_kernel``) are the ones the
policies of :mod:`schedlab.policies.packing.vm_stalling` call; the Python wrappers check inputs.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from schedlab._jit import kernel

TOL = 1e-9  # relative tolerance of capacity comparisons


def _as_problem(demands, capacity) -> tuple[np.ndarray, np.ndarray]:
    w = np.atleast_2d(np.asarray(demands, dtype=float))
    cap = np.atleast_1d(np.asarray(capacity, dtype=float))
    if w.ndim != 2 or w.shape[1] != cap.size:
        raise ValueError("demands must be (J, R) and capacity (R,)")
    if np.any(w < 0) or np.any(cap <= 0) or not np.all(np.isfinite(w)):
        raise ValueError("demands must be finite and >= 0, capacities > 0")
    if np.any(w.max(axis=1) <= 0):
        raise ValueError("every VM type needs a positive amount of some resource")
    if np.any(np.any(w > cap * (1 + TOL), axis=1)):
        raise ValueError("a VM type does not fit in the server")
    return w, cap


@kernel
def fit_count(w, room):
    """How many VMs of demand vector w fit in the residual capacity ``room`` (the least ratio
    over the resources, taken before the conversion to an integer: a huge ratio on one resource
    must not overflow it)."""
    n = float(1 << 40)
    for r in range(w.shape[0]):
        if w[r] > 0:
            m = np.floor(room[r] * (1 + 1e-9) / w[r] + 1e-12)
            if m < n:
                n = m
    return int(n)


MAX_PER_SERVER = 100_000
MAX_CANDIDATES = 1_000_000


def check_enumerable(demands, capacity) -> None:
    """A ValueError when the maximal configurations of one server type cannot be enumerated:
    more than ``MAX_PER_SERVER`` VMs of one type on a server, or more than ``MAX_CANDIDATES``
    candidates in the depth-first search (the product of (count + 1) over all types but the
    last)."""
    w, cap = _as_problem(demands, capacity)
    counts = np.array([fit_count(w[j], cap) for j in range(w.shape[0])], dtype=float)
    if counts.max() > MAX_PER_SERVER:
        raise ValueError(
            f"up to {counts.max():.3g} VMs of one type fit on a server (more than "
            f"{MAX_PER_SERVER:,}): too many to enumerate its configurations; scale the demands"
        )
    candidates = float(np.prod(counts[:-1] + 1.0))
    if candidates > MAX_CANDIDATES:
        raise ValueError(
            f"about {candidates:.3g} candidate configurations per server (more than "
            f"{MAX_CANDIDATES:,}): too many to enumerate; use fewer or larger VM types"
        )


@kernel
def _enumerate(w, cap):
    """Depth-first over types in order, the largest count first; the last type always takes as
    many as fit (fewer would leave room for it), so a leaf is a candidate and is kept when no type
    fits in what is left."""
    J = w.shape[0]
    k = np.zeros(J, dtype=np.int64)
    room = cap.copy()
    out = []
    level = 0
    while True:
        for i in range(level, J):  # fill levels level..J-1 greedily
            k[i] = fit_count(w[i], room)
            room -= k[i] * w[i]
        maximal = True
        for i in range(J):
            if fit_count(w[i], room) > 0:
                maximal = False
                break
        if maximal:
            out.append(k.copy())
        i = J - 2
        while i >= 0 and k[i] == 0:
            i -= 1
        if i < 0:
            break
        for m in range(i + 1, J):
            room += k[m] * w[m]
            k[m] = 0
        k[i] -= 1
        room += w[i]
        level = i + 1
    res = np.zeros((len(out), J), dtype=np.int64)
    for i in range(len(out)):
        res[i] = out[i]
    return res


@lru_cache(maxsize=256)
def _maximal_cached(w_key: tuple, cap_key: tuple, J: int, R: int) -> np.ndarray:
    w = np.array(w_key, dtype=float).reshape(J, R)
    cap = np.array(cap_key, dtype=float)
    out = _enumerate(w, cap)
    out.setflags(write=False)
    return out


def maximal_configurations(demands, capacity) -> np.ndarray:
    """The maximal configurations of one server type (§6.1(i)), one per row, in lexicographically
    decreasing order of (k_1, k_2, ...). Computed once per (demands, capacity) and cached; the
    returned array is read-only."""
    check_enumerable(demands, capacity)
    w, cap = _as_problem(demands, capacity)
    return _maximal_cached(tuple(w.ravel()), tuple(cap), w.shape[0], w.shape[1])


@kernel
def max_weight_index(configs, q):
    """Row of ``configs`` with the largest <k, q> (eq. (3)); ties go to the first row."""
    best = 0
    best_w = -1.0
    for i in range(configs.shape[0]):
        s = 0.0
        for j in range(configs.shape[1]):
            s += configs[i, j] * q[j]
        if s > best_w:
            best_w = s
            best = i
    return best


def max_weight_configuration(configs: np.ndarray, q) -> tuple[np.ndarray, float]:
    """A max-weight configuration over ``configs`` by one matrix-vector product (§6.1(i))."""
    weights = np.asarray(configs, dtype=float) @ np.asarray(q, dtype=float)
    i = int(np.argmax(weights))
    return np.asarray(configs[i]).copy(), float(weights[i])


@kernel
def fill_maximal_kernel(w, cap, k, order):
    """Add VMs to k, type by type in ``order``, as many of each as fit (k becomes maximal)."""
    room = cap.copy()
    for j in range(w.shape[0]):
        room -= k[j] * w[j]
    for i in range(order.shape[0]):
        j = order[i]
        n = fit_count(w[j], room)
        if n > 0:
            k[j] += n
            room -= n * w[j]


@kernel
def dp_kernel(units, cap_units, q, k):
    """§6.1(ii): G[u] = max(0, max_j G[u - w_j] + Q_j) over integer u <= U (all resources), the
    max weight of a configuration using at most u; writes a max-weight configuration into k
    (zeroed first) and returns its weight. ``units`` (J, R) and ``cap_units`` (R,) are integers."""
    J, R = units.shape
    stride = np.ones(R, dtype=np.int64)
    for r in range(R - 2, -1, -1):
        stride[r] = stride[r + 1] * (cap_units[r + 1] + 1)
    size = stride[0] * (cap_units[0] + 1)
    G = np.zeros(size)
    choice = np.full(size, -1, dtype=np.int64)
    off = np.zeros(J, dtype=np.int64)
    for j in range(J):
        for r in range(R):
            off[j] += units[j, r] * stride[r]
    u = np.zeros(R, dtype=np.int64)
    for idx in range(size):
        best = 0.0
        ch = -1
        for j in range(J):
            ok = True
            for r in range(R):
                if units[j, r] > u[r]:
                    ok = False
                    break
            if ok:
                v = G[idx - off[j]] + q[j]
                if v > best:
                    best = v
                    ch = j
        G[idx] = best
        choice[idx] = ch
        # next u (last resource fastest)
        r = R - 1
        while r >= 0:
            u[r] += 1
            if u[r] <= cap_units[r]:
                break
            u[r] = 0
            r -= 1
    k[:] = 0
    idx = size - 1
    while choice[idx] >= 0:
        j = choice[idx]
        k[j] += 1
        idx -= off[j]
    return G[size - 1]


def resource_units(
    demands, capacities, max_cells: int = 50_000_000
) -> tuple[np.ndarray, np.ndarray]:
    """Integer resource units for the DP: per resource, the coarsest grid on which every demand
    and every capacity (one row per server type) is an integer (e.g. 0.5 EC2 for Table 1's CPU).
    Returns (units (J, R), capacity units (T, R)). Raises ValueError when no such grid exists or
    a DP table would exceed ``max_cells`` cells."""
    from schedlab.optim.capacity_lp import common_grid

    w = np.atleast_2d(np.asarray(demands, dtype=float))
    caps = np.atleast_2d(np.asarray(capacities, dtype=float))
    units = np.zeros(w.shape, dtype=np.int64)
    cap_units = np.zeros(caps.shape, dtype=np.int64)
    for r in range(w.shape[1]):
        g = common_grid([*w[:, r].tolist(), *caps[:, r].tolist()])
        if g is None:
            raise ValueError(f"resource {r}: demands and capacities are not on a common grid")
        units[:, r] = np.round(w[:, r] * g).astype(np.int64)
        cap_units[:, r] = np.round(caps[:, r] * g).astype(np.int64)
    cells = float(np.prod(cap_units + 1.0, axis=1).max())
    if cells > max_cells:
        raise ValueError(f"the DP table has {cells:.3g} cells (> {max_cells}); use enumeration")
    return units, cap_units


def dp_configuration(demands, capacity, q) -> tuple[np.ndarray, float]:
    """A maximal max-weight configuration by the DP of §6.1(ii) (r = 1)."""
    w, cap = _as_problem(demands, capacity)
    units, cap_units = resource_units(w, cap)
    k = np.zeros(w.shape[0], dtype=np.int64)
    weight = dp_kernel(units, cap_units[0], np.asarray(q, dtype=float), k)
    fill_maximal_kernel(w, cap, k, np.arange(w.shape[0]))
    return k, float(weight)


@kernel
def greedy_kernel(w, cap, q, improved, k):
    """Lemma 6.1: the best single-type configuration argmax_j Q_j n_j (n_j = how many type-j VMs
    fit; ties: first type); then, with ``improved``, the other types in decreasing relative value
    Q_j / max_n (w_jn / cap_n) fill the residual capacity (§6.1); else the residual capacity is
    filled in type order with the weight-0 types only (to make the answer maximal). Writes k,
    returns its weight."""
    J = w.shape[0]
    k[:] = 0
    best = 0
    best_w = -1.0
    for j in range(J):
        v = q[j] * fit_count(w[j], cap)
        if v > best_w:
            best_w = v
            best = j
    k[best] = fit_count(w[best], cap)
    rel = np.empty(J)
    for j in range(J):
        m = 0.0
        for r in range(w.shape[1]):
            x = w[j, r] / cap[r]
            if x > m:
                m = x
        rel[j] = q[j] / m
    if improved:
        order = np.argsort(-rel, kind="mergesort")
    else:
        n0 = 0
        for j in range(J):
            if q[j] == 0:
                n0 += 1
        order = np.empty(n0, dtype=np.int64)
        n0 = 0
        for j in range(J):
            if q[j] == 0:
                order[n0] = j
                n0 += 1
    fill_maximal_kernel(w, cap, k, order)
    total = 0.0
    for j in range(J):
        total += k[j] * q[j]
    return total


def greedy_configuration(
    demands, capacity, q, *, improved: bool = True
) -> tuple[np.ndarray, float]:
    """The greedy r-max-weight configuration of Lemma 6.1 (with the §6.1 improved fill)."""
    w, cap = _as_problem(demands, capacity)
    k = np.zeros(w.shape[0], dtype=np.int64)
    weight = greedy_kernel(w, cap, np.asarray(q, dtype=float), improved, k)
    return k, float(weight)


def greedy_ratio(demands, capacity) -> float:
    """r = N_f / (R (N_f + 1)) of Lemma 6.1, N_f = min_j (how many type-j VMs fit); R counts the
    resources some VM type uses."""
    w, cap = _as_problem(demands, capacity)
    n_f = min(int(fit_count(w[j], cap)) for j in range(w.shape[0]))
    used = int(np.sum(w.max(axis=0) > 0))
    return n_f / (used * (n_f + 1))
