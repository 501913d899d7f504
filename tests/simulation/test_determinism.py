"""Reproducibility: same seed, same result; every policy sees the same jobs; the uncompiled engine
(SCHEDLAB_JIT=0) runs the same source and gives the same numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import schedlab
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.simulation.generate import Jobs, generate_jobs
from tests.helpers.specs import paper004_spec


def _jobs(spec: dict) -> Jobs:
    model = compile_model(parse_spec(spec))
    return generate_jobs(model, model.spec.run.seed)


def test_same_seed_same_result():
    a = schedlab.simulate(paper004_spec(0.8, "server-filling", 20_000, seed=3))
    b = schedlab.simulate(paper004_spec(0.8, "server-filling", 20_000, seed=3))
    c = schedlab.simulate(paper004_spec(0.8, "server-filling", 20_000, seed=4))
    assert a.to_dict()["metrics"] == b.to_dict()["metrics"]
    assert a.to_dict()["metrics"] != c.to_dict()["metrics"]


def test_policies_see_the_same_job_sequence():
    jobs = [_jobs(paper004_spec(0.8, p, 5_000, seed=9)) for p in ("server-filling", "fcfs")]
    for field in ("arrival", "job_class", "demand", "work"):
        assert np.array_equal(getattr(jobs[0], field), getattr(jobs[1], field)), field


def test_streams_are_independent_of_each_other():
    """Changing the load rescales arrivals only; demands and durations stay the same."""
    a = _jobs(paper004_spec(0.5, "fcfs", 2_000, seed=9))
    b = _jobs(paper004_spec(0.9, "fcfs", 2_000, seed=9))
    assert np.array_equal(a.work, b.work) and np.array_equal(a.demand, b.demand)
    assert np.allclose(a.arrival * 0.5, b.arrival * 0.9)


def test_replications_are_independent_and_combined():
    spec = paper004_spec(0.7, "server-filling", 20_000, seed=2, replications=4)
    result = schedlab.simulate(spec)
    means = [r["mean_response_time"].mean for r in result.replications]
    assert len(set(means)) == 4
    assert result["mean_response_time"].mean == pytest.approx(np.mean(means))
    assert result["mean_response_time"].dof == 3


SCRIPT = """
import json, sys, schedlab
spec = json.loads(sys.argv[1])
print(json.dumps(schedlab.simulate(spec).to_dict()["metrics"]))
"""


PACKING = {
    "cluster": {"servers": 3, "capacity": 1.0},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "demand": {"dist": "uniform", "low": 0.05, "high": 0.6},
                "duration": {"dist": "geometric", "mean": 6.0},
            }
        ],
    },
    "model": {"time": "slotted"},
    "run": {"arrivals": 400, "seed": 5},
}


@pytest.mark.parametrize(
    "policy",
    [
        "server-filling",
        "fcfs",
        "server-filling-gittins",
        "divisor-filling-srpt",
        "max-weight",
        "easy-backfill",
        "conservative-backfill",
        "fifo-ff",
        "bf-js",
        "vqs",
    ],
)
def test_uncompiled_engine_gives_identical_results(policy):
    if policy in ("fifo-ff", "bf-js", "vqs"):
        spec = {**PACKING, "policy": {"name": policy}}
    else:
        spec = paper004_spec(0.8, policy, 400, seed=5)
    outputs = []
    for jit in ("1", "0"):
        env = {**os.environ, "SCHEDLAB_JIT": jit}
        env.pop("NUMBA_DISABLE_JIT", None)
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT, json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1]
