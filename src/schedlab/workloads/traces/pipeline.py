"""Read a trace in any supported format into the canonical job table, or convert it to Parquet.

``read`` returns a :class:`pyarrow.Table` in memory; ``convert`` streams: readers yield one batch
per input block, row-wise transforms are applied per batch, batches spill to disk beyond a memory
budget and are sorted out of core (:class:`.canonical.JobSink`), and the sorted stream is windowed,
time-scaled and written. A trace larger than memory therefore converts in bounded memory.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from schedlab import outputs
from schedlab.errors import did_you_mean
from schedlab.workloads.traces import transforms as tf
from schedlab.workloads.traces.base import TraceReader
from schedlab.workloads.traces.canonical import JobSink, conform, with_meta, write_table
from schedlab.workloads.traces.report import NoJobs, ReadReport, TraceError
from schedlab.workloads.traces.source import expand_paths


def formats() -> dict[str, type[TraceReader]]:
    """Every supported format by name."""
    from schedlab.workloads.traces.alibaba import Alibaba2017, Alibaba2018
    from schedlab.workloads.traces.borg2019 import Borg2019
    from schedlab.workloads.traces.google2011 import Google2011
    from schedlab.workloads.traces.swf import Swf

    return {r.name: r for r in (Google2011, Borg2019, Swf, Alibaba2017, Alibaba2018)}


def get_format(name: str) -> type[TraceReader]:
    known = formats()
    if name not in known:
        raise TraceError(
            f"unknown trace format '{name}'{did_you_mean(name, known)}; known: {', '.join(known)}"
        )
    return known[name]


@dataclass(frozen=True)
class Transforms:
    """The transforms of ``trace convert``, applied in the order of the fields (see
    :mod:`.transforms`). ``normalize`` overrides the format's default server capacity (native
    units); ``window_jobs`` is (start, count); ``window_time`` is (start, end) in seconds from
    the first arrival; ``time_scale`` is beta."""

    normalize: dict[str, float] | None = None
    need_from: str | None = None
    need_units: float = 1.0
    max_resource: bool = False
    round_pow2: bool = False
    pow2_floor: int | None = None
    window_jobs: tuple[int, int] | None = None
    window_time: tuple[float, float] | None = None
    time_scale: float = 1.0

    def rowwise(self, table: pa.Table, reader: TraceReader, capacity: dict[str, float]) -> pa.Table:
        """normalize, server need, max resource, round to powers of 1/2 (one batch)."""
        table = with_meta(table, dict(reader.meta))  # e.g. the SWF header, for need in nodes
        table = tf.normalize(table, capacity)
        need_from = self.need_from or getattr(reader, "default_need", None)
        if need_from is not None:
            table = tf.server_need(table, need_from, self.need_units)
        if self.max_resource:
            table = tf.max_resource(table)
        if self.round_pow2:
            table = tf.round_pow2(table, floor_exponent=self.pow2_floor)
        return table

    def ordered(self, tables: Iterable[pa.Table]) -> Iterator[pa.Table]:
        """Windows and time scaling on the arrival-sorted stream."""
        seen = 0
        origin: float | None = None
        for table in tables:
            if table.num_rows == 0:
                continue
            if self.window_jobs is not None:
                start, count = self.window_jobs
                lo = max(start - seen, 0)
                hi = min(start + count - seen, table.num_rows)
                seen += table.num_rows
                if hi <= lo:
                    if seen >= start + count:
                        return
                    continue
                table = table.slice(lo, hi - lo)
            if self.window_time is not None:
                if origin is None:
                    origin = float(table.column("arrival")[0].as_py())
                start_t, end_t = self.window_time
                arrival = table.column("arrival").to_numpy()
                keep = (arrival >= origin + start_t) & (arrival < origin + end_t)
                if arrival[0] >= origin + end_t:
                    return
                table = table.filter(pa.array(keep))
            if self.time_scale != 1.0:
                table = tf.time_scale(table, self.time_scale)
            yield table

    def records(self, capacity: dict[str, float], need_from: str | None) -> list[dict[str, Any]]:
        """The transforms as recorded in the metadata."""
        out: list[dict[str, Any]] = [{"name": "normalize", "capacity": capacity}]
        if need_from is not None:
            out.append({"name": "server_need", "source": need_from, "units": self.need_units})
        if self.max_resource:
            out.append({"name": "max_resource"})
        if self.round_pow2:
            out.append({"name": "round_pow2", "floor_exponent": self.pow2_floor})
        if self.window_jobs is not None:
            out.append(
                {"name": "window_jobs", "start": self.window_jobs[0], "count": self.window_jobs[1]}
            )
        if self.window_time is not None:
            out.append(
                {"name": "window_time", "start": self.window_time[0], "end": self.window_time[1]}
            )
        if self.time_scale != 1.0:
            out.append({"name": "time_scale", "beta": self.time_scale})
        return out

    def check(self) -> None:
        if self.window_jobs is not None and self.window_time is not None:
            raise TraceError("give window_jobs or window_time, not both")
        if self.window_jobs is not None and min(self.window_jobs) < 0:
            raise TraceError("--window-jobs: start and count must be >= 0")
        if self.window_time is not None and not self.window_time[1] > self.window_time[0]:
            raise TraceError("--window-time: the end must be after the start")
        if not (self.time_scale > 0 and math.isfinite(self.time_scale)):
            raise TraceError("--time-scale: beta must be a positive number")
        if self.pow2_floor is not None and self.pow2_floor < 0:
            raise TraceError("--pow2-floor: J must be >= 0")
        if self.need_from is not None and self.need_from not in tf.NEED_SOURCES:
            raise TraceError(
                f"--need-from: unknown source '{self.need_from}'; use one of "
                + ", ".join(tf.NEED_SOURCES)
            )


@dataclass
class Conversion:
    """What a conversion produced."""

    rows: int
    report: ReadReport
    meta: dict[str, Any]
    seconds: float
    out: Path | None = None
    table: pa.Table | None = field(default=None, repr=False)


def _open(
    inputs: str | Path | Iterable[str | Path],
    format: str,
    strict: bool,
    options: dict[str, Any],
) -> tuple[TraceReader, ReadReport]:
    reader_cls = get_format(format)
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    report = ReadReport(strict=strict)
    return reader_cls(expand_paths(items), report, **options), report


def _capacity(reader: TraceReader, transforms: Transforms) -> dict[str, float]:
    capacity = reader.capacity()
    for r, v in (transforms.normalize or {}).items():
        if r not in reader.resources:
            raise TraceError(
                f"--normalize: format '{reader.name}' has no resource '{r}'; it has "
                + ", ".join(reader.resources)
            )
        capacity[r] = float(v)
    for r, v in capacity.items():
        if not (v > 0 and math.isfinite(v)):
            inferred = reader.infer_capacity(r)
            if inferred is not None and inferred > 0 and math.isfinite(inferred):
                capacity[r] = inferred
                continue
            hint = " (SWF: the header has no MaxProcs)" if reader.name == "swf" else ""
            raise TraceError(
                f"{reader.paths[0]}: no server capacity for '{r}'{hint}; give it with "
                f"--normalize {r}=N (Python: Transforms(normalize={{'{r}': N}}))"
            )
    return capacity


def _fill(
    reader: TraceReader, transforms: Transforms, sink: JobSink
) -> tuple[dict[str, float], str | None]:
    capacity: dict[str, float] | None = None
    for batch in reader.batches():
        if capacity is None:
            capacity = _capacity(reader, transforms)
        table = transforms.rowwise(batch.replace_schema_metadata(None), reader, capacity)
        sink.add(table.replace_schema_metadata(None))
    if capacity is None:  # no job: the capacity is recorded as far as it is known
        try:
            capacity = _capacity(reader, transforms)
        except TraceError:
            capacity = reader.capacity()
    need_from = transforms.need_from or getattr(reader, "default_need", None)
    return capacity, need_from


def _meta(
    reader: TraceReader,
    report: ReadReport,
    transforms: Transforms,
    capacity: dict[str, float],
    need_from: str | None,
    machines: pa.Table | None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "version": 1,
        "format": reader.name,
        "sources": [str(p) for p in reader.paths],
        "time_unit": "s",
        "capacity": capacity,
        "units": dict(reader.units),
        "report": report.to_dict(),
        "transforms": transforms.records(capacity, need_from),
        **reader.meta,
    }
    k = reader.pooled_servers()
    if need_from == "nodes":
        k = reader.meta.get("header", {}).get("MaxNodes")
    elif need_from == "demand":
        k = None
    if k:
        meta["k"] = int(k)
    if machines is not None:
        meta["machines"] = machines.to_pylist()
    return meta


def read(
    inputs: str | Path | Iterable[str | Path],
    format: str,
    *,
    strict: bool = False,
    transforms: Transforms | None = None,
    machines: str | Path | Iterable[str | Path] | None = None,
    **options: Any,
) -> pa.Table:
    """Read a trace into the canonical job table (in memory, sorted by arrival).

    ``inputs``: a file, a directory of parts, a glob, or a list of them. ``format``: one of
    :func:`formats`. ``options`` are format options (e.g. SWF ``completed_only``). The read
    report and provenance are in the table's metadata (:func:`.canonical.get_meta`)."""
    return _run(inputs, format, None, strict, transforms, machines, options).table  # type: ignore[return-value]


def convert(
    inputs: str | Path | Iterable[str | Path],
    format: str,
    out: str | Path,
    *,
    strict: bool = False,
    transforms: Transforms | None = None,
    machines: str | Path | Iterable[str | Path] | None = None,
    spill_bytes: int = 256 << 20,
    **options: Any,
) -> Conversion:
    """Convert a trace to a canonical Parquet table at ``out`` in bounded memory. Raises
    :class:`.report.NoJobs` (naming the input and why, with the read report) if no job could be
    read; :func:`read` returns an empty table instead, with the report in its metadata."""
    return _run(inputs, format, Path(out), strict, transforms, machines, options, spill_bytes)


def _run(
    inputs: str | Path | Iterable[str | Path],
    format: str,
    out: Path | None,
    strict: bool,
    transforms: Transforms | None,
    machines: str | Path | Iterable[str | Path] | None,
    options: dict[str, Any],
    spill_bytes: int = 256 << 20,
) -> Conversion:
    started = time.perf_counter()
    transforms = transforms or Transforms()
    transforms.check()
    if out is not None:  # before reading: never a special file, a link or a user's file
        outputs.check_writable(out, parquet=True)
    reader, report = _open(inputs, format, strict, options)
    machine_table = None
    if machines is not None:
        machine_table = read_machines(machines, format)
    sink = JobSink(spill_bytes=spill_bytes if out is not None else 1 << 62)
    try:
        capacity, need_from = _fill(reader, transforms, sink)
        report.jobs = sink.rows
        if out is not None and sink.rows == 0:
            raise NoJobs([str(p) for p in reader.paths], report)
        meta = _meta(reader, report, transforms, capacity, need_from, machine_table)
        if out is None:
            parts = list(transforms.ordered([sink.table()]))
            table = pa.concat_tables(parts) if parts else sink.table().slice(0, 0)
            table = with_meta(conform(table), meta)
            return Conversion(
                table.num_rows, report, meta, time.perf_counter() - started, table=table
            )
        rows = write_table(transforms.ordered(sink.sorted_batches()), out, meta)
    finally:
        sink.close()
    return Conversion(rows, report, meta, time.perf_counter() - started, out=out)


def read_machines(
    inputs: str | Path | Iterable[str | Path], format: str, at: float | None = None
) -> pa.Table:
    """Server capacities from a trace's machine table (Google 2011 ``machine_events``, Borg 2019
    ``machine_events``): ``cpu``, ``memory``, ``machines`` (count) of the machines present at
    time ``at`` seconds (default: the start of the trace)."""
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    paths = expand_paths(items)
    report = ReadReport()
    if format == "google2011":
        from schedlab.workloads.traces.google2011 import read_machine_events

        return read_machine_events(paths, report, at)
    if format == "borg2019":
        from schedlab.workloads.traces.borg2019 import read_machine_events as borg_machines

        return borg_machines(paths, report, at)
    raise TraceError(f"format '{format}' has no machine table (only google2011 and borg2019)")
