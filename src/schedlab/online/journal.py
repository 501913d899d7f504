"""The online scheduler's journal: a snapshot of the states and the events applied since.

The engine and policy states are copied (engine/session.py ``snapshot``) before an event once
every ``length`` events, after the slots or the policy state were reallocated and after a state
was put back; the engine's inputs of each event applied since are kept. Putting the states back
as they were before a refused event is the copy with those events run again, their actions
dropped: the engine is deterministic, and so is a policy marked ``replayable`` (decision 0015).
A policy that is not replayable is journalled with ``length`` 1: a copy before every event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from schedlab.engine.session import EngineSession, JobRow, Snapshot


@dataclass(frozen=True)
class Instant:
    """An applied event as the engine took it: the new jobs' rows, the slots of the jobs
    completing, the time."""

    rows: list[JobRow]
    done: list[int]
    at: float


def before(at: float) -> float:
    """The last time before ``at``: the engine runs to it first (timers, the decision grid)."""
    return math.nextafter(at, -math.inf)


class Journal:
    """The snapshot of ``session`` and the events applied since (module docstring)."""

    def __init__(self, session: EngineSession, length: int) -> None:
        self.session = session
        self.length = length
        self._saved: Snapshot | None = None
        self._instants: list[Instant] = []

    def __len__(self) -> int:
        return len(self._instants)

    def begin(self) -> None:
        """Before an event: a new snapshot when there is none, the journal is full, or the
        states were reallocated since the last one (it would not fit)."""
        saved = self._saved
        full = len(self._instants) >= self.length
        if saved is None or full or not self.session.is_current(saved):
            self._saved, self._instants = self.session.snapshot(), []

    def record(self, instant: Instant) -> None:
        """``instant`` was applied."""
        self._instants.append(instant)

    def rewind(self) -> None:
        """Put the states back as they were before the event being applied: the snapshot, and
        the journal's events run again (their actions dropped)."""
        assert self._saved is not None
        session = self.session
        session.restore(self._saved)
        for instant in self._instants:
            session.run_until(before(instant.at))
            session.run_until(instant.at, instant.rows, instant.done)
            session.drop_log()
        self._saved, self._instants = None, []  # the copy is in use: take one before the next
