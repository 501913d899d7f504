"""The per-job table (``run.jobs``) in the formats HPC tools read: evalys's CSV and SWF.

* ``evalys``: the Batsim jobs CSV that ``evalys.jobset.JobSet.from_csv`` loads (oar-team/evalys;
  Batsim docs "output-jobs"): ``job_id, workload_name, submission_time,
  requested_number_of_resources, requested_time, success, starting_time, execution_time,
  finish_time, waiting_time, turnaround_time, stretch, allocated_resources`` (an interval set of
  server numbers, e.g. ``0-3 7``).
* ``swf``: the Standard Workload Format v2.2 (18 fields, -1 for unknown; the header names the
  policy and ``MaxProcs`` = k), a pooled-family run only: SWF counts processors, which the
  pooled family's server needs are; a packing or loss job's fractional demand is not.

Only jobs that ran to the end are written (a job still waiting or running when a
``drain = false`` run ended, or a lost job, has no finish time). The job id is the log's
(``log_job_id``, a trace replay) else the arrival number + 1; the requested time is the log's
(``log_requested_time``) else unknown.

Servers: a pooled-family job holds ``need`` of the k servers but the engine does not name them;
:func:`placement` reconstructs a feasible assignment (each job, in start order, takes the
lowest-numbered free servers; jobs finishing at a time free their servers before jobs starting at
that time take theirs). A preemptive run holds no servers from start to finish: a job that finds
too few free servers gets none (``allocated_resources`` empty; counted). A packing or loss job
is on the server the engine recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from schedlab import outputs
from schedlab.errors import SchedlabError

if TYPE_CHECKING:  # pyarrow loads when a table is converted, not with the CLI (issue 33)
    import pyarrow as pa

    from schedlab.experiments.runner import Task
    from schedlab.model.spec import SimulationSpec

FORMATS = ("parquet", "evalys", "swf")
SUFFIX = {"parquet": ".parquet", "evalys": ".csv", "swf": ".swf"}
NEED = "demand[servers]"  # the pooled family's server need in the per-job table


def check_format(fmt: str, family: str | None = None) -> str:
    """``fmt`` if it can be written for a run of ``family`` (None: not known yet), else a
    one-line error."""
    if fmt not in FORMATS:
        raise SchedlabError(f"--jobs-format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "swf" and family is not None and family != "pooled":
        raise SchedlabError(
            f"--jobs-format swf: SWF counts processors per job, and a {family}-family job has a "
            "fractional demand, no server need; use evalys or parquet"
        )
    return fmt


@dataclass(frozen=True)
class Placement:
    """Servers per job as intervals of server numbers: job ``j`` holds ``[lo[i], hi[i])`` for
    ``i`` in ``offset[j]:offset[j + 1]`` (none when too few were free), and how many jobs found
    too few free servers (a preemptive run). Memory: the intervals, never k per job."""

    offset: np.ndarray  # n + 1
    lo: np.ndarray
    hi: np.ndarray  # exclusive
    unplaced: int

    @classmethod
    def one_each(cls, server: np.ndarray) -> Placement:
        """Job ``j`` on server ``server[j]`` (packing, loss)."""
        server = np.asarray(server, dtype=np.int64)
        return cls(np.arange(server.size + 1), server, server + 1, 0)

    def intervals(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job ``j``'s intervals: first servers, last servers (inclusive), in increasing order."""
        a, b = self.offset[j], self.offset[j + 1]
        return self.lo[a:b], self.hi[a:b] - 1

    def servers(self, j: int) -> np.ndarray:
        """Job ``j``'s server numbers."""
        first, last = self.intervals(j)
        if first.size == 0:
            return np.empty(0, dtype=np.int64)
        return np.concatenate([np.arange(a, b + 1) for a, b in zip(first, last, strict=True)])

    def interval_sets(self) -> list[str]:
        """Each job's servers as an interval set string (``0-3 7``, evalys/procset's form)."""
        out = []
        for j in range(self.offset.size - 1):
            first, last = self.intervals(j)
            pairs = zip(first.tolist(), last.tolist(), strict=True)
            out.append(" ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in pairs))
        return out


def placement(start: np.ndarray, finish: np.ndarray, need: np.ndarray, k: int) -> Placement:
    """A feasible assignment of ``need`` of ``k`` servers to each job over [start, finish)
    (module docstring), by the rule the online scheduler names servers with
    (measurement/free_servers.py: lowest free first, intervals, not k per job)."""
    from schedlab.measurement.free_servers import FreeServers, Interval

    n = start.size
    free = FreeServers(k)
    held: list[list[Interval] | None] = [None] * n
    out_job: list[int] = []
    out_lo: list[int] = []
    out_hi: list[int] = []
    # events: finishes (kind 0) before starts (kind 1) at the same time
    times = np.concatenate([finish, start])
    kinds = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)])
    order = np.lexsort((kinds, times))
    unplaced = 0
    needs = need.astype(np.int64).tolist()
    for e in order.tolist():
        j = e - n if e >= n else e
        if e < n:  # a finish: its servers free again
            free.give(held[j] or ())
            held[j] = None
            continue
        taken = free.take(needs[j])
        if taken is None:
            unplaced += 1
            continue
        held[j] = taken
        for a, b in taken:
            out_job.append(j)
            out_lo.append(a)
            out_hi.append(b)
    jobs = np.array(out_job, dtype=np.int64)
    by_job = np.argsort(jobs, kind="stable")
    offset = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(jobs, minlength=n), out=offset[1:])
    lo = np.array(out_lo, dtype=np.int64)[by_job]
    hi = np.array(out_hi, dtype=np.int64)[by_job]
    return Placement(offset, lo, hi, unplaced)


@dataclass(frozen=True)
class Finished:
    """The jobs of a per-job table that ran to the end, in arrival order."""

    job_id: np.ndarray  # strings
    submit: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    need: np.ndarray  # servers (pooled) or 1
    server: np.ndarray  # the engine's server (packing, loss)
    requested: np.ndarray  # requested time, NaN when unknown
    pooled: bool

    @classmethod
    def of(cls, table: pa.Table) -> Finished:
        import pyarrow as pa

        table = table.filter(pa.compute.equal(table.column("status"), "done")).sort_by("job")
        names = table.column_names
        seq = table.column("job").to_numpy()
        n = table.num_rows

        def col(name: str) -> np.ndarray:
            return table.column(name).to_numpy(zero_copy_only=False).astype(float)

        ids = (
            np.array(table.column("log_job_id").fill_null("").to_pylist(), dtype=object)
            if "log_job_id" in names
            else np.array([str(s + 1) for s in seq], dtype=object)
        )
        pooled = NEED in names
        return cls(
            job_id=ids,
            submit=col("arrival"),
            start=col("start"),
            finish=col("finish"),
            need=col(NEED).astype(np.int64) if pooled else np.ones(n, dtype=np.int64),
            server=table.column("server").to_numpy().astype(np.int64),
            requested=col("log_requested_time")
            if "log_requested_time" in names
            else np.full(n, np.nan),
            pooled=pooled,
        )

    def servers(self, k: int) -> Placement:
        if self.pooled:
            return placement(self.start, self.finish, self.need, k)
        return Placement.one_each(self.server)


def evalys_table(table: pa.Table, k: int, name: str) -> tuple[pa.Table, int]:
    """The evalys/Batsim jobs CSV columns of a per-job table, and the number of jobs without
    servers (:func:`placement`)."""
    import pyarrow as pa

    f = Finished.of(table)
    placed = f.servers(k)
    wait = f.start - f.submit
    run = f.finish - f.start
    turnaround = f.finish - f.submit
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = turnaround / run
    columns = {
        "job_id": pa.array(f.job_id.tolist(), pa.string()),
        "workload_name": pa.array([name] * f.submit.size, pa.string()),
        "submission_time": f.submit,
        "requested_number_of_resources": f.need,
        "requested_time": np.where(np.isnan(f.requested), -1.0, f.requested),
        "success": np.ones(f.submit.size, dtype=np.int64),
        "starting_time": f.start,
        "execution_time": run,
        "finish_time": f.finish,
        "waiting_time": wait,
        "turnaround_time": turnaround,
        "stretch": stretch,
        "allocated_resources": pa.array(placed.interval_sets(), pa.string()),
    }
    return pa.table(columns), placed.unplaced


def swf_lines(table: pa.Table, k: int, note: str) -> list[str]:
    """The SWF v2.2 text of a pooled-family per-job table: header, then one line per job that
    ran to the end, in submit order (times with up to 10 significant digits)."""
    f = Finished.of(table)
    ids = _swf_ids(f.job_id)
    header = [
        "; Version: 2.2",
        "; Computer: schedlab simulation",
        f"; Note: {note}",
        f"; MaxJobs: {f.submit.size}",
        f"; MaxProcs: {k}",
    ]
    unknown = "-1"
    lines = []
    for i in range(f.submit.size):
        requested = "-1" if np.isnan(f.requested[i]) else _num(f.requested[i])
        fields = [
            str(ids[i]),
            _num(f.submit[i]),
            _num(f.start[i] - f.submit[i]),
            _num(f.finish[i] - f.start[i]),
            str(int(f.need[i])),
            unknown,
            unknown,
            str(int(f.need[i])),
            requested,
            unknown,
            "1",
            *[unknown] * 7,
        ]
        lines.append(" ".join(fields))
    return header + lines


def _swf_ids(ids: np.ndarray) -> list[int]:
    """The log's job numbers when every one is a whole number, else 1..n (SWF field 1)."""
    try:
        numbers = [int(x) for x in ids]
    except ValueError:
        return list(range(1, ids.size + 1))
    return numbers


def _num(x: float) -> str:
    return f"{x:.10g}"


def write_jobs(table: pa.Table, target: Path, fmt: str, *, k: int, note: str) -> int:
    """Write a per-job table to ``target`` in ``fmt`` (through schedlab.outputs); returns the
    number of jobs a pooled-family placement left without servers (0 otherwise)."""
    if fmt == "parquet":
        outputs.write_parquet(table, target)
        return 0
    if fmt == "swf":
        text = "\n".join(swf_lines(table, k, note)) + "\n"
        with outputs.atomic(target) as tmp:
            Path(tmp).write_text(text)
        return 0
    import pyarrow.csv as pacsv

    csv, unplaced = evalys_table(table, k, note)
    with outputs.atomic(target) as tmp:
        pacsv.write_csv(csv, tmp)
    return unplaced


def run_family(spec: SimulationSpec) -> str:
    """The model family of a spec: its own, else its policy's."""
    from schedlab.policies.registry import get_policy

    return spec.model.family or get_policy(spec.policy.name).family


def servers_of(spec: SimulationSpec) -> int:
    """k of a pooled model (the servers a job's need counts), else the number of servers."""
    from schedlab.model.compile import compile_model

    model = compile_model(spec)
    return int(model.pooled_k) if model.family == "pooled" else model.n_servers


def sweep_jobs(root: Path, tasks: list[Task], fmt: str) -> list[Path]:
    """Each stored run's per-job table (``DIR/jobs/<run hash>[.replicationR].parquet``, runs
    whose spec sets ``run.jobs`` to a path) also in ``fmt``, beside it."""
    import json

    import pyarrow.parquet as pq

    from schedlab.experiments.runner import jobs_target
    from schedlab.measurement.jobs_output import jobs_path
    from schedlab.model.spec import parse_spec

    written: list[Path] = []
    servers: dict[str, int] = {}
    for task in tasks:
        spec = parse_spec(json.loads(task.spec_json))
        if not isinstance(spec.run.jobs, str):
            continue
        source = jobs_path(str(jobs_target(root, task)), task.replication)
        if task.spec_json not in servers:
            servers[task.spec_json] = servers_of(spec)
        target = source.with_suffix(SUFFIX[fmt])
        note = " ".join(f"{k}={v}" for k, v in task.axes.items()) or spec.policy.name
        write_jobs(pq.read_table(source), target, fmt, k=servers[task.spec_json], note=note)
        written.append(target)
    return written
