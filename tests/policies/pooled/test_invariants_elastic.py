"""Invariants of the paper-003 allocation policies (IF, EF, class-priority) on random specs.

Every run has action validation on (the engine refuses allocations over k or over a job's
max_alloc) and is then audited from its per-job records. When jobs can only use one server the
shared audit of tests/helpers/audit.py applies (preempt-resume never speeds a job up). With
elastic classes a job may finish faster than its work, but never faster than work / cap. In
continuous time with decisions at every event, every job's finish time must also equal the one
computed by an independent event-driven reference of the rule of paper 003 §2 (levels by
priority, FCFS within a level, min(cap, servers left) per job).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from tests.helpers.audit import audit
from tests.helpers.spec_strategies import EXAMPLES, time_model

TESTED_POLICIES = {"inelastic-first", "elastic-first", "class-priority"}
RELAXED = settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))


@st.composite
def elastic_specs(draw, policy: str):
    """k servers, 1-3 classes each inelastic, fully elastic or elastic capped at C < k."""
    k = draw(st.sampled_from([1, 2, 3, 4, 8, 16]))
    model, durations = draw(time_model())
    n_classes = draw(st.integers(1, 3))
    weights = draw(st.lists(st.floats(0.1, 1.0), min_size=n_classes, max_size=n_classes))
    classes = []
    for i, w in enumerate(weights):
        cls = {"name": f"c{i}", "probability": w / sum(weights), "duration": draw(durations)}
        kind = draw(st.sampled_from(["inelastic", "elastic", "capped"]))
        if kind == "inelastic":
            cls["speedup"] = "inelastic"
        else:
            cls["speedup"] = "elastic"
            if kind == "capped":
                cls["max_alloc"] = draw(st.floats(0.25, float(k)))
        classes.append(cls)
    policy_spec: dict = {"name": policy}
    if policy == "class-priority":
        names = [c["name"] for c in classes]
        perm = draw(st.permutations(names))
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(names) - 1)), max_size=2)))
        levels, start = [], 0
        for cut in [*cuts, len(names)]:
            if cut > start:
                group = list(perm[start:cut])
                levels.append(group[0] if len(group) == 1 and draw(st.booleans()) else group)
                start = cut
        policy_spec["order"] = levels
        caps = {}
        for c in classes:
            if draw(st.booleans()):
                limit = 1.0 if c["speedup"] == "inelastic" else c.get("max_alloc", float(k))
                caps[c["name"]] = draw(st.floats(0.1, limit))
        policy_spec["caps"] = caps
    return {
        "cluster": {"servers": k},
        "workload": {"load": draw(st.floats(0.05, 0.98)), "classes": classes},
        "model": model,
        "policy": policy_spec,
        "run": {
            "arrivals": draw(st.integers(1, 150)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 10,
            "check": True,
        },
    }


def levels_and_caps(spec) -> tuple[dict[str, int], dict[str, float]]:
    """The §2 rule's parameters, derived independently from the spec."""
    k = float(spec["cluster"]["servers"])
    classes = spec["workload"]["classes"]
    cap = {
        c["name"]: 1.0 if c["speedup"] == "inelastic" else float(c.get("max_alloc", k))
        for c in classes
    }
    policy = spec["policy"]
    if policy["name"] == "class-priority":
        level = {}
        for lv, entry in enumerate(policy["order"]):
            for name in [entry] if isinstance(entry, str) else entry:
                level[name] = lv
        cap.update(policy.get("caps", {}))
        return level, cap
    elastic = {c["name"]: c["speedup"] == "elastic" and cap[c["name"]] >= k for c in classes}
    first = policy["name"] == "elastic-first"
    level = {name: 0 if e == first else 1 for name, e in elastic.items()}
    if min(level.values()) == 1:
        level = dict.fromkeys(level, 0)
    return level, cap


def reference_finish_times(
    arrival: np.ndarray, names: list[str], work: np.ndarray, k: float, level, cap
) -> np.ndarray:
    """Event-driven reference of paper 003 §2's class-priority rule (decisions at every event)."""
    n = len(arrival)
    left = work.astype(float).copy()
    finish = np.full(n, np.nan)
    present: list[int] = []
    nxt = 0
    t = 0.0
    while nxt < n or present:
        if not present:
            t = arrival[nxt]
        while nxt < n and arrival[nxt] <= t:
            present.append(nxt)
            nxt += 1
        alloc: dict[int, float] = {}
        free = k
        for j in sorted(present, key=lambda j: (level[names[j]], j)):
            if free <= 1e-9 * max(1.0, k):
                break
            alloc[j] = min(cap[names[j]], free)
            free -= alloc[j]
        t_dep = min(t + left[j] / a for j, a in alloc.items())
        t_arr = arrival[nxt] if nxt < n else math.inf
        t_next = min(t_dep, t_arr)
        for j, a in alloc.items():
            left[j] -= a * (t_next - t)
        done = [j for j, a in alloc.items() if left[j] <= 1e-9 * max(1.0, work[j])]
        if t_dep <= t_arr and not done:  # rounding: the job attaining the minimum finishes
            done = [min(alloc, key=lambda j: (left[j] / alloc[j], j))]
        t = t_next
        for j in done:
            finish[j] = t
            present.remove(j)
    return finish


def audit_elastic(result, spec) -> None:
    classes = spec["workload"]["classes"]
    if all(c["speedup"] == "inelastic" for c in classes):
        audit(result, spec)  # rate <= 1: the shared pooled audit applies unchanged
    jobs = result.jobs.to_pydict()
    n = len(jobs["job"])
    assert n == spec["run"]["arrivals"]
    assert set(jobs["status"]) == {"done"}
    arrival = np.array(jobs["arrival"])
    start = np.array(jobs["start"], dtype=float)
    finish = np.array(jobs["finish"], dtype=float)
    work = np.array(jobs["work"])
    names = list(jobs["job_class"])
    level, cap = levels_and_caps(spec)
    assert np.all(start >= arrival) and np.all(finish >= start)
    fastest = work / np.array([cap[c] for c in names])
    assert np.all(finish - start >= fastest * (1 - 1e-9) - 1e-12), "a job ran above its cap"
    if spec["model"].get("time") == "slotted" or spec["model"].get("decision_interval", 0) > 0:
        return
    k = float(spec["cluster"]["servers"])
    expected = reference_finish_times(arrival, names, work, k, level, cap)
    np.testing.assert_allclose(finish, expected, rtol=1e-6, atol=1e-9)


def check(spec) -> None:
    audit_elastic(schedlab.simulate(spec), spec)


@RELAXED
@given(elastic_specs("inelastic-first"))
def test_invariants_inelastic_first(spec):
    check(spec)


@RELAXED
@given(elastic_specs("elastic-first"))
def test_invariants_elastic_first(spec):
    check(spec)


@RELAXED
@given(elastic_specs("class-priority"))
def test_invariants_class_priority(spec):
    check(spec)
