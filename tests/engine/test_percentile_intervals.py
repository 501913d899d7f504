"""Percentile estimates are interpolated within the sketch's buckets (engine/sketch.py counts,
measurement/quantiles.py reads; issue 32 item 4): independent replications give different
percentiles, intervals have positive width, and the batch-means interval of a percentile covers the
exact quantile of an M/M/1 at its level."""

from __future__ import annotations

import itertools
import math

import numpy as np

import schedlab
from schedlab.engine import sketch
from schedlab.measurement import quantiles
from tests.helpers.specs import pooled_spec


def test_quantiles_within_one_bucket_move_with_the_rank_and_stay_in_it():
    """Values all in one bucket: the midpoint rounding reported one number for every q; the
    interpolated quantile increases with q and stays in the bucket (within ALPHA of each value)."""
    lower = sketch.GAMMA**3
    values = lower * sketch.GAMMA ** np.linspace(0.01, 0.99, 1000)
    counts = np.zeros(sketch.N_BUCKETS, dtype=np.int64)
    np.add.at(counts, [sketch.bucket_of(v) for v in values], 1)
    assert np.count_nonzero(counts) == 1
    got = [quantiles.quantile(counts, q) for q in (0.1, 0.5, 0.9, 0.99)]
    assert all(a < b for a, b in itertools.pairwise(got))
    assert all(lower < g <= lower * sketch.GAMMA for g in got)
    for q, g in zip((0.1, 0.5, 0.9, 0.99), got, strict=True):
        exact = np.sort(values)[math.floor(q * (values.size - 1))]
        assert abs(g - exact) <= sketch.ALPHA * exact


def test_two_replications_give_different_p99_and_an_interval_of_positive_width():
    """Seed 8 is a case where both replications' p99 fell in the same bucket: rounded to it they
    were equal and the replication interval was [9.254, 9.254]."""
    result = schedlab.simulate(pooled_spec(1, 0.5, arrivals=50_000, seed=8, replications=2))
    first, second = (r["p99_response_time"].mean for r in result.replications)
    assert first != second
    lo, hi = result["p99_response_time"].ci95
    assert lo < result["p99_response_time"].mean < hi


def test_percentile_interval_covers_the_exact_mm1_quantile_95_percent_of_the_time():
    """M/M/1 FCFS (one server, exponential sizes of mean 1, load 0.5): the response time is
    Exp(mu - lambda) = Exp(0.5), so its p90 is ln(10) / 0.5 (no atom, unlike the waiting time).
    Over 200 independent seeds the run's 95% batch-means interval should cover it 95% of the time.
    Tolerance: if the coverage is exactly 0.95, the number of covering runs X is Binomial(200,
    0.95) with P(X <= 179) = 0.00048 and P(X >= 199) = 0.00040 (scipy.stats.binom), so
    180 <= X <= 198 fails a correct interval less than once in a thousand; a zero-width or an
    overly wide interval falls outside. 20,000 arrivals: 100 relaxation times at load 0.5 need
    400 (measurement/reliability.py), so the default 10% warm-up leaves no visible start-up bias."""
    truth = math.log(10) / 0.5
    covered = 0
    for seed in range(1, 201):
        lo, hi = schedlab.simulate(pooled_spec(1, 0.5, arrivals=20_000, seed=seed))[
            "p90_response_time"
        ].ci95
        covered += lo <= truth <= hi
    assert 180 <= covered <= 198, covered
