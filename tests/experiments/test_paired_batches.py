"""Paired comparisons of runs of the same jobs by batch means (issue 43 item 2,
experiments/stats.py): Fieller's interval on known values, coverage of the true difference and
ratio of two policies whose means have closed forms, and on the KTH-SP2 excerpt a paired
interval that tells FCFS from EASY and is narrower than the unpaired one for every choice."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import schedlab
from schedlab.analysis.srpt import fcfs1_mean_response_time, srpt1_mean_response_time
from schedlab.cli import app
from schedlab.experiments.stats import fieller, paired_batches, unpaired
from schedlab.experiments.store import ResultStore
from schedlab.workloads.traces import convert
from tests.data import KTH


def test_fieller_by_hand() -> None:
    """y / x with var(y) = var(x) = 0.01, cov 0, t = 2: (2 - 1.0 R)^2 <= 0.04 (1 + R^2), i.e.
    0.96 R^2 - 4 R + 3.96 <= 0: R in [(4 - sqrt(16 - 4 * 0.96 * 3.96)) / 1.92, (4 + ...) / 1.92]."""
    lo, hi = fieller(2.0, 1.0, 0.01, 0.01, 0.0, 2.0)
    root = math.sqrt(16 - 4 * 0.96 * 3.96)
    assert lo == pytest.approx((4 - root) / 1.92) and hi == pytest.approx((4 + root) / 1.92)
    # the delta method's half-width t sqrt(var(y) + R^2 var(x)) / x is its limit as var(x) -> 0
    lo, hi = fieller(2.0, 1.0, 1e-8, 1e-8, 0.0, 2.0)
    assert (hi - lo) / 2 == pytest.approx(2 * math.sqrt(1e-8 + 4e-8), rel=1e-6)
    # a denominator not significantly different from 0: no bounded interval
    assert fieller(2.0, 1.0, 0.01, 0.3, 0.0, 2.0) == (-math.inf, math.inf)


def test_a_common_shift_cancels_in_the_pairs() -> None:
    """Batches that move together (the same jobs' burstiness in both runs) leave the difference
    of two runs with the width of what differs, not of what is shared."""
    rng = np.random.default_rng(3)
    shared = rng.exponential(10.0, 20)
    a, b = shared + 1.0 + rng.normal(0, 0.01, 20), shared
    paired = paired_batches(a, b, float(a.mean()), float(b.mean()), ratio=False)
    assert paired.lo < 1.0 < paired.hi and paired.hi - paired.lo < 0.05
    assert paired.batches == 20


N_ARRIVALS = 10_000
REPLICATIONS = 200
LOAD = 0.5


def _mm1(policy: str, seed: int) -> schedlab.Result:
    spec = {
        "cluster": {"servers": 1},
        "workload": {
            "load": LOAD,
            "classes": [
                {
                    "need": {"dist": "fixed", "value": 1},
                    "duration": {"dist": "exponential", "mean": 1.0},
                }
            ],
        },
        "policy": {"name": policy},
        "run": {"arrivals": N_ARRIVALS, "seed": seed, "warmup": 0.1, "check": False},
    }
    return schedlab.simulate(spec)


def test_coverage_of_a_known_difference_and_ratio() -> None:
    """M/M/1 at load 0.5 under FCFS and under SRPT: E[T] = 2 (Pollaczek-Khinchine) and 1.4254
    (the M/G/1-SRPT formula), both runs of a replication on the same jobs (one seed). Over 200
    replications the paired 95% intervals of the difference and of the ratio cover the true
    values a number of times inside the 99% range of Binomial(200, 0.95)."""
    law = stats.expon()
    fcfs, srpt = fcfs1_mean_response_time(law, LOAD), srpt1_mean_response_time(law, LOAD)
    covered = {"difference": 0, "ratio": 0}
    for seed in range(REPLICATIONS):
        a = _mm1("fcfs", seed).metrics["mean_response_time"]
        b = _mm1("srpt-1", seed).metrics["mean_response_time"]
        for kind, truth in (("difference", fcfs - srpt), ("ratio", fcfs / srpt)):
            pair = paired_batches(
                np.array(a.batches), np.array(b.batches), a.mean, b.mean, ratio=kind == "ratio"
            )
            covered[kind] += pair.lo <= truth <= pair.hi
    low, high = stats.binom.interval(0.99, REPLICATIONS, 0.95)
    assert low <= covered["difference"] <= high, covered
    assert low <= covered["ratio"] <= high, covered


CHOICES = ("fcfs", "easy-backfill", "sjbf", "conservative-backfill")


def test_on_the_kth_excerpt_fcfs_and_easy_are_told_apart(tmp_path: Path) -> None:
    """`schedlab compare` on the KTH-SP2 excerpt (300 jobs) at its own load: the paired interval
    of FCFS's E[T] over the best's excludes 1, and every choice's paired interval is narrower
    than the one its two runs' intervals give as if they were independent."""
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--workers", "1", "--out", str(out), "--format", "json"]
    for policy in CHOICES:
        args += ["--policy", policy]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = {r["policy"]: r for r in json.loads(result.stdout.strip().splitlines()[-1])}
    best = next(p for p, r in rows.items() if r["rank"] == 1)
    assert best != "fcfs"
    assert rows["fcfs"]["told_apart_from_best"] is True and rows["fcfs"]["ratio_lo"] > 1
    runs = {r["policy"]: r for r in ResultStore(out).read()}
    for policy in set(CHOICES) - {best}:
        loose = unpaired(runs[policy], runs[best], "mean_response_time", ratio=True)
        paired = rows[policy]
        assert paired["ratio_hi"] - paired["ratio_lo"] < loose.hi - loose.lo, policy
    record = json.loads((out / "experiment.json").read_text())
    assert any(
        "paired 95% intervals" in line and "told apart" in line for line in record["summary"]
    )
