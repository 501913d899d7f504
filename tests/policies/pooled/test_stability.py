"""Stability in paper 004's Fig. 2 setting (k = 8, needs uniform on {1,2,4,8}, exponential sizes).

ServerFilling is throughput-optimal in the power-of-two setting (paper 004 §3.2, Lemma 3.1), so it
is stable at every load < 1. FCFS wastes servers to head-of-line blocking; its exact stability limit
rho* comes from the saturated-system CTMC (schedlab.analysis.saturated), which is checked here
against a simulated overloaded FCFS system.
"""

from __future__ import annotations

import pytest

import schedlab
from schedlab.analysis.saturated import fcfs_saturated
from tests.helpers.specs import paper004_spec

SATURATED = fcfs_saturated(8, [1, 2, 4, 8], [0.25] * 4, [1.0, 2.0, 4.0, 8.0])


def test_fcfs_stability_limit_value():
    # Reported in docs/models.md and printed by `make run`.
    assert SATURATED.load_limit == pytest.approx(0.4596, abs=1e-4)


def test_saturated_throughput_matches_overloaded_simulation():
    """Overloaded FCFS serves at exactly the saturated throughput X."""
    spec = paper004_spec(0.8, "fcfs", 300_000, seed=2, allow_unstable=True, drain=False)
    result = schedlab.simulate(spec)
    assert not result.stable
    assert result["throughput"].covers(SATURATED.throughput, 0.999), (
        result["throughput"],
        SATURATED.throughput,
    )


def test_server_filling_is_stable_at_095_and_fcfs_is_not():
    sf = schedlab.simulate(paper004_spec(0.95, "server-filling", 400_000, seed=4))
    fcfs = schedlab.simulate(paper004_spec(0.95, "fcfs", 400_000, seed=4))
    assert sf.stable, sf.instability
    assert sf["utilization[servers]"].covers(0.95, 0.999)
    assert not fcfs.stable
    assert "stability limit 0.4596" in fcfs.instability
    # an unstable run reports no finite means
    assert fcfs.to_dict()["metrics"]["mean_response_time"]["mean"] is None


@pytest.mark.parametrize(("load", "stable"), [(0.40, True), (0.52, False)])
def test_fcfs_either_side_of_its_limit(load, stable):
    result = schedlab.simulate(paper004_spec(load, "fcfs", 300_000, seed=6))
    assert result.stable is stable, result.instability
