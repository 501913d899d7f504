"""The ranking of one-replication runs (a log's replays) with their batch values: each choice's
paired interval of the ratio to the best, which it tells apart and which it cannot (issue 43
item 2), against intervals computed by hand."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats

from schedlab.report.ranking import rank, summary

METRIC = "mean_waiting_time"
BEST = [10.0, 12.0, 8.0, 11.0, 9.0]  # mean 10
BATCHES = {
    "best": BEST,
    "close": [10.5, 11.5, 8.5, 10.5, 9.5],  # mean 10.1: differences of +-0.5, holding 1
    "double": [2 * x for x in BEST],  # exactly twice the best in every batch
}


def row(policy: str, values: list[float]) -> dict:
    mean = sum(values) / len(values)
    return {
        "experiment": "x",
        "point": 0,
        "workload.load": 0.7,
        "policy": policy,
        "replication": 0,
        "stable": True,
        METRIC: mean,
        f"{METRIC}_lo": mean * 0.5,  # the runs' own wide intervals (a log's)
        f"{METRIC}_hi": mean * 1.5,
        "batch_values": json.dumps({METRIC: values}),
    }


def fieller_by_hand(a: list[float], b: list[float]) -> tuple[float, float]:
    """Solve (ā - R b̄)^2 = t^2 var(ā - R b̄) for R, with the batches' (co)variances over n."""
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    vaa = sum((x - ma) ** 2 for x in a) / (n - 1) / n
    vbb = sum((y - mb) ** 2 for y in b) / (n - 1) / n
    vab = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / (n - 1) / n
    t2 = stats.t.ppf(0.975, n - 1) ** 2
    qa, qb, qc = mb * mb - t2 * vbb, -2 * (ma * mb - t2 * vab), ma * ma - t2 * vaa
    root = math.sqrt(qb * qb - 4 * qa * qc)
    return (-qb - root) / (2 * qa), (-qb + root) / (2 * qa)


def test_the_ranking_says_which_choices_it_tells_apart() -> None:
    ranked = {r.policy: r for r in rank([row(p, v) for p, v in BATCHES.items()], METRIC)}
    assert ranked["best"].rank == 1 and ranked["best"].told_apart is None
    close = ranked["close"]
    lo, hi = fieller_by_hand(BATCHES["close"], BEST)
    assert (close.ratio_lo, close.ratio_hi) == pytest.approx((lo, hi), rel=1e-9)
    assert close.ratio_lo < 1 < close.ratio_hi and close.told_apart is False
    double = ranked["double"]
    assert double.ratio_to_best == 2 and double.told_apart is True
    assert double.ratio_lo == pytest.approx(2) and double.ratio_hi == pytest.approx(2)
    lines = summary(list(ranked.values()), [], None, METRIC)
    (line,) = [x for x in lines if "paired 95% intervals" in x]
    assert "indistinguishable from the best: close 1.01 [" in line
    assert "told apart from it: double 2 [2, 2]" in line
