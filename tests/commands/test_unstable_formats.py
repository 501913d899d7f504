"""CSV and JSON agree for an unstable run (issue 45, item 8): the same number in both, or none
in both. An unstable run has no finite mean of a steady-state metric in either, and gives its
measured utilization and throughput in both (docs/guarantees.md, MEANINGFUL_WHEN_UNSTABLE); the
CSV used to leave every cell empty while the JSON gave the utilization."""

from __future__ import annotations

import csv
import io
import json
import math

from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.simulation.result import MEANINGFUL_WHEN_UNSTABLE

# FCFS on k = 4 unit servers, needs 1, 2, 4 equally likely: the saturated limit is load 0.7756
# (tests/test_unstable_results.py), so load 0.9 is unstable.
UNSTABLE = """
[cluster]
servers = 4
[workload]
load = 0.9
[[workload.classes]]
probability = 0.25
need = 1
duration = { dist = "exponential", mean = 1.0 }
[[workload.classes]]
probability = 0.25
need = 2
duration = { dist = "exponential", mean = 1.0 }
[[workload.classes]]
probability = 0.5
need = 4
duration = { dist = "exponential", mean = 1.0 }
[policy]
name = "fcfs"
[run]
arrivals = 20000
seed = 1
"""


def test_csv_and_json_give_the_same_numbers_for_an_unstable_run(tmp_path):
    spec = tmp_path / "unstable.toml"
    spec.write_text(UNSTABLE)
    runner = CliRunner()
    as_json = runner.invoke(app, ["simulate", str(spec), "--format", "json"])
    as_csv = runner.invoke(app, ["simulate", str(spec), "--format", "csv"])
    assert as_json.exit_code == 0 and as_csv.exit_code == 0, as_json.output + as_csv.output
    result = json.loads(as_json.stdout)
    assert result["stable"] is False
    rows = {r["metric"]: r for r in csv.DictReader(io.StringIO(as_csv.stdout))}
    assert set(rows) == set(result["metrics"])
    given = set()
    for name, metric in result["metrics"].items():
        cells = [rows[name][c] for c in ("mean", "ci95_lo", "ci95_hi")]
        for cell, number in zip(cells, [metric["mean"], *metric["ci95"]], strict=True):
            assert (cell == "") == (number is None), (name, cell, number)
            if number is not None:
                assert math.isclose(float(cell), number, rel_tol=1e-12), name
        if metric["mean"] is not None:
            given.add(name)
            base = name.partition("[")[0]
            assert base in MEANINGFUL_WHEN_UNSTABLE, name  # no finite mean of anything else
    assert any(name.startswith("utilization") for name in given)
