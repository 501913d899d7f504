"""DRA on traces with integer times (psychas2022 §4, §7.2): many jobs arrive and leave at the
same instant, as in the Google and Alibaba traces of Figs 5-6.

Regression: when two jobs left at once, the update after the first departure could give the
second departure's (now empty) server another configuration, and the migration that followed
moved a job into a slot that no longer existed (over capacity). The DRA audit of
tests/helpers/dra_audit.py (capacity, slots of the job's type, bookkeeping, CRA against brute force)
runs after every few events on random integer-time traces whose type mix shifts over time.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.policies.loss import dra as D
from schedlab.policy_api.contract import engine_sizes
from schedlab.simulation.simulate import prepare, steps
from tests.helpers.dra_audit import audit_dra, dra_problem

SIZES = (0.5, 0.25, 0.125, 0.3, 0.2)


def integer_time_spec(seed: int, policy: str, path) -> dict:
    """A random trace on a 1-D server: 2-4 types, integer arrivals in [0, 60), integer
    durations 1-4, a type mix that changes every 20 time units (DRA reconfigures)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 1500))
    n_types = int(rng.integers(2, 5))
    sizes = rng.choice(SIZES, n_types, replace=False)
    arrival = np.sort(rng.integers(0, 60, n)).astype(float)
    mix = rng.dirichlet(np.ones(n_types), 3)
    phase = np.minimum((arrival // 20).astype(int), 2)
    job_class = np.array([rng.choice(n_types, p=mix[p]) for p in phase], dtype=np.int32)
    pq.write_table(
        pa.table(
            {
                "arrival": arrival,
                "duration": rng.integers(1, 5, n).astype(float),
                "demand": sizes[job_class],
                "job_class": pa.array(job_class, type=pa.int32()),
            }
        ),
        path,
    )
    classes = [
        {
            "name": f"t{i}",
            "probability": 1 / n_types,
            "demand": float(sizes[i]),
            "duration": 2.0,
            "reward": float(rng.integers(1, 10)),
        }
        for i in range(n_types)
    ]
    policy_spec: dict = {"name": policy, "reservation": int(rng.integers(1, 3))}
    if policy == "dra-preemption":
        policy_spec["priorities"] = [int(p) for p in rng.integers(0, 3, n_types)]
    return {
        "cluster": {"servers": int(rng.integers(2, 10)), "capacity": 1.0},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}, "classes": classes},
        "model": {"family": "loss"},
        "policy": policy_spec,
        "run": {"jobs": True, "check": True, "warmup": 0.0, "batches": 4},
    }


# seeds 0, 4, 15, 21, 25 and 38 broke the invariants before the fix
@pytest.mark.parametrize("seed", [0, 4, 15, 21, 25, 38, 101, 102])
@pytest.mark.parametrize("policy", ["dra", "dra-preemption"])
def test_dra_audit_holds_with_simultaneous_departures(tmp_path, seed, policy):
    model = compile_model(parse_spec(integer_time_spec(seed, policy, tmp_path / "t.parquet")))
    run = prepare(model)
    problem = dra_problem(model)
    run.ps = D.build_state(problem, engine_sizes(run.st), model.config)
    for _ in steps(run, 3):
        assert run.st.ctr[K.VIOLATION] == 0
        audit_dra(run.st, run.ps, problem)
    st, ps = run.st, run.ps
    assert st.ctr[K.VIOLATION] == 0
    audit_dra(st, ps, problem)
    assert st.ctr[K.N_LOST] == st.ctr[K.DROPPED] + st.ctr[K.PREEMPTIONS]
    assert st.ctr[K.MIGRATIONS] == ps.migrations
