"""Input files of a trace: expand paths, decompress gzip on the fly, cut the text into blocks.

A trace may be one file, several files, a directory of parts (Google's
``part-00000-of-00500.csv.gz`` ...) or a glob; parts are read in name order and a reader keeps its
state across them (a task submitted in one part may finish in the next). Gzip is recognized by
its magic bytes, not by the file name, and is decompressed incrementally with ISA-L's
``isal_zlib`` when the ``isal`` package is installed (about twice as fast), else :mod:`zlib`
(multi-member streams included), so a file larger than memory streams through in blocks of whole
lines. A truncated or corrupt gzip stream is not an exception mid-file: the complete lines before
the damage are delivered, the partial last line is dropped and the damage is counted as a
``truncated`` bad row.

Decompression runs in a background thread (both libraries release the GIL), overlapping with
parsing.
"""

from __future__ import annotations

import glob
import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

import numpy as np

from schedlab.workloads.traces.report import ReadReport, TraceError

try:  # ISA-L inflates gzip about twice as fast as zlib, with the same interface
    from isal import isal_zlib as zlib
except ImportError:  # pragma: no cover - depends on the environment
    import zlib  # type: ignore[no-redef]

GZIP_MAGIC = b"\x1f\x8b"
NEWLINE = ord("\n")
READ_SIZE = 1 << 22
BLOCK_SIZE = 1 << 24
COUNT_STEP = 1 << 18

T = TypeVar("T")


@dataclass(frozen=True)
class Block:
    """Whole lines of one input file: ``data`` starts at line ``first_line`` (1-based) and holds
    ``n_lines`` lines (the last one may lack its newline at the end of the file)."""

    path: Path
    data: bytes
    first_line: int
    n_lines: int


def expand_paths(inputs: Iterable[str | Path]) -> list[Path]:
    """Files named by ``inputs``: files as given, directories by their files in name order, globs
    expanded. Raises :class:`TraceError` for a name that matches nothing."""
    paths: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            parts = sorted(c for c in p.iterdir() if c.is_file() and not c.name.startswith("."))
            if not parts:
                raise TraceError(f"{p}: the directory has no files")
            paths.extend(parts)
        elif p.is_file():
            paths.append(p)
        elif any(ch in str(item) for ch in "*?["):
            matches = sorted(Path(m) for m in glob.glob(str(item)) if Path(m).is_file())
            if not matches:
                raise TraceError(f"{item}: no file matches this pattern")
            paths.extend(matches)
        else:
            raise TraceError(f"{p}: no such file")
    if not paths:
        raise TraceError("no input file given")
    return paths


def _raw_chunks(f: IO[bytes]) -> Iterator[bytes]:
    while chunk := f.read(READ_SIZE):
        yield chunk


def _gunzip(f: IO[bytes], state: dict[str, str]) -> Iterator[bytes]:
    """Decompressed pieces of a (possibly multi-member) gzip stream. On damage, stops and sets
    ``state['damage']`` to a description."""
    d = zlib.decompressobj(wbits=31)
    seen_input = False
    for raw in _raw_chunks(f):
        seen_input = True
        data = raw
        while data:
            try:
                out = d.decompress(data)
            except zlib.error as exc:
                state["damage"] = f"corrupt gzip data ({exc})"
                return
            if out:
                yield out
            if d.eof:
                data = d.unused_data
                if data and data.strip(b"\x00"):
                    d = zlib.decompressobj(wbits=31)  # next gzip member
                else:
                    data = b""
            else:
                data = b""
    if seen_input and not d.eof:
        state["damage"] = "truncated gzip stream (the file ends before the end-of-stream marker)"


def _decompressed(path: Path, state: dict[str, str]) -> Iterator[bytes]:
    try:
        f = path.open("rb")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open ({exc.strerror or exc})") from None
    with f:
        if f.read(2) == GZIP_MAGIC:
            f.seek(0)
            yield from _gunzip(f, state)
        else:
            f.seek(0)
            yield from _raw_chunks(f)


def _count_lines(data: bytes) -> int:
    """The number of line ends in ``data``: NumPy compares a slice of :data:`COUNT_STEP` bytes
    at a time into a mask that stays in the cache (3x as fast as ``bytes.count`` on a 16 MB
    block, 1.6x as fast as one comparison over the whole block), without holding the GIL."""
    a = np.frombuffer(data, np.uint8)
    mask = np.empty(min(a.size, COUNT_STEP), bool)
    n = 0
    for start in range(0, a.size, COUNT_STEP):
        part = a[start : start + COUNT_STEP]
        np.equal(part, NEWLINE, out=mask[: part.size])
        n += int(np.count_nonzero(mask[: part.size]))
    return n


def _blocks_of(path: Path, block_size: int, state: dict[str, str]) -> Iterator[Block]:
    """Blocks of whole lines; at the end, ``state`` says whether the stream was damaged."""
    pending: list[bytes] = []
    size = 0
    line = 1
    for piece in _decompressed(path, state):
        pending.append(piece)
        size += len(piece)
        if size < block_size:
            continue
        cut = piece.rfind(b"\n") + 1
        if cut == 0:  # no line end in this piece: the block ends in a later one
            continue
        # one copy: the pieces up to the last line end, joined
        block = b"".join([*pending[:-1], memoryview(piece)[:cut]])
        n = _count_lines(block)
        yield Block(path, block, line, n)
        line += n
        rest = piece[cut:]
        pending, size = ([rest], len(rest)) if rest else ([], 0)
    tail = b"".join(pending)
    if not tail:
        state["next_line"] = str(line)
        return
    if "damage" in state:  # a partial last line of a damaged stream is not data
        cut = tail.rfind(b"\n") + 1
        if cut:
            n = _count_lines(tail[:cut])
            yield Block(path, tail[:cut], line, n)
            line += n
        state["next_line"] = str(line)
        state["partial"] = "1" if tail[cut:] else ""
        return
    n = _count_lines(tail) + (0 if tail.endswith(b"\n") else 1)
    yield Block(path, tail, line, n)
    state["next_line"] = str(line + n)


def prefetched(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Iterate ``items`` in a background thread, ``depth`` items ahead."""
    q: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put(("item", item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(("end", None))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            q.put(("error", exc))

    thread = threading.Thread(target=work, name="schedlab-trace-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise value  # type: ignore[misc]
            yield value  # type: ignore[misc]
    finally:
        stop.set()
        thread.join(timeout=5)


def iter_blocks(
    paths: Iterable[Path], report: ReadReport, *, block_size: int = BLOCK_SIZE
) -> Iterator[Block]:
    """Blocks of whole lines from each file in turn; damage is counted in ``report``."""
    for path in paths:
        state: dict[str, str] = {}
        yield from prefetched(_blocks_of(path, block_size, state))
        if "damage" in state:
            line = int(state.get("next_line", "1"))
            lost = " and its partial last line was dropped" if state.get("partial") else ""
            report.bad_row(
                "truncated",
                path,
                line,
                f"{state['damage']}; {line - 1:,} complete lines were read{lost}",
            )


def split_lines(block: Block) -> list[bytes]:
    """The lines of a block without their line ends (``\\r\\n`` tolerated)."""
    lines = block.data.split(b"\n")
    if block.data.endswith(b"\n"):
        lines.pop()
    return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
