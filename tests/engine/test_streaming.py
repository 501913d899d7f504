"""Engine v2 (decision 0003): streamed job sequence, reused job slots, streamed metrics.

Truths used: the job sequence defined unit by unit must not depend on the engine's block size or
slot count (common random numbers); the peak number of slots must equal the peak number of jobs
present, recomputed from the per-job table; streamed metrics must equal the same statistics computed
afterwards from the per-job table; sketch quantiles must lie within the stated 0.5% of the exact
order statistics.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq
import pytest

from schedlab.engine import constants as K
from schedlab.engine import sketch
from schedlab.errors import SpecError
from schedlab.measurement import quantiles
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.policies.registry import get_policy
from schedlab.policy_api.contract import _REGISTRY
from schedlab.simulation.generate import UNIT, generate_jobs
from schedlab.simulation.simulate import prepare, run_loop, run_model
from schedlab.streams import stream
from tests.helpers.block_sizes import same_run_for_any_block
from tests.helpers.specs import paper004_spec

PACKING = {
    "cluster": {"servers": 3, "capacity": 1.0},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "probability": 0.5,
                "demand": {"dist": "uniform", "low": 0.05, "high": 0.6},
                "duration": {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0},
            },
            {
                "probability": 0.5,
                "demand": {"dist": "uniform", "low": 0.2, "high": 0.9},
                "duration": {"dist": "exponential", "mean": 2.0},
            },
        ],
    },
    "policy": {"name": "fifo-ff"},
    "run": {"arrivals": 3000, "seed": 5, "jobs": True},
}


def _model(spec: dict):
    return compile_model(parse_spec(spec))


def _pooled(policy: str, arrivals: int = 3000, **run) -> dict:
    spec = paper004_spec(0.85, policy, arrivals, seed=11)
    spec["run"].update({"jobs": True, **run})
    return spec


@pytest.mark.parametrize(
    "spec",
    [
        _pooled("server-filling"),
        _pooled("server-filling-srpt"),
        _pooled("server-filling", arrivals=None, horizon=400.0),
        PACKING,
    ],
    ids=["server-filling", "server-filling-srpt", "horizon", "fifo-ff"],
)
def test_block_size_and_slots_do_not_change_the_run(spec):
    """Common random numbers: same jobs and identical metrics for any block size / slot count."""
    if spec["run"].get("arrivals") is None:
        spec = {**spec, "run": {k: v for k, v in spec["run"].items() if k != "arrivals"}}
    same_run_for_any_block(_model(spec))


def test_arrival_times_carry_over_between_generation_units():
    """Unit u's arrivals continue unit u - 1's exactly: one cumulative sum of both units' gaps."""
    spec = paper004_spec(0.9, "fcfs", UNIT + 500, seed=4)
    model = _model(spec)
    jobs = generate_jobs(model, 4)
    gaps = np.concatenate(
        [stream(4, 0, "arrivals", u).exponential(1.0 / model.rate, UNIT) for u in (0, 1)]
    )
    assert len(jobs) == UNIT + 500
    assert np.array_equal(jobs.arrival, np.cumsum(gaps)[: UNIT + 500])


def _peak_present(arrival: np.ndarray, finish: np.ndarray) -> int:
    times = np.concatenate([arrival, finish[np.isfinite(finish)]])
    steps = np.concatenate([np.ones(arrival.size), -np.ones(np.isfinite(finish).sum())])
    order = np.lexsort((steps, times))  # at equal times departures (-1) first
    return int(np.cumsum(steps[order]).max())


@pytest.mark.parametrize("policy", ["server-filling", "server-filling-srpt"])
def test_peak_slots_equal_peak_jobs_in_system(policy):
    model = _model(_pooled(policy, arrivals=4000))
    run = prepare(model, slots=2, block=100)
    run_loop(run)
    st = run.st
    present = _peak_present(*_arrival_finish(model))
    assert int(st.ctr[K.PEAK_SLOTS]) == int(st.ctr[K.PEAK_IN_SYSTEM]) == present
    assert st.status.shape[0] == 2 ** math.ceil(math.log2(present))  # doubled from 2


def _arrival_finish(model):
    table = run_model(model).jobs
    return table.column("arrival").to_numpy(), table.column("finish").to_numpy()


def test_slots_stay_at_the_jobs_present_not_the_run_length():
    model = _model(_pooled("server-filling", arrivals=200_000, jobs=False))
    run = prepare(model, block=4096)
    run_loop(run)
    assert run.st.ctr[K.ARRIVED] == 200_000
    assert run.st.status.shape[0] == 1024  # the initial slots were never exceeded


def test_streamed_metrics_equal_the_per_job_table():
    spec = _pooled("server-filling", arrivals=5000, slowdown_threshold=0.5, warmup=0.2)
    result = run_model(_model(spec))
    jobs = result.jobs.to_pydict()
    seq = np.array(jobs["job"])
    measured = (seq >= int(0.2 * 5000)) & (np.array(jobs["status"]) == "done")
    arrival = np.array(jobs["arrival"])[measured]
    response = np.array(jobs["finish"])[measured] - arrival
    waiting = np.array(jobs["start"])[measured] - arrival
    work = np.array(jobs["work"])[measured]
    m = result.metrics
    assert m["mean_response_time"].mean == pytest.approx(response.mean(), rel=1e-9)
    assert m["mean_waiting_time"].mean == pytest.approx(waiting.mean(), rel=1e-9)
    assert m["mean_slowdown"].mean == pytest.approx((response / work).mean(), rel=1e-9)
    bsld = np.maximum(response / np.maximum(work, 0.5), 1.0)
    assert m["mean_bounded_slowdown"].mean == pytest.approx(bsld.mean(), rel=1e-9)
    for q in (0.5, 0.9, 0.99):
        for name, values in (("response", response), ("waiting", waiting)):
            exact = np.sort(values)[math.floor(q * (values.size - 1))]
            got = m[f"p{round(q * 100)}_{name}_time"].mean
            assert abs(got - exact) <= sketch.ALPHA * exact + sketch.MIN_VALUE, (name, q)
    assert "reward_rate" not in m and "reward_rate" not in result.timeseries.column_names


def test_streamed_loss_probability_equals_the_per_job_table():
    spec = {
        **PACKING,
        "workload": {**PACKING["workload"], "load": 1.4},
        "policy": {"name": "first-fit"},
        "run": {"arrivals": 3000, "seed": 2, "jobs": True, "allow_unstable": True},
    }
    result = run_model(_model(spec))
    jobs = result.jobs.to_pydict()
    measured = np.array(jobs["job"]) >= 300
    lost = np.array(jobs["status"])[measured] == "lost"
    assert result["loss_probability"].mean == pytest.approx(lost.mean(), rel=1e-12)
    assert "reward_rate" in result.metrics


def test_per_job_table_is_written_in_chunks(tmp_path, monkeypatch):
    import schedlab.simulation.simulate as simulate

    monkeypatch.setattr(simulate, "JOBS_CHUNK", 500)
    path = tmp_path / "jobs.parquet"
    result = run_model(_model(_pooled("server-filling", arrivals=3000, jobs=str(path))))
    assert result.jobs_path == path
    file = pq.ParquetFile(path)
    assert file.metadata.num_rows == 3000
    assert file.num_row_groups >= 3000 // 1000
    assert sorted(result.jobs.column("job").to_pylist()) == list(range(3000))


def test_small_tables_stay_in_memory_and_large_ones_spill(monkeypatch):
    import schedlab.measurement.jobs_output as jobs_output

    spec = _pooled("server-filling", arrivals=3000)
    small = run_model(_model(spec))
    assert small.jobs_path is None and small.jobs_table.num_rows == 3000
    monkeypatch.setattr(jobs_output, "MEMORY_ROWS", 1000)
    large = run_model(_model(spec))
    assert large.jobs_table is None and pq.ParquetFile(large.jobs_path).metadata.num_rows == 3000
    assert large.jobs.equals(small.jobs)


def test_sketch_quantiles_within_the_stated_relative_error():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.lognormal(0.0, 3.0, 50_000), np.zeros(2_000)])
    counts = np.zeros(sketch.N_BUCKETS, dtype=np.int64)
    np.add.at(counts, [sketch.bucket_of(v) for v in values], 1)
    ordered = np.sort(values)
    for q in np.linspace(0.0, 1.0, 201):
        exact = ordered[math.floor(q * (values.size - 1))]
        assert abs(quantiles.quantile(counts, q) - exact) <= sketch.ALPHA * exact + sketch.MIN_VALUE
    halves = np.zeros_like(counts), np.zeros_like(counts)
    for half, part in zip(halves, (values[::2], values[1::2]), strict=True):
        np.add.at(half, [sketch.bucket_of(v) for v in part], 1)
    assert np.array_equal(halves[0] + halves[1], counts)  # mergeable: sketches add


def test_a_whole_run_policy_is_refused_a_run_larger_than_memory(monkeypatch):
    """BF-J/S no longer keeps the whole run (decision 0013): 10^11 arrivals at a stable load are
    accepted. A policy that does (a plugin declaring ``whole_run``, decision 0003 §4) is refused
    them in one line at compile time, before anything is generated, naming the policy."""
    spec = {
        **PACKING,
        "policy": {"name": "bf-js"},
        "run": {"arrivals": 10**11, "seed": 1, "max_hours": 10**6},
    }
    assert _model(spec).spec.run.arrivals == 10**11
    bf_js = get_policy("bf-js")
    whole = replace(bf_js, hooks=replace(bf_js.hooks, whole_run=True))
    monkeypatch.setitem(_REGISTRY, "bf-js", whole)
    with pytest.raises(SpecError, match=r"run.arrivals: policy 'bf-js' keeps every job") as info:
        _model(spec)
    assert "\n" not in str(info.value)


def test_a_streaming_run_of_a_billion_arrivals_is_accepted_and_an_absurd_one_refused():
    """Engine v2 holds only the jobs present: 10^9 ServerFilling arrivals at a stable load fit
    (about 1.1 hours at the budget's pessimistic rate); 10^15 are refused for their time."""
    billion = paper004_spec(0.9, "server-filling", 10**9, seed=1)
    assert _model(billion).spec.run.arrivals == 10**9
    with pytest.raises(SpecError, match=r"run.arrivals: about 1e\+15 arrivals.*years") as info:
        _model(paper004_spec(0.9, "server-filling", 10**15, seed=1))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("spec_a", "spec_b"),
    [
        (_pooled("server-filling"), _pooled("server-filling-srpt")),
        (PACKING, {**PACKING, "policy": {"name": "first-fit"}}),
    ],
    ids=["pooled", "packing"],
)
def test_policies_of_a_point_see_the_same_jobs_whatever_the_block_size(spec_a, spec_b):
    """Common random numbers (issue 12): two policies of one sweep point, run with different block
    sizes and slot counts, receive the same job sequence bit for bit (arrival, class, demand,
    work of every arrival number)."""
    tables = [
        run_model(_model(spec_a), block=7, slots=2).jobs,
        run_model(_model(spec_b), block=1 << 16, slots=1 << 10).jobs,
        run_model(_model(spec_b), block=1000, slots=5).jobs,
    ]
    columns = ["job", "arrival", "job_class", "work"]
    columns += [c for c in tables[0].column_names if c.startswith("demand")]
    for other in tables[1:]:
        for column in columns:
            assert tables[0].column(column).equals(other.column(column)), column


def test_a_parquet_trace_is_read_in_row_groups(tmp_path, monkeypatch):
    """Traces stream (issue 12): a canonical Parquet table sorted by arrival is never loaded whole
    (no in-memory copy) and the run sees its rows batch by batch, in order, across batches."""
    import pyarrow as pa

    import schedlab.workloads.trace_table as trace_table

    monkeypatch.setattr(trace_table, "BATCH_ROWS", 100)
    rng = np.random.default_rng(1)
    n = 1050
    arrival = np.cumsum(rng.exponential(1.0, n))
    table = pa.table(
        {
            "arrival": arrival,
            "duration": rng.exponential(2.0, n),
            "need": rng.choice([1.0, 2.0, 4.0, 8.0], n),
        }
    )
    path = tmp_path / "trace.parquet"
    pq.write_table(table, path, row_group_size=128)
    spec = {
        "cluster": {"servers": 8},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": "server-filling"},
        "run": {"arrivals": n, "seed": 1},
    }
    model = _model(spec)
    assert model.trace.sorted_copy is None and model.trace.n_rows == n
    assert [b.arrival.size for b in model.trace.batches()] == [100] * 10 + [50]
    jobs = generate_jobs(model, 1)
    assert np.array_equal(jobs.arrival, arrival - arrival[0])
    assert np.array_equal(jobs.demand[:, 0], table.column("need").to_numpy())
