"""``schedlab analyze multiserver`` and ``schedlab analyze capacity`` against closed forms and the
library, and their errors on bad input."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from typer.testing import CliRunner

from schedlab.analysis.theorem41 import theorem41_gap_bound
from schedlab.cli import app

QUICKSTART = (resources.files("schedlab") / "examples" / "quickstart.toml").read_text()
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_multiserver_bounds_of_the_quickstart(tmp_toml):
    """Quickstart: paper 004 Fig. 2 setting, k = 8, load 0.9, every need's size Exp(mean 1/8).
    All sizes share one exponential law, so Gittins-1 = FCFS-1 = PS-1 = FB-1 = the M/M/1's
    E[S] / (1 - rho), and Theorem 4.1's gap has its closed form."""
    result = run("analyze", "multiserver", "--spec", str(tmp_toml(QUICKSTART)), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    mm1 = (1 / 8) / (1 - 0.9)
    for name in ("gittins1", "fcfs1", "ps1", "fb1"):
        assert data[name] == pytest.approx(mm1, rel=1e-9)
    # M/M/1-SRPT, E[S] = 1/8, rho = 0.9 (analysis/srpt.py, checked there against a double integral)
    assert data["srpt1"] == pytest.approx(0.444016, rel=1e-5)
    assert data["needs"] == "nested" and data["k"] == 8
    gap = theorem41_gap_bound(8, data["arrival_rate"], 0.9)
    assert data["theorem41_upper"] == pytest.approx(data["srpt1"] + gap)
    assert data["srpt1"] < data["gittins1"] < data["theorem41_upper"]


def test_multiserver_table_and_errors(tmp_toml):
    result = run("analyze", "multiserver", "--spec", str(tmp_toml(QUICKSTART)))
    assert result.exit_code == 0 and "Theorem 4.1" in result.output
    bad = run(
        "analyze",
        "multiserver",
        "--spec",
        str(tmp_toml(QUICKSTART.replace("load = 0.9", "load = 1.2"))),
    )
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    missing = run("analyze", "multiserver", "--spec", "no/such/spec.toml")
    assert missing.exit_code == 2 and "no/such/spec.toml" in missing.output


def test_capacity_of_finite_types_paper000_fig3():
    """Paper 000 §VII-A1: sizes 0.4 and 0.6 on one server: rho* = 2; sizes 2 and 5 with
    probabilities 2/3, 1/3 on capacity 10: rho* = 10/3."""
    data = json.loads(run("analyze", "capacity", "--sizes", "0.4,0.6", "--json").output)
    assert data["rho_star"] == [pytest.approx(2.0)] * 2 and data["load"][0] == pytest.approx(1.0)
    data = json.loads(
        run(
            "analyze", "capacity", "--sizes", "2,5", "--probs", "0.6666666667,0.3333333333",
            "--capacity", "10", "--mean-service", "100", "--json",
        ).output
    )  # fmt: skip
    assert data["rho_star"][0] == pytest.approx(10 / 3, rel=1e-6)
    assert data["arrival_rate"][0] == pytest.approx(1 / 30, rel=1e-6)


def test_capacity_of_a_uniform_law_brackets_the_known_value():
    """Uniform on [0.1, 0.9]: x and 1 - x pair up, so rho* = L / E[R] = 5 / 0.5 = 10."""
    result = run(
        "analyze", "capacity", "--uniform", "0.1", "0.9", "--servers", "5", "--max-level", "4",
        "--json",
    )  # fmt: skip
    lo, hi = json.loads(result.output)["rho_star"]
    assert lo <= 10 <= hi and hi - lo < 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one of"),
        (["--sizes", "0.4,x"], "comma-separated numbers"),
        (["--sizes", "0.4", "--uniform", "0.1", "0.2"], "exactly one of"),
        (["--uniform", "0.1", "0.2", "--probs", "1"], "--probs goes with --sizes"),
        (["--sizes", "0.4", "--capacity", "0"], "--capacity"),
        (["--trace", "no/such.parquet"], "no such file"),
    ],
)
def test_capacity_bad_input(args, message):
    result = run("analyze", "capacity", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
