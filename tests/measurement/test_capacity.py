"""Utilization over the makespan and loss of capacity of a finite replay (issue 43 item 3,
measurement/capacity.py): exact numbers on hand-worked schedules, and the engine's streaming sweep
against a plain-Python computation from the per-job table on random small logs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.simulation import simulate as simulate_module

# k = 4; (arrival, duration, need), requested time = duration.
#   FCFS: J0 runs [0, 10) on 3 servers; J1 (need 2) waits for it; J2 (need 1) waits behind J1
#   although it fits in the free server from t = 2 to 10: 1 server x 8 s lost. J1 and J2 start
#   at 10, J2 ends at 14, J1 at 15: makespan 15; busy 3 x 10 + 2 x 5 + 1 x 4 = 44 server-s.
#   EASY: J2 ends by 6 <= J1's reservation at 10: it starts at 2 (backfilled). The free server
#   of [6, 10) cannot take J1 (need 2): nothing lost; same makespan and busy time.
HAND = [(0, 10, 3), (1, 5, 2), (2, 4, 1)]
HAND_K = 4
HAND_EXPECTED = {
    "fcfs": {"starts": [0, 10, 10], "lost": 8.0},
    "easy-backfill": {"starts": [0, 10, 2], "lost": 0.0},
}


def write_log(path: Path, jobs: list[tuple[float, float, float]]) -> Path:
    lines = ["arrival,duration,need,estimate"]
    lines += [f"{a},{d},{n},{d}" for a, d, n in jobs]
    path.write_text("\n".join(lines) + "\n")
    return path


def replay(path: Path, k: int, policy: str) -> schedlab.Result:
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "policy": {"name": policy},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4, "check": True},
    }
    return schedlab.simulate(spec)


@pytest.mark.parametrize("policy", sorted(HAND_EXPECTED))
def test_hand_worked_schedule(tmp_path: Path, policy: str) -> None:
    result = replay(write_log(tmp_path / "hand.csv", HAND), HAND_K, policy)
    expected = HAND_EXPECTED[policy]
    assert result.jobs.column("start").to_pylist() == expected["starts"]
    m = result.metrics
    assert m["makespan"].mean == 15.0
    assert m["utilization_over_makespan"].mean == pytest.approx(44 / (HAND_K * 15), abs=1e-12)
    assert m["loss_of_capacity"].mean == pytest.approx(expected["lost"] / (HAND_K * 15), abs=1e-12)


def test_a_greedy_schedule_loses_nothing_and_a_full_one_is_fully_used(tmp_path: Path) -> None:
    """Jobs of need 1 on k = 2, FCFS: nobody waits while a server is free (loss 0); two jobs
    of need 2 back to back keep both servers busy: utilization 1."""
    ones = replay(write_log(tmp_path / "ones.csv", [(0, 3, 1), (1, 3, 1), (2, 3, 1)]), 2, "fcfs")
    assert ones.metrics["loss_of_capacity"].mean == 0.0
    assert ones.metrics["utilization_over_makespan"].mean == pytest.approx(9 / (2 * 6))
    full = replay(write_log(tmp_path / "full.csv", [(0, 5, 2), (0, 5, 2)]), 2, "fcfs")
    assert full.metrics["utilization_over_makespan"].mean == 1.0
    assert full.metrics["loss_of_capacity"].mean == 0.0


def plain_capacity(arrival, start, finish, need, k: float) -> tuple[float, float, float]:
    """Independent plain-Python computation: busy server-time, lost server-time (free servers
    while a waiting job fits in them) and the makespan, at the midpoints of the spans between
    consecutive event times."""
    jobs = list(zip(arrival, start, finish, need, strict=True))
    t0, t1 = min(arrival), max(finish)
    times = sorted({t0, t1, *arrival, *start, *finish})
    busy = lost = 0.0
    for lo, hi in itertools.pairwise(times):
        mid = (lo + hi) / 2
        used = sum(n for a, s, f, n in jobs if s <= mid < f)
        free = k - used
        busy += used * (hi - lo)
        if any(a <= mid < s and n <= free for a, s, f, n in jobs):
            lost += free * (hi - lo)
    return busy, lost, t1 - t0


job = st.tuples(
    st.integers(0, 30),  # arrival
    st.integers(1, 12),  # duration
    st.integers(1, 4),  # need (k = 4)
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    jobs=st.lists(job, min_size=1, max_size=14),
    policy=st.sampled_from(["fcfs", "easy-backfill", "sjbf"]),
    chunk=st.sampled_from([1, 3, 1 << 16]),
)
def test_the_streaming_sweep_matches_a_plain_computation(
    tmp_path: Path, monkeypatch, jobs, policy, chunk
) -> None:
    """Random small logs under three policies; the sweep advanced at every ``chunk`` jobs that
    leave (1, 3: many partial spans; 65536: one) equals the plain computation from the run's
    per-job table."""
    monkeypatch.setattr(simulate_module, "JOBS_CHUNK", chunk)
    jobs = sorted(jobs)
    result = replay(write_log(tmp_path / "random.csv", jobs), 4, policy)
    table = result.jobs
    arrival, start, finish = (
        np.array(table.column(c).to_pylist()) for c in ("arrival", "start", "finish")
    )
    need = np.array(table.column("demand[servers]").to_pylist())
    busy, lost, span = plain_capacity(arrival, start, finish, need, 4.0)
    m = result.metrics
    assert m["makespan"].mean == span
    assert math.isclose(m["utilization_over_makespan"].mean * 4 * span, busy, abs_tol=1e-9)
    assert math.isclose(m["loss_of_capacity"].mean * 4 * span, lost, abs_tol=1e-9)
