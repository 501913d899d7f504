"""NodePool names the nodes the jobs output's placement names (report/jobs_formats.placement),
for schedules the online scheduler takes: no Slurm needed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.online import Complete, Job, Scheduler, Submit
from schedlab.report.jobs_formats import placement
from schedlab.slurm.placement import NodePool, NoRoom
from tests.helpers.slurm_spec import spec_text

jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # arrival gap (0: same instant as the previous job)
        st.integers(1, 5),  # need
        st.integers(1, 6),  # run time
        st.integers(1, 8),  # requested time
    ),
    min_size=1,
    max_size=30,
)


def live_run(tmp_path, policy: str, k: int, jobs):
    """Drive the scheduler with integer-time events; the pool names nodes instant by instant.
    Returns (start, finish, need, nodes per job)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text(k, policy))
    scheduler = Scheduler.from_spec(spec)
    pool = NodePool(k)
    arrivals, t = [], 0
    for gap, need, run, req in jobs:
        t += gap
        arrivals.append((t, min(need, k), run, max(req, run)))
    n = len(arrivals)
    start, finish, nodes = [np.nan] * n, [np.nan] * n, [None] * n
    ends: dict[int, list[int]] = {}
    now, i = 0, 0
    while i < n or ends:
        done = ends.pop(now, [])
        batch = [Complete(j) for j in done]
        while i < n and arrivals[i][0] == now:
            a = arrivals[i]
            batch.append(Submit(Job(id=i, demand=a[1], requested=float(a[3]))))
            i += 1
        if batch:
            actions = scheduler.events(batch, float(now))
            started = [(a.job, a.job, arrivals[a.job][1]) for a in actions if a.kind == "start"]
            for j, names in pool.instant(done, started).items():
                start[j], nodes[j] = now, names
                finish[j] = now + arrivals[j][2]
                ends.setdefault(int(finish[j]), []).append(j)
        now += 1
    return np.array(start), np.array(finish), np.array([a[1] for a in arrivals]), nodes


@settings(max_examples=30, deadline=None)
@given(jobs=jobs_strategy, k=st.integers(1, 6), policy=st.sampled_from(["fcfs", "easy-backfill"]))
def test_pool_names_the_nodes_of_the_jobs_output(tmp_path_factory, jobs, k, policy):
    start, finish, need, nodes = live_run(tmp_path_factory.mktemp("p"), policy, k, jobs)
    offline = placement(start, finish, need, k)
    assert offline.unplaced == 0
    assert [offline.servers(j).tolist() for j in range(len(nodes))] == nodes


def test_a_node_out_of_service_is_skipped_and_a_full_pool_refuses():
    pool = NodePool(4, out={1})
    assert pool.instant([], [(0, "a", 2)]) == {"a": [0, 2]}
    assert pool.instant([], [(1, "b", 1)]) == {"b": [3]}
    with pytest.raises(NoRoom):
        pool.instant([], [(2, "c", 1)])
    assert pool.instant(["a"], [(3, "d", 1), (2, "c", 1)]) == {"c": [0], "d": [2]}
