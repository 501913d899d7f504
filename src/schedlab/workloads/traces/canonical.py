"""The canonical job table: its columns, its provenance metadata and a bounded-memory writer.

One row per job, in arrival order. Columns (see docs/traces.md):

========================  ========  ============================================================
``arrival``               float64   arrival (submit) time, seconds, on the trace's own clock
``duration``              float64   service time at full allocation, seconds (> 0)
``demand_<resource>``     float64   demand per named resource, as a fraction of one server's
                                    capacity (``demand_cpu``, ``demand_memory``, ``demand_procs``)
``demand``                float64   one scalar demand (from the max-of-resources transform)
``need``                  int64     server need for the pooled family (processors, nodes, ...)
``estimate``              float64   the user's duration estimate, seconds (SWF requested time)
``priority``              int32     priority as given by the trace
``job_class``             int32     scheduling class (Google, Borg); a declared class's index
``user``                  int32     the submitting user's id (SWF field 12); null: unknown
``queue``                 int32     the queue the job was submitted to (SWF field 15); null:
                                    unknown
``source_id``             string    where the job came from (``job/task``, SWF job number, ...)
========================  ========  ============================================================

Optional columns may be absent; readers may add format-specific ones (SWF ``status``, ``group``,
...). A replay gives the engine's per-job ``user`` and ``queue`` fields these columns (-1 where
absent or null; docs/decisions/0029-user-and-queue-fields.md). The Parquet schema metadata key
``schedlab.trace`` holds JSON provenance: source format and files, the server capacity the demands
were normalized to, the pooled server count ``k`` when the trace gives one (SWF MaxProcs), the read
report (rows, drops, bad rows) and every transform applied, in order.
:func:`schedlab.workloads.trace_table.read_trace_table` replays this table.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schedlab import outputs
from schedlab.workloads.outofcore import StreamSort
from schedlab.workloads.traces.ids import materialize
from schedlab.workloads.traces.report import TraceError, printable
from schedlab.workloads.traces.source import prefetched

META_KEY = b"schedlab.trace"
SEQ = "_seq"  # ingestion order, the tie-break that makes the arrival sort deterministic

COLUMN_TYPES: dict[str, pa.DataType] = {
    "arrival": pa.float64(),
    "duration": pa.float64(),
    "demand": pa.float64(),
    "need": pa.int64(),
    "estimate": pa.float64(),
    "priority": pa.int32(),
    "job_class": pa.int32(),
    "user": pa.int32(),
    "queue": pa.int32(),
    "source_id": pa.string(),
}
# Columns (nearly) unique per job, written without a dictionary: Arrow would build one per row
# group only to drop it (16% of the writing time of 2.6 M Google jobs, and a larger file).
PLAIN_COLUMNS = frozenset({"arrival", "duration", "source_id"})
ORDER = (
    "arrival",
    "duration",
    "demand",
    "need",
    "estimate",
    "priority",
    "job_class",
    "user",
    "queue",
    "source_id",
)


def demand_columns(table: pa.Table | pa.Schema) -> list[str]:
    """The per-resource demand columns ``demand_<resource>``, in table order."""
    names = table.names if isinstance(table, pa.Schema) else table.column_names
    return [c for c in names if c.startswith("demand_")]


def column_order(names: list[str]) -> list[str]:
    """Canonical columns first (demands after ``duration``), then the rest in their order."""
    demands = [c for c in names if c.startswith("demand_")]
    head = [c for c in ("arrival", "duration") if c in names] + demands
    head += [c for c in ORDER if c in names and c not in head]
    return head + [c for c in names if c not in head]


def get_meta(table: pa.Table | pa.Schema) -> dict[str, Any]:
    """The provenance metadata of a canonical table ({} if it has none)."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    raw = (schema.metadata or {}).get(META_KEY)
    return json.loads(raw) if raw else {}


def with_meta(table: pa.Table, meta: dict[str, Any]) -> pa.Table:
    """The table with its provenance metadata replaced by ``meta``."""
    existing = dict(table.schema.metadata or {})
    existing[META_KEY] = json.dumps(meta, sort_keys=True).encode()
    return table.replace_schema_metadata(existing)


def add_transform(table: pa.Table, name: str, **params: Any) -> pa.Table:
    """Record a transform (name and parameters) in the table's metadata."""
    meta = get_meta(table)
    meta.setdefault("transforms", []).append({"name": name, **params})
    return with_meta(table, meta)


def conform(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """The final form of rows: hidden id parts turned into ``source_id``, canonical columns cast
    to their canonical types, columns in canonical order."""
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    table = materialize(table)
    cols = []
    for name in column_order(table.column_names):
        col = table.column(name)
        want = COLUMN_TYPES.get(name, pa.float64() if name.startswith("demand_") else None)
        if want is not None and col.type != want:
            col = col.cast(want)
        cols.append(col)
    names = column_order(table.column_names)
    return pa.Table.from_arrays(cols, names=names).replace_schema_metadata(table.schema.metadata)


def sorted_table(tables: list[pa.Table]) -> pa.Table:
    """The rows of ``tables`` (same schema), concatenated and stably sorted by arrival.

    Built one column at a time and *consuming* the list (it is emptied), so that each input
    column can be freed as soon as its sorted copy exists: peak memory is about the data plus one
    column, not twice the data.
    """
    if not tables:
        raise ValueError("sorted_table needs at least one table")
    schema = tables[0].schema
    arrival = np.concatenate([t.column("arrival").to_numpy() for t in tables])
    order = None if np.all(arrival[1:] >= arrival[:-1]) else np.argsort(arrival, kind="stable")
    del arrival
    pending = {name: [t.column(name) for t in tables] for name in schema.names}
    tables.clear()
    columns: list[pa.ChunkedArray | pa.Array] = []
    for field in schema:
        parts = pending.pop(field.name)
        col = pa.chunked_array([c for p in parts for c in p.chunks], type=field.type)
        del parts
        if order is not None:
            if col.null_count == 0 and (
                pa.types.is_floating(field.type) or pa.types.is_integer(field.type)
            ):
                col = pa.array(col.to_numpy()[order], type=field.type)
            else:
                col = col.combine_chunks().take(pa.array(order))
        columns.append(col)
        del col
    return pa.Table.from_arrays(columns, schema=schema)


class JobSink:
    """Collects unsorted job batches and writes them out sorted by arrival, in bounded memory.

    Batches are kept in memory up to ``spill_bytes``; beyond that they, and every batch after
    them, are handed (with their ingestion order ``_seq``) to DuckDB, which sorts them out of core
    in a thread of its own while the log is still being read (:class:`.outofcore.StreamSort`,
    spilling to disk beyond :func:`schedlab.workloads.outofcore.sort_memory`), so the output may
    be larger than memory. ``table()`` returns everything in memory instead. Either way ties in
    arrival keep their ingestion order.
    """

    def __init__(self, spill_bytes: int = 256 << 20, tmp_dir: str | Path | None = None) -> None:
        self.spill_bytes = spill_bytes
        self._tmp_parent = tmp_dir
        self._tmp: Path | None = None
        self._batches: list[pa.Table] = []
        self._bytes = 0
        self._sort: StreamSort | None = None
        self._schema: pa.Schema | None = None
        self._spilled_rows = 0
        self.rows = 0

    @property
    def spilled(self) -> bool:
        """Whether the jobs went to the out-of-core sort (more than ``spill_bytes``)."""
        return self._sort is not None

    def add(self, batch: pa.Table) -> None:
        if batch.num_rows == 0:
            return
        batch = batch.replace_schema_metadata(None)
        if self._schema is None:
            self._schema = batch.schema
        elif batch.schema != self._schema:
            batch = batch.select(self._schema.names).cast(self._schema)
        self.rows += batch.num_rows
        if self._sort is not None:
            self._hand_over(batch)
            return
        self._batches.append(batch)
        self._bytes += batch.nbytes
        if self._bytes >= self.spill_bytes:
            self._spill()

    def _spill(self) -> None:
        """Start the out-of-core sort and hand it the batches held so far."""
        assert self._schema is not None
        self._tmp = Path(tempfile.mkdtemp(prefix="schedlab-trace-", dir=self._tmp_parent))
        self._sort = StreamSort(
            self._schema.append(pa.field(SEQ, pa.int64())),
            self._schema.names,
            ["arrival", SEQ],
            self._tmp / "duckdb",
        )
        self._batches.reverse()
        while self._batches:  # each freed once DuckDB has it: never held twice
            self._hand_over(self._batches.pop())
        self._bytes = 0

    def _hand_over(self, table: pa.Table) -> None:
        assert self._sort is not None
        seq = np.arange(self._spilled_rows, self._spilled_rows + table.num_rows, dtype=np.int64)
        self._spilled_rows += table.num_rows
        for batch in table.append_column(SEQ, pa.array(seq)).to_batches():
            self._sort.put(batch)

    def close(self) -> None:
        self._batches = []
        if self._sort is not None:
            self._sort.close()
            self._sort = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _empty(self) -> pa.Table:
        if self._schema is None:
            return pa.table(
                {"arrival": pa.array([], pa.float64()), "duration": pa.array([], pa.float64())}
            )
        return self._schema.empty_table()

    def table(self) -> pa.Table:
        """Everything, sorted by arrival, in memory; the sink is emptied."""
        if self._sort is not None:
            return pa.concat_tables(list(self.sorted_batches()))
        tables, self._batches = self._batches, []
        return sorted_table(tables) if tables else self._empty()

    def sorted_batches(self, batch_rows: int = 1 << 20) -> Iterator[pa.Table]:
        """Everything sorted by arrival, as tables of up to ``batch_rows`` rows."""
        if self._sort is None:
            table = self.table()
            for start in range(0, max(table.num_rows, 1), batch_rows):
                yield table.slice(start, batch_rows)
            return
        assert self._schema is not None
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in self._sort.sorted():  # DuckDB hands out small batches: regroup them
            pending.append(batch)
            size += batch.num_rows
            if size >= batch_rows:
                yield pa.Table.from_batches(pending).cast(self._schema)
                pending, size = [], 0
        if pending:
            yield pa.Table.from_batches(pending).cast(self._schema)


def write_table(
    batches: Iterator[pa.Table], out: Path, meta: dict[str, Any], *, row_group: int = 1 << 20
) -> int:
    """Write canonical batches to ``out`` (via a temporary file renamed at the end, so a failed
    conversion leaves no partial output; the target is checked by schedlab.outputs: never a
    link, a special file or a file schedlab did not write). Returns the number of rows written."""
    out = outputs.check_target(Path(out), parquet=True)
    tmp = outputs.temporary(out)
    writer: pq.ParquetWriter | None = None
    rows = 0
    try:
        # ids formatted and columns cast in a thread of their own while the batch before is
        # written (both release the GIL): the write of a big log no longer waits on the formatting
        for batch in prefetched((conform(b) for b in batches), depth=1):
            table = with_meta(batch, meta)
            if writer is None:
                writer = pq.ParquetWriter(
                    tmp,
                    table.schema,
                    compression="zstd",
                    use_dictionary=[c for c in table.column_names if c not in PLAIN_COLUMNS],
                )
            elif table.schema != writer.schema:
                table = table.cast(writer.schema)
            if table.num_rows:
                writer.write_table(table, row_group_size=row_group)
                rows += table.num_rows
        if writer is None:
            raise TraceError(f"{out}: no job to write")
        writer.close()
        writer = None
        outputs.commit(tmp, out, parquet=True)
    except OSError as exc:
        raise outputs.failed(out, exc) from None
    finally:
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()
        outputs.discard(tmp)
    return rows


def read_table(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """A canonical table from Parquet (or CSV without metadata); ``columns`` selects columns
    (those present; Parquet only)."""
    import pyarrow.csv as pacsv

    p = Path(path)
    if not p.exists():
        raise TraceError(f"{p}: no such file")
    try:
        if p.suffix in (".parquet", ".pq") or _is_parquet(p):
            if columns is not None:
                names = pq.read_schema(p).names
                columns = [c for c in columns if c in names]
            return pq.read_table(p, columns=columns)
        if _is_binary(p):
            raise TraceError(
                f"{p}: not a job table (binary data, neither Parquet nor CSV); for a raw trace "
                "give its --format"
            )
        return pacsv.read_csv(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(f"{p}: cannot read job table: {printable(str(exc))}") from None


def _is_parquet(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"PAR1"


def _is_binary(path: Path) -> bool:
    """NUL bytes or invalid UTF-8 in the first 64 KiB (a CSV table is text)."""
    with path.open("rb") as f:
        head = f.read(1 << 16)
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # (not a character cut by the 64 KiB limit)
    return False
