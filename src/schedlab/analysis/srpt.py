"""Mean response time of the resource-pooled M/G/1 under SRPT, FCFS, PS and FB.

SRPT-1 is grosof2023's lower bound (§4.1): one server of speed 1 processing the sizes S = K D / k
with Poisson(lambda) arrivals under Shortest Remaining Processing Time. Its conditional mean
response time is Schrage & Miller's (Oper. Res. 14(4), 1966; in this form Harchol-Balter,
*Performance Modeling and Design of Computer Systems*, 2013, Ch. 33), written here as the SOAP
analysis gives it for SRPT (Scully, Harchol-Balter & Scheller-Wolf, POMACS 2(1) 2018, §5.3), which
stays exact when S has atoms (ties broken first-come first-served):

    E[T(x)] = lambda E[min(S, x)^2] / (2 (1 - rho_<=(x)) (1 - rho_<(x)))
              + int_0^x dt / (1 - rho_<(t)),

    rho_<=(x) = lambda E[S 1{S <= x}],   rho_<(x) = lambda E[S 1{S < x}].

The first term is the waiting time: the busy period started by the x-relevant work found on
arrival (older jobs of size <= x, and the last x of older larger jobs) during which only new jobs
of size < x (strictly: a tie goes to the older job) preempt. The second is the residence time:
while the tagged job has remaining size t, only arrivals of size < t preempt it. For a continuous
S both loads are Schrage and Miller's rho(x) = lambda int_0^x t dF(t); with atoms the usual
(1 - rho(x))^2 form would be wrong (for deterministic sizes d it gives lambda d^2 / (2 (1 - rho)^2)
instead of the M/D/1's lambda d^2 / (2 (1 - rho))).

Averaging over x, the residence term is rewritten by Fubini as int_0^inf P(S > t) / (1 - rho(t)) dt,
so E[T] needs only one-dimensional quadratures (``scipy.integrate.quad``, split at the atoms,
the support ends and the points where P(S > t) = 10^-j) plus a finite sum over the atoms.

The comparison policies (same M/G/1, textbook results):

* FCFS, Pollaczek–Khinchine: E[T] = E[S] + lambda E[S^2] / (2 (1 - rho)).
* PS: E[T] = E[S] / (1 - rho).
* FB (least attained service; Kleinrock 1976, Vol. II §4.7; Harchol-Balter 2013, Ch. 30):
  E[T(x)] = x / (1 - rho_x) + lambda E[min(S, x)^2] / (2 (1 - rho_x)^2),
  rho_x = lambda E[min(S, x)].
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from schedlab.analysis.sizes import SizeLaw, as_size_law, integrate_pieces
from schedlab.errors import shown


def check_arrival_rate(law: SizeLaw, arrival_rate: float) -> float:
    """rho = lambda E[S] after validating lambda; ValueError unless 0 < rho < 1."""
    if not (isinstance(arrival_rate, int | float) and math.isfinite(arrival_rate)):
        raise ValueError(f"the arrival rate must be a finite number, got {shown(arrival_rate)}")
    if arrival_rate <= 0:
        raise ValueError(f"the arrival rate must be > 0, got {arrival_rate}")
    mean = law.mean
    if not math.isfinite(mean) or mean <= 0:
        raise ValueError(f"the mean size must be finite and > 0, got E[S] = {mean}")
    rho = arrival_rate * mean
    if rho >= 1:
        raise ValueError(
            f"load rho = lambda E[S] = {arrival_rate:.6g} * {mean:.6g} = {rho:.6g} >= 1: the "
            "M/G/1 has no steady state"
        )
    return rho


def _rho_le(law: SizeLaw, lam: float, x: float) -> float:
    return lam * float(law.partial_moment(1, x))


def _rho_lt(law: SizeLaw, lam: float, x: float) -> float:
    return lam * float(law.partial_moment(1, x, strict=True))


def _waiting(law: SizeLaw, lam: float, x: float) -> float:
    if x <= 0:
        return 0.0
    num = lam * float(law.second_min(x))
    return num / (2.0 * (1.0 - _rho_le(law, lam, x)) * (1.0 - _rho_lt(law, lam, x)))


def _waiting_many(law: SizeLaw, lam: float, x: np.ndarray) -> np.ndarray:
    """_waiting at many sizes x (> 0) at once."""
    num = lam * np.asarray(law.second_min(x))
    le = lam * np.asarray(law.partial_moment(1, x))
    lt = lam * np.asarray(law.partial_moment(1, x, strict=True))
    return np.where(x > 0, num / (2.0 * (1.0 - le) * (1.0 - lt)), 0.0)


def _atomic_residence(law: SizeLaw, part: SizeLaw, lam: float, upto: float) -> float:
    """int_0^upto P(S' > t) / (1 - rho_<(t)) dt when S and S' are atomic: both factors are
    constant between consecutive atoms, so the integral is a finite sum (exact)."""
    pts = np.union1d(law.atoms()[0], part.atoms()[0])
    pts = np.concatenate([[0.0], pts[(pts > 0) & (pts < upto)], [upto]])
    if not math.isfinite(upto):
        pts = pts[:-1]
    left = pts[:-1]
    # on (left, right]: P(S' > t) = P(S' > left); rho_<(t) = lambda E[S 1{S <= left}]
    factor = np.asarray(part.sf(left)) / (1.0 - lam * np.asarray(law.partial_moment(1, left)))
    return float(np.dot(np.diff(pts), factor))


def srpt1_response_time_given_size(size_law: Any, arrival_rate: float, size: float) -> float:
    """E[T(x)] of M/G/1-SRPT for a job of size x (Schrage & Miller 1966; module docstring)."""
    law = as_size_law(size_law)
    check_arrival_rate(law, arrival_rate)
    x = float(size)
    if not (x >= 0 and math.isfinite(x)):
        raise ValueError(f"the size must be finite and >= 0, got {size}")
    lam = arrival_rate
    if law.atomic:
        residence = _atomic_residence(law, SizeLaw.from_sizes([x]), lam, x)
    else:
        residence = integrate_pieces(
            lambda t: 1.0 / (1.0 - _rho_lt(law, lam, t)), law.pieces(upto=x)
        )
    return _waiting(law, lam, x) + residence


def _residence_mean(law: SizeLaw, part: SizeLaw, lam: float) -> float:
    """E over S' ~ part of int_0^S' dt / (1 - rho(t)) = int_0^inf P(S' > t) / (1 - rho(t)) dt."""

    def integrand(t: float) -> float:
        return float(part.sf(t)) / (1.0 - _rho_lt(law, lam, t))

    pieces = sorted(set(law.pieces()) | set(part.pieces()))
    return integrate_pieces(integrand, _merge_pieces(pieces, part.support[1]))


def _merge_pieces(pieces: list[tuple[float, float]], upto: float) -> list[tuple[float, float]]:
    pts = sorted({p for ab in pieces for p in ab if p <= upto} | {0.0})
    if math.isinf(upto):
        pts = [p for p in pts if math.isfinite(p)] + [math.inf]
    elif pts[-1] < upto:
        pts.append(upto)
    return [(a, b) for a, b in itertools.pairwise(pts) if b > a]


def srpt1_mean_response_time(size_law: Any, arrival_rate: float) -> float:
    """E[T] of the M/G/1 under SRPT (grosof2023's SRPT-1, §4.1) for any size law.

    ``size_law``: a :class:`~schedlab.analysis.sizes.SizeLaw` (e.g. ``SizeLaw.from_model(model)``)
    or a distribution (then the sizes of a plain M/G/1). ValueError unless 0 < rho < 1."""
    law = as_size_law(size_law)
    check_arrival_rate(law, arrival_rate)
    return _srpt_mean(law, law, arrival_rate)


def _srpt_mean(law: SizeLaw, part: SizeLaw, lam: float) -> float:
    waiting = part.expect(
        lambda x: _waiting(law, lam, x), vectorized=lambda v: _waiting_many(law, lam, v)
    )
    if law.atomic:  # S' (a part of S) is then atomic too
        return waiting + _atomic_residence(law, part, lam, part.support[1])
    return waiting + _residence_mean(law, part, lam)


def srpt1_mean_response_time_by_need(size_law: Any, arrival_rate: float) -> dict[float, float]:
    """E[T | K = i] under SRPT-1 for each server need i: the need-i sizes S_i averaged against
    the conditional E[T(x)] of the whole system."""
    law = as_size_law(size_law)
    check_arrival_rate(law, arrival_rate)
    return {need: _srpt_mean(law, part, arrival_rate) for need, part in law.by_need().items()}


def fcfs1_mean_response_time(size_law: Any, arrival_rate: float) -> float:
    """E[T] of the M/G/1 under FCFS (Pollaczek–Khinchine)."""
    law = as_size_law(size_law)
    rho = check_arrival_rate(law, arrival_rate)
    return law.mean + arrival_rate * law.second_moment / (2.0 * (1.0 - rho))


def ps1_mean_response_time(size_law: Any, arrival_rate: float) -> float:
    """E[T] of the M/G/1 under processor sharing: E[S] / (1 - rho) (insensitive)."""
    law = as_size_law(size_law)
    rho = check_arrival_rate(law, arrival_rate)
    return law.mean / (1.0 - rho)


def _fb(law: SizeLaw, lam: float, x: Any) -> Any:
    rho_x = lam * np.asarray(law.mean_min(x))
    return x / (1.0 - rho_x) + lam * np.asarray(law.second_min(x)) / (2.0 * (1.0 - rho_x) ** 2)


def fb1_mean_response_time(size_law: Any, arrival_rate: float) -> float:
    """E[T] of the M/G/1 under FB (least attained service), size-blind and need-blind."""
    law = as_size_law(size_law)
    check_arrival_rate(law, arrival_rate)
    return law.expect(
        lambda x: float(_fb(law, arrival_rate, x)), vectorized=lambda v: _fb(law, arrival_rate, v)
    )
