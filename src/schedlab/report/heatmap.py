"""Heat maps on a grid of two parameters, one panel per setting, with markers and an overlay.

Made for berg2020's Fig. 4 (which policy wins over a (mu_I, mu_E) grid) but generic: each cell
has a value (drawn on a diverging color scale around ``center``), an optional marker (e.g. which
policy wins according to the analysis) and optional overlay symbols at some cells (e.g. the
verdict of a simulation). Writes PNG, SVG and the CSV behind the figure.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import TwoSlopeNorm

from schedlab import outputs
from schedlab.report.figures import save_figure


@dataclass(frozen=True)
class Cell:
    panel: str
    x: float
    y: float
    value: float
    marker: str = ""  # a key of the ``markers`` style table, "" for none


@dataclass(frozen=True)
class Overlay:
    panel: str
    x: float
    y: float
    symbol: str  # a key of the ``overlays`` style table
    note: str = ""


@dataclass(frozen=True)
class MarkerStyle:
    marker: str
    color: str
    label: str
    size: float = 40.0
    filled: bool = True


_LINE_MARKERS = {"+", "x", "1", "2", "3", "4", "|", "_"}


def _scatter(ax, xs: list[float], ys: list[float], style: MarkerStyle, *, zorder: int) -> None:
    """Scatter with the style's marker; line markers ('+', 'x') take a plain colour."""
    if style.marker in _LINE_MARKERS:
        ax.scatter(
            xs, ys, marker=style.marker, s=style.size, c=style.color, linewidths=1.2, zorder=zorder
        )
        return
    ax.scatter(
        xs,
        ys,
        marker=style.marker,
        s=style.size,
        facecolors=style.color if style.filled else "none",
        edgecolors=style.color,
        linewidths=1.3,
        zorder=zorder,
    )


def write_cells_csv(cells: Sequence[Cell], path: Path, *, x: str, y: str, value: str) -> Path:
    with outputs.atomic(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["panel", x, y, value, "marker"])
        for c in cells:
            w.writerow([c.panel, c.x, c.y, c.value if math.isfinite(c.value) else "", c.marker])
    return path


def heat_map(
    cells: Sequence[Cell],
    path: Path,
    *,
    x: str,
    y: str,
    value: str,
    title: str,
    markers: dict[str, MarkerStyle] | None = None,
    overlays: Sequence[Overlay] = (),
    overlay_styles: dict[str, MarkerStyle] | None = None,
    center: float = 0.0,
    log_axes: bool = True,
    diagonal: bool = False,
) -> list[Path]:
    """One panel per distinct ``Cell.panel`` (in order of appearance), cells on a (possibly log)
    grid, colour = value on a diverging scale centred at ``center``; returns PNG, SVG, CSV."""
    panels = list(dict.fromkeys(c.panel for c in cells))
    xs = sorted({c.x for c in cells})
    ys = sorted({c.y for c in cells})
    finite = [c.value for c in cells if math.isfinite(c.value)]
    span = max((abs(v - center) for v in finite), default=1.0) or 1.0
    norm = TwoSlopeNorm(vcenter=center, vmin=center - span, vmax=center + span)
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.6 * len(panels) + 0.8, 4.4), dpi=120, squeeze=False
    )
    markers = markers or {}
    overlay_styles = overlay_styles or {}
    mesh = None
    used: dict[str, MarkerStyle] = {}

    def edges(v: list[float]) -> np.ndarray:
        a = np.log(v) if log_axes else np.asarray(v, dtype=float)
        if len(a) == 1:
            mids = np.array([a[0] - 0.5, a[0] + 0.5])
        else:
            inner = (a[1:] + a[:-1]) / 2
            mids = np.concatenate([[2 * a[0] - inner[0]], inner, [2 * a[-1] - inner[-1]]])
        return np.exp(mids) if log_axes else mids

    for ax, panel in zip(axes[0], panels, strict=True):
        grid = np.full((len(ys), len(xs)), np.nan)
        mine = [c for c in cells if c.panel == panel]
        for c in mine:
            grid[ys.index(c.y), xs.index(c.x)] = c.value
        mesh = ax.pcolormesh(edges(xs), edges(ys), grid, cmap="RdBu_r", norm=norm, shading="flat")
        for key, style in markers.items():
            pts = [c for c in mine if c.marker == key]
            if pts:
                used[key] = style
                _scatter(ax, [c.x for c in pts], [c.y for c in pts], style, zorder=3)
        for key, style in overlay_styles.items():
            pts = [o for o in overlays if o.panel == panel and o.symbol == key]
            if pts:
                used["overlay:" + key] = style
                _scatter(ax, [o.x for o in pts], [o.y for o in pts], style, zorder=4)
        if diagonal:
            lo, hi = max(xs[0], ys[0]), min(xs[-1], ys[-1])
            ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls=":", zorder=2)
        if log_axes:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(xs)
            ax.set_yticks(ys)
            ax.set_xticklabels([f"{v:.3g}" for v in xs], fontsize=7, rotation=45)
            ax.set_yticklabels([f"{v:.3g}" for v in ys], fontsize=7)
            ax.minorticks_off()
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(panel, fontsize=10)
    fig.subplots_adjust(bottom=0.3, top=0.86, wspace=0.35, left=0.06, right=0.88)
    if mesh is not None:
        fig.colorbar(mesh, cax=fig.add_axes((0.905, 0.3, 0.012, 0.56)), label=value)
    handles = [
        plt.Line2D(
            [],
            [],
            linestyle="none",
            marker=s.marker,
            markersize=7,
            markerfacecolor=s.color if s.filled else "none",
            markeredgecolor=s.color,
            label=s.label,
        )
        for s in used.values()
    ]
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize=8)
    fig.suptitle(title, fontsize=10)
    png, svg = save_figure(fig, path)
    return [png, svg, write_cells_csv(cells, path.with_suffix(".csv"), x=x, y=y, value=value)]
