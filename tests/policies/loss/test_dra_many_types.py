"""DRA with MaxReward solved while running (psychas2022 §3-§4): beyond EAGER_TYPES job types the
2^J knapsacks are not precomputed; GPA solves MaxReward(J') for the subsets it meets (the exact
knapsack of optim.reward, compiled) and caches it. The DRA audit of tests/helpers/dra_audit.py
(capacity, slots of the job's type, bookkeeping, GPA targets and CRA against brute force) holds
in that mode too: on small random systems with the lazy mode forced, and on 18 trace-like types
((priority, size) with sizes 1/2 .. 1/64, as in §7.2)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from schedlab.policies.loss import dra as D
from tests.helpers.dra_audit import run_audited
from tests.helpers.spec_strategies import vm_specs


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(vm_specs("dra"))
def test_lazy_max_reward_keeps_the_dra_invariants(spec):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(D, "EAGER_TYPES", 0)
        mp.setattr(D, "_TABLES", {})
        run_audited(spec)


def trace_like_spec(policy: str, **params) -> dict:
    sizes = [2.0**-e for e in range(1, 7)]
    classes = [
        {
            "name": f"p{p}-{e}",
            "probability": 1 / 18,
            "demand": s,
            "duration": {"dist": "exponential", "mean": 1.0 + e % 3},
            "reward": s * (1, 2, 4)[p],
        }
        for p in range(3)
        for e, s in enumerate(sizes)
    ]
    return {
        "cluster": {"servers": 12, "capacity": 1.0},
        "workload": {"rate": 12 * 4.0, "classes": classes},
        "model": {"family": "loss"},
        "policy": {"name": policy, **params},
        "run": {"arrivals": 1500, "seed": 3, "jobs": True, "batches": 4},
    }


@pytest.mark.parametrize(
    "policy",
    [{"name": "dra"}, {"name": "dra-preemption", "priorities": [0] * 6 + [1] * 6 + [2] * 6}],
)
def test_eighteen_trace_like_types(policy):
    assert D.EAGER_TYPES < 18
    spec = trace_like_spec(
        **{"policy": policy["name"]}, **{k: v for k, v in policy.items() if k != "name"}
    )
    run_audited(spec)
