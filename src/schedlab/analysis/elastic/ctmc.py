"""Exact analysis: the 2D-infinite CTMC of §5.1 (Fig. 3a for EF, Fig. 7a for IF), truncated.

State (i, j) = (inelastic jobs, elastic jobs). Transitions: (i, j) -> (i+1, j) at lambda_I,
(i, j) -> (i, j+1) at lambda_E, (i, j) -> (i-1, j) at mu_I a_I(i, j) and (i, j) -> (i, j-1) at
mu_E a_E(i, j), with the policy's allocations a_I, a_E (:func:`model.allocation`, §2). The chain is
truncated to i <= N_I, j <= N_E by blocking arrivals at the edge and solved exactly with a sparse
LU factorization (``scipy.sparse.linalg.spsolve``). The truncation grows geometrically until the
mean response time changes by less than ``tol`` (relative); the last change is reported as the
truncation error estimate, together with the probability mass on the truncation edges.

Starting size (inferred): the class with preemptive priority is a birth-death chain
(:func:`model.priority_class_mean_number`), so its edge is placed where its tail mass is below
``tol * 1e-3``; the other dimension starts at a level with geometric tail ``rho^n`` below ``tol``
and both dimensions are grown by a factor 1.5 per step.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from schedlab.analysis.elastic.model import (
    ElasticModelError,
    ElasticResult,
    ElasticSystem,
    PolicyName,
    policy_name,
)

MAX_STATES = 4_000_000
PERMC = "MMD_AT_PLUS_A"
GROWTH = 1.5


def _allocation_arrays(
    system: ElasticSystem, policy: PolicyName, n_i: int, n_e: int
) -> tuple[np.ndarray, np.ndarray]:
    """a_I(i, j), a_E(i, j) on the grid 0..n_i x 0..n_e (vectorized §2 rules)."""
    i = np.arange(n_i + 1, dtype=float)[:, None]
    j = np.arange(n_e + 1, dtype=float)[None, :]
    k = float(system.k)
    inelastic = np.minimum(i * system.inelastic_cap, k) + 0.0 * j
    has_elastic = (j > 0) + 0.0 * i
    if policy == "inelastic-first":
        return inelastic, (k - inelastic) * has_elastic
    return inelastic * (1 - has_elastic), k * has_elastic


def solve_truncated(
    system: ElasticSystem, policy: PolicyName, n_i: int, n_e: int
) -> tuple[float, float, float]:
    """(E[N_I], E[N_E], probability on the truncation edges) of the chain on 0..n_i x 0..n_e."""
    if (n_i + 1) * (n_e + 1) > MAX_STATES:
        raise ElasticModelError(
            f"truncation {n_i} x {n_e} exceeds {MAX_STATES} states: the load is too close to 1 "
            "for the exact CTMC; use the matrix-analytic method"
        )
    a_i, a_e = _allocation_arrays(system, policy, n_i, n_e)
    shape = (n_i + 1, n_e + 1)
    # Number the states with the priority class's count varying fastest: the generator is then
    # banded with half-bandwidth ~ (that class's truncation), small, which keeps the LU sparse.
    if policy == "inelastic-first":
        index = np.arange(shape[0] * shape[1]).reshape(shape[::-1]).T
    else:
        index = np.arange(shape[0] * shape[1]).reshape(shape)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []

    def add(src: np.ndarray, dst: np.ndarray, rate: np.ndarray) -> None:
        keep = rate > 0
        rows.append(src[keep])
        cols.append(dst[keep])
        vals.append(rate[keep])

    lam_i = np.full((n_i, n_e + 1), system.lambda_i)
    lam_e = np.full((n_i + 1, n_e), system.lambda_e)
    add(index[:-1, :].ravel(), index[1:, :].ravel(), lam_i.ravel())
    add(index[:, :-1].ravel(), index[:, 1:].ravel(), lam_e.ravel())
    add(index[1:, :].ravel(), index[:-1, :].ravel(), (system.mu_i * a_i[1:, :]).ravel())
    add(index[:, 1:].ravel(), index[:, :-1].ravel(), (system.mu_e * a_e[:, 1:]).ravel())
    src = np.concatenate(rows)
    dst = np.concatenate(cols)
    rate = np.concatenate(vals)
    n = shape[0] * shape[1]
    out = np.bincount(src, weights=rate, minlength=n)
    # pi Q = 0  <=>  Q^T pi^T = 0 (rank n - 1). Replace the equation of the empty state by
    # pi(0, 0) = 1 (a sparse row, unlike sum(pi) = 1) and normalize afterwards.
    r = np.concatenate([dst, np.arange(n)])
    c = np.concatenate([src, np.arange(n)])
    v = np.concatenate([rate, -out])
    keep = r != 0
    qt = sparse.csc_matrix(
        (np.append(v[keep], 1.0), (np.append(r[keep], 0), np.append(c[keep], 0))), shape=(n, n)
    )
    rhs = np.zeros(n)
    rhs[0] = 1.0
    pi = spsolve(qt, rhs, permc_spec=PERMC)[index]
    pi = np.clip(pi, 0.0, None)
    pi /= pi.sum()
    mean_i = float((pi.sum(axis=1) * np.arange(shape[0])).sum())
    mean_e = float((pi.sum(axis=0) * np.arange(shape[1])).sum())
    edge = float(pi[-1, :].sum() + pi[:, -1].sum() - pi[-1, -1])
    return mean_i, mean_e, edge


def _start_levels(system: ElasticSystem, policy: PolicyName, tol: float) -> tuple[int, int]:
    eps = max(tol * 1e-3, 1e-14)
    k = system.k
    if policy == "elastic-first":
        r_hi = system.lambda_e / (k * system.mu_e)
    else:
        r_hi = system.lambda_i / (k * system.mu_i)
    hi = math.ceil(math.log(eps) / math.log(r_hi)) + k + 2
    lo = math.ceil(math.log(tol) / math.log(system.rho)) + k + 2
    hi, lo = max(hi, 8), max(lo, 16)
    return (lo, hi) if policy == "elastic-first" else (hi, lo)


def exact_response_time(
    system: ElasticSystem, policy: str, *, tol: float = 1e-6, max_steps: int = 30
) -> ElasticResult:
    """E[T] (overall and per class) from the truncated 2D CTMC, grown until its relative change
    is below ``tol``."""
    name = policy_name(policy)
    if not 0 < tol < 1:
        raise ElasticModelError(f"tol must be in (0, 1), got {tol}")
    t0 = time.perf_counter()
    n_i, n_e = _start_levels(system, name, tol)
    previous = None
    change = math.inf
    history: list[tuple[int, int, float]] = []
    for _ in range(max_steps):
        mean_i, mean_e, edge = solve_truncated(system, name, n_i, n_e)
        value = (mean_i + mean_e) / system.arrival_rate
        history.append((n_i, n_e, value))
        if previous is not None:
            change = abs(value - previous) / value
            if change < tol:
                break
        previous = value
        if name == "inelastic-first":
            n_e = math.ceil(n_e * GROWTH)
        else:
            n_i = math.ceil(n_i * GROWTH)
    else:
        raise ElasticModelError(
            f"the truncated CTMC did not converge to tol = {tol:g} in {max_steps} steps "
            f"(last relative change {change:.3g})"
        )
    return ElasticResult(
        policy=name,
        method="exact-ctmc",
        system=system,
        mean_number_inelastic=mean_i,
        mean_number_elastic=mean_e,
        details={
            "truncation": [n_i, n_e],
            "states": (n_i + 1) * (n_e + 1),
            "relative_change": change,
            "edge_probability": edge,
            "steps": len(history),
            "wall_s": time.perf_counter() - t0,
        },
    )
