"""``schedlab analyze`` (paper 003): the library's numbers; bad input is one line, exit code 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from schedlab.analysis.elastic import (
    ElasticSystem,
    exact_response_time,
    matrix_analytic_response_time,
)
from schedlab.cli import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_analyze_elastic_json_matches_the_library():
    result = run(
        "analyze", "elastic", "--k", "4", "--lambda-i", "1.2", "--lambda-e", "0.6",
        "--mu-i", "1", "--mu-e", "0.5", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["system"]["rho"] == pytest.approx((1.2 / 1 + 0.6 / 0.5) / 4)
    s = ElasticSystem(4, 1.2, 0.6, 1.0, 0.5)
    got = {(r["policy"], r["method"]): r for r in data["results"]}
    assert len(got) == 4
    for policy in ("inelastic-first", "elastic-first"):
        ma = matrix_analytic_response_time(s, policy)
        ex = exact_response_time(s, policy)
        assert got[(policy, "matrix-analytic")]["mean_response_time"] == pytest.approx(
            ma.mean_response_time, rel=1e-12
        )
        assert got[(policy, "exact-ctmc")]["mean_response_time_elastic"] == pytest.approx(
            ex.mean_response_time_elastic, rel=1e-12
        )


def test_analyze_elastic_table_with_rho():
    result = run("analyze", "elastic", "--k", "2", "--rho", "0.5", "--mu-i", "1", "--mu-e", "2",
                 "--policy", "EF", "--method", "ma")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rho = 0.5" in result.output
    assert "EF" in result.output and "IF" not in result.output.split("rho")[1]


def test_analyze_no_arrivals_prints_theorem6():
    result = run("analyze", "no-arrivals", "--json")
    assert result.exit_code == 0, result.output
    data = {r["policy"]: r for r in json.loads(result.output)["results"]}
    assert data["inelastic-first"]["total_response_time"]["exact"] == "35/12"
    assert data["elastic-first"]["total_response_time"]["exact"] == "11/4"  # = 33/12
    table = run("analyze", "no-arrivals", "--mu-i", "1/2", "--mu-e", "1")
    assert "35/6" in table.output  # 35/12 / mu_I with mu_I = 1/2


def test_analyze_srpt_k():
    result = run("analyze", "srpt-k", "--instances", "5", "--jobs", "8", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["within_4"] and 1.0 <= data["ratio_min"] <= data["ratio_max"] <= 4.0


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--k", "4", "--rho", "1.0", "--mu-i", "1", "--mu-e", "1"], ">= 1"),
        (["--k", "4", "--lambda-i", "3", "--lambda-e", "3", "--mu-i", "1", "--mu-e", "1"], ">= 1"),
        (["--k", "0", "--rho", "0.5", "--mu-i", "1", "--mu-e", "1"], "k (number of servers)"),
        (["--k", "4", "--rho", "0.5", "--mu-i", "-1", "--mu-e", "1"], "mu_i"),
        (["--k", "4", "--rho", "0.5", "--mu-i", "1", "--mu-e", "0"], "mu_e"),
        (["--k", "4", "--lambda-i", "0", "--lambda-e", "1", "--mu-i", "1", "--mu-e", "1"],
         "lambda_i"),
        (["--k", "4", "--mu-i", "1", "--mu-e", "1"], "arrival rates"),
        (["--k", "4", "--rho", "0.5", "--lambda-i", "1", "--mu-i", "1", "--mu-e", "1"], "not both"),
        (["--k", "4", "--rho", "0.5", "--mu-i", "1", "--mu-e", "1", "--policy", "XF"],
         "unknown policy"),
        (["--k", "4", "--rho", "0.5", "--mu-i", "1", "--mu-e", "1", "--method", "mc"],
         "unknown method"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2(args, fragment):
    result = run("analyze", "elastic", *args)
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    assert fragment in text, text


def test_bad_input_other_commands():
    for args, fragment in [
        (["no-arrivals", "--mu-i", "abc"], "not a number"),
        (["no-arrivals", "--inelastic", "-1"], "n_inelastic"),
        (["srpt-k", "--k", "0"], ">= 1"),
    ]:
        result = run("analyze", *args)
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert fragment in result.output
