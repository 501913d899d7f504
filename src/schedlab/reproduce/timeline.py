"""The driver of timeline figures: the total queue over time of one long run per series
(psychas2018 Figs. 3 and 4, psychas2019 Figs. 3(a) and 3(b)).

A long run is run whole with its time series (:mod:`schedlab.experiments.long_runs`) and stored
in the result store ``out/long_runs`` beside the metric runs of ``out/runs``: the records of
:meth:`~schedlab.reproduce.registry.Context.run` carry metrics only, not the time series these
figures plot. A figure declares its runs and rows as a :class:`Timeline`, run by
:func:`run_timeline`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from schedlab.experiments import long_runs
from schedlab.experiments.long_runs import LongRun
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import SimulationSpec
from schedlab.report.figures import Point, line_plot
from schedlab.report.points import timeseries_points
from schedlab.reproduce.driver import Figure, Panel, Plot, draw_panels
from schedlab.reproduce.registry import Context, Judge, Outcome, judged, label

LONG_RUNS = "long_runs"  # result store of the long runs with their time series

Runs = dict[str, LongRun]  # series name -> its long run


def no_extras(_result: Any) -> dict[str, Any]:
    return {}


def run_long(
    ctx: Context, spec: SimulationSpec, extras: Callable[[Any], dict[str, Any]] = no_extras
) -> LongRun:
    """``spec`` run whole with its time series and ``extras(result)``, stored in (or read back
    from) the result store ``ctx.out/long_runs``."""
    return long_runs.run_long(ResultStore(ctx.out / LONG_RUNS), spec, extras)


def long_row(series: str, run: LongRun) -> Point:
    """A long run as a claims row: its mean queue (NaN when unstable) and growth rate."""
    mean = run.mean_queue if run.stable else math.nan
    return Point(series, 0.0, mean, math.nan, math.nan, run.stable, growth=run.slope())


def value_row(series: str, value: float) -> Point:
    """A computed number (an LP value, a count) as a claims row."""
    return Point(series, 0.0, float(value), math.nan, math.nan, analytic=True)


@dataclass(frozen=True)
class Series:
    """One long run of a timeline: ``policy`` with ``params``, named by the policy's label and
    ``suffix`` (its row, its key in the runs), drawn as ``legend`` when that differs."""

    policy: str
    params: Mapping[str, Any] = field(default_factory=dict)
    suffix: str = ""
    legend: str = ""

    @property
    def name(self) -> str:
        return label(self.policy) + self.suffix


def _no_rows(_runs: Runs) -> list[Point]:
    return []


@dataclass(frozen=True)
class Timeline:
    """A figure of the total queue over time: one long run of ``example(policy, length,
    **params)`` per series (``quick_length`` with --quick: arrivals or slots, as ``example``
    takes them), each with ``extras(result)``. Its rows: ``computed()`` (numbers computed
    without simulation), one :func:`long_row` per series, then ``measured(runs)`` (from the
    runs' extras); its claims ``judge(length, runs)`` and notes ``notes(ctx, length, runs)``."""

    figure: Figure
    example: Callable[..., SimulationSpec]
    series: tuple[Series, ...]
    length: float
    quick_length: float
    title: str
    plot: Plot
    notes: Callable[[Context, float, Runs], list[str]]
    judge: Callable[[float, Runs], Judge]
    computed: Callable[[], list[Point]] = list
    measured: Callable[[Runs], list[Point]] = _no_rows
    extras: Callable[[Any], dict[str, Any]] = no_extras


def run_timeline(spec: Timeline, ctx: Context) -> Outcome:
    """Run (or read back) every series' long run, draw the queues over time in one panel (files
    named by the figure's name with underscores: psychas2018_fig3), judge the rows."""
    length = spec.quick_length if ctx.quick else spec.length
    runs = {
        s.name: run_long(ctx, spec.example(s.policy, length, **s.params), spec.extras)
        for s in spec.series
    }
    points = [
        pt
        for s in spec.series
        for pt in timeseries_points(s.legend or s.name, runs[s.name].time, runs[s.name].queue)
    ]
    figures = draw_panels(
        ctx, spec.figure.underscored, [Panel("", spec.title, points)], spec.plot, line_plot
    )
    rows = [
        *spec.computed(),
        *(long_row(name, r) for name, r in runs.items()),
        *spec.measured(runs),
    ]
    return judged(figures, rows, spec.judge(length, runs), spec.notes(ctx, length, runs))
