"""Parse blocks of comma-separated lines into NumPy columns: Arrow's reader, an exact fallback.

Each block of whole lines (:mod:`.source`) goes to Arrow's CSV reader (``pyarrow.csv``), which
tokenizes every field but converts only the columns a format uses. The result is taken only when
the block parses cleanly and yields one row per line; otherwise (a row with the wrong number of
fields, a non-numeric or non-finite value (``nan``, ``inf``, ``1e400``: never let into a table),
an empty required field, a blank line) the block is parsed again line by line, so that each bad
row is counted with its file, line and field and the good rows around it are kept. A malformed
row therefore costs one slow block, never the rest of the file. Arrow was measured against
DuckDB's ``read_csv`` (docs/traces.md, "Performance"): on blocks already in memory it is as fast
as the former compiled parser, and it works on a block, which the line-locating fallback needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from schedlab.workloads.traces.report import ReadReport
from schedlab.workloads.traces.source import Block, split_lines

Kind = Literal["int", "float", "str"]
MISSING_INT = -1
ARROW_BLOCK = 1 << 20


@dataclass(frozen=True)
class Col:
    """One column to extract: output ``name``, 0-based position ``index``, type, and whether an
    empty value makes the row bad (``required``) or becomes missing (NaN, -1 or None)."""

    name: str
    index: int
    kind: Kind
    label: str
    required: bool = True


@dataclass(frozen=True)
class Layout:
    """The shape of a CSV table: its number of fields and the columns to extract."""

    n_fields: int
    cols: tuple[Col, ...]
    quoted: bool = False


@dataclass
class Parsed:
    """Columns of the good rows of a block, and the line number of each row."""

    columns: dict[str, np.ndarray | pa.Array]  # str columns are Arrow string arrays
    lines: np.ndarray

    def __len__(self) -> int:
        return int(self.lines.shape[0])


_ARROW = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}


def _fast(data: bytes, layout: Layout, expected: int) -> dict[str, np.ndarray | pa.Array] | None:
    names = [f"f{i}" for i in range(layout.n_fields)]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            # 1 MB blocks on Arrow's threads: every core parses while a block is converted
            # (docs/traces.md, "Performance and memory")
            read_options=pacsv.ReadOptions(
                column_names=names, block_size=ARROW_BLOCK, use_threads=True
            ),
            parse_options=pacsv.ParseOptions(quote_char='"' if layout.quoted else False),
            convert_options=pacsv.ConvertOptions(
                include_columns=[names[c.index] for c in layout.cols],
                column_types={names[c.index]: _ARROW[c.kind] for c in layout.cols},
                strings_can_be_null=True,
                null_values=[""],  # "nan", "NA" ... are values (then bad ones), not gaps
            ),
        )
    except pa.ArrowInvalid:
        return None
    if table.num_rows != expected:
        return None
    out: dict[str, np.ndarray | pa.Array] = {}
    for c in layout.cols:
        col = table.column(names[c.index])
        if c.required and col.null_count:
            return None
        if c.kind == "float":
            values = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
            if values.size - np.count_nonzero(np.isfinite(values)) != col.null_count:
                return None  # a non-finite number (nulls are NaN): the careful path names it
            out[c.name] = values
        elif c.kind == "int":
            if col.null_count:
                col = col.fill_null(MISSING_INT)
            out[c.name] = col.to_numpy(zero_copy_only=False)
        else:
            out[c.name] = col.combine_chunks()
    return out


def _convert(raw: bytes, kind: Kind) -> float | int | str:
    text = raw.strip()
    if kind == "int":
        value = int(text)
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"{value} does not fit in 64 bits")
        return value
    if kind == "float":
        return float(text)
    return text.decode("utf-8", errors="replace")


def _slow(block: Block, layout: Layout, skip: int, report: ReadReport) -> Parsed:
    values: dict[str, list] = {c.name: [] for c in layout.cols}
    lines: list[int] = []
    for offset, raw in enumerate(split_lines(block)):
        if offset < skip or not raw.strip():
            continue
        line = block.first_line + offset
        fields = _split(raw, layout.quoted)
        if len(fields) != layout.n_fields:
            report.bad_row(
                "field_count",
                block.path,
                line,
                f"{len(fields)} fields, expected {layout.n_fields}",
            )
            continue
        row: dict[str, float | int | str | None] = {}
        ok = True
        for c in layout.cols:
            raw_value = fields[c.index]
            if not raw_value.strip():
                if c.required:
                    report.bad_row("missing_value", block.path, line, "empty", field_name=_label(c))
                    ok = False
                    break
                row[c.name] = {"int": MISSING_INT, "float": np.nan, "str": None}[c.kind]
                continue
            try:
                row[c.name] = value = _convert(raw_value, c.kind)
                if c.kind == "float" and not math.isfinite(value):  # type: ignore[arg-type]
                    shown = raw_value.strip()[:40].decode("utf-8", errors="replace")
                    report.bad_row(
                        "bad_value",
                        block.path,
                        line,
                        f"{shown!r} is not a finite number",
                        field_name=_label(c),
                    )
                    ok = False
                    break
            except ValueError:
                shown = raw_value.strip()[:40].decode("utf-8", errors="replace")
                report.bad_row(
                    "not_numeric",
                    block.path,
                    line,
                    f"{shown!r} is not a number",
                    field_name=_label(c),
                )
                ok = False
                break
        if not ok:
            continue
        for name, v in row.items():
            values[name].append(v)
        lines.append(line)
    columns: dict[str, np.ndarray | pa.Array] = {}
    for c in layout.cols:
        if c.kind == "int":
            columns[c.name] = np.array(values[c.name], dtype=np.int64)
        elif c.kind == "float":
            columns[c.name] = np.array(values[c.name], dtype=np.float64)
        else:
            columns[c.name] = pa.array(values[c.name], pa.string())
    return Parsed(columns, np.array(lines, dtype=np.int64))


def _label(c: Col) -> str:
    return f"field {c.index + 1} ({c.label})"


def _split(raw: bytes, quoted: bool) -> list[bytes]:
    if not quoted or b'"' not in raw:
        return raw.split(b",")
    import csv

    try:
        row = next(csv.reader([raw.decode("utf-8", errors="replace")]), [])
    except csv.Error:  # a stray CR or NUL byte: not a CSV row, count its fields as they are
        return raw.split(b",")
    return [f.encode() for f in row]


def _empty(layout: Layout) -> Parsed:
    columns: dict[str, np.ndarray | pa.Array] = {}
    for c in layout.cols:
        if c.kind == "str":
            columns[c.name] = pa.array([], pa.string())
        else:
            columns[c.name] = np.empty(0, np.int64 if c.kind == "int" else np.float64)
    return Parsed(columns, np.empty(0, np.int64))


def parse_block(block: Block, layout: Layout, report: ReadReport, *, skip: int = 0) -> Parsed:
    """The good rows of ``block`` (after its first ``skip`` lines, e.g. a header)."""
    data = block.data
    if skip:
        cut = 0
        for _ in range(skip):
            cut = data.find(b"\n", cut) + 1
            if cut == 0:
                return _empty(layout)
        data = data[cut:]
    expected = block.n_lines - skip
    if expected <= 0:
        return _empty(layout)
    fast = _fast(data, layout, expected)
    if fast is not None:
        first = block.first_line + skip
        return Parsed(fast, np.arange(first, first + expected, dtype=np.int64))
    return _slow(block, layout, skip, report)
