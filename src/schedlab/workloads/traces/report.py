"""Accounting for what a trace reader kept, dropped and could not read.

Every input row ends up in exactly one place: a kept job, a *dropped* row (a normal filter of the
format, e.g. an SWF job with unknown run time or a Google task that was evicted), or a *bad* row
(malformed or inconsistent input: a truncated gzip stream, a row with the wrong number of fields,
a non-numeric field, a negative duration, events out of time order, a FINISH with no SCHEDULE).
Nothing is dropped without being counted. Bad rows are counted and the first one of each kind is
kept as an example ``FILE:LINE: field: message``; with ``strict`` the first bad row raises
:class:`TraceError` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError

BAD_KINDS: dict[str, str] = {
    "truncated": "truncated or corrupt compressed stream",
    "field_count": "wrong number of fields",
    "not_numeric": "non-numeric field",
    "missing_value": "empty required field",
    "bad_value": "value out of range",
    "negative_duration": "negative duration",
    "out_of_order": "events out of order",
    "finish_without_schedule": "FINISH with no SCHEDULE",
}
"""Kinds of bad rows, with the phrase used when reporting them."""


class TraceError(SchedlabError):
    """A trace cannot be read (missing file, unknown format) or, with ``strict``, has a bad row.

    The message is one line naming the file and, when known, the line and field.
    """


def location(path: str | Path, line: int | None, field_name: str | None = None) -> str:
    """``FILE:LINE: field`` (the parts that are known)."""
    where = str(path) if line is None else f"{path}:{line}"
    return f"{where}: {field_name}" if field_name else where


@dataclass
class ReadReport:
    """Counts of rows read, jobs kept, rows dropped by reason and bad rows by kind."""

    strict: bool = False
    rows: int = 0
    jobs: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    bad: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def drop(self, reason: str, count: int = 1) -> None:
        """Count rows (or jobs) removed by a normal filter of the format."""
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(count)

    def bad_row(
        self,
        kind: str,
        path: str | Path,
        line: int | None,
        message: str,
        *,
        field_name: str | None = None,
        count: int = 1,
    ) -> None:
        """Count ``count`` bad rows of ``kind``; the first one becomes the example (or, when
        strict, the error)."""
        if kind not in BAD_KINDS:
            raise ValueError(f"unknown bad-row kind {kind!r}")
        text = f"{location(path, line, field_name)}: {message}"
        if self.strict:
            raise TraceError(f"{text} (--strict: bad rows are errors)")
        self.bad[kind] = self.bad.get(kind, 0) + int(count)
        self.examples.setdefault(kind, text)

    @property
    def n_bad(self) -> int:
        return sum(self.bad.values())

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "jobs": self.jobs,
            "dropped": dict(sorted(self.dropped.items())),
            "bad": dict(sorted(self.bad.items())),
            "examples": dict(sorted(self.examples.items())),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReadReport:
        return cls(
            rows=int(data.get("rows", 0)),
            jobs=int(data.get("jobs", 0)),
            dropped={k: int(v) for k, v in data.get("dropped", {}).items()},
            bad={k: int(v) for k, v in data.get("bad", {}).items()},
            examples=dict(data.get("examples", {})),
            notes=list(data.get("notes", [])),
        )

    def summary_lines(self) -> list[str]:
        """Human-readable lines: what was dropped and which bad rows were found."""
        lines = []
        if self.dropped:
            parts = [
                f"{n:,} {reason.replace('_', ' ')}" for reason, n in sorted(self.dropped.items())
            ]
            lines.append("dropped: " + "; ".join(parts))
        for kind, n in sorted(self.bad.items()):
            lines.append(f"bad rows: {n:,} {BAD_KINDS[kind]} (first: {self.examples[kind]})")
        lines.extend(f"note: {n}" for n in self.notes)
        return lines
