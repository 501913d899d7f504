"""Sort tables larger than memory with DuckDB, which spills to disk beyond its memory limit.

Both the conversion of a raw log (:class:`.traces.canonical.JobSink`) and the replay of a job
table that is not sorted by arrival (:func:`.trace_table.read_trace_table`) sort out of core this
way: DuckDB's own external sort under ``SET memory_limit`` with a ``temp_directory`` to spill
to, never a hand-written one. Ties keep their input order (the sort key ends with the row's
position), so the result is the stable sort of the input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

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


def _quoted(path: Path) -> str:
    """A path inside single quotes of SQL."""
    return str(path).replace("'", "''")
