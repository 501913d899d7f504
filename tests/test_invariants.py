"""Engine invariants on hypothesis-generated specs, for every built-in policy.

Each run is made with action validation on (the engine refuses capacity overflows, preemption of
non-preemptive jobs, service of lost jobs), and then audited independently from its per-job
records: every job completed or lost exactly once, times ordered, non-preemptive service equal to
the work, and a sweep over each server's start/finish events that never exceeds its capacity.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.policies.registry import all_policies

EXAMPLES = 1000

durations_continuous = st.one_of(
    st.builds(lambda m: {"dist": "exponential", "mean": m}, st.floats(0.05, 5.0)),
    st.builds(lambda v: {"dist": "fixed", "value": v}, st.floats(0.05, 5.0)),
    st.builds(
        lambda m, c: {"dist": "hyperexponential", "mean": m, "scv": c},
        st.floats(0.05, 5.0),
        st.floats(1.0, 20.0),
    ),
    st.builds(
        lambda lo, w: {"dist": "uniform", "low": lo, "high": lo + w},
        st.floats(0.01, 2.0),
        st.floats(0.0, 3.0),
    ),
    st.builds(
        lambda a, lo: {"dist": "bounded_pareto", "alpha": a, "low": lo, "high": lo * 100},
        st.floats(0.5, 2.5),
        st.floats(0.01, 1.0),
    ),
)
durations_slotted = st.one_of(
    st.builds(lambda m: {"dist": "geometric", "mean": m}, st.floats(1.0, 30.0)),
    st.builds(lambda v: {"dist": "fixed", "value": v}, st.integers(1, 20)),
)


@st.composite
def time_model(draw):
    slotted = draw(st.booleans())
    if slotted:
        return {"time": "slotted"}, durations_slotted
    interval = draw(st.sampled_from([0.0, 0.0, 0.25]))
    return {"decision_interval": interval}, durations_continuous


@st.composite
def pooled_specs(draw, policy: str):
    k = draw(st.sampled_from([1, 2, 4, 8, 16]))
    model, durations = draw(time_model())
    needs = [n for n in (1, 2, 4, 8, 16) if n <= k]
    n_classes = draw(st.integers(1, 3))
    weights = draw(st.lists(st.floats(0.1, 1.0), min_size=n_classes, max_size=n_classes))
    classes = [
        {
            "probability": w / sum(weights),
            "need": draw(st.sampled_from(needs)),
            "duration": draw(durations),
        }
        for w in weights
    ]
    return {
        "cluster": {"servers": k},
        "workload": {"load": draw(st.floats(0.05, 0.98)), "classes": classes},
        "model": model,
        "policy": {"name": policy},
        "run": {
            "arrivals": draw(st.integers(1, 300)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 10,
        },
    }


@st.composite
def resource_specs(draw, policy: str, family: str):
    servers = draw(st.integers(1, 6))
    model, durations = draw(time_model())
    named = draw(st.booleans())
    if named:
        capacity = {"cpu": draw(st.sampled_from([1.0, 2.0])), "mem": 1.0}

        def demand():
            return {
                "cpu": draw(st.floats(0.01, capacity["cpu"])),
                "mem": {"dist": "uniform", "low": 0.01, "high": draw(st.floats(0.02, 1.0))},
            }
    else:
        capacity = draw(st.sampled_from([1.0, 10.0]))

        def demand():
            hi = draw(st.floats(0.02, capacity))
            return {"dist": "uniform", "low": min(0.01, hi), "high": hi}

    n_classes = draw(st.integers(1, 3))
    weights = draw(st.lists(st.floats(0.1, 1.0), min_size=n_classes, max_size=n_classes))
    classes = [
        {"probability": w / sum(weights), "demand": demand(), "duration": draw(durations)}
        for w in weights
    ]
    max_load = 3.0 if family == "loss" else 0.98
    return {
        "cluster": {"servers": servers, "capacity": capacity},
        "workload": {"load": draw(st.floats(0.05, max_load)), "classes": classes},
        "model": {**model, "family": family},
        "policy": {"name": policy},
        "run": {
            "arrivals": draw(st.integers(1, 300)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 10,
        },
    }


def audit(result, spec) -> None:
    jobs = result.jobs.to_pydict()
    n = len(jobs["job"])
    assert n == spec["run"]["arrivals"]
    status = np.array(jobs["status"])
    assert set(status) <= {"done", "lost"}, set(status)
    assert result.counters["completions"] + result.counters["lost"] == n
    if result.family != "loss":
        assert (status == "done").all()
    arrival = np.array(jobs["arrival"])
    start = np.array(jobs["start"], dtype=float)
    finish = np.array(jobs["finish"], dtype=float)
    work = np.array(jobs["work"])
    done = status == "done"
    assert np.all(np.diff(arrival) >= 0)
    assert np.all(start[done] >= arrival[done])
    assert np.all(finish[done] >= start[done])
    assert np.all(np.isnan(start[~done])), "a lost job was served"
    served = finish[done] - start[done]
    tol = 1e-9 * np.maximum(1.0, finish[done])
    if result.family == "pooled" and result.policy != "fcfs":
        assert np.all(served >= work[done] - tol)  # preempt-resume never speeds a job up
    else:
        assert np.allclose(served, work[done], rtol=1e-9, atol=1e-9), "non-preemptive job moved"
        demand_cols = [c for c in jobs if c.startswith("demand[")]
        demand = np.column_stack([np.array(jobs[c]) for c in demand_cols])
        server = np.array(jobs["server"])
        capacity = _capacity(spec, result, len(demand_cols))
        for s in np.unique(server[done]):
            mine = np.flatnonzero(done & (server == s))
            events = sorted([(finish[j], 0, j) for j in mine] + [(start[j], 1, j) for j in mine])
            load = np.zeros(len(demand_cols))
            for _, kind, j in events:  # releases before starts at equal times
                load += demand[j] if kind else -demand[j]
                assert np.all(load <= capacity[s] + 1e-9), (s, load, capacity[s])
    if spec["model"].get("time") == "slotted":
        assert np.all(start[done] == np.round(start[done])), "slotted decisions at slot starts"


def _capacity(spec, result, n_res) -> np.ndarray:
    if result.family == "pooled":
        return np.array([[float(spec["cluster"]["servers"])]])
    cap = spec["cluster"]["capacity"]
    row = [cap["cpu"], cap["mem"]] if isinstance(cap, dict) else [cap]
    return np.array([row] * spec["cluster"]["servers"], dtype=float).reshape(-1, n_res)


def check(spec) -> None:
    spec["run"]["check"] = True
    audit(schedlab.simulate(spec), spec)


RELAXED = settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))


@RELAXED
@given(pooled_specs("fcfs"))
def test_invariants_fcfs(spec):
    check(spec)


@RELAXED
@given(resource_specs("fifo-ff", "packing"))
def test_invariants_fifo_ff(spec):
    check(spec)


@RELAXED
@given(resource_specs("first-fit", "packing"))
def test_invariants_first_fit_packing(spec):
    check(spec)


@RELAXED
@given(resource_specs("first-fit", "loss"))
def test_invariants_first_fit_loss(spec):
    check(spec)


TESTED_POLICIES = {"fcfs", "fifo-ff", "first-fit"}


def test_every_registered_policy_has_an_invariant_test():
    """Every policy must appear in TESTED_POLICIES of some tests/test_invariants*.py module."""
    import importlib
    from pathlib import Path

    tested: set[str] = set()
    for path in Path(__file__).parent.glob("test_invariants*.py"):
        module = importlib.import_module(f"tests.{path.stem}")
        tested |= getattr(module, "TESTED_POLICIES", set())
    missing = {p.name for p in all_policies()} - tested
    assert not missing, f"policies without an invariant test: {sorted(missing)}"
