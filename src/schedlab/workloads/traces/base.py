"""What every trace reader provides, and helpers they share.

A reader turns the files of one trace format into batches of canonical job rows in the
*native units* of the format (e.g. SWF processors, Alibaba CPU cores); the conversion pipeline
(:mod:`schedlab.workloads.traces.pipeline`) then normalizes demands to one server's capacity,
applies transforms, sorts by arrival and writes the table. Readers count every row they drop or
cannot read in a :class:`~schedlab.workloads.traces.report.ReadReport`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schedlab.workloads.traces.report import ReadReport


class TraceReader(ABC):
    """One trace format. Subclasses set the class attributes and implement :meth:`batches`."""

    name: ClassVar[str]
    title: ClassVar[str]
    reference: ClassVar[str]
    resources: ClassVar[tuple[str, ...]]
    units: ClassVar[dict[str, str]]
    default_capacity: ClassVar[dict[str, float]]

    def __init__(self, paths: Sequence[Path], report: ReadReport, **options: Any) -> None:
        unknown = set(options) - set(self.option_names())
        if unknown:
            from schedlab.workloads.traces.report import TraceError

            raise TraceError(
                f"format '{self.name}' takes no option {', '.join(sorted(unknown))}"
                + (f"; it takes {', '.join(self.option_names())}" if self.option_names() else "")
            )
        self.paths = list(paths)
        self.report = report
        self.options = options
        self.meta: dict[str, Any] = {}

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Keyword options the reader accepts (besides paths and report)."""
        return ()

    @abstractmethod
    def batches(self) -> Iterator[pa.Table]:
        """Canonical columns in native units, unsorted, one table per input block."""

    def capacity(self) -> dict[str, float]:
        """Server capacity in native units used to normalize demands (may depend on headers read
        so far, e.g. SWF MaxProcs)."""
        return dict(self.default_capacity)

    def pooled_servers(self) -> int | None:
        """The pooled server count k that the trace itself gives (SWF MaxProcs), if any."""
        return None

    def infer_capacity(self, resource: str) -> float | None:
        """A server capacity for ``resource`` inferred from the data when the trace states none
        (SWF logs without a MaxProcs header); None if the format cannot infer one."""
        return None


def join_ids(*parts: np.ndarray | pa.Array, sep: str = "/") -> pa.Array:
    """Element-wise ``a/b/c`` source ids from integer or string columns (vectorized)."""
    strings = [
        p.cast(pa.string()) if isinstance(p, pa.Array) else pa.array(p).cast(pa.string())
        for p in parts
    ]
    if len(strings) == 1:
        return strings[0]
    return pc.binary_join_element_wise(*strings, sep)


def optional_int(values: np.ndarray, missing: int = -1) -> pa.Array:
    """An int32 Arrow array with ``missing`` as null."""
    return pa.array(values.astype(np.int32), mask=values == missing)


def report_bad_codes(
    report: ReadReport,
    path: Path,
    lines: np.ndarray,
    rows: np.ndarray,
    codes: np.ndarray,
    table: dict[int, tuple[str, str, str]],
) -> None:
    """Count bad rows found by a compiled loop (row indices into ``lines``, codes into
    ``table``), earliest first, with the first line of each code as the example."""
    if rows.size == 0:
        return
    order = np.argsort(rows, kind="stable")
    rows, codes = rows[order], codes[order]
    uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
    for k in np.argsort(first):
        kind, field_name, message = table[int(uniq[k])]
        report.bad_row(
            kind,
            path,
            int(lines[rows[first[k]]]),
            message,
            field_name=field_name,
            count=int(counts[k]),
        )


@dataclass(frozen=True)
class BadCheck:
    """Rows of a block that are bad for one reason: ``mask`` marks them; ``describe(i)`` gives
    the field name and message for row ``i`` (the first one is the report's example)."""

    kind: str
    mask: np.ndarray
    describe: Callable[[int], tuple[str, str]]


def flag_bad(
    report: ReadReport, path: Path, lines: np.ndarray, checks: Sequence[BadCheck]
) -> np.ndarray:
    """Count the bad rows of each check (a row bad for several reasons counts once, for the
    first check that marks it) in line order, so that with ``strict`` the error names the
    earliest bad line. Returns the mask of the rows no check marked."""
    keep = np.ones(lines.shape[0], dtype=np.bool_)
    found = []
    for check in checks:
        hit = keep & check.mask
        if hit.any():
            i = int(np.argmax(hit))
            field_name, message = check.describe(i)
            found.append((int(lines[i]), check.kind, message, field_name, int(hit.sum())))
        keep &= ~check.mask
    for line, kind, message, field_name, count in sorted(found):
        report.bad_row(kind, path, line, message, field_name=field_name, count=count)
    return keep


def not_finite(values: np.ndarray) -> np.ndarray:
    """Rows of an (n, m) or (n,) float array with a NaN or infinite entry."""
    bad = ~np.isfinite(values)
    return bad.any(axis=1) if bad.ndim == 2 else bad
