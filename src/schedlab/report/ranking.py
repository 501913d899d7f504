"""The ranked findings of a comparison, in words and as rows, and its figures.

Per load: the policies ordered by one metric (E[T] by default; any of the stored metrics, less is
better except utilization and throughput) with 95% intervals, unstable ones last, each row with the
other metrics HPC operators read (labels.HPC_METRICS) and the backlog note of a trace replay whose
queue grew through the whole log; the best policy's factor against the reference (FCFS when it was
run, else the worst stable policy); per policy, the loads where it is stable and where it is not,
or where its replay's backlog grew. The log's own load (``--loads native``) is named as such.
Resource-pooled policies (SRPT-1) run on one server of speed k: they are bounds, listed but never
ranked as a choice. Policies a batch cluster cannot run (``idealized``: they preempt or need exact
sizes, the policies' traits) are ranked apart, in the group :data:`IDEALIZED` (a trace
comparison's default, experiments/compare.py); their ratio is to the best of the policies ranked
as choices.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.experiments.compare import BoundCurve, LoadLimit
from schedlab.experiments.stats import PointStat, compare, group, summarize
from schedlab.report.figures import Point, interval_plot, line_plot, policy_colors
from schedlab.report.labels import (
    Units,
    higher_is_better,
    label,
    policy_label,
    short,
    unit_of,
    with_unit,
)
from schedlab.report.points import plot_points
from schedlab.report.tables import is_bound

LOAD = "workload.load"
IDEALIZED = "bounds and idealized policies"


@dataclass(frozen=True)
class Ranked:
    load: float
    rank: int  # 1 = least; 0 for bounds and unstable policies
    policy: str
    mean: float
    lo: float
    hi: float
    stable: bool
    reliable: bool
    bound: bool
    ratio_to_best: float
    values: dict[str, float] = field(default_factory=dict)  # other metrics' means (``shown``)
    note: str = ""  # a trace replay's backlog note
    group: str = ""  # "" for the policies ranked as choices, else IDEALIZED
    ratio_lo: float = math.nan  # paired 95% interval of ratio_to_best (experiments/stats.py)
    ratio_hi: float = math.nan
    best: str = ""  # the policy of ratio_to_best

    @property
    def told_apart(self) -> bool | None:
        """Whether the paired 95% interval of the ratio to the best excludes 1 (None: the best
        itself, or no interval; an unbounded interval tells nothing apart)."""
        if self.policy == self.best or math.isnan(self.ratio_lo) or math.isnan(self.ratio_hi):
            return None
        return not self.ratio_lo <= 1.0 <= self.ratio_hi


def _mean_of(members: list[dict[str, Any]], metric: str) -> float:
    values = [r.get(metric) for r in members]
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if len(finite) < len(values) or not finite:
        return math.nan
    return sum(finite) / len(finite)


def rank(
    rows: list[dict[str, Any]],
    metric: str = "mean_response_time",
    shown: tuple[str, ...] = (),
    idealized: frozenset[str] = frozenset(),
) -> list[Ranked]:
    """One entry per (load, policy), ordered by load, then group (the choices first, then the
    ``idealized`` policies, ranked among themselves), then rank; ``shown`` metrics' means are
    carried along (``Ranked.values``)."""
    members = group(rows, [LOAD, "policy"])
    sign = -1.0 if higher_is_better(metric) else 1.0
    out: list[Ranked] = []
    stats = summarize(rows, [LOAD, "policy"], metric)
    for load in sorted({s.key[0] for s in stats}):
        everyone = [s for s in stats if s.key[0] == load]
        groups = {
            "": [s for s in everyone if s.key[1] not in idealized],
            IDEALIZED: [s for s in everyone if s.key[1] in idealized],
        }
        ranked = {
            name: sorted(
                (s for s in here if s.stable and math.isfinite(s.mean) and not is_bound(s.key[1])),
                key=lambda s: sign * s.mean,
            )
            for name, here in groups.items()
        }
        firsts = ranked[""] or ranked[IDEALIZED]  # the best choice, else the best of the rest
        best = firsts[0].mean if firsts else math.nan
        best_policy = str(firsts[0].key[1]) if firsts else ""
        here_rows = [r for r in rows if r.get(LOAD) == load]
        paired = (
            {
                s.key[-1]: s
                for s in compare(here_rows, [LOAD], metric, "policy", best_policy, ratio=True)
            }
            if best_policy
            else {}
        )
        for name, here in groups.items():
            order = {s.key[1]: i + 1 for i, s in enumerate(ranked[name])}
            for s in sorted(here, key=lambda s: (order.get(s.key[1], 10**6), str(s.key[1]))):
                mine = members[s.key]
                notes = sorted({str(r.get("backlog") or "") for r in mine} - {""})
                out.append(
                    Ranked(
                        load=float(load),
                        rank=order.get(s.key[1], 0),
                        policy=str(s.key[1]),
                        mean=s.mean if s.stable else math.nan,
                        lo=s.lo if s.stable else math.nan,
                        hi=s.hi if s.stable else math.nan,
                        stable=s.stable,
                        reliable=s.reliable,  # of ``metric`` (experiments/stats.py)
                        bound=is_bound(s.key[1]),
                        ratio_to_best=s.mean / best if s.stable and best > 0 else math.nan,
                        values={m: _mean_of(mine, m) for m in shown},
                        note="; ".join(notes),
                        group=name,
                        ratio_lo=_interval(paired.get(s.key[1]), s.stable)[0],
                        ratio_hi=_interval(paired.get(s.key[1]), s.stable)[1],
                        best=best_policy,
                    )
                )
    return out


def _interval(stat: PointStat | None, stable: bool) -> tuple[float, float]:
    """A paired comparison's interval (NaN when there is none or the policy is unstable)."""
    if stat is None or not stable or not stat.stable:
        return (math.nan, math.nan)
    return (stat.lo, stat.hi)


def _v(x: float) -> str:
    return f"{x:.3g}"


def load_name(load: float, native: float | None) -> str:
    """``load 0.5``, or ``load 0.6891 (the log's own)`` for a replay at the log's own times."""
    if native is not None and math.isclose(load, native, rel_tol=1e-9):
        return f"load {load:.4g} (the log's own)"
    return f"load {load:g}"


NEAR = 1.1  # factors below this read as a percentage ("within 4% of FCFS")


def factor_phrase(ratio: float, higher: bool, other: str) -> str:
    """How the best compares with ``other`` (``ratio``: other's mean / the best's): "1.9x below
    FCFS", "1.9x above" for a metric where more is better, "within 4% of FCFS" near 1."""
    factor = 1 / ratio if higher else ratio
    if factor < NEAR:
        return f"within {100 * (factor - 1):.2g}% of {other}"
    return f"{factor:.3g}x {'above' if higher else 'below'} {other}"


def summary(
    ranked: list[Ranked],
    limits: list[LoadLimit],
    reference: str | None,
    metric: str = "mean_response_time",
    *,
    units: Units | None = None,
    native: float | None = None,
) -> list[str]:
    """The findings in words, e.g. "at load 0.8, ServerFilling-SRPT has the least E[T] (6.2
    [6.06, 6.33] time units), 1.9x below FCFS"; ``native``: the log's own load; the best of the
    bounds and idealized policies, when ranked apart, on a line of its own."""
    lines = []
    sym = short(metric)
    higher = higher_is_better(metric)
    unit = unit_of(metric, units or Units())
    unit = f" {unit}" if unit else ""
    for load in sorted({r.load for r in ranked}):
        everyone = [r for r in ranked if r.load == load]
        here = [r for r in everyone if not r.group] or everyone
        chosen = [r for r in here if r.rank > 0]
        at = load_name(load, native)
        apart = [
            f"at {at}, the best of the {IDEALIZED} (they preempt or need exact sizes: no batch "
            f"cluster runs them) is {policy_label(r.policy)} ({_v(r.mean)}{unit}"
            + (f", {r.ratio_to_best:.3g}x the best choice)" if chosen else ")")
            for r in everyone
            if r.group and r.rank == 1 and r not in here
        ]
        if not chosen:
            lines += [f"at {at}, no policy is stable", *apart]
            continue
        best = chosen[0]
        ref = next((r for r in here if r.policy == reference and r.policy != best.policy), None)
        if ref is None and len(chosen) > 1:
            ref = chosen[-1]
        interval = f" [{_v(best.lo)}, {_v(best.hi)}]" if math.isfinite(best.lo) else ""
        text = (
            f"at {at}, {policy_label(best.policy)} has the {'highest' if higher else 'least'} "
            f"{sym} ({_v(best.mean)}{interval}{unit})"
        )
        second = chosen[1] if len(chosen) > 1 else None
        if second is not None and second.told_apart is None:  # no paired interval: overlap
            overlaps = best.lo <= second.hi if higher else best.hi >= second.lo
            text += f" (its interval overlaps {policy_label(second.policy)}'s)" if overlaps else ""
        if ref is not None and ref.stable:
            text += ", " + factor_phrase(ref.ratio_to_best, higher, policy_label(ref.policy))
        elif ref is not None:
            text += f"; {policy_label(ref.policy)} is unstable"
        lines += [text, *_told_apart(chosen, sym), *apart]
    for policy in sorted({r.policy for r in ranked}):
        mine = sorted((r for r in ranked if r.policy == policy), key=lambda r: r.load)
        bad = [r.load for r in mine if not r.stable]
        if bad:
            good = [r.load for r in mine if r.stable and r.load < min(bad)]
            upto = f"stable up to load {max(good):g}, " if good else ""
            lines.append(f"{policy_label(policy)}: {upto}unstable from load {min(bad):g}")
        grew = [r.load for r in mine if r.note]
        if grew:
            loads = ", ".join(f"{x:.4g}" for x in grew)
            lines.append(
                f"{policy_label(policy)}: backlog grew over the whole log at load {loads}: "
                "a transient, not a steady state (its numbers are those of the replay)"
            )
    for limit in limits:
        lines.append(f"{limit.name}: load limit {limit.load:.4g}: {limit.meaning}")
    return lines


def _legend_order(ranked: list[Ranked], everyone: list[str]) -> dict[str, tuple]:
    """Policies by their mean rank over the loads where they are stable (best first), then
    the bounds and idealized policies, then those never stable."""

    def key(policy: str) -> tuple:
        mine = [r for r in ranked if r.policy == policy]
        ranks = [r.rank for r in mine if r.rank > 0]
        apart = any(r.bound or r.group for r in mine)
        return (apart, not ranks, sum(ranks) / len(ranks) if ranks else 0.0, policy)

    return {p: key(p) for p in everyone}


def _told_apart(chosen: list[Ranked], sym: str) -> list[str]:
    """Which choices the paired intervals tell apart from the best and which they cannot (one
    line; none without paired intervals)."""
    judged = [r for r in chosen if r.told_apart is not None]
    if not judged:
        return []

    def cell(r: Ranked) -> str:
        bounded = math.isfinite(r.ratio_lo) and math.isfinite(r.ratio_hi)
        interval = f"[{_v(r.ratio_lo)}, {_v(r.ratio_hi)}]" if bounded else "[unbounded]"
        return f"{policy_label(r.policy)} {_v(r.ratio_to_best)} {interval}"

    same = [cell(r) for r in judged if not r.told_apart]
    apart = [cell(r) for r in judged if r.told_apart]
    best = policy_label(chosen[0].policy)
    text = f"{sym} / {best}'s, paired 95% intervals: "
    parts = []
    if same:
        parts.append(f"indistinguishable from the best: {', '.join(same)}")
    if apart:
        parts.append(f"told apart from it: {', '.join(apart)}")
    return [text + "; ".join(parts)]


def best_policy(ranked: list[Ranked]) -> str | None:
    """The policy ranked first at the most loads (ties: the lower load decides)."""
    firsts = [r.policy for r in ranked if r.rank == 1 and not r.group]
    firsts = firsts or [r.policy for r in ranked if r.rank == 1]
    return max(firsts, key=firsts.count) if firsts else None


def file_stem(metric: str) -> str:
    """A metric's name as a file name: ``utilization[servers]`` -> ``utilization-servers``."""
    return re.sub(r"[^\w.-]+", "-", metric).strip("-")


def figures(
    out: Path,
    name: str,
    rows: list[dict[str, Any]],
    bounds: list[BoundCurve],
    limits: list[LoadLimit],
    reference: str | None,
    metric: str = "mean_response_time",
    units: Units | None = None,
    idealized: Iterable[str] = (),
    *,
    covers: str = "",
) -> list[Path]:
    """The metric against the load per policy with the bounds as lines and the load limits as
    vertical lines; and each policy's paired ratio to the reference on a log axis. At one load
    (a log replayed at its own load) a row per policy instead, the ``idealized`` ones apart.
    ``covers``: which jobs the runs cover, in each title."""
    of = f" ({covers})" if covers else ""
    stem = file_stem(metric)
    for stale in (out / "figures").glob(f"{name}-{stem}*"):  # from an earlier comparison
        stale.unlink()
    everyone = sorted({str(r["policy"]) for r in rows})
    colors = policy_colors(everyone)
    names = {p: policy_label(p) for p in everyone}
    ranked = rank(rows, metric)
    order = _legend_order(ranked, everyone)
    points, y = plot_points(rows, x=LOAD, y=metric, hue="policy", ratio_to=None)
    points.sort(key=lambda pt: order[pt.series])
    for curve in bounds:
        points += [Point(curve.name, x, v, v, v, analytic=True) for x, v in curve.values.items()]
    if len({pt.x for pt in points if not pt.analytic}) == 1:  # one load: a row per policy
        return _one_load(out, name, stem, rows, points, reference, metric, units, idealized, of)
    paths = [
        line_plot(
            points,
            out / "figures" / f"{name}-{stem}",
            x=LOAD,
            y=y,
            hue="policy",
            logy=True,
            colors=colors,
            names=names,
            vlines=[(lim.load, f"{lim.name} load limit {lim.load:.3g}") for lim in limits],
            ylabel=with_unit(metric, units or Units()),
            title=f"{name}: {label(metric)} against the load{of}",
        )[0]
    ]
    if reference is not None and len(everyone) > 1:
        ratio, y = plot_points(rows, x=LOAD, y=metric, hue="policy", ratio_to=reference)
        ratio.sort(key=lambda pt: order[pt.series])
        paths.append(
            line_plot(
                ratio,
                out / "figures" / f"{name}-{stem}-ratio-to-{reference}",
                x=LOAD,
                y=y,
                hue="policy",
                ratio=True,
                colors=colors,
                names=names,
                title=f"{name}: {label(y)}{of}",
            )[0]
        )
    return paths


def _one_load(
    out: Path,
    name: str,
    stem: str,
    rows: list[dict[str, Any]],
    points: list[Point],
    reference: str | None,
    metric: str,
    units: Units | None,
    idealized: Iterable[str],
    of: str = "",
) -> list[Path]:
    """The figures of a comparison at one load: the metric, and the ratio to the reference
    (``of``: the jobs covered, for the titles)."""
    everyone = sorted({str(r["policy"]) for r in rows})
    colors = policy_colors(everyone)
    names = {p: policy_label(p) for p in everyone}
    load = next(pt.x for pt in points if not pt.analytic)
    apart = set(idealized) | {p for p in everyone if is_bound(p)}
    common = {"x": LOAD, "hue": "policy", "colors": colors, "names": names, "apart": apart}
    paths = [
        interval_plot(
            points,
            out / "figures" / f"{name}-{stem}",
            y=metric,
            group=IDEALIZED,
            xlabel=with_unit(metric, units or Units()),
            title=f"{name}: {label(metric)} at load {load:.4g}{of}",
            **common,
        )[0]
    ]
    if reference is not None and len(everyone) > 1:
        ratio, y = plot_points(rows, x=LOAD, y=metric, hue="policy", ratio_to=reference)
        paths.append(
            interval_plot(
                ratio,
                out / "figures" / f"{name}-{stem}-ratio-to-{reference}",
                y=y,
                group=IDEALIZED,
                xlabel=label(y),
                title=f"{name}: {label(y)} at load {load:.4g}{of}",
                reference_line=1.0,
                **common,
            )[0]
        )
    return paths
