"""Issue 30 items 3-6: a log replay's HPC metrics, its own load, intervals from one replay, and a
finite replay that is never called unstable.

Independent truths: the per-job table of the same run (quantiles by NumPy, makespan by min/max),
the M/M/1 mean response time 1 / (mu - lambda) (analysis/closed_forms.py) for the interval's
coverage, and the spec's own numbers for the log's load.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.analysis.closed_forms import mmc_mean_response_time
from schedlab.cli import app
from schedlab.engine import sketch
from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.simulate import run_model
from schedlab.workloads.traces import convert
from tests.data import KTH
from tests.helpers.paths import ROOT

runner = CliRunner()
QUICKSTART = ROOT / "src" / "schedlab" / "examples" / "quickstart.toml"


@pytest.fixture(scope="module")
def kth(tmp_path_factory) -> Path:
    """The 300-job KTH-SP2 excerpt, converted (time unit: s; k = 100)."""
    out = tmp_path_factory.mktemp("kth") / "kth.parquet"
    convert(KTH, "swf", out)
    return out


def replay(path: Path, policy: str = "fcfs", **run) -> dict:
    return {
        "cluster": {"servers": 100},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}, **run.pop("wl", {})},
        "model": {"family": "pooled"},
        "policy": {"name": policy},
        "run": {"allow_unstable": True, "jobs": True, "batches": 4, **run},
    }


def test_quantiles_of_wait_and_bounded_slowdown_and_the_makespan_match_the_per_job_table(kth):
    r = schedlab.simulate(replay(kth, "easy-backfill"))
    jobs = r.jobs.to_pandas()
    done = jobs[jobs["status"] == "done"] if "status" in jobs else jobs
    wait = np.sort((done["start"] - done["arrival"]).to_numpy())
    response = (done["finish"] - done["arrival"]).to_numpy()
    bsld = np.sort(np.maximum(response / np.maximum(done["work"].to_numpy(), 10.0), 1.0))
    for q in (0.5, 0.95, 0.99):
        rank = math.floor(q * (len(wait) - 1))  # the sketch's order statistic (engine/sketch.py)
        for name, values in (("waiting_time", wait), ("bounded_slowdown", bsld)):
            got = r.metrics[f"p{round(q * 100)}_{name}"].mean
            exact = values[rank]
            assert got == pytest.approx(exact, rel=sketch.ALPHA, abs=sketch.MIN_VALUE), name
    assert r.metrics["mean_bounded_slowdown"].mean == pytest.approx(bsld.mean())
    makespan = done["finish"].max() - done["arrival"].min()
    assert r.metrics["makespan"].mean == pytest.approx(makespan)
    assert r.time_unit == "s" and r.to_dict()["slowdown_threshold"] == 10.0
    assert 0 < r.metrics["utilization[servers]"].mean < 1


def test_bounded_slowdown_percentiles_are_never_below_one(kth):
    """Most jobs of a resource-pooled SRPT replay have bounded slowdown exactly 1; the sketch's
    bucket holding 1 reports 2 / (g + 1) = 0.995, which no bounded slowdown can be."""
    r = schedlab.simulate(replay(kth, "srpt-1", jobs=False))
    for q in (50, 90, 95, 99):
        est = r.metrics[f"p{q}_bounded_slowdown"]
        assert est.mean >= 1.0, (q, est)
    assert r.metrics["p50_bounded_slowdown"].mean == 1.0


def test_a_replay_above_capacity_reports_its_numbers_with_a_backlog_note(kth):
    """Item 6: a finite replay at load 1.5 is not 'unstable': every number is reported, with the
    note; the same engine on a synthetic workload above its limit still yields no mean."""
    r = schedlab.simulate(replay(kth, wl={"load": 1.5}))
    assert r.stable and r.instability is None
    assert r.backlog.startswith("backlog grew over the whole log: a transient, not a steady state")
    for name in ("mean_waiting_time", "p95_waiting_time", "mean_bounded_slowdown"):
        assert math.isfinite(r.metrics[name].mean), name
    row_note = r.to_dict()["backlog"]
    assert "transient" in row_note
    synthetic = schedlab.simulate(
        {
            "cluster": {"servers": 1},
            "workload": {"load": 1.5, "classes": [{"need": 1, "duration": 1.0}]},
            "policy": {"name": "fcfs"},
            "run": {"arrivals": 2000, "allow_unstable": True},
        }
    )
    assert not synthetic.stable and math.isnan(synthetic.metrics["mean_response_time"].mean)


def test_simulate_prints_the_backlog_the_units_and_the_makespan_without_interval(kth, tmp_path):
    spec = tmp_path / "replay.toml"
    spec.write_text(
        f'[cluster]\nservers = 100\n[workload]\nload = 1.5\n[workload.arrivals]\nprocess = "trace"'
        f'\npath = "{kth}"\n[policy]\nname = "fcfs"\n[run]\nallow_unstable = true\n'
    )
    result = runner.invoke(app, ["simulate", str(spec)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "stable   yes" in result.output and "backlog grew over the whole log" in result.output
    assert "times in s; bounded slowdown with tau = 10 s" in result.output
    assert "one replay's value" in result.output


def test_warmup_is_off_on_a_replay_and_stated_when_set(kth):
    assert parse_spec(replay(kth)).run.warmup == 0.0
    assert parse_spec(replay(kth, warmup=0.2)).run.warmup == 0.2
    r = schedlab.simulate(replay(kth, warmup=0.2))
    assert any(w.startswith("warm-up: the first 60 of the log's 300 jobs") for w in r.warnings)
    assert not any("warm-up" in w for w in schedlab.simulate(replay(kth)).warnings)


def test_a_replay_is_not_replicated(kth):
    with pytest.raises(SpecError, match=r"run\.replications: a trace replay is the same") as e:
        parse_spec(replay(kth, replications=2))
    assert "\n" not in str(e.value).strip()


def test_batch_means_interval_covers_the_mm1_mean_about_95_percent_of_the_time():
    """Item 5: the engine's interval (Student t over 20 batch means of consecutive arrivals, no
    warm-up, as in a replay) covers E[T] = 1 / (mu - lambda) = 2 of an M/M/1 at load 0.5 in
    about 95% of 200 independent runs of 2,000 jobs (binomial sd 1.5%: 91.5%-98.5% accepted)."""
    model = compile_model(
        parse_spec(
            {
                "cluster": {"servers": 1},
                "workload": {
                    "load": 0.5,
                    "classes": [{"need": 1, "duration": {"dist": "exponential", "mean": 1.0}}],
                },
                "policy": {"name": "fcfs"},
                "run": {"arrivals": 2000, "warmup": 0.0, "seed": 7, "timeseries": 0},
            }
        )
    )
    truth = mmc_mean_response_time(1, 0.5, 1.0)
    estimates = [run_model(model, r).metrics["mean_response_time"] for r in range(200)]
    covered = np.mean([e.ci95[0] <= truth <= e.ci95[1] for e in estimates])
    assert 0.915 <= covered <= 0.985, covered
    assert all(e.ci95[1] > e.ci95[0] for e in estimates)  # never zero width


def test_compare_on_a_log_replays_it_once_at_its_own_load_with_every_metric(kth, tmp_path):
    """Items 3-5 on the command line: the default load is the log's own (named in the
    findings), one replay, intervals of nonzero width, each metric in the rows; --metric ranks
    by another metric; --loads native on a spec is refused in one line."""
    native = compile_model(parse_spec(replay(kth))).load
    args = ["compare", str(kth), "--workers", "1", "--policy", "fcfs"]
    args += ["--policy", "easy-backfill", "--out", str(tmp_path / "c"), "--format", "json"]
    result = runner.invoke(app, [*args, "--metric", "mean_waiting_time"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    rows = [r for r in rows if r["policy"] != "the log itself"]  # the log's row: never ranked
    assert len(rows) == 2 and all(r["native"] for r in rows)
    assert all(r["load"] == pytest.approx(native) for r in rows)
    for r in rows:
        assert r["metric"] == "mean_waiting_time" and r["mean_waiting_time"] == r["mean"]
        assert r["lo"] < r["mean"] < r["hi"]  # one replay, an interval of nonzero width
        for name in ("p50_waiting_time", "p95_waiting_time", "p99_waiting_time"):
            assert name in r
        assert {"mean_bounded_slowdown", "p95_bounded_slowdown", "makespan"} <= set(r)
        # over the makespan, not over the arrivals (that one is the offered load: issue 43)
        assert 0 < r["utilization_over_makespan"] <= 1 and 0 <= r["loss_of_capacity"] < 1
        assert "utilization[servers]" not in r
    ranked = sorted(rows, key=lambda r: r["rank"])
    assert ranked[0]["mean"] <= ranked[1]["mean"]
    record = json.loads((tmp_path / "c" / "experiment.json").read_text())
    assert record["scale"].startswith("1 replication(s) per point; all ")
    assert any("(the log's own)" in s for s in record["summary"])
    assert record["metrics"][0] == "mean_waiting_time" and "makespan" in record["metrics"]
    page = (tmp_path / "c" / "report.html").read_text()
    assert "mean waiting time E[T_Q] (s)" in page and "τ = 10 s" in page
    refused = runner.invoke(app, ["compare", str(QUICKSTART), "--loads", "native"])
    assert refused.exit_code == 2
    assert "--loads native: only a trace has its own arrival times" in refused.output
    again = runner.invoke(app, [*args, "--replications", "2"])
    assert again.exit_code == 2 and "a trace replay is the same every time" in again.output
    for metric, why in (("makespan", "only a finite log replay"), ("speed", "must be one of")):
        bad = runner.invoke(app, ["compare", str(QUICKSTART), "--metric", metric])
        assert bad.exit_code == 2 and why in bad.output and bad.output.count("\n") == 1


def test_identical_replications_take_the_batch_means_interval_never_zero_width():
    """Replays of one log stored as replications (a sweep's replications of a trace spec) give
    the same value each time: the point is one replay with its batch-means interval."""
    from schedlab.experiments.stats import summarize

    row = {"p": 1, "stable": True, "x": 9484.0, "x_lo": 9000.0, "x_hi": 9968.0}
    (same,) = summarize([{**row, "replication": r} for r in range(2)], ["p"], "x")
    assert (same.mean, same.lo, same.hi) == (9484.0, 9000.0, 9968.0)
    rows = [{**row, "replication": 0}, {**row, "replication": 1, "x": 9500.0}]
    (varied,) = summarize(rows, ["p"], "x")
    assert varied.note == "t over replications" and varied.lo < varied.mean < varied.hi
