"""Wide tables of stored runs: one row per point of the non-series axes (e.g. per load), one
column per series (policy or variant), each cell a mean with its 95% interval.

``wide_table`` gives the metric itself; ``ratio_table`` each series' paired ratio to a reference
series at the same point (the one named, or else the best series at that point), computed on
common random numbers by :func:`schedlab.experiments.stats.compare`. Cells of unstable points
hold no number; cells whose metric is unreliable at that point are flagged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from schedlab.experiments.stats import PointStat, compare, group, point_order, summarize


@dataclass(frozen=True)
class Cell:
    mean: float
    lo: float
    hi: float
    stable: bool
    reliable: bool
    runs: int
    note: str = ""  # why the cell is unreliable
    specs: int = 1  # distinct run specs pooled in the cell: 1 unless a swept axis was pooled
    best: bool = False  # least value of its row (for a metric where less is better)
    reference: bool = False  # the reference of a ratio row


@dataclass(frozen=True)
class WideTable:
    metric: str
    keys: list[str]  # the row key columns (axes other than the series)
    series: list[str]  # column values of the series axis
    rows: list[tuple[tuple[Any, ...], dict[str, Cell]]]
    ratio: bool = False


def _cell(stat: PointStat, members: list[dict[str, Any]]) -> Cell:
    return Cell(
        mean=stat.mean,
        lo=stat.lo,
        hi=stat.hi,
        stable=stat.stable,
        reliable=stat.reliable,  # judged per metric (experiments/stats.py)
        note=stat.note if not stat.reliable else "",
        runs=stat.n,
        specs=len({r.get("spec_json") for r in members}),
    )


def is_bound(policy: str) -> bool:
    """Whether a series is a resource-pooled policy (SRPT-1, Gittins-1: one server of speed k),
    which bounds the others and is never "the best" choice."""
    from schedlab.errors import SpecError
    from schedlab.policies.registry import get_policy

    try:
        return bool(get_policy(policy).hooks.resource_pooled)
    except SpecError:  # not a registered policy (a variant's label): no bound
        return False


def _mark_best(cells: dict[str, Cell]) -> dict[str, Cell]:
    finite = {
        s: c.mean
        for s, c in cells.items()
        if c.stable and c.reliable and math.isfinite(c.mean) and not is_bound(s)
    }
    if not finite:
        return cells
    best = min(finite, key=finite.get)
    return {s: (replace(c, best=True) if s == best else c) for s, c in cells.items()}


def wide_table(
    rows: list[dict[str, Any]], axes: Sequence[str], series: str | None, metric: str
) -> WideTable:
    """``metric`` per point, the ``series`` axis spread over columns (one column if None)."""
    keys = [a for a in axes if a != series]
    col = series or "__all__"
    tagged = [{**r, "__all__": "value"} for r in rows] if series is None else rows
    members = group(tagged, [*keys, col])
    stats = summarize(tagged, [*keys, col], metric)
    names = sorted({s.key[-1] for s in stats}, key=lambda v: point_order((v,)))
    table: dict[tuple, dict[str, Cell]] = {}
    for s in stats:
        table.setdefault(s.key[:-1], {})[str(s.key[-1])] = _cell(s, members[s.key])
    ordered = sorted(table.items(), key=lambda kv: point_order(kv[0]))
    return WideTable(
        metric=metric,
        keys=keys,
        series=[str(n) for n in names],
        rows=[(k, _mark_best(v)) for k, v in ordered],
    )


def ratio_table(
    rows: list[dict[str, Any]],
    axes: Sequence[str],
    series: str,
    metric: str,
    reference: str | None = None,
) -> WideTable:
    """Each series over the reference at the same point (paired on replications)."""
    keys = [a for a in axes if a != series]
    base = wide_table(rows, axes, series, metric)
    by_point = group(rows, keys)
    out_rows = []
    for key, cells in base.rows:
        ref = reference if reference in cells else None
        if ref is None:
            ref = next((s for s, c in cells.items() if c.best), None)
        if ref is None:
            continue
        mine = by_point[key]
        ref_value = next(r[series] for r in mine if str(r[series]) == ref)
        ratios: dict[str, Cell] = {
            ref: Cell(1.0, 1.0, 1.0, True, cells[ref].reliable, cells[ref].runs, reference=True)
        }
        for s in compare(mine, [], metric, series, ref_value, ratio=True):
            name = str(s.key[-1])
            ratios[name] = Cell(
                s.mean, s.lo, s.hi, s.stable, cells[name].reliable and cells[ref].reliable, s.n
            )
        for name, c in cells.items():
            if not c.stable:
                ratios[name] = Cell(math.nan, math.nan, math.nan, False, False, c.runs)
        out_rows.append((key, ratios))
    return WideTable(metric=metric, keys=keys, series=base.series, rows=out_rows, ratio=True)


def blocks(table: WideTable) -> list[WideTable]:
    """The table split into blocks of rows that have the same series (e.g. a reproduction's main
    loads with every policy, and a fine grid of loads run for two policies only): each block
    shows only its own columns; the block with the most series first."""
    groups: dict[tuple[str, ...], list] = {}
    for key, cells in table.rows:
        present = tuple(s for s in table.series if s in cells)
        groups.setdefault(present, []).append((key, cells))
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[0]), -len(kv[1])))
    return [replace(table, series=list(series), rows=rows) for series, rows in ordered]
