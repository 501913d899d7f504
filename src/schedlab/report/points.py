"""From stored runs to plotted points: mean and 95% interval per series and x (or a paired ratio).

Used by ``schedlab plot``, ``schedlab report`` and ``schedlab compare``. A point is unstable when
any of its runs is; it is unreliable when its plotted metric is (judged per metric,
experiments/stats.py: a run's other metrics never flag it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from schedlab.errors import SchedlabError, unknown_name
from schedlab.experiments.stats import PointStat, compare, summarize
from schedlab.report.figures import Point


class PlotError(SchedlabError):
    """The requested plot does not fit the stored runs (unknown column, mixed points)."""


def _plain(columns: set[str]) -> list[str]:
    return [c for c in columns if not c.endswith(("_lo", "_hi", "_reliable")) and c != "spec_json"]


def _point(stat: PointStat, series: Any, x: Any) -> Point:
    """A plotted point; an unbounded interval (Fieller's, when the reference is not
    significantly above 0) is drawn as none."""
    bounded = math.isfinite(stat.lo) and math.isfinite(stat.hi)
    return Point(
        series=str(series),
        x=float(x),
        mean=stat.mean,
        lo=stat.lo if bounded else math.nan,
        hi=stat.hi if bounded else math.nan,
        stable=stat.stable,
        reliable=stat.reliable,
    )


def plot_points(
    rows: list[dict[str, Any]], *, x: str, y: str, hue: str, ratio_to: str | None
) -> tuple[list[Point], str]:
    """The plotted points (mean and 95% CI per hue and x) and the y column's name (for a ratio,
    ``y / y[hue=ratio_to]``, which :func:`schedlab.report.labels.label` renders)."""
    columns = set().union(*(r.keys() for r in rows))
    for option, value in (("--x", x), ("--y", y), ("--hue", hue)):
        if value not in columns:
            raise PlotError(f"{option}: {unknown_name('column', value, _plain(columns))}")
    groups: dict[tuple, set] = {}
    for r in rows:
        groups.setdefault((r.get(hue), r.get(x)), set()).add((r["experiment"], r["point"]))
    mixed = [k for k, pts in groups.items() if len(pts) > 1]
    if mixed:
        raise PlotError(
            f"runs at {hue}={mixed[0][0]}, {x}={mixed[0][1]} come from {len(groups[mixed[0]])} "
            "different points: narrow them with --where or choose another --hue"
        )
    if ratio_to is not None:
        if ratio_to not in {str(r.get(hue)) for r in rows}:
            raise PlotError(f"--ratio-to: no runs with {hue} = '{ratio_to}'")
        ref = next(r.get(hue) for r in rows if str(r.get(hue)) == ratio_to)
        stats = compare(rows, [x], y, hue, ref, ratio=True)
        points = [_point(s, s.key[1], s.key[0]) for s in stats]
        return points, f"{y} / {y}[{hue}={ratio_to}]"
    stats = summarize(rows, [hue, x], y)
    points = [_point(s, s.key[0], s.key[1]) for s in stats]
    return points, y


def timeseries_points(
    series: str, time: np.ndarray, values: np.ndarray, samples: int = 400
) -> list[Point]:
    """A time series thinned to at most ``samples`` evenly spaced observations (first and last
    kept), as points without interval: one sample path, drawn as it was observed."""
    idx = np.unique(np.linspace(0, time.size - 1, min(samples, time.size)).astype(int))
    return [Point(series, float(time[i]), float(values[i]), math.nan, math.nan) for i in idx]
