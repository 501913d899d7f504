"""Matplotlib figures with confidence bands; unstable points are marked, never plotted as values;
unreliable points (engine/reliability.py) are hollow markers off the line, without a band."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter


@dataclass(frozen=True)
class Point:
    series: str
    x: float
    mean: float
    lo: float
    hi: float
    stable: bool = True
    reliable: bool = True


def _minor_label(value: float, _: object) -> str:
    """Label minor log ticks at 2, 3 and 5 times a power of ten only."""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}" if round(mantissa) in (2, 3, 5) else ""


def write_csv(points: Sequence[Point], path: Path, *, x: str, y: str, hue: str) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([hue, x, y, f"{y}_ci95_lo", f"{y}_ci95_hi", "stable", "reliable"])
        for p in points:
            if p.stable:
                w.writerow([p.series, p.x, p.mean, p.lo, p.hi, True, p.reliable])
            else:
                w.writerow([p.series, p.x, "", "", "", False, False])
    return path


def line_plot(
    points: Sequence[Point],
    path: Path,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    logy: bool = False,
    reference: Sequence[tuple[float, float]] | None = None,
    reference_label: str | None = None,
    vlines: Sequence[tuple[float, str]] = (),
) -> list[Path]:
    """Plot y against x per series with 95% CI bands; writes PNG, SVG and the CSV behind them."""
    fig, ax = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    series = list(dict.fromkeys(p.series for p in points))
    unstable_drawn = unreliable_drawn = False
    for name in series:
        mine = sorted((p for p in points if p.series == name), key=lambda p: p.x)
        good = [p for p in mine if p.stable and p.reliable and math.isfinite(p.mean)]
        line = ax.plot([p.x for p in good], [p.mean for p in good], marker="o", ms=3.5, label=name)[
            0
        ]
        band = [p for p in good if math.isfinite(p.lo) and math.isfinite(p.hi)]
        if band:
            ax.fill_between(
                [p.x for p in band],
                [p.lo for p in band],
                [p.hi for p in band],
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
        doubtful = [p for p in mine if p.stable and not p.reliable and math.isfinite(p.mean)]
        if doubtful and not (logy and any(p.mean <= 0 for p in doubtful)):
            ax.plot(
                [p.x for p in doubtful],
                [p.mean for p in doubtful],
                linestyle="none",
                marker="o",
                ms=6,
                mfc="none",
                color=line.get_color(),
                label=None if unreliable_drawn else "unreliable (interval not trustworthy)",
            )
            unreliable_drawn = True
        bad = [p for p in mine if not p.stable]
        if bad:
            ax.plot(
                [p.x for p in bad],
                [1.0] * len(bad),
                linestyle="none",
                marker="x",
                ms=8,
                mew=2,
                color=line.get_color(),
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                label=None if unstable_drawn else "unstable (no steady state)",
            )
            unstable_drawn = True
    if reference:
        ax.plot(
            [r[0] for r in reference], [r[1] for r in reference], "k--", lw=1, label=reference_label
        )
    for xv, label in vlines:
        ax.axvline(xv, color="grey", linestyle=":", lw=1.2, label=label)
    if logy:
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        if high / low < 100:  # a short log range reads better with plain numbers
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if len(series) > 6:  # many series: the legend goes beside the axes, not over the lines
        fig.set_size_inches(9.5, 4.5)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    png = path.with_suffix(".png")
    svg = path.with_suffix(".svg")
    fig.savefig(png)
    fig.savefig(svg)
    plt.close(fig)
    return [png, svg, write_csv(points, path.with_suffix(".csv"), x=x, y=y, hue=hue)]
