"""A trace typed as psychas2022 §7.2 replays it: one job class per (priority group, size) type.

Sizes are the max of normalized CPU and memory rounded up to powers of 1/2 (at least
1/2^POW2_FLOOR); a job's reward rate is its size times its priority group's factor. The typed
table (arrival from 0, duration, demand, ``job_class``) is written for the loss-family replay of
``psychas2022-fig5``/``-fig6`` (schedlab.reproduce.psychas2022). The source is a user's canonical
table ($SCHEDLAB_PSYCHAS2022_TRACE, e.g. Google 2011 with priorities) or the shipped Alibaba 2017
batch_task table (no priorities: one group).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.datasets import data_file
from schedlab.workloads.traces.alibaba import SHIPPED_2017 as ALIBABA

TRACE_ENV = "SCHEDLAB_PSYCHAS2022_TRACE"
TRACE_JOBS = 1_000_000  # "the first million" (§7.2)
POW2_FLOOR = 10  # INFERRED: sizes below 1/2^10 count as 1/2^10
PRIORITY_FACTOR = (1.0, 2.0, 4.0)  # INFERRED reward factor per priority group (values lost)
PRIORITY_BOUNDS = (2, 9)
"""INFERRED: the paper's three priorities 0, 1, 2 as groups of the Google 2011 trace's 0-11:
"free" 0-1, "middle" 2-8, "production" 9-11 (the trace documentation's tiers); group g holds
the priorities p with PRIORITY_BOUNDS[g-1] <= p < PRIORITY_BOUNDS[g]."""


@dataclass(frozen=True)
class TypedTrace:
    """A job table with one job class per (priority group, size) type (§7.2)."""

    path: Path
    label: str
    sizes: np.ndarray  # per type
    priority: np.ndarray  # per type (group index)
    share: np.ndarray  # per type
    mean_duration: np.ndarray  # per type
    arrival: np.ndarray  # per job (sorted), for the upper bound
    end: np.ndarray
    job_class: np.ndarray

    @property
    def reward(self) -> np.ndarray:
        return self.sizes * np.array(PRIORITY_FACTOR)[self.priority]


def typed_trace(out: Path) -> TypedTrace:
    """The trace as (priority, size) types: a user's canonical table ($SCHEDLAB_PSYCHAS2022_TRACE,
    e.g. the Google 2011 trace converted with ``--max-resource --round-pow2``) or, by default,
    the first million jobs of the shipped Alibaba 2017 batch_task table (max of normalized CPU
    and memory, rounded up to powers of 1/2; it has no priorities: one priority group)."""
    env = os.environ.get(TRACE_ENV)
    if env:
        source, label = Path(env), f"{env} (${TRACE_ENV})"
    else:
        raw = Path(ALIBABA)
        source = out / f"alibaba2017_pow2_{TRACE_JOBS}.parquet"
        label = (
            f"{raw.name} (Alibaba 2017 batch tasks, first {TRACE_JOBS:,} jobs) standing in for "
            "the Google 2011 trace"
        )
        if not source.exists():
            from schedlab.workloads.traces import Transforms, convert

            source.parent.mkdir(parents=True, exist_ok=True)
            convert(
                data_file(ALIBABA, "the Alibaba 2017 batch_task table"),
                "alibaba2017",
                source,
                transforms=Transforms(
                    max_resource=True,
                    round_pow2=True,
                    pow2_floor=POW2_FLOOR,
                    window_jobs=(0, TRACE_JOBS),
                ),
            )
    table = pq.read_table(source)
    size = table.column("demand").to_numpy(zero_copy_only=False).astype(float)
    size = np.maximum(2.0 ** np.ceil(np.log2(size)), 2.0**-POW2_FLOOR)
    if "priority" in table.column_names:
        group = priority_group(table.column("priority").fill_null(0).to_numpy(zero_copy_only=False))
    else:
        group = np.zeros(size.size, dtype=np.int64)
    keys, job_class = np.unique(
        np.column_stack([group, -np.log2(size)]), axis=0, return_inverse=True
    )
    job_class = job_class.ravel().astype(np.int32)
    arrival = table.column("arrival").to_numpy(zero_copy_only=False).astype(float)
    duration = table.column("duration").to_numpy(zero_copy_only=False).astype(float)
    order = np.argsort(arrival, kind="stable")
    arrival, duration, job_class = (
        arrival[order] - arrival[order][0],
        duration[order],
        job_class[order],
    )
    path = out / "psychas2022_typed_trace.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "arrival": arrival,
                "duration": duration,
                "demand": 2.0 ** -keys[job_class, 1],
                "job_class": pa.array(job_class, type=pa.int32()),
            }
        ),
        path,
    )
    n = keys.shape[0]
    return TypedTrace(
        path=path,
        label=label,
        sizes=2.0 ** -keys[:, 1],
        priority=keys[:, 0].astype(np.int64),
        share=np.bincount(job_class, minlength=n) / job_class.size,
        mean_duration=np.array([duration[job_class == c].mean() for c in range(n)]),
        arrival=arrival,
        end=arrival + duration,
        job_class=job_class,
    )


def priority_group(priority: np.ndarray) -> np.ndarray:
    """The priority group (0, 1, 2: the paper's priorities, reward factors PRIORITY_FACTOR) of
    each trace priority, by PRIORITY_BOUNDS (INFERRED for the Google 2011 trace's 0-11)."""
    return np.searchsorted(np.array(PRIORITY_BOUNDS), np.asarray(priority), side="right")
