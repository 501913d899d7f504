"""Issue 15 item 8: huge run lengths are refused in one line with the estimated time and memory."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.model.budget import EVENTS_PER_ARRIVAL, EVENTS_PER_SECOND

SPEC = """[cluster]
servers = 2
[workload]
load = 0.5
[[workload.classes]]
need = 1
duration = {{ dist = "exponential", mean = 1.0 }}
[policy]
name = "fcfs"
[run]
{run}
"""


@pytest.mark.parametrize(
    ("run", "field", "words"),
    [
        ("arrivals = 1e12", "run.arrivals", ["46.3 days", "GiB"]),
        ("horizon = 1e12", "run.horizon", ["days", "GiB"]),
        ("arrivals = 20000\nreplications = 1000000000", "run.replications", ["2.54 years"]),
        ("arrivals = 30000000000", "run.arrivals", ["33.3 hours", "GiB"]),
    ],
)
def test_huge_runs_are_refused_in_one_line(tmp_toml, run, field, words):
    path = tmp_toml(SPEC.format(run=run))
    result = CliRunner().invoke(app, ["simulate", "--spec", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "spec.toml:" in lines[0] and f": {field}: about" in lines[0]
    assert all(w in lines[0] for w in words), lines[0]


def test_max_hours_is_the_override(tmp_toml):
    # 4e9 events at 1e6 events/s: about 1.1 hours, refused under max_hours = 1, not under 2
    reps = int(4e9 / EVENTS_PER_ARRIVAL / 20_000)
    assert EVENTS_PER_SECOND == 1e6
    run = f"arrivals = 20000\nreplications = {reps}\nmax_hours = "
    path = tmp_toml(SPEC.format(run=run + "1"))
    refused = CliRunner().invoke(app, ["simulate", "--spec", str(path)])
    assert refused.exit_code == 2 and "run.max_hours = 1" in refused.output
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import load_spec

    spec = tmp_toml(SPEC.format(run=run + "2"), "ok.toml")
    assert compile_model(load_spec(spec)).spec.run.max_hours == 2


def test_memory_of_jobs_left_in_the_system_is_refused(tmp_toml):
    """Engine v2 holds only the jobs present: a stable run's memory does not grow with its length,
    but at load 2 (allowed explicitly) half the arrivals stay; 10^10 arrivals (11 hours, within
    max_hours) would need ~1.9 TB and are refused for their memory alone."""
    text = SPEC.format(run="arrivals = 1e10\nallow_unstable = true").replace(
        "load = 0.5", "load = 2.0"
    )
    result = CliRunner().invoke(app, ["simulate", "--spec", str(tmp_toml(text))])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line
    assert "run.arrivals: load 2 >= 1 leaves about 5e+09 jobs in the system" in line
    assert "11.1 hours" in line and "GiB of memory, more than the memory budget of" in line
