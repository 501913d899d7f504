"""Reliability is judged per metric (issue 32 item 4): a run whose p50 waiting time has an interval
reaching below 0 (the waiting time of an M/M/1 at load 0.5 is 0 for half the jobs) is flagged for
that metric only; its mean response time stays reliable in the stored row, the point statistics,
the figure, the tables, the ranking and the sweep summary."""

from __future__ import annotations

import csv

import pytest

import schedlab
from schedlab.api import SweepResults, point_summary
from schedlab.experiments.run_rows import run_row
from schedlab.report.figures import line_plot
from schedlab.report.points import plot_points
from schedlab.report.ranking import rank
from schedlab.report.tables import wide_table
from tests.helpers.specs import pooled_spec

GOOD, BAD = "mean_response_time", "p50_waiting_time"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    result = schedlab.simulate(pooled_spec(1, 0.5, arrivals=20_000, seed=1))
    assert result.stable and result.too_short is None
    assert BAD in result.unreliable and GOOD not in result.unreliable
    assert not result[BAD].reliable and result[GOOD].reliable
    assert result.to_dict()["metrics"][GOOD]["reliable"] is True
    row = run_row(result, experiment="mm1", point=0, axes={"workload.load": 0.5})
    assert row["reliable"] is False  # the run as a whole has an unreliable metric
    assert row[f"{GOOD}_reliable"] is True and row[f"{BAD}_reliable"] is False
    return [row]


def _figure_flags(rows: list[dict], metric: str, tmp_path) -> list[str]:
    points, y = plot_points(rows, x="load", y=metric, hue="policy", ratio_to=None)
    paths = line_plot(points, tmp_path / metric, x="load", y=y, hue="policy", title="M/M/1")
    table = next(p for p in paths if p.suffix == ".csv")
    with table.open() as f:
        return [r["reliable"] for r in csv.DictReader(f)]


def test_the_figure_of_each_metric_flags_only_that_metric(rows, tmp_path):
    assert _figure_flags(rows, GOOD, tmp_path) == ["True"]
    assert _figure_flags(rows, BAD, tmp_path) == ["False"]


def test_tables_ranking_and_summary_judge_each_metric(rows):
    assert wide_table(rows, ["load", "policy"], "policy", GOOD).rows[0][1]["fcfs"].reliable
    assert not wide_table(rows, ["load", "policy"], "policy", BAD).rows[0][1]["fcfs"].reliable
    assert rank(rows, GOOD)[0].reliable and not rank(rows, BAD)[0].reliable
    summary = point_summary(rows, [GOOD, BAD])[0]
    assert summary[f"{GOOD}_reliable"] and not summary[f"{BAD}_reliable"]
    assert "unreliable" in summary[f"{BAD}_note"]
    page = SweepResults("mm1", rows, [GOOD, BAD])._repr_html_()
    assert page.count(">unreliable<") == 1


def test_rows_stored_before_the_per_metric_flags_take_the_runs_flag(rows):
    old = [{k: v for k, v in rows[0].items() if not k.endswith("_reliable")}]
    assert old[0]["reliable"] is False
    points, _ = plot_points(old, x="load", y=GOOD, hue="policy", ratio_to=None)
    assert not points[0].reliable
