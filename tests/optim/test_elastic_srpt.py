"""Paper 003 Appendix A: SRPT-k for parallelizable jobs at time 0 and the LP lower bound.

Truth: cases whose optimum is known in closed form (all jobs fully parallel: SPT on one server of
speed k; all jobs sequential: SPT list scheduling, optimal for P||sum C_j), the per-job bound of
Lemma 10, LP <= OPT, and Theorem 9's factor 4 on random instances.
"""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.optim.parallel_srpt import (
    ParallelJobsError,
    approximation_ratios,
    lp_primal_lower_bound,
    random_instance,
    srpt_k,
)


def spt_one_fast_server(x: np.ndarray, k: float) -> float:
    """sum_j C_j of SPT on one server of speed k (optimal when every job uses k processors)."""
    return float(np.cumsum(np.sort(x)).sum() / k)


def spt_list_scheduling(x: np.ndarray, k: int) -> float:
    """sum_j C_j of SPT list scheduling on k identical machines (optimal for P||sum C_j)."""
    free = np.zeros(k)
    total = 0.0
    for size in np.sort(x):
        m = int(np.argmin(free))
        free[m] += size
        total += free[m]
    return total


@pytest.mark.parametrize("seed", range(5))
def test_srpt_k_is_optimal_in_the_two_extreme_cases(seed):
    rng = np.random.default_rng(seed)
    x = rng.exponential(1.0, 12)
    k = 4
    elastic = srpt_k(x, np.full(12, k), k)
    assert elastic.total_response_time == pytest.approx(spt_one_fast_server(x, k))
    inelastic = srpt_k(x, np.ones(12), k)
    assert inelastic.total_response_time == pytest.approx(spt_list_scheduling(x, k))
    for schedule, opt in ((elastic, spt_one_fast_server(x, k)), (inelastic, None)):
        lp = lp_primal_lower_bound(x, schedule.caps, k, slots=400).value
        assert lp <= schedule.total_response_time * (1 + 1e-9)
        if opt is not None:
            assert lp == pytest.approx(opt, rel=0.02)  # fine slots: the LP is nearly tight here


def test_schedule_is_feasible_and_meets_lemma10():
    rng = np.random.default_rng(11)
    for _ in range(20):
        x, caps = random_instance(rng, 15, 6)
        s = srpt_k(x, caps, 6)
        done = np.zeros(15)
        for t0, t1, alloc in s.segments:
            assert alloc.sum() <= 6 + 1e-9 and np.all(alloc <= caps + 1e-12)
            done += np.minimum(alloc, caps) * (t1 - t0)
        np.testing.assert_allclose(done, x, rtol=1e-9)
        assert np.all(s.completion <= s.lemma10_bounds() * (1 + 1e-9))


def test_lp_of_a_single_job_converges_to_x_over_k_from_below():
    values = [lp_primal_lower_bound([2.0], [4], 4, slots=n).value for n in (4, 40, 400)]
    assert values[0] < values[1] < values[2] < 0.5
    assert values[2] == pytest.approx(0.5, rel=1e-2)


def test_four_approximation_on_random_instances():
    """Theorem 9: SRPT-k <= 4 OPT; LP <= OPT, so SRPT-k / LP <= 4 is a certificate."""
    samples = approximation_ratios(25, 12, 4, seed=3, slots=100)
    ratios = np.array([s.ratio for s in samples])
    assert np.all(ratios >= 1.0 - 1e-9)  # the LP is a lower bound
    assert np.all(ratios <= 4.0)


def test_bad_input():
    with pytest.raises(ParallelJobsError, match="sizes"):
        srpt_k([], [], 2)
    with pytest.raises(ParallelJobsError, match="caps"):
        srpt_k([1.0, 2.0], [1.0], 2)
    with pytest.raises(ParallelJobsError, match="> 0"):
        srpt_k([1.0, -2.0], [1.0, 1.0], 2)
    with pytest.raises(ParallelJobsError, match="processors"):
        lp_primal_lower_bound([1.0], [1.0], 0)
