"""Compiled Gittins rank of grosof2023 §5.1, for ServerFilling-Gittins and simulated Gittins-1.

A job with server need i and age a (attained SIZE, i.e. need * attained duration / k: ages and
ranks are in size units, grosof2023 §3.1) has rank

    rank_i(a) = inf_{b > a} E[min(S_i, b) - a | S_i > a] / P(S_i <= b | S_i > a)

where S_i is the size law of need-i jobs. Lower rank = higher priority. Each need class is
described by ``(kind, params_a, params_b)``, built in Python by
:func:`schedlab.analysis.gittins.gittins_representation` (or, for a whole model,
:func:`schedlab.analysis.gittins.gittins_tables`, which packs all classes into the flat arrays of
:class:`GittinsTables` used by :func:`gittins_rank_packed`; the simulation pipeline builds them
and hands them to a Gittins-ordered policy's init, as policies/ may not import analysis/):

====  ===================  ==========================  ==========================================
kind  law                  params_a / params_b         rank(a)
====  ===================  ==========================  ==========================================
0     exponential          [mean] / unused             mean (memoryless: constant)
1     hyperexponential     phase probs / phase rates   1 / hazard(a) = sum p e^{-mu a} /
                                                       sum p mu e^{-mu a} (DHR: inf at b -> a+)
2     deterministic s      [s] / unused                s - a
3     discrete atoms       sorted values / probs       min over atoms v > a of the ratio at b = v
                                                       (O(#atoms) with running sums)
4     table                ages / ranks                piecewise-linear interpolation; a repeated
                                                       age is a jump (the later value holds at it);
                                                       constant beyond the last age
====  ===================  ==========================  ==========================================

Kinds 0-3 are exact; kind 4 is a tabulation of a numerically computed rank (any other law).
An age at or past the largest possible size (the job must have completed) has rank 0.

:func:`gittins_rank_crossing` gives the first age >= a at which the rank reaches a target: a
served job's rank changes with its age, and an exact simulation of Gittins must re-decide when the
served job's rank rises above a waiting job's (``schedlab.engine.actions.wake_at`` at
``now + (crossing - age) * k / need``). For kinds 0 and 2 the rank never rises; for kind 1 it
rises continuously (so exact Gittins then shares the server between jobs of equal rank, like FB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.policy_api import kernel

KIND_CONSTANT = 0
KIND_HYPEREXPONENTIAL = 1
KIND_DETERMINISTIC = 2
KIND_DISCRETE = 3
KIND_TABLE = 4


@kernel(wraparound=False)
def _hyperexponential(probs, rates, age):
    low = rates[0]
    for i in range(1, rates.shape[0]):
        low = min(low, rates[i])
    num = 0.0
    den = 0.0
    for i in range(rates.shape[0]):
        w = probs[i] * math.exp(-(rates[i] - low) * age)  # shifted: no underflow at large ages
        num += w
        den += w * rates[i]
    return num / den


@kernel(wraparound=False)
def _discrete(values, probs, age):
    n = values.shape[0]
    j = np.searchsorted(values, age, side="right")  # first atom > age
    if j >= n:
        return 0.0
    above = 0.0
    for i in range(j, n):
        above += probs[i]
    cum_p = 0.0
    cum_pv = 0.0
    best = math.inf
    for m in range(j, n):
        cum_p += probs[m]
        cum_pv += probs[m] * values[m]
        tail = above - cum_p
        if tail < 0.0:
            tail = 0.0
        # E[min(S, v_m) - a; S > a] / P(a < S <= v_m)
        ratio = (cum_pv - age * cum_p + (values[m] - age) * tail) / cum_p
        if ratio < best:
            best = ratio
    return best


@kernel(wraparound=False)
def _table(ages, ranks, age):
    n = ages.shape[0]
    if age <= ages[0]:
        return ranks[0]
    i = np.searchsorted(ages, age, side="right") - 1
    if i >= n - 1:
        return ranks[n - 1]
    a0 = ages[i]
    a1 = ages[i + 1]
    if a1 <= a0:
        return ranks[i + 1]
    return ranks[i] + (ranks[i + 1] - ranks[i]) * (age - a0) / (a1 - a0)


@kernel(wraparound=False)
def gittins_rank(kind, params_a, params_b, age):
    """Gittins rank at ``age`` (size units) of a need class given as (kind, params_a, params_b)."""
    if kind == KIND_CONSTANT:
        return params_a[0]
    if kind == KIND_HYPEREXPONENTIAL:
        return _hyperexponential(params_a, params_b, age)
    if kind == KIND_DETERMINISTIC:
        left = params_a[0] - age
        return left if left > 0.0 else 0.0
    if kind == KIND_DISCRETE:
        return _discrete(params_a, params_b, age)
    return _table(params_a, params_b, age)


@kernel(wraparound=False)
def gittins_rank_packed(kinds, offsets, params_a, params_b, c, age):
    """Rank of need class c from packed tables: its parameters are
    ``params_a[offsets[c]:offsets[c + 1]]`` (and the same slice of ``params_b``)."""
    lo = offsets[c]
    hi = offsets[c + 1]
    return gittins_rank(kinds[c], params_a[lo:hi], params_b[lo:hi], age)


@kernel(wraparound=False)
def gittins_rank_crossing(kind, params_a, params_b, age, target):
    """Smallest age' >= age with rank(age') >= target (inf if the rank never gets there)."""
    if gittins_rank(kind, params_a, params_b, age) >= target:
        return age
    if kind in (KIND_CONSTANT, KIND_DETERMINISTIC):
        return math.inf
    if kind == KIND_HYPEREXPONENTIAL:
        low = params_b[0]
        for i in range(1, params_b.shape[0]):
            low = min(low, params_b[i])
        if target >= 1.0 / low:  # the supremum 1/min rate is approached, never reached
            return math.inf
        lo = age
        hi = age + 1.0 / low
        while _hyperexponential(params_a, params_b, hi) < target:
            lo = hi
            hi = age + 2.0 * (hi - age)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if _hyperexponential(params_a, params_b, mid) >= target:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-15 * hi:
                break
        return hi
    if kind == KIND_DISCRETE:
        # Between atoms the rank decreases (a minimum of decreasing lines); it jumps up only at
        # atoms, so the first crossing is at an atom.
        j = np.searchsorted(params_a, age, side="right")
        for m in range(j, params_a.shape[0]):
            if _discrete(params_a, params_b, params_a[m]) >= target:
                return params_a[m]
        return math.inf
    # table: walk the linear pieces
    ages = params_a
    ranks = params_b
    n = ages.shape[0]
    i = np.searchsorted(ages, age, side="right") - 1
    if i < 0:
        i = 0
    while i < n - 1:
        a0 = max(ages[i], age)
        a1 = ages[i + 1]
        if a1 > a0:
            r0 = _table(ages, ranks, a0)
            r1 = ranks[i + 1]
            if r0 >= target:
                return a0
            if r1 >= target:
                return a0 + (a1 - a0) * (target - r0) / (r1 - r0)
        elif ranks[i + 1] >= target and a1 >= age:
            return a1
        i += 1
    return math.inf


@dataclass(frozen=True)
class GittinsTables:
    """Every need class of a model packed for :func:`gittins_rank_packed`: class c (need
    ``needs[c]``) has kind ``kinds[c]`` and parameters ``params_a[offsets[c]:offsets[c+1]]``.
    Built from the size laws by :func:`schedlab.analysis.gittins.gittins_tables`."""

    needs: np.ndarray
    kinds: np.ndarray
    offsets: np.ndarray
    params_a: np.ndarray
    params_b: np.ndarray
    exact: bool = True  # every class's rank is exact (no numerically tabulated law)

    def need_index(self, need: float) -> int:
        i = int(np.searchsorted(self.needs, need))
        if i >= self.needs.size or self.needs[i] != need:
            raise KeyError(f"no need class {need:g}; the classes are {self.needs.tolist()}")
        return i

    def rank(self, need: float, age: float) -> float:
        c = self.need_index(need)
        return float(
            gittins_rank_packed(
                self.kinds, self.offsets, self.params_a, self.params_b, c, float(age)
            )
        )

    def for_needs(self, needs: np.ndarray) -> GittinsTables:
        """The tables of the need classes ``needs`` (each one of ``self.needs``), in that order."""
        index = [self.need_index(float(n)) for n in needs]
        a, b, offset = [], [], [0]
        for i in index:
            lo, hi = self.offsets[i], self.offsets[i + 1]
            a.append(self.params_a[lo:hi])
            b.append(self.params_b[lo:hi])
            offset.append(offset[-1] + hi - lo)
        return GittinsTables(
            needs=np.asarray(needs, dtype=float),
            kinds=self.kinds[index].astype(np.int64),
            offsets=np.array(offset, dtype=np.int64),
            params_a=np.ascontiguousarray(np.concatenate(a), dtype=float),
            params_b=np.ascontiguousarray(np.concatenate(b), dtype=float),
            exact=self.exact,
        )
