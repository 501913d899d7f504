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
from scipy import stats

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
    fit = stats.linregress(mid, level)
    growth = fit.slope * (mid[-1] - mid[0])
    mean = max(float(level.mean()), 1.0)
    t = fit.slope / fit.stderr if fit.stderr > 0 else math.copysign(math.inf, fit.slope)
    if t < TREND_T or growth < TREND_GROWTH * mean:
        return None
    return (
        f"number in system grows through the run ({level[0]:.4g} -> {level[-1]:.4g}; slope "
        f"{t:.1f} standard errors above 0, growth {growth / mean:.2f} x the mean level): no "
        "steady state at this load"
    )
