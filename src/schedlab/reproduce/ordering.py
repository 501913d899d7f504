"""The one comparison every reproduction's claims use: which of two results is lower.

An unstable run has no steady-state mean (its mean is NaN, simulation/result.py), so ``x < NaN``
would silently be False. :func:`compare` orders a stable run before an unstable one (a queue
that settles is smaller than one that keeps growing), leaves two unstable runs NOT RESOLVED
with their growth rates shown, and separates two stable runs only when their 95% intervals
(or a paired-ratio interval) are apart; values without an interval (a deterministic trace
replay, an analytic value) are ordered by their means, a tie being no order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from schedlab.report.figures import Point
from schedlab.reproduce.registry import FAIL, NOT_RESOLVED, PASS, Claim

BELOW, ABOVE, INDISTINCT, UNRESOLVED = "below", "above", "indistinct", "unresolved"


@dataclass(frozen=True)
class Order:
    """``p`` against ``q``: BELOW (p lower), ABOVE, INDISTINCT (both stable, not separated:
    intervals overlap or the means tie) or UNRESOLVED (both unstable); ``reason`` in words."""

    order: str
    reason: str

    @property
    def below(self) -> bool:
        return self.order == BELOW


def describe(p: Point) -> str:
    """A point in words: its mean and interval, or 'unstable' with its growth rate."""
    if not p.stable:
        growth = "unknown" if math.isnan(p.growth) else f"{p.growth:.3g}"
        return f"unstable (queue growth {growth} per unit time)"
    if math.isnan(p.lo) or math.isnan(p.hi):
        return f"{p.mean:.4g}"
    return f"{p.mean:.4g} [{p.lo:.4g}, {p.hi:.4g}]"


def compare(p: Point, q: Point, ratio: tuple[float, float] | None = None) -> Order:
    """Whether ``p`` is lower than ``q``. ``ratio``: a 95% interval of p/q from paired runs
    (common random numbers), used instead of the two separate intervals when both are stable."""
    if p.stable != q.stable:
        return Order(BELOW if p.stable else ABOVE, "a stable run is below an unstable one")
    if not p.stable:
        return Order(
            UNRESOLVED,
            f"both unstable, no steady-state means: {describe(p)} vs {describe(q)}",
        )
    if math.isnan(p.mean) or math.isnan(q.mean):
        return Order(UNRESOLVED, "a stable run without a mean")
    if ratio is not None:
        lo, hi = ratio
        where = f"paired ratio {p.mean / q.mean:.4g} [{lo:.4g}, {hi:.4g}]"
        if hi < 1:
            return Order(BELOW, where)
        if lo > 1:
            return Order(ABOVE, where)
        return Order(INDISTINCT, where + " contains 1")
    if any(math.isnan(v) for v in (p.lo, p.hi, q.lo, q.hi)):
        if p.mean == q.mean:
            return Order(INDISTINCT, "equal values")
        return Order(BELOW if p.mean < q.mean else ABOVE, "exact values (no interval)")
    if p.hi < q.lo:
        return Order(BELOW, "95% intervals apart")
    if q.hi < p.lo:
        return Order(ABOVE, "95% intervals apart")
    return Order(INDISTINCT, "95% intervals overlap")


def lower_claim(text: str, orders: Sequence[Order], evidence: str, clear: bool = True) -> Claim:
    """'p is lower than q' at each compared point: FAIL if any comparison is ABOVE, or
    INDISTINCT when the claim is of a ``clear`` advantage; else NOT RESOLVED if any is
    UNRESOLVED (or INDISTINCT), else PASS."""
    kinds = {o.order for o in orders}
    if ABOVE in kinds or (clear and INDISTINCT in kinds) or not orders:
        return Claim(text, False, evidence, FAIL)
    if kinds & {UNRESOLVED, INDISTINCT}:
        return Claim(text, True, evidence, NOT_RESOLVED)
    return Claim(text, True, evidence, PASS)


def trend_claim(text: str, points: Sequence[Point], rising: bool, evidence: str) -> Claim:
    """'the series rises (``rising``) or falls over the sampled points' (in x order): FAIL when
    the last point is clearly on the other side of the first or a step goes clearly the wrong
    way (an unstable point counts as the highest); PASS when the last is clearly beyond the
    first; else NOT RESOLVED (first and last not told apart, or both unstable). Two unstable
    runs in a row are no step either way. Clearly: :func:`compare` (95% intervals apart)."""
    want, wrong = (ABOVE, BELOW) if rising else (BELOW, ABOVE)
    steps = [compare(b, a) for a, b in itertools.pairwise(points)]
    overall = compare(points[-1], points[0]) if len(points) > 1 else Order(INDISTINCT, "")
    if overall.order == wrong or any(o.order == wrong for o in steps):
        return Claim(text, False, evidence, FAIL)
    if overall.order != want:
        return Claim(text, True, evidence + f" (first vs last: {overall.reason})", NOT_RESOLVED)
    return Claim(text, True, evidence, PASS)


def ratio_interval(p: Point, q: Point) -> tuple[float, float, float]:
    """p/q with a conservative interval from the two 95% intervals: (ratio, lo, hi); an interval
    missing (an exact value) counts as its mean, a lower end <= 0 gives hi = inf."""
    p_lo, p_hi = (p.mean, p.mean) if math.isnan(p.lo) else (p.lo, p.hi)
    q_lo, q_hi = (q.mean, q.mean) if math.isnan(q.lo) else (q.lo, q.hi)
    hi = p_hi / q_lo if q_lo > 0 else math.inf
    return p.mean / q.mean, p_lo / q_hi if q_hi > 0 else math.inf, hi


def similar_claim(
    text: str, pairs: Sequence[tuple[Point, Point]], factor: float, evidence: str
) -> Claim:
    """'p and q are similar' at each pair: both stable and p/q within [1/factor, factor]. PASS
    when every ratio interval (:func:`ratio_interval`) lies inside that range; FAIL when one
    run is stable and the other not, or a ratio interval lies wholly outside; else NOT
    RESOLVED (an interval wider than the factor, or two unstable runs)."""
    verdicts = []
    for p, q in pairs:
        if p.stable != q.stable:
            verdicts.append(FAIL)
            continue
        if not p.stable or math.isnan(p.mean) or math.isnan(q.mean):
            verdicts.append(NOT_RESOLVED)
            continue
        _, lo, hi = ratio_interval(p, q)
        if 1 / factor <= lo and hi <= factor:
            verdicts.append(PASS)
        elif hi < 1 / factor or lo > factor:
            verdicts.append(FAIL)
        else:
            verdicts.append(NOT_RESOLVED)
    if FAIL in verdicts or not verdicts:
        return Claim(text, False, evidence, FAIL)
    if NOT_RESOLVED in verdicts:
        return Claim(text, True, evidence, NOT_RESOLVED)
    return Claim(text, True, evidence, PASS)


def stable_claim(text: str, points: Sequence[Point], evidence: str) -> Claim:
    """'every run is stable': FAIL if any is flagged unstable by the engine's growth test
    (measurement/stability.py: the number in system rising at least 5 standard errors and by half
    its mean level over the window), else PASS."""
    ok = bool(points) and all(p.stable for p in points)
    return Claim(text, ok, evidence, PASS if ok else FAIL)
