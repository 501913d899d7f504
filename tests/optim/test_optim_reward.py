"""The static reward problem of paper 002 (psychas2022, §3): MaxReward, LP (3), GPA, x^g.

Truth: hand-worked examples from Definitions 2.2-3.2 and Algorithm 1 (as restored in
notes/dra.md), brute-force enumeration of every feasible configuration (MaxReward and LP (3) over
the full configuration set), and Theorems 3.7/3.9 on random instances.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from schedlab.optim.reward import StaticProblem, monotone_greedy_check, upper_bound

# The introduction's example: (0.6, 0.6) reward 4, (0.7, 0.1) reward 3, (0.1, 0.7) reward 3.
INTRO = StaticProblem(
    demand=[[0.6, 0.6], [0.7, 0.1], [0.1, 0.7]], capacity=[1.0, 1.0], reward=[4.0, 3.0, 3.0]
)


def all_configurations(problem: StaticProblem) -> np.ndarray:
    """Every feasible configuration, by brute force."""
    d, c = problem.demand, problem.capacity
    most = [int(np.min(c[d[j] > 0] / d[j][d[j] > 0]) + 1e-9) for j in range(problem.n_types)]
    rows = [
        k
        for k in itertools.product(*(range(m + 1) for m in most))
        if np.all(np.array(k) @ d <= c + 1e-9)
    ]
    return np.array(rows, dtype=np.int64)


def brute_max_reward(problem: StaticProblem, subset: list[int]) -> np.ndarray:
    confs = all_configurations(problem)
    outside = [j for j in range(problem.n_types) if j not in subset]
    confs = confs[np.all(confs[:, outside] == 0, axis=1)] if outside else confs
    # Definition 2.2: highest reward, then the larger k_j at the first difference.
    best = max(confs.tolist(), key=lambda k: (round(float(np.dot(k, problem.reward)), 9), k))
    return np.array(best)


def brute_optimum(problem: StaticProblem, rho: np.ndarray) -> float:
    """LP (3) over the full configuration set."""
    confs = all_configurations(problem).astype(float)
    n, m = problem.n_types, confs.shape[0]
    a_ub = np.hstack([np.eye(n), -confs.T])
    a_eq = np.concatenate([np.zeros(n), np.ones(m)])[None, :]
    res = linprog(
        np.concatenate([-problem.reward, np.zeros(m)]),
        A_ub=a_ub,
        b_ub=np.zeros(n),
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=[(0, r) for r in rho] + [(0, None)] * m,
        method="highs",
    )
    return -res.fun


# ---- hand-worked examples -----------------------------------------------------------------


def test_max_reward_intro_example() -> None:
    # K has (1,0,0) u=4, (0,1,0)/(0,0,1) u=3, (0,1,1) u=6: the pair packs best.
    assert INTRO.max_reward([0, 1, 2]).tolist() == [0, 1, 1]
    assert INTRO.max_reward([0, 2]).tolist() == [1, 0, 0]
    assert INTRO.max_reward([1, 2]).tolist() == [0, 1, 1]
    assert INTRO.max_reward([1]).tolist() == [0, 1, 0]
    assert INTRO.max_reward([]).tolist() == [0, 0, 0]


def test_max_reward_tie_break_definition_2_2() -> None:
    # 1-D capacity 4: type 0 size 2 reward 2, type 1 size 1 reward 1. (2,0), (1,2), (0,4) all
    # earn 4; Definition 2.2 prefers the larger k_1: (2, 0).
    p = StaticProblem(demand=[[2.0], [1.0]], capacity=[4.0], reward=[2.0, 1.0])
    assert p.max_reward([0, 1]).tolist() == [2, 0]
    # Reversed indexes: now the unit type comes first and (0, 4) wins the tie.
    q = StaticProblem(demand=[[1.0], [2.0]], capacity=[4.0], reward=[1.0, 2.0])
    assert q.max_reward([0, 1]).tolist() == [4, 0]


def test_global_greedy_intro_example() -> None:
    # rho = (1, 1/2, 1/2). Iteration 1: k_1 = (0,1,1), x_1 = min(1/2, 1/2) = 1/2, j_1 = type 1
    # (lowest index on the tie). Iteration 2: J_2 = {0, 2}, k_2 = (1,0,0) (4 > 3),
    # x_2 = min(rho_0 = 1, mass left 1/2) = 1/2: the servers run out.
    # F^g = 1/2 * 6 + 1/2 * 4 = 5, which is also F* (a server earns at most 6 and only half of
    # the servers can hold a pair).
    g = INTRO.global_greedy([1.0, 0.5, 0.5])
    assert g.configurations.tolist() == [[0, 1, 1], [1, 0, 0]]
    assert g.fractions.tolist() == [0.5, 0.5]
    assert g.exhausted.tolist() == [1, -1]
    assert g.reward == pytest.approx(5.0)
    assert INTRO.optimum([1.0, 0.5, 0.5]).value == pytest.approx(5.0)


def test_gpa_intro_example_with_rounding() -> None:
    # Yhat = (1, 3, 2), L = 10. Iteration 1: k_1 = (0,1,1), n_1 = min(ceil(3/1), ceil(2/1)) = 2,
    # j_1 = type 2; Yrem = (1, 1, 0). Iteration 2: J_2 = {0, 1}: (0.6,0.6)+(0.7,0.1) does not
    # fit, so k_2 = (1,0,0) (u = 4 > 3), n_2 = 1, j_2 = 0; Yrem = (0, 1, 0). Iteration 3:
    # J_3 = {1}: k_3 = (0,1,0), n_3 = 1. Six servers stay empty.
    a = INTRO.gpa([1, 3, 2], 10)
    assert a.configurations.tolist() == [[0, 1, 1], [1, 0, 0], [0, 1, 0]]
    assert a.counts.tolist() == [2, 1, 1]
    assert a.exhausted.tolist() == [2, 0, 1]
    assert a.empty == 6
    assert a.slots().tolist() == [1, 3, 2]


def test_gpa_ceil_and_server_cap() -> None:
    # 1-D capacity 1: size 1/4 reward 1, size 1/2 reward 3. MaxReward = (0, 2) (u = 6 > 5 > 4).
    # Yhat = (5, 3), L = 4: n_1 = ceil(3/2) = 2 servers of (0,2) (one slot spare), Yrem = (5, 0);
    # k_2 = (4, 0), n_2 = min(ceil(5/4) = 2, Lrem = 2) = 2.
    p = StaticProblem(demand=[[0.25], [0.5]], capacity=[1.0], reward=[1.0, 3.0])
    a = p.gpa([5, 3], 4)
    assert a.configurations.tolist() == [[0, 2], [4, 0]]
    assert a.counts.tolist() == [2, 2]
    assert a.empty == 0
    # Floor rounding (the INFERRED alternative) leaves the odd type-1 job without a slot.
    assert p.gpa([5, 3], 4, rounding="floor").counts.tolist() == [1, 1]
    # Fluid limit at rho = Yhat/L = (1.25, 0.75): x_1 = 0.75/2, x_2 = 1.25/4;
    # F^g = 0.375 * 6 + 0.3125 * 4 = 3.5 = u.rho (all work fits: 0.6875 of the capacity).
    g = p.global_greedy([1.25, 0.75])
    assert g.fractions.tolist() == [0.375, 0.3125]
    assert g.reward == pytest.approx(3.5)
    assert p.optimum([1.25, 0.75]).value == pytest.approx(3.5)


def test_gpa_three_single_type_configurations() -> None:
    # 1-D capacity 6: A size 3 reward 5, B size 2 reward 3, C size 1 reward 1.
    # MaxReward({A,B,C}) = (2,0,0) (u = 10 > A+B+C = 9 = 3B); Yhat = (3, 4, 5), L = 5.
    # Iteration 1: n_1 = ceil(3/2) = 2, j_1 = A, Yrem = (0, 4, 5), Lrem = 3.
    # Iteration 2: J_2 = {B, C}: k_2 = (0,3,0) (u = 9 > 2B+2C = 8), n_2 = ceil(4/3) = 2,
    # j_2 = B, Yrem = (0, 0, 5), Lrem = 1.
    # Iteration 3: J_3 = {C}: k_3 = (0,0,6), n_3 = min(ceil(5/6), 1) = 1: the servers run out.
    p = StaticProblem(demand=[[3.0], [2.0], [1.0]], capacity=[6.0], reward=[5.0, 3.0, 1.0])
    a = p.gpa([3, 4, 5], 5)
    assert a.configurations.tolist() == [[2, 0, 0], [0, 3, 0], [0, 0, 6]]
    assert a.counts.tolist() == [2, 2, 1]
    assert a.exhausted.tolist() == [0, 1, 2]
    assert a.empty == 0
    assert a.slots().tolist() == [4, 6, 6]
    # With L = 3 the last type gets no server: GPA stops when Lrem = 0.
    b = p.gpa([3, 4, 5], 3)
    assert b.configurations.tolist() == [[2, 0, 0], [0, 3, 0]]
    assert b.counts.tolist() == [2, 1]


def test_gpa_tie_on_the_exhausted_type_and_a_zero_step() -> None:
    # 2-D capacity (3, 3): X = (2,1) reward 3, Y = (1,2) reward 3, Z = (1,1) reward 1.5.
    # MaxReward(all) = X + Y = (1,1,0), u = 6 (3Z = X+Z = 4.5). Yhat = (2, 2, 4), L = 4.
    # Iteration 1: n_1 = min(ceil(2/1), ceil(2/1)) = 2, a tie: j_1 = X (lowest index);
    # Yrem = (0, 0, 4), Lrem = 2.
    # Iteration 2: J_2 = {Y, Z}: Y+Z and 3Z both earn 4.5; Definition 2.2 prefers the larger
    # k_Y: k_2 = (0,1,1); n_2 = min(ceil(0/1), ceil(4/1)) = 0, j_2 = Y: no server, Y dropped.
    # Iteration 3: J_3 = {Z}: k_3 = (0,0,3), n_3 = min(ceil(4/3), 2) = 2.
    p = StaticProblem(
        demand=[[2.0, 1.0], [1.0, 2.0], [1.0, 1.0]], capacity=[3.0, 3.0], reward=[3.0, 3.0, 1.5]
    )
    assert p.max_reward([1, 2]).tolist() == [0, 1, 1]
    a = p.gpa([2, 2, 4], 4)
    assert a.configurations.tolist() == [[1, 1, 0], [0, 0, 3]]
    assert a.counts.tolist() == [2, 2]
    assert a.exhausted.tolist() == [0, 2]
    assert a.empty == 0


def test_greedy_configurations_sorted() -> None:
    confs = INTRO.greedy_configurations()
    assert confs.tolist() == [[0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_gpa_over_l_converges_to_global_greedy() -> None:
    # Proposition 3.5: GPA(L rho + r(L), L) / L -> x^g(rho).
    p = StaticProblem(
        demand=[[1, 1], [4, 16], [2, 32], [32, 256]], capacity=[80, 640], reward=[1.125, 6, 6, 64]
    )
    rho = np.array([20.0, 6.0, 5.0, 1.5])
    g = p.global_greedy(rho)
    errors = []
    for big in (100, 10_000, 1_000_000):
        a = p.gpa(np.ceil(big * rho + math.sqrt(big)), big)
        frac = {k.tobytes(): n / big for k, n in zip(a.configurations, a.counts, strict=True)}
        errors.append(
            max(
                abs(frac.get(k.tobytes(), 0.0) - x)
                for k, x in zip(g.configurations, g.fractions, strict=True)
            )
        )
    assert errors[-1] < 1e-2
    assert errors[-1] <= errors[0]


# ---- against brute force ------------------------------------------------------------------


def random_problem(data: st.DataObject) -> tuple[StaticProblem, np.ndarray]:
    n_types = data.draw(st.integers(2, 4))
    n_res = data.draw(st.integers(1, 2))
    cap = data.draw(st.integers(4, 10))
    demand = np.array(
        [
            [data.draw(st.integers(0 if n_res > 1 else 1, cap)) for _ in range(n_res)]
            for _ in range(n_types)
        ],
        dtype=float,
    )
    demand[demand.max(axis=1) == 0, 0] = 1.0
    reward = np.array([data.draw(st.integers(1, 20)) for _ in range(n_types)], dtype=float)
    rho = np.array([data.draw(st.floats(0.0, 6.0)) for _ in range(n_types)])
    return StaticProblem(demand, np.full(n_res, float(cap)), reward), rho


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_max_reward_and_optimum_match_brute_force(data: st.DataObject) -> None:
    problem, rho = random_problem(data)
    for size in range(1, problem.n_types + 1):
        for subset in itertools.combinations(range(problem.n_types), size):
            got = problem.max_reward(list(subset))
            want = brute_max_reward(problem, list(subset))
            assert got.tolist() == want.tolist()
    assert problem.optimum(rho).value == pytest.approx(brute_optimum(problem, rho), abs=1e-7)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_global_greedy_at_least_half_of_optimum(data: st.DataObject) -> None:
    # Theorem 3.7, and x^g is a feasible point of LP (3).
    problem, rho = random_problem(data)
    g = problem.global_greedy(rho)
    f_star = problem.optimum(rho).value
    assert g.fractions.sum() <= 1 + 1e-9
    assert g.reward <= f_star + 1e-7
    assert g.reward >= f_star / 2 - 1e-9


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_two_types_monotone_and_one_minus_one_over_e(data: st.DataObject) -> None:
    # §3: any two-type system has the monotone greedy property, so Theorem 3.9 applies.
    n_res = data.draw(st.integers(1, 2))
    cap = data.draw(st.integers(4, 12))
    demand = np.array(
        [[data.draw(st.integers(1, cap)) for _ in range(n_res)] for _ in range(2)], dtype=float
    )
    reward = np.array([data.draw(st.integers(1, 20)) for _ in range(2)], dtype=float)
    problem = StaticProblem(demand, np.full(n_res, float(cap)), reward)
    rho = np.array([data.draw(st.floats(0.0, 8.0)) for _ in range(2)])
    check = monotone_greedy_check(problem, [8.0, 8.0], samples=20, seed=1)
    assert check.holds
    f_star = problem.optimum(rho).value
    assert problem.global_greedy(rho).reward >= (1 - 1 / math.e) * f_star - 1e-9


def test_monotone_check_finds_a_counterexample_or_bound_holds() -> None:
    # On random 4-type instances: wherever the sampled check finds no violation, the
    # (1 - 1/e) bound must hold at sampled workloads; a found violation must be genuine.
    rng = np.random.default_rng(7)
    for _ in range(6):
        demand = rng.integers(1, 8, size=(4, 2)).astype(float)
        problem = StaticProblem(demand, [10.0, 10.0], rng.integers(1, 20, 4).astype(float))
        check = monotone_greedy_check(problem, [5.0] * 4, samples=15, seed=2)
        if not check.holds:
            assert np.all(check.smaller <= check.larger)
            assert (
                problem.global_greedy(check.smaller).reward
                > problem.global_greedy(check.larger).reward
            )
            continue
        for rho in rng.uniform(0, 5, size=(5, 4)):
            f_star = problem.optimum(rho).value
            assert problem.global_greedy(rho).reward >= (1 - 1 / math.e) * f_star - 1e-9


def test_upper_bound_brackets_the_optimum_scale() -> None:
    # E[LP(Poisson(L rho))]/L -> F*(rho) as L grows (law of large numbers on Yhat/L); the LP
    # is concave in Yhat, so by Jensen its expectation is at most the LP at the mean, F*(rho);
    # the sample mean may exceed it by sampling noise only.
    p = StaticProblem(demand=[[0.25], [0.5]], capacity=[1.0], reward=[1.0, 3.0])
    rho = np.array([3.0, 1.0])
    f_star = p.optimum(rho).value
    ub = upper_bound(p, rho, 200, samples=60, seed=3)
    assert ub.value <= f_star + 4 * ub.stderr
    assert ub.value >= f_star - 4 * ub.stderr - 0.05


def test_bad_problems_are_refused() -> None:
    with pytest.raises(ValueError, match="fit"):
        StaticProblem([[2.0]], [1.0], [1.0])
    with pytest.raises(ValueError, match="need some"):
        StaticProblem([[0.0, 0.0]], [1.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="grid"):
        StaticProblem([[math.pi / 10]], [1.0], [1.0])
