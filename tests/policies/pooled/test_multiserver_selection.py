"""Paper 004 placement rules on random states: Lemma 3.1, Corollary 3.1, Thm C.1, MaxWeight."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.policies.pooled.divisor_filling import divisor_filling_select, largest_prime_factor
from schedlab.policies.pooled.max_weight import max_weight_counts, max_weight_greedy_select
from schedlab.policies.pooled.server_filling import server_filling_select


def serve(select, needs, k):
    needs = np.asarray(needs, dtype=float)
    chosen = np.zeros(len(needs), dtype=np.int8)
    total = select(needs, len(needs), float(k), chosen)
    assert total == pytest.approx(needs[chosen == 1].sum())
    assert total <= k  # never more than k servers
    return total, chosen


@st.composite
def power_states(draw):
    x = draw(st.sampled_from([2, 3]))
    a = draw(st.integers(0, 5 if x == 2 else 3))
    k = x**a
    needs = draw(
        st.lists(st.sampled_from([x**i for i in range(a + 1)]), min_size=0, max_size=3 * k + 2)
    )
    return k, needs


@settings(max_examples=500)
@given(power_states())
def test_server_filling_lemma_3_1(state):
    """Power-of-x needs: if the jobs present need >= k servers, all k are busy; otherwise all
    jobs are served (paper 004 §3.2, Lemma 3.1 and the note after it)."""
    k, needs = state
    total, chosen = serve(server_filling_select, needs, k)
    if sum(needs) >= k:
        assert total == k
    else:
        assert chosen.all()


@settings(max_examples=500)
@given(power_states())
def test_relevant_work_efficiency_corollary_3_1(state):
    """With at least k jobs present, the served jobs are among the k of best priority and fill k
    servers (Corollary 3.1: r-relevant jobs fill the servers when k of them are present)."""
    k, needs = state
    if len(needs) < k:
        return
    total, chosen = serve(server_filling_select, needs, k)
    assert total == k
    assert not chosen[k:].any()


def literal_server_filling(needs, k):
    """§3.2 as written: M = the smallest prefix needing >= k (or all jobs); place M's jobs in
    decreasing order of need, ties by priority, until no servers remain or the next does not fit."""
    total, size = 0, len(needs)
    for i, need in enumerate(needs):
        total += need
        if total >= k:
            size = i + 1
            break
    free, chosen = k, np.zeros(len(needs), dtype=np.int8)
    for i in sorted(range(size), key=lambda i: (-needs[i], i)):
        if needs[i] > free:
            break
        chosen[i] = 1
        free -= needs[i]
    return chosen


@settings(max_examples=500)
@given(power_states())
def test_server_filling_is_the_literal_placement(state):
    """The compiled rule (which drops the last jobs of the need order instead of sorting M)
    serves exactly the jobs the literal §3.2 procedure serves."""
    k, needs = state
    _, chosen = serve(server_filling_select, needs, k)
    assert chosen.tolist() == literal_server_filling(needs, k).tolist()


@st.composite
def divisible_states(draw):
    k = draw(st.sampled_from([1, 2, 6, 10, 12, 14, 18, 30, 36, 60, 42, 70, 105]))
    divisors = [d for d in range(1, k + 1) if k % d == 0]
    needs = draw(st.lists(st.sampled_from(divisors), min_size=0, max_size=2 * k + 3))
    return k, needs


@settings(max_examples=1000)
@given(divisible_states())
def test_divisor_filling_theorem_c1(state):
    """Needs dividing k: at least k jobs present -> exactly k servers busy, using only the k jobs
    of best priority (App. C items 1-2, Theorem C.1, Corollary C.1)."""
    k, needs = state
    total, chosen = serve(divisor_filling_select, needs, k)
    assert not chosen[k:].any()
    if len(needs) >= k:
        assert total == k


def test_divisor_filling_case_1_k12():
    """k = 12, two need-1 jobs (>= k/6): place by decreasing need until one does not fit, then
    fill with need-1 jobs: 6 + 4 fit, the next 4 does not, the two 1s fill up to 12."""
    needs = [4, 1, 6, 4, 1, 3, 2, 2, 2, 2, 2, 2]
    total, chosen = serve(divisor_filling_select, needs, 12)
    assert total == 12
    assert list(np.flatnonzero(chosen)) == [0, 1, 2, 4]


def test_divisor_filling_case_2_k12_prefers_pairs():
    """k = 12 = 2^2 3, no need-1 jobs: M_2 (even needs) has 9 jobs, M_3 (odd > 1) has 3;
    2*9 > 3*3 so the servers are paired and the even jobs recursed on (k' = 6)."""
    needs = [3, 2, 4, 3, 2, 6, 3, 2, 2, 4, 2, 2]
    total, chosen = serve(divisor_filling_select, needs, 12)
    assert total == 12
    assert all(needs[i] % 2 == 0 for i in np.flatnonzero(chosen))


def test_divisor_filling_case_2_k12_prefers_triples():
    """2|M_2| = 2*2 < 3|M_3| = 3*10: triples of servers, only needs divisible by 3 served."""
    needs = [3] * 6 + [2, 4] + [3] * 4
    total, chosen = serve(divisor_filling_select, needs, 12)
    assert total == 12
    assert all(needs[i] % 3 == 0 for i in np.flatnonzero(chosen))


def test_divisor_filling_case_3_k30_multiples_of_p():
    """k = 30 (p = 5), no need-1 jobs, 5|M_5| = 5*6 >= 30: recurse on multiples of 5."""
    needs = [5, 2, 10, 3, 5, 15, 6, 5, 10, 2] + [3] * 20
    total, chosen = serve(divisor_filling_select, needs, 30)
    assert total == 30
    assert all(needs[i] % 5 == 0 for i in np.flatnonzero(chosen))


def test_divisor_filling_case_3_k30_p_subproblems():
    """k = 30, one multiple of 5 only: 5 subproblems of k/p = 6 servers on needs 2, 3, 6."""
    needs = [5, *([2, 3, 6, 2, 2, 3] * 4), 3, 3, 6, 2, 6]
    assert len(needs) == 30
    total, chosen = serve(divisor_filling_select, needs, 30)
    assert total == 30
    assert chosen[0] == 0


def test_largest_prime_factor():
    assert [largest_prime_factor(n) for n in (1, 2, 8, 12, 30, 49, 97, 210)] == [
        1,
        2,
        2,
        3,
        5,
        7,
        97,
        7,
    ]


@settings(max_examples=300)
@given(
    st.integers(1, 16),
    st.lists(
        st.tuples(st.integers(1, 8), st.integers(0, 5)),
        min_size=1,
        max_size=4,
        unique_by=lambda t: t[0],
    ),
)
def test_max_weight_is_an_exact_knapsack(k, classes):
    need = np.array([c[0] for c in classes], dtype=float)
    count = np.array([c[1] for c in classes], dtype=np.int64)
    take = np.zeros(len(classes), dtype=np.int64)
    best = max_weight_counts(need, count, float(k), take)
    assert np.all(take <= count) and (take * need).sum() <= k
    assert best == pytest.approx((take * count).sum())
    brute = max(
        sum(x * c for x, c in zip(xs, count, strict=True))
        for xs in itertools.product(*(range(c + 1) for c in count))
        if sum(x * n for x, n in zip(xs, need, strict=True)) <= k
    )
    assert best == brute


@pytest.mark.parametrize(
    ("needs", "k", "served"),
    [
        # need 1: count 5, key 5*4//1 = 20 (the largest); 1*5 >= 4: the first 4 need-1 jobs alone
        ([1, 1, 2, 1, 1, 2, 1], 4, [0, 1, 3, 4]),
        # need 2: count 3, key 3*4//2 = 6 > need 1's 1*4//1 = 4; 2*3 >= 4: first 2 need-2 jobs
        ([2, 1, 2, 2], 4, [0, 2]),
        # keys: need 1 -> 2*4//1 = 8, need 2 -> 3*4//2 = 6; 1*2 < 4: need-1 jobs first (arrival
        # order), then need-2 jobs first fit until full
        ([2, 1, 2, 1, 2], 4, [0, 1, 3]),
        # k = 8, keys: need 2 -> 3*8//2 = 12, need 1 -> 8, need 4 -> 2*8//4 = 4; 2*3 < 8:
        # the three need-2 jobs (6), the need-1 job (7), no need-4 job fits
        ([4, 2, 4, 2, 1, 2], 8, [1, 3, 4, 5]),
        # k = 6 (integer division): need 4 -> 1*6//4 = 1, need 1 -> 2*6//1 = 12; both need-1
        # jobs, then the need-4 job fits the 4 servers left
        ([4, 1, 1], 6, [0, 1, 2]),
        # equal keys 4 for needs 1, 2, 4 (1*4//1, 2*4//2, 4*4//4): the tie goes to need 1 and
        # 1*1 < 4, so every job by arrival order, first fit: job 0 (1), job 5 (2); 3 servers
        ([1, 4, 4, 4, 4, 2, 2], 4, [0, 5]),
    ],
)
def test_max_weight_greedy_follows_the_authors_rule_on_hand_worked_queues(needs, k, served):
    chosen = np.zeros(len(needs), dtype=np.int8)
    used = max_weight_greedy_select(np.array(needs, dtype=float), len(needs), k, chosen)
    assert np.flatnonzero(chosen).tolist() == served
    assert used == sum(needs[i] for i in served) <= k
