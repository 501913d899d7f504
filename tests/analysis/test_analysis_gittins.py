"""Gittins rank (paper 004 §5.1) and Gittins-1 mean response time by SOAP.

Independent truths: the rank formula by brute force (dense grids, survival function only); the
compiled evaluator against the Python one; Gittins-1 against M/M/1, Cobham's preemptive-priority
formula (exponential classes: constant ranks are static priorities), the FB formula (DHR laws:
Gittins is FB), the M/D/1 and FCFS for IHR laws (ranks decrease with age); and an event-driven
M/G/1 Gittins simulation written here, for a mix of constant, hyperexponential and discrete
need classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from schedlab.analysis.gittins import (
    KIND_CONSTANT,
    KIND_DETERMINISTIC,
    KIND_DISCRETE,
    KIND_HYPEREXPONENTIAL,
    KIND_TABLE,
    gittins1_mean_response_time,
    gittins1_mean_response_time_by_need,
    gittins_rank,
    gittins_rank_brute_force,
    gittins_representation,
    gittins_tables,
    is_exact,
)
from schedlab.analysis.sizes import JobClassLaw, SizeLaw
from schedlab.analysis.srpt import (
    fb1_mean_response_time,
    fcfs1_mean_response_time,
    ps1_mean_response_time,
    srpt1_mean_response_time,
)
from schedlab.model.compile import compile_model
from schedlab.model.distributions import (
    Discrete,
    Empirical,
    Fixed,
    HyperExponential,
    LogNormal,
    Uniform,
)
from schedlab.model.spec import parse_spec
from schedlab.policies.pooled.gittins_rank import gittins_rank as compiled_rank
from schedlab.policies.pooled.gittins_rank import (
    gittins_rank_crossing,
    gittins_rank_packed,
)
from tests.helpers.specs import exp, hyperexp, paper004_spec

LEVEL = 0.999


DISCRETE = Discrete(dist="discrete", values=[1, 2, 5], probabilities=[0.2, 0.5, 0.3])
AGES = [0.0, 0.05, 0.5, 0.99, 1.0, 1.01, 1.5, 2.0, 3.0, 4.9, 7.0, 20.0]


# ---- the rank -------------------------------------------------------------------------------


def test_exponential_rank_is_the_mean():
    law = SizeLaw.from_distribution(exp(2.5))
    assert gittins_rank(law, np.array(AGES)).tolist() == pytest.approx([2.5] * len(AGES))
    for a in (0.0, 3.0):
        assert gittins_rank_brute_force(law, a) == pytest.approx(2.5, rel=1e-4)


def test_deterministic_rank_is_the_remaining_size():
    law = SizeLaw.from_distribution(Fixed(value=3.0))
    for a in (0.0, 1.0, 2.9):
        assert gittins_rank(law, a) == pytest.approx(3.0 - a, rel=1e-12)
        assert gittins_rank_brute_force(law, a) == pytest.approx(3.0 - a, rel=1e-6)


def test_hyperexponential_rank_is_one_over_the_hazard_and_matches_brute_force():
    dist = hyperexp(1.0, 10.0)
    law = SizeLaw.from_distribution(dist)
    p, m = dist.phases()
    for a in (0.0, 0.3, 1.0, 4.0, 15.0):
        surv = np.sum(p * np.exp(-a / m))
        dens = np.sum(p / m * np.exp(-a / m))
        assert gittins_rank(law, a) == pytest.approx(surv / dens, rel=1e-12)
        assert gittins_rank_brute_force(law, a) == pytest.approx(surv / dens, rel=2e-5)
    # three phases (explicit)
    three = HyperExponential(
        dist="hyperexponential", probabilities=[0.5, 0.3, 0.2], means=[0.1, 1.0, 8.0]
    )
    for a in (0.0, 0.5, 5.0):
        assert gittins_rank(three, a) == pytest.approx(gittins_rank_brute_force(three, a), rel=2e-5)


@pytest.mark.parametrize(
    "dist",
    [
        DISCRETE,
        Empirical(dist="empirical", values=[0.3, 0.3, 1.0, 2.5, 2.5, 2.5, 9.0]),
        Fixed(value=1.0),
    ],
    ids=["discrete", "empirical", "fixed"],
)
def test_discrete_ranks_match_brute_force(dist):
    law = SizeLaw.from_distribution(dist)
    for a in AGES:
        if a >= law.support[1]:
            assert gittins_rank(law, a) == 0.0
            continue
        assert gittins_rank(law, a) == pytest.approx(
            gittins_rank_brute_force(law, a), rel=1e-7, abs=1e-9
        )


def test_discrete_rank_hand_values():
    """Sizes 1, 2, 5 w.p. 0.2, 0.5, 0.3. At age 0, b = 1: E[min(S,1)]/P(S<=1) = 1/0.2 = 5;
    b = 2: (0.2 + 2*0.8)/0.7 = 18/7; b = 5: E[S]/1 = 2.7; so 18/7. At age 1.5, b = 2 gives
    0.5 / (0.5/0.8) = 0.8 and b = 5 gives E[S - 1.5 | S > 1.5] = 1.625: 0.8. At age 2 (S = 5)
    it is the remaining 3."""
    law = SizeLaw.from_distribution(DISCRETE)
    assert gittins_rank(law, 0.0) == pytest.approx(18 / 7)
    assert gittins_rank(law, 1.5) == pytest.approx(0.8)
    assert gittins_rank(law, 2.0) == pytest.approx(3.0)


@pytest.mark.parametrize(
    "dist",
    [Uniform(dist="uniform", low=0.5, high=2.0), LogNormal(dist="lognormal", mean=1.0, scv=3.0)],
    ids=["uniform", "lognormal"],
)
def test_numeric_ranks_match_brute_force_and_the_table(dist):
    law = SizeLaw.from_distribution(dist)
    rep = gittins_representation(law)
    assert rep.kind == KIND_TABLE and not rep.exact
    for a in (0.0, 0.3, 0.8, 1.5, 1.9):
        want = gittins_rank_brute_force(law, a)
        got = gittins_rank(law, a)
        assert got == pytest.approx(want, rel=2e-5)
        assert got <= want * (1 + 1e-9)  # the brute force minimizes over fewer points
        assert rep.rank(a) == pytest.approx(got, rel=2e-4)
    if isinstance(dist, Uniform):  # IHR: the rank is the mean residual size
        for a in (0.0, 0.5, 1.2):
            assert gittins_rank(law, a) == pytest.approx((2.0 + max(a, 0.5)) / 2 - a, rel=1e-9)


@pytest.mark.parametrize(
    ("dist", "kind"),
    [
        (exp(0.7), KIND_CONSTANT),
        (hyperexp(1.0, 5.0), KIND_HYPEREXPONENTIAL),
        (Fixed(value=2.0), KIND_DETERMINISTIC),
        (DISCRETE, KIND_DISCRETE),
        (Uniform(dist="uniform", low=0.0, high=3.0), KIND_TABLE),
    ],
)
def test_compiled_evaluator_equals_the_python_rank(dist, kind):
    law = SizeLaw.from_distribution(dist)
    rep = gittins_representation(law)
    assert rep.kind == kind
    rng = np.random.default_rng(1)
    ages = np.concatenate([rng.uniform(0, 1.2 * law.isf(1e-3), 200), law.atoms()[0]])
    for a in ages:
        got = rep.rank(a)
        if kind == KIND_TABLE:
            assert got == pytest.approx(float(np.interp(a, rep.params_a, rep.params_b)), rel=1e-12)
        else:
            assert got == pytest.approx(gittins_rank(law, a), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    "dist",
    [
        exp(0.7),
        hyperexp(1.0, 5.0),
        Fixed(value=2.0),
        DISCRETE,
        Uniform(dist="uniform", low=0.0, high=3.0),
    ],
    ids=["exp", "hyperexp", "fixed", "discrete", "table"],
)
def test_rank_crossing_is_the_first_age_reaching_the_target(dist):
    rep = gittins_representation(SizeLaw.from_distribution(dist))
    grid = np.linspace(0.0, 6.0, 60_001)
    ranks = np.array([rep.rank(a) for a in grid])
    for age in (0.0, 0.4, 1.2):
        for target in (0.3, 0.9, 1.3, 2.6, 50.0):
            got = gittins_rank_crossing(rep.kind, rep.params_a, rep.params_b, age, target)
            hit = np.flatnonzero((grid >= age) & (ranks >= target))
            if math.isinf(got):
                assert hit.size == 0 or grid[hit[0]] > 5.0  # beyond the scanned range
            else:
                assert rep.rank(got) >= target * (1 - 1e-9)
                assert hit.size and abs(grid[hit[0]] - got) <= 2e-4 + 1e-9


def test_packed_tables_of_a_model():
    spec = paper004_spec(0.9, "server-filling", 100)
    for cls in spec["workload"]["classes"]:
        cls["duration"] = {"dist": "hyperexponential", "mean": cls["duration"]["mean"], "scv": 10.0}
    tables = gittins_tables(compile_model(parse_spec(spec)))
    assert tables.needs.tolist() == [1.0, 2.0, 4.0, 8.0]
    assert tables.kinds.tolist() == [KIND_HYPEREXPONENTIAL] * 4 and tables.exact
    # every need has the same size law S = K D / 8: hyperexponential, mean 1/8, C^2 = 10
    law = SizeLaw.from_distribution(hyperexp(1 / 8, 10.0))
    for need in (1.0, 8.0):
        for a in (0.0, 0.1, 1.0):
            assert tables.rank(need, a) == pytest.approx(gittins_rank(law, a), rel=1e-12)
    c = tables.need_index(4.0)
    assert gittins_rank_packed(
        tables.kinds, tables.offsets, tables.params_a, tables.params_b, c, 0.2
    ) == pytest.approx(gittins_rank(law, 0.2), rel=1e-12)
    with pytest.raises(KeyError):
        tables.need_index(3.0)


def test_many_atoms_give_an_exact_table():
    """More than MAX_EXACT_ATOMS atoms: the exact piecewise-linear rank (lower envelope of lines
    between atoms) becomes a kind-4 table with jumps, still exact."""
    rng = np.random.default_rng(3)
    law = SizeLaw.from_sizes(rng.lognormal(0.0, 1.0, 1000))
    rep = gittins_representation(law)
    assert rep.kind == KIND_TABLE and rep.exact
    atoms = law.atoms()[0]
    ages = np.concatenate([rng.uniform(0, atoms[-1], 400), atoms[::10], atoms[::10] * (1 - 1e-6)])
    want = gittins_rank(law, ages)
    got = np.array([rep.rank(a) for a in ages])
    assert np.allclose(got, want, rtol=1e-8, atol=1e-12)
    for a in ages[:20]:
        assert gittins_rank(law, a) == pytest.approx(gittins_rank_brute_force(law, a), rel=1e-6)
    assert is_exact(law)


# ---- Gittins-1 by SOAP ------------------------------------------------------------------------


def test_exponential_sizes_give_the_mm1():
    for rho in (0.5, 0.9, 0.999):
        assert gittins1_mean_response_time(exp(1.0), rho) == pytest.approx(1 / (1 - rho), rel=1e-12)


def test_exponential_classes_are_static_priorities_cobham():
    """Constant ranks = mean sizes: preemptive-resume priority by class (Cobham 1954; e.g.
    Harchol-Balter 2013, Ch. 31): E[T_k] = E[S_k]/(1-s_{k-1}) + sum_{i<=k} l_i E[S_i^2] /
    (2 (1-s_{k-1})(1-s_k)), s_k the load of classes 1..k."""
    law = SizeLaw.from_classes(
        [
            JobClassLaw(0.3, 1, exp(2.0)),
            JobClassLaw(0.5, 2, exp(2.0)),
            JobClassLaw(0.2, 4, exp(1.0)),
        ],
        k=4,
    )
    # sizes: need 1 -> mean 0.5, need 2 -> mean 1.0, need 4 -> mean 1.0 (tied with need 2)
    lam = 0.85 / law.mean
    got = gittins1_mean_response_time_by_need(law, lam)
    classes = [(0.3 * lam, 0.5), (0.7 * lam, 1.0)]  # needs 2 and 4: one FCFS level
    s1 = classes[0][0] * classes[0][1]
    s2 = s1 + classes[1][0] * classes[1][1]
    r1 = classes[0][0] * 2 * 0.25 / 2
    r2 = r1 + classes[1][0] * 2 * 1.0 / 2
    assert got[1.0] == pytest.approx(0.5 + r1 / (1 - s1), rel=1e-12)
    want = 1.0 / (1 - s1) + r2 / ((1 - s1) * (1 - s2))
    assert got[2.0] == pytest.approx(want, rel=1e-12)
    assert got[4.0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("rho", [0.3, 0.8, 0.99])
@pytest.mark.parametrize("scv", [2.0, 10.0])
def test_dhr_sizes_gittins_is_fb(rho, scv):
    law = SizeLaw.from_distribution(hyperexp(1.0, scv))
    assert gittins1_mean_response_time(law, rho) == pytest.approx(
        fb1_mean_response_time(law, rho), rel=1e-9
    )


def test_deterministic_and_ihr_sizes_gittins_is_fcfs():
    assert gittins1_mean_response_time(Fixed(value=1.0), 0.6) == pytest.approx(
        1 + 0.6 / (2 * 0.4), rel=1e-12
    )
    uniform = Uniform(dist="uniform", low=0.5, high=2.0)  # increasing hazard rate
    lam = 0.7 / 1.25
    assert gittins1_mean_response_time(uniform, lam) == pytest.approx(
        fcfs1_mean_response_time(uniform, lam), rel=1e-6
    )


@pytest.mark.parametrize(
    "law",
    [
        SizeLaw.from_distribution(DISCRETE),
        SizeLaw.from_distribution(LogNormal(dist="lognormal", mean=1.0, scv=3.0)),
        SizeLaw.from_classes(
            [JobClassLaw(0.5, 1, hyperexp(1.0, 8.0)), JobClassLaw(0.5, 2, Fixed(value=0.6))], k=2
        ),
    ],
    ids=["discrete", "lognormal", "mixed"],
)
def test_gittins1_lies_between_srpt1_and_the_blind_policies(law):
    lam = 0.8 / law.mean
    g = gittins1_mean_response_time(law, lam)
    assert srpt1_mean_response_time(law, lam) < g
    for other in (fcfs1_mean_response_time, ps1_mean_response_time, fb1_mean_response_time):
        assert g <= other(law, lam) * (1 + 1e-6)


def test_exactness_flag():
    assert is_exact(SizeLaw.from_distribution(DISCRETE))
    assert is_exact(SizeLaw.from_distribution(hyperexp(1.0, 3.0)))
    assert not is_exact(SizeLaw.from_distribution(Uniform(dist="uniform", low=0.5, high=2.0)))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match=">= 1"):
        gittins1_mean_response_time(exp(1.0), 1.5)
    with pytest.raises(ValueError, match="ages"):
        gittins_rank(exp(1.0), -1.0)


# ---- against a simulation of the M/G/1 under Gittins --------------------------------------------


@njit(cache=True)
def simulate_gittins(arrival, size, cls, kinds, offsets, pa, pb, quantum):
    """Preemptive M/G/1 serving the job of least Gittins rank (ties: earliest arrival).

    The served job runs until it completes, a job arrives, or its rank reaches the next best
    rank (gittins_rank_crossing), but at least ``quantum`` of age: jobs whose ranks stay equal
    (hyperexponential ranks rising together) then alternate in quanta, approximating the
    exact policy's sharing."""
    n = arrival.shape[0]
    present = np.empty(n, dtype=np.int64)
    count = 0
    age = np.zeros(n)
    resp = np.zeros(n)
    t = 0.0
    i = 0
    while i < n or count > 0:
        if count == 0:
            t = max(t, arrival[i])
            present[0] = i
            count = 1
            i += 1
            continue
        best = -1
        best_rank = math.inf
        second = math.inf
        for q in range(count):
            j = present[q]
            lo = offsets[cls[j]]
            hi = offsets[cls[j] + 1]
            r = compiled_rank(kinds[cls[j]], pa[lo:hi], pb[lo:hi], age[j])
            if r < best_rank or (r == best_rank and j < best):
                if best >= 0:
                    second = min(second, best_rank)
                best = j
                best_rank = r
            else:
                second = min(second, r)
        j = best
        lo = offsets[cls[j]]
        hi = offsets[cls[j] + 1]
        cross = gittins_rank_crossing(kinds[cls[j]], pa[lo:hi], pb[lo:hi], age[j], second)
        step = size[j] - age[j]
        if cross - age[j] < step:
            step = max(cross - age[j], quantum)
        if i < n and arrival[i] - t < step:
            step = arrival[i] - t
        t += step
        age[j] += step
        if age[j] >= size[j] - 1e-12:
            resp[j] = t - arrival[j]
            for q in range(count):
                if present[q] == j:
                    present[q] = present[count - 1]
                    count -= 1
                    break
        while i < n and arrival[i] <= t:
            present[count] = i
            count += 1
            i += 1
    return resp


def test_gittins1_against_simulation_with_mixed_need_classes():
    """Need 1: hyperexponential sizes (rising rank), need 2: exponential (constant rank),
    need 4: discrete sizes (rank falls between atoms, jumps at them)."""
    law = SizeLaw.from_classes(
        [
            JobClassLaw(0.5, 1, hyperexp(1.0, 8.0)),
            JobClassLaw(0.3, 2, exp(1.2)),
            JobClassLaw(
                0.2,
                4,
                Discrete(dist="discrete", values=[0.2, 1.0, 3.0], probabilities=[0.5, 0.3, 0.2]),
            ),
        ],
        k=4,
    )
    lam = 0.75 / law.mean
    tables = gittins_tables(law)
    rng = np.random.default_rng(11)
    n = 250_000
    need_of = np.array(sorted(law.need_probabilities()))
    probs = np.array([law.need_probabilities()[v] for v in need_of])
    cls = rng.choice(need_of.size, size=n, p=probs)
    parts = list(law.by_need().values())
    size = np.empty(n)
    for c, part in enumerate(parts):
        idx = np.flatnonzero(cls == c)
        size[idx] = part.sample(rng, idx.size)
    arrival = np.cumsum(rng.exponential(1 / lam, n))
    resp = simulate_gittins(
        arrival, size, cls, tables.kinds, tables.offsets, tables.params_a, tables.params_b, 0.005
    )
    keep = np.arange(n) >= n // 10
    by_need = gittins1_mean_response_time_by_need(law, lam)
    total = gittins1_mean_response_time(law, lam)
    batches = 25
    means = np.array([b.mean() for b in np.array_split(resp[keep], batches)])
    half = stats.t.ppf(0.5 + LEVEL / 2, batches - 1) * means.std(ddof=1) / math.sqrt(batches)
    assert abs(resp[keep].mean() - total) <= half, (resp[keep].mean(), half, total)
    assert half < 0.06 * total
    for c, need in enumerate(need_of):
        mine = resp[keep & (cls == c)]
        m = np.array([b.mean() for b in np.array_split(mine, batches)])
        h = stats.t.ppf(0.5 + LEVEL / 2, batches - 1) * m.std(ddof=1) / math.sqrt(batches)
        assert abs(mine.mean() - by_need[need]) <= h, (need, mine.mean(), h, by_need[need])
