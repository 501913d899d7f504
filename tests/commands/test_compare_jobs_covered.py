"""Load labels of a part of a log (issue 43 item 4): a prefix (`--arrivals`) or a window cut at
conversion (`trace convert --window-jobs`) is labelled with its own offered load, computed here
from its rows, and the table, the record and the figures say which jobs they cover."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.workloads.traces import Transforms, convert
from tests.data import KTH

K = 100  # KTH-SP2's processors


def own_load(table: Path, jobs: int | None = None) -> float:
    """The offered load of the first ``jobs`` rows in arrival order: their arrival rate
    (n - 1 over the span of their arrivals) times their mean need x duration, over k."""
    rows = pq.read_table(table).sort_by("arrival").slice(0, jobs)
    arrival = rows.column("arrival").to_numpy()
    work = rows.column("need").to_numpy() * rows.column("duration").to_numpy()
    rate = (arrival.size - 1) / (arrival[-1] - arrival[0])
    return float(rate * work.mean() / K)


def compare(table: Path, out: Path, *extra: str) -> tuple[list[dict], dict]:
    args = ["compare", str(table), "--workers", "1", "--out", str(out), "--format", "json"]
    args += ["--policy", "fcfs", "--policy", "easy-backfill", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    return rows, json.loads((out / "experiment.json").read_text())


@pytest.mark.parametrize("arrivals", [None, 120])
def test_a_prefix_has_its_own_load(tmp_path: Path, arrivals: int | None) -> None:
    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table)
    extra = ("--arrivals", str(arrivals)) if arrivals else ()
    rows, record = compare(table, tmp_path / "cmp", *extra)
    expected = own_load(table, arrivals)
    ranked = [r for r in rows if r["rank"] is not None]
    assert [r["load"] for r in ranked] == pytest.approx([expected] * len(ranked), rel=1e-9)
    assert all(r["native"] for r in ranked)
    if arrivals:
        assert not np.isclose(expected, own_load(table), rtol=1e-3)  # the test can tell
        covers = "the first 120 of the table's 300 jobs, in arrival order"
    else:
        covers = "all 300 jobs of the table"
    assert covers in record["title"] and covers in record["scale"]
    assert any(f"jobs: {covers}" in note for note in record["notes"])
    log_line = next(x for x in record["summary"] if x.startswith("the log itself"))
    assert f"({arrivals or 300} jobs" in log_line


def test_a_window_says_where_it_lies_in_the_log(tmp_path: Path, monkeypatch) -> None:
    titles: list[str] = []
    from schedlab.report import figures

    original = figures.interval_plot

    def spy(points, path, **kwargs):
        titles.append(kwargs["title"])
        return original(points, path, **kwargs)

    monkeypatch.setattr("schedlab.report.ranking.interval_plot", spy)
    table = tmp_path / "window.parquet"
    convert(KTH, "swf", table, transforms=Transforms(window_jobs=(50, 100)))
    rows, record = compare(table, tmp_path / "cmp")
    covers = "all 100 jobs of the table (jobs 51 to 150 of the converted log)"
    assert covers in record["title"]
    loads = [r["load"] for r in rows if r["rank"]]
    assert loads == pytest.approx([own_load(table)] * len(loads), rel=1e-9)
    assert titles and all(covers in title for title in titles)
