"""A trace typed as psychas2018 §7.3 replays it: one VM type per size 1/2^k, k = 0..7.

Each job's size is the max of its normalized CPU and memory, rounded up to a power of 1/2 (smaller
jobs join 1/2^7); the typed table (arrival from 0, duration, demand, ``job_class``) is written
for the typed replay of ``psychas2018-fig7``/``-fig8`` (schedlab.reproduce.psychas2018), on servers
of size 1. The source is a user's canonical Google 2011 table ($SCHEDLAB_PSYCHAS2018_TRACE) or
the shipped Alibaba 2017 batch_task table standing in for it.
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

TRACE_ENV = "SCHEDLAB_PSYCHAS2018_TRACE"  # a canonical Google 2011 table (docs/traces.md)
TYPES = 8  # §7.3: sizes 1, 1/2, ..., 1/2^7 ("the total number of queues is 8")
COLUMNS = ("arrival", "duration", "demand")


@dataclass(frozen=True)
class VmTrace:
    """A job table typed as in §7.3: one VM type per size 1/2^k, k = 0..7 (max of CPU and memory
    rounded up to a power of 1/2; smaller jobs join 1/2^7), replayed on servers of size 1."""

    path: Path  # arrival, duration, demand, job_class (index into ``sizes``)
    label: str
    natural: bool  # the paper's own trace (server counts as in the paper) or a stand-in
    sizes: np.ndarray  # per type present
    share: np.ndarray
    mean_duration: np.ndarray
    arrival: np.ndarray  # per job, from 0

    @property
    def offered(self) -> float:
        """Mean offered work over the window, in servers of size 1."""
        return float(
            np.sum(self.share * self.sizes * self.mean_duration) * self.arrival.size
        ) / float(self.arrival[-1] - self.arrival[0])


def typed_source(out: Path, jobs: int) -> tuple[pa.Table, str, bool]:
    """The window of ``jobs`` arrivals with one size per job (max resource, rounded up to a power
    of 1/2, at least 1/2^7): a user's canonical Google 2011 table ($SCHEDLAB_PSYCHAS2018_TRACE),
    else the shipped Alibaba 2017 batch_task table (data folder of schedlab.datasets)."""
    from schedlab.workloads.traces import max_resource, round_pow2, window_jobs

    floor = TYPES - 1
    env = os.environ.get(TRACE_ENV)
    if env:
        table = pq.read_table(env)
        if "demand" not in table.column_names:
            table = max_resource(table)
        table = round_pow2(window_jobs(table, jobs), ["demand"], floor_exponent=floor)
        return table, f"{env} (${TRACE_ENV}), first {table.num_rows:,} jobs", True
    target = out / f"alibaba2017_pow2_{jobs}.parquet"
    source = data_file(ALIBABA, "the Alibaba 2017 batch_task table")
    if not target.exists():
        from schedlab.workloads.traces import Transforms, convert

        target.parent.mkdir(parents=True, exist_ok=True)
        convert(
            source,
            "alibaba2017",
            target,
            transforms=Transforms(
                max_resource=True, round_pow2=True, pow2_floor=floor, window_jobs=(0, jobs)
            ),
        )
    label = (
        f"{source.name} (Alibaba 2017 batch tasks, first {jobs:,} jobs) standing in for the "
        "Google 2011 trace"
    )
    return pq.read_table(target), label, False


def vm_trace(out: Path, jobs: int) -> VmTrace:
    """The typed job table of Figs 7-8 (a window of ``jobs`` arrivals), written into ``out``
    for the typed replay."""
    table, label, natural = typed_source(out, jobs)
    col = {c: table.column(c).to_numpy(zero_copy_only=False).astype(float) for c in COLUMNS}
    order = np.argsort(col["arrival"], kind="stable")
    arrival = col["arrival"][order] - col["arrival"][order][0]
    duration, size = col["duration"][order], col["demand"][order]
    exponent = np.rint(-np.log2(size)).astype(np.int64)
    present, job_class = np.unique(exponent, return_inverse=True)
    job_class = job_class.ravel().astype(np.int32)
    sizes = 2.0 ** -present.astype(float)
    path = out / "psychas2018_typed_trace.parquet"
    pq.write_table(
        pa.table(
            {
                "arrival": arrival,
                "duration": duration,
                "demand": sizes[job_class],
                "job_class": pa.array(job_class, type=pa.int32()),
            }
        ),
        path,
    )
    return VmTrace(
        path=path,
        label=label,
        natural=natural,
        sizes=sizes,
        share=np.bincount(job_class, minlength=sizes.size) / job_class.size,
        mean_duration=np.array([duration[job_class == c].mean() for c in range(sizes.size)]),
        arrival=arrival,
    )
