"""A mergeable quantile sketch with a guaranteed relative error (after DDSketch: Masson, Rim and
Lee, "DDSketch: a fast and fully-mergeable quantile sketch with relative-error guarantees", VLDB
2019).

Positive values go into logarithmic buckets: bucket i holds the values in (g^(i-1), g^i] with
g = 1 + ALPHA, so any two values of a bucket are within a relative error ALPHA of each other.
Values below ``MIN_VALUE`` (in particular the exact zeros of jobs that never wait) are counted in
bucket 0 and reported as 0 (absolute error < ``MIN_VALUE``); values above ``MAX_VALUE`` are
counted in the last bucket and flagged.

A sketch is a row of counts, so sketches merge by addition: the engine keeps one row per batch
and the run's sketch is their sum. The q-quantile reported estimates the order statistic of rank
k = floor(q (n - 1)) (0-based). It is *interpolated within its bucket* (issue 32 item 4): the c
values counted in the bucket (L, g L] are taken as spread evenly in log scale over it, the j-th of
them (0-based) at L g^((j + 1/2) / c), and the rank-k value is reported. It lies in the bucket of
the order statistic, hence within a relative error ALPHA = 0.5% of it.

Why interpolate: the bucket's midpoint (DDSketch's representative) is the same number for every
sample whose order statistic falls in that bucket, so independent batches or replications gave
identical percentiles and zero-width intervals. The interpolated value moves with the counts, so
batch (or replication) quantiles vary as the samples do and their t-interval measures it. It is
consistent: it is the quantile of the empirical distribution made log-uniform within each bucket,
which agrees with the empirical distribution at every bucket edge; as n grows it tends to the
quantile of the true distribution interpolated the same way, which lies in the true quantile's
bucket, and for a smooth density differs from it by a second-order term, about
ALPHA^2 / 8 |d ln f / d ln x| relative (f the density of ln x): far below any interval's width.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab._jit import kernel

ALPHA = 0.005  # relative error of every reported quantile (the relative width of a bucket)
GAMMA = 1.0 + ALPHA
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


def _lower_edges() -> np.ndarray:
    """The lower end L of each bucket (L, g L] (0 for bucket 0)."""
    i = np.arange(N_BUCKETS, dtype=float) + _OFFSET
    edges = GAMMA ** (i - 1.0)
    edges[0] = 0.0
    return edges


_LOWER = _lower_edges()


def quantile(counts: np.ndarray, q: float) -> float:
    """The q-quantile of the values counted in ``counts`` (NaN when empty)."""
    return float(quantiles(np.cumsum(counts)[None, :], q)[0])


def quantiles(cumulative: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of each sketch, given as rows of cumulative counts (``np.cumsum`` of the
    counts along the buckets, computed once for every q), interpolated within its bucket (module
    docstring); NaN for an empty sketch."""
    n = cumulative[:, -1]
    rank = np.floor(q * (n - 1))
    b = np.minimum((cumulative <= rank[:, None]).sum(axis=1), N_BUCKETS - 1)  # searchsorted right
    rows = np.arange(cumulative.shape[0])
    before = np.where(b > 0, cumulative[rows, np.maximum(b - 1, 0)], 0)
    count = cumulative[rows, b] - before
    with np.errstate(invalid="ignore", divide="ignore"):  # empty sketches: NaN below
        position = (rank - before + 0.5) / count
        out = _LOWER[b] * GAMMA**position
    out[n == 0] = math.nan
    return out


def overflow(counts: np.ndarray) -> int:
    """How many counted values may exceed MAX_VALUE (their quantiles are not guaranteed)."""
    return int(counts[..., -1].sum())
