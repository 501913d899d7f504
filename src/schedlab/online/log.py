"""The engine's action log as records: every applied action (and completion) of a call to the
compiled loop, in the order applied (engine/actions.py ``log_action``, engine/session.take_log)."""

from __future__ import annotations

from collections.abc import Callable

from schedlab.engine.session import take_log
from schedlab.engine.state import ACTION_NAMES, State
from schedlab.online.messages import Action, JobId


def actions_of(st: State, job_id: Callable[[int], JobId]) -> list[Action]:
    """The records logged since the last call, emptying the log (``job_id``: the id of the job
    with this arrival number). Raises engine.session.ActionLogFull (the log kept, for a retry)
    on overflow."""
    ints, floats = take_log(st)
    return [
        Action(
            time=t,
            kind=ACTION_NAMES[kind],
            job=job_id(seq) if seq >= 0 else None,
            server=server if server >= 0 else None,
            allocation=a,
        )
        for (kind, seq, server), (t, a) in zip(ints, floats, strict=True)
    ]
