"""The library pieces reproductions declare with: interval rescaling and sequential sizing
(experiments/stats.py), thinned time series and analysis-vs-simulation figures (report/), and
single long runs kept in a result store (experiments/long_runs.py)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from scipy import stats

from schedlab.experiments.stats import joint_widening, replications_needed, rescaled_interval
from schedlab.report.figures import Point, errorbar_plot, write_rows
from schedlab.report.points import timeseries_points


def test_rescaled_interval_is_the_t_interval_at_another_level():
    values = np.array([1.0, 2.0, 4.0, 3.5, 2.5])
    mean, se, dof = values.mean(), values.std(ddof=1) / math.sqrt(values.size), values.size - 1
    half95 = stats.t.ppf(0.975, dof) * se
    for level in (0.9, 0.95, 0.999):
        lo, hi = rescaled_interval(mean, half95, dof, level)
        want = stats.t.interval(level, dof, loc=mean, scale=se)
        assert (lo, hi) == pytest.approx(want, rel=1e-12)
    assert all(math.isnan(v) for v in rescaled_interval(1.0, 0.1, 0, 0.99))


def test_replications_needed_scales_as_one_over_root_n():
    # dof large: t ~ z, so a half-width 2x the target needs 4x the replications, +30%
    n = replications_needed(10.0, 0.2, 10**6, 8, 0.01, 1000)
    assert n == math.ceil(8 * 4 * 1.3)
    assert replications_needed(10.0, 0.2, 10**6, 8, 0.01, 20) == 20  # capped
    assert replications_needed(10.0, 0.1001, 10**6, 8, 0.01, 1000) == 11  # ceil(8*1.3026)


def test_timeseries_points_keep_both_ends_and_thin_evenly():
    t = np.arange(1001.0)
    pts = timeseries_points("q", t, 2 * t, samples=11)
    assert [p.x for p in pts] == [float(x) for x in range(0, 1001, 100)]
    assert all(p.mean == 2 * p.x and math.isnan(p.lo) for p in pts)
    assert len(timeseries_points("q", t[:5], t[:5])) == 5


def test_errorbar_plot_writes_png_svg_and_csv(tmp_path):
    points = [Point("A analysis", x, x * x, x * x, x * x, analytic=True) for x in (1, 2, 3)]
    points += [Point("A simulation", 2, 4.1, 3.9, 4.3), Point("A simulation", 3, 0, 0, 0, False)]
    paths = errorbar_plot(
        points,
        tmp_path / "fig",
        x="x",
        y="mean_response_time",
        hue="series",
        title="t",
        colors={"A analysis": "red", "A simulation": "red"},
        logy=True,
    )
    assert [p.suffix for p in paths] == [".png", ".svg", ".csv"] and all(p.exists() for p in paths)
    rows = list(csv.DictReader(paths[2].open()))
    assert [r["analytic"] for r in rows] == ["True"] * 3 + ["False"] * 2
    assert rows[-1]["stable"] == "False" and rows[-1]["mean_response_time"] == ""


def test_write_rows_round_trips(tmp_path):
    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    path = write_rows(rows, tmp_path / "sub" / "t.csv")
    assert list(csv.DictReader(path.open())) == [{"a": "1", "b": "x"}, {"a": "2", "b": "y"}]


def test_joint_widening_is_bonferroni():
    assert joint_widening(1) == pytest.approx(1.0)
    assert joint_widening(0) == pytest.approx(1.0)
    # 5 intervals, each at 99%: z_{0.995} / z_{0.975}
    assert joint_widening(5) == pytest.approx(2.5758293035489 / 1.959963984540054, rel=1e-12)
