"""Issue 15 item 6: experiment names cannot escape out/, `report` opens no path from stored rows,
and data files in a spec resolve against the spec's directory (docs/guarantees.md)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.model.spec import load_spec
from schedlab.report.html import build_report

EXPERIMENT = """name = "{name}"
[base]
cluster = {{ servers = 1 }}
policy = {{ name = "fcfs" }}
run = {{ arrivals = 2000 }}
[base.workload]
load = 0.5
classes = [{{ need = 1, duration = {{ dist = "exponential", mean = 1.0 }} }}]
"""


@pytest.mark.parametrize("name", ["..", ".", "a/b", "..\\\\x", ".hidden"])
def test_bad_experiment_names_are_refused(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "exp.toml"
    path.write_text(EXPERIMENT.format(name=name))
    result = CliRunner().invoke(app, ["run", str(path), "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "name" in result.output
    assert not (tmp_path / "out").exists()


def test_report_opens_no_path_from_stored_rows(tmp_path):
    out = tmp_path / "deep" / "out"
    (out / "runs").mkdir(parents=True)
    (out / "experiments").mkdir()
    (out / "secret.toml").write_text("SECRET-CONTENT")  # experiments/../secret.toml
    row = {
        "spec_hash": "h1",
        "experiment": "../secret",
        "point": 0,
        "policy": "fcfs",
        "load": 0.5,
        "replication": 0,
        "axes": "[]",
        "mean_response_time": 2.0,
        "mean_response_time_lo": 1.9,
        "mean_response_time_hi": 2.1,
        "stable": True,
        "code_hash": "c",
    }
    pq.write_table(pa.Table.from_pylist([row]), out / "runs" / "h1.parquet")
    page = build_report(out)
    assert "SECRET-CONTENT" not in page


def test_data_files_resolve_against_the_spec(tmp_path, monkeypatch):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "sizes.csv").write_text("1\n2\n3\n")
    (folder / "spec.toml").write_text(
        "[cluster]\nservers = 2\n[workload]\nload = 0.5\n[[workload.classes]]\nneed = 1\n"
        'duration = { dist = "empirical", file = "sizes.csv" }\n[policy]\nname = "fcfs"\n'
        "[run]\narrivals = 1000\n"
    )
    monkeypatch.chdir(tmp_path)  # not the spec's folder
    spec = load_spec(folder / "spec.toml")
    duration = spec.workload.classes[0].duration
    assert duration.file == folder / "sizes.csv"
    assert duration.mean == pytest.approx(2.0)


def test_trace_path_resolves_against_the_spec(tmp_path, monkeypatch):
    from schedlab.model.compile import compile_model

    folder = tmp_path / "specs"
    folder.mkdir()
    rows = "\n".join(f"{i * 1.0},{1.0 + i % 3},{1 + i % 2}" for i in range(50))
    (folder / "jobs.csv").write_text("arrival,duration,need\n" + rows + "\n")
    (folder / "spec.toml").write_text(
        '[cluster]\nservers = 4\n[workload]\narrivals = { process = "trace", path = "jobs.csv" }\n'
        '[policy]\nname = "fcfs"\n'
    )
    monkeypatch.chdir(tmp_path)
    model = compile_model(load_spec(folder / "spec.toml"))
    assert model.trace.n_rows == 50
