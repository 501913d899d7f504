"""Size laws S = K D / k, M/G/1-SRPT (SRPT-1), FCFS/PS/FB and Theorem 4.1 (paper 004 §3.1, §4).

Independent truths: closed forms and direct quadrature of the densities for the partial moments;
a separately coded Schrage–Miller double integral for exponential sizes; the M/D/1; event-driven
M/G/1-SRPT simulations with batch-means intervals; and a simulated FCFS multiserver-job system,
which SRPT-1 must lower-bound (paper 004 §4.1)."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from scipy import integrate, stats

import schedlab
from schedlab.analysis.sizes import (
    AtomsComponent,
    JobClassLaw,
    LogNormalComponent,
    NumericComponent,
    SizeLaw,
)
from schedlab.analysis.srpt import (
    fb1_mean_response_time,
    fcfs1_mean_response_time,
    ps1_mean_response_time,
    srpt1_mean_response_time,
    srpt1_mean_response_time_by_need,
    srpt1_response_time_given_size,
)
from schedlab.analysis.theorem41 import needs_setting, theorem41_bounds, theorem41_gap_bound
from schedlab.model.compile import compile_model
from schedlab.model.distributions import (
    BoundedPareto,
    Discrete,
    Empirical,
    Exponential,
    Fixed,
    Geometric,
    HyperExponential,
    LogNormal,
    Pareto,
    Uniform,
)
from schedlab.model.spec import parse_spec
from tests.helpers.specs import PAPER004_CLASSES, exp, hyperexp, paper004_spec

LEVEL = 0.999


CONTINUOUS = [
    exp(2.0),
    hyperexp(1.0, 10.0),
    Uniform(dist="uniform", low=0.5, high=2.0),
    BoundedPareto(dist="bounded_pareto", alpha=1.5, low=0.1, high=100.0),
    Pareto(dist="pareto", alpha=2.5, mean=1.0),
    LogNormal(dist="lognormal", mean=1.0, scv=3.0),
]


def density_of(dist) -> tuple:
    """(pdf, lower end) written from the textbook densities, independently of sizes.py."""
    if isinstance(dist, Exponential):
        return (lambda t: math.exp(-t / dist.mean) / dist.mean), 0.0
    if isinstance(dist, HyperExponential):
        p, m = dist.phases()
        return (lambda t: float(np.sum(p / m * np.exp(-t / m)))), 0.0
    if isinstance(dist, Uniform):
        return (
            lambda t: 1.0 / (dist.high - dist.low) if dist.low <= t <= dist.high else 0.0
        ), dist.low
    if isinstance(dist, BoundedPareto):
        a, lo, hi = dist.alpha, dist.low, dist.high
        c = a * lo**a / (1 - (lo / hi) ** a)
        return (lambda t: c * t ** (-a - 1) if lo <= t <= hi else 0.0), lo
    if isinstance(dist, Pareto):
        a, xm = dist.alpha, dist.scale
        return (lambda t: a * xm**a * t ** (-a - 1) if t >= xm else 0.0), xm
    s2 = math.log1p(dist.scv)
    ln = stats.lognorm(s=math.sqrt(s2), scale=dist.mean * math.exp(-s2 / 2))
    return (lambda t: float(ln.pdf(t))), 0.0


@pytest.mark.parametrize("dist", CONTINUOUS, ids=lambda d: d.dist)
@pytest.mark.parametrize("scale", [1.0, 0.375])  # need 3 of k = 8
def test_partial_moments_against_quadrature_of_the_density(dist, scale):
    pdf, lo = density_of(dist)
    law = SizeLaw.from_distribution(
        dist, need=3.0 if scale != 1.0 else 1.0, k=8.0 if scale != 1.0 else 1.0
    )
    for x in [0.3, 1.0, 2.5, 40.0]:
        for n in range(3):
            want, _ = integrate.quad(
                lambda t, n=n: (scale * t) ** n * pdf(t),
                lo,
                max(lo, min(x / scale, dist.support[1])),
                limit=200,
                epsrel=1e-12,
            )
            assert float(law.partial_moment(n, x)) == pytest.approx(want, rel=1e-8, abs=1e-13)
    assert law.mean == pytest.approx(scale * dist.mean, rel=1e-12)
    assert law.second_moment == pytest.approx(scale**2 * dist.second_moment, rel=1e-12)


def test_atoms_and_strict_partial_moments():
    law = SizeLaw.from_distribution(
        Discrete(dist="discrete", values=[1, 2, 5], probabilities=[0.2, 0.5, 0.3])
    )
    v, p = law.atoms()
    assert v.tolist() == [1.0, 2.0, 5.0] and p.tolist() == pytest.approx([0.2, 0.5, 0.3])
    assert float(law.cdf(2.0)) == pytest.approx(0.7)
    assert float(law.partial_moment(1, 2.0)) == pytest.approx(0.2 + 1.0)
    assert float(law.partial_moment(1, 2.0, strict=True)) == pytest.approx(0.2)
    assert float(law.partial_moment(2, 4.9)) == pytest.approx(0.2 + 0.5 * 4)
    emp = SizeLaw.from_distribution(Empirical(dist="empirical", values=[3, 1, 3, 3]))
    assert emp.atoms()[1].tolist() == pytest.approx([0.25, 0.75])
    geo = SizeLaw.from_distribution(Geometric(dist="geometric", mean=4.0))
    assert geo.mean == pytest.approx(4.0, rel=1e-12)
    assert geo.second_moment == pytest.approx((2 - 0.25) / 0.25**2, rel=1e-12)


def test_numeric_component_matches_the_exact_log_normal():
    exact = LogNormalComponent(0.2, 0.8)
    numeric = NumericComponent(stats.lognorm(s=0.8, scale=math.exp(0.2)))
    for x in [0.1, 1.0, 7.0]:
        for n in range(3):
            a = float(exact.partial_moment(n, np.float64(x)))
            b = float(numeric.partial_moment(n, np.float64(x)))
            assert b == pytest.approx(a, rel=1e-9)


def test_numeric_component_gamma_and_srpt_through_quadrature():
    """A scipy law goes through the quadrature path: gamma partial moments against the
    regularized incomplete gamma function, and SRPT-1 of a numerically given exponential law
    against the exact one."""
    from scipy import special

    gamma = NumericComponent(stats.gamma(a=0.5, scale=2.0))
    for x in [0.01, 0.5, 3.0, 30.0]:
        for n in range(3):
            exact = (
                math.gamma(0.5 + n) / math.gamma(0.5) * 2.0**n * special.gammainc(0.5 + n, x / 2.0)
            )
            assert float(gamma.partial_moment(n, np.float64(x))) == pytest.approx(exact, rel=1e-10)
    numeric = SizeLaw.from_distribution(stats.expon(scale=2.0))
    assert srpt1_mean_response_time(numeric, 0.35) == pytest.approx(
        srpt1_mean_response_time(exp(2.0), 0.35), rel=1e-8
    )


def test_size_law_of_paper004_fig2_model():
    """Needs uniform on {1, 2, 4, 8}, duration Exp(mean 1/need): S = K D / 8 ~ Exp(mean 1/8)
    for every need (§6, Fig. 2)."""
    model = compile_model(parse_spec(paper004_spec(0.9, "server-filling", 100)))
    law = SizeLaw.from_model(model)
    assert law.k == 8.0
    assert law.need_probabilities() == pytest.approx({1.0: 0.25, 2.0: 0.25, 4.0: 0.25, 8.0: 0.25})
    assert law.mean == pytest.approx(1 / 8)
    assert law.load(model.rate) == pytest.approx(model.load)
    for part in law.by_need().values():
        assert part.mean == pytest.approx(1 / 8)
        assert float(part.sf(0.3)) == pytest.approx(math.exp(-0.3 * 8))


def test_size_law_of_a_trace_model(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival,duration,need\n0,4,2\n1,1,4\n3,2,2\n")
    spec = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": "fcfs"},
        "run": {"allow_unstable": True},
    }
    law = SizeLaw.from_model(compile_model(parse_spec(spec)))
    assert law.need_probabilities() == pytest.approx({2.0: 2 / 3, 4.0: 1 / 3})
    assert law.by_need()[2.0].atoms()[0].tolist() == [1.0, 2.0]  # 2 * 2 / 4 and 2 * 4 / 4
    assert law.mean == pytest.approx((2 + 1 + 1) / 3)


def test_bad_size_laws_are_refused():
    with pytest.raises(ValueError, match="k must be >= 1"):
        SizeLaw.from_classes([JobClassLaw(1.0, 1, exp(1.0))], k=0.5)
    with pytest.raises(ValueError, match="outside"):
        SizeLaw.from_classes([JobClassLaw(1.0, 3, exp(1.0))], k=2)
    with pytest.raises(ValueError, match="sum to 1"):
        SizeLaw.from_classes([JobClassLaw(0.5, 1, exp(1.0))], k=2)
    with pytest.raises(ValueError, match="probabilities"):
        AtomsComponent(np.array([1.0, 2.0]), np.array([0.5, 0.6]))
    spec = paper004_spec(0.5, "fcfs", 10)
    spec["workload"]["classes"] = [{"speedup": "elastic", "duration": 1.0}]
    with pytest.raises(ValueError, match="elastic"):
        SizeLaw.from_model(compile_model(parse_spec(spec)))


# ---- SRPT-1 ----------------------------------------------------------------------------------


def srpt_exponential_by_double_quadrature(rho: float) -> float:
    """Schrage & Miller (1966) for Exp(1) sizes, written out with the closed forms
    rho(x) = rho (1 - e^-x (1 + x)) and E[min(S, x)^2] = 2 (1 - e^-x (1 + x)), integrated with
    scipy's dblquad."""
    lam = rho

    def rho_x(x):
        return lam * (1 - math.exp(-x) * (1 + x))

    def waiting(x):
        return lam * 2 * (1 - math.exp(-x) * (1 + x)) / (2 * (1 - rho_x(x)) ** 2)

    w, _ = integrate.quad(lambda x: waiting(x) * math.exp(-x), 0, np.inf, epsrel=1e-12, limit=400)
    r, _ = integrate.dblquad(
        lambda t, x: math.exp(-x) / (1 - rho_x(t)), 0, 60, 0, lambda x: x, epsrel=1e-11
    )
    return w + r


@pytest.mark.parametrize("rho", [0.1, 0.5, 0.8, 0.95])
def test_mm1_srpt_against_an_independent_double_integral(rho):
    assert srpt1_mean_response_time(exp(1.0), rho) == pytest.approx(
        srpt_exponential_by_double_quadrature(rho), rel=1e-8
    )


def test_mm1_srpt_values_limits_and_scaling():
    # rho -> 0: no queueing, E[T] -> E[S]
    assert srpt1_mean_response_time(exp(2.0), 1e-7) == pytest.approx(2.0, rel=1e-6)
    # scaling sizes by c at the same load scales E[T] by c
    a = srpt1_mean_response_time(hyperexp(1.0, 10.0), 0.9)
    b = srpt1_mean_response_time(hyperexp(3.0, 10.0), 0.3)
    assert b == pytest.approx(3 * a, rel=1e-9)
    # SRPT beats every other policy in the M/G/1; exponential: FCFS = PS = FB = 1/(1-rho)
    for rho in (0.5, 0.9, 0.99):
        srpt = srpt1_mean_response_time(exp(1.0), rho)
        assert 1.0 < srpt < 1 / (1 - rho)
        assert fcfs1_mean_response_time(exp(1.0), rho) == pytest.approx(1 / (1 - rho))
        assert ps1_mean_response_time(exp(1.0), rho) == pytest.approx(1 / (1 - rho))
        assert fb1_mean_response_time(exp(1.0), rho) == pytest.approx(1 / (1 - rho), rel=1e-9)


def test_deterministic_sizes_srpt_is_fcfs():
    """All sizes equal: ties go to the older job, so SRPT never preempts and is FCFS (the
    (1 - rho(x))^2 form of Schrage-Miller would give lambda d^2 / (2 (1 - rho)^2) here)."""
    for rho in (0.3, 0.9):
        want = 1.0 + rho / (2 * (1 - rho))  # M/D/1
        assert srpt1_mean_response_time(Fixed(value=1.0), rho) == pytest.approx(want, rel=1e-12)
        assert fcfs1_mean_response_time(Fixed(value=1.0), rho) == pytest.approx(want, rel=1e-12)


def test_conditional_response_times():
    lam = 0.7
    law = SizeLaw.from_distribution(exp(1.0))
    x = 1.3
    rho_x = lam * (1 - math.exp(-x) * (1 + x))
    m2 = 2 * (1 - math.exp(-x) * (1 + x))
    residence, _ = integrate.quad(lambda t: 1 / (1 - lam * (1 - math.exp(-t) * (1 + t))), 0, x)
    want = lam * m2 / (2 * (1 - rho_x) ** 2) + residence
    assert srpt1_response_time_given_size(law, lam, x) == pytest.approx(want, rel=1e-9)
    assert srpt1_response_time_given_size(law, lam, 0.0) == 0.0
    # by need: the need-weighted average is the overall mean
    model_law = SizeLaw.from_classes(
        [
            JobClassLaw(0.5, 1, exp(1.0)),
            JobClassLaw(0.3, 2, hyperexp(2.0, 4.0)),
            JobClassLaw(0.2, 4, Fixed(value=0.5)),
        ],
        k=4,
    )
    lam = 0.8 / model_law.mean
    by_need = srpt1_mean_response_time_by_need(model_law, lam)
    probs = model_law.need_probabilities()
    total = sum(probs[n] * t for n, t in by_need.items())
    assert total == pytest.approx(srpt1_mean_response_time(model_law, lam), rel=1e-9)
    assert by_need[1.0] < by_need[2.0]  # sizes 0.25 vs 1.0 on average


def simulate_srpt(sizes: np.ndarray, arrivals: np.ndarray) -> np.ndarray:
    """Preemptive SRPT on one unit-speed server, ties to the earlier arrival; response times."""
    n = sizes.size
    resp = np.empty(n)
    heap: list[tuple[float, int]] = []
    t = 0.0
    i = 0
    while i < n or heap:
        if not heap:
            t = max(t, arrivals[i])
            heapq.heappush(heap, (sizes[i], i))
            i += 1
            continue
        rem, j = heap[0]
        t_next = arrivals[i] if i < n else math.inf
        if t + rem <= t_next:
            heapq.heappop(heap)
            t += rem
            resp[j] = t - arrivals[j]
        else:
            heapq.heapreplace(heap, (rem - (t_next - t), j))
            t = t_next
            heapq.heappush(heap, (sizes[i], i))
            i += 1
    return resp


def batch_mean_interval(values: np.ndarray, batches: int = 25) -> tuple[float, float]:
    means = np.array([b.mean() for b in np.array_split(values, batches)])
    half = stats.t.ppf(0.5 + LEVEL / 2, batches - 1) * means.std(ddof=1) / math.sqrt(batches)
    return float(values.mean()), float(half)


@pytest.mark.parametrize(
    ("name", "law"),
    [
        ("hyperexponential", SizeLaw.from_distribution(hyperexp(1.0, 6.0))),
        (
            "discrete",
            SizeLaw.from_distribution(
                Discrete(dist="discrete", values=[0.5, 1.0, 4.0], probabilities=[0.5, 0.3, 0.2])
            ),
        ),
        (
            "discrete-mixture",
            SizeLaw.from_classes(
                [
                    JobClassLaw(
                        0.6,
                        1,
                        Discrete(dist="discrete", values=[0.5, 2.0], probabilities=[0.7, 0.3]),
                    ),
                    JobClassLaw(0.4, 2, Uniform(dist="uniform", low=0.2, high=1.0)),
                ],
                k=2,
            ),
        ),
    ],
)
def test_srpt_against_simulation(name, law):
    rng = np.random.default_rng(7)
    n = 300_000
    lam = 0.8 / law.mean
    sizes = law.sample(rng, n)
    arrivals = np.cumsum(rng.exponential(1 / lam, n))
    resp = simulate_srpt(sizes, arrivals)[n // 10 :]
    mean, half = batch_mean_interval(resp)
    want = srpt1_mean_response_time(law, lam)
    assert abs(mean - want) <= half, (name, mean, half, want)
    assert half < 0.08 * want  # the 99.9% interval is informative


def test_srpt1_lower_bounds_a_simulated_multiserver_job_system():
    """SRPT-1 is a lower bound for every policy on the k servers (paper 004 §4.1)."""
    result = schedlab.simulate(paper004_spec(0.7, "server-filling", 60_000, seed=5))
    law = SizeLaw.from_classes(
        [
            JobClassLaw(c["probability"], c["need"], exp(c["duration"]["mean"]))
            for c in PAPER004_CLASSES
        ],
        k=8,
    )
    bound = srpt1_mean_response_time(law, result.rate)
    assert result["mean_response_time"].ci95[0] > bound


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: srpt1_mean_response_time(exp(1.0), 1.0), "rho"),
        (lambda: srpt1_mean_response_time(exp(1.0), 0.0), "> 0"),
        (lambda: srpt1_mean_response_time(exp(1.0), -1.0), "> 0"),
        (lambda: srpt1_mean_response_time(exp(1.0), math.nan), "finite"),
        (lambda: fcfs1_mean_response_time(exp(2.0), 0.6), ">= 1"),
        (lambda: srpt1_mean_response_time(Pareto(dist="pareto", alpha=0.9, xm=1.0), 0.1), "finite"),
    ],
)
def test_bad_arrival_rates_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---- Theorem 4.1 -----------------------------------------------------------------------------


def test_theorem41_gap_bound_formula():
    e = math.e
    assert theorem41_gap_bound(1, 2.0, 0.5) == pytest.approx(e / 2)  # k = 1: SFS-1 is SRPT-1
    assert theorem41_gap_bound(8, 4.0, 0.9) == pytest.approx(((e + 1) * 7 * math.log(10) + e) / 4)
    for bad in [(0, 1.0, 0.5), (2.5, 1.0, 0.5), (2, 0.0, 0.5), (2, 1.0, 1.0), (2, 1.0, 0.0)]:
        with pytest.raises(ValueError):
            theorem41_gap_bound(*bad)


def test_theorem41_bounds_for_paper004_models():
    model = compile_model(parse_spec(paper004_spec(0.99, "server-filling", 100)))
    b = theorem41_bounds(model)
    assert b.k == 8 and b.setting == "nested" and b.covered
    assert b.load == pytest.approx(0.99)
    assert b.lower == pytest.approx(srpt1_mean_response_time(SizeLaw.from_model(model), model.rate))
    assert b.upper == pytest.approx(b.lower + theorem41_gap_bound(8, model.rate, 0.99))
    g = theorem41_bounds(model, order="gittins")
    assert g.lower == pytest.approx((1 / 8) / (1 - 0.99), rel=1e-9)  # exponential: Gittins-1 = FCFS
    assert needs_setting([1, 2, 4], 8) == "nested"
    assert needs_setting([1, 2, 3], 6) == "divisible"
    assert needs_setting([3], 8) == "neither"
