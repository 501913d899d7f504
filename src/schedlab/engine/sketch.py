"""A mergeable quantile sketch with a guaranteed relative error (DDSketch: Masson, Rim and Lee,
"DDSketch: a fast and fully-mergeable quantile sketch with relative-error guarantees", VLDB 2019).

Positive values go into logarithmic buckets: bucket i holds the values in (g^(i-1), g^i] with
g = (1 + ALPHA) / (1 - ALPHA), and reports the value 2 g^i / (g + 1), which is within a relative
error ALPHA of every value of the bucket. Values below ``MIN_VALUE`` (in particular the exact zeros
of jobs that never wait) are counted in bucket 0 and reported as 0 (absolute error <
``MIN_VALUE``); values above ``MAX_VALUE`` are counted in the last bucket and flagged.

A sketch is a row of counts, so sketches merge by addition: the engine keeps one row per batch
and the run's sketch is their sum. The q-quantile reported is the representative value of the
bucket holding the order statistic of rank floor(q (n - 1)) (0-based), so it lies within a
relative error ALPHA = 0.5% of that order statistic; NumPy's default (linear) quantile lies
between it and the next order statistic.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab._jit import kernel

ALPHA = 0.005  # relative error of every reported quantile
GAMMA = (1.0 + ALPHA) / (1.0 - ALPHA)
LOG_GAMMA = math.log(GAMMA)
MIN_VALUE = 1e-9
MAX_VALUE = 1e12
_OFFSET = math.floor(math.log(MIN_VALUE) / LOG_GAMMA)  # index of the bucket ending at MIN_VALUE
N_BUCKETS = math.ceil(math.log(MAX_VALUE) / LOG_GAMMA) - _OFFSET + 1


@kernel(wraparound=False, inline="always")
def bucket_of(x):
    """The bucket of a value (0 for values below MIN_VALUE, N_BUCKETS - 1 for the largest)."""
    if not x >= MIN_VALUE:  # also NaN
        return 0
    i = math.ceil(math.log(x) / LOG_GAMMA) - _OFFSET
    if i < 1:
        return 1
    return i if i < N_BUCKETS else N_BUCKETS - 1


def bucket_values() -> np.ndarray:
    """The value each bucket reports."""
    i = np.arange(N_BUCKETS, dtype=float) + _OFFSET
    values = 2.0 * GAMMA**i / (GAMMA + 1.0)
    values[0] = 0.0
    return values


_VALUES = bucket_values()


def quantile(counts: np.ndarray, q: float) -> float:
    """The q-quantile of the values counted in ``counts`` (NaN when empty)."""
    return float(quantiles(np.cumsum(counts)[None, :], q)[0])


def quantiles(cumulative: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of each sketch, given as rows of cumulative counts (``np.cumsum`` of the
    counts along the buckets, computed once for every q); NaN for an empty sketch."""
    n = cumulative[:, -1]
    rank = np.floor(q * (n - 1))
    b = (cumulative <= rank[:, None]).sum(axis=1)  # np.searchsorted(side="right") per row
    out = _VALUES[np.minimum(b, N_BUCKETS - 1)]
    out[n == 0] = math.nan
    return out


def overflow(counts: np.ndarray) -> int:
    """How many counted values may exceed MAX_VALUE (their quantiles are not guaranteed)."""
    return int(counts[..., -1].sum())
