"""The result store: one Parquet file per finished run, queryable as one table with DuckDB.

``DIR/runs/<spec_hash>.parquet`` is written to a temporary name and renamed into place, so a run is
either wholly stored or absent: killing the process at any moment loses at most the runs in
flight, and rerunning skips every stored hash (no run lost or duplicated). The store is only ever
added to; it never deletes or rewrites a stored run.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.errors import SchedlabError

RUNS = "runs"


class StoreError(SchedlabError):
    """The result directory is unusable (unwritable, or holds a corrupted file)."""


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
        return sorted(self.runs.glob("*.parquet")) if self.runs.is_dir() else []

    def _corrupted(self, path: Path, exc: Exception) -> StoreError:
        return StoreError(
            f"{path}: corrupted result file ({exc}); move it out of {self.runs} to rerun that "
            "run (nothing else was touched)"
        )

    def done(self) -> set[str]:
        """Hashes of the stored runs; every file is checked to be readable Parquet."""
        hashes = set()
        for path in self.files():
            try:
                pq.read_metadata(path)
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._corrupted(path, exc) from None
            hashes.add(path.stem)
        return hashes

    def has(self, spec_hash: str) -> bool:
        """Whether the run is stored (its file exists; written atomically, so it is whole)."""
        return (self.runs / f"{spec_hash}.parquet").is_file()

    def write(self, row: dict[str, Any]) -> Path:
        self.runs.mkdir(parents=True, exist_ok=True)
        final = self.runs / f"{row['spec_hash']}.parquet"
        tmp = self.runs / f".{row['spec_hash']}.{uuid.uuid4().hex}.tmp"
        pq.write_table(pa.Table.from_pylist([row]), tmp)
        os.replace(tmp, final)
        return final

    def read(self, hashes: list[str] | None = None) -> list[dict[str, Any]]:
        """Stored rows (all, or those of the given hashes in that order)."""
        paths = self.files() if hashes is None else [self.runs / f"{h}.parquet" for h in hashes]
        rows = []
        for path in paths:
            try:
                rows.append(pq.read_table(path).to_pylist()[0])
            except (pa.ArrowInvalid, OSError) as exc:
                raise self._corrupted(path, exc) from None
        return rows

    def connect(self):
        """A DuckDB connection with the stored runs as the view ``runs``."""
        import duckdb

        self.done()  # fail clearly on a corrupted file before DuckDB does
        con = duckdb.connect()
        if self.files():
            pattern = str(self.runs / "*.parquet").replace("'", "''")
            con.execute(
                f"CREATE VIEW runs AS SELECT * FROM read_parquet('{pattern}', union_by_name=true)"
            )
        else:
            con.execute("CREATE VIEW runs AS SELECT NULL::VARCHAR AS spec_hash WHERE false")
        return con
