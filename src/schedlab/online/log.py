"""The engine's action log as records: every applied action (and completion) of a call to the
compiled loop, in the order applied (engine/actions.py ``log_action``)."""

from __future__ import annotations

from collections.abc import Callable

from schedlab.engine import constants as K
from schedlab.engine.state import ACTION_NAMES, State
from schedlab.errors import SchedlabError
from schedlab.online.records import Action, JobId


class ActionLogFull(SchedlabError):
    """More actions than the action log holds were taken in one call of the loop."""

    def __init__(self, written: int, rows: int) -> None:
        self.written = written
        self.rows = rows
        super().__init__(
            f"the engine's action log holds {rows:,} records but {written:,} actions were taken "
            "in one call: the extra ones were not kept (give it more rows)"
        )


def actions_of(st: State, job_id: Callable[[int], JobId]) -> list[Action]:
    """The records logged since the last call, emptying the log (``job_id``: the id of the job
    with this arrival number). Raises ActionLogFull (the log kept, for a retry) on overflow."""
    n = int(st.ctr[K.LOG_N])
    rows = st.log_i.shape[0]
    if n > rows:
        raise ActionLogFull(n, rows)
    st.ctr[K.LOG_N] = 0
    ints = st.log_i[:n].tolist()
    floats = st.log_f[:n].tolist()
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
