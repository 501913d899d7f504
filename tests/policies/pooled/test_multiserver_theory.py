"""Engine runs of paper 004's policies against independent analysis (analysis/srpt.py,
analysis/gittins.py, analysis/theorem41.py), with fixed seeds and the runs' own 95% batch-means
intervals.

- SRPT-1 and Gittins-1 (one server of speed k, §4.1, §5.3) are M/G/1 queues: the simulated mean
  response time must be covered by the interval around the exact M/G/1-SRPT (Schrage-Miller) and
  M/G/1-Gittins (SOAP) values, for exponential and hyperexponential (C^2 = 10, Fig. 4) sizes.
- ServerFilling-SRPT with k = 1 is SRPT-1 itself.
- ServerFilling-SRPT lies between the two sides of Theorem 4.1 (and ServerFilling-Gittins
  between those of Theorem 5.2's Gittins analogue).
"""

from __future__ import annotations

import pytest

import schedlab
from schedlab.analysis.gittins import gittins1_mean_response_time
from schedlab.analysis.sizes import SizeLaw
from schedlab.analysis.srpt import srpt1_mean_response_time
from schedlab.analysis.theorem41 import theorem41_bounds
from schedlab.model.compile import compile_model
from schedlab.reproduce.grosof2023 import spec as paper004_setting
from schedlab.simulation.simulate import with_run
from tests.helpers.specs import pooled_spec

ANALYSIS = {"srpt-1": srpt1_mean_response_time, "gittins-1": gittins1_mean_response_time}


@pytest.mark.parametrize("sizes", ["exponential", "hyperexponential"])
@pytest.mark.parametrize("policy", ["srpt-1", "gittins-1"])
def test_resource_pooled_bounds_match_the_m_g_1_analysis(policy, sizes):
    spec = with_run(paper004_setting(policy, 0.8, 300_000, sizes), seed=1)
    model = compile_model(spec)
    want = ANALYSIS[policy](SizeLaw.from_model(model), model.rate)
    got = schedlab.simulate(spec)["mean_response_time"]
    assert got.covers(want), (got.mean, got.ci95, want)
    assert got.ci95[1] - got.ci95[0] < 0.3 * want  # the check is informative


def test_server_filling_srpt_on_one_server_is_m_m_1_srpt():
    spec = pooled_spec(1, 0.85, policy="server-filling-srpt", arrivals=200_000, seed=3)
    model = compile_model(schedlab.model.spec.parse_spec(spec))
    want = srpt1_mean_response_time(SizeLaw.from_model(model), model.rate)
    got = schedlab.simulate(spec)["mean_response_time"]
    assert got.covers(want), (got.mean, got.ci95, want)


@pytest.mark.parametrize(
    ("policy", "order"), [("server-filling-srpt", "srpt"), ("server-filling-gittins", "gittins")]
)
def test_server_filling_lies_within_its_theorem_bounds(policy, order):
    spec = with_run(paper004_setting(policy, 0.9, 100_000, "exponential"), seed=4)
    bounds = theorem41_bounds(compile_model(spec), order=order)
    got = schedlab.simulate(spec)["mean_response_time"]
    assert bounds.lower < got.ci95[0] and got.ci95[1] < bounds.upper
