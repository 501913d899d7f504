"""`schedlab trace calibrate LOG` (issue 47 item 3): the table, the JSON and the figure on the
KTH excerpt (300 jobs), and a log too short to split as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from tests.data import KTH
from tests.helpers.swf_logs import partitioned_log, scheduler_log

runner = CliRunner()


def test_calibrate_the_kth_excerpt(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    result = runner.invoke(app, ["trace", "calibrate", str(KTH), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "calibrated" in result.stdout and "Spearman" in result.stdout
    record = json.loads((out / "calibration.json").read_text())
    assert record["max_procs"] == 100 and 1 <= record["fitted_capacity"] <= 100
    assert record["context"]["queue_unknown"] == 300
    for name in ("plain", "calibrated", "hindsight"):
        assert record[name]["jobs"] > 50
    assert record["plain"]["capacity"] == 100
    # no queue field: no queue order, its jobs counted; the fitted context in the table
    first_half = record["fit_jobs"]
    assert record["fitted_queue_order"] == [] and record["queue_inference"]["unknown"] == first_half
    peaks = record["user_inference"]["peaks"]
    assert sum(peaks.values()) == record["user_inference"]["users"]
    assert record["fitted_user_limit"] in (0, *record["user_inference"]["candidates"])
    assert "user limit" in result.stdout and "queue order" in result.stdout
    assert (out / "calibration.png").stat().st_size > 0


def test_too_short_to_split_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "short.swf"
    log.write_text("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n")
    result = runner.invoke(app, ["trace", "calibrate", str(log), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert "too short to split" in lines[-1] and str(log) in lines[-1]


@pytest.mark.parametrize(
    "content", [b"; MaxProcs: 4\n", b"\x1f\x8b\x08\x00garbage\xff\xfe\n\x00\x01"]
)
def test_a_log_without_job_rows_is_one_line(tmp_path: Path, content: bytes) -> None:
    """A header alone, or bytes that are no SWF at all: one line, no traceback."""
    log = tmp_path / "norows.swf"
    log.write_bytes(content)
    result = runner.invoke(app, ["trace", "calibrate", str(log), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no job rows" in lines[0] and str(log) in lines[0]


def test_downtime_held_and_recorded(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    args = ["trace", "calibrate", str(KTH), "--out", str(out), "--downtime", "600"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads((out / "calibration.json").read_text())
    for interval in record["downtime"]:
        assert interval["end"] - interval["start"] >= 600


@pytest.mark.parametrize("policy", ["conservative-backfill", "fcfs"])
def test_downtime_with_conservative_and_fcfs(tmp_path: Path, policy: str) -> None:
    """Every backfilling policy and FCFS hold the logged downtime (decision 0030)."""
    out = tmp_path / "cal"
    args = ["trace", "calibrate", str(KTH), "--out", str(out), "--downtime", "600"]
    result = runner.invoke(app, [*args, "--policy", policy])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "calibration.json").read_text())
    assert record["policy"] == policy and record["downtime"]


def test_downtime_with_a_policy_without_a_capacity_schedule_is_one_line(tmp_path: Path) -> None:
    args = ["trace", "calibrate", str(KTH), "--out", str(tmp_path / "o"), "--downtime", "600"]
    result = runner.invoke(app, [*args, "--policy", "server-filling"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--downtime" in lines[0] and "server-filling" in lines[0]


def test_calibrate_a_partitioned_log(tmp_path: Path) -> None:
    """A log EASY made on partitions of 40 and 60 of 100 processors: the split in the table's
    partitions column, the JSON and the last line."""
    out = tmp_path / "cal"
    log = partitioned_log(tmp_path)
    result = runner.invoke(app, ["trace", "calibrate", str(log), "--out", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "calibration.json").read_text())
    assert record["fitted_partitions"] == [
        {"id": 1, "processors": 40},
        {"id": 2, "processors": 60},
    ]
    assert [p["id"] for p in record["split"]] == [1, 2]
    assert record["calibrated"]["partitions"] == record["fitted_partitions"]
    assert record["plain"]["partitions"] == []
    assert "1:40 2:60" in result.stdout and "partitions 1:40 2:60," in result.stdout


def test_capacity_window_held_and_recorded(tmp_path: Path) -> None:
    """--capacity-window: the profile's windows cover the excerpt's logged span, each usable
    value between the window's bounds, and the steps held are reported."""
    out = tmp_path / "cal"
    args = ["trace", "calibrate", str(KTH), "--out", str(out), "--capacity-window", "3600"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads((out / "calibration.json").read_text())
    profile = record["profile"]
    assert profile["window"] == 3600 and len(profile["starts"]) == len(profile["usable"]) > 1
    for lower, upper, usable in zip(
        profile["lower"], profile["upper"], profile["usable"], strict=True
    ):
        assert usable == min(max(upper, lower), 100)
    assert record["profile_steps"] > 0
    assert "capacity profile in windows of 3600 s" in result.stdout


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--capacity-window", "0"], "--capacity-window 0"),
        (["--capacity-window", "3600", "--policy", "server-filling"], "server-filling"),
        (["--capacity-window", "1e9"], "capacity window of 1e+09 s"),
    ],
)
def test_a_bad_capacity_window_is_one_line(tmp_path: Path, extra: list[str], said: str) -> None:
    args = ["trace", "calibrate", str(KTH), "--out", str(tmp_path / "o"), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert said in lines[-1] and "Traceback" not in result.output


def test_calibrate_a_log_with_a_rank_wait(tmp_path: Path) -> None:
    """A log EASY made with the queue order (3, 1, 2), a rank worth 1 h of waiting: the rank
    wait in the JSON, the table's "rank worth" column and the last line."""
    out = tmp_path / "cal"
    log = scheduler_log(tmp_path, queue_rank_wait=3600.0)
    result = runner.invoke(app, ["trace", "calibrate", str(log), "--out", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "calibration.json").read_text())
    assert record["fitted_queue_order"] == [3, 1, 2] and record["fitted_queue_rank_wait"] == 3600
    assert (
        record["calibrated"]["queue_rank_wait"] == 3600 and record["plain"]["queue_rank_wait"] == 0
    )
    assert "rank worth" in result.stdout and "1 h" in result.stdout
    assert "queue order 3 > 1 > 2, a rank worth 1 h of waiting, partitions" in result.stdout
