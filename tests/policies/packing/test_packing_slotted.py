"""Slotted time as paper 000 §II defines it, checked on the engine's per-job records.

§II: time slots t = 0, 1, ...; a set A(t) of jobs arrives at the beginning of slot t (A(t) i.i.d.
with mean lambda); the scheduler places jobs from the queue once per slot; a placed job completes
after a geometric number of slots with mean 1/mu and then releases its resource; the queue evolves
as Q(t+1) = Q(t) + A(t) - D(t) (eq. (3)).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import schedlab


def slotted(policy: str, demand, duration, *, arrivals: int, rate=None, load=None, **kw):
    workload = {"classes": [{"demand": demand, "duration": duration}]}
    if rate is not None:
        workload["rate"] = rate
    else:
        workload["load"] = load
    if "batch_size" in kw:
        workload["arrivals"] = {"process": "batch", "batch_size": kw.pop("batch_size")}
    return {
        "cluster": {"servers": kw.pop("servers", 1)},
        "workload": workload,
        "model": {"time": "slotted"},
        "policy": {"name": policy},
        "run": {"arrivals": arrivals, "seed": kw.pop("seed", 1), "jobs": True, **kw},
    }


def table(result) -> dict[str, np.ndarray]:
    jobs = result.jobs.to_pydict()
    return {k: np.array(v) for k, v in jobs.items()}


@pytest.mark.parametrize("policy", ["bf-js", "vqs", "vqs-bf", "fifo-ff"])
def test_departure_at_t_plus_d_frees_capacity_for_slot_t_plus_d(policy):
    """One server, jobs of size 0.6 (two never fit together), one arrival per slot, D = 3 slots:
    the job placed at slot t leaves at t + 3 and the next one is placed at slot t + 3 exactly."""
    spec = slotted(
        policy, 0.6, 3, arrivals=12, rate=1.0, batch_size=1, allow_unstable=True, batches=4
    )
    jobs = table(schedlab.simulate(spec))
    np.testing.assert_array_equal(jobs["arrival"], np.arange(12.0))
    np.testing.assert_array_equal(jobs["start"], 3.0 * np.arange(12))
    np.testing.assert_array_equal(jobs["finish"], 3.0 * np.arange(12) + 3.0)


@pytest.mark.parametrize("policy", ["bf-js", "vqs-bf"])
def test_geometric_service_back_to_back(policy):
    """Geometric D: every job finishes D >= 1 whole slots after it starts, and while the queue is
    not empty the next job starts in the very slot the previous one leaves."""
    spec = slotted(
        policy,
        0.6,
        {"dist": "geometric", "mean": 5},
        arrivals=400,
        load=0.9,
        allow_unstable=True,
        batches=4,
    )
    jobs = table(schedlab.simulate(spec))
    d = jobs["finish"] - jobs["start"]
    assert np.all(d >= 1) and np.all(d == np.round(d))
    np.testing.assert_array_equal(d, jobs["work"])
    order = np.argsort(jobs["start"], kind="stable")
    start, finish, arrival = jobs["start"][order], jobs["finish"][order], jobs["arrival"][order]
    waited = arrival[1:] < finish[:-1]  # the next job was already waiting when this one left
    np.testing.assert_array_equal(start[1:][waited], finish[:-1][waited])
    assert waited.sum() > 50


def test_poisson_counts_per_slot():
    """A(t) ~ Poisson(lambda) at slot starts: integer arrival times, counts per slot Poisson."""
    lam = 1.7
    spec = slotted(
        "bf-js",
        {"dist": "uniform", "low": 0.01, "high": 0.05},
        1,
        arrivals=40_000,
        rate=lam,
        servers=2,
    )
    jobs = table(schedlab.simulate(spec))
    t = jobs["arrival"]
    assert np.all(t == np.round(t))
    counts = np.bincount(t.astype(int))[:-1]  # the last slot is cut by the run length
    assert abs(counts.mean() - lam) < 4 * np.sqrt(lam / counts.size)
    observed = np.bincount(counts, minlength=8)[:8]
    expected = stats.poisson.pmf(np.arange(8), lam) * counts.size
    assert (
        stats.chisquare(observed[:6], expected[:6] * observed[:6].sum() / expected[:6].sum()).pvalue
        > 1e-4
    )


def test_iid_count_distribution_per_slot():
    """process = "batch": batch_size is the count per slot, here 0 or 3 with equal probability."""
    size = {"dist": "discrete", "values": [0, 3], "probabilities": [0.5, 0.5]}
    spec = slotted(
        "bf-js",
        {"dist": "uniform", "low": 0.01, "high": 0.05},
        1,
        arrivals=30_000,
        rate=1.5,
        batch_size=size,
        servers=2,
    )
    t = table(schedlab.simulate(spec))["arrival"].astype(int)
    counts = np.bincount(t)[:-1]
    assert set(np.unique(counts)) <= {0, 3}
    assert abs((counts == 3).mean() - 0.5) < 0.02


def test_geometric_durations_have_mean_one_over_mu():
    spec = slotted(
        "bf-js", 0.05, {"dist": "geometric", "mean": 100}, arrivals=50_000, load=0.5, servers=2
    )
    work = table(schedlab.simulate(spec))["work"]
    assert work.min() >= 1 and np.all(work == np.round(work))
    assert abs(work.mean() - 100) < 4 * np.sqrt(100 * 99 / work.size)


@pytest.mark.parametrize("policy", ["bf-js", "vqs"])
def test_queue_statistics_are_per_slot(policy):
    """The time-average number in queue is the average over slots t of Q(t+1) = the jobs that have
    arrived by slot t and are not placed at slot t (eq. (2)-(3)), over the measurement window."""
    spec = slotted(
        policy,
        {"dist": "discrete", "values": [0.4, 0.6]},
        {"dist": "geometric", "mean": 20},
        arrivals=3000,
        rate=0.06,
        batches=10,
        warmup=0.2,
    )
    result = schedlab.simulate(spec)
    jobs = table(result)
    arrival, start = jobs["arrival"], jobs["start"]
    warm = int(0.2 * arrival.size)
    slots = np.arange(arrival[warm], arrival[-1])
    q = np.array([np.sum((arrival <= s) & (start > s)) for s in slots])
    assert result["mean_number_in_queue"].mean == pytest.approx(q.mean(), rel=1e-12)
    # eq. (3): Q(t+1) = Q(t) + A(t) - D(t) slot by slot
    a = np.array([np.sum(arrival == s) for s in slots[1:]])
    d = np.array([np.sum(start == s) for s in slots[1:]])
    np.testing.assert_array_equal(q[1:], q[:-1] + a - d)


def test_one_decision_per_slot():
    spec = slotted("bf-js", 0.3, {"dist": "geometric", "mean": 4}, arrivals=2000, load=0.8)
    result = schedlab.simulate(spec)
    jobs = table(result)
    event_slots = np.union1d(jobs["arrival"], jobs["finish"])
    assert result.counters["decisions"] == event_slots.size
    assert np.all(jobs["start"] == np.round(jobs["start"]))
