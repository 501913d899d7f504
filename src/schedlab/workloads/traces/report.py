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


class NoJobs(TraceError):
    """Not one job could be read from the input: the message names the input files and the
    reason (what the rows were); ``report`` is the full read report."""

    def __init__(self, sources: list[str], report: ReadReport) -> None:
        shown = sources[0] + (f" (and {len(sources) - 1} more files)" if len(sources) > 1 else "")
        super().__init__(f"{shown}: no job could be read: {report.why_empty()}")
        self.report = report


def printable(text: str, limit: int = 80) -> str:
    """``text`` safe to print on a terminal: control and undecodable characters escaped,
    at most ``limit`` characters (binary junk never reaches the screen raw)."""
    out = "".join(
        ch if ch.isprintable() and ch != "\ufffd" else ch.encode("unicode_escape").decode()
        for ch in text[:limit]
    )
    return out + ("..." if len(text) > limit else "")


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

    def absorb(self, other: ReadReport) -> None:
        """Add the bad rows counted in ``other`` (a later part of the same input) to these."""
        for kind, n in other.bad.items():
            self.bad[kind] = self.bad.get(kind, 0) + n
            self.examples.setdefault(kind, other.examples[kind])

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

    def why_empty(self) -> str:
        """Why a read gave no job, in one line: the rows read and what became of them."""
        if self.rows == 0:
            first = next(iter(self.examples.values()), None)
            return "the input has no data rows" + (f" ({first})" if first else "")
        parts = [f"{self.rows:,} rows read"]
        if self.bad:
            kind = max(self.bad, key=lambda k: self.bad[k])
            parts.append(
                f"{self.n_bad:,} bad, mostly {BAD_KINDS[kind]} (first: {self.examples[kind]})"
            )
        if self.dropped:
            parts.append(
                "dropped: "
                + ", ".join(f"{n:,} {r.replace('_', ' ')}" for r, n in sorted(self.dropped.items()))
            )
        return "; ".join(parts)

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
