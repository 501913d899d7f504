"""`schedlab compare` on an SWF-derived table (issue 30 items 7, 8): the log itself and the
validation line in the findings and the record, the Gantt chart and time series in the report,
and each run's per-job table under its policy and load with --jobs-format."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.workloads.traces import convert, get_meta
from tests.data import KTH
from tests.helpers.swf_logs import TRUE_CAPACITY, partitioned_log, scheduler_log

runner = CliRunner()


def test_compare_on_an_swf_log(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing is written outside --out (the log check's own runs)
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--loads", "0.5", "--replications", "1", "--workers", "1"]
    args += ["--policy", "fcfs", "--policy", "easy-backfill", "--out", str(out)]
    args += ["--jobs-format", "evalys", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    (log,) = [r for r in rows if r["policy"] == "the log itself"]
    assert log["rank"] is None and log["mean_response_time"] > 0
    record = json.loads((out / "experiment.json").read_text())
    log_line = next(x for x in record["summary"] if x.startswith("the log itself"))
    assert "300 jobs" in log_line and "tau = 10 s" in log_line
    check = next(x for x in record["summary"] if x.startswith("validation:"))
    assert "easy-backfill, durations = estimate" in check and "Pearson r =" in check
    assert {Path(f).name for f in record["figures"]} >= {
        "compare-kth-gantt.png",
        "compare-kth-over-time.png",
    }
    assert "compare-kth-gantt.png" in (out / "report.html").read_text()
    named = sorted(p.name for p in (out / "jobs").glob("*.csv"))
    assert named == ["easy-backfill-load0.5.csv", "fcfs-load0.5.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp", "kth.parquet"]


def test_compare_calibrated_shows_the_validation_beside_the_ranking(tmp_path: Path) -> None:
    """--calibrated on the KTH excerpt: the ranking runs on the fitted capacity (the table the
    comparison replays has it as its k), and the findings say how far the baseline is from the
    log and whether the ranking is of an idealized machine."""
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--calibrated", "--replications", "1", "--workers", "1"]
    args += ["--policy", "fcfs", "--policy", "easy-backfill", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads((out / "experiment.json").read_text())
    summary = record["summary"]
    assert summary[0].startswith("calibrated context: usable capacity")
    assert any(
        x.startswith("the baseline (plain replay on all 100 processors) is") for x in summary
    )
    judged = [x for x in summary if x.startswith("the calibrated replay ")]
    assert len(judged) == 1
    fitted = int(summary[0].split("usable capacity ")[1].split(" ")[0])
    reproduced = "reproduces the log" in judged[0]
    assert reproduced != ("idealized machine" in judged[0])
    derived = out / "kth-calibrated.parquet"
    assert pq.read_table(derived).column("need").to_numpy().max() <= fitted
    assert "Spearman" in result.stdout
    # the KTH excerpt has no queue field and no user limit shows: capacity alone
    assert any(x.startswith("every policy ran on the fitted capacity alone") for x in summary)


def test_compare_calibrated_with_downtime_says_which_policy_took_it(tmp_path: Path) -> None:
    """--calibrated --downtime: EASY takes the logged downtime as its capacity schedule and
    the report says which context each policy ran under (a policy refusing an option: the
    next test)."""
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--calibrated", "--downtime", "600", "--workers", "1"]
    args += ["--policy", "conservative-backfill", "--policy", "easy-backfill", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "experiment.json").read_text())["summary"]
    line = next(x for x in summary if x.startswith("calibrated context: every policy"))
    took = dict(x.split(": ") for x in line.split("each took ")[1].split("; "))
    assert took["easy-backfill"] == "capacity_schedule" and set(took) == {
        "conservative-backfill",
        "easy-backfill",
    }


def test_downtime_without_calibrated_is_one_line(tmp_path: Path) -> None:
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    result = runner.invoke(app, ["compare", str(table), "--downtime", "600"])
    assert result.exit_code != 0
    assert "--downtime: only with --calibrated" in result.output


def test_compare_calibrated_with_the_capacity_profile(tmp_path: Path) -> None:
    """--calibrated --capacity-window: the table is on all 100 processors (MaxProcs) and both
    backfilling policies take the profile as their capacity schedule; the report says so."""
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--calibrated", "--capacity-window", "3600", "--workers", "1"]
    args += ["--policy", "conservative-backfill", "--policy", "easy-backfill", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "experiment.json").read_text())["summary"]
    assert any(x.startswith("with the capacity profile the table is on all 100") for x in summary)
    derived = pq.read_table(out / "kth-calibrated.parquet")
    assert get_meta(derived)["k"] == 100
    line = next(x for x in summary if x.startswith("calibrated context: every policy"))
    took = dict(x.split(": ") for x in line.split("each took ")[1].split("; "))
    assert set(took) == {"conservative-backfill", "easy-backfill"}
    assert all("capacity_schedule" in options for options in took.values())


def test_capacity_window_without_calibrated_is_one_line(tmp_path: Path) -> None:
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    result = runner.invoke(app, ["compare", str(table), "--capacity-window", "3600"])
    assert result.exit_code != 0
    assert "--capacity-window: only with --calibrated" in result.output


def test_compare_calibrated_runs_each_policy_under_the_context_it_takes(tmp_path: Path) -> None:
    """On a log EASY made with a queue order and a per-user limit (tests/helpers/swf_logs.py):
    FCFS, EASY and conservative backfilling (decision 0037) rank under the fitted queue order and
    user limit; most-servers-first takes neither and ranks on the fitted capacity alone; the
    report says so."""
    table = tmp_path / "log.parquet"
    convert(scheduler_log(tmp_path), "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--calibrated", "--workers", "1", "--out", str(out)]
    for policy in ("fcfs", "easy-backfill", "conservative-backfill", "most-servers-first"):
        args += ["--policy", policy]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "experiment.json").read_text())["summary"]
    assert summary[0].startswith(f"calibrated context: usable capacity {TRUE_CAPACITY} of 100")
    line = next(x for x in summary if x.startswith("calibrated context: every policy"))
    took = dict(x.split(": ") for x in line.split("each took ")[1].split("; "))
    both = "queue_order, user_limit"
    assert took == {
        "fcfs": both,
        "easy-backfill": both,
        "conservative-backfill": both,
        "most-servers-first": "none",
    }


def test_compare_calibrated_on_partitions_ranks_on_one_pool(tmp_path: Path) -> None:
    """On a log EASY made on partitions of 40 and 60 of 100 processors the calibration splits
    the log, and the report says the ranking ran on one pool of the fitted capacity."""
    table = tmp_path / "log.parquet"
    convert(partitioned_log(tmp_path), "swf", table)
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--calibrated", "--workers", "1", "--out", str(out)]
    result = runner.invoke(app, [*args, "--policy", "easy-backfill"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "experiment.json").read_text())["summary"]
    assert "split into partitions 1:40 2:60" in summary[0]
    line = next(x for x in summary if x.startswith("the calibration split the log"))
    assert "the ranking ran on one pool of the fitted 100 processors" in line
