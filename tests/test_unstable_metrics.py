"""Issue 28 items 1 and 8: every metric of an unstable run is masked unless declared meaningful
for an overloaded system, in the API, JSON and stored rows; intervals that are missing,
non-finite or below 0 are never reported as estimates (docs/guarantees.md)."""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from pathlib import Path

import pytest

import schedlab
from schedlab.experiments.run_rows import run_row
from schedlab.measurement.metrics import Estimate
from schedlab.measurement.reliability import interval_problem
from schedlab.report.html import _td
from schedlab.report.tables import wide_table
from schedlab.simulation.result import MEANINGFUL_WHEN_UNSTABLE, NO_ESTIMATE

EXAMPLES = Path(schedlab.__file__).parent / "examples"
EXP = {"dist": "exponential", "mean": 1.0}


def quickstart_fcfs() -> dict:
    """The quickstart at load 0.9 with FCFS: above FCFS's stability limit 0.4596."""
    spec = tomllib.loads((EXAMPLES / "quickstart.toml").read_text())
    spec["policy"] = {"name": "fcfs"}
    spec["run"] = {"arrivals": 5000, "seed": 1}
    return spec


def packing(time: str) -> dict:
    """Two classes of size 0.6 on one server (one job at a time): limit at traffic 0.6."""
    classes = [
        {"name": n, "probability": 0.5, "demand": 0.6, "duration": {"dist": "geometric", "mean": 2}}
        for n in ("a", "b")
    ]
    return {
        "cluster": {"servers": 1, "capacity": 1.0},
        "workload": {"load": 0.9, "classes": classes},
        "policy": {"name": "fifo-ff"},
        "model": {"family": "packing", "time": time},
        "run": {"arrivals": 3000, "seed": 1},
    }


def loss_forced_unstable() -> schedlab.Result:
    """A loss system is always stable; the masking rule is checked on its metric names by
    declaring one of its runs unstable."""
    spec = tomllib.loads((EXAMPLES / "dra-worst-case.toml").read_text())
    spec["run"]["arrivals"] = 3000
    stable = schedlab.simulate(spec)
    return dataclasses.replace(
        stable, metrics=dict(stable.metrics), stable=False, instability="declared for the test"
    )


def unstable_runs() -> dict[str, schedlab.Result]:
    return {
        "pooled": schedlab.simulate(quickstart_fcfs()),
        "packing": schedlab.simulate(packing("continuous")),
        "packing-slotted": schedlab.simulate(packing("slotted")),
        "loss": loss_forced_unstable(),
    }


@pytest.fixture(scope="module")
def runs() -> dict[str, schedlab.Result]:
    return unstable_runs()


def _masked(est: Estimate) -> bool:
    return math.isnan(est.mean) and all(math.isnan(x) for x in est.ci95)


@pytest.mark.parametrize("family", ["pooled", "packing", "packing-slotted", "loss"])
def test_every_metric_of_an_unstable_run_is_masked_or_declared(runs, family):
    result = runs[family]
    assert not result.stable, family
    names = list(result.metrics)
    assert {"mean_slowdown", "mean_bounded_slowdown", "mean_response_time"} <= set(names)
    assert any("[" in n and n.startswith("mean_") for n in names)  # per-class metrics too
    data = json.loads(json.dumps(result.to_dict()))["metrics"]
    row = run_row(result)
    for name in names:
        declared = name.split("[", 1)[0] in MEANINGFUL_WHEN_UNSTABLE
        est = result.metrics[name]
        if declared:
            assert math.isfinite(est.mean), name
            continue
        assert _masked(est), f"{family}: {name} = {est}"
        assert data[name] == {"mean": None, "ci95": [None, None], "reliable": False}, name
        assert all(math.isnan(row[c]) for c in (name, f"{name}_lo", f"{name}_hi")), name
        assert row[f"{name}_reliable"] is False, name


def test_quickstart_fcfs_has_no_finite_slowdown(runs):
    """The issue's example: stable false, mean_slowdown was 2.49e5 with an interval."""
    result = runs["pooled"]
    assert "stability limit" in result.instability
    for name in ("mean_slowdown", "mean_bounded_slowdown"):
        assert result.metrics[name] == NO_ESTIMATE
        assert math.isfinite(result.transient[name].mean)  # the raw average stays reachable


@pytest.mark.parametrize(
    ("lo", "hi"),
    [(math.nan, math.nan), (-math.inf, math.inf), (1.0, math.inf), (math.nan, 2.0)],
)
def test_a_missing_or_infinite_interval_is_unreliable(lo, hi):
    assert interval_problem("migration_rate", 1.0, lo, hi) is not None
    assert interval_problem("mean_slowdown", 1.0, lo, hi) is not None


def test_intervals_are_cut_at_zero_and_flagged(runs):
    """An unstable run's throughput [-0.50, 1.69] (the issue's fifo-ff case) is reported as
    [0, 1.69] with the reason; a stable run with a NaN interval is not reliable."""
    base = runs["pooled"]
    est = {"throughput": Estimate(0.6, (-0.5, 1.69)), "mean_response_time": Estimate(2, (1, 3))}
    unstable = dataclasses.replace(base, metrics=dict(est), transient={})
    assert unstable.metrics["throughput"].ci95 == (0.0, 1.69)
    assert "-0.5" in unstable.unreliable["throughput"]
    assert unstable.to_dict()["metrics"]["throughput"]["ci95"] == [0.0, 1.69]
    stable = dataclasses.replace(
        base,
        metrics={"mean_response_time": Estimate(2.0, (math.nan, math.nan))},
        stable=True,
        instability=None,
        too_short=None,
        transient={},
    )
    assert not stable.reliable and "no finite" in stable.unreliable["mean_response_time"]


def test_report_prints_the_reason_not_a_negative_interval():
    """Two replications 0.5 and 3.05: t interval [-14.4, 18.0]; the report cell shows the reason,
    no interval below 0, and is never bold as the best."""
    rows = [
        {"policy": p, "replication": i, "stable": True, "reliable": True, "m": v}
        for p, values in (("a", (0.5, 3.05)), ("b", (4.0, 4.1)))
        for i, v in enumerate(values)
    ]
    table = wide_table(rows, ["policy"], "policy", "m")
    ((_, cells),) = table.rows
    assert not cells["a"].reliable and not cells["a"].best and cells["b"].best
    html = _td(cells["a"], ratio=False)
    assert "[" not in html and "unreliable: 95% interval reaches" in html and "best" not in html
