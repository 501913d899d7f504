"""Three-moment phase-type fit: Osogami & Harchol-Balter's closed-form EC mapping (§5.2, ref [45]).

T. Osogami and M. Harchol-Balter, "Closed form solutions for mapping general distributions to
quasi-minimal PH distributions", Performance Evaluation 63(6), 2006: the "complete solution" maps
any first three moments with normalized moments m2 = mu2/mu1^2 > 1, m3 = mu3/(mu1 mu2) > m2 to an
Erlang-Coxian (EC) distribution: with probability p, an Erlang of N-2 phases of rate lambda_Y
followed by a two-phase Coxian X (rates lambda_X1, lambda_X2, continuation probability p_X); with
probability 1-p, zero. The number of phases N is within one of the minimum needed.

For the M/M/1 busy period (m2 = 2/(1-rho) > 2, m3 = 3(1+rho)/(1-rho) > 2 m2 - 1) the mapping gives
p = 1, N = 2: a two-phase Coxian with lambda_X1 = (1+sqrt(rho))(mu-lambda),
lambda_X2 = (1-sqrt(rho))(mu-lambda), p_X = sqrt(rho)(1-sqrt(rho))/(1+sqrt(rho)) (worked out
from the mapping; checked in tests/analysis/test_elastic_analysis.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.analysis.elastic.model import ElasticModelError

_TOL = 1e-9


@dataclass(frozen=True)
class PhaseType:
    """A continuous phase-type distribution (alpha, T): alpha may sum to p <= 1 (mass 1-p at 0)."""

    alpha: np.ndarray
    T: np.ndarray

    @property
    def exit_rates(self) -> np.ndarray:
        """t = -T 1: the absorption rate of each phase."""
        return -self.T.sum(axis=1)

    @property
    def phases(self) -> int:
        return int(self.alpha.shape[0])

    def moment(self, n: int) -> float:
        """E[X^n] = n! alpha (-T)^{-n} 1."""
        inv = np.linalg.inv(-self.T)
        v = np.ones(self.phases)
        for _ in range(n):
            v = inv @ v
        return float(math.factorial(n) * self.alpha @ v)

    def to_dict(self) -> dict[str, list]:
        return {"alpha": self.alpha.tolist(), "T": self.T.tolist()}


def _is_integer(x: float) -> bool:
    return abs(x - round(x)) <= 1e-9 * max(1.0, abs(x))


def erlang_coxian(
    p: float, n: int, lam_y: float, lam_x1: float, lam_x2: float, p_x: float
) -> PhaseType:
    """The EC distribution of N = n phases: Erlang(n-2, lam_y) then Coxian-2(lam_x1, p_x, lam_x2).
    With p_x = 0 the second Coxian phase is dropped."""
    n_phases = n if p_x > 0 else n - 1
    T = np.zeros((n_phases, n_phases))
    for i in range(n - 2):
        T[i, i] = -lam_y
        T[i, i + 1] = lam_y
    x1 = n - 2
    T[x1, x1] = -lam_x1
    if p_x > 0:
        T[x1, x1 + 1] = p_x * lam_x1
        T[x1 + 1, x1 + 1] = -lam_x2
    alpha = np.zeros(n_phases)
    alpha[0] = p
    return PhaseType(alpha=alpha, T=T)


def fit_three_moments(m1: float, m2: float, m3: float) -> PhaseType:
    """The EC distribution matching E[X] = m1, E[X^2] = m2, E[X^3] = m3 (raw moments).

    Osogami & Harchol-Balter 2006, the complete solution (Fig. 5 of that paper); raises
    ElasticModelError outside its domain m3/(m1 m2) > m2/m1^2 > 1.
    """
    if not (m1 > 0 and m2 > 0 and m3 > 0):
        raise ElasticModelError("moments must be positive")
    mu1 = m1
    n2 = m2 / m1**2
    n3 = m3 / (m1 * m2)
    if not (n2 > 1 + _TOL and n3 > n2 + _TOL):
        raise ElasticModelError(
            f"normalized moments m2 = {n2:.6g}, m3 = {n3:.6g} are outside the EC mapping's "
            "domain m3 > m2 > 1"
        )
    # Step 1: p (the probability of a non-zero value).
    if n3 > 2 * n2 - 1 + _TOL and _is_integer(1 / (n2 - 1)):
        p = (n2 * n2 + 2 * n2 - 1) / (2 * n2 * n2)
    elif n3 < 2 * n2 - 1 - _TOL:
        p = 1 / (2 * n2 - n3)
    else:
        p = 1.0
    # Step 2: the moments of W (X conditioned on being non-zero).
    mu_w = mu1 / p
    m2w = p * n2
    m3w = p * n3
    # Step 3: the number of phases.
    if abs(m3w - (2 * m2w - 1)) <= _TOL and m2w <= 2 + _TOL:
        n = math.ceil(m2w / (m2w - 1) - _TOL) - 1
    else:
        n = math.floor(m2w / (m2w - 1) + 1 + _TOL)
    if n <= 1:  # exponential
        alpha = np.array([p])
        return PhaseType(alpha=alpha, T=np.array([[-1.0 / mu_w]]))
    # Step 4: the moments of the Coxian part X.
    m2x = ((n - 3) * m2w - (n - 2)) / ((n - 2) * m2w - (n - 1))
    mu_x = mu_w / ((n - 2) * m2x - (n - 3))
    a = (n - 2) * (m2x - 1) * (n * (n - 1) * m2x**2 - n * (2 * n - 5) * m2x + (n - 1) * (n - 3))
    b = ((n - 1) * m2x - (n - 2)) * ((n - 2) * m2x - (n - 3)) ** 2
    m3x = (b * m3w - a) / m2x
    # Step 5: the Coxian-2 parameters.
    if abs(3 * m2x - 2 * m3x) <= _TOL * max(1.0, m3x):
        u, v = 1.0, 0.0
    else:
        u = (6 - 2 * m3x) / (3 * m2x - 2 * m3x)
        v = (12 - 6 * m2x) / (m2x * (3 * m2x - 2 * m3x))
    disc = u * u - 4 * v
    if disc < -_TOL:
        raise ElasticModelError("the EC mapping has no real solution for these moments")
    root = math.sqrt(max(disc, 0.0))
    lam_x1 = (u + root) / (2 * mu_x)
    lam_x2 = (u - root) / (2 * mu_x)
    p_x = lam_x2 * (lam_x1 * mu_x - 1) / lam_x1 if lam_x2 > 0 else 0.0
    lam_y = 1 / (mu_x * (m2x - 1)) if n > 2 else 0.0
    if not (lam_x1 > 0 and lam_x2 >= 0 and -_TOL <= p_x <= 1 + _TOL):
        raise ElasticModelError("the EC mapping gave an invalid Coxian for these moments")
    return erlang_coxian(p, n, lam_y, lam_x1, lam_x2, min(max(p_x, 0.0), 1.0))
