"""Alibaba batch_task readers: a real excerpt of the cluster-trace-v2017 table (tests/data: its
header row and first 300 task rows) and a v2018 table written in its exact format."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.workloads.traces import Transforms, get_meta, read
from schedlab.workloads.traces.alibaba import Alibaba2017
from schedlab.workloads.traces.report import ReadReport
from tests.data import ALIBABA2017, text_lines


def excerpt_rows() -> list[list[str]]:
    return [line.split(",") for line in text_lines(ALIBABA2017)[1:]]


def test_v2017_excerpt_one_job_per_instance(tmp_path):
    """Stream the excerpt batch by batch: counts (computed independently from the rows), a bad
    row with its line, and the first task's instances."""
    lines = text_lines(ALIBABA2017)
    rows = excerpt_rows()
    emptied = next(i for i, r in enumerate(rows) if r[5] == "Terminated" and i > 100)
    lines[emptied + 1] = ",".join([*rows[emptied][:6], "", rows[emptied][7]])
    path = tmp_path / "batch_task.csv"
    path.write_text("\n".join(lines) + "\n")
    report = ReadReport()
    reader = Alibaba2017([path], report)
    jobs = 0
    first_task = []
    for batch in reader.batches():
        jobs += batch.num_rows
        job = batch.column("_id0").to_numpy()
        task = batch.column("_id1").to_numpy()
        sel = (job == 3) & (task == 4)
        if sel.any():
            first_task.append(batch.filter(sel))
    terminated = [r for i, r in enumerate(rows) if r[5] == "Terminated" and i != emptied]
    kept = [r for r in terminated if int(r[0]) > 0 and int(r[1]) > int(r[0])]
    assert report.rows == 300
    assert jobs == sum(int(r[4]) for r in kept) == 118_699 - int(rows[emptied][4])
    assert report.dropped == {"not_terminated": sum(r[5] != "Terminated" for r in rows)}
    assert report.bad == {"missing_value": 1}
    assert report.examples["missing_value"].startswith(
        f"{path}:{emptied + 2}: field 7 (CPUs requested per instance): empty"
    )
    assert reader.meta["header_rows"] == [str(path)]
    # Line 2: "6459,6524,3,4,15740,Terminated,50,0.007956928" -> 15,740 jobs.
    (rows_3_4,) = first_task
    assert rows_3_4.num_rows == 15_740
    assert np.array_equal(rows_3_4.column("_id2").to_numpy(), np.arange(15_740))
    assert set(rows_3_4.column("arrival").to_pylist()) == {6459.0}
    assert set(rows_3_4.column("duration").to_pylist()) == {65.0}
    assert set(rows_3_4.column("demand_cpu").to_pylist()) == {0.5}  # cores, before normalizing
    assert set(rows_3_4.column("demand_memory").to_pylist()) == {0.007956928}


def real_extract(tmp_path: Path, lines: int) -> Path:
    """The header and first ``lines`` rows of the real v2017 excerpt (in tmp_path, gzipped)."""
    import gzip

    head = text_lines(ALIBABA2017)[: lines + 1]
    path = tmp_path / "batch_task_head.csv.gz"
    path.write_bytes(gzip.compress(("\n".join(head) + "\n").encode()))
    return path


def test_v2017_extract_normalized_and_max_resource(tmp_path):
    import gzip

    path = real_extract(tmp_path, 20)
    table = read(path, "alibaba2017", transforms=Transforms(max_resource=True))
    meta = get_meta(table)
    assert meta["capacity"] == {"cpu": 64.0, "memory": 1.0}
    # Rows 2-21 of the real table: 18 Terminated tasks (lines 4 and 5 are Waiting).
    with gzip.open(path, "rt") as f:
        rows = [line.strip().split(",") for line in list(f)[1:]]
    kept = [r for r in rows if r[5] == "Terminated"]
    assert len(kept) == 18
    counts = [int(r[4]) for r in kept]
    assert table.num_rows == sum(counts) == 24_846
    cpu = table.column("demand_cpu").to_numpy()
    mem = table.column("demand_memory").to_numpy()
    want_cpu = np.repeat([int(r[6]) / 100 / 64 for r in kept], counts)
    want_mem = np.repeat([float(r[7]) for r in kept], counts)
    assert np.array_equal(np.sort(cpu), np.sort(want_cpu))
    assert np.array_equal(np.sort(mem), np.sort(want_mem))
    assert np.array_equal(table.column("demand").to_numpy(), np.maximum(cpu, mem))
    ids = table.column("source_id").to_pylist()
    assert "3/4/0" in ids and "3/4/15739" in ids and "3/4/15740" not in ids
    assert meta["report"]["dropped"] == {"not_terminated": 2}


V2018_ROWS = """\
M1,1,j_1,1,Terminated,157213,157224,100,0.3
R2_1,2,j_1,1,Terminated,157224,157238,50,0.59
M1,3,j_2,1,Failed,200000,200100,100,0.2
J3_1_2,1,j_3,12,Terminated,300000,300010,,
M4,1,j_4,1,Terminated,0,50,100,0.3
"""


def test_v2018_format(tmp_path):
    path = tmp_path / "batch_task.csv"
    path.write_text(V2018_ROWS)
    table = read(path, "alibaba2018")
    assert table.to_pylist() == [
        {
            "arrival": 157213.0,
            "duration": 11.0,
            "demand_cpu": 1 / 96,
            "demand_memory": 0.003,
            "source_id": "j_1/M1/0",
        },
        {
            "arrival": 157224.0,
            "duration": 14.0,
            "demand_cpu": 0.5 / 96,
            "demand_memory": 0.0059,
            "source_id": "j_1/R2_1/0",
        },
        {
            "arrival": 157224.0,
            "duration": 14.0,
            "demand_cpu": 0.5 / 96,
            "demand_memory": 0.0059,
            "source_id": "j_1/R2_1/1",
        },
    ]
    report = get_meta(table)["report"]
    assert report["dropped"] == {"not_terminated": 1, "before_trace": 1}
    assert report["bad"] == {"missing_value": 1}
    assert report["examples"]["missing_value"].startswith(f"{path}:4: field 8 (plan_cpu)")
