"""Experiments: sweeps, the result store, resume after kill -9, Dask, statistics, report."""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.experiments.run_rows import TIMING_COLUMNS
from schedlab.experiments.runner import run_tasks
from schedlab.experiments.spec import load_experiment
from schedlab.experiments.stats import compare, summarize
from schedlab.experiments.store import ResultStore
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.simulate import run_model
from tests.helpers.chromium import chromium_flags
from tests.helpers.experiment_files import BASE, write_experiment
from tests.helpers.specs import pooled_spec

runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def test_points_replications_and_common_random_numbers(tmp_path):
    exp = load_experiment(write_experiment(tmp_path))
    tasks = exp.tasks()
    assert len(tasks) == 2 * 2 * 2
    assert len({t.hash for t in tasks}) == len(tasks)
    # every point uses the base seed: both variants at a point see the same job sequence
    seeds = {json.loads(t.spec_json)["run"]["seed"] for t in tasks}
    assert seeds == {7}


def test_sweep_stores_resumes_and_summarizes(tmp_path):
    path = write_experiment(tmp_path)
    out = tmp_path / "res"
    first = cli("run", str(path), "--out", str(out), "--workers", "1")
    assert first.exit_code == 0, first.output
    assert "8 runs done, 0 already stored" in first.output
    again = cli("run", str(path), "--out", str(out), "--workers", "1")
    assert "0 runs done, 8 already stored" in again.output
    rows = ResultStore(out).read()
    assert len(rows) == 8
    assert {r["variant"] for r in rows} == {"SF", "FCFS"}
    summary = cli(
        "results",
        str(out),
        "--query",
        "select variant, count(*) as n from runs group by variant order by variant",
        "--format",
        "json",
    )
    assert json.loads(summary.stdout) == [{"variant": "FCFS", "n": 4}, {"variant": "SF", "n": 4}]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sweep_axis": '"workload.lod" = [0.3]'}, "sweep.workload.lod"),
        ({"sweep_axis": '"workload.load" = []'}, "has no values"),
        ({"sweep_axis": '"workload.load" = [0.5, 1.5]'}, "workload.load=1.5"),
    ],
)
def test_bad_sweeps_are_refused_before_running(tmp_path, change, message):
    (tmp_path / "base.toml").write_text(BASE.replace("ARRIVALS", "1000"))
    path = tmp_path / "exp.toml"
    path.write_text(f'name = "bad"\nbase = "base.toml"\n[sweep]\n{change["sweep_axis"]}\n')
    result = cli("run", str(path), "--out", str(tmp_path / "res"))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not list((tmp_path / "res").glob("runs/*.parquet"))


def test_unwritable_out_dir(tmp_path):
    path = write_experiment(tmp_path)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    result = cli("run", str(path), "--out", str(blocked / "res"))
    assert result.exit_code == 2
    assert "cannot write results here" in result.output


def test_unreachable_cluster(tmp_path):
    path = write_experiment(tmp_path)
    result = cli("run", str(path), "--out", str(tmp_path / "res"), "--cluster", "tcp://127.0.0.1:9")
    assert result.exit_code == 2, result.output
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.output


def test_corrupted_file_is_reported_and_nothing_is_lost(tmp_path):
    path = write_experiment(tmp_path)
    out = tmp_path / "res"
    assert cli("run", str(path), "--out", str(out), "--workers", "1").exit_code == 0
    files = sorted((out / "runs").glob("*.parquet"))
    victim = files[0]
    victim.write_bytes(b"garbage")
    before = {p.name: p.read_bytes() for p in files}
    for args in (
        ("run", str(path), "--out", str(out), "--workers", "1"),
        ("results", str(out)),
        ("plot", str(out), "--x", "load"),
    ):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert victim.name in result.output and "corrupted" in result.output
    assert {p.name: p.read_bytes() for p in sorted((out / "runs").glob("*.parquet"))} == before


def _rows_without_timing(directory: Path) -> list[dict]:
    rows = ResultStore(directory).read()
    return sorted(
        ({k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows),
        key=lambda r: r["spec_hash"],
    )


def test_dask_cluster_gives_identical_rows(tmp_path):
    """Issue 33 item 3: the same sweep on a LocalCluster of 2 worker processes and on the local
    pool of 2 workers stores the same rows: same seeds, every metric and interval bound equal."""
    from dask.distributed import LocalCluster

    path = write_experiment(tmp_path, arrivals=3000)
    tasks = load_experiment(path).tasks()
    run_tasks(tasks, ResultStore(tmp_path / "local"), workers=2)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        run_tasks(tasks, ResultStore(tmp_path / "dask"), cluster=cluster.scheduler_address)
    local, dask = _rows_without_timing(tmp_path / "local"), _rows_without_timing(tmp_path / "dask")
    assert len(local) == len(tasks) and len({r["seed"] for r in local}) == 1
    assert local == dask


@pytest.mark.parametrize("workers", ["1", "2"])
def test_kill_9_then_rerun_completes_every_run_exactly_once(tmp_path, workers):
    path = write_experiment(
        tmp_path, loads="[0.2, 0.3, 0.4, 0.5, 0.6]", replications=4, arrivals=30000
    )
    out = tmp_path / "res"
    cmd = [
        sys.executable,
        "-m",
        "schedlab.cli",
        "run",
        str(path),
        "--out",
        str(out),
        "--workers",
        workers,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list((out / "runs").glob("*.parquet"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = len(list((out / "runs").glob("*.parquet")))
    assert 3 <= stored < 40, stored
    subprocess.run(cmd, check=True, capture_output=True)
    tasks = load_experiment(path).tasks()
    files = sorted(p.stem for p in (out / "runs").glob("*.parquet"))
    assert files == sorted(t.hash for t in tasks)
    rows = ResultStore(out).read()
    assert sorted(r["spec_hash"] for r in rows) == files  # every run once, none twice


def test_confidence_intervals_cover_the_truth_95_percent_of_the_time():
    """M/M/1 at rho = 0.5 (E[T] = 2): 200 independent small replications."""
    model = compile_model(parse_spec(pooled_spec(1, 0.5, arrivals=20_000, seed=123)))
    results = [run_model(model, r) for r in range(200)]
    covered = sum(r["mean_response_time"].covers(2.0) for r in results)
    lo, hi = stats.binom.ppf(0.0005, 200, 0.95), stats.binom.isf(0.0005, 200, 0.95)
    assert lo <= covered <= hi, (covered, lo, hi)
    # the replication t-interval, 40 points of 5 replications each
    rows = [
        {
            "point": i // 5,
            "replication": i % 5,
            "stable": True,
            "mean_response_time": r["mean_response_time"].mean,
        }
        for i, r in enumerate(results)
    ]
    points = summarize(rows, ["point"], "mean_response_time")
    covered_t = sum(p.lo <= 2.0 <= p.hi for p in points)
    lo_t, hi_t = stats.binom.ppf(0.0005, 40, 0.95), stats.binom.isf(0.0005, 40, 0.95)
    assert lo_t <= covered_t <= hi_t, (covered_t, lo_t, hi_t)


def test_unstable_points_are_never_averaged():
    rows = [
        {"k": 1, "replication": r, "stable": r != 1, "m": 5.0, "instability": "grows"}
        for r in range(3)
    ]
    (stat,) = summarize(rows, ["k"], "m")
    assert not stat.stable and np.isnan(stat.mean)


def test_paired_comparison_uses_common_random_numbers():
    rows = []
    for rep, noise in enumerate([0.0, 5.0, -3.0]):
        rows.append({"x": 1, "policy": "A", "replication": rep, "stable": True, "m": 10 + noise})
        rows.append({"x": 1, "policy": "B", "replication": rep, "stable": True, "m": 8 + noise})
    (diff,) = compare(rows, ["x"], "m", "policy", "B", ratio=False)
    assert diff.mean == pytest.approx(2.0) and diff.lo == pytest.approx(2.0)  # noise cancels


def test_plot_and_report_render_in_headless_chromium(tmp_path):
    path = write_experiment(
        tmp_path, extra='[[outputs.plots]]\nx = "workload.load"\nhue = "variant"\nlogy = true\n'
    )
    out = tmp_path / "res"
    assert cli("run", str(path), "--out", str(out), "--workers", "1").exit_code == 0
    plot = cli("plot", str(out), "--x", "load", "--hue", "variant", "--ratio-to", "FCFS")
    assert plot.exit_code == 0, plot.output
    csv = (out / "figures" / "mean_response_time_vs_load_ratio_to_FCFS.csv").read_text()
    assert csv.splitlines()[0].startswith("variant,load,")
    report = cli("report", str(out))
    assert report.exit_code == 0, report.output
    page = out / "report.html"
    text = page.read_text()
    assert "data:image/png;base64," in text
    assert html.escape('name = "small"') in text  # the experiment spec is in the page
    flags = chromium_flags(tmp_path / "chrome")
    shot = tmp_path / "report.png"
    subprocess.run(
        [*flags, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.std() > 0.05  # a rendered page, not a blank one
    dom = subprocess.run(
        [*flags, "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert 'data-images-ok="yes"' in dom
