"""Engine invariants for paper 000's policies: BF-J, BF-S, BF-J/S, VQS, VQS-BF (300 examples each,
tests/helpers/spec_strategies.py says why).

The specs come from tests/helpers/spec_strategies.py (one or two resources, slotted or continuous
time, with or without a decision grid), with the policies' parameters drawn too (multi-resource
score, stalling, J, beta). A second family of specs has heterogeneous servers (capacities a power of
two apart, paper 000 §VIII) and is audited against each server's own capacity.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from tests.helpers.audit import audit
from tests.helpers.spec_strategies import EXAMPLES, resource_specs, time_model

BEST_FIT = ("bf-js", "bf-j", "bf-s")
VIRTUAL_QUEUE = ("vqs", "vqs-bf")
TESTED_POLICIES = set(BEST_FIT) | set(VIRTUAL_QUEUE)

RELAXED = settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck), deadline=None)


def policy_params(draw, name: str) -> dict:
    if name in BEST_FIT:
        return {
            "name": name,
            "multi_resource": draw(st.sampled_from(["dot", "max"])),
            "stalling": draw(st.booleans()),
            "max_stalled_fraction": draw(st.sampled_from([1.0, 0.5])),
        }
    return {
        "name": name,
        "J": draw(st.sampled_from(["auto", 2, 3, 6])),
        "stalling": draw(st.booleans()),
        "stall_beta": draw(st.floats(0.3, 0.95)),
        "max_stalled_fraction": draw(st.sampled_from([1.0, 0.5])),
    }


@st.composite
def specs(draw, name: str):
    spec = draw(resource_specs(name, "packing"))
    spec["policy"] = policy_params(draw, name)
    return spec


@st.composite
def heterogeneous_specs(draw, name: str):
    model, durations = draw(time_model())
    scales = draw(st.lists(st.sampled_from([1.0, 0.5, 0.25, 2.0]), min_size=1, max_size=3))
    pools = [{"count": draw(st.integers(1, 3)), "capacity": s} for s in scales]
    small = min(scales)
    hi = draw(st.floats(0.05, 1.0)) * small
    classes = [
        {
            "demand": {"dist": "uniform", "low": min(0.02 * small, hi), "high": hi},
            "duration": draw(durations),
        }
    ]
    return {
        "cluster": {"pools": pools},
        "workload": {"load": draw(st.floats(0.05, 0.98)), "classes": classes},
        "model": {**model, "family": "packing"},
        "policy": {**policy_params(draw, name), **({"J": "auto"} if name in VIRTUAL_QUEUE else {})},
        "run": {
            "arrivals": draw(st.integers(1, 300)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 10,
            "check": True,
        },
    }


def audit_pools(result, spec) -> None:
    """Every job done once, service equals work, and no server ever exceeds its own capacity."""
    jobs = {k: np.array(v) for k, v in result.jobs.to_pydict().items()}
    assert (jobs["status"] == "done").all()
    start, finish, work = jobs["start"], jobs["finish"], jobs["work"]
    assert np.all(start >= jobs["arrival"])
    np.testing.assert_allclose(finish - start, work, rtol=1e-9, atol=1e-9)
    capacity = np.array(
        [p["capacity"] for p in spec["cluster"]["pools"] for _ in range(p["count"])]
    )
    demand = jobs["demand[resource]"]
    for s in np.unique(jobs["server"]):
        mine = np.flatnonzero(jobs["server"] == s)
        events = sorted([(finish[j], 0, j) for j in mine] + [(start[j], 1, j) for j in mine])
        load = 0.0
        for _, kind, j in events:
            load += demand[j] if kind else -demand[j]
            assert load <= capacity[s] + 1e-9, (s, load, capacity[s])
    if spec["model"].get("time") == "slotted":
        assert np.all(start == np.round(start))


def check(spec) -> None:
    spec["run"]["check"] = True
    audit(schedlab.simulate(spec), spec)


@RELAXED
@given(specs("bf-js"))
def test_invariants_bf_js(spec):
    check(spec)


@RELAXED
@given(specs("bf-j"))
def test_invariants_bf_j(spec):
    check(spec)


@RELAXED
@given(specs("bf-s"))
def test_invariants_bf_s(spec):
    check(spec)


@RELAXED
@given(specs("vqs"))
def test_invariants_vqs(spec):
    check(spec)


@RELAXED
@given(specs("vqs-bf"))
def test_invariants_vqs_bf(spec):
    check(spec)


@settings(max_examples=200, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.sampled_from(sorted(TESTED_POLICIES)).flatmap(heterogeneous_specs))
def test_invariants_heterogeneous_servers(spec):
    audit_pools(schedlab.simulate(spec), spec)
