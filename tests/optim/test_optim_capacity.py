"""rho*: the capacity LP (paper 000 eq. (4)) and the rounded bounds (Definition 4, Theorem 1)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.model.distributions import BoundedPareto, Discrete, Uniform
from schedlab.optim.capacity_lp import (
    common_grid,
    lp_over_configurations,
    max_workload,
    unbounded_knapsack,
)
from schedlab.optim.configurations import feasible_configurations
from schedlab.optim.rounded_bounds import SizeLaw, partition_level, rounded_bounds


def test_fig3a_example_rho_star_is_2():
    """§VII-A1: sizes 0.4 and 0.6 equally likely, one server: configuration (1,1) supports any
    arrival rate below 0.02 per slot with mean service 100 slots."""
    res = max_workload([0.4, 0.6], [0.5, 0.5])
    assert res.rho_star == pytest.approx(2.0, abs=1e-12)
    assert res.arrival_rate(100) == pytest.approx(0.02, abs=1e-14)
    assert res.method == "grid-dp" and res.grid == 5
    np.testing.assert_array_equal(res.configurations[0], [[1, 1]])
    # VQS only packs (2,0) or (0,1) here: 2/3 of rho*, i.e. 0.0133 per slot
    vqs = lp_over_configurations([[2, 0], [0, 1]], [0.5, 0.5])
    assert vqs == pytest.approx(4 / 3, abs=1e-12)


def test_fig3b_example_mixture_4_9_and_5_9():
    """§VII-A2: capacity 10, sizes 2 and 5 with P = (2/3, 1/3): lambda < 4/9 mu_1 + 5/9 mu_2."""
    res = max_workload([2, 5], [2 / 3, 1 / 3], capacity=10)
    assert res.rho_star == pytest.approx(10 / 3, abs=1e-12)
    configs = {tuple(k): w for k, w in zip(res.configurations[0], res.weights[0], strict=True)}
    assert configs == pytest.approx({(5, 0): 4 / 9, (0, 2): 5 / 9})
    assert res.arrival_rate(100) > 0.0306  # the paper's rate is supportable
    assert res.traffic_intensity == pytest.approx(1.0)


def test_servers_scale_and_heterogeneous_pools():
    assert max_workload([0.4, 0.6], servers=7).rho_star == pytest.approx(14.0)
    # capacities 1 and 2 x 0.5, sizes 1/2 and 1/4: perfect packing, rho* = total capacity / E[R]
    res = max_workload([0.5, 0.25], pools=[(1, 1.0), (2, 0.5)])
    assert res.rho_star == pytest.approx(2.0 / 0.375)
    # a type that fits no server: nothing is supportable
    assert max_workload([0.5, 1.5]).rho_star == 0.0


def test_enumeration_path_for_sizes_off_any_grid():
    res = max_workload([math.pi / 10, math.e / 10])
    assert res.method == "enumeration"
    assert res.rho_star == pytest.approx(3.0)  # every maximal configuration holds 3 jobs


def test_common_grid():
    assert common_grid([0.4, 0.6, 1.0]) == 5
    assert common_grid([2, 5, 10]) == 1
    assert common_grid([math.pi]) is None


def test_unbounded_knapsack_is_exact():
    value, k = unbounded_knapsack(np.array([3, 4, 5]), np.array([4.0, 5.0, 7.0]), 12)
    assert int(k @ [3, 4, 5]) <= 12 and float(k @ [4.0, 5.0, 7.0]) == value
    brute = max(
        a * 4 + b * 5 + c * 7
        for a in range(5)
        for b in range(4)
        for c in range(3)
        if 3 * a + 4 * b + 5 * c <= 12
    )
    assert value == brute


@st.composite
def grid_instances(draw):
    n = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n, unique=True))
    probs = draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n))
    servers = draw(st.integers(1, 4))
    return np.array(sizes) / 20.0, np.array(probs) / sum(probs), servers


@settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)
@given(grid_instances())
def test_column_generation_equals_full_enumeration_and_lemma_bounds(case):
    sizes, probs, servers = case
    res = max_workload(sizes, probs, servers=servers)
    full = lp_over_configurations(feasible_configurations(sizes, maximal=True), probs, servers)
    assert res.rho_star == pytest.approx(full, rel=1e-9)
    mean = float(probs @ sizes)
    # Lemma 1: rho* <= L / E[R]; Theorem 2's proof: BF-J/S supports rho < L / (2 E[R])
    assert res.rho_star <= servers / mean * (1 + 1e-9)
    assert res.rho_star >= servers / (2 * mean) * (1 - 1e-9)
    # the optimal mix serves every type at rate >= rho* P_j
    served = sum(w * k for k, w in zip(res.configurations[0], res.weights[0], strict=True))
    assert np.all(servers * served >= res.rho_star * probs * (1 - 1e-7))


def test_rounded_bounds_exact_for_grid_discrete_laws():
    res = rounded_bounds(Discrete(dist="discrete", values=[0.4, 0.6]).demand_law())
    assert res.exact and res.lower == pytest.approx(2.0) and res.upper == pytest.approx(2.0)
    res = rounded_bounds(SizeLaw.discrete([2, 5], [2 / 3, 1 / 3]), capacity=10.0)
    assert res.exact and res.rho_star == pytest.approx(10 / 3)


def test_rounded_bounds_bracket_an_off_grid_discrete_law():
    law = SizeLaw.discrete([math.pi / 10, math.e / 10])
    res = rounded_bounds(law, max_level=3)
    assert res.lower <= 3.0 <= res.upper
    assert res.gap < 0.01


def test_rounded_bounds_bracket_and_converge_for_uniform_sizes():
    """Unif[0.1, 0.9] on 5 servers: sizes x and 1 - x pair up exactly, so rho* = L / E[R] = 10
    (Lemma 1 is attained). Every level brackets it and the bracket shrinks (Theorem 1)."""
    res = rounded_bounds(
        Uniform(dist="uniform", low=0.1, high=0.9).demand_law(),
        servers=5,
        max_level=5,
        tol=1e-6,
    )
    gaps = []
    for lv in res.levels:
        assert lv.lower <= 10.0 + 1e-9 <= lv.upper + 2e-9
        gaps.append(lv.upper - lv.lower)
    assert all(b < a for a, b in itertools.pairwise(gaps))
    assert res.levels[-1].upper - res.levels[-1].lower < 0.5  # 5% at 64 cells
    lo, hi = res.traffic_intensity()
    assert lo <= 1.0 <= hi


def test_rounded_bounds_group_many_atoms():
    """An empirical law with 60 distinct values: coarse levels group atoms (rounded to the group's
    sup/inf) and still bracket the exact LP over all values."""
    rng = np.random.default_rng(5)
    values = rng.integers(10, 70, 3000) / 200.0
    law = SizeLaw.from_samples(values)
    exact = max_workload(law.atoms, law.atom_probs, servers=3).rho_star
    res = rounded_bounds(law, servers=3, max_level=3, tol=1e-9)
    assert res.levels[0].types < law.atoms.size
    for lv in res.levels:
        assert lv.lower <= exact * (1 + 1e-9) and exact <= lv.upper * (1 + 1e-9)


def test_rounded_bounds_weighted_by_duration_and_bounded_pareto():
    law = SizeLaw.from_samples([0.2, 0.5, 0.5], weights=[4.0, 1.0, 1.0])
    np.testing.assert_allclose(law.atom_probs, [2 / 3, 1 / 3])
    bp = BoundedPareto(dist="bounded_pareto", alpha=1.5, low=0.05, high=1.0).demand_law()
    res = rounded_bounds(bp, servers=2, max_level=4, tol=1e-6)
    assert 0 < res.lower < res.upper
    assert res.lower <= 2 / bp.mean * (1 + 1e-6)  # Lemma 1: rho* <= L / E[R]
    infs, sups, probs = partition_level(bp, 2)
    assert probs.sum() == pytest.approx(1.0) and np.all(infs <= sups)


def test_rounded_bounds_refuse_sizes_above_capacity():
    with pytest.raises(ValueError, match="largest server"):
        rounded_bounds(SizeLaw.uniform(0.5, 1.5))
