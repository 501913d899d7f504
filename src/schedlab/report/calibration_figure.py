"""Logged against replayed wait per job, plain and calibrated replay (``schedlab trace
calibrate``; issue 47 item 3)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import NamedTuple

import numpy as np

from schedlab.report.figures import PALETTE, plt, save_figure

FLOOR = 1.0  # waits below one second drawn at 1 s (log axes)
TITLE_WIDTH = 55  # characters per line of a panel's title (a fitted context can be long)


class Waits(NamedTuple):
    """One replay's judged jobs: their logged and replayed waits, aligned (a replay can judge
    fewer jobs than another: one it never started has no wait)."""

    logged: np.ndarray
    replayed: np.ndarray


def calibration_figure(replays: dict[str, Waits], path: Path, title: str) -> list[Path]:
    """One point per judged job: its logged wait (x) against its replayed wait (y) under each
    replay of ``replays`` (name -> its :class:`Waits`), log axes, waits under :data:`FLOOR`
    drawn at it; the diagonal is a replay that reproduces the log."""
    fig, axes = plt.subplots(
        1, len(replays), figsize=(5 * len(replays), 4.6), layout="constrained", sharey=True
    )
    axes = np.atleast_1d(axes)
    top = max(float(np.maximum(np.concatenate(w), FLOOR).max()) for w in replays.values())
    for n, (ax, (name, waits)) in enumerate(zip(axes, replays.items(), strict=True)):
        x, y = np.maximum(waits.logged, FLOOR), np.maximum(waits.replayed, FLOOR)
        ax.scatter(x, y, s=2, alpha=0.25, color=PALETTE[n % len(PALETTE)])
        ax.plot([FLOOR, top], [FLOOR, top], color="black", linewidth=0.8, label="replay = log")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("logged wait (s)")
        ax.set_title(textwrap.fill(name, TITLE_WIDTH), fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel(f"replayed wait (s; below {FLOOR:g} s drawn at {FLOOR:g} s)")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path, dpi=110)
