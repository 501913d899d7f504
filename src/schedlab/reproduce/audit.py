"""The claims audit (issue 31): can each claim of a reproduction FAIL?

A reproduction's :class:`~schedlab.reproduce.registry.Outcome` carries the rows its claims read
(one :class:`Point` per series and x) and the ``judge`` that turns rows into claims. The audit
re-evaluates the judge on mutated copies of the rows — nothing is simulated again — and reports,
per claim, the mutations under which it FAILs. Mutations are generic, never written per claim:

* swap two series' values at their common x (each policy's series with another's);
* scale a series by 0.5 and by 2;
* reverse a series' trend (its values in reverse x order);
* flatten a series (every point moved to the series' mean level, intervals kept: no trend and
  no variation left);
* move a bound to the other side of a result (reflect an analytic series about a simulated one
  at their common x: a bound that was above is now below);
* put an unstable run in a stable one's place (one point, or a whole series);
* widen the 95% intervals x10 (of one series, or all).

A claim that no mutation makes FAIL "cannot fail". A claim NOT CHECKED on its own results (the
run is too short to judge it) has nothing to audit and is listed as such.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from schedlab.report.figures import Point
from schedlab.reproduce.registry import FAIL, NOT_CHECKED, Judge

Rows = list[Point]
SCALES = (0.5, 2.0)
WIDEN = 10.0
CAN_FAIL, CANNOT_FAIL, UNCHECKED = "can fail", "cannot fail", "not checked"


@dataclass(frozen=True)
class Mutation:
    name: str
    apply: Callable[[Rows], Rows]


@dataclass
class ClaimAudit:
    text: str
    verdict: str  # on the reproduction's own rows
    failing: list[str] = field(default_factory=list)  # mutations that make it FAIL

    @property
    def status(self) -> str:
        if self.verdict == NOT_CHECKED:
            return UNCHECKED
        return CAN_FAIL if self.failing else CANNOT_FAIL


def _series(rows: Rows) -> dict[str, list[int]]:
    """Row indices of each series, in x order."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        out.setdefault(r.series, []).append(i)
    return {s: sorted(ix, key=lambda i: rows[i].x) for s, ix in out.items()}


def _values(p: Point) -> dict[str, object]:
    return {"mean": p.mean, "lo": p.lo, "hi": p.hi, "stable": p.stable, "growth": p.growth}


def _edit(rows: Rows, changes: dict[int, dict[str, object]]) -> Rows:
    return [replace(r, **changes[i]) if i in changes else r for i, r in enumerate(rows)]


def _scaled(p: Point, f: float) -> dict[str, object]:
    return {"mean": p.mean * f, "lo": p.lo * f, "hi": p.hi * f, "growth": p.growth * f}


def _reflected(p: Point, about: Point) -> dict[str, object]:
    c = about.mean
    return {"mean": 2 * c - p.mean, "lo": 2 * c - p.hi, "hi": 2 * c - p.lo}


def _unstable(p: Point) -> dict[str, object]:
    growth = p.growth if p.growth > 0 else 1.0
    return {"mean": math.nan, "lo": math.nan, "hi": math.nan, "stable": False, "growth": growth}


def _widened(p: Point) -> dict[str, object]:
    return {"lo": p.mean - WIDEN * (p.mean - p.lo), "hi": p.mean + WIDEN * (p.hi - p.mean)}


def _flattened(p: Point, level: float) -> dict[str, object]:
    return {"mean": level, "lo": p.lo - p.mean + level, "hi": p.hi - p.mean + level}


def mutations(rows: Rows) -> Iterator[Mutation]:
    """Every generic mutation of ``rows`` (see the module docstring)."""
    series = _series(rows)
    for s, ix in series.items():
        for f in SCALES:
            yield Mutation(
                f"scale {s} x{f:g}",
                lambda r, ix=ix, f=f: _edit(r, {i: _scaled(r[i], f) for i in ix}),
            )
        yield Mutation(
            f"widen {s} x{WIDEN:g}", lambda r, ix=ix: _edit(r, {i: _widened(r[i]) for i in ix})
        )
        if len(ix) >= 2:
            yield Mutation(
                f"reverse {s}",
                lambda r, ix=ix: _edit(
                    r, {i: _values(r[j]) for i, j in zip(ix, ix[::-1], strict=True)}
                ),
            )
        if len(ix) >= 2 and all(math.isfinite(rows[i].mean) for i in ix):
            yield Mutation(
                f"flatten {s}",
                lambda r, ix=ix: _edit(
                    r, {i: _flattened(r[i], sum(r[j].mean for j in ix) / len(ix)) for i in ix}
                ),
            )
        if rows[ix[0]].analytic:  # an analytic value is never a run: no unstable mutation
            continue
        yield Mutation(f"{s} unstable", lambda r, ix=ix: _edit(r, {i: _unstable(r[i]) for i in ix}))
        for i in ix:
            if rows[i].stable and len(ix) > 1:
                yield Mutation(
                    f"{s} unstable at x={rows[i].x:g}",
                    lambda r, i=i: _edit(r, {i: _unstable(r[i])}),
                )
    at = {(r.series, r.x): i for i, r in enumerate(rows)}
    for s, t in itertools.permutations(series, 2):
        common = [(i, at[(t, rows[i].x)]) for i in series[s] if (t, rows[i].x) in at]
        if not common:
            continue
        if s < t:
            yield Mutation(
                f"swap {s} <-> {t}",
                lambda r, c=common: _edit(
                    r, {**{i: _values(r[j]) for i, j in c}, **{j: _values(r[i]) for i, j in c}}
                ),
            )
        if not rows[series[s][0]].analytic or rows[series[t][0]].analytic:
            continue  # a bound (an analytic series) moves to the other side of a result
        yield Mutation(
            f"{s} to the other side of {t}",
            lambda r, c=common: _edit(r, {i: _reflected(r[i], r[j]) for i, j in c}),
        )
    yield Mutation(f"widen all x{WIDEN:g}", lambda r: [replace(p, **_widened(p)) for p in r])


def audit(rows: Sequence[Point], judge: Judge) -> list[ClaimAudit]:
    """Each claim of ``judge(rows)`` with the mutations of ``rows`` under which it FAILs."""
    rows = list(rows)
    base = judge(rows)
    result = [ClaimAudit(c.text, c.verdict) for c in base]
    for m in mutations(rows):
        claims = judge(m.apply(rows))
        if len(claims) != len(base):
            raise ValueError(f"mutation {m.name!r} changed the number of claims")
        for a, c in zip(result, claims, strict=True):
            if c.verdict == FAIL:
                a.failing.append(m.name)
    return result
