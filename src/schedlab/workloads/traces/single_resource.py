"""The single-resource job table psychas2019 §VII-B replays (Fig. 5), and the sizes it implies.

A job's size is the max of its normalized CPU and memory; the table is a user's canonical table
($SCHEDLAB_PSYCHAS2019_TRACE, replayed on the paper's own time axis) or a window of the shipped
Alibaba 2017 batch_task table (a stand-in, replayed at a given load). Corollary 1's J for VQS
comes from the table's sizes (:func:`trace_sizes`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.workloads.trace_table import job_sizes
from schedlab.workloads.traces.alibaba import SHIPPED_2017 as ALIBABA

TRACE_ENV = "SCHEDLAB_PSYCHAS2019_TRACE"


@dataclass(frozen=True)
class TraceSource:
    path: Path
    label: str
    natural: bool  # True: the paper's axis (arrival times x 1/scaling); False: load-anchored


def trace_source(out: Path, jobs: int) -> TraceSource:
    """The canonical single-resource job table to replay (the first ``jobs`` jobs of the shipped
    table, converted once into ``out``, unless $SCHEDLAB_PSYCHAS2019_TRACE names one)."""
    env = os.environ.get(TRACE_ENV)
    if env:
        return TraceSource(Path(env), f"{env} (${TRACE_ENV})", True)
    target = out / f"alibaba2017_max_resource_{jobs}.parquet"
    if not target.exists():
        from schedlab.datasets import data_file
        from schedlab.workloads.traces import Transforms, convert

        source = data_file(ALIBABA, "the Alibaba 2017 batch_task table")

        target.parent.mkdir(parents=True, exist_ok=True)
        convert(
            source,
            "alibaba2017",
            target,
            transforms=Transforms(max_resource=True, window_jobs=(0, jobs)),
        )
    return TraceSource(
        target,
        f"{Path(ALIBABA).name}: alibaba2017, first {jobs:,} jobs, max of normalized CPU and memory",
        False,
    )


def trace_sizes(path: Path, eps: float = 0.01) -> tuple[int, np.ndarray, np.ndarray]:
    """The sizes and durations of a job table, and Corollary 1's J: the smallest J with
    F_R(1/2^J) < eps (at least 2)."""
    size, dur = job_sizes(path)
    j = 2
    while j < 24 and np.mean(size <= 2.0**-j) >= eps:
        j += 1
    return j, size, dur
