"""The capacity region C of a VM cluster (psychas2018 eq. (2)) and the traffic intensity zeta (§7).

Paper: Psychas & Ghaderi, POMACS 2018 (psychas2018).

C = { x in R_+^J : x = sum_l x^l, x^l in Conv(K^l) } (eq. (2)): a workload rho (rho_j =
lambda_j / mu_j) is supportable iff it lies in the interior of C. Since each K^l is closed
downwards, Conv(K^l) is the set of points below a convex combination of the maximal
configurations of server l (§6.1(i)). For a direction d >= 0 (the workload at unit scale,
d_j = lambda_j E[S_j] with the arrival-rate proportions and mean service times), the largest
scaling keeping s d in C is the LP

    max s  s.t.  s d_j <= sum_c L_c sum_k p_{c,k} k_j (all j),  sum_k p_{c,k} = 1,  p >= 0,

over server types c (L_c identical servers, maximal configurations k), solved with HiGHS
(scipy.optimize.linprog). A workload of traffic intensity zeta (§7: "on the boundary of the
zeta-fraction of the capacity region") is zeta * s* d.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.optim.knapsack import maximal_configurations


@dataclass(frozen=True)
class ServerType:
    """``count`` identical servers with a capacity vector (one entry per resource)."""

    count: int
    capacity: tuple[float, ...]


@dataclass(frozen=True)
class CapacityScaling:
    """s* of the LP above and an optimal mix p_{c,k} of the maximal configurations per type."""

    max_scaling: float
    direction: np.ndarray
    configurations: list[np.ndarray]
    mix: list[np.ndarray]

    def workload(self, zeta: float) -> np.ndarray:
        """The workload on the boundary of zeta * C in this direction (§7)."""
        return zeta * self.max_scaling * self.direction


def max_scaling(
    demands: np.ndarray | Sequence[Sequence[float]],
    servers: Sequence[ServerType],
    direction: np.ndarray | Sequence[float],
) -> CapacityScaling:
    """The largest s with s * direction in C (eq. (2)); ``demands`` is (J, R)."""
    from scipy.optimize import linprog  # on use: importing scipy takes ~0.5 s

    w = np.atleast_2d(np.asarray(demands, dtype=float))
    d = np.asarray(direction, dtype=float).ravel()
    if d.size != w.shape[0] or np.any(d < 0) or not np.any(d > 0):
        raise ValueError("the direction needs one entry >= 0 per VM type, not all 0")
    if not servers:
        raise ValueError("no servers")
    J = w.shape[0]
    configs: list[np.ndarray] = []
    for srv in servers:
        cap = np.asarray(srv.capacity, dtype=float)
        fits = np.all(w <= cap * (1 + 1e-9), axis=1)
        k = np.zeros((0, J), dtype=np.int64)
        if np.any(fits):
            sub = maximal_configurations(w[fits], cap)
            k = np.zeros((sub.shape[0], J), dtype=np.int64)
            k[:, fits] = sub
        configs.append(k)
    if not np.all(np.any([np.any(k > 0, axis=0) for k in configs], axis=0) | (d == 0)):
        raise ValueError("a VM type with positive workload fits in no server")
    n_vars = 1 + sum(k.shape[0] for k in configs)
    c = np.zeros(n_vars)
    c[0] = -1.0
    a_ub = np.zeros((J, n_vars))
    a_ub[:, 0] = d
    a_eq = np.zeros((len(configs), n_vars))
    col = 1
    for i, (srv, k) in enumerate(zip(servers, configs, strict=True)):
        n = k.shape[0]
        a_ub[:, col : col + n] = -srv.count * k.T
        a_eq[i, col : col + n] = 1.0
        col += n
    res = linprog(
        c,
        A_ub=a_ub,
        b_ub=np.zeros(J),
        A_eq=a_eq,
        b_eq=np.ones(len(configs)),
        bounds=[(0, None)] * n_vars,
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"capacity LP failed: {res.message}")
    mix = []
    col = 1
    for k in configs:
        mix.append(res.x[col : col + k.shape[0]])
        col += k.shape[0]
    return CapacityScaling(float(res.x[0]), d, configs, mix)
