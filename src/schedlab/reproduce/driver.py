"""The shared driver of the reproductions: each figure is one declarative spec.

A reproduction module declares its figures as specs (frozen dataclasses of values: what to run,
which panels, which axes) and registers each with :func:`register_figure`, naming the driver
that runs specs of its kind (e.g. berg2020's :class:`~schedlab.reproduce.berg2020.Curves` for
Figs. 5 and 6, psychas2018's timelines for Figs. 3 and 4). The pieces every driver shares live
here: what registers a figure (:class:`Figure`), how its panels are drawn (:class:`Plot`,
:class:`Panel`, :func:`draw_panels`): no reproduction keeps its own copy of the panel loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

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


@dataclass(frozen=True)
class Plot:
    """How a figure's panels are drawn (:mod:`schedlab.report.figures`): axis titles, the
    column the series are told apart by, colours, log scale, vertical reference lines."""

    x: str
    y: str
    hue: str = "series"
    colors: Mapping[str, str] | None = None
    logy: bool = False
    vlines: tuple[tuple[float, str], ...] = ()


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
        )
    return figures


Spec = TypeVar("Spec")


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
            run=functools.partial(driver, spec),
            scale=figure.scale,
            data=figure.data,
            authors=figure.authors,
        )
    )
