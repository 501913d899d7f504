"""Parse blocks of comma-separated lines into NumPy columns: a compiled scanner for plain numbers,
Arrow's reader, an exact fallback.

A block of a layout whose columns are all numbers (Google's ``task_events``: a 10^8-row log is
mostly such blocks) is first scanned by one compiled loop that takes only the plain case, every
line with the right number of unquoted fields, integers of at most 19 digits and decimals whose
significand is below 2^53 and whose decimal exponent is at most 22 in size (Clinger's fast path:
one exact division or multiplication, so the value is the correctly rounded one, bit for bit what
Arrow's parser gives); at the first anything else it gives the block up. Then each block goes to
Arrow's CSV reader (``pyarrow.csv``), which
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
from numba import config as numba_config

from schedlab._jit import kernel
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
            # 1 MB blocks on one thread: fastest measured (the other core inflates gzip)
            read_options=pacsv.ReadOptions(
                column_names=names, block_size=ARROW_BLOCK, use_threads=False
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
            if col.null_count != np.isnan(values).sum() or np.isinf(values).any():
                return None  # a non-finite number: the careful path names it
            out[c.name] = values
        elif c.kind == "int":
            if col.null_count:
                col = col.fill_null(MISSING_INT)
            out[c.name] = col.to_numpy(zero_copy_only=False)
        else:
            out[c.name] = col.combine_chunks()
    return out


COMMA, NEWLINE, MINUS, PLUS, DOT, ZERO, NINE = (ord(c) for c in ",\n-+.09")
LOWER_E, UPPER_E = ord("e"), ord("E")
EXACT = np.uint64(1 << 53)  # significands below it are exact doubles
MAX_INT = np.uint64(2**63 - 1)
POW10 = np.array([float(10**k) for k in range(23)])  # exact doubles


@kernel(nogil=True)
def _scan_numbers(data, n_fields, slot, is_float, required, out_i, out_f, expected):
    """Parse ``expected`` lines of unquoted numbers from the bytes ``data``: field ``f`` goes to
    row ``slot[f]`` of ``out_f`` (``is_float[f]``) or ``out_i``, or nowhere (-1); an empty field
    is NaN or -1 unless ``required[f]``. Returns False at the first thing the plain case does not
    cover (the caller then reads the block with Arrow)."""
    n = data.shape[0]
    pos = 0
    for line in range(expected):
        f = 0
        while True:
            if f >= n_fields:
                return False
            s = slot[f]
            if s < 0:
                while pos < n and data[pos] != COMMA and data[pos] != NEWLINE:
                    pos += 1
            elif pos >= n or data[pos] == COMMA or data[pos] == NEWLINE:
                if required[f]:
                    return False
                if is_float[f]:
                    out_f[s, line] = np.nan
                else:
                    out_i[s, line] = -1
            else:
                negative = data[pos] == MINUS
                if negative:
                    pos += 1
                value = np.uint64(0)
                digits = 0
                while pos < n and ZERO <= data[pos] <= NINE:
                    value = value * np.uint64(10) + np.uint64(data[pos] - ZERO)
                    digits += 1
                    pos += 1
                    if digits > 19 or (is_float[f] and value >= EXACT):
                        return False
                if digits == 0:
                    return False
                if not is_float[f]:
                    if value > MAX_INT:
                        return False
                    out_i[s, line] = -np.int64(value) if negative else np.int64(value)
                else:
                    exponent = 0
                    if pos < n and data[pos] == DOT:
                        pos += 1
                        while pos < n and ZERO <= data[pos] <= NINE:
                            value = value * np.uint64(10) + np.uint64(data[pos] - ZERO)
                            exponent -= 1
                            pos += 1
                            if value >= EXACT:
                                return False
                    if pos < n and (data[pos] == LOWER_E or data[pos] == UPPER_E):
                        pos += 1
                        sign = 1
                        if pos < n and (data[pos] == MINUS or data[pos] == PLUS):
                            sign = -1 if data[pos] == MINUS else 1
                            pos += 1
                        e = 0
                        e_digits = 0
                        while pos < n and ZERO <= data[pos] <= NINE and e_digits < 4:
                            e = e * 10 + (data[pos] - ZERO)
                            e_digits += 1
                            pos += 1
                        if e_digits == 0:
                            return False
                        exponent += sign * e
                    if exponent < -22 or exponent > 22:
                        return False
                    x = np.float64(value)
                    x = x / POW10[-exponent] if exponent < 0 else x * POW10[exponent]
                    out_f[s, line] = -x if negative else x
            if pos < n and data[pos] == COMMA:
                pos += 1
                f += 1
                continue
            if pos < n and data[pos] != NEWLINE:
                return False  # anything else after a number
            if f != n_fields - 1:
                return False
            pos += 1
            break
    return pos >= n


def _numeric(layout: Layout) -> bool:
    return not layout.quoted and all(c.kind != "str" for c in layout.cols)


def _scanned(data: bytes, layout: Layout, expected: int) -> dict[str, np.ndarray] | None:
    """The columns of a block of plain numbers (:func:`_scan_numbers`), or None."""
    slot = np.full(layout.n_fields, -1, np.int64)
    is_float = np.zeros(layout.n_fields, np.bool_)
    required = np.zeros(layout.n_fields, np.bool_)
    ints = [c for c in layout.cols if c.kind == "int"]
    floats = [c for c in layout.cols if c.kind == "float"]
    for group, flag in ((ints, False), (floats, True)):
        for k, c in enumerate(group):
            slot[c.index], is_float[c.index], required[c.index] = k, flag, c.required
    out_i = np.empty((len(ints), expected), np.int64)
    out_f = np.empty((len(floats), expected), np.float64)
    buffer = np.frombuffer(data, np.uint8)
    if not _scan_numbers(buffer, layout.n_fields, slot, is_float, required, out_i, out_f, expected):
        return None
    columns = {c.name: out_i[k] for k, c in enumerate(ints)}
    columns.update({c.name: out_f[k] for k, c in enumerate(floats)})
    return columns  # type: ignore[return-value]


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
    fast = None
    if _numeric(layout) and not numba_config.DISABLE_JIT:
        fast = _scanned(data, layout, expected)
    if fast is None:
        fast = _fast(data, layout, expected)
    if fast is not None:
        first = block.first_line + skip
        return Parsed(fast, np.arange(first, first + expected, dtype=np.int64))
    return _slow(block, layout, skip, report)
