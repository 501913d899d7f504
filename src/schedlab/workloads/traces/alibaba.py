"""Alibaba cluster-trace-v2017 and v2018 ``batch_task`` tables: one job per instance.

v2017 (https://github.com/alibaba/clusterdata/blob/master/cluster-trace-v2017/trace_201708.md and
its schema.csv), 8 columns: task create time, task end time (latest state change), job id, task
id, number of instances, status (Waiting, Running, Terminated, Failed, ...), CPUs requested per
instance (100 = one core), normalized memory requested per instance. Times are seconds from the
start of the trace; 0 or negative means before it. Machines have 64 CPUs ("For the 64 cpus
machine in the dataset").

v2018 (https://github.com/alibaba/clusterdata/blob/master/cluster-trace-v2018/schema.md),
9 columns: task name, instance number, job name, task type, status, start time, end time,
plan_cpu (100 = one core), plan_mem (normalized to [0, 100]). Machines have 96 CPUs and memory 100.

A task is a group of identical instances, the smallest unit the scheduler places ("Instance is
the smallest scheduling unit of batch workload. All instances within a task execute exactly the
same binary with the same resource request"). The task table gives, per task, its number of
instances but not their individual times (those are in ``batch_instance``), so each task becomes
``number_of_instances`` jobs, each with the task's arrival (create/start time), the task's span
(end - create) as duration, and the per-instance request as demand. The span is an upper bound on
each instance's run time: a task whose instances ran in several waves had shorter instances, so
the offered load of the replay is an upper bound too (see docs/traces.md).

Only Terminated tasks (all instances done) are kept, the analogue of the Google papers' "completed
without interruption"; other statuses are dropped and counted, as are tasks created before the
trace window and zero-length spans. Rows with an empty, negative or non-finite (``nan``, ``inf``,
``1e400``) request, or fewer than one or more than :data:`MAX_INSTANCES` instances, are bad rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schedlab.workloads.traces.base import TraceReader, join_ids
from schedlab.workloads.traces.csvparse import Col, Layout, Parsed, parse_block
from schedlab.workloads.traces.report import ReadReport
from schedlab.workloads.traces.source import Block, iter_blocks

SHIPPED_2017 = "alibaba/batch_task_v2017.csv.gz"  # in the data folder (schedlab.datasets)
TERMINATED = "Terminated"
EXPAND_ROWS = 1 << 20  # jobs per output table when tasks are expanded into instances
MAX_INSTANCES = 1_000_000
"""Most instances one task may have: a task becomes one job per instance, so an absurd count
(10^15) would be an absurd table; beyond this bound the row is a ``bad_value``. The largest task
of the v2017 table has 64,486 instances."""

V2017 = Layout(
    n_fields=8,
    cols=(
        Col("arrival", 0, "int", "task create time"),
        Col("end", 1, "int", "task end time"),
        Col("job", 2, "int", "job id"),
        Col("task", 3, "int", "task id"),
        Col("instances", 4, "int", "number of instances"),
        Col("status", 5, "str", "status"),
        Col("cpu", 6, "float", "CPUs requested per instance", required=False),
        Col("mem", 7, "float", "normalized memory requested per instance", required=False),
    ),
    quoted=True,
)

V2018 = Layout(
    n_fields=9,
    cols=(
        Col("task", 0, "str", "task_name"),
        Col("instances", 1, "int", "instance_num"),
        Col("job", 2, "str", "job_name"),
        Col("status", 4, "str", "status"),
        Col("arrival", 5, "int", "start_time"),
        Col("end", 6, "int", "end_time"),
        Col("cpu", 7, "float", "plan_cpu", required=False),
        Col("mem", 8, "float", "plan_mem", required=False),
    ),
    quoted=True,
)


def _is_header(block: Block, layout: Layout) -> bool:
    """A first line whose time field is not a number is a header row (the public v2017 extract
    has one; the original files have none)."""
    first = block.data.split(b"\n", 1)[0]
    fields = first.split(b",")
    time_col = next(c for c in layout.cols if c.name == "arrival")
    if len(fields) <= time_col.index:
        return False
    try:
        float(fields[time_col.index])
    except ValueError:
        return True
    return False


class _BatchTask(TraceReader):
    """Shared logic of the two Alibaba batch_task versions."""

    layout: ClassVar[Layout]
    resources = ("cpu", "memory")

    def batches(self) -> Iterator[pa.Table]:
        for path in self.paths:
            first = True
            for block in iter_blocks([path], self.report):
                skip = 1 if first and _is_header(block, self.layout) else 0
                if skip:
                    self.meta.setdefault("header_rows", []).append(str(path))
                first = False
                parsed = parse_block(block, self.layout, self.report, skip=skip)
                self.report.rows += block.n_lines - skip
                if len(parsed):
                    yield from self._jobs(block, parsed)

    def _jobs(self, block: Block, parsed: Parsed) -> Iterator[pa.Table]:
        """One job per instance of the kept tasks, in tables of about ``EXPAND_ROWS`` rows."""
        report: ReadReport = self.report
        c = parsed.columns
        lines = parsed.lines
        arrival = np.asarray(c["arrival"], dtype=np.int64)
        end = np.asarray(c["end"], dtype=np.int64)
        n_inst = np.asarray(c["instances"], dtype=np.int64)
        cpu = np.asarray(c["cpu"], dtype=np.float64)
        mem = np.asarray(c["mem"], dtype=np.float64)
        status = c["status"]
        terminated = pc.fill_null(pc.equal(status, TERMINATED), False).to_numpy(
            zero_copy_only=False
        )
        keep = terminated.copy()
        report.drop("not_terminated", int((~terminated).sum()))

        def bad(kind: str, mask: np.ndarray, field_name: str, message: str) -> None:
            nonlocal keep
            hit = keep & mask
            if hit.any():
                report.bad_row(
                    kind,
                    block.path,
                    int(lines[np.argmax(hit)]),
                    message,
                    field_name=field_name,
                    count=int(hit.sum()),
                )
            keep &= ~mask

        cols = {col.name: col for col in self.layout.cols}

        def label(name: str) -> str:
            return f"field {cols[name].index + 1} ({cols[name].label})"

        bad("missing_value", np.isnan(cpu), label("cpu"), "empty request of a Terminated task")
        bad("missing_value", np.isnan(mem), label("mem"), "empty request of a Terminated task")
        bad("bad_value", (cpu < 0) | (mem < 0), label("cpu"), "negative resource request")
        bad("bad_value", n_inst < 1, label("instances"), "a task needs at least one instance")
        bad(
            "bad_value",
            n_inst > MAX_INSTANCES,
            label("instances"),
            f"more than {MAX_INSTANCES:,} instances in one task (the largest real task has 64,486)",
        )
        before = keep & (arrival <= 0)
        report.drop("before_trace", int(before.sum()))
        keep &= ~before
        bad("negative_duration", end < arrival, label("end"), "ends before it was created")
        zero = keep & (end == arrival)
        report.drop("zero_duration", int(zero.sum()))
        keep &= ~zero
        idx = np.flatnonzero(keep)
        total = np.cumsum(n_inst[idx])
        cuts = (
            np.searchsorted(total, np.arange(EXPAND_ROWS, total[-1], EXPAND_ROWS))
            if idx.size
            else []
        )
        for part in np.split(idx, np.unique(np.asarray(cuts, dtype=np.int64) + 1)):
            if part.size:
                yield self._expand(c, part, arrival, end, n_inst, cpu, mem)

    def _expand(
        self,
        c: dict[str, np.ndarray | pa.Array],
        idx: np.ndarray,
        arrival: np.ndarray,
        end: np.ndarray,
        n_inst: np.ndarray,
        cpu: np.ndarray,
        mem: np.ndarray,
    ) -> pa.Table:
        counts = n_inst[idx]
        rep = np.repeat(idx, counts)
        starts = np.cumsum(counts) - counts
        instance = np.arange(rep.size, dtype=np.int64) - np.repeat(starts, counts)
        columns: dict[str, np.ndarray | pa.Array] = {
            "arrival": arrival[rep].astype(np.float64),
            "duration": (end[rep] - arrival[rep]).astype(np.float64),
            "demand_cpu": cpu[rep] * self.cpu_unit,
            "demand_memory": mem[rep],
        }
        job, task = c["job"], c["task"]
        if isinstance(job, np.ndarray) and isinstance(task, np.ndarray):  # v2017: numeric ids
            columns.update({"_id0": job[rep], "_id1": task[rep], "_id2": instance})
        else:  # v2018: names such as j_1 / M1
            take = pa.array(rep)
            columns["source_id"] = join_ids(job.take(take), task.take(take), instance)
        return pa.table(columns)

    cpu_unit: ClassVar[float] = 0.01  # plan_cpu 100 = one core


class Alibaba2017(_BatchTask):
    name = "alibaba2017"
    title = "Alibaba cluster-trace-v2017 batch_task (one job per instance)"
    reference = "Alibaba cluster-trace-v2017, trace_201708.md and schema.csv"
    layout = V2017
    units: ClassVar[dict[str, str]] = {"cpu": "cores", "memory": "normalized as in the trace"}
    default_capacity: ClassVar[dict[str, float]] = {"cpu": 64.0, "memory": 1.0}


class Alibaba2018(_BatchTask):
    name = "alibaba2018"
    title = "Alibaba cluster-trace-v2018 batch_task (one job per instance)"
    reference = "Alibaba cluster-trace-v2018, schema.md"
    layout = V2018
    units: ClassVar[dict[str, str]] = {"cpu": "cores", "memory": "percent of a machine (0-100)"}
    default_capacity: ClassVar[dict[str, float]] = {"cpu": 96.0, "memory": 100.0}
