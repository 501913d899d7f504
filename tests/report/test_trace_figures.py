"""The report's figures of a trace comparison (issue 30 item 8): the Gantt chart draws each job
of the window over as many servers as it needs, and the time series figure writes PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pyarrow as pa

from schedlab.report import trace_figures
from schedlab.report.trace_figures import gantt_figure, gantt_window, series_figure


def jobs_table() -> pa.Table:
    """The placement example of test_jobs_formats (k = 4), in hours."""
    h = 3600.0
    return pa.table(
        {
            "job": [0, 1, 2, 3],
            "arrival": [0.0, 0.0, 1 * h, 2 * h],
            "demand[servers]": [2.0, 2.0, 2.0, 1.0],
            "start": [0.0, 0.0, 5 * h, 8 * h],
            "finish": [10 * h, 5 * h, 8 * h, 12 * h],
            "server": [0, 0, 0, 0],
            "status": ["done"] * 4,
        }
    )


def test_gantt_bars_cover_each_jobs_servers(tmp_path: Path, monkeypatch) -> None:
    """Sorted starts 0, 0, 5, 8 h: the window runs from the median start (5 h) over the next
    3 starts, capped at the last (8 h). In it: A (servers 0-1, clipped to 5-8 h) and C (2-3);
    B ends at 5 h and D starts at 8 h, so neither is drawn."""
    drawn = []
    monkeypatch.setattr(trace_figures, "save_figure", lambda fig, path, **kw: drawn.append(fig))
    monkeypatch.setattr(trace_figures, "WINDOW_JOBS", 3)
    assert gantt_window(jobs_table()["start"].to_numpy(), 3) == (5 * 3600.0, 8 * 3600.0)
    gantt_figure(jobs_table(), 4, tmp_path / "g", "by hand")
    (ax,) = drawn[0].axes
    boxes = [c.get_paths()[0].get_extents() for c in ax.collections]
    plt.close(drawn[0])
    bars = sorted((b.x0, b.x1, b.y0, b.y1) for b in boxes)
    assert np.allclose(bars, [(5.0, 8.0, 0.0, 2.0), (5.0, 8.0, 2.0, 4.0)])


def test_series_figure_writes_png_and_svg(tmp_path: Path) -> None:
    t = pa.table(
        {
            "time": np.linspace(0, 3600 * 48, 20),
            "number_in_queue": np.arange(20.0),
            "utilization[servers]": np.linspace(0, 1, 20),
        }
    )
    paths = series_figure({"fcfs": t, "easy-backfill": t}, tmp_path / "s", "by hand")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size for p in paths)
