"""The shared driver of the reproductions: each figure is one declarative spec.

A reproduction module declares its figures as specs (frozen dataclasses of values: what to run,
which panels, which axes) and registers each with :func:`register_figure`, naming the driver
that runs specs of its kind (e.g. berg2020's :class:`~schedlab.reproduce.berg2020.Curves` for
Figs. 5 and 6, psychas2018's timelines for Figs. 3 and 4, grosof2023's load sweeps for Figs.
2-4); :func:`resized` gives a registered figure with some fields of its spec changed (a smaller
figure, for tests). The pieces every driver shares live
here: what registers a figure (:class:`Figure`), how its panels are drawn (:class:`Plot`,
:class:`Panel`, :func:`draw_panels`), how a grid of policies by x values is run
(:func:`run_grid`) and read (:func:`record_point`), and an analytic curve beside the simulated
points (:class:`Analytic`): no reproduction keeps its own copy of these loops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from schedlab.model.spec import SimulationSpec
from schedlab.report.figures import Point, errorbar_plot
from schedlab.reproduce.registry import AuthorsScale, Context, Outcome, Reproduction, register


@dataclass(frozen=True)
class Figure:
    """What registers a figure (:class:`~schedlab.reproduce.registry.Reproduction`): ``name``
    (e.g. "berg2020-fig5", also the stem of its files), ``paper`` (author-year key),
    ``figure`` ("Fig. 5"), ``title``, ``scale`` (what paper scale and --quick mean), ``data``
    (files it reads from the data folder), ``authors`` (a longer scale, when it has one)."""

    name: str
    paper: str
    figure: str
    title: str
    scale: str = ""
    data: tuple[str, ...] = ()
    authors: AuthorsScale | None = None

    @property
    def underscored(self) -> str:
        """The name with underscores: the stem of the files of the psychas papers' figures
        (psychas2018_fig3)."""
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class Plot:
    """How a figure's panels are drawn (:mod:`schedlab.report.figures`): axis titles, the
    column the series are told apart by, colours, log scale, vertical reference lines, and
    ``ratio`` for a ratio axis (:func:`~schedlab.report.figures.line_plot`'s, log with the line
    at 1)."""

    x: str
    y: str
    hue: str = "series"
    colors: Mapping[str, str] | None = None
    logy: bool = False
    vlines: tuple[tuple[float, str], ...] = ()
    ratio: bool = False


@dataclass(frozen=True)
class Panel:
    """One panel: the suffix of its files (``name + suffix``), its title and its points."""

    suffix: str
    title: str
    points: Sequence[Point]


Draw = Callable[..., list[Path]]


def draw_panels(
    ctx: Context, stem: str, panels: Sequence[Panel], plot: Plot, draw: Draw = errorbar_plot
) -> list[Path]:
    """Every panel drawn by ``draw`` (:func:`~schedlab.report.figures.errorbar_plot`,
    :func:`~schedlab.report.figures.line_plot`) to ``ctx.out / (stem + suffix)``; the files."""
    figures: list[Path] = []
    for panel in panels:
        figures += draw(
            list(panel.points),
            ctx.out / f"{stem}{panel.suffix}",
            x=plot.x,
            y=plot.y,
            hue=plot.hue,
            title=panel.title,
            colors=plot.colors,
            logy=plot.logy,
            vlines=plot.vlines,
            **({"ratio": True} if plot.ratio else {}),
        )
    return figures


@dataclass(frozen=True)
class Analytic:
    """A curve computed, not simulated (a formula or a bound): ``series`` with ``value(x)`` at
    each x, drawn as a line beside the simulated points (``Point.analytic``)."""

    series: str
    value: Callable[[float], float]

    def points(self, xs: Sequence[float]) -> list[Point]:
        return [Point(self.series, x, v, v, v, analytic=True) for x in xs for v in [self.value(x)]]


Key = tuple[str, float]  # (policy, x)


def run_grid(
    ctx: Context,
    spec_of: Callable[[str, float], SimulationSpec],
    policies: Sequence[str],
    xs: Sequence[float],
    *,
    experiment: str,
    replications: int = 1,
) -> dict[Key, list[dict[str, Any]]]:
    """Every policy at every x (``spec_of(policy, x)``), run together through
    :meth:`Context.run`: each (policy, x)'s records, one per replication."""
    keys = [(p, x) for x in xs for p in policies]
    records = ctx.run(
        [spec_of(p, x) for p, x in keys], replications=replications, experiment=experiment
    )
    return dict(zip(keys, records, strict=True))


def record_point(
    series: str, x: float, record: Mapping[str, Any], metric: str = "mean_response_time"
) -> Point:
    """A run's ``metric`` with its 95% interval (``<metric>_lo``, ``<metric>_hi``) and its
    stability, as the point of ``series`` at ``x``."""
    return Point(
        series,
        x,
        record[metric],
        record[f"{metric}_lo"],
        record[f"{metric}_hi"],
        bool(record["stable"]),
    )


Spec = TypeVar("Spec")


@dataclass(frozen=True)
class FigureRun(Generic[Spec]):
    """How a registered figure runs: ``driver(spec, ctx)``."""

    driver: Callable[[Spec, Context], Outcome]
    spec: Spec

    def __call__(self, ctx: Context) -> Outcome:
        return self.driver(self.spec, ctx)


def register_figure(
    figure: Figure, spec: Spec, driver: Callable[[Spec, Context], Outcome]
) -> Reproduction:
    """Register ``figure``, run as ``driver(spec, ctx)``."""
    return register(
        Reproduction(
            name=figure.name,
            paper=figure.paper,
            figure=figure.figure,
            title=figure.title,
            run=FigureRun(driver, spec),
            scale=figure.scale,
            data=figure.data,
            authors=figure.authors,
        )
    )


def resized(entry: Reproduction, **changes: Any) -> Reproduction:
    """``entry`` (a figure registered by :func:`register_figure`) with its spec's fields
    changed (:func:`dataclasses.replace`; e.g. fewer loads, shorter runs): the same figure at
    another size, for tests."""
    run = entry.run
    if not isinstance(run, FigureRun):
        raise TypeError(f"reproduction {entry.name!r} is not run from a figure spec")
    return dataclasses.replace(
        entry, run=FigureRun(run.driver, dataclasses.replace(run.spec, **changes))
    )
