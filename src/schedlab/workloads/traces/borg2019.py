"""Google Borg cluster traces 2019 (clusterdata v3): ``instance_events`` and ``machine_events``.

Format ("Google cluster-usage traces v3" and ``clusterdata_trace_format_v3.proto`` in
https://github.com/google/cluster-data): the tables live in BigQuery and are read here as exports,
either JSON lines (BigQuery's JSON export; 64-bit integers may be quoted strings) or CSV with a
header row (nested fields flattened as ``resource_request.cpus`` or ``resource_request_cpus``).
Times are microseconds since the trace start (0 = before the window, 2**63 - 1 = after it).
``instance_events`` fields used: ``time``, ``type`` (SUBMIT=0, QUEUE=1, ENABLE=2, SCHEDULE=3,
EVICT=4, FAIL=5, FINISH=6, KILL=7, LOST=8, UPDATE_PENDING=9, UPDATE_RUNNING=10),
``collection_id``, ``instance_index``, ``collection_type`` (0 = job, 1 = alloc set),
``priority``, ``scheduling_class`` and ``resource_request {cpus, memory}`` (normalized compute
and memory units, the largest machine being 1).

Tasks are built exactly as for 2011 (:mod:`.lifecycle`): SUBMIT, (QUEUE, ENABLE,) SCHEDULE,
FINISH without eviction, failure, kill or loss. Instances of alloc sets are reservations, not
tasks; their events are dropped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from schedlab.workloads.traces import lifecycle
from schedlab.workloads.traces.base import TraceReader, report_bad_codes
from schedlab.workloads.traces.google2011 import MICROSECONDS, machines_at, tasks_to_table
from schedlab.workloads.traces.report import ReadReport, TraceError
from schedlab.workloads.traces.source import Block, iter_blocks, split_lines

INT_FIELDS = ("time", "type", "collection_id", "instance_index")
OPTIONAL_INT = ("priority", "scheduling_class", "collection_type")
ALIASES = {
    "cpus": ("resource_request.cpus", "resource_request_cpus", "cpus"),
    "memory": ("resource_request.memory", "resource_request_memory", "memory"),
}
ALLOC_SET = 1
INT64_LIMIT = 2**63


def _int_column(table: pa.Table, name: str) -> np.ndarray | None:
    """An int64 column (quoted integers parsed); None if it does not parse."""
    if name not in table.column_names:
        return None
    col = table.column(name)
    try:
        if not pa.types.is_integer(col.type):
            col = pc.cast(col, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return col.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _float_column(table: pa.Table, names: tuple[str, ...]) -> np.ndarray:
    for name in names:
        if name in table.column_names:
            col = table.column(name)
            try:
                col = pc.cast(col, pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                break
            return col.fill_null(np.nan).to_numpy(zero_copy_only=False)
    return np.full(table.num_rows, np.nan)


def _bad_request(table: pa.Table, names: tuple[str, ...]) -> bool:
    """Whether the first of ``names`` present holds a value that is not a number or a NaN
    written in the file (bad values, which the careful path counts row by row), as opposed to a
    null (a missing value, NaN in :func:`_float_column`)."""
    name = next((n for n in names if n in table.column_names), None)
    if name is None:
        return False
    try:
        col = pc.cast(table.column(name), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return True
    return bool(pc.any(pc.is_nan(col)).as_py())


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _fast_columns(table: pa.Table) -> dict[str, np.ndarray] | None:
    table = _flatten(table)
    out: dict[str, np.ndarray] = {}
    for name in INT_FIELDS:
        col = _int_column(table, name)
        if col is None or ((col == -1).any() and name != "type"):
            return None
        out[name] = col
    for name in OPTIONAL_INT:
        col = _int_column(table, name)
        out[name] = np.full(table.num_rows, -1, np.int64) if col is None else col
    for key, names in ALIASES.items():
        out[key] = _float_column(table, names)
        if np.isinf(out[key]).any() or _bad_request(table, names):
            # the careful path counts each non-finite request as a bad row with its line
            return None
    return out


def _plain(value: Any) -> Any:
    """A JSON/CSV value as a number may be given: a number, or a string of ASCII characters
    (Python's int() and float() also take other scripts' digits, which no export writes)."""
    if isinstance(value, bool) or (isinstance(value, str) and not value.isascii()):
        raise ValueError(value)
    return value


def _row_value(row: dict[str, Any], name: str) -> Any:
    if name in row:
        return row[name]
    head, _, tail = name.partition(".")
    if tail and isinstance(row.get(head), dict):
        return row[head].get(tail)
    return None


class Borg2019(TraceReader):
    name = "borg2019"
    title = "Google Borg 2019 (clusterdata v3) instance_events, JSON lines or CSV export"
    reference = "Wilkes et al., Google cluster-usage traces v3 (2020), clusterdata_trace_format_v3"
    resources = ("cpu", "memory")
    units: ClassVar[dict[str, str]] = {
        "cpu": "normalized compute units",
        "memory": "normalized memory units",
    }
    default_capacity: ClassVar[dict[str, float]] = {"cpu": 1.0, "memory": 1.0}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._csv_names: list[str] | None = None

    def _parse_json_fast(self, block: Block) -> dict[str, np.ndarray] | None:
        try:
            table = pajson.read_json(pa.py_buffer(block.data))
        except pa.ArrowInvalid:
            return None
        if table.num_rows != block.n_lines:
            return None
        return _fast_columns(table)

    def _parse_csv_fast(self, block: Block, skip: int) -> dict[str, np.ndarray] | None:
        data = block.data
        if skip:
            data = data[data.find(b"\n") + 1 :]
        try:
            table = pacsv.read_csv(
                pa.py_buffer(data),
                read_options=pacsv.ReadOptions(column_names=self._csv_names),
                # only an empty field is missing: "nan" or "NA" is a bad value (careful path)
                convert_options=pacsv.ConvertOptions(null_values=[""]),
            )
        except pa.ArrowInvalid:
            return None
        if table.num_rows != block.n_lines - skip:
            return None
        return _fast_columns(table)

    def _parse_slow(
        self, block: Block, csv: bool, skip: int
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        import csv as csvmod

        rows: dict[str, list] = {k: [] for k in (*INT_FIELDS, *OPTIONAL_INT, *ALIASES)}
        lines: list[int] = []
        for offset, raw in enumerate(split_lines(block)):
            if offset < skip or not raw.strip():
                continue
            line = block.first_line + offset
            text = raw.decode("utf-8", errors="replace")
            if csv:
                assert self._csv_names is not None
                try:
                    values = next(csvmod.reader([text]), [])
                except csvmod.Error:  # a stray CR or NUL byte
                    values = text.split(",")
                if len(values) != len(self._csv_names):
                    self.report.bad_row(
                        "field_count",
                        block.path,
                        line,
                        f"{len(values)} fields, expected {len(self._csv_names)}",
                    )
                    continue
                row: dict[str, Any] = {
                    k: (v if v != "" else None)
                    for k, v in zip(self._csv_names, values, strict=True)
                }
            else:
                try:
                    row = json.loads(text)
                except json.JSONDecodeError as exc:
                    self.report.bad_row(
                        "field_count", block.path, line, f"not a JSON object ({exc.msg})"
                    )
                    continue
                if not isinstance(row, dict):
                    self.report.bad_row("field_count", block.path, line, "not a JSON object")
                    continue
            parsed: dict[str, Any] = {}
            ok = True
            for name in (*INT_FIELDS, *OPTIONAL_INT):
                value = _row_value(row, name)
                if value is None:
                    if name in INT_FIELDS:
                        self.report.bad_row(
                            "missing_value", block.path, line, "missing", field_name=name
                        )
                        ok = False
                        break
                    parsed[name] = -1
                    continue
                try:
                    parsed[name] = int(_plain(value))
                    if not -INT64_LIMIT <= parsed[name] < INT64_LIMIT:
                        raise ValueError
                except (TypeError, ValueError, OverflowError):
                    self.report.bad_row(
                        "not_numeric",
                        block.path,
                        line,
                        f"{str(value)[:40]!r} is not an integer",
                        field_name=name,
                    )
                    ok = False
                    break
            if not ok:
                continue
            for key, names in ALIASES.items():
                value = next((v for n in names if (v := _row_value(row, n)) is not None), None)
                try:
                    parsed[key] = np.nan if value is None else float(_plain(value))
                    if np.isinf(parsed[key]) or (value is not None and np.isnan(parsed[key])):
                        raise ValueError
                except (TypeError, ValueError, OverflowError):
                    self.report.bad_row(
                        "not_numeric",
                        block.path,
                        line,
                        f"{str(value)[:40]!r} is not a finite number",
                        field_name=names[0],
                    )
                    ok = False
                    break
            if not ok:
                continue
            for k, v in parsed.items():
                rows[k].append(v)
            lines.append(line)
        cols = {
            k: np.array(v, dtype=np.float64 if k in ALIASES else np.int64) for k, v in rows.items()
        }
        return cols, np.array(lines, dtype=np.int64)

    def batches(self) -> Iterator[pa.Table]:
        tasks = lifecycle.TaskTable()
        for path in self.paths:
            first = True
            csv = False
            for block in iter_blocks([path], self.report):
                skip = 0
                if first:
                    csv = not block.data.lstrip().startswith(b"{")
                    if csv:
                        header = block.data.split(b"\n", 1)[0].decode("utf-8", errors="replace")
                        self._csv_names = [h.strip().strip('"') for h in header.strip().split(",")]
                        missing = [f for f in INT_FIELDS if f not in self._csv_names]
                        if missing:
                            raise TraceError(
                                f"{path}:1: a CSV export of instance_events needs a header row "
                                f"with {', '.join(INT_FIELDS)} (missing {', '.join(missing)})"
                            )
                        skip = 1
                    first = False
                fast = self._parse_csv_fast(block, skip) if csv else self._parse_json_fast(block)
                self.report.rows += block.n_lines - skip
                if fast is not None:
                    cols = fast
                    start = block.first_line + skip
                    lines = np.arange(start, start + block.n_lines - skip, dtype=np.int64)
                else:
                    cols, lines = self._parse_slow(block, csv, skip)
                alloc = cols["collection_type"] == ALLOC_SET
                if alloc.any():
                    self.report.drop("alloc_instance_events", int(alloc.sum()))
                    keep = ~alloc
                    cols = {k: v[keep] for k, v in cols.items()}
                    lines = lines[keep]
                if not lines.size:
                    continue
                done, bad_rows, bad_codes = tasks.apply(
                    cols["time"],
                    cols["collection_id"],
                    cols["instance_index"],
                    cols["type"],
                    cols["cpus"],
                    cols["memory"],
                    cols["priority"],
                    cols["scheduling_class"],
                    lifecycle.IDENTITY_CODES,
                )
                report_bad_codes(
                    self.report, block.path, lines, bad_rows, bad_codes, lifecycle.BAD_ROWS
                )
                if done["submit"].size:
                    yield tasks_to_table(done, MICROSECONDS)
        for reason, n in tasks.drop_counts().items():
            self.report.drop(reason, n)


MACHINE_ADD, MACHINE_REMOVE, MACHINE_UPDATE = 1, 2, 3


def read_machine_events(
    paths: Sequence[Path], report: ReadReport, at: float | None = None
) -> pa.Table:
    """Machine capacities from a Borg 2019 ``machine_events`` export (JSON lines or CSV with a
    header: ``time``, ``machine_id``, ``type`` ADD=1/REMOVE=2/UPDATE=3, ``capacity.cpus``,
    ``capacity.memory``); see :func:`.google2011.machines_at` (``at`` in seconds)."""
    tables = []
    for path in paths:
        with path.open("rb") as f:
            head = f.read(1)
        if head == b"\x1f":
            data = b"".join(b.data for b in iter_blocks([path], report))
        else:
            data = path.read_bytes()
        if data.lstrip().startswith(b"{"):
            tables.append(_flatten(pajson.read_json(pa.py_buffer(data))))
        else:
            tables.append(pacsv.read_csv(pa.py_buffer(data)))
    table = pa.concat_tables(tables, promote_options="permissive")
    cpu = _float_column(table, ("capacity.cpus", "capacity_cpus", "cpus"))
    mem = _float_column(table, ("capacity.memory", "capacity_memory", "memory"))
    time = _int_column(table, "time")
    machine = _int_column(table, "machine_id")
    kind = _int_column(table, "type")
    if time is None or machine is None or kind is None:
        raise TraceError(f"{paths[0]}: machine_events needs time, machine_id and type columns")
    return machines_at(
        time, machine, kind == MACHINE_REMOVE, cpu, mem, None if at is None else at * MICROSECONDS
    )
