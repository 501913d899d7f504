"""DRA+preemption's rule (psychas2022 §7.2, notes/dra.md), hand-worked on a 3-server trace.

Capacity 1; types small (1/4, priority 0, reward 1), big (1/2, priority 0, reward 2), high
(1/2, priority 1, reward 8); r = 1; every job lasts past the horizon. Arrivals, 0.1 apart: one
big, four small, three high. DRA keeps GPA's configurations of Y + 1: the big job takes a
(0,2,0) server, the small ones fill a (4,0,0) server and two high jobs fill a (0,0,2) server;
no empty server is left, so the third high job is lost. It is of a priority above the lowest, so
jobs of the lowest priority are preempted, smallest first, until their total size reaches
preempt_factor x r x 1/2 (or none is left):

* factor 1: 1/2 -> two small jobs;
* factor 2: 1 -> the four small jobs;
* factor 3: 3/2 -> the four small jobs, then the big one (1 + 1/2 reaches 3/2);
* factor 4: 2 -> all five low-priority jobs (only 3/2 exists); the high jobs are never touched.

The preempted jobs are lost and counted; the arriving high job stays lost.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schedlab

CLASSES = [
    {"name": "small", "probability": 0.3, "demand": 0.25, "duration": 100.0, "reward": 1.0},
    {"name": "big", "probability": 0.3, "demand": 0.5, "duration": 100.0, "reward": 2.0},
    {"name": "high", "probability": 0.4, "demand": 0.5, "duration": 100.0, "reward": 8.0},
]
ORDER = [1, 0, 0, 0, 0, 2, 2, 2]  # big, 4 small, 3 high


def run(tmp_path, policy: dict):
    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table(
            {
                "arrival": np.arange(len(ORDER)) * 0.1,
                "duration": np.full(len(ORDER), 100.0),
                "demand": np.array([0.25, 0.5, 0.5])[ORDER],
                "job_class": pa.array(ORDER, type=pa.int32()),
            }
        ),
        path,
    )
    return schedlab.simulate(
        {
            "cluster": {"servers": 3, "capacity": 1.0},
            "workload": {"arrivals": {"process": "trace", "path": str(path)}, "classes": CLASSES},
            "model": {"family": "loss"},
            "policy": {"reservation": 1, **policy},
            "run": {"jobs": True, "check": True, "warmup": 0.0, "drain": False, "horizon": 50},
        }
    )


@pytest.mark.parametrize(
    ("factor", "small", "big"), [(1.0, 2, 0), (2.0, 4, 0), (3.0, 4, 1), (4.0, 4, 1)]
)
def test_lowest_priority_smallest_first_until_the_freed_size_reaches_the_rule(
    tmp_path, factor, small, big
):
    r = run(
        tmp_path,
        {"name": "dra-preemption", "priorities": [0, 0, 1], "preempt_factor": factor},
    )
    jobs = r.jobs.to_pydict()
    lost = [c for c, s in zip(jobs["job_class"], jobs["status"], strict=True) if s == "lost"]
    started = [c for c, t in zip(jobs["job_class"], jobs["start"], strict=True) if t == t]
    assert started.count("high") == 2 and started.count("small") == 4 and "big" in started
    assert r.counters["preemptions"] == small + big
    assert lost.count("small") == small and lost.count("big") == big
    assert lost.count("high") == 1  # the arriving job is not admitted by its preemptions
    assert r.counters["lost"] == r.counters["dropped"] + r.counters["preemptions"]


def test_plain_dra_loses_the_high_job_and_preempts_nothing(tmp_path):
    r = run(tmp_path, {"name": "dra"})
    assert r.counters["preemptions"] == 0
    assert r.counters["lost"] == r.counters["dropped"] == 1
