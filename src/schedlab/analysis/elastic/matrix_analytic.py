"""The paper's method: busy-period transformation + Coxian + matrix-analytic solution (§5.2-5.3).

**EF** (§5.2, Fig. 3). Observation 1: elastic jobs have preemptive priority and each takes all k
servers, so they see an M/M/1 with arrival rate lambda_E and service rate k mu_E:
E[T_E] = 1/(k mu_E - lambda_E). Observation 2: the part of the chain with j >= 1 elastic jobs is
an M/M/1 busy period during which inelastic jobs get no service. Observation 3: replacing that
busy period by a Coxian matched on three moments (:mod:`coxian`) leaves a 1D-infinite chain
(Fig. 3c): level i = number of inelastic jobs, phase 0 = no elastic job, phases 1..p = the
Coxian's phases. Inelastic arrivals (lambda_I) raise the level in every phase; in phase 0 the
inelastic jobs complete at rate mu_I min(i C, k) and an elastic arrival (lambda_E) starts a busy
period; a busy period's end returns to phase 0. Levels i >= m = ceil(k/C) repeat.

**IF** (App. D, Fig. 7). The inelastic jobs see an M/M/k (C = 1; in general the birth-death chain
with death rate mu_I min(i C, k)). Elastic jobs get the k - i C servers left while i < m, and no
service while i >= m: the time from the arrival that brings i to m until i first returns to m-1
is an M/M/1 busy period with arrival rate lambda_I and service rate k mu_I. The 1D chain: level
j = number of elastic jobs, phases i = 0..m-1 plus the Coxian's phases; elastic jobs complete at
rate mu_E (k - i C) in phase i and not at all in a busy-period phase. Levels j >= 1 repeat.

Both chains are solved with :func:`qbd.solve_qbd`; E[N] of the non-priority class is the mean
level, and E[T] follows from Little's law. The only approximation is the three-moment Coxian in
place of the exact busy-period distribution.
"""

from __future__ import annotations

import time

import numpy as np

from schedlab.analysis.elastic.busy_period import mm1_busy_period_moments
from schedlab.analysis.elastic.coxian import PhaseType, fit_three_moments
from schedlab.analysis.elastic.model import (
    ElasticResult,
    ElasticSystem,
    policy_name,
    priority_class_mean_number,
)
from schedlab.analysis.elastic.qbd import QBDSolution, solve_qbd


def busy_period_coxian(arrival_rate: float, service_rate: float) -> PhaseType:
    """The three-moment Coxian of the M/M/1 busy period (§5.2 Observation 3)."""
    return fit_three_moments(*mm1_busy_period_moments(arrival_rate, service_rate))


def _phase_block(ph: PhaseType, head: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the Coxian phases after ``head`` ordinary phases, and their exit rates."""
    return np.arange(head, head + ph.phases), ph.exit_rates


def mm1_busy_period_phase_type(arrival_rate: float, service_rate: float, levels: int) -> PhaseType:
    """The M/M/1 busy period as the absorption time of the queue length started at 1, truncated
    at ``levels`` jobs (arrivals blocked there): exact as levels -> infinity. Used to check that
    the 1D chains are right independently of the Coxian approximation."""
    T = np.zeros((levels, levels))
    for n in range(levels):
        if n + 1 < levels:
            T[n, n + 1] = arrival_rate
        if n > 0:
            T[n, n - 1] = service_rate
        T[n, n] = -(service_rate + (arrival_rate if n + 1 < levels else 0.0))
    alpha = np.zeros(levels)
    alpha[0] = 1.0
    return PhaseType(alpha=alpha, T=T)


def ef_chain(
    system: ElasticSystem, busy_period: PhaseType | None = None
) -> tuple[QBDSolution, PhaseType]:
    """Solve the EF 1D chain (Fig. 3c). Level = inelastic jobs; phase 0 = no elastic job.
    ``busy_period`` replaces the three-moment Coxian of the elastic busy period."""
    k, cap = system.k, system.inelastic_cap
    ph = busy_period or busy_period_coxian(system.lambda_e, k * system.mu_e)
    p = ph.phases
    m = 1 + p
    cox, exits = _phase_block(ph, 1)
    local = np.zeros((m, m))
    local[0, cox] = system.lambda_e * ph.alpha
    local[np.ix_(cox, cox)] = ph.T - np.diag(np.diag(ph.T))
    local[cox, 0] = exits
    up = system.lambda_i * np.eye(m)

    def down(i: int) -> np.ndarray:
        d = np.zeros((m, m))
        d[0, 0] = system.mu_i * min(i * cap, k)
        return d

    b = system.saturation
    boundary = [(up, local, down(i)) for i in range(b)]
    return solve_qbd(boundary, up, local, down(b)), ph


def if_chain(
    system: ElasticSystem, busy_period: PhaseType | None = None
) -> tuple[QBDSolution, PhaseType]:
    """Solve the IF 1D chain (Fig. 7c). Level = elastic jobs; phases 0..m-1 = inelastic jobs
    below saturation, then the Coxian phases of the inelastic busy period (or ``busy_period``)."""
    k, cap = system.k, system.inelastic_cap
    b_i = system.saturation
    ph = busy_period or busy_period_coxian(system.lambda_i, k * system.mu_i)
    p = ph.phases
    m = b_i + p
    cox, exits = _phase_block(ph, b_i)
    local = np.zeros((m, m))
    for i in range(b_i):
        if i + 1 < b_i:
            local[i, i + 1] = system.lambda_i
        if i > 0:
            local[i, i - 1] = system.mu_i * i * cap
    local[b_i - 1, cox] += system.lambda_i * ph.alpha
    local[np.ix_(cox, cox)] = ph.T - np.diag(np.diag(ph.T))
    local[cox, b_i - 1] = exits
    up = system.lambda_e * np.eye(m)
    down = np.zeros((m, m))
    for i in range(b_i):
        down[i, i] = system.mu_e * (k - i * cap)
    zero = np.zeros((m, m))
    return solve_qbd([(up, local, zero)], up, local, down), ph


def matrix_analytic_response_time(
    system: ElasticSystem, policy: str, *, busy_period: PhaseType | None = None
) -> ElasticResult:
    """E[T] (overall and per class) by the paper's busy-period/Coxian/matrix-analytic method.

    ``busy_period`` overrides the three-moment Coxian (e.g. with
    :func:`mm1_busy_period_phase_type` to remove the approximation)."""
    name = policy_name(policy)
    t0 = time.perf_counter()
    if name == "elastic-first":
        sol, ph = ef_chain(system, busy_period)
        n_i = sol.mean_level()
        n_e = priority_class_mean_number(system.lambda_e, system.mu_e, system.k, float(system.k))
    else:
        sol, ph = if_chain(system, busy_period)
        n_e = sol.mean_level()
        n_i = priority_class_mean_number(
            system.lambda_i, system.mu_i, system.k, system.inelastic_cap
        )
    return ElasticResult(
        policy=name,
        method="matrix-analytic",
        system=system,
        mean_number_inelastic=n_i,
        mean_number_elastic=n_e,
        details={
            "busy_period_coxian": ph.to_dict(),
            "phases_per_level": int(sol.R.shape[0]),
            "boundary_levels": sol.b,
            "logarithmic_reduction_iterations": sol.iterations,
            "R_residual": sol.residual,
            "total_probability": sol.total_probability(),
            "wall_s": time.perf_counter() - t0,
        },
    )
