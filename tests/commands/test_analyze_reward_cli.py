"""``schedlab analyze reward`` (paper 002 §3) on the shipped worst-case example and bad input."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.optim.reward import StaticProblem

WORST = (resources.files("schedlab") / "examples" / "dra-worst-case.toml").read_text()
runner = CliRunner()


def test_reward_json_matches_the_library(tmp_toml) -> None:
    result = runner.invoke(app, ["analyze", "reward", "--spec", str(tmp_toml(WORST)), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # rho_j = rate p_j E[S_j] / L, from the spec's numbers
    assert np.allclose(data["rho"], [2.68, 1.69, 2.86, 2.52], atol=1e-9)
    problem = StaticProblem(
        [[1, 1], [4, 16], [2, 32], [32, 256]], [80, 640], [1.125, 6.0, 6.0, 64.0]
    )
    rho = np.array([2.68, 1.69, 2.86, 2.52])
    assert data["F_star"] == pytest.approx(problem.optimum(rho).value, rel=1e-9)
    assert data["F_greedy"] == pytest.approx(problem.global_greedy(rho).reward, rel=1e-9)
    assert data["ratio"] == pytest.approx(data["F_greedy"] / data["F_star"])
    assert 0.5 <= data["ratio"] <= 1.0
    assert sum(c["fraction"] for c in data["global_greedy"]) <= 1 + 1e-9


def test_reward_refuses_random_demands(tmp_toml) -> None:
    spec = WORST.replace(
        "demand = { cpu = 1, mem = 1 }",
        "demand = { cpu = 1, mem = { dist = 'uniform', low = 1, high = 2 } }",
    )
    result = runner.invoke(app, ["analyze", "reward", "--spec", str(tmp_toml(spec))])
    assert result.exit_code == 2
    assert "fixed demand" in result.output
    assert "Traceback" not in result.output
