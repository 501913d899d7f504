"""The psychas2019 reproductions: their settings are the paper's, and their evidence helpers count
what they claim to count (the runs themselves are `schedlab reproduce`, not tests)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schedlab.analysis.occupancy import co_location, time_in_mix
from schedlab.model.compile import compile_model
from schedlab.reproduce import psychas2019 as R
from schedlab.reproduce.registry import get_reproduction
from schedlab.workloads.traces import single_resource as T


def test_registered():
    for name in ("fig3a", "fig3b", "fig4a", "fig4b", "fig5"):
        assert get_reproduction(f"psychas2019-{name}").paper == "psychas2019"


def test_fig3_and_fig4_settings_are_the_papers():
    m = compile_model(R.fig3a_spec("vqs", 1e6))
    assert m.slotted and m.rate == pytest.approx(0.014) and m.n_servers == 1
    m = compile_model(R.fig3b_spec("bf-js", 1e6))
    assert m.rate == pytest.approx(0.0306) and float(m.capacity[0, 0]) == 10.0
    assert m.classes[0].duration.mean == 100 and m.classes[0].duration.integer
    for which, mean_size in (("a", 0.1), ("b", 0.5)):
        m = compile_model(R.fig4_spec(R.FIG4[which], "bf-js", 0.95, 1000))
        # Poisson arrivals at alpha mu L / E[R] jobs per slot (§VII-A3)
        assert m.rate == pytest.approx(0.95 * 0.01 * 5 / mean_size)
        assert m.n_servers == 5 and m.slotted


def test_co_location_and_time_in_mix():
    jobs = {
        "demand[resource]": np.array([0.4, 0.6, 0.4, 0.6]),
        "start": np.array([0.0, 5.0, 10.0, 12.0]),
        "finish": np.array([5.0, 10.0, 20.0, 14.0]),
    }
    # job 0 ends when job 1 starts (no overlap); job 3 starts while job 2 runs
    assert co_location(jobs, 0.4, 0.6) == 1
    # exactly one 0.4 and one 0.6 during [12, 14): 2 of the 20 time units
    assert time_in_mix(jobs, {0.4: 1, 0.6: 1}, 0.0, 20.0) == pytest.approx(0.1)
    assert time_in_mix(jobs, {0.4: 1, 0.6: 0}, 0.0, 20.0) == pytest.approx(13 / 20)


def test_trace_sizes_and_corollary_1_j(tmp_path):
    path = tmp_path / "t.parquet"
    size = np.r_[np.full(99, 0.3), 0.001]  # 1% of jobs below 1/2^J for every J <= 9
    pq.write_table(
        pa.table({"arrival": np.arange(100.0), "duration": np.ones(100), "demand": size}), path
    )
    J, s, d = T.trace_sizes(path)
    assert d.sum() == 100
    assert J == 10 and s.size == 100  # F_R(1/2^J) = 1% is not < 1% until 1/2^10 < 0.001
    J, _, _ = T.trace_sizes(path, eps=0.02)
    assert J == 2


def test_long_runs_are_stored_in_the_result_store_and_read_back_unchanged(tmp_path):
    from schedlab.reproduce.registry import Context
    from schedlab.reproduce.timeline import LONG_RUNS, run_long

    spec = R.fig3a_spec("bf-js", 300)
    ctx = Context(quick=True, out=tmp_path)
    first = run_long(ctx, spec, lambda result: {"events": result.events})
    assert len(list((tmp_path / LONG_RUNS / "runs").glob("*.parquet"))) == 1
    again = run_long(ctx, spec, lambda result: pytest.fail("stored run was simulated again"))
    assert (again.policy, again.stable) == (first.policy, first.stable)
    np.testing.assert_equal(again.mean_queue, first.mean_queue)  # NaN == NaN (unstable run)
    assert again.extras == first.extras and again.seconds == first.seconds
    assert np.array_equal(again.time, first.time) and np.array_equal(again.queue, first.queue)


def test_fig5_trace_source_reuses_a_converted_table(tmp_path, monkeypatch):
    """A second run on the same directory finds the converted table and does not convert (nor
    crash on the source's name, which only the conversion branch used to set)."""
    monkeypatch.delenv(T.TRACE_ENV, raising=False)
    target = tmp_path / f"alibaba2017_max_resource_{R.FIG5_QUICK_JOBS}.parquet"
    target.write_bytes(b"")  # already converted
    src = T.trace_source(tmp_path, R.FIG5_QUICK_JOBS)
    assert src.path == target and not src.natural
    assert src.label.startswith("batch_task_v2017.csv.gz: alibaba2017")
