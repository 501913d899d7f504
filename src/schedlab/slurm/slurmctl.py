"""What the adapter reads from and tells Slurm, through Slurm's own commands (issue 46 item 1).

Reading: ``squeue --json --states=all`` gives the pending, running and finished jobs in one call
(finished ones for ``MinJobAge`` seconds after they end; docs/slurm.md), with each job's state,
hold (priority 0), nodes, CPUs, time limit, partition, start and end times and node list;
``sinfo`` gives the node states. Both work with any slurmctld, without the accounting database
that ``sacct`` needs and without slurmrestd's JWT setup: the adapter runs where the Slurm commands
do. Writing: ``scontrol update JobId=… ReqNodeList=… Comment=…`` then ``scontrol release``.

Every command that fails to reach slurmctld raises :class:`Unreachable` (the adapter retries
with backoff); a refusal of one job's update (say it was cancelled meanwhile) is
:class:`Refused`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from schedlab.errors import SchedlabError

TERMINAL = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "CANCELLED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "PREEMPTED",
    }
)
OUT_OF_SERVICE = ("drain", "down", "fail", "maint", "boot", "future", "not_responding", "unk")


class Unreachable(SchedlabError):
    """A Slurm command did not answer (slurmctld down, a timeout)."""


class Refused(SchedlabError):
    """slurmctld refused an update of one job."""


@dataclass(frozen=True)
class SlurmJob:
    """A job as ``squeue --json`` shows it (times in seconds since the epoch, 0 when unset)."""

    id: int
    state: str
    held: bool  # pending with priority 0 (a hold by job_submit.lua, --hold or scontrol hold)
    partition: str
    nodes: int  # nodes asked for (or held)
    cpus: int
    time_limit: float  # seconds (inf: none)
    submit_time: int
    start_time: int
    end_time: int
    node_list: tuple[str, ...]  # the nodes it runs or ran on
    comment: str

    @classmethod
    def of(cls, j: Mapping, hostnames) -> SlurmJob:
        limit = j.get("time_limit")
        state = str(j.get("job_state", ""))
        return cls(
            id=int(j["job_id"]),
            state=state,
            held=state == "PENDING" and int(j.get("priority", 1)) == 0,
            partition=str(j.get("partition", "")),
            nodes=int(j.get("node_count") or 1),
            cpus=int(j.get("cpus") or 1),
            time_limit=limit * 60.0 if isinstance(limit, int) and limit > 0 else float("inf"),
            submit_time=int(j.get("submit_time") or 0),
            start_time=int(j.get("start_time") or 0),
            end_time=int(j.get("end_time") or 0),
            node_list=tuple(hostnames(j.get("nodes") or "")),
            comment=str(j.get("comment") or ""),
        )

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL


@dataclass
class Slurm:
    """Slurm's commands, with ``env`` (e.g. ``SLURM_CONF``) and a timeout per call."""

    env: Mapping[str, str] | None = None
    timeout: float = 20.0

    def _run(self, *args: str) -> str:
        env = {**os.environ, **(self.env or {})}
        try:
            done = subprocess.run(
                args, env=env, capture_output=True, text=True, timeout=self.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise Unreachable(f"{' '.join(args)}: no answer within {self.timeout:g} s") from None
        except OSError as exc:
            raise Unreachable(f"{args[0]}: {exc}") from None
        if done.returncode != 0:
            message = f"{' '.join(args)}: {' '.join((done.stderr or done.stdout).split())}"
            unreachable = any(w in message.lower() for w in ("contact", "connect", "timed out"))
            if args[0] == "scontrol" and not unreachable:
                raise Refused(message)
            raise Unreachable(message)
        return done.stdout

    def hostnames(self, node_list: str) -> list[str]:
        """A node list (``n[1-3,5]``) expanded, as ``scontrol show hostnames`` does."""
        return _expand(node_list)

    def jobs(self) -> list[SlurmJob]:
        """Every job slurmctld knows (pending, running, and finished within MinJobAge)."""
        data = json.loads(self._run("squeue", "--json", "--states=all"))
        return [SlurmJob.of(j, self.hostnames) for j in data.get("jobs", [])]

    def nodes(self, partition: str) -> dict[str, str]:
        """The nodes of ``partition`` and their state (``idle``, ``drained``, ``down*``, …)."""
        out = self._run("sinfo", "-h", "-N", "-p", partition, "-o", "%N %T")
        return dict(line.split()[:2] for line in out.splitlines() if line.strip())

    def start(self, job: int, nodes: list[str], comment: str) -> None:
        """Pin ``job`` to ``nodes`` and release it."""
        self._run(
            "scontrol",
            "update",
            f"JobId={job}",
            f"ReqNodeList={','.join(nodes)}",
            f"Comment={comment}",
        )
        self._run("scontrol", "release", str(job))

    def hold(self, job: int, comment: str) -> None:
        """Hold ``job`` (again) with ``comment`` saying why."""
        self._run("scontrol", "hold", str(job))
        self.comment(job, comment)

    def comment(self, job: int, comment: str) -> None:
        self._run("scontrol", "update", f"JobId={job}", f"Comment={comment}")


def _expand(node_list: str) -> list[str]:
    """``n[1-3,5],m2`` → n1 n2 n3 n5 m2 (Slurm's hostlist syntax, one bracket per name)."""
    names: list[str] = []
    depth, part = 0, ""
    parts = []
    for ch in node_list:
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
            continue
        depth += (ch == "[") - (ch == "]")
        part += ch
    if part:
        parts.append(part)
    for p in parts:
        if "[" not in p:
            names.append(p)
            continue
        prefix, _, rest = p.partition("[")
        ranges, _, suffix = rest.partition("]")
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{i:0{width}d}{suffix}")
    return names
