"""Trace replay with declared job classes (the table's job_class column names each job's class;
the job takes its class's fixed demand and reward): what paper 002's trace experiments need."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schedlab
from schedlab.engine import constants as K
from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec


def table(path, job_class):
    n = len(job_class)
    rng = np.random.default_rng(1)
    pq.write_table(
        pa.table(
            {
                "arrival": np.sort(rng.uniform(0, 50, n)),
                "duration": rng.exponential(2.0, n) + 0.01,
                "demand": np.full(n, 0.3),
                "job_class": pa.array(job_class, type=pa.int32()),
            }
        ),
        path,
    )
    return path


def spec(path, policy="dra"):
    classes = [
        {"name": "small", "probability": 0.5, "demand": 0.25, "duration": 2.0, "reward": 1.0},
        {"name": "big", "probability": 0.5, "demand": 0.5, "duration": 2.0, "reward": 3.0},
    ]
    return parse_spec(
        {
            "cluster": {"servers": 3, "capacity": 1.0},
            "workload": {"arrivals": {"process": "trace", "path": str(path)}, "classes": classes},
            "model": {"family": "loss"},
            "policy": {"name": policy},
            "run": {"jobs": True, "check": True, "warmup": 0.0, "batches": 4},
        }
    )


def test_jobs_take_their_class(tmp_path):
    cls = [0, 1] * 150
    result = schedlab.simulate(spec(table(tmp_path / "t.parquet", cls)))
    jobs = result.jobs.to_pydict()
    # arrival order of the table is kept (arrivals were sorted), so classes match row by row
    assert jobs["job_class"] == ["small" if c == 0 else "big" for c in cls]
    assert jobs["demand[resource]"] == [0.25 if c == 0 else 0.5 for c in cls]
    assert result.counters["completions"] + result.counters["lost"] == len(cls)
    assert result["reward_rate"].mean > 0


def test_bad_job_class_is_a_one_line_error(tmp_path):
    with pytest.raises(SpecError, match="job_class 2 is not one of the 2"):
        compile_model(spec(table(tmp_path / "t.parquet", [0, 1, 2])))


def test_dra_with_simultaneous_departures_keeps_its_invariants(tmp_path):
    """Integer trace times make many jobs leave at once: no job may be migrated after it left
    (the engine validates every migration), and the DRA audit holds after every step."""
    from schedlab.policies.loss import dra as D
    from schedlab.policy_api.contract import engine_sizes
    from schedlab.simulation.simulate import prepare, steps
    from tests.helpers.dra_audit import audit_dra, dra_problem

    rng = np.random.default_rng(5)
    n = 1200
    path = tmp_path / "t.parquet"
    arrival = np.sort(rng.integers(0, 60, n)).astype(float)
    # the mix shifts from the small to the big type: DRA reconfigures and migrates
    job_class = (rng.uniform(size=n) < arrival / 60).astype(np.int32)
    pq.write_table(
        pa.table(
            {
                "arrival": arrival,
                "duration": rng.integers(1, 4, n).astype(float),
                "demand": np.full(n, 0.3),
                "job_class": pa.array(job_class, type=pa.int32()),
            }
        ),
        path,
    )
    model = compile_model(spec(path))
    run = prepare(model)
    problem = dra_problem(model)
    run.ps = D.build_state(problem, engine_sizes(run.st), model.config)
    for _ in steps(run, 5):
        assert run.st.ctr[K.VIOLATION] == 0
        audit_dra(run.st, run.ps, problem)
    st, ps = run.st, run.ps
    assert st.ctr[K.VIOLATION] == 0
    assert ps.migrations > 0
