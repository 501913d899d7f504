"""Google clusterdata-2011 (v2.1 format): ``task_events`` and ``machine_events``.

Format (Reiss, Wilkes & Hellerstein, "Google cluster-usage traces: format + schema", v2.1,
https://github.com/google/cluster-data/blob/master/ClusterData2011_2.md): gzipped CSV parts
without header, times in microseconds (the trace window starts at 600 s; 0 means before the
window, 2**63 - 1 after it). ``task_events`` has 13 columns:

 1 time, 2 missing info, 3 job ID, 4 task index, 5 machine ID, 6 event type, 7 user,
 8 scheduling class, 9 priority, 10 CPU request, 11 memory request, 12 disk request,
 13 different-machines restriction

with event types SUBMIT=0, SCHEDULE=1, EVICT=2, FAIL=3, FINISH=4, KILL=5, LOST=6,
UPDATE_PENDING=7, UPDATE_RUNNING=8. Requests are normalized by the largest machine's capacity
(so a server of the largest kind has capacity 1 in each resource).

Tasks are built as psychas2019 (§VII-B), psychas2018 (§7.3) and psychas2022 (§7.2) did: keep
the tasks that ran once and finished without eviction, failure, kill or loss
(:mod:`.lifecycle`), with arrival = SUBMIT time, duration = FINISH - SCHEDULE, demand = the
(CPU, memory) request in force when the task was scheduled, and its priority and scheduling class.
Times are converted to seconds.

``machine_events`` (6 columns: time, machine ID, event type ADD=0/REMOVE=1/UPDATE=2, platform ID,
CPUs, memory) gives the server capacities: :func:`read_machines`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa

from schedlab.workloads.traces import lifecycle
from schedlab.workloads.traces.base import TraceReader, optional_int, report_bad_codes
from schedlab.workloads.traces.csvparse import Col, Layout, Parsed, parse_block
from schedlab.workloads.traces.report import ReadReport
from schedlab.workloads.traces.source import Block, iter_blocks, prefetched

MICROSECONDS = 1e6

TASK_EVENTS = Layout(
    n_fields=13,
    cols=(
        Col("time", 0, "int", "time"),
        Col("job", 2, "int", "job ID"),
        Col("index", 3, "int", "task index"),
        Col("code", 5, "int", "event type"),
        Col("cls", 7, "int", "scheduling class", required=False),
        Col("prio", 8, "int", "priority", required=False),
        Col("cpu", 9, "float", "CPU request", required=False),
        Col("mem", 10, "float", "memory request", required=False),
    ),
)

# 2011 event code -> lifecycle (2019) code.
CODE_MAP = np.array(
    [
        lifecycle.SUBMIT,
        lifecycle.SCHEDULE,
        lifecycle.EVICT,
        lifecycle.FAIL,
        lifecycle.FINISH,
        lifecycle.KILL,
        lifecycle.LOST,
        lifecycle.UPDATE_PENDING,
        lifecycle.UPDATE_RUNNING,
    ],
    dtype=np.int64,
)


def tasks_to_table(done: dict[str, np.ndarray], unit: float) -> pa.Table:
    """Cleanly finished tasks (from :class:`lifecycle.TaskTable`) as canonical rows."""
    return pa.table(
        {
            "arrival": done["submit"] / unit,
            "duration": (done["finish"] - done["schedule"]) / unit,
            "demand_cpu": done["cpu"],
            "demand_memory": done["memory"],
            "priority": optional_int(done["priority"]),
            "job_class": optional_int(done["job_class"]),
            "_id0": done["job"],
            "_id1": done["index"],
        }
    )


class Google2011(TraceReader):
    name = "google2011"
    title = "Google clusterdata-2011 task_events (CSV parts, gzipped or not)"
    reference = "Reiss, Wilkes & Hellerstein, Google cluster-usage traces: format + schema (2011)"
    resources = ("cpu", "memory")
    units: ClassVar[dict[str, str]] = {
        "cpu": "fraction of the largest machine",
        "memory": "fraction of the largest machine",
    }
    default_capacity: ClassVar[dict[str, float]] = {"cpu": 1.0, "memory": 1.0}

    def _parsed(self) -> Iterator[tuple[Block, Parsed, ReadReport]]:
        """Each block parsed, with the bad rows found in it counted apart (this runs in a
        thread of its own, ahead of the task lifecycles)."""
        for block in iter_blocks(self.paths, self.report):
            found = ReadReport(strict=self.report.strict)
            yield block, parse_block(block, TASK_EVENTS, found), found

    def batches(self) -> Iterator[pa.Table]:
        tasks = lifecycle.TaskTable()
        for block, parsed, found in prefetched(self._parsed()):
            self.report.absorb(found)  # in file order, as if parsed here
            self.report.rows += block.n_lines
            if not len(parsed):
                continue
            c = parsed.columns
            done, bad_rows, bad_codes = tasks.apply(
                c["time"],
                c["job"],
                c["index"],
                c["code"],
                c["cpu"],
                c["mem"],
                c["prio"],
                c["cls"],
                CODE_MAP,
            )
            report_bad_codes(
                self.report, block.path, parsed.lines, bad_rows, bad_codes, lifecycle.BAD_ROWS
            )
            if done["submit"].size:
                yield tasks_to_table(done, MICROSECONDS)
        for reason, n in tasks.drop_counts().items():
            self.report.drop(reason, n)


MACHINE_EVENTS = Layout(
    n_fields=6,
    cols=(
        Col("time", 0, "int", "time"),
        Col("machine", 1, "int", "machine ID"),
        Col("code", 2, "int", "event type"),
        Col("cpu", 4, "float", "CPUs", required=False),
        Col("mem", 5, "float", "memory", required=False),
    ),
)
MACHINE_ADD, MACHINE_REMOVE, MACHINE_UPDATE = 0, 1, 2


def machines_at(
    time: np.ndarray,
    machine: np.ndarray,
    removed: np.ndarray,
    cpu: np.ndarray,
    mem: np.ndarray,
    at: float | None,
) -> pa.Table:
    """Capacities of the machines present at time ``at`` (None: after the events at the first
    time stamp, i.e. the cluster at the start of the trace), grouped: ``cpu``, ``memory``,
    ``machines`` (count), largest group first."""
    if time.size == 0:
        return pa.table({"cpu": [], "memory": [], "machines": []})
    limit = time.min() if at is None else at
    keep = time <= limit
    order = np.lexsort((np.arange(time.size)[keep], time[keep]))
    m = machine[keep][order]
    gone = removed[keep][order]
    c = cpu[keep][order]
    r = mem[keep][order]
    # last event of each machine, carrying forward the last known capacity
    last: dict[int, tuple[bool, float, float]] = {}
    for mi, g, ci, ri in zip(m.tolist(), gone.tolist(), c.tolist(), r.tolist(), strict=True):
        prev = last.get(mi, (False, np.nan, np.nan))
        last[mi] = (g, ci if ci == ci else prev[1], ri if ri == ri else prev[2])
    counts: dict[tuple[float, float], int] = {}
    for g, ci, ri in last.values():
        if not g:
            counts[(ci, ri)] = counts.get((ci, ri), 0) + 1
    groups = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return pa.table(
        {
            "cpu": pa.array([k[0] for k, _ in groups], pa.float64()),
            "memory": pa.array([k[1] for k, _ in groups], pa.float64()),
            "machines": pa.array([n for _, n in groups], pa.int64()),
        }
    )


def read_machine_events(
    paths: Sequence[Path], report: ReadReport, at: float | None = None
) -> pa.Table:
    """Machine capacities from clusterdata-2011 ``machine_events`` (see :func:`machines_at`;
    ``at`` in seconds)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("time", "machine", "code", "cpu", "mem")}
    for block in iter_blocks(paths, report):
        parsed = parse_block(block, MACHINE_EVENTS, report)
        for k in cols:
            cols[k].append(parsed.columns[k])
    arrays = {k: np.concatenate(v) if v else np.empty(0) for k, v in cols.items()}
    return machines_at(
        arrays["time"],
        arrays["machine"],
        arrays["code"] == MACHINE_REMOVE,
        arrays["cpu"],
        arrays["mem"],
        None if at is None else at * MICROSECONDS,
    )
