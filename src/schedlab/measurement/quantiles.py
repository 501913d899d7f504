"""Quantiles read from the sketches of :mod:`schedlab.engine.sketch` after a run.

The q-quantile reported estimates the order statistic of rank k = floor(q (n - 1)) (0-based). It
is *interpolated within its bucket* (issue 32 item 4): the c values counted in the bucket (L, g L]
are taken as spread evenly in log scale over it, the j-th of them (0-based) at
L g^((j + 1/2) / c), and the rank-k value is reported. It lies in the bucket of the order
statistic, hence within a relative error ALPHA = 0.5% of it.

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

from schedlab.engine.sketch import GAMMA, N_BUCKETS, OFFSET


def _lower_edges() -> np.ndarray:
    """The lower end L of each bucket (L, g L] (0 for bucket 0)."""
    i = np.arange(N_BUCKETS, dtype=float) + OFFSET
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
