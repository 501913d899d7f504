"""Sort tables larger than memory with DuckDB, which spills to disk beyond its memory limit.

Both the conversion of a raw log (:class:`.traces.canonical.JobSink`, through
:class:`StreamSort`) and the replay of a job table that is not sorted by arrival
(:func:`.trace_table.read_trace_table`) sort out of core this way: DuckDB's own external sort
under ``SET memory_limit`` with a ``temp_directory`` to spill to, never a hand-written one. Ties
keep their input order (the sort key ends with the row's position), so the result is the stable
sort of the input.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

SORT_MEMORY_ENV = "SCHEDLAB_SORT_MEMORY"
SORT_MEMORY = "256MB"  # DuckDB's memory limit while sorting (beyond it, it spills to disk)
ROW_GROUP = 1 << 16


def sort_memory() -> str:
    """DuckDB's memory limit for a sort: ``$SCHEDLAB_SORT_MEMORY`` (e.g. ``1GB``) or 256 MB."""
    return os.environ.get(SORT_MEMORY_ENV) or SORT_MEMORY


def connect(temp_dir: Path, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that keeps to ``memory_limit`` and spills into ``temp_directory``."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("SET threads = 2")
    con.execute(f"SET memory_limit = '{memory_limit or sort_memory()}'")
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"SET temp_directory = '{_quoted(temp_dir)}'")
    return con


def sort_parquet(
    source: Path,
    out: Path,
    key: str,
    columns: list[str],
    temp_dir: Path,
    memory_limit: str | None = None,
) -> None:
    """Write ``columns`` of the Parquet file ``source`` to ``out``, stably sorted by ``key``."""
    con = connect(temp_dir, memory_limit)
    try:
        cols = ", ".join(f'"{c}"' for c in columns)
        con.execute(
            f"COPY (SELECT {cols} FROM read_parquet('{_quoted(source)}', file_row_number = true) "
            f"ORDER BY \"{key}\", file_row_number) TO '{_quoted(out)}' "
            f"(FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP})"
        )
    finally:
        con.close()


FEED_DEPTH = 4  # batches waiting for DuckDB (each one block's jobs: a few MB)
POLL_S = 0.1


@dataclass(frozen=True)
class Sorted:
    """What the sort's thread hands out: a batch of sorted rows, the end (neither), or the
    error that stopped it."""

    batch: pa.RecordBatch | None = None
    error: BaseException | None = None


class StreamSort:
    """Sort a stream of Arrow batches, fed one by one, with DuckDB in a thread of its own.

    DuckDB takes each batch as it is :meth:`put` (its sort sorts and, beyond its memory limit,
    spills as the rows arrive) while the caller reads and parses the next ones; :meth:`sorted`
    closes the feed and yields the sorted rows. ``order_by`` must make the order total (end it
    with a row number) for the result to be deterministic. :meth:`close` stops the thread
    whether or not the stream was read to the end (decision 0014)."""

    def __init__(
        self, schema: pa.Schema, columns: list[str], order_by: list[str], temp_dir: Path
    ) -> None:
        self._schema = schema
        self._query = (
            f"SELECT {', '.join(_ident(c) for c in columns)} FROM feed "
            f"ORDER BY {', '.join(_ident(c) for c in order_by)}"
        )
        self._temp_dir = temp_dir
        self._feed: queue.Queue[pa.RecordBatch | None] = queue.Queue(maxsize=FEED_DEPTH)
        self._out: queue.Queue[Sorted] = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="schedlab-sort", daemon=True)
        self._thread.start()

    def put(self, batch: pa.RecordBatch) -> None:
        """Hand ``batch`` to DuckDB (waits while it is :data:`FEED_DEPTH` batches behind)."""
        self._send(batch)

    def sorted(self) -> Iterator[pa.RecordBatch]:
        """Close the feed; the sorted rows, in DuckDB's batches."""
        self._send(None)
        while True:
            out = self._out.get()
            if out.error is not None:
                raise out.error
            if out.batch is None:
                return
            yield out.batch

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _send(self, item: pa.RecordBatch | None) -> None:
        while self._thread.is_alive():
            try:
                self._feed.put(item, timeout=POLL_S)
                return
            except queue.Full:
                continue
        # DuckDB failed before taking the whole feed: its error is waiting
        error = None if self._out.empty() else self._out.get().error
        raise error or RuntimeError("the out-of-core sort stopped")

    def _fed(self) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                item = self._feed.get(timeout=POLL_S)
            except queue.Empty:
                if self._stop.is_set():
                    raise InterruptedError("the sort was closed before its feed") from None
                continue
            if item is None:
                return
            yield item

    def _emit(self, out: Sorted) -> None:
        while not self._stop.is_set():
            try:
                self._out.put(out, timeout=POLL_S)
                return
            except queue.Full:
                continue

    def _work(self) -> None:
        import pyarrow as pa

        con = connect(self._temp_dir)
        try:
            con.register("feed", pa.RecordBatchReader.from_batches(self._schema, self._fed()))
            for batch in con.sql(self._query).to_arrow_reader(1 << 20):
                self._emit(Sorted(batch=batch))
            self._emit(Sorted())
        except BaseException as exc:  # handed to the consumer, which re-raises it
            self._emit(Sorted(error=exc))
        finally:
            con.close()


def _ident(name: str) -> str:
    """A column name quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def _quoted(path: Path) -> str:
    """A path inside single quotes of SQL."""
    return str(path).replace("'", "''")
