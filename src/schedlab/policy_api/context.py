"""What a policy is told about the run it schedules: :class:`PolicyContext`.

The pipeline builds one context per compiled model (``schedlab.model.compile``) and hands it to
the policy's ``check(context, config)`` and ``init(st, context, config, **tables)``. It holds what
the papers' policies read before the first event: the cluster's capacities, the job classes with
their needs, demands, size laws and rewards, the trace's columns a policy may look at, and the
run's options. A policy never sees the spec or the trace table themselves, so what it may depend
on is written here, typed, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from schedlab.streams import stream


class SizeLaw(Protocol):
    """A distribution of the model (a demand or a duration, schedlab.model.distributions)."""

    @property
    def mean(self) -> float: ...

    @property
    def support(self) -> tuple[float, float]:
        """Smallest and largest value."""
        ...

    def values(self) -> np.ndarray | None:
        """The finite set of values of a discrete law, else None."""
        ...


@dataclass(frozen=True)
class JobClass:
    """One job class of the model (a trace without declared classes has one, named "trace",
    with the trace's mean demand and duration).

    ``demand``: one law per resource (pooled family: the server need); ``elastic``: the job's
    service rate is its allocation (grosof2023 §2, berg2020 §2); ``max_alloc``: the largest
    allocation it may use; ``declared_inelastic``: the spec says ``speedup = "inelastic"``."""

    name: str
    probability: float
    demand: tuple[SizeLaw, ...]
    duration: SizeLaw
    elastic: bool
    max_alloc: float
    reward: float
    declared_inelastic: bool = False


@dataclass(frozen=True)
class TraceView:
    """The trace a run replays, as far as a policy may look at it.

    ``needs``: the distinct first-resource demands of its jobs (server needs, pooled family);
    ``has_job_class``: the table has a job_class column; ``replayed_demand()``: the demand rows
    (jobs x resources) of the jobs this run replays, read from the table on each call;
    ``demand_batches()``: the same rows batch by batch (memory: one batch of the table);
    ``jobs_with_estimate``: how many of its jobs have a known requested time (the ``estimate``
    column, e.g. SWF field 9; the engine gives the others NaN); ``users``: its largest user id
    + 1 (the ``user`` column, SWF field 12; 0 when no job has one), the size of per-user
    counts (policies/pooled/site_rules.py)."""

    needs: np.ndarray
    has_job_class: bool
    replayed_demand: Callable[[], np.ndarray]
    demand_batches: Callable[[], Iterator[np.ndarray]]
    jobs_with_estimate: int = 0
    users: int = 0


@dataclass(frozen=True)
class PolicyContext:
    """Everything a policy may know about its run before the first event.

    ``policy_name``/``preset``: the registered name the spec chose and the settings that name
    fixes; ``family``: "packing", "loss" or "pooled"; ``slotted``: discrete time (psychas2019
    §II); ``decision_interval``: time between decision epochs (0: at every event);
    ``resources``: the resource names; ``capacity``: (servers x resources); ``classes``: the
    job classes; ``classes_declared``: the spec declares classes (with a trace: the trace's
    jobs take the declared classes' demands); ``trace``: the replayed trace, or None; ``rate``:
    arrivals per time unit; ``load``: the offered load of the bottleneck resource; ``seed``:
    the run's seed and ``replication`` the replication's number (a policy's own random draws
    start from both: :meth:`random_stream`).
    """

    policy_name: str
    preset: Mapping[str, Any]
    family: str
    slotted: bool
    decision_interval: float
    resources: tuple[str, ...]
    capacity: np.ndarray
    classes: tuple[JobClass, ...]
    classes_declared: bool
    rate: float
    load: float
    seed: int
    trace: TraceView | None = None
    replication: int = 0

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"PolicyContext has no {name!r}: since policy API v2 a policy's check and init are "
            "given a PolicyContext, not the compiled model; docs/writing-policies.md lists what "
            "it holds"
        )

    @property
    def n_servers(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def pooled_k(self) -> float:
        """Total capacity of the pooled server (k unit servers, pooled family)."""
        return float(self.capacity[0, 0])

    @property
    def demands_from_trace(self) -> bool:
        """The jobs' demands come from the trace (a trace without declared classes; its one
        class then only carries the trace's mean demand and duration)."""
        return self.trace is not None and not self.classes_declared

    def random_stream(self) -> np.random.Generator:
        """The policy's own random stream ("policy" in schedlab.streams), from the run's seed
        and replication: independent across replications, and a policy's draws never disturb
        the job sequence (common random numbers)."""
        return stream(self.seed, self.replication, "policy")

    def need_values(self) -> np.ndarray:
        """Every server need a job can have, sorted: the trace's needs (unless the spec declares
        classes, whose fixed demands the trace's jobs take), or the union of the classes' need
        laws (whole numbers 1..k when a law does not list its values)."""
        if self.trace is not None and self.demands_from_trace:
            return np.asarray(self.trace.needs, dtype=np.float64)
        values = [c.demand[0].values() for c in self.classes]
        if any(v is None for v in values):
            return np.arange(1.0, self.pooled_k + 1.0)
        return np.unique(np.concatenate(values)).astype(np.float64)
