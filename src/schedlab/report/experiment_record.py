"""``experiment.json``: what an experiment declares beside its runs, so any report can follow it.

A result directory holds its runs (``runs/*.parquet``, one row per run with its full spec) and,
written by the command that made it (``schedlab reproduce``, ``schedlab run``,
``schedlab compare``), one :class:`ExperimentRecord`: its name and title, the swept axes, the
claims with PASS/FAIL and their evidence, the figures (paths relative to the directory), notes,
and the provenance (schedlab version, code hash, command line, machine, wall time).
``schedlab report`` reads it when present and infers the rest from the stored runs otherwise.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from schedlab import outputs
from schedlab.errors import SchedlabError

FILE = "experiment.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClaimRecord(_Record):
    """A claim of the paper (or of a comparison), checked: PASS/FAIL and the numbers behind it."""

    text: str
    passed: bool
    evidence: str = ""
    verdict: str = ""  # PASS, FAIL, NOT RESOLVED or NOT CHECKED ("" in older records)


class Provenance(_Record):
    """Where and how the results were made."""

    schedlab_version: str
    code_hash: str
    command: str
    started: str  # ISO 8601, UTC
    wall_s: float
    python: str
    platform: str
    machine: str
    cpus: int


class ExperimentRecord(_Record):
    name: str
    kind: Literal["reproduction", "sweep", "compare"]
    title: str = ""
    paper: str = ""
    figure: str = ""
    scale: str = ""  # e.g. "quick variant: 10^5 arrivals per point"
    axes: list[str] = []  # swept columns of the stored runs (``policy``, ``load``, ...)
    metrics: list[str] = []  # the metrics the report tabulates (default: E[T])
    reference: str | None = None  # series the ratio tables divide by (default: the best)
    claims: list[ClaimRecord] = []
    figures: list[str] = []  # relative to the result directory
    summary: list[str] = []  # ranked findings, in words
    notes: list[str] = []
    provenance: Provenance


class ClaimLike(Protocol):
    text: str
    passed: bool
    evidence: str


def claims_of(claims: Iterable[ClaimLike]) -> list[ClaimRecord]:
    return [
        ClaimRecord(
            text=c.text,
            passed=c.passed,
            evidence=c.evidence,
            verdict=getattr(c, "verdict", "PASS" if c.passed else "FAIL"),
        )
        for c in claims
    ]


def provenance(
    started: datetime.datetime, wall_s: float, argv: Sequence[str] | None = None
) -> Provenance:
    """The provenance of a command that started at ``started`` and ran ``wall_s`` seconds."""
    from schedlab._jit import code_hash
    from schedlab._version import __version__

    args = list(sys.argv if argv is None else argv)
    command = " ".join(["schedlab", *args[1:]]) if args else "schedlab"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return Provenance(
        schedlab_version=__version__,
        code_hash=code_hash(),
        command=command,
        started=started.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        wall_s=round(wall_s, 3),
        python=platform.python_version(),
        platform=platform.platform(terse=True),
        machine=_cpu_model() or platform.machine(),
        cpus=cpus or 1,
    )


def _cpu_model() -> str:
    """The CPU model from /proc/cpuinfo (Linux), or empty."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def relative_figures(directory: Path, paths: Iterable[Path]) -> list[str]:
    """Figure paths as stored: relative to the result directory (never absolute)."""
    root = directory.resolve()
    out = []
    for p in paths:
        q = Path(p).resolve()
        out.append(str(q.relative_to(root)) if q.is_relative_to(root) else q.name)
    return out


def write_record(directory: Path, record: ExperimentRecord) -> Path:
    outputs.make_dirs(directory)
    return outputs.write_text(
        outputs.inside(directory, FILE), record.model_dump_json(indent=2) + "\n"
    )


def read_record(directory: Path) -> ExperimentRecord | None:
    path = directory / FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return ExperimentRecord.model_validate_json(outputs.read_text_inside(directory, FILE))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SchedlabError(f"{path}: {where}: {first['msg']}") from None
