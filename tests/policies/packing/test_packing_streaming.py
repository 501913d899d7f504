"""BF-J, BF-S, BF-J/S, VQS and VQS-BF are per-slot policies (decision 0013): memory bounded by the
jobs present, and the same run whatever the slots (issue 33 item 4).

Truths used: a run must not depend on the engine's block size or slot count; among jobs of equal
size the oldest starts first (psychas2019 §IV-A's ties, BF-J's arrival order), whatever slots
they occupy (ties by arrival number, never by slot); BF-J's arrival-ordered ring may be
given up (a queue spanning more arrivals than the ring) and rebuilt without changing one pick;
the engine's slots follow the peak number of jobs present, not the run length (the slot count
doubles only when every slot is taken, so it stays below twice that peak)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schedlab.policies.packing.best_fit as best_fit
import schedlab.workloads.trace_table as trace_table
from schedlab.engine import constants as K
from schedlab.model.compile import CompiledModel, compile_model
from schedlab.policies.packing.indexes import population_bounds
from schedlab.simulation.simulate import as_spec, prepare, run_loop, run_model
from tests.helpers.block_sizes import same_run_for_any_block

POLICIES = [
    ("bf-j", {}),
    ("bf-s", {}),
    ("bf-js", {}),
    ("bf-js", {"stalling": True}),
    ("vqs", {}),
    ("vqs-bf", {"stalling": True}),
]


def packing(
    policy: str, params: dict, arrivals: int, load: float = 0.85, resources: int = 1
) -> CompiledModel:
    """Two job classes on four servers: sizes uniform on a range, or (two resources: named
    capacities, ``multi_resource`` from ``params``) a range per resource."""

    def demand(low: float, high: float):
        law = {"dist": "uniform", "low": low, "high": high}
        return law if resources == 1 else {"cpu": law, "mem": {**law, "low": low / 2}}

    return compiled(policy, params, arrivals, load, demand(0.05, 0.3), demand(0.4, 0.9))


def tied(policy: str, params: dict, arrivals: int) -> CompiledModel:
    """Sizes on a coarse grid: many waiting jobs of equal size, whose ties only arrival order
    breaks."""
    small = {"dist": "discrete", "values": [0.1, 0.2, 0.3]}
    large = {"dist": "discrete", "values": [0.5, 0.7]}
    return compiled(policy, params, arrivals, 0.9, small, large)


def compiled(policy: str, params: dict, arrivals: int, load: float, small, large):
    """Four servers, a class of small jobs (70%) and one of large jobs with variable durations;
    sizes by resource name (a mapping of laws) give two resources."""
    resources = 1 if "dist" in small else 2
    return compile_model(
        as_spec(
            {
                "cluster": {
                    "servers": 4,
                    "capacity": 1.0 if resources == 1 else {"cpu": 1.0, "mem": 1.0},
                },
                "workload": {
                    "load": load,
                    "classes": [
                        {
                            "probability": 0.7,
                            "demand": small,
                            "duration": {"dist": "exponential", "mean": 1.0},
                        },
                        {
                            "probability": 0.3,
                            "demand": large,
                            "duration": {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0},
                        },
                    ],
                },
                "policy": {"name": policy, **params},
                "run": {"arrivals": arrivals, "seed": 3, "jobs": True},
            }
        )
    )


@pytest.mark.parametrize(("policy", "params"), POLICIES, ids=[f"{p}{q}" for p, q in POLICIES])
def test_the_same_run_for_any_block_and_slot_count(policy, params):
    assert not packing(policy, params, 10).policy.hooks.whole_run
    same_run_for_any_block(packing(policy, params, 1500))
    same_run_for_any_block(tied(policy, params, 1500))


@pytest.mark.parametrize("policy", ["bf-j", "bf-s", "bf-js", "vqs-bf"])
def test_jobs_of_equal_size_start_in_arrival_order(policy):
    """psychas2019 §IV-A (ties: the oldest of equally large jobs, inferred) and BF-J's arrival
    order: a job never starts before an older waiting job of the same size, whatever slots the
    two occupy (slots are reused from the second job on)."""
    result = run_model(tied(policy, {}, 3000), slots=2)
    jobs = result.jobs.sort_by("job").to_pydict()
    size, start = np.array(jobs["demand[resource]"]), np.array(jobs["start"])
    for value in np.unique(size):
        assert np.all(np.diff(start[size == value]) >= 0), value


def test_two_resource_dot_mode_is_the_same_for_any_block_and_slot_count():
    for mode in ("bf-j", "bf-s"):
        same_run_for_any_block(packing(mode, {"multi_resource": "dot"}, 800, resources=2))


def test_bf_j_ring_given_up_and_rebuilt_changes_no_pick(monkeypatch):
    """A ring of 4 arrivals is given up at almost every decision of a loaded BF-J run (its queue
    walked instead) and rebuilt whenever the queue spans fewer than 2 arrivals: the run equals
    the one with the full-size ring (RING = 2^16 never overflows here)."""
    model = packing("bf-j", {}, 3000, load=0.95)
    full = run_model(model, slots=4)
    monkeypatch.setattr(best_fit, "RING", 4)
    small = run_model(model, slots=4)
    assert small.jobs.equals(full.jobs)
    assert small.to_dict()["metrics"] == full.to_dict()["metrics"]


@pytest.mark.parametrize("policy", ["bf-j", "vqs", "vqs-bf"])
def test_memory_follows_the_jobs_present_not_the_run_length(policy):
    """20,000 arrivals at load 0.7: the engine's slots and the policy's per-job arrays stay below
    twice the peak number of jobs present (at most a few hundred), far below the run length."""
    run = prepare(packing(policy, {}, 20_000, load=0.7), slots=2)
    run_loop(run)
    peak = int(run.st.ctr[K.PEAK_SLOTS])
    slots = run.st.status.shape[0]
    assert 0 < peak < 2_000 and slots < 2 * peak
    assert run.ps.x.shape[0] == slots


def trace_model(tmp_path, policy: str, n: int = 3000):
    """A replayed packing trace: sizes 0.25 (a third of the jobs) or 0.02..0.9 on a 0.001 grid,
    the smallest (0.01) at an odd arrival number."""
    rng = np.random.default_rng(5)
    demand = np.where(rng.random(n) < 0.3, 0.25, np.round(rng.uniform(0.02, 0.9, n), 3))
    demand[101] = 0.01
    arrival = np.cumsum(rng.exponential(1.0 / 9.0, n))
    table = pa.table({"arrival": arrival, "duration": rng.exponential(1.0, n), "demand": demand})
    path = tmp_path / "trace.parquet"
    pq.write_table(table, path)
    spec = {
        "cluster": {"servers": 5, "capacity": 1.0},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "model": {"family": "packing"},
        "policy": {"name": policy},
        "run": {"jobs": True, "allow_unstable": True},
    }
    return compile_model(as_spec(spec)), demand


def test_a_trace_s_sizes_are_read_in_one_pass_in_bounded_memory(tmp_path, monkeypatch):
    """Read in batches of 100 rows: with every size kept, the buckets are population_bounds over
    all sizes (the whole-run definition) and the smallest size is exact; with at most 100 kept
    (every 32nd job), the smallest is still exact (it is not sampled) and the buckets still
    ordered. Only speed depends on the buckets: VQS-BF (J = "auto" from the smallest size) runs
    the same with either."""
    monkeypatch.setattr(trace_table, "BATCH_ROWS", 100)
    model, demand = trace_model(tmp_path, "vqs-bf")
    context = model.context
    whole = best_fit.trace_sizes(context.trace, context.capacity)
    assert whole.smallest == 0.01
    np.testing.assert_array_equal(whole.bounds, population_bounds(demand))
    full = run_model(model)
    monkeypatch.setattr(best_fit, "SAMPLE", 100)
    sampled = best_fit.trace_sizes(context.trace, context.capacity)
    assert sampled.smallest == 0.01
    assert sampled.bounds.size < whole.bounds.size
    assert np.all(np.diff(sampled.bounds) > 0) and sampled.bounds[-1] == np.inf
    assert run_model(model).jobs.equals(full.jobs)
