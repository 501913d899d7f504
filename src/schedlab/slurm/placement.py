"""The nodes a pooled-family job holds, named as the jobs output names them (issue 46).

The online scheduler's pooled family counts servers and names none (a start's ``server`` is 0).
:class:`NodePool` names them online by the rule of the jobs output's placement
(schedlab.report.jobs_formats.placement): each job, in start order, takes the lowest-numbered free
nodes, and jobs finishing at an instant free theirs before jobs starting at that instant take
theirs; jobs starting at one instant take theirs in arrival order (the placement's order of ties).
Fed a run's completions and starts instant by instant, it names the servers the jobs output names
(tests/slurm/test_placement.py), so a live run's Gantt chart is the simulation's.

Nodes out of service (drained or down in Slurm) are skipped: a start takes the lowest-numbered
free nodes in service.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field


class NoRoom(Exception):
    """A start needs more free nodes in service than there are (the scheduler's capacity and the
    pool's disagree: a bug or a node state not yet told to the scheduler)."""


@dataclass
class NodePool:
    """``size`` nodes numbered 0..size-1; the nodes each running job holds."""

    size: int
    out: set[int] = field(default_factory=set)  # nodes out of service
    held: dict[Hashable, list[int]] = field(default_factory=dict)  # job -> its nodes

    def free(self) -> list[int]:
        """Free nodes in service, lowest first."""
        busy = {n for nodes in self.held.values() for n in nodes}
        return [n for n in range(self.size) if n not in busy and n not in self.out]

    def instant(
        self, finished: Iterable[Hashable], started: Sequence[tuple[int, Hashable, int]]
    ) -> dict[Hashable, list[int]]:
        """Free the nodes of ``finished``, then give each of ``started`` (arrival number, job,
        need), in arrival order, the lowest-numbered free nodes; returns the new jobs' nodes."""
        for job in finished:
            self.held.pop(job, None)
        taken: dict[Hashable, list[int]] = {}
        for _, job, need in sorted(started, key=lambda s: s[0]):
            free = self.free()
            if len(free) < need:
                raise NoRoom(f"job {job} needs {need} nodes, {len(free)} are free: {free}")
            self.held[job] = taken[job] = free[:need]
        return taken

    def hold(self, job: Hashable, nodes: list[int]) -> None:
        """``job`` holds ``nodes`` (a job found running, e.g. after a restart)."""
        self.held[job] = list(nodes)
