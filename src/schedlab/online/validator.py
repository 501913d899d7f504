"""The online scheduler's checks of its input: time, events, ids, classes, demands, sizes.

Everything that does not depend on the engine's state is checked here, before anything runs, in
one-line SpecErrors naming the field (docs/decisions/0012-online-scheduler.md); a job that passes
becomes the row the engine's block takes (engine/session.JobRow).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Container, Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

import numpy as np

from schedlab.engine.session import JobRow
from schedlab.errors import SpecError, shown
from schedlab.model.compile import CompiledModel
from schedlab.online.messages import Complete, Event, Job, JobId, Submit


class Checked(NamedTuple):
    """The events of one instant, checked: the new jobs, their rows, the completions."""

    submits: list[Job]
    rows: list[JobRow]
    completions: list[Complete]


class Validator:
    """The checks of the input of a scheduler of ``model``; ``tolerance``: the engine's of its
    capacity checks (a demand fits a server when it exceeds the capacity by at most that)."""

    def __init__(self, model: CompiledModel, tolerance: float) -> None:
        self.model = model
        self._classes = {c.name: i for i, c in enumerate(model.classes)}
        self._kinds = (np.unique(model.capacity, axis=0) + tolerance).tolist()  # server kinds
        # one resource: the largest server's capacity (a single number fits a server iff it fits
        # this one); none for several resources, where a single number is refused
        self._largest = max(kind[0] for kind in self._kinds) if len(model.resources) == 1 else -1
        knowledge = model.policy.traits_at(model.config).size_knowledge
        self._needs_size = knowledge == "exact"

    def check(
        self, batch: list[Event], at: float, latest: float, known: Container[JobId]
    ) -> Checked:
        """The events ``batch`` at ``at`` (the latest event was at ``latest``; ``known``: the
        ids ever submitted), checked; SpecError otherwise."""
        self.time(at, latest)
        submits = [e.job for e in batch if isinstance(e, Submit)]
        completions = self.completions(batch)
        rows = [self.row(job) for job in self.new_jobs(submits, known)]
        return Checked(submits, rows, completions)

    def time(self, at: float, latest: float) -> None:
        not_real = type(at) is not float and (
            isinstance(at, bool) or not isinstance(at, numbers.Real)
        )
        try:
            finite = not not_real and math.isfinite(at)
        except OverflowError:  # an integer beyond a float's range
            raise SpecError(f"time {_beyond(at)} is beyond a float's range", field="at") from None
        if not finite:
            raise SpecError(f"time {at!r} is not a finite number", field="at")
        if at < latest:
            raise SpecError(
                f"time goes backwards: {shown(at)} is before the latest event at {shown(latest)}",
                field="at",
            )

    def completions(self, batch: list[Event]) -> list[Complete]:
        seen: set[JobId] = set()
        done = []
        for event in batch:
            if isinstance(event, Complete):
                if event.job_id in seen:
                    raise SpecError(f"job {event.job_id!r} completes twice", field="job_id")
                seen.add(event.job_id)
                done.append(event)
            elif not isinstance(event, Submit):
                raise SpecError(f"unknown event {event!r} (Submit or Complete)", field="events")
        return done

    def new_jobs(self, jobs: list[Job], known: Container[JobId]) -> list[Job]:
        seen: set[JobId] = set()
        for job in jobs:
            if not isinstance(job, Job):
                raise SpecError(f"{job!r} is not a Job", field="job")
            if not isinstance(job.id, str | int) or isinstance(job.id, bool):
                raise SpecError(f"job id {job.id!r} must be a string or an integer", field="id")
            if job.id in known or job.id in seen:
                raise SpecError(f"job id {job.id!r} is already used", field="id")
            seen.add(job.id)
        return jobs

    def row(self, job: Job) -> JobRow:
        """The row of a valid job; SpecError otherwise."""
        model = self.model
        where = f"job {job.id!r}"
        name = job.job_class if job.job_class is not None else model.classes[0].name
        c = self._classes.get(name)
        if c is None:
            known = ", ".join(self._classes)
            raise SpecError(
                f"{where}: unknown class {name!r}; the classes are {known}", field="job_class"
            )
        demand = self._demand(job, model.classes[c], where)
        if self._needs_size and job.size is None:
            raise SpecError(
                f"{where}: policy '{model.policy.name}' knows sizes exactly: give its size",
                field="size",
            )
        work = math.inf if job.size is None else _not_negative(job.size, where, "size")
        estimate = (
            math.nan if job.requested is None else _not_negative(job.requested, where, "requested")
        )
        return JobRow(c, demand, work, estimate)

    def _demand(self, job: Job, cls: Any, where: str) -> list[float]:
        resources = self.model.resources
        one = type(job.demand) is int or type(job.demand) is float  # (no ABC check)
        if one and 0 < job.demand <= self._largest:  # the common case: it fits, said at once
            return [float(job.demand)]
        if job.demand is None:
            values = [getattr(d, "value", None) for d in cls.demand]
            if any(v is None for v in values):
                raise SpecError(
                    f"{where}: give its demand (class {cls.name!r} has a random one)",
                    field="demand",
                )
            demand = [float(v) for v in values]  # type: ignore[arg-type]
        elif type(job.demand) is dict or isinstance(job.demand, Mapping):
            unknown = sorted(set(job.demand) - set(resources))
            if unknown:
                raise SpecError(
                    f"{where}: unknown resource {unknown[0]!r}; the cluster has "
                    f"{', '.join(resources)}",
                    field="demand",
                )
            demand = [_number(job.demand.get(r, 0.0), where) for r in resources]
        else:
            values = [job.demand] if one or not isinstance(job.demand, Sequence) else job.demand
            demand = [_number(v, where) for v in values]
            if len(demand) != len(resources):
                raise SpecError(
                    f"{where}: demand has {len(demand)} value(s), the cluster "
                    f"{len(resources)} resource(s) ({', '.join(resources)})",
                    field="demand",
                )
        if not (all(0 <= d < math.inf for d in demand) and max(demand) > 0):
            raise SpecError(
                f"{where}: demand {demand} must be finite, >= 0 and not all 0", field="demand"
            )
        if not any(_within(demand, kind) for kind in self._kinds):
            raise SpecError(
                f"{where}: demand {demand} fits no server of the cluster", field="demand"
            )
        return demand


def _within(demand: list[float], capacity: list[float]) -> bool:
    return all(d <= c for d, c in zip(demand, capacity, strict=True))


def _number(value: Any, where: str, name: str = "demand") -> float:
    if type(value) is float:  # (the common case, without the ABC check)
        return value
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise SpecError(f"{where}: {name} {value!r} is not a number", field=name)
    try:
        return float(value)
    except OverflowError:  # an integer beyond a float's range
        raise SpecError(
            f"{where}: {name} {_beyond(value)} is beyond a float's range", field=name
        ) from None


def _beyond(value: Any) -> str:
    """An integer too large for a float as a message shows it (1.000e+400)."""
    return f"{Decimal(value):.3e}"


def _not_negative(value: Any, where: str, name: str) -> float:
    x = _number(value, where, name)
    if not 0 <= x < math.inf:
        raise SpecError(f"{where}: {name} {value!r} must be a finite number >= 0", field=name)
    return x
