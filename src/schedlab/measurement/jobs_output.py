"""The per-job table of a run (``run.jobs``), streamed to Parquet while the run goes on.

The compiled loop appends one record per job when it leaves (completes or is lost) to a buffer;
when the buffer holds ``chunk`` records the loop returns and :class:`JobsWriter` writes them as
one Parquet row group, so a long run's table is never held in memory. With ``run.jobs = true``
(no path) a table of at most ``MEMORY_ROWS`` rows stays in memory (no file); a larger one spills
to a temporary Parquet file. A given path is checked and written through schedlab.outputs (a
temporary file renamed over it when the run ends; never a link, a special file or a file schedlab
did not write). At the end the jobs still present
(runs with ``drain = false``) are written with status ``waiting`` or ``running``. Rows are in the
order jobs left; the ``job`` column is the arrival sequence number (sort by it for arrival order).
A trace replay adds the log's own values of each job (``logged``: looked up by arrival number when
the rows are written, e.g. ``log_job_id`` and ``log_wait`` of an SWF log, docs/traces.md).
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from schedlab import outputs
from schedlab.engine import constants as K
from schedlab.engine.state import State

if TYPE_CHECKING:  # pyarrow loads when a run writes its jobs, not with the engine (issue 33)
    import pyarrow as pa
    import pyarrow.parquet as pq

STATUS_NAMES = np.array(["free", "waiting", "running", "done", "lost"])


MEMORY_ROWS = 1 << 16  # run.jobs = true: tables up to this many rows are kept in memory


def jobs_path(setting: bool | str, replication: int) -> Path | None:
    """Where the per-job table of a replication goes: the given path (replications after the
    first get ``.replication<r>`` before the suffix), or None for ``true`` (in memory, spilling
    to a temporary file when large)."""
    if setting is True:
        return None
    path = Path(str(setting))
    if replication:
        path = path.with_name(f"{path.stem}.replication{replication}{path.suffix}")
    return path


def _temporary_path() -> Path:
    """A temporary Parquet file, removed when the process exits."""
    folder = Path(tempfile.mkdtemp(prefix="schedlab-jobs-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder / "jobs.parquet"


class Logged(Protocol):
    """Per-job values from outside the engine (a trace's own columns), by arrival number."""

    fields: tuple[tuple[str, pa.DataType], ...]

    def take(self, seq: np.ndarray) -> dict[str, pa.Array]: ...


class JobsWriter:
    """Writes the engine's per-job output buffer to a Parquet file, one row group per flush
    (``path`` None: kept in memory up to MEMORY_ROWS rows, then spilled to a temporary file).
    ``logged``: columns added to every row, looked up by the job's arrival number."""

    def __init__(
        self,
        path: Path | None,
        class_names: tuple[str, ...],
        resources: tuple[str, ...],
        logged: Logged | None = None,
    ):
        import pyarrow as pa

        self.path = path  # where the table ends up
        self.file = (
            None if path is None else outputs.temporary(outputs.check_target(path, parquet=True))
        )
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.class_names = np.array(class_names)
        self.resources = resources
        fields = [
            ("job", pa.int64()),
            ("arrival", pa.float64()),
            ("job_class", pa.string()),
            ("work", pa.float64()),
            *((f"demand[{r}]", pa.float64()) for r in resources),
            ("start", pa.float64()),
            ("finish", pa.float64()),
            ("response_time", pa.float64()),
            ("server", pa.int32()),
            ("status", pa.string()),
            *(logged.fields if logged is not None else ()),
        ]
        self.logged = logged
        self.schema = pa.schema(fields, metadata={outputs.MARK: b"jobs"})
        self.writer: pq.ParquetWriter | None = None
        self.finished = False  # the run ended normally: a given path gets the table

    def write(self, st: State) -> None:
        """Write the buffered records (the engine session empties the buffer after)."""
        n = int(st.ctr[K.OUT_N])
        if n:
            self._write(st.out_f[:n], st.out_i[:n])

    def _write(self, f: np.ndarray, i: np.ndarray) -> None:
        columns = {
            "job": i[:, K.O_SEQ],
            "arrival": f[:, K.O_ARRIVAL],
            "job_class": self.class_names[i[:, K.O_CLASS]],
            "work": f[:, K.O_WORK],
        }
        for r, name in enumerate(self.resources):
            columns[f"demand[{name}]"] = f[:, K.O_FIRST_DEMAND + r]
        columns["start"] = f[:, K.O_START]
        columns["finish"] = f[:, K.O_FINISH]
        columns["response_time"] = f[:, K.O_FINISH] - f[:, K.O_ARRIVAL]
        columns["server"] = i[:, K.O_SERVER].astype(np.int32)
        columns["status"] = STATUS_NAMES[i[:, K.O_STATUS]]
        if self.logged is not None:
            columns.update(self.logged.take(i[:, K.O_SEQ]))
        import pyarrow as pa

        self._add(pa.table(columns, schema=self.schema))

    def _add(self, table: pa.Table) -> None:
        if self.writer is None and self.file is None:
            if self.pending_rows + table.num_rows <= MEMORY_ROWS:
                self.pending.append(table)
                self.pending_rows += table.num_rows
                return
            self.path = self.file = _temporary_path()
        try:
            self._open()
            self.writer.write_table(table)
        except OSError as exc:
            raise outputs.failed(self.path, exc) from None

    def _open(self) -> None:
        """The Parquet writer, created on first use with the rows kept so far."""
        if self.writer is None:
            import pyarrow.parquet as pq

            self.writer = pq.ParquetWriter(self.file, self.schema)
            for part in self.pending:
                self.writer.write_table(part)
            self.pending = []

    def finish(self, st: State) -> None:
        """Write what is buffered, then the jobs still present at the end of the run."""
        self.finished = True
        self.write(st)
        present = np.flatnonzero((st.status == K.WAITING) | (st.status == K.RUNNING))
        present = present[np.argsort(st.seq[present])]
        if present.size == 0:
            return
        f = np.empty((present.size, K.O_FIRST_DEMAND + st.demand.shape[1]))
        f[:, K.O_ARRIVAL] = st.arrival[present]
        f[:, K.O_WORK] = st.work[present]
        f[:, K.O_START] = st.t_start[present]
        f[:, K.O_FINISH] = st.t_finish[present]
        f[:, K.O_FIRST_DEMAND :] = st.demand[present]
        i = np.empty((present.size, K.N_OUT_I), dtype=np.int64)
        i[:, K.O_SEQ] = st.seq[present]
        i[:, K.O_CLASS] = st.job_class[present]
        i[:, K.O_SERVER] = st.server[present]
        i[:, K.O_STATUS] = st.status[present]
        self._write(f, i)

    def close(self) -> None:
        """Finish the file (a given path always gets one, even for an empty table, once the run
        ended normally; a failed run leaves the path as it was)."""
        if not self.finished and self.file is not None and self.file != self.path:
            with contextlib.suppress(OSError):  # the run failed already: keep its error
                if self.writer is not None:
                    self.writer.close()
            outputs.discard(self.file)
            return
        try:
            if self.file is not None:
                self._open()
            if self.writer is not None:
                self.writer.close()
        except OSError as exc:
            raise outputs.failed(self.path, exc) from None
        if self.file is not None and self.file != self.path:
            try:
                outputs.commit(self.file, self.path, parquet=True)
            finally:
                outputs.discard(self.file)
            self.file = self.path

    def table(self) -> pa.Table | None:
        """The table when it stayed in memory (None when it went to a file)."""
        if self.writer is not None:
            return None
        import pyarrow as pa

        return pa.concat_tables(self.pending) if self.pending else self.schema.empty_table()


def read_jobs(path: Path) -> pa.Table:
    """The per-job table in arrival order (loads it whole: for analyses of moderate runs)."""
    import pyarrow.parquet as pq

    return pq.read_table(path).sort_by("job")
