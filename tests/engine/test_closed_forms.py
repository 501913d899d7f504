"""Simulation against closed-form queueing results (Erlang C, Erlang B, M/M/1)."""

from __future__ import annotations

import pytest

import schedlab
from schedlab.analysis.closed_forms import (
    erlang_b,
    erlang_c,
    mmc_mean_number_in_system,
    mmc_mean_response_time,
)
from tests.helpers.specs import pooled_spec

# A correct simulator misses a 95% interval one time in twenty by design; with a dozen fixed-seed
# cases we check the 99.9% interval built from the same batch means (see docs/testing.md).
LEVEL = 0.999


def test_erlang_formulas_against_known_values():
    assert erlang_b(1, 1.0) == pytest.approx(0.5)
    assert erlang_b(2, 1.0) == pytest.approx(0.2)  # a^2/2 / (1 + a + a^2/2)
    assert erlang_c(1, 0.5) == pytest.approx(0.5)  # M/M/1: P(wait) = rho
    assert mmc_mean_response_time(1, 0.5, 1.0) == pytest.approx(2.0)  # 1/(mu - lambda)
    with pytest.raises(ValueError, match="unstable"):
        erlang_c(2, 2.0)


@pytest.mark.parametrize("k", [1, 4, 16])
@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_pooled_fcfs_with_unit_needs_is_mmk(k, rho):
    arrivals = 400_000 if rho == 0.9 else 150_000
    result = schedlab.simulate(pooled_spec(k, rho, arrivals=arrivals, seed=11 + k))
    lam = rho * k
    assert result.stable
    truth_t = mmc_mean_response_time(k, lam, 1.0)
    est = result["mean_response_time"]
    assert est.covers(truth_t, LEVEL), (est, truth_t)
    assert result["mean_number_in_system"].covers(mmc_mean_number_in_system(k, lam, 1.0), LEVEL)
    assert result["utilization[servers]"].covers(rho, LEVEL)
    # the interval is informative, not just wide
    assert est.half_width < 0.1 * truth_t


@pytest.mark.parametrize("policy", ["fcfs", "server-filling"])
def test_single_server_is_mm1(policy):
    result = schedlab.simulate(pooled_spec(1, 0.7, policy=policy, arrivals=200_000, seed=3))
    assert result["mean_response_time"].covers(1.0 / (1.0 - 0.7), LEVEL)


@pytest.mark.parametrize(("servers", "capacity", "offered"), [(1, 10, 8.0), (4, 3, 10.0)])
def test_loss_first_fit_blocking_is_erlang_b(servers, capacity, offered):
    slots = servers * capacity
    spec = {
        "cluster": {"servers": servers, "capacity": capacity},
        "workload": {
            "load": offered / slots,
            "classes": [{"demand": 1, "duration": {"dist": "exponential", "mean": 2.0}}],
        },
        "policy": {"name": "first-fit"},
        "run": {"arrivals": 300_000, "seed": 5},
    }
    result = schedlab.simulate(spec)
    assert result.family == "loss"
    est = result["loss_probability"]
    assert est.covers(erlang_b(slots, offered), LEVEL), (est, erlang_b(slots, offered))
    # carried load = a (1 - B): the utilization of the slots
    carried = offered * (1 - erlang_b(slots, offered)) / slots
    assert result["utilization[resource]"].covers(carried, LEVEL)


def test_erlang_b_is_insensitive_to_the_duration_distribution():
    """Erlang B holds for any service distribution with the same mean (M/G/c/c)."""
    spec = {
        "cluster": {"servers": 1, "capacity": 6},
        "workload": {
            "load": 5.0 / 6,
            "classes": [
                {"demand": 1, "duration": {"dist": "hyperexponential", "mean": 1.0, "scv": 8.0}}
            ],
        },
        "policy": {"name": "first-fit"},
        "run": {"arrivals": 400_000, "seed": 9},
    }
    assert schedlab.simulate(spec)["loss_probability"].covers(erlang_b(6, 5.0), LEVEL)
