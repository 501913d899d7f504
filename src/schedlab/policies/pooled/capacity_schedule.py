"""Usable capacity over time (``capacity_schedule``): the steps ``{at, servers}`` of a replay
that holds the capacity its log shows the machine had (issue 47 item 1; decision 0030), shared by
the backfilling kernel (EASY, SJBF, conservative; backfill.py) and FCFS (packing/fifo_ff.py on
the pooled family).

From time ``at`` (the replay's clock, seconds after its first arrival) on, only ``servers`` of
the k pooled servers may be used; before the first step, all k. A step down preempts nothing:
the running jobs finish, and no job starts until its need is free among the usable servers. The
policy state provides the fields ``*CAPACITY_FIELDS`` (the steps sized by "steps", given to
``allocate`` by :func:`capacity_sizes`; their values from :func:`capacity_values`); a decision
calls :func:`capacity_steps` first (it asks for a decision epoch at every step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from schedlab.policy_api import PolicyContext, SpecError, StateField, kernel, wake_at


class CapacityStep(BaseModel):
    """From ``at`` (seconds after the replay's first arrival) on, ``servers`` usable servers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: float = Field(ge=0, allow_inf_nan=False)
    servers: float = Field(ge=0, allow_inf_nan=False)


CAPACITY_FIELDS = (
    StateField("stepped", "b1"),  # a schedule is given
    StateField("cap_at", "f8", "steps"),  # step times, increasing
    StateField("cap_val", "f8", "steps"),  # usable servers from each step on
    StateField("n_steps", "i8"),
    StateField("cap_i", "i8"),  # the first step not yet reached
    StateField("cap_now", "f8"),  # usable servers now
)


def capacity_sizes(steps: Sequence[CapacityStep]) -> dict[str, int]:
    """The size "steps" of the fields (at least 1: an empty schedule has a sentinel)."""
    return {"steps": max(1, len(steps))}


def capacity_values(steps: Sequence[CapacityStep], k: float) -> dict[str, object]:
    """The initial values of the fields for these steps on k servers."""
    return {
        "stepped": bool(steps),
        "cap_at": np.array([s.at for s in steps] or [math.inf]),
        "cap_val": np.array([s.servers for s in steps] or [0.0]),
        "n_steps": len(steps),
        "cap_now": k,
    }


def check_schedule(context: PolicyContext, steps: Sequence[CapacityStep]) -> None:
    """Steps in increasing time, none above the k pooled servers; pooled family only (the
    packing family's servers have vector capacities, which a count of servers does not
    describe)."""
    if steps and context.family != "pooled":
        raise SpecError(
            f"a capacity schedule counts usable servers of k pooled servers: pooled family only "
            f"(not {context.family})",
            field="policy.capacity_schedule",
        )
    k = float(context.capacity[0, 0]) if steps else 0.0
    for i, step in enumerate(steps):
        if i and step.at <= steps[i - 1].at:
            raise SpecError(
                f"steps must be in increasing time: {step.at:g} after {steps[i - 1].at:g}",
                field=f"policy.capacity_schedule[{i}].at",
            )
        if step.servers > k:
            raise SpecError(
                f"{step.servers:g} usable servers is more than the cluster's {k:g}",
                field=f"policy.capacity_schedule[{i}].servers",
            )


@kernel(wraparound=False)
def capacity_steps(st, ps, t_now):
    """Reach every step of the capacity schedule due by now; ask for a decision epoch at the
    next one. Returns whether the usable servers changed."""
    before = ps.cap_now
    while ps.cap_i < ps.n_steps and ps.cap_at[ps.cap_i] <= t_now:
        ps.cap_now = ps.cap_val[ps.cap_i]
        ps.cap_i += 1
    if ps.cap_i < ps.n_steps:
        wake_at(st, ps.cap_at[ps.cap_i])
    return ps.cap_now != before


@kernel(wraparound=False, inline="always")
def step_at(ps, t):
    """The index of the step in force at time t (-1: before the first, all k usable)."""
    if ps.n_steps == 0:
        return -1
    return np.searchsorted(ps.cap_at[: ps.n_steps], t, side="right") - 1


@kernel(wraparound=False, inline="always")
def step_end(ps, c):
    """When step c (-1: the time before the first step) ends: the next step's time, or inf."""
    return ps.cap_at[c + 1] if c + 1 < ps.n_steps else math.inf


@kernel(wraparound=False, inline="always")
def usable_in(ps, c, k):
    """The usable servers of step c (-1: before the first step: all k)."""
    return ps.cap_val[c] if c >= 0 else k
