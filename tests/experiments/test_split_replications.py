"""A point split into independent long replications (experiments/split.py, issue 33 item 5)
against one long run of the same total length, on an M/M/1 at rho = 0.9 (exact E[T] = 10)."""

from __future__ import annotations

import math

import pytest

from schedlab.experiments.runner import run_specs
from schedlab.experiments.split import (
    WARMUP_RELAXATIONS,
    SplitPlan,
    combine,
    plan_split,
    relaxation_time,
    split_spec,
)
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec
from tests.helpers.specs import pooled_spec

LOAD = 0.9
EXACT = 1 / (1 - LOAD)  # M/M/1 with mu = 1: E[T] = 1 / (mu - lambda)
METRIC = "mean_response_time"


def _mm1(seed: int = 7):
    return parse_spec(pooled_spec(1, LOAD, arrivals=1000, seed=seed, timeseries=0, check=False))


def _split(store: ResultStore, plan: SplitPlan):
    (records,) = run_specs([split_spec(_mm1(), plan)], store, replications=plan.pieces, workers=1)
    assert len(records) == plan.pieces
    return combine(records, METRIC)


def test_relaxation_time_is_morse_for_the_mm1_and_the_plan_adds_up():
    for rho in (0.5, 0.9, 0.999):
        assert relaxation_time(rho, 1.0) == pytest.approx(1 / (1 - math.sqrt(rho)) ** 2)
    assert relaxation_time(0.99, 10.0) == pytest.approx(5.5 * relaxation_time(0.99, 1.0))
    assert relaxation_time(1.0, 1.0) == math.inf
    plan = plan_split(0.999, 1.0, 2500, 20)
    tau = 0.999 / (1 - math.sqrt(0.999)) ** 2  # arrivals in one relaxation time, E[S] = 1
    assert plan.warmup == math.ceil(WARMUP_RELAXATIONS * tau)
    assert plan.measured == math.ceil(2500 * tau / 20)
    assert plan.total_arrivals == 20 * (plan.warmup + plan.measured)
    for p in (plan, plan_split(0.9, 1.0, 400, 8), SplitPlan(0.9, 3, 3417, 17_088)):
        # run.warmup as a fraction discards exactly the planned warm-up jobs
        assert math.floor(p.warmup_fraction * p.arrivals_per_piece) == p.warmup


def test_split_replications_agree_with_one_long_run_of_the_same_length(tmp_path):
    store = ResultStore(tmp_path)
    plan = plan_split(LOAD, 1.0, 1600, 8)
    split = _split(store, plan)
    assert split.stable and split.reliable and split.note == "t over replications"
    assert split.n == plan.pieces
    long_spec = split_spec(
        _mm1(), SplitPlan(LOAD, 1, plan.warmup, plan.total_arrivals - plan.warmup)
    )
    (records,) = run_specs([long_spec], store, workers=1)
    long = combine(records, METRIC)  # one run: its batch-means interval
    assert long.note == "batch means"
    half = (split.hi - split.lo) / 2
    assert split.lo <= long.hi and long.lo <= split.hi  # the intervals overlap
    assert abs(split.mean - long.mean) < half  # no bias beyond the split's half-width
    assert split.lo <= EXACT <= split.hi and long.lo <= EXACT <= long.hi
    assert half < 0.1 * EXACT
