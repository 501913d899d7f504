"""What every trace reader provides, and helpers they share.

A reader turns the files of one trace format into batches of canonical job rows in the
*native units* of the format (e.g. SWF processors, Alibaba CPU cores); the conversion pipeline
(:mod:`schedlab.workloads.traces.pipeline`) then normalizes demands to one server's capacity,
applies transforms, sorts by arrival and writes the table. Readers count every row they drop or
cannot read in a :class:`~schedlab.workloads.traces.report.ReadReport`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
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
