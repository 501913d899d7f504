"""Hypothesis strategies for random specs of every family (durations of either time model, pooled
classes of needs, resource classes of named or scalar demands, paper 002's VM types), and the
invariant tests' settings: 300 examples per policy."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Examples per policy of the invariant tests. An example is a whole run (parse, compile, up to 300
# arrivals, audit: 10-20 ms of CPU). Three injected bugs that the invariants must catch (a
# ServerFilling placement left over-full by one server; the same only when k = 16; GreedySRPT
# serving a job one server too wide) were each caught, over 20 hypothesis seeds in all, at
# examples 4 to 65 (median 8): 300 is 4.6 times the slowest. At 1000 examples per policy these
# tests took a quarter of make test's CPU time (361 s, measured module by module, of 1,438 s).
EXAMPLES = 300
RELAXED = settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))

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


@st.composite
def vm_specs(draw, policy: str, **params):
    n_types = draw(st.integers(1, 4))
    cap = {"cpu": draw(st.integers(4, 12)), "mem": draw(st.integers(4, 24))}
    classes = []
    weights = draw(st.lists(st.floats(0.1, 1.0), min_size=n_types, max_size=n_types))
    for i, w in enumerate(weights):
        classes.append(
            {
                "name": f"t{i}",
                "probability": w / sum(weights),
                "demand": {
                    "cpu": draw(st.integers(1, cap["cpu"])),
                    "mem": draw(st.integers(0, cap["mem"])),
                },
                "duration": {"dist": "exponential", "mean": draw(st.floats(0.2, 3.0))},
                "reward": float(draw(st.integers(1, 30))),
            }
        )
    servers = draw(st.integers(1, 12))
    policy_spec = {"name": policy, **params}
    if policy == "dra-preemption":
        policy_spec["priorities"] = [draw(st.integers(0, 2)) for _ in range(n_types)]
    if policy.startswith("dra") and draw(st.booleans()):
        policy_spec["reservation"] = draw(st.integers(1, 4))
    return {
        "cluster": {"servers": servers, "capacity": cap},
        "workload": {"rate": draw(st.floats(0.5, 30.0)) * servers, "classes": classes},
        "model": {"family": "loss"},
        "policy": policy_spec,
        "run": {
            "arrivals": draw(st.integers(1, 400)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 10,
        },
    }
