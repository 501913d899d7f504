"""A mergeable quantile sketch with a guaranteed relative error (after DDSketch: Masson, Rim and
Lee, "DDSketch: a fast and fully-mergeable quantile sketch with relative-error guarantees", VLDB
2019): its buckets, and the compiled :func:`bucket_of` the engine counts a value with.

Positive values go into logarithmic buckets: bucket i holds the values in (g^(i-1), g^i] with
g = 1 + ALPHA, so any two values of a bucket are within a relative error ALPHA of each other.
Values below ``MIN_VALUE`` (in particular the exact zeros of jobs that never wait) are counted in
bucket 0 and reported as 0 (absolute error < ``MIN_VALUE``); values above ``MAX_VALUE`` are
counted in the last bucket and flagged.

A sketch is a row of counts, so sketches merge by addition: the engine keeps one row per batch
and the run's sketch is their sum. Its quantiles are read after the run by
:mod:`schedlab.measurement.quantiles`.
"""

from __future__ import annotations

import math

from schedlab._jit import kernel

ALPHA = 0.005  # relative error of every reported quantile (the relative width of a bucket)
GAMMA = 1.0 + ALPHA
LOG_GAMMA = math.log(GAMMA)
MIN_VALUE = 1e-9
MAX_VALUE = 1e12
OFFSET = math.floor(math.log(MIN_VALUE) / LOG_GAMMA)  # index of the bucket ending at MIN_VALUE
N_BUCKETS = math.ceil(math.log(MAX_VALUE) / LOG_GAMMA) - OFFSET + 1


@kernel(wraparound=False, inline="always")
def bucket_of(x):
    """The bucket of a value (0 for values below MIN_VALUE, N_BUCKETS - 1 for the largest)."""
    if not x >= MIN_VALUE:  # also NaN
        return 0
    i = math.ceil(math.log(x) / LOG_GAMMA) - OFFSET
    if i < 1:
        return 1
    return i if i < N_BUCKETS else N_BUCKETS - 1
