"""Paper 003 analysis against independent truth: hand-worked Theorem 6, closed forms (M/M/1 with
rate k mu_E, Erlang C), numerical integration of the busy-period density, and the exact CTMC."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate

from schedlab.analysis.closed_forms import mmc_mean_response_time
from schedlab.analysis.elastic import (
    POLICIES,
    ElasticModelError,
    ElasticSystem,
    exact_response_time,
    fit_three_moments,
    matrix_analytic_response_time,
    mm1_busy_period_moments,
    no_arrival_response_time,
    priority_class_mean_number,
    solve_qbd,
)
from schedlab.analysis.elastic.busy_period import mm1_busy_period_density
from schedlab.analysis.elastic.matrix_analytic import (
    busy_period_coxian,
    mm1_busy_period_phase_type,
)

# ------------------------------------------------------------------ Theorem 6 (§4.3)


def test_theorem6_values_are_the_papers_and_are_sums_over_jobs():
    """k = 2, mu_E = 2 mu_I, two inelastic and one elastic job, no arrivals (hand-worked §4.3)."""
    for mu_i in (1, 3, Fraction(1, 2)):
        r_if = no_arrival_response_time("IF", 2, mu_i, 2 * mu_i, 2, 1)
        r_ef = no_arrival_response_time("EF", 2, mu_i, 2 * mu_i, 2, 1)
        assert r_if.total == Fraction(35, 12) / mu_i  # exact rational arithmetic
        assert r_ef.total == Fraction(33, 12) / mu_i
        assert r_if.mean == Fraction(35, 36) / mu_i  # the per-job mean is a third
        assert r_ef.mean == Fraction(11, 12) / mu_i
    # per class, by hand (mu_I = 1): under EF the elastic job finishes at Exp(4), mean 1/4; the
    # two inelastic jobs wait 1/4 each, then run in parallel: 1/2 + (2 * 1/2 + 1) = 5/2.
    r_ef = no_arrival_response_time("EF", 2, 1, 2, 2, 1)
    assert (r_ef.total_elastic, r_ef.total_inelastic) == (Fraction(1, 4), Fraction(5, 2))
    # under IF the two inelastic jobs run at once from time 0: E[sum] = 1 + 1 = 2
    r_if = no_arrival_response_time("IF", 2, 1, 2, 2, 1)
    assert (r_if.total_inelastic, r_if.total_elastic) == (Fraction(2), Fraction(11, 12))


def test_no_arrival_chain_single_job_cases():
    assert no_arrival_response_time("EF", 4, 1, 2, 0, 1).total == Fraction(1, 8)  # 1/(k mu_E)
    assert no_arrival_response_time("IF", 4, 1, 2, 1, 0).total == 1  # one server, 1/mu_I
    # float rates give floats with the same value
    assert no_arrival_response_time("IF", 2, 1.0, 2.0, 2, 1).total == pytest.approx(35 / 12)


# ------------------------------------------------------------------ busy period and Coxian fit


@pytest.mark.parametrize(("lam", "mu"), [(0.5, 1.0), (0.9, 1.0), (2.0, 8.0)])
def test_busy_period_moments_against_the_density(lam, mu):
    moments = mm1_busy_period_moments(lam, mu)
    for n, expected in enumerate(moments, start=1):
        value, _ = integrate.quad(
            lambda t, n=n: t**n * mm1_busy_period_density(t, lam, mu), 0, np.inf, limit=400
        )
        assert value == pytest.approx(expected, rel=1e-6)


def test_coxian_fit_matches_three_moments_over_the_domain():
    rng = np.random.default_rng(7)
    for _ in range(2000):
        m1 = rng.uniform(0.1, 10)
        n2 = 1 + 10 ** rng.uniform(-1.5, 1.5)  # normalized moments in the EC domain
        n3 = n2 * (1 + 10 ** rng.uniform(-2, 1.5))
        m2, m3 = n2 * m1**2, n3 * m1 * n2 * m1**2
        ph = fit_three_moments(m1, m2, m3)
        for n, target in enumerate((m1, m2, m3), start=1):
            assert ph.moment(n) == pytest.approx(target, rel=1e-6)
        assert np.all(ph.T.diagonal() < 0) and np.all(ph.alpha >= 0)


def test_coxian_of_the_busy_period_has_the_worked_out_closed_form():
    lam, mu = 0.7, 2.0
    ph = busy_period_coxian(lam, mu)
    r = math.sqrt(lam / mu)
    assert ph.phases == 2
    assert -ph.T[0, 0] == pytest.approx((1 + r) * (mu - lam))
    assert -ph.T[1, 1] == pytest.approx((1 - r) * (mu - lam))
    assert ph.T[0, 1] / -ph.T[0, 0] == pytest.approx(r * (1 - r) / (1 + r))


def test_coxian_fit_rejects_moments_outside_its_domain():
    with pytest.raises(ElasticModelError, match="outside"):
        fit_three_moments(1.0, 1.0, 1.0)  # deterministic: no PH distribution


# ------------------------------------------------------------------ QBD solver


def test_qbd_solver_on_an_mm1_and_an_mmk():
    lam, mu = 0.6, 1.0
    one = np.ones((1, 1))
    sol = solve_qbd([(lam * one, 0 * one, 0 * one)], lam * one, 0 * one, mu * one)
    assert sol.mean_level() == pytest.approx(lam / (mu - lam))
    assert sol.total_probability() == pytest.approx(1.0)
    k, lam = 3, 2.4
    boundary = [(lam * one, 0 * one, n * mu * one) for n in range(k)]
    sol = solve_qbd(boundary, lam * one, 0 * one, k * mu * one)
    assert sol.mean_level() == pytest.approx(lam * mmc_mean_response_time(k, lam, mu))


def test_qbd_solver_refuses_an_unstable_chain():
    one = np.ones((1, 1))
    with pytest.raises(ElasticModelError, match="not positive recurrent"):
        solve_qbd([(one, 0 * one, 0 * one)], one, 0 * one, 0.5 * one)


# ------------------------------------------------------------------ closed forms (§5.2, App. D)


@pytest.mark.parametrize(("k", "rho", "mu_i", "mu_e"), [(4, 0.7, 0.5, 2.0), (3, 0.9, 2.0, 0.5)])
def test_priority_classes_match_closed_forms(k, rho, mu_i, mu_e):
    s = ElasticSystem.from_load(k, rho, mu_i, mu_e)
    mm1 = 1 / (k * s.mu_e - s.lambda_e)  # EF: elastic jobs see an M/M/1 with rate k mu_E
    mmk = mmc_mean_response_time(k, s.lambda_i, s.mu_i)  # IF: inelastic jobs see an M/M/k
    for method in (matrix_analytic_response_time, exact_response_time):
        assert method(s, "EF").mean_response_time_elastic == pytest.approx(mm1, rel=1e-7)
        assert method(s, "IF").mean_response_time_inelastic == pytest.approx(mmk, rel=1e-7)
    n = priority_class_mean_number(s.lambda_i, s.mu_i, k, 1.0)
    assert n / s.lambda_i == pytest.approx(mmk, rel=1e-12)


# ------------------------------------------------------------------ matrix-analytic vs exact

GRID = [
    (k, rho, mu_i, mu_e)
    for k in (4,)
    for rho in (0.3, 0.6, 0.9)
    for mu_i, mu_e in ((0.25, 1.0), (1.0, 1.0), (4.0, 1.0), (1.0, 4.0), (1.0, 0.25), (2.0, 0.5))
] + [(k, 0.7, mu_i, mu_e) for k in (1, 2, 8) for mu_i, mu_e in ((0.5, 1.0), (2.0, 1.0))]


def test_matrix_analytic_within_half_a_percent_of_the_exact_ctmc():
    """The paper's method (busy-period transformation + three-moment Coxian + QBD) on the Fig. 4/5
    setting (k = 4, three loads, mu_I/mu_E from 1/4 to 4) and k = 1, 2, 8 at rho = 0.7. Measured
    max error on this grid: 0.19%. Not everywhere below 0.5%: see the next test."""
    worst = 0.0
    for k, rho, mu_i, mu_e in GRID:
        s = ElasticSystem.from_load(k, rho, mu_i, mu_e)
        for policy in POLICIES:
            ma = matrix_analytic_response_time(s, policy).mean_response_time
            ex = exact_response_time(s, policy, tol=1e-7).mean_response_time
            err = abs(ma / ex - 1)
            worst = max(worst, err)
            assert err < 0.005, (k, rho, mu_i, mu_e, policy, ma, ex)
    assert worst > 1e-5  # the Coxian is an approximation: the test compares two methods


@pytest.mark.parametrize(
    ("k", "mu_i", "mu_e", "policy"),
    [(16, 4.0, 1.0, "elastic-first"), (4, 0.25, 4.0, "inelastic-first")],
)
def test_matrix_analytic_at_the_extremes_is_within_one_percent(k, mu_i, mu_e, policy):
    """The largest errors we found (rho = 0.9): 0.70% at k = 16, mu_I = 4 mu_E under EF and 0.66%
    at k = 4, mu_I = mu_E / 16 under IF (docs/elastic.md): the paper's "less than 1%" holds, a 0.5%
    bound does not hold everywhere."""
    s = ElasticSystem.from_load(k, 0.9, mu_i, mu_e)
    ma = matrix_analytic_response_time(s, policy).mean_response_time
    ex = exact_response_time(s, policy, tol=1e-5).mean_response_time
    assert abs(ma / ex - 1) < 0.01


@pytest.mark.parametrize("policy", POLICIES)
def test_chains_are_exact_with_the_exact_busy_period(policy):
    """Replacing the Coxian by the exact busy period (the M/M/1 absorption time, truncated far out)
    must reproduce the exact CTMC: this checks the 1D chains themselves (§5.2, App. D)."""
    s = ElasticSystem.from_load(4, 0.7, 0.5, 2.0)
    lam, mu = (s.lambda_e, 4 * s.mu_e) if policy == "elastic-first" else (s.lambda_i, 4 * s.mu_i)
    exact_bp = mm1_busy_period_phase_type(lam, mu, 70)
    ma = matrix_analytic_response_time(s, policy, busy_period=exact_bp).mean_response_time
    ex = exact_response_time(s, policy, tol=1e-9).mean_response_time
    assert ma == pytest.approx(ex, rel=1e-8)


def test_generalization_to_c_servers_per_inelastic_job():
    """§2: inelastic jobs on up to C servers; both methods handle C (here k = 4, C = 1.5)."""
    s = ElasticSystem(k=4, lambda_i=1.0, lambda_e=0.8, mu_i=0.6, mu_e=1.0, inelastic_cap=1.5)
    for policy in POLICIES:
        ma = matrix_analytic_response_time(s, policy).mean_response_time
        ex = exact_response_time(s, policy, tol=1e-8).mean_response_time
        assert ma == pytest.approx(ex, rel=5e-3)
    # with C = k there is no difference between the classes' capabilities: IF's inelastic jobs
    # are then an M/M/1 with rate k mu_I
    s = ElasticSystem(k=4, lambda_i=1.0, lambda_e=0.8, mu_i=0.6, mu_e=1.0, inelastic_cap=4)
    t = exact_response_time(s, "IF").mean_response_time_inelastic
    assert t == pytest.approx(1 / (4 * 0.6 - 1.0), rel=1e-7)


def test_exact_ctmc_truncation_converges():
    s = ElasticSystem.from_load(4, 0.9, 0.25, 1.0)
    loose = exact_response_time(s, "IF", tol=1e-3)
    tight = exact_response_time(s, "IF", tol=1e-8)
    assert loose.mean_response_time == pytest.approx(tight.mean_response_time, rel=2e-3)
    assert tight.details["edge_probability"] < 1e-9
    assert tight.details["relative_change"] < 1e-8


def test_if_beats_ef_when_mu_i_at_least_mu_e():
    """Theorem 5 (IF optimal when mu_I >= mu_E), exact CTMC on a few settings; and the §4.3/§5
    counter-direction: EF wins for small mu_I / mu_E at high load."""
    for k, rho, mu_i, mu_e in [(2, 0.5, 1, 1), (4, 0.8, 2, 1), (3, 0.95, 1.5, 1.0)]:
        s = ElasticSystem.from_load(k, rho, mu_i, mu_e)
        e = {p: exact_response_time(s, p).mean_response_time for p in POLICIES}
        assert e["inelastic-first"] <= e["elastic-first"]
    s = ElasticSystem.from_load(4, 0.9, 0.25, 1.0)
    e = {p: exact_response_time(s, p).mean_response_time for p in POLICIES}
    assert e["elastic-first"] < e["inelastic-first"]


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 4, "lambda_i": 2.0, "lambda_e": 2.0, "mu_i": 1.0, "mu_e": 1.0}, r"= 1 >= 1: no"),
        ({"k": 4, "lambda_i": 3.0, "lambda_e": 2.0, "mu_i": 1.0, "mu_e": 1.0}, r">= 1"),
        ({"k": 4, "lambda_i": 0.0, "lambda_e": 1.0, "mu_i": 1.0, "mu_e": 1.0}, "lambda_i"),
        ({"k": 4, "lambda_i": 1.0, "lambda_e": -1.0, "mu_i": 1.0, "mu_e": 1.0}, "lambda_e"),
        ({"k": 4, "lambda_i": 1.0, "lambda_e": 1.0, "mu_i": 0.0, "mu_e": 1.0}, "mu_i"),
        ({"k": 4, "lambda_i": 1.0, "lambda_e": 1.0, "mu_i": 1.0, "mu_e": math.nan}, "mu_e"),
        ({"k": 0, "lambda_i": 1.0, "lambda_e": 1.0, "mu_i": 1.0, "mu_e": 1.0}, "k"),
        ({"k": 2.5, "lambda_i": 1.0, "lambda_e": 1.0, "mu_i": 1.0, "mu_e": 1.0}, "whole number"),
        (
            {
                "k": 4,
                "lambda_i": 1.0,
                "lambda_e": 1.0,
                "mu_i": 1.0,
                "mu_e": 1.0,
                "inelastic_cap": 5,
            },
            "cap",
        ),
    ],
)
def test_bad_parameters_are_refused_clearly(kwargs, message):
    with pytest.raises(ElasticModelError, match=message):
        ElasticSystem(**kwargs)


def test_bad_input_elsewhere():
    with pytest.raises(ElasticModelError, match=">= 1"):
        ElasticSystem.from_load(4, 1.0, 1.0, 1.0)
    with pytest.raises(ElasticModelError, match="unknown policy"):
        matrix_analytic_response_time(ElasticSystem.from_load(4, 0.5, 1, 1), "SRPT")
    with pytest.raises(ElasticModelError, match="n_inelastic"):
        no_arrival_response_time("IF", 2, 1, 2, -1, 1)
    with pytest.raises(ElasticModelError, match="mu_e"):
        no_arrival_response_time("IF", 2, 1, 0, 2, 1)
