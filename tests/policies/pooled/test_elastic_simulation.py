"""Simulation of IF, EF and class-priority (paper 003) against exact values (fixed seeds).

Truth: the exact truncated CTMC (per class and overall), the closed forms for the class with
priority (EF's elastic jobs: M/M/1 with rate k mu_E; IF's inelastic jobs: M/M/k, Erlang C), and the
hand-worked Theorem 6 values. Intervals: 99.9% from the same batch means (docs/testing.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import schedlab
from schedlab.analysis.closed_forms import mmc_mean_response_time
from schedlab.analysis.elastic import ElasticSystem, exact_response_time
from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.reproduce.berg2020 import simulation_spec
from schedlab.simulation.generate import synthetic_jobs
from schedlab.simulation.simulate import prepare, run_loop

LEVEL = 0.999


def simulate(system: ElasticSystem, policy: str, arrivals: int, seed: int):
    spec = simulation_spec(system, policy, arrivals, seed=seed)
    return schedlab.simulate(spec)


@pytest.mark.parametrize(
    ("k", "rho", "mu_i", "mu_e", "seed"),
    [(4, 0.6, 0.5, 2.0, 1), (4, 0.6, 2.0, 0.5, 2), (2, 0.7, 1.0, 1.0, 3), (1, 0.6, 1.0, 3.0, 4)],
)
@pytest.mark.parametrize("policy", ["inelastic-first", "elastic-first"])
def test_simulation_intervals_contain_the_exact_values(k, rho, mu_i, mu_e, seed, policy):
    system = ElasticSystem.from_load(k, rho, mu_i, mu_e)
    result = simulate(system, policy, 200_000, seed)
    assert result.stable
    assert result.load == pytest.approx(system.rho)  # schedlab's load is the paper's rho (eq. 1)
    exact = exact_response_time(system, policy, tol=1e-8)
    for metric, value in [
        ("mean_response_time", exact.mean_response_time),
        ("mean_response_time[inelastic]", exact.mean_response_time_inelastic),
        ("mean_response_time[elastic]", exact.mean_response_time_elastic),
        ("mean_number_in_system[inelastic]", exact.mean_number_inelastic),
        ("mean_number_in_system[elastic]", exact.mean_number_elastic),
    ]:
        est = result[metric]
        assert est.covers(value, LEVEL), (metric, est, value)
    assert result["mean_response_time"].half_width < 0.05 * exact.mean_response_time
    # the class with priority, against its closed form (§5.2 Observation 1; App. D)
    if policy == "elastic-first":
        truth = 1 / (k * system.mu_e - system.lambda_e)
        assert result["mean_response_time[elastic]"].covers(truth, LEVEL)
    else:
        truth = mmc_mean_response_time(k, system.lambda_i, system.mu_i)
        assert result["mean_response_time[inelastic]"].covers(truth, LEVEL)


def test_inelastic_jobs_on_up_to_c_servers():
    """§2's generalization: inelastic jobs modelled as elastic with max_alloc = C < k."""
    system = ElasticSystem(k=4, lambda_i=1.0, lambda_e=0.8, mu_i=0.6, mu_e=1.0, inelastic_cap=1.5)
    for seed, policy in enumerate(["inelastic-first", "elastic-first"]):
        result = simulate(system, policy, 200_000, 20 + seed)
        exact = exact_response_time(system, policy, tol=1e-8)
        assert result["mean_response_time"].covers(exact.mean_response_time, LEVEL)
        assert result["mean_response_time[inelastic]"].covers(
            exact.mean_response_time_inelastic, LEVEL
        )
    # C = k: the classes are equally capable, but IF still gives the inelastic jobs priority:
    # they see an M/M/1 with service rate k mu_I
    system = ElasticSystem(k=4, lambda_i=1.0, lambda_e=0.8, mu_i=0.6, mu_e=1.0, inelastic_cap=4)
    result = simulate(system, "inelastic-first", 100_000, 30)
    assert result["mean_response_time[inelastic]"].covers(1 / (4 * 0.6 - 1.0), LEVEL)


def test_class_priority_with_explicit_order_and_caps_equals_the_preset():
    system = ElasticSystem.from_load(4, 0.7, 1.0, 2.0)
    spec = simulation_spec(system, "inelastic-first", 20_000, seed=5)
    preset = schedlab.simulate(spec)
    data = spec.model_dump(by_alias=True, exclude_unset=True)
    data["policy"] = {"name": "class-priority", "order": ["inelastic", "elastic"]}
    general = schedlab.simulate(data)
    assert general["mean_response_time"].mean == preset["mean_response_time"].mean
    # (caps and other orders are checked job by job against a reference in
    # tests/policies/pooled/test_invariants_elastic.py)


def _no_arrival_totals(policy: str, reps: int, seed: int) -> np.ndarray:
    """Sum of response times of two inelastic (mu_I = 1) and one elastic (mu_E = 2) job present
    at time 0 on k = 2 servers, run through the engine with the compiled policy."""
    system = ElasticSystem(k=2, lambda_i=0.1, lambda_e=0.1, mu_i=1.0, mu_e=2.0)
    model = compile_model(simulation_spec(system, policy, 3))
    rng = np.random.default_rng(seed)
    totals = np.empty(reps)
    for r in range(reps):
        jobs = synthetic_jobs(
            arrival=np.zeros(3),
            job_class=np.array([0, 0, 1], dtype=np.int32),
            demand=np.ones((3, 1)),
            work=np.array([rng.exponential(1.0), rng.exponential(1.0), rng.exponential(0.5)]),
        )
        run = prepare(model, jobs=jobs)
        run_loop(run)
        totals[r] = np.nansum(run.st.t_finish[run.st.seq >= 0])
    return totals


@pytest.mark.parametrize(
    ("policy", "truth"), [("inelastic-first", 35 / 12), ("elastic-first", 33 / 12)]
)
def test_theorem6_through_the_engine(policy, truth):
    """Monte Carlo of Theorem 6's instance with the real policy: E[sum of T] = 35/12 vs 33/12."""
    totals = _no_arrival_totals(policy, 12_000, seed=6)
    se = totals.std(ddof=1) / np.sqrt(totals.size)
    assert abs(totals.mean() - truth) < 3.3 * se
    assert se < 0.02  # fine enough to tell 35/12 from 33/12 (they differ by 1/6)


def _spec(**policy):
    system = ElasticSystem.from_load(4, 0.5, 1.0, 1.0)
    data = simulation_spec(system, "inelastic-first", 100).model_dump(
        by_alias=True, exclude_unset=True
    )
    data["policy"] = policy
    return data


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"name": "inelastic-first", "order": "elastic-first"}, "fixes order"),
        ({"name": "class-priority", "order": ["inelastic", "batch"]}, "unknown class 'batch'"),
        ({"name": "class-priority", "order": ["inelastic", "inelastic"]}, "appears twice"),
        ({"name": "class-priority", "order": ["inelastic"]}, "missing: elastic"),
        ({"name": "class-priority", "caps": {"inelastic": 2.0}}, "exceeds the class's max_alloc"),
        ({"name": "class-priority", "caps": {"elastic": 0.0}}, "greater than 0"),
        ({"name": "elastic-first", "order": 3}, "policy.order"),
    ],
)
def test_bad_policy_parameters(policy, message):
    with pytest.raises(SpecError, match=message):
        schedlab.simulate(_spec(**policy))


def test_rigid_jobs_are_refused():
    spec = {
        "cluster": {"servers": 4},
        "workload": {"load": 0.5, "classes": [{"need": 2, "duration": 1.0}]},
        "policy": {"name": "elastic-first"},
        "run": {"arrivals": 10},
    }
    with pytest.raises(SpecError, match="rigid"):
        schedlab.simulate(spec)


JIT_SCRIPT = """
import json, sys, schedlab
print(json.dumps(schedlab.simulate(json.loads(sys.argv[1])).to_dict()["metrics"]))
"""


@pytest.mark.parametrize("policy", ["inelastic-first", "elastic-first"])
def test_uncompiled_policy_gives_identical_results(policy):
    """The same source runs as Python with SCHEDLAB_JIT=0 (one implementation per policy)."""
    system = ElasticSystem.from_load(4, 0.8, 0.5, 2.0)
    spec = simulation_spec(system, policy, 400, seed=8).model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    outputs = []
    for jit in ("1", "0"):
        env = {**os.environ, "SCHEDLAB_JIT": jit}
        env.pop("NUMBA_DISABLE_JIT", None)
        proc = subprocess.run(
            [sys.executable, "-c", JIT_SCRIPT, json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1]
