"""ServerFilling and ServerFilling-SRPT against a plain reference simulator (paper 004 §3.2).

The reference recomputes every decision from scratch, as the C program of the benchmarks does:
order the jobs present (FCFS, or SRPT by need x remaining duration, ties to the earlier
arrival), take the smallest prefix M needing at least k servers, and serve M's jobs in
decreasing order of need (ties by priority) while they fit. schedlab keeps the order in heaps,
walks them lazily and keeps a decision while it provably stands; every job must finish at the
same time in both.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest

import schedlab
from schedlab.policy_api import contract
from tests.helpers.specs import pooled_spec


def reference_finish(arrival, need, work, k, srpt):
    """Finish time of every job (jobs given in arrival order) under ServerFilling(-SRPT)."""
    n = len(arrival)
    remaining = np.array(work, dtype=float)
    finish = np.full(n, math.nan)
    present: list[int] = []
    now = 0.0
    nxt = 0
    while nxt < n or present:
        if srpt:
            ordered = sorted(present, key=lambda j: (need[j] * remaining[j], j))
        else:
            ordered = sorted(present)
        prefix, total = [], 0.0
        for j in ordered:
            prefix.append(j)
            total += need[j]
            if total >= k:
                break
        served, used = [], 0.0
        for j in sorted(prefix, key=lambda j: (-need[j], prefix.index(j))):
            if used + need[j] <= k:
                used += need[j]
                served.append(j)
        t_arrival = arrival[nxt] if nxt < n else math.inf
        first = min(served, key=lambda j: remaining[j]) if served else -1
        t_done = now + remaining[first] if served else math.inf
        t = min(t_arrival, t_done)
        for j in served:
            remaining[j] -= t - now
        now = t
        if t_done <= t_arrival:
            remaining[first] = 0.0
            finish[first] = now
            present.remove(first)
        else:
            present.append(nxt)
            nxt += 1
    return finish


@pytest.mark.parametrize(
    ("policy", "k", "needs", "load"),
    [
        ("server-filling-srpt", 8, (1, 2, 4, 8), 0.95),
        ("server-filling-srpt", 9, (1, 3, 9), 0.9),
        ("server-filling", 8, (1, 2, 4, 8), 0.9),
    ],
)
def test_every_job_finishes_when_the_reference_says(policy, k, needs, load):
    classes = [
        {
            "probability": 1 / len(needs),
            "need": n,
            "duration": {"dist": "exponential", "mean": 1 / n},
        }
        for n in needs
    ]
    spec = pooled_spec(k, load, policy=policy, arrivals=3000, classes=classes, seed=11, jobs=True)
    jobs = schedlab.simulate(spec).jobs.to_pydict()
    order = np.argsort(jobs["job"])
    arrival = np.array(jobs["arrival"])[order]
    need = np.array(jobs["demand[servers]"])[order]
    work = np.array(jobs["work"])[order]
    finish = np.array(jobs["finish"])[order]
    expected = reference_finish(arrival, need, work, k, srpt=policy.endswith("srpt"))
    assert len(finish) == 3000
    np.testing.assert_allclose(finish, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("policy", "k", "needs"),
    [
        ("server-filling-srpt", 8, (1, 2, 4, 8)),
        ("divisor-filling-srpt", 6, (1, 2, 3, 6)),
        ("divisor-filling-srpt", 12, (1, 2, 3, 4, 6, 12)),
    ],
)
def test_held_candidates_give_the_walk_of_the_heaps(policy, k, needs, monkeypatch):
    """A rule that draws a prefix of the order keeps its waiting candidates out of the heaps
    (ordering.held_draw) and often skips the heaps; every job must finish exactly when it does
    with every waiting job in the heaps and a full walk of them at each decision."""
    classes = [
        {"probability": 1 / len(needs), "need": n, "duration": {"dist": "exponential", "mean": 1}}
        for n in needs
    ]
    spec = pooled_spec(k, 0.97, policy=policy, arrivals=4000, classes=classes, seed=5, jobs=True)
    held = schedlab.simulate(spec).jobs.to_pydict()
    registered = contract._REGISTRY[policy]
    init = registered.kernels.init
    walked_init = functools.partial(init.func, **{**init.keywords, "prefix": False})
    kernels = dataclasses.replace(registered.kernels, init=walked_init)
    monkeypatch.setitem(
        contract._REGISTRY, policy, dataclasses.replace(registered, kernels=kernels)
    )
    walked = schedlab.simulate(spec).jobs.to_pydict()
    assert len(held["finish"]) == 4000
    assert held["job"] == walked["job"]
    assert held["finish"] == walked["finish"]
