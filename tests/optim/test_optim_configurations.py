"""Partition I (eq. (6)), K_RED (eq. (7)) and Proposition 1 of paper 000."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.optim.configurations import (
    feasible_configurations,
    is_feasible,
    max_weight,
    reduced_compact,
    reduced_configurations,
    universal_partition,
    vq_index,
)


@pytest.mark.parametrize("J", range(2, 16))
def test_k_red_has_4j_minus_4_feasible_configurations(J):
    k = reduced_configurations(J)
    assert k.shape == (4 * J - 4, 2 * J)
    assert len({row.tobytes() for row in k}) == 4 * J - 4  # all distinct
    upper = universal_partition(J).upper
    for row in k:
        assert is_feasible(row, upper), row  # feasible for upper-rounded virtual queues (Def. 4)
        others = np.flatnonzero(row)
        others = others[others != 1]
        assert others.size == 1  # "jobs from only one VQ_j, or from VQ_1 and one other" (§V-B)
        assert row[1] in (0, 1)


def test_k_red_for_j_3_is_eq_7():
    e = np.eye(6, dtype=int)
    expected = [
        e[0],  # 2^0 e_0
        2 * e[2],  # 2^1 e_2
        4 * e[4],  # 2^2 e_4
        3 * e[3],  # 3 * 2^0 e_3
        6 * e[5],  # 3 * 2^1 e_5
        e[1] + 1 * e[4],  # e_1 + floor(4/3) e_4
        e[1] + 1 * e[3],  # e_1 + 2^0 e_3
        e[1] + 2 * e[5],  # e_1 + 2^1 e_5
    ]
    np.testing.assert_array_equal(reduced_configurations(3), np.array(expected))
    assert [c.count for c in reduced_compact(3)] == [1, 2, 4, 3, 6, 1, 1, 2]


def test_universal_partition_eq_6():
    part = universal_partition(3)
    np.testing.assert_allclose(part.upper, [1, 2 / 3, 1 / 2, 1 / 3, 1 / 4, 1 / 6])
    np.testing.assert_allclose(part.lower, [2 / 3, 1 / 2, 1 / 3, 1 / 4, 1 / 6, 1 / 8])
    np.testing.assert_array_equal(part.lower[:-1], part.upper[1:])  # contiguous
    # right-closed intervals: 1/2 is in I_2, 2/3 in I_1; sizes <= 1/2^J join VQ_{2J-1}
    np.testing.assert_array_equal(
        vq_index(np.array([1.0, 0.7, 2 / 3, 0.6, 0.5, 0.4, 1 / 3, 0.3, 0.2, 0.13, 0.125, 1e-6]), 3),
        [0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 5],
    )
    with pytest.raises(ValueError):
        universal_partition(1)


def test_feasible_configurations_definition_1():
    confs = feasible_configurations([0.4, 0.6])
    assert {tuple(k) for k in confs} == {(0, 0), (1, 0), (2, 0), (0, 1), (1, 1)}
    maximal = feasible_configurations([0.4, 0.6], maximal=True)
    assert {tuple(k) for k in maximal} == {(2, 0), (1, 1)}
    # capacity 10, sizes 2 and 5 (paper 000 §VII-A2)
    assert {tuple(k) for k in feasible_configurations([2, 5], 10, maximal=True)} == {
        (5, 0),
        (2, 1),
        (0, 2),
    }


def test_max_weight_ties_go_to_the_first_configuration():
    k = reduced_configurations(2)
    idx, w = max_weight(k, np.zeros(4))
    assert (idx, w) == (0, 0.0)
    idx, w = max_weight(k, np.array([0, 5, 0, 2]))  # e_1 + e_3 (7) beats 3 e_3 (6)
    assert w == 7 and tuple(k[idx]) == (0, 1, 0, 1)


@st.composite
def refinements(draw):
    """A partition X refining I (Proposition 1), as sub-interval right endpoints per I_j, and a
    queue vector Q^(X) over it."""
    J = draw(st.sampled_from([2, 3]))
    part = universal_partition(J)
    ends, owner = [], []
    for j in range(2 * J):
        lo, hi = part.lower[j], part.upper[j]
        cuts = sorted(draw(st.lists(st.floats(0.05, 0.95), max_size=2 if J == 2 else 1)))
        for c in cuts:
            ends.append(lo + c * (hi - lo))
            owner.append(j)
        ends.append(hi)
        owner.append(j)
    q = draw(st.lists(st.integers(0, 60), min_size=len(ends), max_size=len(ends)))
    return J, np.array(ends), np.array(owner), np.array(q)


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(refinements())
def test_proposition_1_two_thirds_of_any_finer_partition(case):
    """max_{k in K_RED} <k, Q> >= 2/3 <k^(X), Q^(X)> for every feasible k^(X) of any refinement X
    of I with upper-rounded sizes (eq. (10))."""
    J, ends, owner, q_x = case
    q = np.bincount(owner, weights=q_x, minlength=2 * J)  # eq. (11)
    _, red = max_weight(reduced_configurations(J), q)
    finer = feasible_configurations(ends, maximal=True)
    best_x = float((finer @ q_x).max())
    assert red >= 2.0 / 3.0 * best_x - 1e-9, (red, best_x)


def test_proposition_1_is_tight():
    """Sizes 0.45 and 0.55 (paper 000 Appendix E's example): 2/3 is attained."""
    ends = np.array([0.45, 0.5, 0.55, 2 / 3, 1.0])  # X refines I_2 and I_1 of partition I (J = 2)
    owner = np.array([2, 2, 1, 1, 0])
    q_x = np.array([10, 0, 20, 0, 0])
    q = np.bincount(owner, weights=q_x, minlength=4)
    _, red = max_weight(reduced_configurations(2), q)
    best_x = float((feasible_configurations(ends, maximal=True) @ q_x).max())
    assert best_x == 30 and red == 20
