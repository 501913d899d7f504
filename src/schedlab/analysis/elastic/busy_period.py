"""Moments of the M/M/1 busy period (the "special states" of the busy-period transformation, §5.2).

Under EF the time during which inelastic jobs get no service starts when an elastic job arrives to
a system without elastic jobs and ends when none is left: a busy period of an M/M/1 queue with
arrival rate lambda_E and service rate k mu_E (§5.2, Observation 2). Under IF the elastic jobs get
no service while at least m = ceil(k/C) inelastic jobs are present: a busy period of an M/M/1 with
arrival rate lambda_I and service rate k mu_I (App. D).

For the M/G/1 busy period B with service S and rho = lambda E[S] < 1 (standard, from the
Laplace-Stieltjes transform B(s) = S(s + lambda - lambda B(s))):

    E[B] = E[S]/(1-rho),  E[B^2] = E[S^2]/(1-rho)^3,
    E[B^3] = E[S^3]/(1-rho)^4 + 3 lambda E[S^2]^2/(1-rho)^5,

and for exponential S (E[S^n] = n!/mu^n) these are 1/(mu-lambda), 2/(mu^2 (1-rho)^3) and
6 (1+rho)/(mu^3 (1-rho)^5).
"""

from __future__ import annotations

import math

from schedlab.analysis.elastic.model import ElasticModelError


def mm1_busy_period_moments(arrival_rate: float, service_rate: float) -> tuple[float, float, float]:
    """(E[B], E[B^2], E[B^3]) of the M/M/1 busy period."""
    if not (arrival_rate > 0 and service_rate > 0):
        raise ElasticModelError("busy period rates must be > 0")
    rho = arrival_rate / service_rate
    if rho >= 1:
        raise ElasticModelError(f"busy period of an M/M/1 at load {rho:.6g} >= 1 is not finite")
    mu = service_rate
    m1 = 1.0 / (mu - arrival_rate)
    m2 = 2.0 / (mu**2 * (1 - rho) ** 3)
    m3 = 6.0 * (1 + rho) / (mu**3 * (1 - rho) ** 5)
    return m1, m2, m3


def mm1_busy_period_density(t: float, arrival_rate: float, service_rate: float) -> float:
    """Density of the M/M/1 busy period (for checking the moments):
    f(t) = sqrt(mu/lambda) exp(-(lambda+mu) t) I_1(2 t sqrt(lambda mu)) / t."""
    from scipy.special import ive

    if t <= 0:
        return 0.0
    lam, mu = arrival_rate, service_rate
    z = 2.0 * t * math.sqrt(lam * mu)
    # ive(1, z) = I_1(z) exp(-z): stable for large z
    return math.sqrt(mu / lam) * math.exp(-(lam + mu) * t + z) * float(ive(1, z)) / t
