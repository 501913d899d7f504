"""Theorem 6 (§4.3): response times with no arrivals, from the absorbing chain of (i, j).

With n_I inelastic and n_E elastic jobs present at time 0 and no arrivals, the state (i, j)
evolves as an absorbing CTMC with departure rates mu_I a_I(i, j) and mu_E a_E(i, j) (the policy's
allocations, §2) and absorbing state (0, 0). The expected total response time V(i, j) (sum over
the jobs present of their remaining time in system) solves (-Q_TT) V = N, where N(i, j) = i + j is
the rate at which response time accrues. Transitions only lower i + j, so -Q_TT is triangular when
states are ordered by i + j and back substitution solves it exactly; with integer or Fraction
rates the arithmetic is rational and the result exact.

berg2020's E[T] in Theorem 6 is the expected **sum** of the jobs' response times: for k = 2,
mu_E = 2 mu_I, two inelastic and one elastic job, 35/12/mu_I (IF) and 33/12/mu_I (EF) are sums
over the three jobs (its first term 3/(2 mu_I) is three jobs waiting for the first departure at
rate 2 mu_I). The per-job means are a third of that: 35/36/mu_I and 11/12/mu_I.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from schedlab.analysis.elastic.model import (
    ElasticModelError,
    Number,
    PolicyName,
    allocation,
    check_cap,
    check_rate,
    check_servers,
    policy_name,
)


@dataclass(frozen=True)
class NoArrivalResult:
    """Expected response times of the jobs present at time 0 (no arrivals)."""

    policy: PolicyName
    k: int
    n_inelastic: int
    n_elastic: int
    total: Number  # E[sum of the response times of all jobs]
    total_inelastic: Number
    total_elastic: Number

    @property
    def mean(self) -> Number:
        """E[T] averaged over the jobs: total / (n_I + n_E)."""
        return self.total / (self.n_inelastic + self.n_elastic)

    def to_dict(self) -> dict[str, Any]:
        def num(x: Number) -> Any:
            return {"value": float(x), "exact": str(x)} if isinstance(x, Fraction) else float(x)

        return {
            "policy": self.policy,
            "k": self.k,
            "n_inelastic": self.n_inelastic,
            "n_elastic": self.n_elastic,
            "total_response_time": num(self.total),
            "total_response_time_inelastic": num(self.total_inelastic),
            "total_response_time_elastic": num(self.total_elastic),
            "mean_response_time": num(self.mean),
        }


def _exact(x: Any) -> bool:
    return isinstance(x, int | Fraction) and not isinstance(x, bool)


def no_arrival_response_time(
    policy: str,
    k: int,
    mu_i: Number,
    mu_e: Number,
    n_inelastic: int,
    n_elastic: int,
    *,
    inelastic_cap: Number = 1,
) -> NoArrivalResult:
    """Expected total (and per class) response time of n_I inelastic and n_E elastic jobs present
    at time 0 with no arrivals, under IF or EF (Theorem 6's setting).

    Exact (Fractions) when the rates and the cap are ints or Fractions, floats otherwise.
    """
    name = policy_name(policy)
    k = check_servers(k)
    check_rate("mu_i", mu_i)
    check_rate("mu_e", mu_e)
    check_cap(inelastic_cap, k)
    for label, n in (("n_inelastic", n_inelastic), ("n_elastic", n_elastic)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ElasticModelError(f"{label} must be a whole number >= 0, got {n}")
    if n_inelastic + n_elastic == 0:
        raise ElasticModelError("at least one job must be present at time 0")
    exact = all(_exact(x) for x in (mu_i, mu_e, inelastic_cap))
    conv = Fraction if exact else float
    mu_i_, mu_e_, cap_ = conv(mu_i), conv(mu_e), conv(inelastic_cap)
    zero = conv(0)
    # V[(i, j)] = (total, inelastic part, elastic part) of the remaining response time.
    V: dict[tuple[int, int], tuple[Number, Number, Number]] = {(0, 0): (zero, zero, zero)}
    for level in range(1, n_inelastic + n_elastic + 1):
        for i in range(max(0, level - n_elastic), min(level, n_inelastic) + 1):
            j = level - i
            a_i, a_e = allocation(name, k, cap_, i, j)
            rate_i = mu_i_ * a_i
            rate_e = mu_e_ * a_e
            q = rate_i + rate_e
            if q <= 0:
                raise ElasticModelError(f"no job is served in state ({i}, {j})")
            parts = [conv(i + j), conv(i), conv(j)]
            for r, nxt in ((rate_i, (i - 1, j)), (rate_e, (i, j - 1))):
                if r > 0:
                    parts = [p + r * v for p, v in zip(parts, V[nxt], strict=True)]
            V[(i, j)] = (parts[0] / q, parts[1] / q, parts[2] / q)
    total, inel, el = V[(n_inelastic, n_elastic)]
    return NoArrivalResult(
        policy=name,
        k=k,
        n_inelastic=n_inelastic,
        n_elastic=n_elastic,
        total=total,
        total_inelastic=inel,
        total_elastic=el,
    )
