"""The canonical job table that traces are replayed from.

Columns (Parquet or CSV): ``arrival`` and ``duration`` (required, in the trace's time unit),
``need`` (server need, pooled family), ``demand_<resource>`` (normalized demand per named resource,
packing and loss families; ``demand`` for a single unnamed resource), and optionally ``estimate``
(the user's duration estimate), ``priority``, ``job_class``, ``user`` and ``queue`` (SWF fields 12
and 15: the engine's per-job ``user`` and ``queue``, -1 where absent or null) and ``source_id``. The
trace readers (``schedlab trace convert``, :mod:`schedlab.workloads.traces`) write this table,
sorted by arrival, with demands normalized to one server; see docs/traces.md. Mapping per family:
pooled replays use ``need`` (whole servers, <= k); single-resource packing/loss clusters use
``demand`` (or the only demand column); clusters with named resources use ``demand_<resource>``.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from schedlab.errors import SpecError
from schedlab.workloads.outofcore import sort_parquet

SCALAR_DEMAND = "demand"


INT_COLUMNS = {"user": pa.int32(), "queue": pa.int32()}  # ids: whole numbers, read as such
BATCH_ROWS = 1 << 16  # rows per batch when a Parquet table is read in row groups
CSV_BLOCK = 1 << 24  # bytes per block when a CSV table is read


@dataclass(frozen=True)
class TraceColumns:
    """Consecutive rows of a trace mapped onto one model (times as in the file)."""

    arrival: np.ndarray
    duration: np.ndarray
    demand: np.ndarray  # (n, R)
    estimate: np.ndarray
    job_class: np.ndarray  # the table's job_class column (-1 where missing or null)
    user: np.ndarray  # the table's user column, int32 (-1 where missing or null)
    queue: np.ndarray  # the table's queue column, int32 (-1 where missing or null)


@dataclass(frozen=True)
class TraceTable:
    """A trace mapped onto one model, read once at compile time for its statistics and streamed
    again (:meth:`batches`) by the run, ``BATCH_ROWS`` rows at a time, never held whole: a Parquet
    table sorted by arrival (what ``schedlab trace convert`` writes) is read in place; a CSV table,
    or a table not sorted by arrival, is first copied (its columns that the replay reads) to a
    temporary Parquet file stably sorted by arrival out of core (:mod:`.outofcore`), which
    ``sorted_copy`` names and which is deleted with the object that :func:`read_trace_table`
    returned."""

    path: str
    n_rows: int
    first_arrival: float
    last_arrival: float
    mean_duration: float
    mean_demand: np.ndarray  # per resource, weighted by duration (see below)
    needs: np.ndarray  # distinct first-resource demands (server needs, pooled family)
    demand_columns: tuple[str, ...]
    has_job_class: bool  # the table has a job_class column
    job_class_range: tuple[int, int]  # smallest and largest job_class (-1 where null)
    n_estimates: int  # jobs with a known estimate (the user's requested time, > 0)
    users: int = 0  # largest user id + 1 (0: no user known), the size of per-user counts
    sorted_copy: str | None = None  # CSV or unsorted tables: the temporary sorted Parquet copy
    time_unit: str | None = None  # "s" for converted logs (their metadata); None: not stated
    whole: TraceTable | None = None  # a prefix's whole table (it owns the sorted copy)
    rows_in_file: int = 0  # the table's rows (n_rows of a prefix is the prefix's)

    @property
    def rate(self) -> float:
        span = self.last_arrival - self.first_arrival
        return (self.n_rows - 1) / span if span > 0 else float(self.n_rows)

    def prefix(self, rows: int) -> TraceTable:
        """The first ``rows`` jobs in arrival order as a trace of their own: their own arrival
        rate, mean duration and demand, hence the offered load of the part a run of ``rows``
        arrivals replays (issue 43 item 4: a prefix of a log has its own load, not the whole
        log's). One pass over those rows of the replayed file."""
        if rows >= self.n_rows:
            return self
        stats = _Pass(sum_demand_duration=np.zeros(len(self.demand_columns)))
        for cols in _parquet_batches(Path(self.replayed), self.demand_columns):
            take = rows - stats.n
            if take <= 0:
                break
            if cols.arrival.size > take:
                cols = TraceColumns(*(getattr(cols, f)[:take] for f in _FIELDS))
            stats.add(cols)
        return dataclasses.replace(
            self,
            **_summary(stats),
            whole=self.whole or self,
            rows_in_file=self.rows_in_file or self.n_rows,
        )

    def batches(self) -> Iterator[TraceColumns]:
        """The rows in arrival order, times shifted to start at 0, in batches."""
        for cols in _parquet_batches(Path(self.replayed), self.demand_columns):
            yield dataclasses.replace(cols, arrival=cols.arrival - self.first_arrival)

    @property
    def replayed(self) -> str:
        """The Parquet file the run streams: the table itself or its sorted copy."""
        return self.sorted_copy or self.path

    def load(self) -> TraceColumns:
        """Every row at once (for analyses of the trace's size law; a run streams instead)."""
        parts = list(self.batches())
        return TraceColumns(
            *(
                np.concatenate([getattr(p, f) for p in parts])
                for f in TraceColumns.__dataclass_fields__
            )
        )


_FIELDS = tuple(TraceColumns.__dataclass_fields__)


def _column(table: pa.Table | pa.RecordBatch, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(float)


def _columns(table: pa.Table | pa.RecordBatch, demand_columns: tuple[str, ...]) -> TraceColumns:
    names = set(table.schema.names)
    n = table.num_rows
    return TraceColumns(
        arrival=_column(table, "arrival"),
        duration=_column(table, "duration"),
        demand=np.column_stack([_column(table, c) for c in demand_columns]).reshape(
            n, len(demand_columns)
        ),
        estimate=_column(table, "estimate") if "estimate" in names else np.full(n, np.nan),
        job_class=_int_column(table, "job_class"),
        user=_int_column(table, "user"),
        queue=_int_column(table, "queue"),
    )


def _int_column(table: pa.Table | pa.RecordBatch, name: str) -> np.ndarray:
    """An optional integer column as int32, -1 where it is absent or null."""
    if name not in table.schema.names:
        return np.full(table.num_rows, -1, dtype=np.int32)
    return table.column(name).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)


def _wanted(names: list[str], demand_columns: tuple[str, ...], logged: bool) -> list[str]:
    """The columns a replay reads (and, with ``logged``, those a per-job table looks up)."""
    wanted = ["arrival", "duration", *demand_columns]
    wanted += [c for c in ("estimate", "job_class", "user", "queue") if c in names]
    if logged:
        wanted += [c for c in LOGGED if c in names]
    return list(dict.fromkeys(wanted))


def _parquet_batches(path: Path, demand_columns: tuple[str, ...]) -> Iterator[TraceColumns]:
    file = pq.ParquetFile(path, pre_buffer=False)  # pre-buffering would read the file ahead
    wanted = _wanted(file.schema_arrow.names, demand_columns, logged=False)
    for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
        yield _columns(batch, demand_columns)


def _csv_batches(path: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """``columns`` of a CSV table in blocks, as the types a replay reads them as (numbers as
    float64, ``user`` and ``queue`` as int32, ``source_id`` as text), so that no block can
    disagree with the first on a type."""
    types = {c: LOGGED[c][1] if c in LOGGED else INT_COLUMNS.get(c, pa.float64()) for c in columns}
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=CSV_BLOCK),
        convert_options=pacsv.ConvertOptions(include_columns=columns, column_types=types),
    )
    yield from reader


def _schema_names(path: Path, field: str) -> tuple[list[str], bool]:
    """The column names of a job table and whether it is Parquet."""
    if not path.exists():
        raise SpecError(f"{path}: no such file", field=field)
    parquet = path.suffix in (".parquet", ".pq")
    try:
        if parquet:
            return list(pq.ParquetFile(path).schema_arrow.names), True
        return list(pacsv.open_csv(path).schema.names), False
    except (pa.ArrowInvalid, OSError) as exc:
        raise SpecError(f"{path}: cannot read job table: {exc}", field=field) from None


def _demand_columns(
    path: Path, column_names: list[str], family: str, resources: tuple[str, ...], field: str
) -> tuple[str, ...]:
    names = set(column_names)
    for required in ("arrival", "duration"):
        if required not in names:
            raise SpecError(f"{path}: the job table has no '{required}' column", field=field)
    if family == "pooled":
        if "need" not in names:
            raise SpecError(
                f"{path}: the pooled family needs a 'need' column (server need); make one with "
                "`schedlab trace convert --need-from procs` (SWF) or `--need-from demand "
                "--need-units N` (N unit servers per server)",
                field=field,
            )
        return ("need",)
    if resources == ("resource",):
        cols = [c for c in column_names if c.startswith("demand")]
        if SCALAR_DEMAND in names:
            return (SCALAR_DEMAND,)
        if len(cols) == 1:
            return (cols[0],)
        raise SpecError(
            f"{path}: a single-resource cluster needs one demand column; this table has "
            f"{', '.join(cols) or 'none'} (map them to one with the max-of-resources "
            "transform of `schedlab trace convert`)",
            field=field,
        )
    missing = [r for r in resources if f"demand_{r}" not in names]
    if missing:
        raise SpecError(
            f"{path}: no demand column for resource(s) {', '.join(missing)}", field=field
        )
    return tuple(f"demand_{r}" for r in resources)


def _validate(
    cols: TraceColumns, offset: int, path: Path, family: str, capacity: np.ndarray, field: str
) -> None:
    """One-line errors naming the first bad row (1-based, in file order)."""
    arrival, duration, demand = cols.arrival, cols.duration, cols.demand
    if family == "pooled":
        need = demand[:, 0]
        whole = np.isfinite(need) & (need >= 1) & (need % 1 == 0)
        if not whole.all():
            row = int(np.argmin(whole))
            raise SpecError(
                f"{path}: row {offset + row + 1}: need {need[row]:g} is not a whole number of "
                "servers >= 1",
                field=field,
            )
    bad = ~(
        np.isfinite(arrival)
        & np.isfinite(duration)
        & (duration > 0)
        & np.all(np.isfinite(demand) & (demand >= 0), axis=1)
    )
    if bad.any():
        row = int(np.argmax(bad))
        raise SpecError(
            f"{path}: row {offset + row + 1}: arrival, duration (> 0) and demand must be finite "
            "numbers",
            field=field,
        )
    fits = np.zeros(len(arrival), dtype=bool)
    for cap in np.unique(capacity, axis=0):
        fits |= np.all(demand <= cap + 1e-12, axis=1)
    if not fits.all():
        row = int(np.argmin(fits))
        if family == "pooled":
            raise SpecError(
                f"{path}: row {offset + row + 1}: need {demand[row, 0]:g} exceeds the cluster's "
                f"{float(capacity[0, 0]):g} servers ({int((~fits).sum())} jobs of this part do); "
                "set cluster.servers to the trace's k (`schedlab trace info` shows it)",
                field=field,
            )
        raise SpecError(
            f"{path}: row {offset + row + 1}: demand {demand[row].tolist()} is larger than every "
            "server",
            field=field,
        )


@dataclass
class _Pass:
    """What one pass over a table's rows gathers (see :func:`read_trace_table`)."""

    n: int = 0
    first: float = math.nan
    last: float = math.nan
    lowest: float = math.inf
    highest: float = -math.inf
    ordered: bool = True
    sum_duration: float = 0.0
    class_lo: int = 0
    class_hi: int = 0
    n_estimates: int = 0
    users: int = 0
    sum_demand_duration: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    needs: set[float] = dataclasses.field(default_factory=set)

    def add(self, cols: TraceColumns) -> None:
        if cols.arrival.size:
            if self.n == 0:
                self.first = float(cols.arrival[0])
            elif cols.arrival[0] < self.last:
                self.ordered = False
            self.ordered = self.ordered and bool(np.all(np.diff(cols.arrival) >= 0))
            self.last = float(cols.arrival[-1])
            self.lowest = min(self.lowest, float(cols.arrival.min()))
            self.highest = max(self.highest, float(cols.arrival.max()))
        self.n += cols.arrival.size
        self.sum_duration += float(cols.duration.sum())
        self.sum_demand_duration += (cols.demand * cols.duration[:, None]).sum(axis=0)
        self.needs.update(np.unique(cols.demand[:, 0]).tolist())
        self.n_estimates += int(np.count_nonzero(cols.estimate > 0))
        if cols.job_class.size:
            self.class_lo = min(self.class_lo, int(cols.job_class.min()))
            self.class_hi = max(self.class_hi, int(cols.job_class.max()))
            self.users = max(self.users, int(cols.user.max()) + 1)


def read_trace_table(
    path: Path, *, family: str, resources: tuple[str, ...], capacity: np.ndarray, field: str
) -> TraceTable:
    """Check a canonical job table against the model and gather what the load needs, in one
    pass over its rows (module docstring for the columns). A CSV table is copied to Parquet in
    that pass; a table not sorted by arrival is then sorted out of core into a temporary file
    (:class:`TraceTable`), so that no table is ever held whole."""
    path = Path(path)
    column_names, parquet = _schema_names(path, field)
    demand_columns = _demand_columns(path, column_names, family, resources, field)
    kept = _wanted(column_names, demand_columns, logged=True)
    tmp = None if parquet else Path(tempfile.mkdtemp(prefix="schedlab-replay-"))
    try:
        stats, sorted_copy = _read_pass(path, tmp, demand_columns, kept, family, capacity, field)
        if not stats.ordered:
            if tmp is None:
                tmp = Path(tempfile.mkdtemp(prefix="schedlab-replay-"))
            source = Path(sorted_copy) if sorted_copy else path
            sorted_copy = str(tmp / "sorted.parquet")
            sort_parquet(source, Path(sorted_copy), "arrival", kept, tmp / "duckdb")
            if source != path:
                source.unlink()
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    table = TraceTable(
        path=str(path),
        **_summary(stats),
        demand_columns=demand_columns,
        has_job_class="job_class" in column_names,
        sorted_copy=sorted_copy,
        time_unit=_time_unit(path) if parquet else None,
    )
    if tmp is not None:
        weakref.finalize(table, shutil.rmtree, tmp, ignore_errors=True)
    return table


def _summary(stats: _Pass) -> dict[str, Any]:
    """The statistics of :class:`TraceTable` from a pass over its rows."""
    n = stats.n
    mean_duration = stats.sum_duration / n
    return {
        "n_rows": n,
        "first_arrival": stats.first if stats.ordered else stats.lowest,
        "last_arrival": stats.last if stats.ordered else stats.highest,
        "mean_duration": mean_duration,
        # demand per resource weighted by duration, so that load = rate * mean_demand * mean
        # duration / capacity counts each job's demand-time product exactly
        "mean_demand": stats.sum_demand_duration / n / mean_duration,
        "needs": np.array(sorted(stats.needs)),
        "job_class_range": (stats.class_lo, stats.class_hi),
        "n_estimates": stats.n_estimates,
        "users": stats.users,
    }


def _read_pass(
    path: Path,
    tmp: Path | None,
    demand_columns: tuple[str, ...],
    kept: list[str],
    family: str,
    capacity: np.ndarray,
    field: str,
) -> tuple[_Pass, str | None]:
    """Validate every row and gather the statistics; a CSV table (``tmp`` given) is copied, its
    ``kept`` columns, to ``tmp/rows.parquet`` on the way (returned; None for Parquet)."""
    stats = _Pass(sum_demand_duration=np.zeros(len(demand_columns)))
    copy = None if tmp is None else tmp / "rows.parquet"
    try:
        if copy is None:
            parts: Iterator[TraceColumns] = _parquet_batches(path, demand_columns)
        else:
            parts = (_columns(b, demand_columns) for b in _copied(path, kept, copy))
        for cols in parts:
            _validate(cols, stats.n, path, family, capacity, field)
            stats.add(cols)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SpecError(f"{path}: cannot read job table: {exc}", field=field) from None
    if stats.n == 0:
        raise SpecError(f"{path}: the job table is empty", field=field)
    return stats, None if copy is None else str(copy)


def _copied(path: Path, columns: list[str], copy: Path) -> Iterator[pa.RecordBatch]:
    """The blocks of a CSV table, each also appended to the Parquet file ``copy``."""
    writer: pq.ParquetWriter | None = None
    try:
        for batch in _csv_batches(path, columns):
            if writer is None:
                writer = pq.ParquetWriter(copy, batch.schema)
            writer.write_batch(batch)
            yield batch
    finally:
        if writer is not None:
            writer.close()


def _time_unit(path: Path) -> str | None:
    """The time unit a converted table's metadata states (``schedlab trace convert``: "s")."""
    from schedlab.workloads.traces.canonical import get_meta

    try:
        unit = get_meta(pq.read_schema(path)).get("time_unit")
    except (ValueError, OSError):
        return None
    return str(unit) if unit else None


def job_sizes(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The ``demand`` and ``duration`` columns of a single-resource job table, in table order
    (the size law of a trace: :meth:`schedlab.optim.rounded_bounds.SizeLaw.from_samples`)."""
    table = pq.read_table(path, columns=["demand", "duration"])
    return _column(table, "demand"), _column(table, "duration")


LOGGED: dict[str, tuple[str, pa.DataType]] = {
    "source_id": ("log_job_id", pa.string()),
    "trace_wait": ("log_wait", pa.float64()),
    "estimate": ("log_requested_time", pa.float64()),
}
"""Trace columns a replay's per-job table keeps, under their per-job names: the log's job id
(SWF field 1), the wait the job had on the real machine (field 3) and its requested time
(field 9), for comparing simulated and logged waits (docs/traces.md)."""

CACHED_GROUPS = 2  # Parquet row groups of logged columns held at once


class LoggedJobs:
    """The log's own values (:data:`LOGGED`) of a trace's jobs, by arrival number: the engine
    numbers jobs in arrival order, which is the row order of the file the run streams
    (:attr:`TraceTable.replayed`), read one row group at a time, at most ``CACHED_GROUPS``
    held."""

    def __init__(self, table: TraceTable, names: list[str]) -> None:
        self.names = names
        self.fields = tuple(LOGGED[n] for n in names)
        self._cache: dict[int, pa.Table] = {}
        self._table = table  # keeps a temporary sorted copy alive while it is read
        self._file = pq.ParquetFile(table.replayed, pre_buffer=False)
        sizes = [
            self._file.metadata.row_group(g).num_rows for g in range(self._file.num_row_groups)
        ]
        self._starts = np.concatenate([[0], np.cumsum(sizes)])

    @classmethod
    def of(cls, table: TraceTable) -> LoggedJobs | None:
        """The lookup for ``table``, or None when it has none of the logged columns."""
        present = pq.ParquetFile(table.replayed).schema_arrow.names
        names = [n for n in LOGGED if n in present]
        return cls(table, names) if names else None

    def _typed(self, part: pa.Table) -> pa.Table:
        return pa.table({n: part.column(n).cast(LOGGED[n][1]) for n in self.names})

    def _group(self, g: int) -> pa.Table:
        if g not in self._cache:
            if len(self._cache) >= CACHED_GROUPS:
                self._cache.pop(next(iter(self._cache)))
            self._cache[g] = self._typed(self._file.read_row_group(g, columns=self.names))
        return self._cache[g]

    def take(self, seq: np.ndarray) -> dict[str, pa.Array]:
        """The logged columns of the jobs numbered ``seq`` (any order), by per-job name."""
        seq = np.asarray(seq, dtype=np.int64)
        groups = np.searchsorted(self._starts, seq, side="right") - 1
        pieces, where = [], []
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            local = seq[rows] - self._starts[g]
            pieces.append(self._group(int(g)).take(pa.array(local)))
            where.append(rows)
        if not pieces:
            part = self._typed(pa.table({n: pa.array([], LOGGED[n][1]) for n in self.names}))
        else:
            back = np.empty(seq.size, dtype=np.int64)
            back[np.concatenate(where)] = np.arange(seq.size)
            part = pa.concat_tables(pieces).take(pa.array(back))
        return {LOGGED[n][0]: part.column(n).combine_chunks() for n in self.names}
