"""Issue 28 items 2-5, 9 and 10 (file-system parts): nothing outside the output folder is read or
written, no special file or user's file is replaced, every write failure is one line
(docs/guarantees.md#files)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.experiments.runner import Task, run_tasks
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec
from tests.data import HPC2N as SWF
from tests.helpers.outputs import SPEC, make_store

EXPERIMENT = """name = "e"
[base]
cluster = { servers = 1 }
policy = { name = "fcfs" }
run = { arrivals = 400, batches = 4, jobs = "JOBS" }
[base.workload]
load = 0.5
classes = [{ need = 1, duration = { dist = "exponential", mean = 1.0 } }]
[sweep]
"workload.load" = [0.3, 0.5]
"""


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(result) -> str:
    """The error of a refused command: exit code 2 (or 1), one line, no traceback."""
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ") and len(lines) <= 2, result.output  # run: a header
    return lines[-1]


# --- item 2: a folder's name is no glob ------------------------------------------------------


def test_a_folder_name_is_not_a_glob(tmp_path):
    make_store(tmp_path / "g[1]", "a")
    make_store(tmp_path / "g1", "b", n=3)
    query = "select experiment, count(*) as n from runs group by 1"
    result = invoke("results", tmp_path / "g[1]", "--query", query, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1:] == ["a,2"]
    alone = tmp_path / "h[1]"  # no folder the glob would match: a traceback before
    make_store(alone, "c")
    result = invoke(
        "results", alone, "--query", "select count(*) as n from runs", "--format", "csv"
    )
    assert result.exit_code == 0 and result.output.splitlines()[1:] == ["2"], result.output


# --- item 10: queries touch no file; foreign and duplicated run files -------------------------


@pytest.mark.parametrize(
    "query",
    [
        "COPY (select 1) TO '{target}'",
        "select * from read_csv('{secret}')",
        "select * from read_parquet('{other}/runs/*.parquet')",
        "ATTACH '{target}' AS x",
    ],
)
def test_user_queries_touch_no_file(tmp_path, query):
    make_store(tmp_path / "out", "a")
    make_store(tmp_path / "other", "b")
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    target = tmp_path / "written.csv"
    sql = query.format(target=target, secret=secret, other=tmp_path / "other")
    out = one_line_error(invoke("results", tmp_path / "out", "--query", sql))
    assert "hunter2" not in out and not target.exists()


@pytest.mark.parametrize("kind", ["copy", "foreign", "link"])
def test_foreign_or_duplicated_run_files_are_refused(tmp_path, kind):
    out = tmp_path / "out"
    hashes = make_store(out, "a")
    extra = out / "runs" / "zz.parquet"
    if kind == "copy":  # a duplicate would count as one more replication
        shutil.copy(out / "runs" / f"{hashes[0]}.parquet", extra)
    elif kind == "foreign":
        pq.write_table(pa.table({"x": [1, 2]}), extra)
    else:
        pq.write_table(pa.table({"spec_hash": ["zz"]}), tmp_path / "elsewhere.parquet")
        extra.symlink_to(tmp_path / "elsewhere.parquet")
    for args in (["results", out], ["results", out, "--query", "select count(*) from runs"]):
        assert str(extra) in one_line_error(invoke(*args))


def test_concurrent_sweeps_count_every_run(tmp_path, monkeypatch):
    """Runs another sweep stored before this one looked are counted as stored by another (they
    were missing from "14 done, 0 stored, 1 by another" of 32)."""
    import schedlab.experiments.runner as runner

    store = ResultStore(tmp_path / "out")
    tasks = [Task.of(parse_spec(_spec_dict(seed)), 0) for seed in range(6)]

    def elsewhere_or_here(task, root, plugins=()):
        store.write({"spec_hash": task.hash})
        return task.hash in {t.hash for t in tasks[:2]}  # the others: claimed by another sweep

    monkeypatch.setattr(runner, "execute_and_store", elsewhere_or_here)
    summary = run_tasks(tasks, store, workers=1)
    assert (summary.ran, summary.cached, summary.elsewhere) == (2, 0, 4)


def _spec_dict(seed: int) -> dict:
    import tomllib

    data = tomllib.loads(SPEC)
    data["run"]["seed"] = seed
    return data


# --- item 3: spec-given output paths ---------------------------------------------------------


def test_run_writes_spec_jobs_tables_inside_the_folder_one_per_run(tmp_path):
    victim = tmp_path / "v.txt"
    victim.write_text("mine")
    spec = tmp_path / "exp.toml"
    spec.write_text(EXPERIMENT.replace("JOBS", str(victim)))
    result = invoke("run", spec, "--out", tmp_path / "out", "--workers", "1", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "mine"
    tables = sorted((tmp_path / "out" / "jobs").glob("*.parquet"))
    assert [t.stem for t in tables] == sorted(ResultStore(tmp_path / "out").done())
    first, second = (pq.read_table(t) for t in tables)
    assert first.num_rows == second.num_rows == 400 and not first.equals(second)


@pytest.mark.parametrize("jobs", ["../escape.parquet", "/abs/j.parquet", "link/j.parquet"])
def test_simulate_refuses_spec_jobs_paths_out_of_the_spec_folder(tmp_path, jobs):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path)
    (folder / "s.toml").write_text(SPEC + f'jobs = "{jobs}"\n')
    one_line_error(invoke("simulate", folder / "s.toml"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["specs"]


def test_simulate_writes_a_spec_jobs_path_beside_the_spec(tmp_path, monkeypatch):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "s.toml").write_text(SPEC + 'jobs = "j.parquet"\n')
    monkeypatch.chdir(tmp_path)
    assert invoke("simulate", folder / "s.toml").exit_code == 0
    assert pq.read_table(folder / "j.parquet").num_rows == 400


# --- item 4: special files, directories, links and users' files are never replaced ------------


def _targets(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = tmp_path / "notes.txt"
    text.write_text("mine")
    link = tmp_path / "link.parquet"
    link.symlink_to(text)
    return {"fifo": fifo, "directory": tmp_path, "text": text, "link": link}


def _snapshot(root: Path) -> dict[str, tuple]:
    found = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        content = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        found[str(path.relative_to(root))] = (st.st_mode, content)
    return found


@pytest.mark.parametrize("target", ["fifo", "directory", "text", "link"])
def test_trace_convert_refuses_targets_it_must_not_replace(tmp_path, target):
    path = _targets(tmp_path)[target]
    before = _snapshot(tmp_path)
    one_line_error(invoke("trace", "convert", SWF, "-f", "swf", "-o", path))
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--jobs-out", "--timeseries-out"])
def test_simulate_refuses_targets_it_must_not_replace(tmp_path, option):
    (tmp_path / "s.toml").write_text(SPEC)
    paths = _targets(tmp_path)
    before = _snapshot(tmp_path)
    for path in paths.values():
        one_line_error(invoke("simulate", tmp_path / "s.toml", option, path))
    assert _snapshot(tmp_path) == before


# --- item 5: report and plot stay inside the folder -------------------------------------------


def test_report_reads_nothing_outside_the_folder(tmp_path):
    import base64
    import datetime

    from schedlab.report.experiment_record import ExperimentRecord, provenance

    out = tmp_path / "deep" / "out"
    make_store(out, "a")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = b"\x89PNG SECRET FIGURE"
    (outside / "f.png").write_bytes(secret)
    (outside / "s.toml").write_text("SECRET SPEC")
    (out / "figures").mkdir()
    (out / "figures" / "x.png").symlink_to(outside / "f.png")
    (out / "experiments").mkdir()
    (out / "experiments" / "e.toml").symlink_to(outside / "s.toml")
    (out / "linked").symlink_to(outside, target_is_directory=True)
    record = ExperimentRecord(
        name="e",
        kind="sweep",
        figures=["../../outside/f.png", str(outside / "f.png")],
        provenance=provenance(datetime.datetime.now(datetime.UTC), 0.0),
    )
    (out / "experiment.json").write_text(record.model_dump_json())
    result = invoke("report", out)
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert base64.b64encode(secret).decode() not in page and "SECRET SPEC" not in page


def test_report_and_plot_write_through_no_link(tmp_path):
    out = tmp_path / "out"
    make_store(out, "a")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (out / "report.html").symlink_to(victim)
    one_line_error(invoke("report", out))
    (out / "figures").mkdir()
    (out / "figures" / "mean_response_time_vs_load.csv").symlink_to(victim)
    one_line_error(invoke("plot", out, "--x", "load"))
    assert victim.read_text() == "mine"
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "mean_response_time_vs_load.csv"  # nothing written before the link was found
    ]
    shutil.rmtree(out / "figures")
    (out / "figures").symlink_to(tmp_path, target_is_directory=True)
    one_line_error(invoke("plot", out, "--x", "load"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "victim.txt"]


# --- item 9: write failures are one line -------------------------------------------------------


def test_unwritable_targets_are_one_line(tmp_path):
    """A path under a regular file fails like a read-only or full file system (as root too)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    make_store(tmp_path / "out", "a")
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "out" / "figures").write_text("not a folder")
    one_line_error(invoke("plot", tmp_path / "out", "--x", "load"))
    one_line_error(invoke("simulate", tmp_path / "s.toml", "--jobs-out", blocker / "j.parquet"))
    one_line_error(invoke("trace", "convert", SWF, "-f", "swf", "-o", blocker / "t.parquet"))
    one_line_error(invoke("demo", "--out", blocker / "demo"))  # refused before simulating


def test_a_full_disk_during_run_is_one_line_and_keeps_stored_runs(tmp_path, monkeypatch):

    spec = tmp_path / "exp.toml"
    spec.write_text(EXPERIMENT.replace(', jobs = "JOBS"', ""))
    out = tmp_path / "out"
    real = pq.write_table
    written = []

    def full_after_one(table, where, *args, **kwargs):
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(where)
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", full_after_one)
    assert "No space left" in one_line_error(invoke("run", spec, "--out", out, "--workers", "1"))
    assert len(ResultStore(out).done()) == 1
    assert not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_to_a_full_device_is_one_line():
    code = (
        "import sys; from schedlab.cli import main; sys.argv[1:] = ['policies', '--json']; main()"
    )
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: cannot write the output (No space left on device)"
    ]
