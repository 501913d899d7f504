"""psychas2018 Figs 7-8 (§7.3) on the shipped Alibaba 2017 excerpt: the trace is typed as the
paper says (max of CPU and memory rounded up to a power of 1/2, 8 types at most, smaller jobs in
1/2^7), the replay keeps every job's type, size and duration, and the reproductions run."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from schedlab.api import simulate
from schedlab.model.compile import compile_model
from schedlab.reproduce import psychas2018 as P
from schedlab.reproduce.registry import Context, get_reproduction
from schedlab.workloads.traces import read
from schedlab.workloads.traces import vm_types as T
from tests.data import ALIBABA2017


@pytest.fixture
def excerpt_data(tmp_path, monkeypatch):
    """A data folder whose Alibaba table is the shipped 300-task excerpt (118,699 jobs)."""
    folder = tmp_path / "data" / "alibaba"
    folder.mkdir(parents=True)
    with open(ALIBABA2017, "rb") as src, gzip.open(folder / "batch_task_v2017.csv.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    monkeypatch.setenv("SCHEDLAB_DATA", str(tmp_path / "data"))
    monkeypatch.delenv(T.TRACE_ENV, raising=False)
    return tmp_path / "out"


def test_registered_with_their_data():
    for fig in ("fig7", "fig8"):
        assert get_reproduction(f"psychas2018-{fig}").data == (P.ALIBABA,)


def test_typing_follows_section_73(excerpt_data, monkeypatch):
    monkeypatch.setattr(P, "TRACE_JOBS", 50_000)
    vt = T.vm_trace(excerpt_data, P.TRACE_JOBS)
    raw = read(ALIBABA2017, format="alibaba2017")
    raw = raw.slice(0, 50_000)  # sorted by arrival, demands as fractions of a server
    size = np.maximum(raw["demand_cpu"].to_numpy(), raw["demand_memory"].to_numpy())
    expected = np.maximum(2.0 ** np.ceil(np.log2(size)), 2.0**-7)  # independent of the code
    table = pq.read_table(vt.path)
    assert table.num_rows == 50_000
    assert np.allclose(np.sort(table.column("demand").to_numpy()), np.sort(expected))
    assert vt.sizes.size <= T.TYPES
    assert np.all(np.isin(vt.sizes, 2.0 ** -np.arange(8)))
    assert np.allclose(vt.sizes[table.column("job_class").to_numpy()], table["demand"].to_numpy())
    assert vt.share.sum() == pytest.approx(1.0)
    assert np.all(np.diff(vt.arrival) >= 0) and vt.arrival[0] == 0
    # the offered work is sum(size x duration) / span, in servers of size 1
    work = float(np.sum(table["demand"].to_numpy() * table["duration"].to_numpy()))
    assert vt.offered == pytest.approx(work / float(vt.arrival[-1]))
    # on a stand-in the paper's 800 servers carry load FIG8_TOP_LOAD
    assert abs(vt.offered / P.FIG8_TOP_LOAD - P.cluster_size(vt, 800)) <= 0.5  # rounded to a server
    assert abs(vt.offered / P.FIG8_TOP_LOAD * 1250 / 800 - P.cluster_size(vt, 1250)) <= 0.5


def test_typed_replay_keeps_each_job(excerpt_data, monkeypatch):
    monkeypatch.setattr(P, "TRACE_JOBS", 5_000)
    vt = T.vm_trace(excerpt_data, P.TRACE_JOBS)
    for policy in P.POLICIES:
        spec = P.trace_spec(vt, P.cluster_size(vt, 1000), policy)
        model = compile_model(spec)
        assert model.n_servers == P.cluster_size(vt, 1000) and model.capacity[0].tolist() == [1.0]
        if policy == "vm-stalling":
            assert model.config.z == 0.002 and model.config.stall_limit == 0.015
        data = spec.model_dump()
        data["run"] |= {"jobs": True, "warmup": 0.0}
        jobs = simulate(data).jobs.to_pandas()  # the engine checks capacity and non-preemption
        table = pq.read_table(vt.path).to_pandas()
        assert len(jobs) == len(table) == 5_000
        demand = [c for c in jobs.columns if c.startswith("demand[")]
        assert np.allclose(jobs[demand[0]], table["demand"])  # job by job, in arrival order
        assert np.allclose(jobs["work"], table["duration"])
        assert np.array_equal(
            jobs["job_class"], [f"size 1/{round(1 / d)}" for d in table["demand"]]
        )


def test_fig7_counts_the_arrivals_of_each_full_window(excerpt_data):
    ctx = Context(quick=True, out=excerpt_data)
    out = P.run_fig7(P.FIG7, ctx)
    csv = (excerpt_data / "psychas2018_fig7.csv").read_text().splitlines()
    counts = np.array([float(line.split(",")[2]) for line in csv[1:]])
    arrival = pq.read_table(T.vm_trace(ctx.out, P.TRACE_JOBS).path)["arrival"].to_numpy()
    assert arrival.size == 118_699  # the whole excerpt (fewer jobs than the paper's window)
    n_full = max(int(arrival[-1] // (20 * 60)), 1)
    assert counts.size == n_full
    for w, n in enumerate(counts):
        assert n == np.sum((arrival >= w * 1200.0) & (arrival < (w + 1) * 1200.0))
    assert len(out.claims) == 1
    assert "Alibaba 2017" in out.notes[0]
