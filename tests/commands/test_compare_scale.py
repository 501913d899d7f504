"""`schedlab compare` on whole logs (issue 43 item 1, Bad input): the log check reads the runs
at the log's own load (no replay again), each phase is recorded, policies whose cost grows with
k are left out above their k in one line, a log over the memory budget is refused before any run
in one line, and a killed comparison resumes from its store without running again what it
stored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.experiments.compare import plan, workload_base
from schedlab.workloads.traces import convert
from tests.data import KTH

runner = CliRunner()
THREE = ["--policy", "fcfs", "--policy", "easy-backfill", "--policy", "sjbf"]


@pytest.fixture(scope="module")
def kth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    table = tmp_path_factory.mktemp("kth") / "kth.parquet"
    convert(KTH, "swf", table)
    return table


def test_the_log_check_reads_the_runs_at_the_logs_own_load(kth: Path, tmp_path: Path) -> None:
    """Three policies at the log's own load: three runs stored, each with its per-job table, and
    the validation, the Gantt chart and the time series come from them (no replay line, no
    fourth run); phases.json names every phase with its wall time and peak memory."""
    out = tmp_path / "cmp"
    args = ["compare", str(kth), "--workers", "1", *THREE, "--out", str(out), "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "replaying the log" not in result.stderr
    assert len(list((out / "runs").glob("*.parquet"))) == 3
    assert len(list((out / "jobs").glob("*.parquet"))) == 3
    record = json.loads((out / "experiment.json").read_text())
    assert any(x.startswith("validation: EASY with requested times") for x in record["summary"])
    names = {Path(f).name for f in record["figures"]}
    assert {"compare-kth-gantt.png", "compare-kth-over-time.png"} <= names
    phases = json.loads((out / "phases.json").read_text())
    assert [p["phase"] for p in phases] == ["runs", "figures", "log check", "report"]
    assert all(p["wall_s"] >= 0 and p["peak_rss_bytes"] > 0 for p in phases)


def test_policies_whose_cost_grows_with_k_are_left_out_above_their_k(
    kth: Path, tmp_path: Path
) -> None:
    """A log on k = 100,000 (the KTH excerpt's jobs): max-weight and first-fit-srpt are not in
    the default set, one line names them with their k and --policy; named, they run."""
    swf = tmp_path / "big.swf"
    lines = [x for x in _lines(KTH) if not x.startswith("; MaxProcs")]
    swf.write_text("; MaxProcs: 100000\n" + "\n".join(lines) + "\n")
    table = tmp_path / "big.parquet"
    convert(swf, "swf", table)
    base, _, _ = workload_base(table, servers=None, arrivals=None, seed=1)
    the_plan = plan("big", base, "pooled", [], None, native=True)
    assert {"max-weight", "first-fit-srpt"} <= set(the_plan.left_out)
    assert not set(the_plan.left_out) & set(the_plan.policies)
    line = the_plan.left_out_line()
    assert "\n" not in line and "k = 100,000" in line and "--policy NAME" in line
    assert "max-weight (above k = 512)" in line
    named = plan("big", base, "pooled", [], ["max-weight"], native=True)
    assert named.policies == ["max-weight"] and not named.left_out
    small = workload_base(kth, servers=None, arrivals=None, seed=1)[0]
    small = plan("kth", small, "pooled", [], None, native=True)
    assert {"max-weight", "gittins-1"} <= set(small.policies) and not small.left_out


def test_gittins_is_left_out_on_a_log_of_many_distinct_sizes(tmp_path: Path) -> None:
    """3,000 jobs of distinct durations (more than 2,000 distinct sizes): gittins-1 is left out,
    said with the count; the KTH excerpt's 300 jobs keep it (test above)."""
    lines = ["; MaxProcs: 8"] + [
        f"{j + 1} {10 * j} 0 {j + 1} 1 -1 -1 1 {j + 100} -1 1 1 1 -1 1 -1 -1 -1"
        for j in range(3000)
    ]
    (tmp_path / "many.swf").write_text("\n".join(lines) + "\n")
    table = tmp_path / "many.parquet"
    convert(tmp_path / "many.swf", "swf", table)
    base, _, _ = workload_base(table, servers=None, arrivals=None, seed=1)
    the_plan = plan("many", base, "pooled", [], None, native=True)
    assert the_plan.left_out["gittins-1"] == "above 2,000 sizes"
    assert "3,000 distinct job sizes" in the_plan.left_out_line()
    assert "gittins-1" not in the_plan.policies


def test_a_log_over_the_memory_budget_is_refused_before_any_run(kth: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["compare", str(kth), "--workers", "2", *THREE, "--out", str(out)]
    result = runner.invoke(app, [*args, "--memory-budget", "0.5"])
    assert result.exit_code != 0
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert "3 processes x" in message and "--memory-budget" in message and "GiB" in message
    assert not list(out.glob("runs/*.parquet"))


def test_a_killed_compare_resumes_from_its_store(kth: Path, tmp_path: Path) -> None:
    """kill -9 of a comparison once it has stored a run, then the same command: the runs stored
    before are kept as they were (same files, same modification times), said in one line, and
    only the others run."""
    out = tmp_path / "cmp"
    args = ["compare", str(kth), "--workers", "1", *THREE, "--loads", "native,0.5,0.7"]
    args += ["--out", str(out), "--format", "json"]
    command = [sys.executable, "-c", "from schedlab.cli import main; main()", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    first = subprocess.Popen(command, env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    while not list(out.glob("runs/*.parquet")) and first.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("runs/*.parquet")}
    assert before
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    if len(before) < 9:
        assert f"resuming: {len(before)} of 9 runs already in" in result.stderr
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("runs/*.parquet")}
    assert len(after) == 9
    assert {name: after[name] for name in before} == before


def _lines(path: Path) -> list[str]:
    from tests.data import text_lines

    return text_lines(path)
