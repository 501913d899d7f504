"""The figure of a comparison at one load (report/figures.py interval_plot; issue 43 item 6):
every point's 95% interval is drawn, an unreliable one too (dashed), and the legend covers
neither the axis label nor a tick label. Checked on the figure as drawn, before it is saved."""

from __future__ import annotations

import pytest

from schedlab.report import figures
from schedlab.report.figures import Point, interval_plot, policy_colors

# A log replayed once at its own load: every mean but one unreliable (half-width 54-65% of it)
MEANS = {
    "fcfs": (9000, 0.6),
    "easy": (4100, 0.62),
    "conservative": (4400, 0.58),
    "sjbf": (3900, 0.65),
}
MEANS |= {"srpt": (2500, 0.3)}


@pytest.fixture
def drawn(tmp_path, monkeypatch):
    """The figure and axes of a one-load comparison, drawn as they are saved."""
    seen = []
    save = figures.save_figure

    def keep(fig, path, **options):
        fig.canvas.draw()
        seen.append((fig.axes[0], layout(fig, fig.canvas.get_renderer())))
        return save(fig, path, **options)

    monkeypatch.setattr(figures, "save_figure", keep)
    points = [
        Point(n, 0.6276, m, m * (1 - h), m * (1 + h), reliable=h < 0.5)
        for n, (m, h) in MEANS.items()
    ]
    interval_plot(
        points,
        tmp_path / "wait",
        x="load",
        y="mean_waiting_time",
        hue="policy",
        title="a log: mean waiting time at load 0.6276",
        xlabel="mean waiting time E[T_Q] (s)",
        colors=policy_colors(MEANS),
        names={n: n for n in MEANS},
        apart={"srpt"},
        group="bounds and idealized policies",
    )
    ((ax, boxes),) = seen
    return points, ax, boxes


def layout(fig, renderer):
    """Where the legends and the axis and tick labels (those drawn) are, in pixels, as drawn."""
    ax = fig.axes[0]
    texts = [ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
    labels = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    legends = [*fig.legends, *([ax.get_legend()] if ax.get_legend() else [])]
    return {
        "legends": [legend.get_window_extent(renderer) for legend in legends],
        "labels": [b for b in labels if fig.bbox.fully_overlaps(b)],
    }


def test_every_points_interval_is_drawn_an_unreliable_one_dashed(drawn):
    points, ax, _ = drawn
    bars = {
        (float(line.get_xdata()[0]), float(line.get_xdata()[1])): line.get_linestyle()
        for line in ax.lines
        if len(line.get_xdata()) == 2
    }
    for p in points:
        assert bars[(p.lo, p.hi)] == ("-" if p.reliable else "--"), p.series


def test_the_legend_covers_no_axis_label(drawn):
    _, _, boxes = drawn
    assert boxes["legends"] and len(boxes["labels"]) > 5
    for legend in boxes["legends"]:
        assert not any(legend.overlaps(b) for b in boxes["labels"])
