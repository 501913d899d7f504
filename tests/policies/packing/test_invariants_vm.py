"""Engine invariants for paper 001's policies (vm-stalling, m14, g16) on random VM-type specs
(Poisson, i.i.d. batches or batch vectors of Corollary 5.3):
every job served once, for exactly its work (non-preemption), never above a server's capacity in
any resource (tests/helpers/audit.py), with the policies' parameters drawn too."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from tests.helpers.audit import audit

VM_POLICIES = ("vm-stalling", "m14", "g16")
VM_EXAMPLES = 40

TESTED_POLICIES = {"vm-stalling", "m14", "g16"}


@st.composite
def vm_specs(draw, name: str):
    two = draw(st.booleans())
    cap = {"cpu": float(draw(st.integers(2, 12))), "mem": float(draw(st.integers(2, 12)))}
    n_types = draw(st.integers(1, 4))
    classes = []
    for _ in range(n_types):
        cpu = float(draw(st.integers(1, int(cap["cpu"]))))
        mem = float(draw(st.integers(1, int(cap["mem"]))))
        classes.append(
            {
                "probability": 1.0 / n_types,
                "demand": {"cpu": cpu, "mem": mem} if two else cpu,
                "duration": draw(
                    st.sampled_from(
                        [
                            {"dist": "exponential", "mean": 1.0},
                            {"dist": "hyperexponential", "mean": 1.0, "scv": 5.0},
                            {"dist": "fixed", "value": 1.0},
                        ]
                    )
                ),
            }
        )
    params: dict = {}
    if name == "vm-stalling":
        params = {
            "subroutine": draw(st.sampled_from(["enumeration", "greedy", "dp"])),
            "beta_rule": draw(st.sampled_from(["constant", "adaptive"])),
            "beta": draw(st.floats(0.3, 0.95)),
            "early_activation": draw(st.booleans()),
        }
    elif name == "m14":
        params = {"subroutine": draw(st.sampled_from(["enumeration", "greedy"]))}
    arrivals: dict = {"process": "poisson"}
    kind = draw(st.sampled_from(["poisson", "batch_size", "vectors"]))
    if kind == "batch_size":
        arrivals = {"process": "batch", "batch_size": {"dist": "geometric", "mean": 2.0}}
    elif kind == "vectors":  # Corollary 5.3: one vector per type, and one with every type
        for i, c in enumerate(classes):
            del c["probability"]
            c["name"] = f"t{i}"
        vectors = [{f"t{i}": draw(st.integers(1, 3))} for i in range(n_types)]
        vectors.append({c["name"]: draw(st.integers(0, 2)) for c in classes})
        vectors = [v for v in vectors if sum(v.values()) > 0]
        arrivals = {
            "process": "batch",
            "vectors": [{"probability": 1.0 / len(vectors), "vms": v} for v in vectors],
        }
    return {
        "cluster": {"servers": draw(st.integers(1, 4)), "capacity": cap if two else cap["cpu"]},
        "workload": {"load": draw(st.floats(0.1, 1.3)), "arrivals": arrivals, "classes": classes},
        "model": {"family": "packing"},
        "policy": {"name": name, **params},
        "run": {
            "arrivals": draw(st.integers(1, 300)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 10,
            "check": True,
            "allow_unstable": True,
        },
    }


@settings(max_examples=VM_EXAMPLES, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.sampled_from(VM_POLICIES).flatmap(vm_specs))
def test_invariants_vm_policies(spec):
    audit(schedlab.simulate(spec), spec)
