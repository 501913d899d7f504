"""Matplotlib figures with confidence bands, written as PNG, SVG and the CSV behind them.

What a reader sees, and why:

* simulated series: markers joined by a thin line, with the 95% interval as a shaded band;
* analytic series (``Point.analytic``: formulas, bounds): neutral-coloured dashed lines without
  markers, so they never read as simulated data;
* one fixed style per policy across every figure of an experiment: :func:`policy_colors` maps the
  sorted set of the experiment's series to a fixed palette, and every figure takes that mapping;
  a colour comes with its own marker and line style (:func:`series_style`), so that up to 16
  series stay distinct without colour (colour-blind readers, grey-scale prints:
  tests/report/test_figure_styles.py);
* on a log axis an interval band reaching 0 or below is clipped at the bottom of the data, not
  dropped;
* unstable points (no steady state) estimate nothing and are never drawn as values: each unstable
  series gets its own row of ``x`` markers in a strip reserved above the data (never clipped at the
  edge, never on top of another series' markers);
* unreliable points (stable, but the interval cannot be trusted, e.g. a lower bound <= 0 for a
  positive metric) are drawn at their value with a hollow marker and no band; at one load
  (:func:`interval_plot`) with their interval as a dashed bar;
* the legend's entries for those two markers are neutral-coloured (they mean the same for every
  series);
* ratio plots (``ratio=True``) have a logarithmic axis and a y = 1 line;
* a figure saved inside :func:`variant_titles` (a reproduction's ``--quick`` run) says so in its
  title;
* every text of a saved figure is typeset (:func:`typeset`): the papers' symbols as math text
  (``F^g`` -> $F^g$, ``F*`` -> $F^*$, ``rho`` -> $\rho$, ...), a paper's key as its author-year
  citation (``psychas2018`` -> Psychas & Ghaderi 2018).

The CSV keeps the machine names given as ``x``, ``y`` and ``hue``; the axes show their human
labels (:mod:`schedlab.report.labels`) unless ``xlabel``/``ylabel`` are given.
"""

from __future__ import annotations

import csv
import math
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from schedlab import outputs
from schedlab.papers import PAPERS
from schedlab.report.labels import Units, with_unit

# Colour-blind-safe first: the seven Okabe-Ito hues and Tol's indigo, which stay apart under the
# three dichromacies (tests/report/test_figure_styles.py); then Tol's wine and brown and the tab20
# hues that are not grey, told apart by marker and line style (series_style).
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#332288",
    "#F0E442",
    "#882255",
    "#661100",
    "#8C564B",
    "#98DF8A",
    "#17BECF",
    "#9467BD",
    "#BCBD22",
    "#D62728",
    "#2CA02C",
    "#AEC7E8",
    "#FFBB78",
    "#C49C94",
)
NEUTRAL = "#555555"
# The i-th palette colour goes with MARKERS[i % 8] and LINESTYLES[(i // 8) % 2]: 16 series differ
# in marker or line style alone. No "x": it marks unstable points.
MARKERS = ("o", "s", "^", "D", "v", "P", "h", "*")
LINESTYLES = ("-", "--")
ANALYTIC_STYLES = (
    ("black", "--"),
    ("#444444", "-."),
    ("#444444", ":"),
    ("#777777", (0, (6, 2, 1, 2, 1, 2))),
)
UNSTABLE_LABEL = "unstable: no steady state (marked above the data)"
UNRELIABLE_LABEL = "hollow marker: unreliable estimate (interval not trustworthy)"
UNRELIABLE_BAR_LABEL = (
    "hollow marker, dashed bar: unreliable estimate (its 95% interval, not trustworthy)"
)
_STRIP_ROW = 0.045  # height of one unstable-marker row, as a fraction of the axes


@dataclass(frozen=True)
class Point:
    series: str
    x: float
    mean: float
    lo: float
    hi: float
    stable: bool = True
    reliable: bool = True
    analytic: bool = False
    growth: float = math.nan  # an unstable run's queue growth per unit time (claims only)


def policy_colors(names: Iterable[str]) -> dict[str, str]:
    """One colour per name, from the sorted set of names (the same set gives the same colours in
    every figure; names beyond the palette's 20 reuse it in order)."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(set(names)))}


@dataclass(frozen=True)
class SeriesStyle:
    color: str
    marker: str
    linestyle: str


def series_style(color: str) -> SeriesStyle:
    """The marker and line style that go with a palette colour (any other colour: the first)."""
    i = PALETTE.index(color) if color in PALETTE else 0
    return SeriesStyle(color, MARKERS[i % len(MARKERS)], LINESTYLES[(i // len(MARKERS)) % 2])


def _minor_label(value: float, _: object) -> str:
    """Label minor log ticks at 2, 3 and 5 times a power of ten only."""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}" if round(mantissa) in (2, 3, 5) else ""


_VARIANT: ContextVar[str] = ContextVar("figure_variant", default="")


@contextmanager
def variant_titles(variant: str) -> Iterator[None]:
    """Every figure saved inside says ``variant`` (e.g. "quick variant") in its title."""
    token = _VARIANT.set(variant)
    try:
        yield
    finally:
        _VARIANT.reset(token)


def _mark_variant(fig: plt.Figure) -> None:
    """Append the current variant to the figure's title (its suptitle, else each axes title)."""
    variant = _VARIANT.get()
    if not variant:
        return
    sup = fig._suptitle  # matplotlib keeps the suptitle here (None when unset)
    if sup is not None and sup.get_text():
        sup.set_text(f"{sup.get_text()} [{variant}]")
        return
    for ax in fig.axes:
        if ax.get_title():
            ax.set_title(f"{ax.get_title()} [{variant}]", fontsize=ax.title.get_fontsize())


# The papers' symbols, written in plain text by the code, and their math text (matplotlib).
_SYMBOLS = (
    (re.compile(r"(?<![\w$])F\^g(?!\w)"), r"$F^g$"),
    (re.compile(r"(?<![\w$])F\*"), r"$F^*$"),
    (re.compile(r"(?<![\w$])C\^2(?!\w)"), r"$C^2$"),
    (re.compile(r"\b(rho|alpha|beta|zeta|lambda|tau)\b"), r"$\\\1$"),
    (re.compile(r"\b(mu|lambda)_([A-Za-z])\b"), r"$\\\1_\2$"),
    (re.compile(r"\bbeta_bar\b"), r"$\\bar{\\beta}$"),
    (re.compile("ρ"), r"$\\rho$"),
    (re.compile("τ"), r"$\\tau$"),
    (re.compile("λ"), r"$\\lambda$"),
)
_PAPER_KEY = re.compile(r"\b(" + "|".join(PAPERS) + r")\b")


def math_text(text: str) -> str:
    """``text`` with the papers' symbols as matplotlib math text and each paper key as its
    citation (``psychas2022 Fig. 3: ... F^g`` -> ``Psychas & Ghaderi 2022, Fig. 3: ... $F^g$``);
    a text that already holds math text is left as it is."""
    if "$" in text:
        return text
    text = re.sub(r"\b(" + "|".join(PAPERS) + r") (Fig\.|Table|§)", r"\1, \2", text)
    text = _PAPER_KEY.sub(lambda m: PAPERS[m[1]].cite, text)
    for pattern, symbol in _SYMBOLS:
        text = pattern.sub(symbol, text)
    return text.replace("$$", "")  # adjacent symbols: one math span


def typeset(fig: plt.Figure) -> None:
    """Every title, axis label and legend entry of ``fig`` through
    :func:`math_text`."""
    texts = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
        legend = ax.get_legend()
        if legend is not None:
            texts += [*legend.get_texts(), legend.get_title()]
    for t in texts:
        t.set_text(math_text(t.get_text()))


def save_figure(fig: plt.Figure, path: Path, **options: object) -> list[Path]:
    """Write ``fig`` as PNG and SVG beside ``path`` (through schedlab.outputs) and close it; the
    three targets (with the CSV written next) are checked before anything is written. Its texts
    are typeset (:func:`typeset`); inside :func:`variant_titles` the title says the variant."""
    try:
        _mark_variant(fig)
        typeset(fig)
        outputs.make_dirs(path.parent)
        for suffix in (".png", ".svg", ".csv"):
            outputs.check_target(path.with_suffix(suffix))
        written = []
        for suffix in (".png", ".svg"):
            with outputs.atomic(path.with_suffix(suffix)) as tmp:
                fig.savefig(tmp, format=suffix[1:], **options)
            written.append(path.with_suffix(suffix))
        return written
    finally:
        plt.close(fig)


def write_csv(points: Sequence[Point], path: Path, *, x: str, y: str, hue: str) -> Path:
    with outputs.atomic(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([hue, x, y, f"{y}_ci95_lo", f"{y}_ci95_hi", "stable", "reliable", "analytic"])
        for p in points:
            if p.stable:
                w.writerow([p.series, p.x, p.mean, p.lo, p.hi, True, p.reliable, p.analytic])
            else:
                w.writerow([p.series, p.x, "", "", "", False, False, p.analytic])
    return path


def _finite(v: float) -> bool:
    return v is not None and math.isfinite(v)


def _strip_row(rows: int) -> float:
    """Height of one unstable-marker row: the strip takes at most a quarter of the axes."""
    return min(_STRIP_ROW, 0.25 / rows)


def _reserve_strip(ax, rows: int) -> float:
    """Raise the top of the y axis so ``rows`` marker rows fit above the data (in the axis' own
    scale: linear, log or symlog); returns the axes fraction where the strip starts."""
    bottom = 1.0 - rows * _strip_row(rows) - 0.02
    scale = ax.yaxis.get_transform()
    with np.errstate(over="ignore", invalid="ignore"):
        for limits in (ax.get_ylim(), (1.0, 10.0)):  # no finite point at all: an empty axis
            lo, hi = limits
            a, b = scale.transform(np.array([lo, hi], dtype=float))
            top = scale.inverted().transform(np.array([a + (b - a) / bottom]))[0]
            if math.isfinite(top) and math.isfinite(lo) and (lo > 0 or ax.get_yscale() != "log"):
                break
    ax.set_ylim(lo, float(top))
    return bottom


def line_plot(
    points: Sequence[Point],
    path: Path,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    logy: bool = False,
    ratio: bool = False,
    colors: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    reference: Sequence[tuple[float, float]] | None = None,
    reference_label: str | None = None,
    vlines: Sequence[tuple[float, str]] = (),
) -> list[Path]:
    """Plot y against x per series (module docstring for the conventions); returns the PNG, SVG
    and CSV paths. ``colors`` maps series to colours (default: :func:`policy_colors` of this
    figure's simulated series); pass the experiment's mapping so a policy keeps its colour.
    ``names`` gives a series' legend label (the CSV keeps the series name)."""
    names = names or {}
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=120)
    series = list(dict.fromkeys(p.series for p in points))
    analytic = [s for s in series if any(p.analytic for p in points if p.series == s)]
    simulated = [s for s in series if s not in analytic]
    colors = dict(colors or policy_colors(simulated))
    logy = logy or ratio
    # a log axis cannot show a mean of 0 (an empty queue): switch to a symmetric log axis, linear
    # below the smallest positive value, rather than drop such points
    positive = [p.mean for p in points if _finite(p.mean) and p.mean > 0]
    symlog = logy and not ratio and any(_finite(p.mean) and p.mean <= 0 for p in points)
    positive_only = logy and not symlog
    # the bottom of the data on a log axis: bands reaching 0 or below are clipped there
    log_floor = min(positive, default=1.0) / 2
    unstable_rows: list[tuple[str, list[float]]] = []
    unreliable_drawn = False
    for name in simulated:
        mine = sorted((p for p in points if p.series == name), key=lambda p: p.x)
        good = [
            p for p in mine if p.stable and _finite(p.mean) and (p.mean > 0 or not positive_only)
        ]
        color = colors.get(name) or PALETTE[len(colors) % len(PALETTE)]
        colors.setdefault(name, color)
        style = series_style(color)
        ax.plot(
            [p.x for p in good],
            [p.mean for p in good],
            color=color,
            lw=1.2,
            ls=style.linestyle,
            marker=style.marker,
            ms=4.5,
            markevery=[i for i, p in enumerate(good) if p.reliable],
            label=names.get(name, name),
        )
        solid = [p for p in good if p.reliable]
        shaky = [p for p in good if not p.reliable]
        if shaky:
            ax.plot(
                [p.x for p in shaky],
                [p.mean for p in shaky],
                style.marker,
                ms=6.5,
                mfc="white",
                mec=color,
                mew=1.5,
                linestyle="none",
            )
            unreliable_drawn = True
        band = [p for p in solid if _finite(p.lo) and _finite(p.hi)]
        if band:
            ax.fill_between(
                [p.x for p in band],
                [max(p.lo, log_floor) if positive_only else p.lo for p in band],
                [p.hi for p in band],
                color=color,
                alpha=0.18,
                linewidth=0,
            )
        bad = [p.x for p in mine if not p.stable]
        if bad:
            unstable_rows.append((name, bad))
    for i, name in enumerate(analytic):
        mine = sorted(
            (p for p in points if p.series == name and _finite(p.mean)), key=lambda p: p.x
        )
        color, style = ANALYTIC_STYLES[i % len(ANALYTIC_STYLES)]
        ax.plot(
            [p.x for p in mine],
            [p.mean for p in mine],
            color=color,
            ls=style,
            lw=1.6,
            label=names.get(name, name),
        )
    if reference:
        ax.plot(
            [r[0] for r in reference], [r[1] for r in reference], "k--", lw=1, label=reference_label
        )
    for xv, text in vlines:
        ax.axvline(xv, color="grey", linestyle=":", lw=1.2, label=text)
    if symlog:
        ax.set_yscale("symlog", linthresh=min(positive, default=1.0))
        ax.set_ylim(bottom=0)
    elif logy:
        ax.set_yscale("log")
    if ratio:
        ax.axhline(1.0, color="black", lw=0.9, zorder=1)
        low, high = ax.get_ylim()
        ax.set_ylim(min(low, 0.9), max(high, 1.1))
    if positive_only:
        low, high = ax.get_ylim()
        if high / low < 100:  # a short log range reads better with plain numbers
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label))
    if unstable_rows:
        bottom = _reserve_strip(ax, len(unstable_rows))
        ax.plot([0, 1], [bottom, bottom], transform=ax.transAxes, color="#bbbbbb", lw=0.8, ls=":")
        for i, (name, xs) in enumerate(unstable_rows):
            ax.plot(
                xs,
                [1.0 - (i + 0.5) * _strip_row(len(unstable_rows))] * len(xs),
                linestyle="none",
                marker="x",
                ms=6,
                mew=1.8,
                color=colors[name],
                transform=ax.get_xaxis_transform(),
            )
    handles, labels = ax.get_legend_handles_labels()
    if unstable_rows:
        handles.append(Line2D([], [], ls="none", marker="x", ms=6, mew=1.8, color=NEUTRAL))
        labels.append(UNSTABLE_LABEL)
    if unreliable_drawn:
        handles.append(
            Line2D([], [], ls="none", marker="o", ms=6.5, mfc="white", mec=NEUTRAL, mew=1.5)
        )
        labels.append(UNRELIABLE_LABEL)
    ax.set_xlabel(xlabel or with_unit(x, Units()))
    ax.set_ylabel(ylabel or with_unit(y, Units()))
    ax.set_title(textwrap.fill(title, 90), fontsize=10)
    ax.grid(True, alpha=0.3)
    if len(handles) > 5:  # many entries: the legend goes beside the axes, not over the lines
        fig.set_size_inches(10.0, 4.6)
        ax.legend(
            handles,
            labels,
            fontsize=8,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            borderaxespad=0,
        )
    else:
        ax.legend(handles, labels, fontsize=8, loc="best")
    fig.tight_layout()
    png, svg = save_figure(fig, path, bbox_inches="tight")
    return [png, svg, write_csv(points, path.with_suffix(".csv"), x=x, y=y, hue=hue)]


def errorbar_plot(
    points: Sequence[Point],
    path: Path,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    colors: Mapping[str, str] | None = None,
    logy: bool = False,
    vlines: Sequence[tuple[float, str]] = (),
    xlabel: str | None = None,
    ylabel: str | None = None,
) -> list[Path]:
    """Analysis against simulation: analytic series (``Point.analytic``) as lines, simulated
    series as separate points with 95% error bars (never joined: nothing was simulated between
    them), unstable simulated points as ``x`` markers at the top. ``colors`` maps a series to its
    colour (so an analysis curve and the simulation of the same policy share one); default:
    :func:`policy_colors`. Returns the PNG, SVG and CSV paths."""
    fig, ax = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    series = list(dict.fromkeys(p.series for p in points))
    colors = dict(colors or policy_colors(series))
    for name in series:
        mine = sorted((p for p in points if p.series == name), key=lambda p: p.x)
        color = colors.get(name)
        style = series_style(color) if color else series_style(PALETTE[0])
        good = [p for p in mine if p.stable and _finite(p.mean)]
        if any(p.analytic for p in mine):
            ax.plot([p.x for p in good], [p.mean for p in good], color=color, lw=1.6, label=name)
            continue
        ax.errorbar(
            [p.x for p in good],
            [p.mean for p in good],
            yerr=[[p.mean - p.lo for p in good], [p.hi - p.mean for p in good]],
            fmt=style.marker,
            ms=4.5,
            mfc="white",
            color=color,
            capsize=3,
            label=f"{name} (95% CI)",
        )
        bad = [p for p in mine if not p.stable]
        if bad:
            ax.plot(
                [p.x for p in bad],
                [1.0] * len(bad),
                "x",
                color=color,
                ms=8,
                mew=2,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                label=f"{name}: unstable",
            )
    for xv, text in vlines:
        ax.axvline(xv, color="grey", linestyle=":", lw=1.2, label=text)
    if logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label))
    ax.set_xlabel(xlabel or with_unit(x, Units()))
    ax.set_ylabel(ylabel or with_unit(y, Units()))
    ax.set_title(textwrap.fill(title, 90), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png, svg = save_figure(fig, path)
    return [png, svg, write_csv(points, path.with_suffix(".csv"), x=x, y=y, hue=hue)]


def write_rows(rows: Sequence[Mapping[str, object]], path: Path) -> Path:
    """The table behind a figure, one CSV row per dict (columns: the first row's keys)."""
    outputs.make_dirs(path.parent)
    with outputs.atomic(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def interval_plot(
    points: Sequence[Point],
    path: Path,
    *,
    x: str,
    y: str,
    hue: str,
    title: str,
    xlabel: str,
    colors: Mapping[str, str],
    names: Mapping[str, str],
    apart: Iterable[str] = (),
    group: str = "",
    reference_line: float | None = None,
) -> list[Path]:
    """A comparison at one load: one row per series, best (least) first, its mean with the 95%
    interval as a horizontal bar (a line against one load would be a column of dots); an
    unreliable mean (hollow marker) keeps its interval as a dashed bar, which says how far the
    data are from telling the series apart. Series in ``apart`` are drawn below a dashed rule
    labelled ``group``; analytic values (bounds) as dashed vertical lines; unstable series say
    so in place of a value. A log axis when the values span more than a factor 20. The legend
    goes below the axes and their label, never over them. Returns the PNG, SVG and CSV paths."""
    apart = set(apart)
    simulated = [p for p in points if not p.analytic]
    analytic = [p for p in points if p.analytic and _finite(p.mean)]

    def key(p: Point) -> tuple:
        return (p.series in apart, not (p.stable and _finite(p.mean)), p.mean, p.series)

    rows = sorted(simulated, key=key)
    fig, ax = plt.subplots(
        figsize=(8.5, 0.9 + 0.32 * max(len(rows), 3)), dpi=120, layout="constrained"
    )
    values = [p.mean for p in rows if p.stable and _finite(p.mean) and p.mean > 0]
    values += [p.mean for p in analytic if p.mean > 0]
    logx = bool(values) and max(values) / min(values) > 20
    for i, p in enumerate(rows):
        color = colors.get(p.series, NEUTRAL)
        style = series_style(color)
        if not (p.stable and _finite(p.mean)):
            ax.text(
                0.01,
                i,
                "unstable: no steady state",
                transform=ax.get_yaxis_transform(),
                va="center",
                fontsize=8,
                color=color,
            )
            continue
        if _finite(p.lo) and _finite(p.hi):
            lo = max(p.lo, min(values) / 2) if logx else p.lo
            bar = {"lw": 2.2, "alpha": 0.6} if p.reliable else {"lw": 1.4, "ls": "--"}
            ax.plot([lo, p.hi], [i, i], color=color, **bar)
        ax.plot(
            [p.mean],
            [i],
            style.marker,
            ms=7,
            color=color,
            mfc=color if p.reliable else "white",
            mec=color,
            mew=1.5,
        )
    split = sum(1 for p in rows if p.series not in apart)
    if apart and 0 < split < len(rows):
        ax.axhline(split - 0.5, color="#999999", lw=0.8, ls="--")
        ax.text(
            0.99,
            split - 0.45,
            group,
            transform=ax.get_yaxis_transform(),
            ha="right",
            va="top",
            fontsize=8,
            color="#555555",
        )
    for j, p in enumerate(analytic):
        color, ls = ANALYTIC_STYLES[j % len(ANALYTIC_STYLES)]
        ax.axvline(p.mean, color=color, ls=ls, lw=1.3, label=names.get(p.series, p.series))
    if reference_line is not None:
        ax.axvline(reference_line, color="black", lw=0.9)
    if logx:
        ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [names.get(p.series, p.series) for p in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(xlabel)
    ax.set_title(textwrap.fill(title, 90), fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if any(not p.reliable for p in rows if p.stable):
        handles.append(
            Line2D([], [], color=NEUTRAL, ls="--", lw=1.4, marker="o", ms=6.5, mfc="white", mew=1.5)
        )
        labels.append(UNRELIABLE_BAR_LABEL)
    if handles:  # below the axes and the axis label (constrained layout): over nothing
        fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncol=2)
    png, svg = save_figure(fig, path, bbox_inches="tight")
    return [png, svg, write_csv(points, path.with_suffix(".csv"), x=x, y=y, hue=hue)]
