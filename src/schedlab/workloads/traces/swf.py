"""Standard Workload Format (SWF) v2.2 logs of the Parallel Workloads Archive.

Format (Feitelson et al., https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): one job per
line, 18 whitespace-separated fields, -1 meaning unknown; header comments start with ``;`` and
carry ``Key: value`` pairs (``MaxProcs``, ``MaxNodes``, ``UnixStartTime``, ...). Fields:

 1 job number, 2 submit time (s), 3 wait time, 4 run time, 5 allocated processors,
 6 average CPU time, 7 used memory, 8 requested processors, 9 requested time (the user's
 estimate), 10 requested memory, 11 status (1 completed, 0 failed, 5 cancelled, 2-4 partial),
 12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding job, 18 think time

Canonical rows: arrival = submit time, duration = run time, estimate = requested time,
``demand_procs`` = processors (allocated, or requested where allocated is unknown; normalized by
MaxProcs), ``need`` = the same processors (pooled family, k = MaxProcs; see
:func:`.transforms.server_need` for requested processors or whole nodes), ``user`` = user, ``queue``
= queue (the engine's per-job ``user`` and ``queue``, decision 0029). Also kept:
``procs_allocated``, ``procs_requested``, ``status``, ``group``, ``partition`` and ``trace_wait``
(the wait the job had on the real machine, for comparison with simulated waits).

A log without a ``; MaxProcs`` header (as some mirrors distribute METACENTRUM-2009-2 or RICC-2010-2)
is normalized by the largest allocation seen (:meth:`Swf.infer_capacity`), stated in the read
report and the metadata; ``--normalize procs=N`` overrides it.

Every job that ran is kept (run time > 0, processors known), whatever its status, as is usual
when replaying these logs: failed and cancelled jobs occupied their processors too;
``completed_only=True`` keeps status 1 only. Jobs that cannot be replayed are dropped and counted:
unknown run time (-1), zero run time, unknown processors, more processors than MaxProcs.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from schedlab.workloads.traces.base import (
    BadCheck,
    TraceReader,
    flag_bad,
    not_finite,
    optional_int,
)
from schedlab.workloads.traces.report import ReadReport, TraceError
from schedlab.workloads.traces.source import Block, iter_blocks, split_lines

N_FIELDS = 18
FIELD_NAMES = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
)
(JOB, SUBMIT, WAIT, RUN, ALLOC, _CPU, _MEM, REQ, REQ_TIME, _REQ_MEM, STATUS, USER) = range(12)
GROUP = 12
QUEUE, PARTITION = 14, 15
COMPLETED = 1
INT_FIELDS = (JOB, ALLOC, REQ, STATUS, USER, GROUP, QUEUE, PARTITION)  # stored as integers
INT_LIMIT = 2**31 - 1  # the int32 columns of the table (job numbers are int64 but use it too)


SIZE_KEYS = ("MaxProcs", "MaxNodes")
"""Header keys that size the machine: a whole number (<= 0 means unknown), else refused."""
INTEGER_KEYS = (
    *SIZE_KEYS,
    "MaxJobs",
    "MaxRecords",
    "UnixStartTime",
    "TimeZone",
    "MaxRuntime",
    "MaxMemory",
    "MaxQueues",
    "MaxPartitions",
)
"""The header keys whose value SWF 2.2 defines as an integer (swf.html, "Header Comments")."""


def annotated_whole(value: str) -> tuple[int, str] | None:
    """``(number, comment)`` of a value that is a whole number followed by a comment, as the
    archive's own logs write machine sizes: ``338 (batch partition; 512 total)`` (CTC-SP2),
    ``1664 (72, 1368, 224)`` (SDSC-DS), ``400 (48 interactive, 352 batch, 6 service, 10 I/O)``
    (SDSC-Par); None for anything else. The comment starts after a blank or at a ``(`` and
    never with a digit (of any script), sign, point or comma (``1 024``, ``2.5 x``, ``1,024``
    are not read as 1 or 2)."""
    number = re.match(r"[+-]?[0-9]+", value)
    if number is None:
        return None
    rest = value[number.end() :]
    comment = rest.strip()
    if not comment or not (rest[0].isspace() or rest[0] == "(") or _numeric_start(comment):
        return None
    return int(number.group()), comment


def _numeric_start(text: str) -> bool:
    return text[0].isnumeric() or text[0] in "+-.,"


def parse_header_line(
    line: str, header: dict[str, Any], comments: dict[str, str], where: str
) -> None:
    """``; Key: value`` into ``header`` (numbers as int/float; the first value of a key wins).

    SWF 2.2 (Feitelson et al., https://www.cs.huji.ac.il/labs/parallel/workload/swf.html,
    "Header Comments") defines ``MaxNodes``, ``MaxProcs`` and the other :data:`INTEGER_KEYS`
    as integers; the archive's logs annotate some (:func:`annotated_whole`): the number is
    kept in ``header`` and the comment in ``comments`` under the same key. A machine size
    (:data:`SIZE_KEYS`) that does not start with a whole number within the int32 range
    (``nan``, ``1e400``, ``2.5``, ``x``, ``2.5 (x)``) raises :class:`TraceError` naming
    ``where`` (file:line); another integer key that is not one (``MaxRuntime: N/A``) stays
    text."""
    text = line.lstrip(";").strip()
    if ":" not in text:
        return
    key, _, value = text.partition(":")
    key, value = key.strip(), value.strip()
    if not key or " " in key or key in header:
        return
    try:
        header[key] = int(value)
    except ValueError:
        try:
            header[key] = float(value)
        except ValueError:
            header[key] = value
    annotated = annotated_whole(value) if key in INTEGER_KEYS else None
    if annotated is not None:
        header[key], comments[key] = annotated
    number = header[key]
    if key in SIZE_KEYS and value:
        whole = isinstance(number, int | float) and math.isfinite(number) and number % 1 == 0
        if not (whole and abs(number) <= INT_LIMIT):
            raise TraceError(
                f"{where}: header {key}: {value[:40]!r} is not a whole number of "
                f"{'processors' if key == 'MaxProcs' else 'nodes'} (at most {INT_LIMIT:,})"
            )
        header[key] = int(number)


class Swf(TraceReader):
    name = "swf"
    title = "Standard Workload Format v2.2 (Parallel Workloads Archive)"
    reference = "Feitelson, Tsafrir & Krakov, Experience with using the Parallel Workloads Archive"
    resources = ("procs",)
    units: ClassVar[dict[str, str]] = {"procs": "processors"}
    default_capacity: ClassVar[dict[str, float]] = {"procs": math.nan}  # MaxProcs from the header
    default_need = "procs"

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return ("completed_only",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meta["header"] = {}
        self.meta["header_comments"] = {}
        self._last_submit = -math.inf
        self._inferred_k: int | None = None

    def capacity(self) -> dict[str, float]:
        max_procs = self.meta["header"].get("MaxProcs")
        if not isinstance(max_procs, int | float) or max_procs <= 0:
            return {"procs": math.nan}
        return {"procs": float(max_procs)}

    def pooled_servers(self) -> int | None:
        max_procs = self.meta["header"].get("MaxProcs")
        if isinstance(max_procs, int | float) and max_procs > 0:
            return int(max_procs)
        return self._inferred_k

    def infer_capacity(self, resource: str) -> float | None:
        """A log without ``; MaxProcs`` (as some mirrors distribute METACENTRUM or RICC): the
        largest allocation of a job that can be replayed, found by one extra pass over the files.
        Stated in the read report's notes and in the table's metadata (``capacity_inferred``);
        ``--normalize procs=N`` overrides it (then this pass is not made)."""
        if resource != "procs":
            return None
        scout = Swf(self.paths, ReadReport())
        widest = max(
            (pc.max(t.column("demand_procs")).as_py() for t in scout.batches()), default=None
        )
        if widest is None:
            return None
        self._inferred_k = int(widest)
        self.meta["capacity_inferred"] = {"procs": float(widest)}
        self.report.notes.append(
            f"{self.paths[0]}: no MaxProcs header; the server capacity is the largest allocation "
            f"seen, {int(widest):,} processors (set it with --normalize procs=N)"
        )
        return float(widest)

    def _header_line(self, raw: bytes, where: str) -> None:
        parse_header_line(
            raw.decode("utf-8", errors="replace"),
            self.meta["header"],
            self.meta["header_comments"],
            where,
        )

    def _scan(self, block: Block, force: bool = False) -> np.ndarray | None:
        """Parse header comments of the block; the line numbers of its data lines, or None if
        (unless ``force``) the block has no comment line."""
        data = block.data
        if not force and not (data.startswith(b";") or b"\n;" in data):
            return None
        lines = []
        for offset, raw in enumerate(split_lines(block)):
            s = raw.strip()
            if not s:
                continue
            if s.startswith(b";"):
                where = f"{block.path}:{block.first_line + offset}"
                self._header_line(s, where)
                continue
            lines.append(block.first_line + offset)
        return np.array(lines, dtype=np.int64)

    def _header(self, block: Block) -> tuple[int, bytes]:
        """Read the comment (and blank) lines at the top of the block: their number, and the
        rest."""
        data = block.data
        start = skip = 0
        while start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end + 1
            text = data[start:end].strip()
            if text and not text.startswith(b";"):
                break
            if text:
                where = f"{block.path}:{block.first_line + skip}"
                self._header_line(text, where)
            start, skip = end, skip + 1
        return skip, data[start:]

    def _slow(self, block: Block) -> tuple[np.ndarray, np.ndarray, int]:
        rows: list[list[float]] = []
        lines: list[int] = []
        seen = 0
        for offset, raw in enumerate(split_lines(block)):
            s = raw.strip()
            if not s or s.startswith(b";"):
                continue
            seen += 1
            line = block.first_line + offset
            parts = s.split()
            if len(parts) != N_FIELDS:
                self.report.bad_row(
                    "field_count", block.path, line, f"{len(parts)} fields, expected {N_FIELDS}"
                )
                continue
            try:
                rows.append([float(p) for p in parts])
            except ValueError:
                k = next(i for i, p in enumerate(parts) if not _is_number(p))
                shown = parts[k][:40].decode("utf-8", errors="replace")
                self.report.bad_row(
                    "not_numeric",
                    block.path,
                    line,
                    f"{shown!r} is not a number",
                    field_name=f"field {k + 1} ({FIELD_NAMES[k]})",
                )
                continue
            lines.append(line)
        values = np.array(rows, dtype=np.float64).reshape(-1, N_FIELDS)
        return values, np.array(lines, dtype=np.int64), seen

    def _parse(self, block: Block) -> tuple[np.ndarray, np.ndarray, int]:
        """The block's jobs (n x 18), their line numbers, and the number of data lines seen.

        Header comments are read, blank lines skipped, and the job lines (blanks made single
        spaces) go to Arrow's CSV reader; a block it cannot take whole (a malformed row) goes
        to NumPy's ``loadtxt`` and then, if needed, line by line, which locates each bad row."""
        skip, body = self._header(block)
        if b"\n;" not in body:  # comments at the top only, as in every archive log
            n = block.n_lines - skip
            fast = _arrow_rows(_single_spaces(body), n) if n else None
            if fast is not None:
                lines = np.arange(block.first_line + skip, block.first_line + block.n_lines)
                return fast, lines, n
        rows: list[bytes] = []
        lines: list[int] = []
        for offset, raw in enumerate(split_lines(block)):
            fields = raw.split()
            if not fields:
                continue
            if fields[0].startswith(b";"):
                where = f"{block.path}:{block.first_line + offset}"
                self._header_line(raw, where)
                continue
            rows.append(b" ".join(fields))
            lines.append(block.first_line + offset)
        fast = _arrow_rows(b"\n".join(rows), len(rows)) if rows else None
        if fast is not None:
            return fast, np.array(lines, dtype=np.int64), len(rows)
        return self._parse_loadtxt(block)

    def _parse_loadtxt(self, block: Block) -> tuple[np.ndarray, np.ndarray, int]:
        lines = self._scan(block)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # a block of comments only
                values = np.loadtxt(io.BytesIO(block.data), comments=";", dtype=np.float64, ndmin=2)
        except ValueError:
            return self._slow(block)
        if values.shape[0] and values.shape[1] != N_FIELDS:
            return self._slow(block)
        if lines is None:
            if values.shape[0] == block.n_lines:
                lines = np.arange(block.first_line, block.first_line + block.n_lines)
            else:  # blank lines
                lines = self._scan(block, force=True)
        if lines is None or lines.shape[0] != values.shape[0]:
            return self._slow(block)
        return values.reshape(-1, N_FIELDS), lines.astype(np.int64), int(lines.shape[0])

    def _report_out_of_order(
        self, block: Block, submit: np.ndarray, lines: np.ndarray, known: np.ndarray
    ) -> None:
        """Jobs submitted before the job above them (as the Google reader reports events out of
        time order): counted as bad rows, but kept (the table is sorted by arrival)."""
        times, where = submit[known], lines[known]
        if not times.size:
            return
        prev = np.concatenate([[self._last_submit], times[:-1]])
        back = times < prev
        self._last_submit = float(times[-1])
        if back.any():
            self.report.bad_row(
                "out_of_order",
                block.path,
                int(where[np.argmax(back)]),
                "submit time earlier than the job before (the job is kept; jobs are sorted "
                "by arrival)",
                field_name="field 2 (submit time)",
                count=int(back.sum()),
            )

    def batches(self) -> Iterator[pa.Table]:
        for block in iter_blocks(self.paths, self.report):
            values, lines, seen = self._parse(block)
            self.report.rows += seen
            if values.shape[0]:
                table = self._jobs(block, values, lines)
                if table.num_rows:
                    yield table

    def _jobs(self, block: Block, v: np.ndarray, lines: np.ndarray) -> pa.Table:
        report = self.report
        submit = v[:, SUBMIT]
        run = v[:, RUN]
        alloc, req = v[:, ALLOC], v[:, REQ]

        def field(k: int) -> str:
            return f"field {k + 1} ({FIELD_NAMES[k]})"

        def first_nonfinite(i: int) -> tuple[str, str]:
            k = int(np.argmax(~np.isfinite(v[i])))
            return field(k), f"{v[i, k]!r} is not a finite number"

        def out_of_range(i: int) -> tuple[str, str]:
            k = INT_FIELDS[int(np.argmax(np.abs(v[i, list(INT_FIELDS)]) > INT_LIMIT))]
            return field(k), f"{v[i, k]:g} is out of range (at most {INT_LIMIT:,})"

        def negative(k: int) -> Callable[[int], tuple[str, str]]:
            return lambda i: (field(k), f"{FIELD_NAMES[k]} {v[i, k]:g} (only -1 means unknown)")

        def fractional(i: int) -> tuple[str, str]:
            k = ALLOC if alloc[i] % 1 != 0 else REQ
            return field(k), f"{FIELD_NAMES[k]} {v[i, k]:g} is not a whole number"

        ints = np.abs(v[:, list(INT_FIELDS)])
        with np.errstate(invalid="ignore"):  # inf % 1 (such a row is already bad)
            split = (alloc % 1 != 0) | (req % 1 != 0)  # a processor is never split (docs/traces.md)
        keep = flag_bad(
            report,
            block.path,
            lines,
            (
                BadCheck("bad_value", not_finite(v), first_nonfinite),
                BadCheck("bad_value", (ints > INT_LIMIT).any(axis=1), out_of_range),
                BadCheck("bad_value", (submit < 0) & (submit != -1), negative(SUBMIT)),
                BadCheck("negative_duration", (run < 0) & (run != -1), negative(RUN)),
                BadCheck("bad_value", (alloc < 0) & (alloc != -1), negative(ALLOC)),
                BadCheck("bad_value", (req < 0) & (req != -1), negative(REQ)),
                BadCheck("bad_value", split, fractional),
            ),
        )
        self._report_out_of_order(block, submit, lines, keep & (submit >= 0))
        procs = np.where(alloc > 0, alloc, req)
        for reason, mask in (
            ("no_submit_time", submit < 0),
            ("no_run_time", run == -1),
            ("zero_duration", run == 0),
            ("no_processors", ~(procs > 0)),
        ):
            hit = keep & mask
            report.drop(reason, int(hit.sum()))
            keep &= ~mask
        k = self.pooled_servers()
        if k is not None:
            wide = keep & (procs > k)
            report.drop("wider_than_machine", int(wide.sum()))
            keep &= ~wide
        if self.options.get("completed_only"):
            failed = keep & (v[:, STATUS] != COMPLETED)
            report.drop("not_completed", int(failed.sum()))
            keep &= ~failed
        v, procs = v[keep], procs[keep]  # (fancy indexing copies: no view of the block)
        if not v.shape[0]:
            return pa.table({"arrival": pa.array([], pa.float64())})
        est = v[:, REQ_TIME]
        wait = v[:, WAIT]
        return pa.table(
            {
                "arrival": v[:, SUBMIT],
                "duration": v[:, RUN],
                "demand_procs": procs,
                "estimate": pa.array(est, mask=~(est > 0)),
                "queue": optional_int(v[:, QUEUE].astype(np.int64)),
                "_id0": v[:, JOB].astype(np.int64),
                "procs_allocated": optional_int(v[:, ALLOC].astype(np.int64)),
                "procs_requested": optional_int(v[:, REQ].astype(np.int64)),
                "status": optional_int(v[:, STATUS].astype(np.int64)),
                "user": optional_int(v[:, USER].astype(np.int64)),
                "group": optional_int(v[:, GROUP].astype(np.int64)),
                "partition": optional_int(v[:, PARTITION].astype(np.int64)),
                "trace_wait": pa.array(wait, mask=wait < 0),
            }
        )


_COLUMNS = [f"f{i}" for i in range(N_FIELDS)]


def _single_spaces(data: bytes) -> bytes:
    """Runs of blanks (spaces, tabs, CRs) made one space, none at the start or end of a line
    (vectorized: the same as ``b" ".join(line.split())`` on every line)."""
    buf = np.frombuffer(data, np.uint8)
    if not buf.size:
        return data
    blank = (buf == 32) | (buf == 9) | (buf == 13)
    after_gap = np.empty_like(blank)
    after_gap[0] = True
    after_gap[1:] = blank[:-1] | (buf[:-1] == 10)
    out = buf[~(blank & after_gap)].copy()  # the first blank after a token survives
    out[(out == 9) | (out == 13)] = 32
    trailing = np.empty(out.shape[0], np.bool_)
    trailing[-1:] = out[-1:] == 32
    trailing[:-1] = (out[:-1] == 32) & (out[1:] == 10)
    return out[~trailing].tobytes()


def _arrow_rows(data: bytes, n_rows: int) -> np.ndarray | None:
    """Rows of 18 single-space-separated numbers as an (n, 18) array (Arrow's CSV reader), or
    None unless every one of the ``n_rows`` lines is 18 numbers."""
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(
                column_names=_COLUMNS, block_size=1 << 20, use_threads=False
            ),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(_COLUMNS, pa.float64()), null_values=[]
            ),
        )
    except pa.ArrowInvalid:
        return None
    if table.num_rows != n_rows:
        return None
    return np.column_stack([c.to_numpy() for c in table.columns])


def _is_number(text: bytes) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
