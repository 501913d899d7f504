"""A converted trace is a workload for `schedlab simulate` in all three families: arrivals and
durations come from the table, demands are mapped per family, and the load the simulator
reports is the offered load `schedlab trace info` reports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import schedlab
from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.workloads.traces import Transforms, convert, summarize
from tests.data import ALIBABA2017, KTH
from tests.helpers import paths


@pytest.fixture(scope="module")
def kth_table(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replay") / "kth.parquet"
    convert(KTH, "swf", out)
    return out


@pytest.fixture(scope="module")
def alibaba_table(tmp_path_factory) -> Path:
    """The first 300 task rows of the real v2017 table, with demand = max(cpu, memory)."""
    out = tmp_path_factory.mktemp("replay") / "alibaba.parquet"
    convert(ALIBABA2017, "alibaba2017", out, transforms=Transforms(max_resource=True))
    return out


def spec(path: Path, cluster: dict, policy: str, arrivals: int, **model) -> dict:
    return {
        "cluster": cluster,
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "model": model,
        "policy": {"name": policy},
        "run": {"arrivals": arrivals, "seed": 1},
    }


def test_pooled_replay_of_an_swf_log(kth_table):
    s = spec(kth_table, {"servers": 100}, "fcfs", 300)
    model = compile_model(parse_spec(s))
    info = summarize(pq.read_table(kth_table))
    assert model.load == pytest.approx(info.pooled_load, rel=1e-9)
    result = schedlab.simulate(s)
    assert result.counters["arrivals"] == 300
    assert result.family == "pooled"


def test_pooled_replay_refuses_a_cluster_smaller_than_the_widest_job(kth_table):
    need = pq.read_table(kth_table).column("need").to_numpy()
    first = int(np.argmax(need > 64))
    wide = int((need > 64).sum())
    message = rf"row {first + 1}: need {need[first]} exceeds the cluster's 64 servers \({wide} jobs"
    with pytest.raises(SpecError, match=message):
        compile_model(parse_spec(spec(kth_table, {"servers": 64}, "fcfs", 100)))


def test_packing_replay_paper000_style(alibaba_table):
    """Paper 000 §VII-B setting: one resource (max of CPU and memory), 1000 unit servers,
    decisions every 100 ms."""
    s = spec(alibaba_table, {"servers": 1000}, "fifo-ff", 3000, decision_interval=0.1)
    model = compile_model(parse_spec(s))
    # the load of the 3,000 jobs replayed, not the whole table's (issue 43 item 4)
    first = pq.read_table(alibaba_table).sort_by("arrival").slice(0, 3000)
    info = summarize(first, servers=1000)
    assert model.load == pytest.approx(info.load["demand"], rel=1e-9)
    result = schedlab.simulate(s)
    assert result.counters["arrivals"] == 3000
    assert result.family == "packing"


def test_loss_replay_with_named_resources(alibaba_table):
    cluster = {"servers": 20, "capacity": {"cpu": 1.0, "memory": 1.0}}
    s = spec(alibaba_table, cluster, "first-fit", 3000)
    model = compile_model(parse_spec(s))
    info = summarize(pq.read_table(alibaba_table).sort_by("arrival").slice(0, 3000), servers=20)
    assert model.load_by_resource["cpu"] == pytest.approx(info.load["demand_cpu"], rel=1e-9)
    assert model.load_by_resource["memory"] == pytest.approx(info.load["demand_memory"], rel=1e-9)
    result = schedlab.simulate(s)
    assert result.family == "loss"
    assert result.counters["arrivals"] == 3000
    assert result.counters["lost"] > 0  # 20 servers cannot hold this burst of instances


def test_arrivals_and_durations_come_from_the_table(kth_table):
    from schedlab.simulation.generate import generate_jobs

    model = compile_model(parse_spec(spec(kth_table, {"servers": 100}, "fcfs", 250)))
    jobs = generate_jobs(model, model.spec.run.seed)
    table = pq.read_table(kth_table).slice(0, 250)
    arrival = table.column("arrival").to_numpy()
    assert np.array_equal(jobs.arrival, arrival - arrival[0])
    assert np.array_equal(jobs.work, table.column("duration").to_numpy())
    assert np.array_equal(jobs.demand[:, 0], table.column("need").to_numpy())


def test_single_resource_cluster_needs_one_demand_column(tmp_path):
    fixture = paths.FIXTURES / "traces" / "google2011_task_events.csv"
    out = tmp_path / "g.parquet"
    convert(fixture, "google2011", out)
    with pytest.raises(SpecError, match="max-of-resources transform"):
        compile_model(parse_spec(spec(out, {"servers": 10}, "fifo-ff", 2)))
    with pytest.raises(SpecError, match="--need-from demand"):
        compile_model(parse_spec(spec(out, {"servers": 10}, "fcfs", 2)))
