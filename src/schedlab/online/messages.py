"""The messages of the online scheduler: jobs and events in, actions and state out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

JobId = str | int


@dataclass(frozen=True)
class Job:
    """A job as the caller submits it: only what the policy may know is required.

    ``id``: the caller's (unique for the scheduler's life); ``demand``: the pooled family's server
    need, or the resource vector (one number per resource, or a mapping by resource name; default:
    the class's demand when it is fixed); ``size``: the exact work at rate 1 (needed by policies
    that know sizes exactly, e.g. SRPT; else it only sets the engine's remaining work);
    ``requested``: the user's requested or estimated time (EASY backfilling's estimate);
    ``job_class``: a class name of the spec (default: its first class), which gives elasticity
    and reward."""

    id: JobId
    demand: float | Sequence[float] | Mapping[str, float] | None = None
    size: float | None = None
    requested: float | None = None
    job_class: str | None = None


@dataclass(frozen=True)
class Submit:
    """Event: ``job`` arrives."""

    job: Job


@dataclass(frozen=True)
class Complete:
    """Event: the running job ``job_id`` has finished."""

    job_id: JobId


Event = Submit | Complete


@dataclass(frozen=True)
class Action:
    """One action the policy took, an engine action by name (``start``, ``preempt``,
    ``migrate``, ``reject``, ``drop``, ``kill``, ``set_allocation``, ``stall``, ``activate``);
    ``job`` is the caller's id (None for a server action), ``server`` the engine's server (None
    when the action has none: reject, drop; 0 in the pooled family, whose k servers the engine
    pools), ``allocation`` the job's allocation (start, set_allocation, migrate; 0 otherwise),
    ``servers`` the numbers of the servers the job holds after a start, migrate or
    set_allocation (pooled: its need times its allocation, lowest free first as in the jobs
    output, online/servers.py; packing, loss: its server), none for other actions. The
    records of :func:`schedlab.online.log.actions_of` also name completions (``complete``),
    which are events, not actions."""

    time: float
    kind: str
    job: JobId | None
    server: int | None
    allocation: float
    servers: tuple[int, ...] = ()


@dataclass(frozen=True)
class RunningJob:
    """A job in service: its server (the engine's: 0 in the pooled family), allocation
    (multiplier of its demand) and the servers it holds (as in :class:`Action`)."""

    id: JobId
    server: int
    allocation: float
    servers: tuple[int, ...]


@dataclass(frozen=True)
class SchedulerState:
    """The scheduler's state after the latest event: ``time`` (the caller's latest), ``queue``
    (waiting jobs, arrival order), ``running`` (arrival order), ``free[s][r]`` (free capacity
    of server s in resource ``resources[r]``), ``stalled[s]`` (server s takes no new job: the
    per-server configuration of the engine; policy-specific configurations are not shown)."""

    time: float
    queue: tuple[JobId, ...]
    running: tuple[RunningJob, ...]
    resources: tuple[str, ...]
    free: tuple[tuple[float, ...], ...]
    stalled: tuple[bool, ...]
