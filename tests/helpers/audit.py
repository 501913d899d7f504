"""The independent audit of a run's per-job records (tests/policies/test_invariants.py and the
other invariant tests): every job completed or lost exactly once, times ordered, non-preemptive
service equal to the work, and a sweep over each server's start/finish events that never exceeds
its capacity."""

from __future__ import annotations

import numpy as np


def audit(result, spec) -> None:
    jobs = result.jobs.to_pydict()
    n = len(jobs["job"])
    assert n == spec["run"]["arrivals"]
    status = np.array(jobs["status"])
    assert set(status) <= {"done", "lost"}, set(status)
    assert result.counters["completions"] + result.counters["lost"] == n
    if result.family != "loss":
        assert (status == "done").all()
    arrival = np.array(jobs["arrival"])
    start = np.array(jobs["start"], dtype=float)
    finish = np.array(jobs["finish"], dtype=float)
    work = np.array(jobs["work"])
    done = status == "done"
    assert np.all(np.diff(arrival) >= 0)
    assert np.all(start[done] >= arrival[done])
    assert np.all(finish[done] >= start[done])
    assert np.all(np.isnan(start[~done])), "a lost job was served"
    served = finish[done] - start[done]
    tol = 1e-9 * np.maximum(1.0, finish[done])
    if result.family == "pooled" and result.policy != "fcfs":
        assert np.all(served >= work[done] - tol)  # preempt-resume never speeds a job up
    else:
        assert np.allclose(served, work[done], rtol=1e-9, atol=1e-9), "non-preemptive job moved"
        demand_cols = [c for c in jobs if c.startswith("demand[")]
        demand = np.column_stack([np.array(jobs[c]) for c in demand_cols])
        server = np.array(jobs["server"])
        capacity = _capacity(spec, result, len(demand_cols))
        for s in np.unique(server[done]):
            mine = np.flatnonzero(done & (server == s))
            events = sorted([(finish[j], 0, j) for j in mine] + [(start[j], 1, j) for j in mine])
            load = np.zeros(len(demand_cols))
            for _, kind, j in events:  # releases before starts at equal times
                load += demand[j] if kind else -demand[j]
                assert np.all(load <= capacity[s] + 1e-9), (s, load, capacity[s])
    if spec["model"].get("time") == "slotted":
        assert np.all(start[done] == np.round(start[done])), "slotted decisions at slot starts"


def _capacity(spec, result, n_res) -> np.ndarray:
    if result.family == "pooled":
        return np.array([[float(spec["cluster"]["servers"])]])
    cap = spec["cluster"]["capacity"]
    row = [cap["cpu"], cap["mem"]] if isinstance(cap, dict) else [cap]
    return np.array([row] * spec["cluster"]["servers"], dtype=float).reshape(-1, n_res)
