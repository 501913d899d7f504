"""Figures of a trace comparison: a Gantt chart of a window of one replay, and utilization and
queue length over time for the top policies (the engine's time series, ``run.timeseries``).

Times are on the trace's clock, shifted to start at 0 (seconds for SWF logs), drawn in hours, or
in days over a span longer than ``DAYS_FROM`` days.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from schedlab.report.figures import PALETTE, plt, policy_colors, save_figure
from schedlab.report.jobs_formats import Finished
from schedlab.report.labels import policy_label

HOUR = 3600.0
DAY = 24 * HOUR
DAYS_FROM = 10  # days of span from which time axes are in days
WINDOW_JOBS = 150  # job starts in the Gantt window


def gantt_window(start: np.ndarray, jobs: int = WINDOW_JOBS) -> tuple[float, float]:
    """A window from the median start time over the next ``jobs`` starts."""
    s = np.sort(start)
    first = s.size // 2
    last = min(first + jobs, s.size - 1)
    lo, hi = float(s[first]), float(s[last])
    return lo, hi if hi > lo else lo + 1.0


def gantt_figure(jobs: pa.Table, k: int, path: Path, title: str) -> list[Path]:
    """Each job of the window as bars over the servers it held (a pooled job's servers are
    reconstructed: :func:`schedlab.report.jobs_formats.placement`), coloured by job."""
    f = Finished.of(jobs)
    if f.start.size == 0:  # no job ran to the end: nothing to draw
        return []
    placed = f.servers(k)
    lo, hi = gantt_window(f.start)
    fig, ax = plt.subplots(figsize=(10, 5), layout="constrained")
    shown = np.flatnonzero((f.start < hi) & (f.finish > lo))
    for n, j in enumerate(shown):
        firsts, lasts = placed.intervals(int(j))
        a, b = max(f.start[j], lo) / HOUR, min(f.finish[j], hi) / HOUR
        for s0, s1 in zip(firsts, lasts, strict=True):
            ax.broken_barh(
                [(a, b - a)],
                (float(s0), float(s1 - s0 + 1)),
                facecolors=PALETTE[n % len(PALETTE)],
                edgecolor="black",
                linewidth=0.3,
            )
    ax.set_xlim(lo / HOUR, hi / HOUR)
    ax.set_ylim(0, k)
    ax.set_xlabel("time since the log's first arrival (hours)")
    ax.set_ylabel(f"server (of k = {k})")
    note = "; servers reconstructed, lowest free first" if f.pooled else ""
    ax.set_title(f"{title}: {shown.size} jobs in the window{note}", fontsize=10)
    return save_figure(fig, path, dpi=120)


def series_figure(series: dict[str, pa.Table], path: Path, title: str) -> list[Path]:
    """Utilization of the servers and the number of waiting jobs over time, one line per policy."""
    colors = policy_colors(series)
    span = max(
        (float(t.column("time").to_numpy().max(initial=0.0)) for t in series.values()), default=0.0
    )
    unit, name_of_unit = (DAY, "days") if span > DAYS_FROM * DAY else (HOUR, "hours")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, layout="constrained")
    for name, table in series.items():
        t = table.column("time").to_numpy() / unit
        util = [c for c in table.column_names if c.startswith("utilization[")]
        kw = {"color": colors[name], "label": policy_label(name), "linewidth": 0.9}
        if util:
            top.step(t, table.column(util[0]).to_numpy(), where="post", **kw)
        bottom.step(t, table.column("number_in_queue").to_numpy(), where="post", **kw)
    top.set_ylabel("utilization of the servers (fraction)")
    top.set_ylim(0, 1.05)
    bottom.set_ylabel("jobs waiting (number)")
    bottom.set_xlabel(f"time since the log's first arrival ({name_of_unit})")
    top.legend(fontsize=8)
    top.set_title(title, fontsize=10)
    return save_figure(fig, path, dpi=120)
