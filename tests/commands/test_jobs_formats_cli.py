"""`--jobs-format` of `schedlab simulate` and `schedlab compare` (issue 30 item 8): the file is
written in the format asked for, and bad input is one line (exit 2, no traceback)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.workloads.traces import convert
from tests.data import KTH
from tests.helpers.experiment_files import write_experiment

runner = CliRunner()
VM = str(resources.files("schedlab") / "examples" / "vm-table1.toml")


def one_line_error(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_unknown_format(command: str, tmp_path: Path) -> None:
    where = "--jobs-out" if command == "simulate" else "--out"
    extra = [where, str(tmp_path / "j.x")]
    text = one_line_error(command, VM, *extra, "--jobs-format", "xml")
    assert "--jobs-format must be one of parquet, evalys, swf, not 'xml'" in text


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_swf_needs_server_needs(command: str, tmp_path: Path) -> None:
    where = "--jobs-out" if command == "simulate" else "--out"
    extra = [where, str(tmp_path / "j.swf")]
    text = one_line_error(command, VM, *extra, "--jobs-format", "swf")
    assert "--jobs-format swf" in text and "packing-family job" in text


def test_a_format_without_a_file() -> None:
    text = one_line_error("simulate", VM, "--jobs-format", "evalys")
    assert "--jobs-format evalys needs --jobs-out FILE" in text


def test_simulate_writes_the_evalys_csv(tmp_path: Path) -> None:
    trace = tmp_path / "kth.parquet"
    convert(KTH, "swf", trace)
    spec = tmp_path / "kth.toml"
    spec.write_text(
        '[cluster]\nservers = 100\n[workload.arrivals]\nprocess = "trace"\npath = "kth.parquet"\n'
        '[policy]\nname = "easy-backfill"\n[run]\nwarmup = 0.0\ntimeseries = 0\n'
    )
    out = tmp_path / "jobs.csv"
    result = runner.invoke(
        app, ["simulate", str(spec), "--jobs-out", str(out), "--jobs-format", "evalys"]
    )
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0].replace('"', "").split(",")[:4] == [
        "job_id",
        "workload_name",
        "submission_time",
        "requested_number_of_resources",
    ]
    assert len(lines) == 301


def test_run_writes_each_runs_jobs_as_swf(tmp_path: Path) -> None:
    exp = write_experiment(tmp_path, loads="[0.5]", replications=1, arrivals=300)
    base = tmp_path / "base.toml"
    base.write_text(base.read_text().replace("seed = 7", 'seed = 7\njobs = "jobs.parquet"'))
    out = tmp_path / "out"
    args = ["run", str(exp), "--out", str(out), "--workers", "1", "--jobs-format", "swf"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    logs = sorted((out / "jobs").glob("*.swf"))
    assert len(logs) == 2  # ServerFilling and FCFS at load 0.5
    for log in logs:
        lines = log.read_text().splitlines()
        assert "; MaxProcs: 4" in lines
        jobs = [x.split() for x in lines if not x.startswith(";")]
        assert len(jobs) == 300 and {len(x) for x in jobs} == {18}


def test_run_without_per_job_tables_is_one_line(tmp_path: Path) -> None:
    exp = write_experiment(tmp_path, loads="[0.5]", replications=1, arrivals=300)
    text = one_line_error("run", str(exp), "--out", str(tmp_path / "o"), "--jobs-format", "evalys")
    assert "write no per-job table" in text
