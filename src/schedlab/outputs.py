"""Safe output paths and writes: every file schedlab writes goes through this module.

* A target that exists must be a regular file, never a symbolic link, a directory or a device;
  a Parquet target that exists must be a Parquet file schedlab wrote (its schema metadata has a
  key starting with ``schedlab``), so a user's file is never replaced by a table.
* Files are written to a temporary name beside the target and renamed over it at the end, so a
  failed write (full disk, read-only file system) leaves the previous file intact.
* Paths inside a result folder (:func:`inside`) are relative, never contain ``..`` and never pass
  through a symbolic link, for reading as for writing.
* Every failure is an :class:`OutputError`: one line naming the path (docs/guarantees.md#files).
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError

MARK = b"schedlab.output"  # Parquet schema metadata key of the tables schedlab writes


class OutputError(SchedlabError):
    """A file cannot be written (or read) where it was asked; the message names it."""


def failed(path: Path, exc: OSError) -> OutputError:
    """The one-line error of an OSError on ``path`` (pyarrow's strerror is a whole message)."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return OutputError(f"{path}: cannot write ({reason})")


def written_by_schedlab(path: Path) -> bool:
    """Whether ``path`` is a Parquet file whose schema schedlab marked."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(path).metadata or {}
    except Exception:  # not Parquet at all (pyarrow raises several kinds)
        return False
    return any(key.startswith(b"schedlab") for key in metadata)


def check_target(path: Path, *, parquet: bool = False) -> Path:
    """``path`` if schedlab may write it: its folder exists; it is absent or a regular file (and,
    with ``parquet``, a Parquet file schedlab wrote); it is no symbolic link."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise OutputError(f"{path}: directory {path.parent} does not exist") from None
        return path
    except OSError as exc:
        raise failed(path, exc) from None
    if stat.S_ISLNK(mode):
        raise OutputError(f"{path}: is a symbolic link; schedlab does not write through links")
    if stat.S_ISDIR(mode):
        raise OutputError(f"{path}: is a directory; give a file name")
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: is not a regular file; schedlab does not replace it")
    if parquet and not written_by_schedlab(path):
        raise OutputError(
            f"{path}: exists and is not a Parquet file schedlab wrote; remove it or choose "
            "another name"
        )
    return path


def check_writable(path: Path, *, parquet: bool = False) -> Path:
    """:func:`check_target`, and a temporary file can be made beside ``path`` (a read-only or
    full file system is said before a long computation, not after it)."""
    check_target(path, parquet=parquet)
    tmp = temporary(Path(path))
    try:
        tmp.open("xb").close()
    except OSError as exc:
        raise failed(Path(path), exc) from None
    finally:
        discard(tmp)
    return Path(path)


def temporary(path: Path) -> Path:
    """A fresh temporary name beside ``path``: hidden and ending in ``.tmp``, so no listing of
    outputs (``runs/*.parquet``) ever sees one, even one a killed process left behind."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")


def commit(tmp: Path, path: Path, *, parquet: bool = False) -> None:
    """Rename the finished ``tmp`` over ``path`` (checked again just before)."""
    check_target(path, parquet=parquet)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        raise failed(path, exc) from None


@contextmanager
def atomic(path: Path, *, parquet: bool = False) -> Iterator[Path]:
    """``with atomic(p) as tmp: write tmp`` writes ``p`` wholly or not at all (OutputError)."""
    path = check_target(Path(path), parquet=parquet)
    tmp = temporary(path)
    try:
        yield tmp
        commit(tmp, path, parquet=parquet)
    except OSError as exc:
        raise failed(path, exc) from None
    finally:
        discard(tmp)


def discard(tmp: Path) -> None:
    """Remove a temporary file if it is there (a read-only folder never had it)."""
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> Path:
    with atomic(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def marked(table: Any) -> Any:
    """The table with schedlab's mark in its schema metadata (see :func:`written_by_schedlab`)."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), MARK: b"1"})


def write_parquet(table: Any, path: Path, *, in_memory: bool = False, **options: Any) -> Path:
    """Write a pyarrow table to ``path`` (marked as schedlab's); ``options`` go to
    ``pyarrow.parquet.write_table``. ``in_memory``: build the file in memory and write it in one
    call, for a small table (the writer otherwise makes a system call per column chunk: a tenth
    of the time of a run record's write; issue 33 item 2)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic(path, parquet=True) as tmp:
        if in_memory:
            sink = pa.BufferOutputStream()
            pq.write_table(marked(table), sink, **options)
            tmp.write_bytes(sink.getvalue())
        else:
            pq.write_table(marked(table), tmp, **options)
    return Path(path)


def make_dirs(path: Path) -> Path:
    """``mkdir -p`` with one-line errors (a read-only file system, a file in the way)."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the directory ({exc.strerror or exc})") from None
    return Path(path)


def inside(root: Path, relative: str | Path) -> Path:
    """``root/relative``, refused (OutputError) when ``relative`` is absolute, contains ``..``
    or passes through a symbolic link below ``root``."""
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise OutputError(f"{relative}: not a path inside {root} (no absolute path, no '..')")
    path = Path(root)
    for part in rel.parts:
        path = path / part
        if path.is_symlink():
            raise OutputError(f"{path}: is a symbolic link; schedlab does not follow links")
    return path


def read_bytes_inside(root: Path, relative: str | Path) -> bytes:
    """The bytes of the regular file ``root/relative`` (checked by :func:`inside`)."""
    path = inside(root, relative)
    try:
        with open(path, "rb", opener=_no_follow) as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OutputError(f"{path}: not a regular file")
            return fh.read()
    except OSError as exc:
        raise OutputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_text_inside(root: Path, relative: str | Path) -> str:
    return read_bytes_inside(root, relative).decode("utf-8", errors="replace")


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
