"""Issue 15 items 1, 11, 12: no finite mean from an unstable run, known stability limits, a
trend test that sees a growing queue, and unreliable intervals flagged (docs/guarantees.md)."""

from __future__ import annotations

import json
import math

import pytest

import schedlab
from schedlab.analysis.saturated import fcfs_saturated
from schedlab.experiments.runner import Task, run_tasks
from schedlab.experiments.stats import summarize
from schedlab.experiments.store import ResultStore
from schedlab.measurement.reliability import interval_problem, relaxation_arrivals
from schedlab.measurement.stability import trend
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.simulate import prepare, run_loop
from schedlab.simulation.stability_limits import known_limit
from tests.helpers.specs import pooled_spec

K4_CLASSES = [
    {"probability": 1 / 3, "need": n, "duration": {"dist": "exponential", "mean": 1.0}}
    for n in (1, 2, 4)
]


def k4_spec(load: float, seed: int, arrivals: int = 50_000, **run) -> dict:
    """Issue 15 item 11: k = 4, needs uniform on {1, 2, 4}, Exp(1) durations, FCFS."""
    return pooled_spec(
        4, load, policy="fcfs", arrivals=arrivals, classes=K4_CLASSES, seed=seed, **run
    )


def test_k4_limit_is_the_saturated_ctmc_value():
    model = compile_model(parse_spec(k4_spec(0.8, 1)))
    limit = known_limit(model)
    exact = fcfs_saturated(4, [1, 2, 4], [1 / 3] * 3, [1.0] * 3).load_limit
    assert limit.load == pytest.approx(exact, rel=1e-12)
    assert limit.load == pytest.approx(0.7756, abs=1e-4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_issue_example_is_unstable_with_no_finite_mean(seed):
    result = schedlab.simulate(k4_spec(0.8, seed))
    assert not result.stable
    assert "stability limit 0.7756" in result.instability
    for name in ("mean_response_time", "mean_number_in_system", "p99_response_time"):
        est = result[name]
        assert math.isnan(est.mean) and all(math.isnan(x) for x in est.ci95), name
        assert math.isfinite(result.transient[name].mean)  # the raw average stays reachable
    assert math.isfinite(result["throughput"].mean)  # the saturated throughput is meaningful
    data = result.to_dict()
    assert data["metrics"]["mean_response_time"]["mean"] is None
    assert "transient_averages" not in data
    assert result.to_dict(transient=True)["transient_averages"]["mean_response_time"]["mean"] > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trend_test_alone_sees_the_growing_queue(seed):
    """Without the known limit, the regression trend test flags the issue's example too."""
    model = compile_model(parse_spec(k4_spec(0.8, seed)))
    run = prepare(model)
    run_loop(run)
    assert trend(run.st.acc) is not None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trend_test_quiet_below_the_limit(seed):
    model = compile_model(parse_spec(k4_spec(0.7, seed, arrivals=100_000)))
    run = prepare(model)
    run_loop(run)
    assert trend(run.st.acc) is None


@pytest.mark.parametrize("seed", range(1, 9))
def test_load_exactly_one_is_unstable_for_every_seed(seed):
    spec = pooled_spec(1, 1.0, arrivals=20_000, seed=seed, allow_unstable=True)
    result = schedlab.simulate(spec)
    assert not result.stable
    assert math.isnan(result["mean_response_time"].mean)


def test_packing_capacity_lp_limit():
    """Sizes 0.4 and 0.6 equally likely on one unit server: rho* = 2 (paper 000 §VII-A1), i.e.
    traffic intensity 2 * 0.5 = 1 at the limit; sizes {0.6, 0.6}: one job at a time, rho* = 1,
    traffic intensity 0.6."""
    base = {
        "cluster": {"servers": 1, "capacity": 1.0},
        "workload": {
            "load": 0.5,
            "classes": [
                {"demand": 0.6, "duration": {"dist": "exponential", "mean": 1.0}},
            ],
        },
        "policy": {"name": "fifo-ff"},
        "model": {"family": "packing"},
        "run": {"arrivals": 20_000, "seed": 1},
    }
    limit = known_limit(compile_model(parse_spec(base)))
    assert limit.load == pytest.approx(0.6, rel=1e-9)
    assert "capacity LP" in limit.source
    base["workload"]["load"] = 0.62
    result = schedlab.simulate(base)
    assert not result.stable and "capacity LP" in result.instability


def test_sweep_store_has_no_number_for_unstable_points(tmp_path):
    store = ResultStore(tmp_path)
    specs = [parse_spec(k4_spec(load, 1, arrivals=20_000)) for load in (0.5, 0.8)]
    run_tasks(
        [Task.of(s, 0, experiment="x", point=i) for i, s in enumerate(specs)], store, workers=1
    )
    con = store.connect()
    rows = con.execute(
        "select load, mean_response_time, stable, reliable from runs order by load"
    ).fetchall()
    assert rows[0][2] is True and math.isfinite(rows[0][1])
    assert rows[1][2] is False and math.isnan(rows[1][1]) and rows[1][3] is False
    (avg,) = con.execute("select avg(mean_response_time) from runs").fetchone()
    assert math.isnan(avg)  # an aggregate cannot hide the unstable point


def test_relaxation_rule_matches_the_reproductions():
    from schedlab.reproduce.grosof2023 import long_enough

    for load in (0.5, 0.9, 0.98):
        needed = relaxation_arrivals(load, 1.0)
        assert long_enough(load, "exponential", math.ceil(needed))
        assert not long_enough(load, "exponential", math.floor(needed) - 1)


@pytest.mark.parametrize(
    ("name", "mean", "lo", "hi", "flagged"),
    [
        ("mean_response_time", 20.4, -1.54, 42.3, True),  # the issue's sf-vs-fcfs interval
        ("mean_response_time", 20.4, 0.0, 40.8, True),
        ("mean_response_time", 20.0, 9.0, 31.0, True),  # half-width 55%
        ("mean_response_time", 20.0, 11.0, 29.0, False),
        ("mean_waiting_time", 0.01, 0.0, 0.02, True),  # 100% half-width
        ("mean_waiting_time", 0.0, 0.0, 0.0, False),
        ("mean_number_in_queue", 1.0, -0.1, 2.1, True),
        ("utilization[servers]", 0.5, 0.49, 0.51, False),
    ],
)
def test_interval_problems(name, mean, lo, hi, flagged):
    assert (interval_problem(name, mean, lo, hi) is not None) is flagged


def test_short_run_is_unreliable_everywhere(tmp_path):
    """M/M/1 at 0.95 needs 100 relaxation times = 40,000 arrivals: 5,000 are flagged."""
    short = schedlab.simulate(pooled_spec(1, 0.95, arrivals=5_000, seed=3))
    assert short.stable and not short.reliable
    assert "relaxation" in short.unreliable["mean_response_time"]
    assert "relaxation" in short.unreliable["utilization[servers]"]
    store = ResultStore(tmp_path)
    run_tasks([Task.of(short.spec, 0, experiment="x", point=0)], store, workers=1)
    (row,) = store.read()
    assert row["reliable"] is False and row["long_enough"] is False
    assert "relaxation" in row["unreliability"]
    (stat,) = summarize([row], ["experiment"], "mean_response_time")
    assert stat.stable and not stat.reliable and "relaxation" in stat.note


def test_cli_table_never_prints_an_unreliable_interval(tmp_path):
    from typer.testing import CliRunner

    from schedlab.cli import app

    spec = tmp_path / "s.toml"
    spec.write_text(
        "[cluster]\nservers = 1\n[workload]\nload = 0.95\n[[workload.classes]]\nneed = 1\n"
        'duration = { dist = "exponential", mean = 1.0 }\n[policy]\nname = "fcfs"\n'
        "[run]\narrivals = 3000\nseed = 3\n"
    )
    result = CliRunner().invoke(app, ["simulate", "--spec", str(spec)])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "mean_response_time" in x)
    assert "unreliable" in line and "[" not in line.split("mean_response_time")[1]
    data = json.loads(CliRunner().invoke(app, ["simulate", "--spec", str(spec), "--json"]).output)
    assert data["reliable"] is False


def test_plots_mark_unreliable_points(tmp_path):
    """An unreliable point is drawn as a hollow marker without a band; its CSV row says so."""
    import csv

    from schedlab.report.figures import Point, line_plot

    points = [
        Point("FCFS", 0.3, 2.0, 1.9, 2.1),
        Point("FCFS", 0.45, 20.4, -1.54, 42.3, reliable=False),
        Point("FCFS", 0.6, float("nan"), float("nan"), float("nan"), stable=False),
    ]
    paths = line_plot(points, tmp_path / "fig", x="load", y="T", hue="policy", title="t", logy=True)
    rows = list(csv.DictReader(paths[2].open()))
    assert [r["reliable"] for r in rows] == ["True", "False", "False"]
    assert [r["stable"] for r in rows] == ["True", "True", "False"]


def test_single_replication_comparison_of_short_runs_is_flagged_unreliable():
    """One replication per policy: the ratio uses the delta method and keeps the short-run flag."""
    from schedlab.experiments.stats import compare

    def row(policy: str, mean: float) -> dict:
        return {
            "load": 0.8,
            "policy": policy,
            "replication": 0,
            "stable": True,
            "long_enough": False,
            "m": mean,
            "m_lo": mean * 0.9,
            "m_hi": mean * 1.1,
        }

    [stat] = compare([row("a", 4.0), row("b", 2.0)], ["load"], "m", "policy", "b", ratio=True)
    assert stat.mean == 2.0 and stat.lo < 2.0 < stat.hi
    assert stat.reliable is False and "relaxation-time" in stat.note
