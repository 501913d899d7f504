"""The elastic/inelastic model of berg2020 §2: parameters, validation, IF/EF allocations, results.

k servers; inelastic jobs arrive Poisson(lambda_I) with Exp(mu_I) sizes and run on at most C
servers (C = 1 in the paper; §2 allows any fixed C); elastic jobs arrive Poisson(lambda_E) with
Exp(mu_E) sizes and run on any number of servers with linear speedup. A job's size is its running
time on one server. Load (eq. 1): rho = lambda_I/(k mu_I) + lambda_E/(k mu_E); the chains are
ergodic iff rho < 1 (App. C). In schedlab's simulation specs this is the pooled-family ``load``
(docs/decisions/0001), the same number.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Literal

from schedlab.errors import SchedlabError, shown

PolicyName = Literal["inelastic-first", "elastic-first"]
POLICIES: tuple[PolicyName, ...] = ("inelastic-first", "elastic-first")
ALIASES: dict[str, PolicyName] = {
    "if": "inelastic-first",
    "ef": "elastic-first",
    "inelastic-first": "inelastic-first",
    "elastic-first": "elastic-first",
}

Number = float | Fraction


class ElasticModelError(SchedlabError, ValueError):
    """Invalid parameters for the elastic/inelastic model (bad rate, k, cap, or rho >= 1)."""


def policy_name(name: str) -> PolicyName:
    """Canonical policy name from 'IF', 'EF', 'inelastic-first' or 'elastic-first'."""
    key = name.strip().lower()
    if key not in ALIASES:
        raise ElasticModelError(
            f"unknown policy '{name}'; choose inelastic-first (IF) or elastic-first (EF)"
        )
    return ALIASES[key]


def check_servers(k: Any) -> int:
    """k must be a whole number >= 1."""
    if isinstance(k, bool) or not isinstance(k, int | float) or k != int(k) or k < 1:
        raise ElasticModelError(f"k (number of servers) must be a whole number >= 1, got {k}")
    return int(k)


def check_rate(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise ElasticModelError(f"{name} must be a number, got {shown(value)}")
    if not value > 0 or not math.isfinite(float(value)):
        raise ElasticModelError(f"{name} must be a finite number > 0, got {value}")


def check_cap(cap: Any, k: int) -> None:
    check_rate("the inelastic cap C", cap)
    if cap > k:
        raise ElasticModelError(
            f"the inelastic cap C = {cap} exceeds k = {k}; with C >= k inelastic and elastic jobs "
            "are the same (§2)"
        )


def saturation_level(k: int, cap: Number) -> int:
    """m = ceil(k / C): the number of inelastic jobs that occupy all k servers."""
    return math.ceil(k / cap - 1e-12)


def allocation(policy: PolicyName, k: int, cap: Number, i: int, j: int) -> tuple[Number, Number]:
    """(servers to inelastic jobs, servers to elastic jobs) in state (i, j) (§2).

    IF: inelastic jobs FCFS, each up to C servers, total min(i C, k); the rest to the earliest
    elastic job if j > 0. EF: all k servers to the earliest elastic job if j > 0; otherwise
    min(i C, k) to the inelastic jobs. Linear speedup and memoryless sizes make the departure rates
    mu_I * (first) and mu_E * (second).
    """
    inelastic = min(i * cap, k)
    if policy == "inelastic-first":
        return inelastic, (k - inelastic) if j > 0 else 0
    if j > 0:
        return 0, k
    return inelastic, 0


@dataclass(frozen=True)
class ElasticSystem:
    """Parameters of berg2020's model (§2). Raises ElasticModelError when invalid or rho >= 1."""

    k: int
    lambda_i: float
    lambda_e: float
    mu_i: float
    mu_e: float
    inelastic_cap: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_servers(self.k))
        for name in ("lambda_i", "lambda_e", "mu_i", "mu_e"):
            check_rate(name, getattr(self, name))
            object.__setattr__(self, name, float(getattr(self, name)))
        check_cap(self.inelastic_cap, self.k)
        object.__setattr__(self, "inelastic_cap", float(self.inelastic_cap))
        if self.rho >= 1.0:
            raise ElasticModelError(
                f"load rho = lambda_I/(k mu_I) + lambda_E/(k mu_E) = {self.rho:.6g} >= 1: no "
                "policy has a steady state (berg2020 eq. 1, App. C)"
            )

    @classmethod
    def from_load(
        cls,
        k: int,
        rho: float,
        mu_i: float,
        mu_e: float,
        *,
        inelastic_share: float = 0.5,
        inelastic_cap: float = 1.0,
    ) -> ElasticSystem:
        """The system at load rho with lambda_I = share * lambda, lambda_E = (1 - share) * lambda
        (Figs 4-6 use lambda_I = lambda_E, share 1/2)."""
        k = check_servers(k)
        check_rate("rho", rho)
        check_rate("mu_i", mu_i)
        check_rate("mu_e", mu_e)
        if not 0 < inelastic_share < 1:
            raise ElasticModelError(f"inelastic_share must be in (0, 1), got {inelastic_share}")
        if rho >= 1:
            raise ElasticModelError(f"load rho = {rho:g} >= 1: no policy has a steady state")
        lam = rho * k / (inelastic_share / mu_i + (1 - inelastic_share) / mu_e)
        return cls(
            k=k,
            lambda_i=inelastic_share * lam,
            lambda_e=(1 - inelastic_share) * lam,
            mu_i=mu_i,
            mu_e=mu_e,
            inelastic_cap=inelastic_cap,
        )

    @property
    def rho(self) -> float:
        """Eq. (1)."""
        return (self.lambda_i / self.mu_i + self.lambda_e / self.mu_e) / self.k

    @property
    def arrival_rate(self) -> float:
        return self.lambda_i + self.lambda_e

    @property
    def saturation(self) -> int:
        """m = ceil(k / C) inelastic jobs occupy every server (m = k when C = 1)."""
        return saturation_level(self.k, self.inelastic_cap)

    def allocation(self, policy: PolicyName, i: int, j: int) -> tuple[float, float]:
        a_i, a_e = allocation(policy, self.k, self.inelastic_cap, i, j)
        return float(a_i), float(a_e)


@dataclass(frozen=True)
class ElasticResult:
    """Mean response times of one policy: overall and per class, with how they were obtained."""

    policy: PolicyName
    method: str
    system: ElasticSystem
    mean_number_inelastic: float
    mean_number_elastic: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_response_time_inelastic(self) -> float:
        """E[T_I] = E[N_I] / lambda_I (Little's law)."""
        return self.mean_number_inelastic / self.system.lambda_i

    @property
    def mean_response_time_elastic(self) -> float:
        return self.mean_number_elastic / self.system.lambda_e

    @property
    def mean_response_time(self) -> float:
        """E[T] over all jobs = (E[N_I] + E[N_E]) / (lambda_I + lambda_E)."""
        return (self.mean_number_inelastic + self.mean_number_elastic) / self.system.arrival_rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "method": self.method,
            "system": {**asdict(self.system), "rho": self.system.rho},
            "mean_response_time": self.mean_response_time,
            "mean_response_time_inelastic": self.mean_response_time_inelastic,
            "mean_response_time_elastic": self.mean_response_time_elastic,
            "mean_number_inelastic": self.mean_number_inelastic,
            "mean_number_elastic": self.mean_number_elastic,
            "details": self.details,
        }


def priority_class_mean_number(lam: float, mu: float, k: int, cap: float) -> float:
    """E[N] of the birth-death chain seen by the class with preemptive priority.

    Death rate in state n: mu * min(n C, k) (FCFS, up to C servers each). With C = 1 this is the
    M/M/k queue (IF's inelastic jobs, App. D); the elastic jobs under EF are the case C = k (an
    M/M/1 with service rate k mu, §5.2 Observation 1). The tail beyond m = ceil(k/C) is geometric
    with ratio r = lam / (k mu), summed in closed form.
    """
    m = saturation_level(k, cap)
    r = lam / (k * mu)
    if r >= 1:
        raise ElasticModelError(f"the priority class alone has load {r:.6g} >= 1")
    weights = [1.0]
    for n in range(1, m + 1):
        weights.append(weights[-1] * lam / (mu * min(n * cap, k)))
    head = sum(weights[:m])
    head_n = sum(n * w for n, w in enumerate(weights[:m]))
    p_m = weights[m]
    # sum_{n>=m} p_m r^(n-m) = p_m/(1-r); sum_{n>=m} n p_m r^(n-m) = p_m (m/(1-r) + r/(1-r)^2)
    total = head + p_m / (1 - r)
    mean = head_n + p_m * (m / (1 - r) + r / (1 - r) ** 2)
    return mean / total
