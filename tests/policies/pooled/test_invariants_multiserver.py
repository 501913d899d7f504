"""Invariants of the preemptive multiserver-job policies of paper 004 on random specs."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from tests.helpers.audit import audit
from tests.helpers.spec_strategies import EXAMPLES, pooled_specs
from tests.helpers.specs import pooled_spec

TESTED_POLICIES = {
    "server-filling",
    "server-filling-srpt",
    "divisor-filling",
    "divisor-filling-srpt",
    "greedy-srpt",
    "first-fit-srpt",
    "preemptive-first-fit",
    "most-servers-first",
    "least-servers-first",
    "max-weight",
    "max-weight-greedy",
    "srpt-1",
    "server-filling-gittins",
    "divisor-filling-gittins",
    "gittins-1",
}


def _relaxed(policy: str):
    return settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))


@st.composite
def general_specs(draw, policy: str, divisible: bool):
    """Pooled specs with needs that divide k (divisible) or any needs <= k."""
    k = draw(st.sampled_from([6, 10, 12, 30] if divisible else [3, 5, 7, 12, 20]))
    choices = [d for d in range(1, k + 1) if k % d == 0] if divisible else list(range(1, k + 1))
    spec = draw(pooled_specs(policy))
    spec["cluster"]["servers"] = k
    for cls in spec["workload"]["classes"]:
        cls["need"] = draw(st.sampled_from(choices))
    return spec


def run_and_audit(spec) -> None:
    spec["run"]["check"] = True
    result = schedlab.simulate(spec)
    if spec["policy"]["name"] in ("srpt-1", "gittins-1"):
        # one server of speed k: a job of need K and duration D is done after K D / k in service
        jobs = result.jobs.to_pydict()
        served = np.array(jobs["finish"]) - np.array(jobs["start"])
        size = (
            np.array(jobs["work"]) * np.array(jobs["demand[servers]"]) / spec["cluster"]["servers"]
        )
        assert np.all(served >= size - 1e-9 * np.maximum(1, np.array(jobs["finish"])))
        assert result.counters["completions"] == spec["run"]["arrivals"]
        return
    audit(result, spec)


def _power_of_two(policy):
    @_relaxed(policy)
    @given(pooled_specs(policy))
    def test(spec):
        run_and_audit(spec)

    return test


def _general(policy, divisible=False):
    @_relaxed(policy)
    @given(general_specs(policy, divisible))
    def test(spec):
        run_and_audit(spec)

    return test


test_server_filling = _power_of_two("server-filling")
test_server_filling_srpt = _power_of_two("server-filling-srpt")
test_srpt_1 = _power_of_two("srpt-1")
test_server_filling_gittins = _power_of_two("server-filling-gittins")
test_gittins_1 = _power_of_two("gittins-1")
test_divisor_filling_gittins = _general("divisor-filling-gittins", divisible=True)
test_divisor_filling = _general("divisor-filling", divisible=True)
test_divisor_filling_srpt = _general("divisor-filling-srpt", divisible=True)
test_greedy_srpt = _general("greedy-srpt")
test_first_fit_srpt = _general("first-fit-srpt")
test_preemptive_first_fit = _general("preemptive-first-fit")
test_most_servers_first = _general("most-servers-first")
test_least_servers_first = _general("least-servers-first")
test_max_weight = _general("max-weight")
test_max_weight_greedy = _general("max-weight-greedy")


def test_with_unit_needs_every_srpt_variant_is_srpt_k():
    """All needs 1: ServerFilling-SRPT, DivisorFilling-SRPT, GreedySRPT and FirstFitSRPT all
    serve the k jobs of least remaining size (SRPT-k): identical runs on the same jobs."""
    outputs = []
    for policy in ("server-filling-srpt", "divisor-filling-srpt", "greedy-srpt", "first-fit-srpt"):
        spec = pooled_spec(4, 0.8, policy=policy, arrivals=20_000, seed=5)
        outputs.append(schedlab.simulate(spec).to_dict()["metrics"])
    assert all(o == outputs[0] for o in outputs)


def test_with_power_of_two_needs_divisor_filling_is_work_conserving_like_server_filling():
    """Both fill all k servers whenever k jobs are present; at a load both sustain they carry the
    same utilization (= load)."""
    for policy in ("server-filling-srpt", "divisor-filling-srpt"):
        spec = pooled_spec(
            8,
            0.9,
            policy=policy,
            arrivals=100_000,
            seed=2,
            classes=[
                {"probability": 0.25, "need": n, "duration": {"dist": "exponential", "mean": 1 / n}}
                for n in (1, 2, 4, 8)
            ],
        )
        result = schedlab.simulate(spec)
        assert result.stable
        assert result["utilization[servers]"].covers(0.9, 0.999)
