"""The servers each running job holds, named in the online scheduler's actions (issue 46).

Packing and loss: a job is on the server the engine names (its start's or migration's). Pooled:
the engine counts the servers a job holds (its need times its allocation) without naming them;
:class:`Holdings` names them by the jobs output's rule (measurement/free_servers.py): at each
instant,
the jobs leaving or preempted give theirs back and the jobs whose allocation shrinks give back
their highest ones, then the jobs starting take the lowest-numbered free ones in arrival order,
then the jobs whose allocation grows take more. A simulation's non-preemptive run fed to the
scheduler (online/differential.py) thus names the servers its jobs output names
(tests/online/test_servers.py), so a live run's Gantt chart is the simulation's.

Memory: the jobs present and the free servers as intervals, never k per job.
"""

from __future__ import annotations

from collections.abc import Callable

from schedlab.measurement.free_servers import FreeServers, Interval, numbers
from schedlab.online.messages import Action, JobId

RELEASES = frozenset({"complete", "reject", "drop", "kill", "preempt"})  # the job holds none after
HOLDS = frozenset({"start", "migrate", "set_allocation"})  # actions that name the job's servers


def _count(need: float, allocation: float) -> int:
    """The servers a pooled job holds: its need times its allocation (whole servers)."""
    return round(need * allocation)


class Holdings:
    """The servers of the running jobs of a scheduler with ``k`` servers (module docstring);
    ``pooled``: the pooled family (servers named here), else the engine's servers."""

    def __init__(self, k: int, pooled: bool) -> None:
        self.pooled = pooled
        self.free = FreeServers(k) if pooled else None
        self.need: dict[JobId, float] = {}  # pooled: the jobs present, their need
        self.held: dict[JobId, list[Interval]] = {}  # the running jobs, their servers

    def submitted(self, job: JobId, need: float) -> None:
        if self.pooled:
            self.need[job] = need

    def servers(self, job: JobId) -> tuple[int, ...]:
        """The servers ``job`` holds now (none when it does not run)."""
        return numbers(self.held.get(job, ()))

    def name(self, actions: list[Action], arrival: Callable[[JobId], int]) -> list[Action]:
        """``actions`` (in the order taken) with the servers each start, migration and new
        allocation leaves the job holding; ``arrival(job)``: its arrival number."""
        if not actions:
            return actions
        if actions[-1].time == actions[0].time:  # one instant (times never decrease)
            self._instant(actions, arrival)
            return [self._named(a) for a in actions]
        out: list[Action] = []
        i = 0
        while i < len(actions):
            j = i
            while j < len(actions) and actions[j].time == actions[i].time:
                j += 1
            self._instant(actions[i:j], arrival)
            out += [self._named(a) for a in actions[i:j]]
            i = j
        return out

    def _named(self, a: Action) -> Action:
        if a.kind not in HOLDS:
            return a
        return Action(a.time, a.kind, a.job, a.server, a.allocation, self.servers(a.job))

    def _instant(self, actions: list[Action], arrival: Callable[[JobId], int]) -> None:
        """The holdings after the actions of one instant (module docstring)."""
        last: dict[JobId, Action] = {}  # each job's last action of the instant
        started: set[JobId] = set()  # started in the instant, and still running
        for a in actions:
            if a.job is None:
                continue
            last[a.job] = a
            if a.kind == "start":
                started.add(a.job)
            elif a.kind in RELEASES:
                started.discard(a.job)
        if not self.pooled:
            for job, a in last.items():
                if a.kind in RELEASES:
                    self.held.pop(job, None)
                elif a.kind in ("start", "migrate"):
                    self.held[job] = [Interval(a.server, a.server + 1)]
            return
        free = self.free
        assert free is not None
        for job, a in last.items():
            if a.kind in RELEASES or job in started:
                free.give(self.held.pop(job, []))
            if a.kind in RELEASES and a.kind != "preempt":
                self.need.pop(job, None)
        resized = [
            (job, _count(self.need[job], a.allocation) - _size(self.held[job]))
            for job, a in last.items()
            if a.kind == "set_allocation" and job not in started and job in self.held
        ]
        for job, change in resized:  # shrinks first: their highest servers may go to a start
            held = self.held[job]
            extra = -change
            while extra > 0:
                a, b = held.pop()
                keep = max(b - a - extra, 0)
                free.give([Interval(a + keep, b)])
                if keep:
                    held.append(Interval(a, a + keep))
                extra -= b - a - keep
        for job in sorted(started, key=arrival) if len(started) > 1 else started:
            self.held[job] = self._take(job, _count(self.need[job], last[job].allocation))
        for job, change in resized:
            if change > 0:
                self.held[job] = _merged(self.held[job] + self._take(job, change))

    def _take(self, job: JobId, n: int) -> list[Interval]:
        assert self.free is not None
        taken = self.free.take(n)
        if taken is None:  # the engine never starts a job its capacity does not hold
            raise AssertionError(f"job {job!r} needs {n} servers, {self.free.count} are free")
        return taken


def _size(intervals: list[Interval]) -> int:
    return sum(b - a for a, b in intervals)


def _merged(intervals: list[Interval]) -> list[Interval]:
    """``intervals`` sorted, adjacent ones joined."""
    out: list[Interval] = []
    for a, b in sorted(intervals):
        if out and out[-1].hi == a:
            out[-1] = Interval(out[-1].lo, b)
        else:
            out.append(Interval(a, b))
    return out
