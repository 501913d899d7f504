"""grosof2023's heavy-traffic bounds: Theorem 4.1 (ServerFilling-SRPT) and Theorem 5.1 (-Gittins).

Theorem 4.1 (Grosof, Scully, Harchol-Balter, Scheller-Wolf, POMACS 2023, §4.1 and §4.3): for all
loads rho, in the power-of-two setting,

    E[T^{SFS-k}] - E[T^{SRPT-1}] <= (e + 1)(k - 1) / lambda * ln(1 / (1 - rho)) + e / lambda.

The proof uses only relevant-work efficiency (Corollary 3.1), so the bound also holds for
ServerFilling-SRPT whenever every need divides k and every larger need (Lemma 3.1's condition,
"nested divisors") and for DivisorFilling-SRPT when every need divides k (App. C). Theorem 5.1
states the same right-hand side for ServerFilling-Gittins against Gittins-1 (§5.3, App. B).

:func:`theorem41_bounds` evaluates both sides' known part for a pooled model: the resource-pooled
lower bound (SRPT-1, or Gittins-1 for Theorem 5.1) and that lower bound plus the gap, so that a
simulated ServerFilling-SRPT (-Gittins) can be checked to lie in [lower, upper].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from schedlab.analysis.sizes import SizeLaw, as_size_law


def theorem41_gap_bound(k: int, arrival_rate: float, load: float) -> float:
    """(e+1)(k-1)/lambda * ln(1/(1-rho)) + e/lambda: Theorem 4.1's bound on
    E[T^{SFS-k}] - E[T^{SRPT-1}] (and Theorem 5.1's on ServerFilling-Gittins vs Gittins-1)."""
    if isinstance(k, bool) or not float(k).is_integer() or k < 1:
        raise ValueError(f"k must be a whole number of servers >= 1, got {k}")
    if not (math.isfinite(arrival_rate) and arrival_rate > 0):
        raise ValueError(f"the arrival rate must be finite and > 0, got {arrival_rate}")
    if not (0 < load < 1):
        raise ValueError(f"the load rho must be in (0, 1), got {load}")
    return ((math.e + 1) * (k - 1) * math.log(1.0 / (1.0 - load)) + math.e) / arrival_rate


def needs_setting(needs: Any, k: float) -> Literal["nested", "divisible", "neither"]:
    """Which of grosof2023's settings the server needs are in: "nested" (every need divides k
    and every larger need: Lemma 3.1, e.g. powers of two; ServerFilling-SRPT is covered),
    "divisible" (every need divides k: DivisorFilling-SRPT, App. C) or "neither"."""
    values = sorted({float(n) for n in needs})
    if not all(v.is_integer() and float(k) % v == 0 for v in values):
        return "neither"
    chain = [*values, float(k)]
    nested = all(b % a == 0 for i, a in enumerate(chain) for b in chain[i + 1 :])
    return "nested" if nested else "divisible"


@dataclass(frozen=True)
class Theorem41Bounds:
    """Resource-pooled lower bound and Theorem 4.1 (or 5.1) upper bound on a policy's E[T]."""

    k: int
    arrival_rate: float
    load: float
    order: Literal["srpt", "gittins"]
    lower: float  # E[T^{SRPT-1}] (or E[T^{Gittins-1}]): no policy on the k servers does better
    gap: float  # the theorem's right-hand side
    setting: Literal["nested", "divisible", "neither"]

    @property
    def upper(self) -> float:
        """lower + gap: ServerFilling-SRPT's (-Gittins') E[T] is at most this (when covered)."""
        return self.lower + self.gap

    @property
    def covered(self) -> bool:
        """Whether the theorem applies: ServerFilling needs "nested" needs, DivisorFilling
        "divisible" ones (this flag says whether either applies)."""
        return self.setting != "neither"


def theorem41_bounds(
    model: Any,
    arrival_rate: float | None = None,
    *,
    order: Literal["srpt", "gittins"] = "srpt",
    k: int | None = None,
) -> Theorem41Bounds:
    """E[T^{SRPT-1}] and E[T^{SRPT-1}] + Theorem 4.1's gap for a compiled pooled model (its
    arrival rate and k), or for a :class:`SizeLaw` with ``arrival_rate`` (k from the law).
    ``order="gittins"``: E[T^{Gittins-1}] and Theorem 5.1's bound instead."""
    from schedlab.analysis.gittins import gittins1_mean_response_time
    from schedlab.analysis.srpt import srpt1_mean_response_time

    if isinstance(model, SizeLaw) or arrival_rate is not None:
        law = as_size_law(model)
        if arrival_rate is None:
            raise ValueError("give the arrival rate with a size law")
        lam = float(arrival_rate)
    else:
        law = SizeLaw.from_model(model)
        lam = float(model.rate)
    servers = int(k if k is not None else law.k)
    load = law.load(lam)
    if order == "srpt":
        lower = srpt1_mean_response_time(law, lam)
    elif order == "gittins":
        lower = gittins1_mean_response_time(law, lam)
    else:
        raise ValueError(f"order must be 'srpt' or 'gittins', got {order!r}")
    return Theorem41Bounds(
        k=servers,
        arrival_rate=lam,
        load=load,
        order=order,
        lower=lower,
        gap=theorem41_gap_bound(servers, lam, load),
        setting=needs_setting(np.unique(law.needs), servers),
    )
