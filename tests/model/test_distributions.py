"""Distributions: sample means against analytic means (CLT tolerance), shapes kept by rescaling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from schedlab.model.distributions import Distribution
from schedlab.model.laws import AtomsComponent, ParetoComponent, UniformComponent

ADAPTER = TypeAdapter(Distribution)
CASES = [
    {"dist": "fixed", "value": 2.5},
    {"dist": "exponential", "mean": 2.0},
    {"dist": "exponential", "rate": 4.0},
    {"dist": "uniform", "low": 0.1, "high": 0.9},
    {"dist": "uniform", "low": 1, "high": 6, "integer": True},
    {"dist": "discrete", "values": [1, 2, 4, 8]},
    {"dist": "discrete", "values": [0.4, 0.6], "probabilities": [0.3, 0.7]},
    {"dist": "empirical", "values": [1.0, 1.0, 3.0, 7.5]},
    {"dist": "geometric", "mean": 100},
    {"dist": "poisson", "mean": 3.5},
    {"dist": "hyperexponential", "mean": 1.0, "scv": 10.0},
    {"dist": "hyperexponential", "probabilities": [0.2, 0.8], "means": [3.0, 0.5]},
    {"dist": "pareto", "alpha": 3.5, "xm": 1.0},
    {"dist": "bounded_pareto", "alpha": 1.1, "low": 1.0, "high": 1000.0},
    {"dist": "lognormal", "mean": 2.0, "scv": 4.0},
]


@pytest.mark.parametrize("params", CASES, ids=lambda p: p["dist"])
def test_sample_mean_and_variance(params):
    dist = ADAPTER.validate_python(params)
    x = dist.sample(np.random.default_rng(1), 400_000)
    var = dist.second_moment - dist.mean**2
    # sample mean within 4.5 standard errors (a correct sampler fails ~1 in 150 000)
    assert abs(x.mean() - dist.mean) <= 4.5 * math.sqrt(var / x.size) + 1e-12
    lo, hi = dist.support
    assert x.min() >= lo - 1e-12 and x.max() <= hi + 1e-12
    if dist.integer:
        assert np.all(x == np.round(x))


def test_hyperexponential_has_the_requested_scv():
    dist = ADAPTER.validate_python({"dist": "hyperexponential", "mean": 0.125, "scv": 10.0})
    assert dist.scv == pytest.approx(10.0)
    p, means = dist.phases()
    assert p[0] * 1 / means[0] == pytest.approx(p[0] / means[0])  # two phases
    assert np.dot(p, means) == pytest.approx(0.125)
    # balanced means: p1 / mu1 == p2 / mu2
    assert p[0] * means[0] == pytest.approx(p[1] * means[1])


@pytest.mark.parametrize(
    "params",
    [c for c in CASES if c["dist"] not in ("geometric", "poisson")],
    ids=lambda p: p["dist"],
)
def test_with_mean_keeps_the_shape(params):
    dist = ADAPTER.validate_python(params)
    if dist.mean == 0:
        return
    scaled = dist.with_mean(3.0 * dist.mean)
    assert scaled.mean == pytest.approx(3.0 * dist.mean)
    assert scaled.scv == pytest.approx(dist.scv)


@pytest.mark.parametrize(
    "params",
    [
        {"dist": "exponential", "mean": -1},
        {"dist": "exponential", "mean": 1, "rate": 1},
        {"dist": "uniform", "low": 2, "high": 1},
        {"dist": "discrete", "values": [1, 2], "probabilities": [0.5, 0.6]},
        {"dist": "discrete", "values": [1, 2], "probabilities": [1.0]},
        {"dist": "geometric", "mean": 0.5},
        {"dist": "hyperexponential", "mean": 1.0, "scv": 0.5},
        {"dist": "pareto", "alpha": 0.8, "mean": 1.0},
        {"dist": "bounded_pareto", "alpha": 1.0, "low": 2, "high": 1},
        {"dist": "lognormal", "mean": 1.0},
        {"dist": "empirical", "values": []},
        {"dist": "nope"},
    ],
)
def test_invalid_parameters_are_refused(params):
    with pytest.raises(ValidationError):
        ADAPTER.validate_python(params)


def test_empirical_from_file(tmp_path):
    path = tmp_path / "sizes.csv"
    path.write_text("1.0\n2.0\n6.0\n")
    dist = ADAPTER.validate_python({"dist": "empirical", "file": str(path)})
    assert dist.mean == pytest.approx(3.0)
    with pytest.raises(ValidationError, match="no such file"):
        ADAPTER.validate_python({"dist": "empirical", "file": str(tmp_path / "missing.csv")})


@pytest.mark.parametrize(
    "dist",
    [
        {"dist": "fixed", "value": 2.5},
        {"dist": "exponential", "mean": 3.0},
        {"dist": "hyperexponential", "mean": 2.0, "scv": 10.0},
        {"dist": "uniform", "low": 1.0, "high": 4.0},
        {"dist": "uniform", "low": 1, "high": 6, "integer": True},
        {"dist": "discrete", "values": [1.0, 2.0, 7.0], "probabilities": [0.5, 0.3, 0.2]},
        {"dist": "empirical", "values": [3.0, 1.0, 3.0, 3.0]},
        {"dist": "geometric", "mean": 4.0},
        {"dist": "poisson", "mean": 3.0},
        {"dist": "pareto", "alpha": 3.5, "mean": 2.0},
        {"dist": "bounded_pareto", "alpha": 1.5, "low": 1.0, "high": 100.0},
        {"dist": "lognormal", "mean": 2.0, "scv": 1.5},
    ],
)
def test_components_have_the_distributions_moments(dist):
    """Each spec distribution's closed-form components (model/laws.py, used by the analysis)
    have the first two moments the spec distribution states."""
    d = TypeAdapter(Distribution).validate_python(dist)
    parts = d.components()
    assert sum(w for w, _ in parts) == pytest.approx(1.0)
    for n, want in ((1, d.mean), (2, d.second_moment)):
        assert sum(w * c.moment(n) for w, c in parts) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    "law",
    [UniformComponent(1.5, 1.5000000000000002), ParetoComponent(2.0, 1.5, 1.5000000000000002)],
)
def test_a_support_one_ulp_wide_scales_to_a_point_mass(law):
    """Found by hypothesis (tests/policies/pooled/test_invariants_multiserver.py,
    divisor-filling-gittins): a uniform duration on [1.5, 1.5 + 1 ulp] is a valid spec, and
    scaling it by need / k = 1/6 rounds both ends to 0.25. The scaled law is then the point mass
    at 0.25, not an error."""
    scaled = law.scaled(1 / 6)
    assert isinstance(scaled, AtomsComponent) and scaled.values.tolist() == [0.25]
    assert scaled.moment(1) == 0.25
    if isinstance(law, UniformComponent):  # its moments without cancellation
        assert law.moment(1) == pytest.approx(1.5, rel=1e-15)
        assert law.moment(2) == pytest.approx(2.25, rel=1e-15)
    wide = UniformComponent(1.5, 3.0).scaled(1 / 6)
    assert isinstance(wide, UniformComponent) and wide.support == (0.25, 0.5)
