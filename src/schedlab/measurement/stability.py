"""Is a run in steady state? The trend test on the number in system over the measurement window.

The time-averaged number in system per batch (the B batch accumulators over the window,
``run.batches``) is regressed on the batch mid-times by least squares. The run is unstable when
the slope is at least ``TREND_T`` standard errors above zero *and* the growth it implies over the
window is at least ``TREND_GROWTH`` times the mean level. A queue that grows linearly (a drift
lambda - X > 0) gives a t-statistic that grows like the square root of the run and a growth
comparable to twice the mean level; a stable queue gives a slope indistinguishable from zero.
The thresholds were chosen from, and the miss and false-alarm rates are measured by,
``benchmarks/bench_stability.py`` (docs/guarantees.md). The known stability limits of the
analysis are the other verdict: :mod:`schedlab.simulation.stability_limits`.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.engine import constants as K

TREND_T = 5.0  # slope / standard error
TREND_GROWTH = 0.5  # slope * window length / mean level


def trend(acc: np.ndarray) -> str | None:
    """The instability reason when the number in system grows through the window (module
    docstring: regression slope vs its standard error, and growth relative to the level)."""
    time = acc[:, K.A_TIME]
    if time.size < 4 or np.any(time <= 0):
        return None
    level = acc[:, K.A_SYSTEM] / time
    mid = np.cumsum(time) - time / 2
    slope, stderr = least_squares_slope(mid, level)
    growth = slope * (mid[-1] - mid[0])
    mean = max(float(level.mean()), 1.0)
    t = slope / stderr if stderr > 0 else math.copysign(math.inf, slope)
    if t < TREND_T or growth < TREND_GROWTH * mean:
        return None
    return (
        f"number in system grows through the run ({level[0]:.4g} -> {level[-1]:.4g}; slope "
        f"{t:.1f} standard errors above 0, growth {growth / mean:.2f} x the mean level): no "
        "steady state at this load"
    )


def least_squares_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Slope of the least-squares line of ``y`` on ``x`` and its standard error, computed as
    ``scipy.stats.linregress`` computes them (the same operations, so the same floats; without
    importing scipy.stats, about a second of every run's start-up)."""
    ssxm, ssxym, _, ssym = np.cov(x, y, bias=1).flat
    if ssxm == 0.0:  # every x equal (linregress refuses it)
        return math.nan, math.nan
    if ssym == 0.0:
        r = math.nan if ssxym == 0 else 0.0
    else:
        r = min(max(ssxym / np.sqrt(ssxm * ssym), -1.0), 1.0)
    slope = ssxym / ssxm
    stderr = np.sqrt((1 - r**2) * ssym / ssxm / (x.size - 2))
    return float(slope), float(stderr)
