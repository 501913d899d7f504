"""``schedlab trace convert|info|formats``: real output on the KTH log, and bad input as one line
with exit code 2."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.workloads.traces import get_meta
from tests.data import KTH
from tests.helpers import paths

FIXTURES = paths.FIXTURES / "traces"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    for fragment in fragments:
        assert fragment in text, text
    return text


def test_convert_and_info_on_kth(tmp_path):
    out = tmp_path / "kth.parquet"
    result = run("trace", "convert", KTH, "--format", "swf", "--out", out)
    assert result.exit_code == 0, result.output
    assert "swf: read 300 rows from 1 file" in result.output
    assert "kept 300 jobs" in result.output
    assert "demands normalized to a server of procs=100" in result.output
    assert f"wrote {out}: 300 jobs" in result.output.replace("\n", "")
    table = pq.read_table(out)
    assert table.num_rows == 300
    assert get_meta(table)["k"] == 100
    info = run("trace", "info", out)
    assert info.exit_code == 0, info.output
    text = info.output
    assert "300" in text
    assert "pooled k       100 servers (MaxProcs)" in text
    assert "load on k = 100: 0.5636" in text
    assert "193,147 s (2.24 d)" in text
    as_json = json.loads(run("trace", "info", out, "--json").output)
    assert as_json["jobs"] == 300
    assert as_json["k"] == 100
    assert as_json["pooled_load"] == pytest.approx(0.5636, abs=1e-4)


def test_convert_with_transforms(tmp_path):
    out = tmp_path / "kth-window.parquet"
    result = run(
        "trace",
        "convert",
        KTH,
        "-f",
        "swf",
        "-o",
        out,
        "--window-jobs",
        "100:150",
        "--time-scale",
        "0.5",
        "--round-pow2",
        "--json",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rows_written"] == 150
    names = [t["name"] for t in summary["transforms"]]
    assert names == ["normalize", "server_need", "round_pow2", "window_jobs", "time_scale"]
    table = pq.read_table(out)
    reference = run("trace", "convert", KTH, "-f", "swf", "-o", tmp_path / "all.parquet")
    assert reference.exit_code == 0
    every = pq.read_table(tmp_path / "all.parquet").slice(100, 150)
    assert table.column("arrival").to_pylist() == [
        0.5 * a for a in every.column("arrival").to_pylist()
    ]
    procs = table.column("demand_procs").to_pylist()
    assert set(procs) <= {2.0**-k for k in range(8)}
    assert table.column("need").to_pylist() == every.column("need").to_pylist()


def test_convert_google_fixture_reports_drops(tmp_path):
    out = tmp_path / "g.parquet"
    result = run(
        "trace",
        "convert",
        FIXTURES / "google2011_task_events.csv",
        "-f",
        "google2011",
        "-o",
        out,
        "--max-resource",
        "--machines",
        FIXTURES / "google2011_machine_events.csv",
    )
    assert result.exit_code == 0, result.output
    assert "kept 2 jobs" in result.output
    assert "dropped: 1 before trace; 2 interrupted; 1 unfinished" in result.output
    info = run("trace", "info", out, "--servers", "2")
    assert info.exit_code == 0, info.output
    assert "machines: 2 with cpu=0.5, memory=0.2493" in info.output
    # demand = max(cpu, mem): 0.0625 for 160 s and 0.5 for 60 s over a 360 s span:
    # rate = 1/360, E[d*s] = (10 + 30)/2 = 20 -> 0.05556 servers' worth, load 0.02778 on 2.
    assert "offered work (demand): 0.05556 unit servers' worth; load on 2 servers: 0.02778" in (
        info.output.replace("\n", " ")
    )


def test_bad_input_is_one_line_with_exit_code_2(tmp_path):
    one_line_error(
        run("trace", "convert", "no/such.swf", "-f", "swf", "-o", tmp_path / "x.parquet"),
        "no/such.swf: no such file",
    )
    one_line_error(
        run(
            "trace",
            "convert",
            FIXTURES / "google2011_task_events.csv",
            "-f",
            "googel2011",
            "-o",
            tmp_path / "x.parquet",
        ),
        "unknown trace format 'googel2011'",
        "did you mean 'google2011'?",
    )
    one_line_error(
        run(
            "trace",
            "convert",
            FIXTURES / "google2011_task_events.csv",
            "-f",
            "google2011",
            "-o",
            tmp_path / "x.parquet",
            "--window-jobs",
            "a:b",
        ),
        "--window-jobs: 'a:b' is not COUNT or START:COUNT",
    )
    one_line_error(
        run(
            "trace",
            "convert",
            FIXTURES / "google2011_task_events.csv",
            "-f",
            "google2011",
            "-o",
            tmp_path / "x.parquet",
            "--normalize",
            "cpu=-1",
        ),
        "--normalize: 'cpu=-1' is not RESOURCE=CAPACITY",
    )
    one_line_error(
        run(
            "trace",
            "convert",
            FIXTURES / "google2011_task_events.csv",
            "-f",
            "google2011",
            "-o",
            tmp_path / "missing" / "x.parquet",
        ),
        "does not exist",
    )
    bad = tmp_path / "te.csv"
    lines = (FIXTURES / "google2011_task_events.csv").read_text().splitlines()
    lines[6] = lines[6].replace(",1,fJYe", ",1,fJYe,extra")
    bad.write_text("\n".join(lines) + "\n")
    one_line_error(
        run("trace", "convert", bad, "-f", "google2011", "-o", tmp_path / "x.parquet", "--strict"),
        f"{bad}:7: 14 fields, expected 13 (--strict",
    )
    assert not (tmp_path / "x.parquet").exists()  # no partial output
    result = run("trace", "convert", bad, "-f", "google2011", "-o", tmp_path / "x.parquet")
    assert result.exit_code == 0
    assert f"bad rows: 1 wrong number of fields (first: {bad}:7:" in result.output.replace("\n", "")
    one_line_error(run("trace", "info", tmp_path / "nope.parquet"), "nope.parquet: no such file")


def test_formats_lists_every_reader():
    result = run("trace", "formats")
    assert result.exit_code == 0
    for name in ("google2011", "borg2019", "swf", "alibaba2017", "alibaba2018"):
        assert name in result.output
