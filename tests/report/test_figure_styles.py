"""Figures a reviewer accepts (issue 32 item 5): up to 16 series stay distinct for colour-blind
readers, bounds are unmarked dashed lines, log-axis bands are clipped rather than dropped.

Colour-blind vision is simulated with colorspacious (Machado et al. 2009, severity 100) for the
three dichromacies; two series are told apart when their colours stay apart (CAM02-UCS distance
above JND) or their markers or line styles differ. The styles are checked as drawn: the test
records what :func:`line_plot` passes to matplotlib."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from colorspacious import cspace_convert, deltaE
from matplotlib.axes import Axes

from schedlab.report.figures import PALETTE, Point, line_plot, policy_colors, series_style

JND = 10.0  # CAM02-UCS distance below which two line colours are easily confused
CVD = [
    {"name": "sRGB1+CVD", "cvd_type": t, "severity": 100}
    for t in ("deuteranomaly", "protanomaly", "tritanomaly")
]


def _rgb(color: str) -> np.ndarray:
    return np.array([int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)])


def colour_distance(a: str, b: str) -> float:
    """The smallest CAM02-UCS distance of two colours over the three simulated dichromacies."""
    return min(
        float(deltaE(cspace_convert(_rgb(a), cvd, "sRGB1"), cspace_convert(_rgb(b), cvd, "sRGB1")))
        for cvd in CVD
    )


@pytest.fixture
def drawn(monkeypatch) -> list[dict]:
    calls: list[dict] = []
    original = Axes.plot

    def spy(self, *args, **kwargs):
        calls.append({"args": args, **kwargs})
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy)
    return calls


def _series(n: int) -> list[Point]:
    return [
        Point(f"policy{i:02d}", x, 1.0 + i + x, 0.9 + i + x, 1.1 + i + x)
        for i in range(n)
        for x in (0.5, 0.7, 0.9)
    ]


def test_sixteen_series_stay_distinct_without_colour(tmp_path, drawn):
    points = _series(16)
    line_plot(points, tmp_path / "f.png", x="load", y="mean_response_time", hue="policy", title="t")
    styles = {
        c["label"]: (c["color"], c["marker"], c["ls"])
        for c in drawn
        if str(c.get("label", "")).startswith("policy")
    }
    assert len(styles) == 16
    for (a, sa), (b, sb) in itertools.combinations(styles.items(), 2):
        same_shape = sa[1:] == sb[1:]
        assert not same_shape or colour_distance(sa[0], sb[0]) > JND, (a, b, sa, sb)
    assert (
        len({s[1:] for s in styles.values()}) == 16
    )  # marker and line style alone tell them apart


def test_the_first_colours_stay_apart_in_colour_blind_simulation():
    """Okabe-Ito first: the first 8 colours differ under every dichromacy (so small figures do
    not rely on markers)."""
    for a, b in itertools.combinations(PALETTE[:8], 2):
        assert colour_distance(a, b) > JND, (a, b)


def test_a_bound_is_an_unmarked_dashed_line(tmp_path, drawn):
    points = _series(2) + [
        Point("bound", x, 1.0, math.nan, math.nan, analytic=True) for x in (0.5, 0.9)
    ]
    line_plot(points, tmp_path / "f.png", x="load", y="mean_response_time", hue="policy", title="t")
    (bound,) = [c for c in drawn if c.get("label") == "bound"]
    assert bound.get("marker") in (None, "", "none") and bound["ls"] not in ("-", "solid")


def test_a_band_reaching_zero_on_a_log_axis_is_clipped_not_dropped(tmp_path, monkeypatch):
    bands = []
    original = Axes.fill_between
    monkeypatch.setattr(
        Axes,
        "fill_between",
        lambda self, x, lo, hi, **kw: (
            bands.append((list(lo), list(hi))) or original(self, x, lo, hi, **kw)
        ),
    )
    points = [Point("a", x, 2.0 * x, -1.0, 4.0 * x) for x in (1.0, 2.0, 4.0)]
    line_plot(
        points,
        tmp_path / "f.png",
        x="load",
        y="mean_response_time",
        hue="policy",
        title="t",
        logy=True,
    )
    ((lo, _hi),) = bands
    assert len(lo) == 3 and min(lo) > 0


def test_a_colour_keeps_its_style_in_every_figure():
    names = [f"p{i}" for i in range(20)]
    assert all(series_style(c) == series_style(c) for c in policy_colors(names).values())
    assert series_style(PALETTE[8]).linestyle != series_style(PALETTE[0]).linestyle


def test_one_load_is_a_row_per_policy_best_first_the_idealized_apart(tmp_path, monkeypatch):
    """A comparison at one load (a log at its own load) draws a row per policy, least first,
    the idealized ones below the rule, instead of a column of dots against the load."""
    from schedlab.report.figures import interval_plot

    ticks = []
    original = Axes.set_yticks
    monkeypatch.setattr(
        Axes,
        "set_yticks",
        lambda self, pos, labels=None, **kw: (
            ticks.append(list(labels)) or original(self, pos, labels, **kw)
        ),
    )
    means = {"fcfs": 9.0, "easy": 3.0, "sjbf": 2.5, "srpt": 1.0, "unstable-one": math.nan}
    points = [Point(n, 0.7, m, m * 0.9, m * 1.1, stable=math.isfinite(m)) for n, m in means.items()]
    colors = policy_colors(means)
    interval_plot(
        points,
        tmp_path / "f.png",
        x="load",
        y="mean_response_time",
        hue="policy",
        title="t",
        xlabel="E[T]",
        colors=colors,
        names={n: n for n in means},
        apart={"srpt"},
        group="bounds and idealized policies",
    )
    assert ticks == [["sjbf", "easy", "fcfs", "unstable-one", "srpt"]]
