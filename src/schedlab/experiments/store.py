"""The result store: one Parquet file per finished run, queryable as one table with DuckDB.

``DIR/runs/<spec_hash>.parquet`` is written to a temporary name and renamed into place, so a run is
either wholly stored or absent: killing the process at any moment loses at most the runs in
flight, and rerunning skips every stored hash (no run lost or duplicated). The store is only ever
added to; it never deletes or rewrites a stored run. A file of ``runs/`` that is not a run of the
store (a link, a copy under another name, a foreign table: its ``spec_hash`` is not its name) is
refused in one line, never counted. Queries see the runs as an in-memory table: DuckDB gets no
path (so no glob of the folder's name) and runs them with external access disabled.
"""

from __future__ import annotations

import stat
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schedlab import outputs
from schedlab.errors import SchedlabError

RUNS = "runs"
# A record is one row: column statistics, dictionaries and compression only cost time there (a
# quarter of the write of a 120-column record; issue 33 item 2, the per-run overhead of a sweep).
RECORD_OPTIONS = {"write_statistics": False, "use_dictionary": False, "compression": "none"}


class StoreError(SchedlabError):
    """The result directory is unusable (unwritable, or holds a corrupted file)."""


def record_table(row: dict[str, Any]) -> pa.Table:
    """A run's record as the one-row table the store writes: the table of
    ``pa.Table.from_pylist([row])``, built from Arrow buffers (:func:`_cell`), because
    ``pa.array`` imports pandas on the first call of a process (0.35 s in the warm-up of every
    sweep, or in each worker's first run without it; issue 33 item 2) and a record holds only
    plain scalars."""
    return pa.Table.from_arrays([_cell(value) for value in row.values()], names=list(row))


INT64 = (-(2**63), 2**63 - 1)
PACKED = {int: (pa.int64(), "<q"), float: (pa.float64(), "<d")}  # one value, little-endian


def _cell(value: Any) -> pa.Array:
    """A one-value column of ``value`` typed as PyArrow infers it (None: null, bool, int: int64,
    float: double, str: string); any other value (a numpy scalar, an int beyond int64) goes
    through ``pa.array``."""
    kind = type(value)
    if value is None:
        return pa.nulls(1)
    if kind is bool:
        return pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(bytes([value]))])
    if kind is str:
        data = value.encode()
        offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
        return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])
    if kind in PACKED and (kind is float or INT64[0] <= value <= INT64[1]):
        arrow_type, layout = PACKED[kind]
        data = pa.py_buffer(struct.pack(layout, value))
        return pa.Array.from_buffers(arrow_type, 1, [None, data])
    return pa.array([value])


def read_run(path: Path, columns: list[str] | None = None) -> pa.Table:
    """A run's file as a table. Through ``pq.ParquetFile``: ``pq.read_table`` imports pyarrow's
    dataset module and pandas (0.35 s before the workers of a sweep that resumes could start)."""
    with pq.ParquetFile(path) as run:
        return run.read(columns=columns)


class ResultStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.runs = self.root / RUNS

    def ensure_writable(self) -> None:
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
            probe = self.runs / f".probe-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StoreError(f"{self.root}: cannot write results here ({exc.strerror})") from None

    def files(self) -> list[Path]:
        if self.runs.is_symlink():
            raise self._foreign(self.runs, "a symbolic link")
        if not self.runs.is_dir():
            return []
        # ".*": temporary files of writes in flight (or of a killed process), never runs
        return sorted(p for p in self.runs.glob("*.parquet") if not p.name.startswith("."))

    def _corrupted(self, path: Path, exc: Exception) -> StoreError:
        return StoreError(
            f"{path}: corrupted result file ({exc}); move it out of {self.runs} to rerun that "
            "run (nothing else was touched)"
        )

    def _foreign(self, path: Path, what: str) -> StoreError:
        return StoreError(
            f"{path}: not a run of this store ({what}); move it out of {self.runs} (nothing was "
            "read from it)"
        )

    def _checked(self, path: Path) -> None:
        """Refuse a file that is not a run stored here: a link, not one row, or a ``spec_hash``
        that is not its name (a copy or a foreign table, which would count as a run)."""
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                raise self._foreign(path, "not a regular file")
            if "spec_hash" not in pq.read_schema(path).names:
                raise self._foreign(path, "no spec_hash column")
            table = read_run(path, columns=["spec_hash"])
        except (pa.ArrowInvalid, OSError) as exc:
            raise self._corrupted(path, exc) from None
        if table.num_rows != 1 or table.column(0)[0].as_py() != path.stem:
            raise self._foreign(path, "its spec_hash is not its file name")

    def done(self) -> set[str]:
        """Hashes of the stored runs; every file is checked to be one run of this store."""
        hashes = set()
        for path in self.files():
            self._checked(path)
            hashes.add(path.stem)
        return hashes

    def has(self, spec_hash: str) -> bool:
        """Whether the run is stored (its file exists; written atomically, so it is whole)."""
        return (self.runs / f"{spec_hash}.parquet").is_file()

    def write(self, row: dict[str, Any]) -> Path:
        """Store a run (atomically; a full disk or a read-only folder is one line)."""
        outputs.make_dirs(self.runs)
        final = outputs.inside(self.root, f"{RUNS}/{row['spec_hash']}.parquet")
        return outputs.write_parquet(record_table(row), final, in_memory=True, **RECORD_OPTIONS)

    def read(self, hashes: list[str] | None = None) -> list[dict[str, Any]]:
        """Stored rows (all, or those of the given hashes in that order)."""
        paths = self.files() if hashes is None else [self.runs / f"{h}.parquet" for h in hashes]
        rows = []
        for path in paths:
            self._checked(path)
            try:
                rows.append(read_run(path).to_pylist()[0])
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._corrupted(path, exc) from None
        return rows

    def connect(self):
        """A DuckDB connection with the stored runs as the view ``runs`` and no access to any file
        (queries are the user's: ``COPY ... TO``, ``read_csv`` and extensions are refused)."""
        import duckdb

        self.done()  # fail clearly on a corrupted or foreign file before reading
        tables = [pq.read_table(path) for path in self.files()]
        con = duckdb.connect(
            config={
                "enable_external_access": False,
                "autoinstall_known_extensions": False,
                "autoload_known_extensions": False,
                "lock_configuration": True,
            }
        )
        if tables:
            try:
                runs = pa.concat_tables(tables, promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise StoreError(f"{self.runs}: the runs' columns disagree ({exc})") from None
            con.register("stored_runs", runs)
            con.execute("CREATE VIEW runs AS SELECT * FROM stored_runs")
        else:
            con.execute("CREATE VIEW runs AS SELECT NULL::VARCHAR AS spec_hash WHERE false")
        return con
