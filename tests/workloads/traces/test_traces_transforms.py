"""Transforms of the canonical table (papers 000 §VII-B and 002 §7.2) and the streaming
machinery behind `trace convert` (sorting, spilling to disk, windows on the sorted stream)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schedlab.workloads.traces import (
    TraceError,
    Transforms,
    convert,
    get_meta,
    max_resource,
    normalize,
    read,
    round_pow2,
    server_need,
    time_scale,
    window_jobs,
    window_time,
)
from schedlab.workloads.traces.canonical import JobSink
from schedlab.workloads.traces.ids import format_ids
from schedlab.workloads.traces.transforms import pow2_ceil
from tests.data import KTH


def table(**columns) -> pa.Table:
    return pa.table({k: pa.array(v) for k, v in columns.items()})


def test_pow2_ceil_rounds_up_to_powers_of_one_half():
    values = np.array([0.3, 0.5, 0.51, 1.0, 1e-4, 0.0, 1.5, 0.25000001, np.nan])
    assert pow2_ceil(values).tolist()[:8] == [0.5, 0.5, 1.0, 1.0, 2.0**-13, 0.0, 2.0, 0.5]
    assert np.isnan(pow2_ceil(values)[-1])
    # paper 000 §V: with J = 4, sizes in (0, 1/16] become 1/16 (and 0 too)
    assert pow2_ceil(values, floor_exponent=4).tolist()[:8] == [
        0.5,
        0.5,
        1.0,
        1.0,
        0.0625,
        0.0625,
        2.0,
        0.5,
    ]
    exact = 2.0 ** -np.arange(30)
    assert np.array_equal(pow2_ceil(exact), exact)  # powers of 1/2 are fixed points


def test_max_resource_then_types_as_paper_002():
    t = table(
        arrival=[0.0, 1.0], duration=[5.0, 6.0], demand_cpu=[0.2, 0.05], demand_memory=[0.1, 0.3]
    )
    t = round_pow2(max_resource(t))
    assert t.column("demand").to_pylist() == [0.25, 0.5]
    assert t.column("demand_cpu").to_pylist() == [0.2, 0.05]  # per-resource columns kept
    assert [x["name"] for x in get_meta(t)["transforms"]] == ["max_resource", "round_pow2"]
    with pytest.raises(TraceError, match="no demand_<resource> columns"):
        max_resource(table(arrival=[0.0], duration=[1.0]))


def test_normalize_records_the_server():
    t = table(arrival=[0.0], duration=[1.0], demand_cpu=[0.5], demand_memory=[0.2])
    t = normalize(t, {"cpu": 0.5, "memory": 0.5})
    assert t.column("demand_cpu").to_pylist() == [1.0]
    assert t.column("demand_memory").to_pylist() == [0.4]
    assert get_meta(t)["capacity"] == {"cpu": 0.5, "memory": 0.5}
    with pytest.raises(TraceError, match="no resource 'disk'"):
        normalize(t, {"disk": 1.0})


def test_windows_and_time_scale():
    t = table(arrival=[10.0, 11.0, 12.5, 13.0, 20.0], duration=[1.0] * 5)
    assert window_jobs(t, 2, start=1).column("arrival").to_pylist() == [11.0, 12.5]
    assert window_time(t, 3.0).column("arrival").to_pylist() == [10.0, 11.0, 12.5]
    assert window_time(t, 10.0, start=2.5).column("arrival").to_pylist() == [12.5, 13.0]
    scaled = time_scale(t, 1 / 1.6)  # traffic scaling 1.6 (paper 000 Fig. 5)
    assert scaled.column("arrival").to_pylist() == pytest.approx(
        [a / 1.6 for a in [10, 11, 12.5, 13, 20]]
    )
    assert scaled.column("duration").to_pylist() == [1.0] * 5
    with pytest.raises(TraceError, match="beta must be a positive number"):
        time_scale(t, 0.0)


def test_server_need_from_demand():
    t = table(arrival=[0.0, 1.0, 2.0], duration=[1.0] * 3, demand_cpu=[0.0078125, 0.5, 0.0])
    need = server_need(t, "demand", units=64).column("need").to_pylist()
    assert need == [1, 32, 1]  # cores of a 64-core machine, at least one
    with pytest.raises(TraceError, match="needs SWF processor columns"):
        server_need(t, "procs")


def test_format_ids():
    ids = format_ids(np.array([6251812952, 0, 7, -3]), np.array([0, 15, 123456789, 2]))
    assert ids.to_pylist() == ["6251812952/0", "0/15", "7/123456789", "-3/2"]


def test_sink_spills_and_sorts_out_of_core_like_in_memory(tmp_path):
    rng = np.random.default_rng(5)
    batches = [
        pa.table(
            {
                "arrival": rng.integers(0, 50, 2000).astype(float),  # many ties
                "duration": rng.random(2000) + 0.1,
                "_id0": np.arange(k * 2000, (k + 1) * 2000),
            }
        )
        for k in range(6)
    ]
    results = []
    for spill in (1 << 40, 20_000):
        sink = JobSink(spill_bytes=spill, tmp_dir=tmp_path)
        for b in batches:
            sink.add(b)
        results.append(pa.concat_tables(list(sink.sorted_batches(batch_rows=1500))))
        assert sink.spilled == (spill == 20_000)
        sink.close()
    in_memory, spilled = results
    assert in_memory.equals(spilled)
    arrival = in_memory.column("arrival").to_numpy()
    ids = in_memory.column("_id0").to_numpy()
    assert np.all(np.diff(arrival) >= 0)
    ties = np.diff(arrival) == 0
    assert np.all(np.diff(ids)[ties] > 0)  # ties keep their input order
    assert not list(tmp_path.iterdir())  # temporary parts removed


def test_convert_streams_like_read_and_windows_by_time(tmp_path):
    out = tmp_path / "kth.parquet"
    day = 86_400.0
    transforms = Transforms(window_time=(2 * day, 9 * day), time_scale=0.8)
    convert(KTH, "swf", out, transforms=transforms, spill_bytes=50_000)
    written = pq.read_table(out)
    in_memory = read(KTH, "swf", transforms=transforms)
    assert written.equals(in_memory.replace_schema_metadata(written.schema.metadata))
    everything = read(KTH, "swf")
    first = everything.column("arrival")[0].as_py()
    expected = window_time(everything, 9 * day, start=2 * day)
    assert written.num_rows == expected.num_rows > 0
    assert written.column("arrival").to_pylist() == pytest.approx(
        [0.8 * a for a in expected.column("arrival").to_pylist()]
    )
    assert min(expected.column("arrival").to_pylist()) >= first + 2 * day
