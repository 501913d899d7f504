"""paper 001 §6.1 subroutines and the capacity LP of eq. (2) against brute force and hand-worked
examples (Example 1 and 2 of §7.1, Table 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.optim.knapsack import (
    dp_configuration,
    greedy_configuration,
    greedy_ratio,
    max_weight_configuration,
    maximal_configurations,
)
from schedlab.optim.vm_capacity import ServerType, max_scaling

TABLE1 = np.array([[15, 8, 1690], [17.1, 6.5, 420], [7, 20, 1690]])
SERVER1 = np.array([90, 90, 5000.0])


def brute_force(w, cap):
    """All feasible configurations (including 0) by exhaustive search."""
    bound = [
        int(min(cap[r] // w[j, r] for r in range(w.shape[1]) if w[j, r] > 0)) for j in range(len(w))
    ]
    rows = [
        k
        for k in itertools.product(*[range(b + 1) for b in bound])
        if np.all(np.asarray(k) @ w <= cap + 1e-9)
    ]
    return np.array(rows)


@st.composite
def instances(draw):
    R = draw(st.integers(1, 2))
    J = draw(st.integers(1, 3))
    cap = np.array([draw(st.integers(1, 12)) for _ in range(R)], dtype=float)
    w = np.array(
        [[draw(st.integers(0, int(cap[r]))) for r in range(R)] for _ in range(J)], dtype=float
    )
    for j in range(J):
        if w[j].max() == 0:
            w[j, 0] = 1
    q = np.array([draw(st.integers(0, 20)) for _ in range(J)], dtype=float)
    return w, cap, q


@settings(max_examples=150, deadline=None)
@given(instances())
def test_subroutines_against_brute_force(inst):
    w, cap, q = inst
    feasible = brute_force(w, cap)
    optimum = float((feasible @ q).max())
    configs = maximal_configurations(w, cap)
    # the maximal configurations are exactly the feasible ones nothing can be added to
    maximal = {
        tuple(k)
        for k in feasible
        if not any(
            np.all((k + np.eye(len(w), dtype=int)[j]) @ w <= cap + 1e-9) for j in range(len(w))
        )
    }
    assert {tuple(k) for k in configs} == maximal
    _, w_enum = max_weight_configuration(configs, q)
    k_dp, w_dp = dp_configuration(w, cap, q)
    assert w_enum == optimum
    assert w_dp == optimum
    assert float(k_dp @ q) == optimum
    assert tuple(k_dp) in maximal  # never the zero configuration
    r = greedy_ratio(w, cap)
    for improved in (False, True):
        k_g, w_g = greedy_configuration(w, cap, q, improved=improved)
        assert np.all(k_g @ w <= cap + 1e-9) and k_g.sum() > 0
        assert w_g >= r * optimum - 1e-9
    assert (
        greedy_configuration(w, cap, q, improved=True)[1]
        >= greedy_configuration(w, cap, q, improved=False)[1]
    )


def test_example1_configurations():
    """§7.1 Example 1: capacity 6, sizes 4 and 1: maximal configurations (1,2) and (0,6)."""
    assert {tuple(k) for k in maximal_configurations([[4], [1]], [6])} == {(1, 2), (0, 6)}


def test_table1_configurations_fit_and_are_maximal():
    configs = maximal_configurations(TABLE1, SERVER1)
    assert len(configs) == 6
    for k in configs:
        used = k @ TABLE1
        assert np.all(used <= SERVER1)
        assert all(np.any(used + TABLE1[j] > SERVER1) for j in range(3))


def test_lemma61_ratio():
    # one resource, N_f = 1: r = 1/2
    assert greedy_ratio([[0.6], [0.5]], [1.0]) == pytest.approx(0.5)
    assert greedy_ratio(TABLE1, SERVER1) == pytest.approx(2 / (3 * 3))


def test_capacity_example1_zeta():
    """Example 1: (0.5, 4) is the average of (1,2) and (0,6): on the boundary of C, so the
    workload 0.89 (0.5, 4) has traffic intensity 0.89."""
    res = max_scaling([[4], [1]], [ServerType(1, (6.0,))], [0.5, 4.0])
    assert res.max_scaling == pytest.approx(1.0)
    assert res.workload(0.89) == pytest.approx([0.445, 3.56])
    # the small type alone: 6 per server
    assert max_scaling([[4], [1]], [ServerType(1, (6.0,))], [0, 1]).max_scaling == pytest.approx(6)


def test_capacity_example2_and_table1():
    res = max_scaling([[1], [2], [4], [8]], [ServerType(1, (c,)) for c in (1, 2, 4, 8)], [1] * 4)
    assert res.max_scaling == pytest.approx(1.0)
    # Table 1, rates proportional to (2/3, 11/3, 2/3): one unit of this workload per server
    res = max_scaling(TABLE1, [ServerType(20, tuple(SERVER1))], [2 / 3, 11 / 3, 2 / 3])
    assert res.max_scaling == pytest.approx(20.0)


EXAMPLE1_TOML = """
[cluster]
servers = 1
capacity = 6

[workload]
rate = 4.005

[[workload.classes]]
probability = 0.1111111111111111
demand = 4
duration = { dist = "exponential", mean = 1 }

[[workload.classes]]
probability = 0.8888888888888888
demand = 1
duration = { dist = "exponential", mean = 1 }

[policy]
name = "vm-stalling"

[run]
arrivals = 1000
"""


def test_analyze_capacity_spec_json(tmp_path):
    """`schedlab analyze capacity --spec`: Example 1's workload 0.89 (0.5, 4) has zeta = 0.89."""
    import json

    from typer.testing import CliRunner

    from schedlab.cli import app

    path = tmp_path / "ex1.toml"
    path.write_text(EXAMPLE1_TOML)
    res = CliRunner().invoke(app, ["analyze", "capacity", "--spec", str(path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["max_scaling"] == pytest.approx(1 / 0.89)
    assert data["zeta"] == pytest.approx(0.89)
    bad = tmp_path / "bad.toml"
    bad.write_text(
        EXAMPLE1_TOML.replace("demand = 4", 'demand = { dist = "uniform", low = 1, high = 4 }')
    )
    res = CliRunner().invoke(app, ["analyze", "capacity", "--spec", str(bad), "--json"])
    assert res.exit_code == 2
    assert "workload.classes[0].demand" in res.output


def test_m14_trap_condition_against_brute_force_at_20_servers():
    """docs/vm-scheduling.md "M14 on Table 1": the trap condition derived from the maximal
    configurations (a frozen mix serves fewer high-memory VMs than the load) against a brute
    force over every packing of a Table 1 server and every mix of 20 servers: at L = 20 it
    reads n4 + 2 n5 <= 5 (n4, n5: servers in configurations with 4 and 5 high-memory slots)."""
    import itertools

    from schedlab.reproduce.psychas2018 import TABLE1, TABLE1_RATES, TABLE1_SERVER, ZETA, m14_trap

    w = np.array(list(TABLE1.values()))
    cap = np.array(TABLE1_SERVER)
    fits = [
        k for k in itertools.product(range(15), repeat=3) if np.all(np.array(k) @ w <= cap + 1e-9)
    ]
    maximal = {
        k for k in fits if all(np.any(np.array(k) @ w + w[j] > cap + 1e-9) for j in range(3))
    }
    trap = m14_trap(20)
    assert set(trap.extra) == maximal
    assert trap.base == 3 and sorted(trap.extra.values()) == [0, 0, 0, 1, 1, 2]
    assert trap.most == 5  # n4 + 2 n5 <= 5
    rate = ZETA * 5.0 * TABLE1_RATES[1] / sum(TABLE1_RATES) * 20  # capacity LP: s* = 5
    configs = sorted(maximal)
    trapped = 0
    for mix in itertools.combinations_with_replacement(range(len(configs)), 20):
        counts = {configs[i]: mix.count(i) for i in set(mix)}
        served = sum(k[1] * n for k, n in counts.items())
        assert trap.trapped(counts) == (served < rate), counts
        trapped += served < rate
    assert trapped > 0
    assert "n[0, 4, 1] + n[1, 4, 0] + 2 n[0, 5, 0] <= 5" in str(trap) or "<= 5" in str(trap)
