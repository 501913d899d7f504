"""Behaviour of paper 000's policies on hand-built and small random instances.

Hand-built job sequences are replayed from a job table (continuous time with a decision grid of
one time unit, so decisions happen at integer times as in slotted time).
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.errors import SpecError
from schedlab.optim.configurations import reduced_compact


def replay(tmp_path, policy, rows, *, servers=1, capacity=1.0, pools=None, **params):
    """Run ``policy`` on jobs (arrival, duration, demand) and return start and server per job."""
    arrival, duration, demand = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    path = tmp_path / f"jobs-{policy}.parquet"
    pq.write_table(pa.table({"arrival": arrival, "duration": duration, "demand": demand}), path)
    cluster = {"pools": pools} if pools else {"servers": servers, "capacity": capacity}
    spec = {
        "cluster": cluster,
        "workload": {"arrivals": {"process": "trace", "path": str(path)}},
        "model": {"family": "packing", "decision_interval": 1.0},
        "policy": {"name": policy, **params},
        "run": {"jobs": True, "batches": 4, "allow_unstable": True, "warmup": 0.0},
    }
    jobs = schedlab.simulate(spec).jobs.to_pydict()
    return np.array(jobs["start"]), np.array(jobs["server"])


def test_bf_j_puts_each_new_job_on_the_tightest_server(tmp_path):
    rows = [
        (0, 10, 0.5),  # both servers empty: the lowest index
        (0, 10, 0.3),  # server 0 (room 0.5) is tighter than server 1 (room 1)
        (0, 10, 0.6),  # fits only server 1
        (1, 10, 0.25),  # server 0 has 0.2 left, server 1 0.4: server 1
        (1, 10, 0.2),  # server 0 (0.2 left) fits exactly and is the tightest
    ]
    start, server = replay(tmp_path, "bf-j", rows, servers=2)
    np.testing.assert_array_equal(server, [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(start, [0, 0, 0, 1, 1])


def test_bf_s_fills_a_freed_server_with_the_largest_jobs_that_fit(tmp_path):
    rows = [
        (0, 5, 1.0),  # occupies the server until t = 5
        (1, 5, 0.3),
        (2, 5, 0.7),
        (3, 5, 0.5),
        (4, 5, 0.2),
    ]
    # at t = 5 the server is empty: BF-S takes 0.7 (largest), then 0.3 (largest that fits 0.3)
    for policy in ("bf-s", "bf-js"):
        start, _ = replay(tmp_path, policy, rows)
        np.testing.assert_array_equal(start, [0, 5, 5, 10, 10])
    # BF-J takes the queue in arrival order: 0.3, 0.7 fit; then 0.5 and 0.2 wait
    start, _ = replay(tmp_path, "bf-j", rows)
    np.testing.assert_array_equal(start, [0, 5, 5, 10, 10])
    rows[1] = (1, 5, 0.4)  # now arrival order 0.4, 0.7 (no fit), 0.5 (fits), differs from BF-S
    start_j, _ = replay(tmp_path, "bf-j", rows)
    start_s, _ = replay(tmp_path, "bf-s", rows)
    np.testing.assert_array_equal(start_j, [0, 5, 10, 5, 10])
    np.testing.assert_array_equal(start_s, [0, 10, 5, 10, 5])  # 0.7 then 0.2


def test_bf_js_step_1_only_on_servers_with_departures(tmp_path):
    """A job that waits is not re-offered to a server without departures (it cannot fit there),
    and is taken by BF-S on the server that had one, largest first."""
    rows = [
        (0, 3, 0.9),  # server 0 until t = 3
        (0, 8, 0.9),  # server 1 until t = 8
        (1, 4, 0.6),  # waits
        (2, 4, 0.8),  # waits; at t = 3 server 0 takes 0.8 (largest), 0.6 still waits
    ]
    start, server = replay(tmp_path, "bf-js", rows, servers=2)
    np.testing.assert_array_equal(start, [0, 0, 7, 3])
    np.testing.assert_array_equal(server, [0, 1, 0, 0])


def slotted_spec(
    policy, demand, duration, rate, *, capacity=1.0, arrivals=20_000, seed=1, **params
):
    return {
        "cluster": {"servers": 1, "capacity": capacity},
        "workload": {"rate": rate, "classes": [{"demand": demand, "duration": duration}]},
        "model": {"time": "slotted"},
        "policy": {"name": policy, **params},
        "run": {"arrivals": arrivals, "seed": seed, "jobs": True, "allow_unstable": True},
    }


def overlaps(jobs, a, b) -> bool:
    """Whether a job of size a and a job of size b (a != b) ever run at the same time on one
    server: some job i of size a and k of size b with start_i < finish_k and start_k < finish_i.
    For each k, the jobs of size a started before finish_k are a prefix of them in start order,
    and one overlaps k iff the prefix's latest finish is after start_k (a job never started or
    never finished, NaN, overlaps nothing)."""
    assert a != b
    demand = np.array(jobs["demand[resource]"])
    start, finish = np.array(jobs["start"]), np.array(jobs["finish"])
    known = ~(np.isnan(start) | np.isnan(finish))
    ia, ib = np.flatnonzero(known & (demand == a)), np.flatnonzero(known & (demand == b))
    order = ia[np.argsort(start[ia], kind="stable")]
    latest_finish = np.maximum.accumulate(finish[order]) if order.size else np.empty(0)
    before = np.searchsorted(start[order], finish[ib], side="left")
    started = before > 0
    return bool(np.any(latest_finish[before[started] - 1] > start[ib][started]))


def max_concurrent(jobs, size) -> int:
    demand = np.array(jobs["demand[resource]"])
    mine = np.flatnonzero(demand == size)
    start, finish = np.array(jobs["start"])[mine], np.array(jobs["finish"])[mine]
    ev = sorted([(t, 1) for t in start] + [(t, -1) for t in finish], key=lambda e: (e[0], e[1]))
    return max(itertools.accumulate(e[1] for e in ev))


def test_vqs_packs_only_k_red_configurations_fig3a():
    """§VII-A1: with K_RED VQS can schedule two jobs of size 0.4 or one of 0.6, never both sizes;
    at 0.014 arrivals per slot it is unstable (above 2/3 x 0.02) while BF-J/S is stable."""
    sizes = {"dist": "discrete", "values": [0.4, 0.6]}
    geo = {"dist": "geometric", "mean": 100}
    vqs = schedlab.simulate(slotted_spec("vqs", sizes, geo, 0.014))
    bf = schedlab.simulate(slotted_spec("bf-js", sizes, geo, 0.014))
    jv, jb = vqs.jobs.to_pydict(), bf.jobs.to_pydict()
    assert not overlaps(jv, 0.4, 0.6)
    assert max_concurrent(jv, 0.4) == 2 and max_concurrent(jv, 0.6) == 1
    assert overlaps(jb, 0.4, 0.6)  # BF-J/S uses configuration (1,1)
    assert not vqs.stable and bf.stable


def test_vqs_fig3b_five_of_size_2_or_two_of_size_5():
    """§VII-A2: "VQS on the other hand will always schedule either five jobs of size 2 or two of
    size 5" (the upper-rounded configuration is 4 e_4, the actual sizes let a fifth fit)."""
    sizes = {"dist": "discrete", "values": [2, 5], "probabilities": [2 / 3, 1 / 3]}
    result = schedlab.simulate(slotted_spec("vqs", sizes, 100, 0.0306, capacity=10, arrivals=5000))
    jobs = result.jobs.to_pydict()
    assert not overlaps(jobs, 2.0, 5.0)
    assert max_concurrent(jobs, 2.0) == 5 and max_concurrent(jobs, 5.0) == 2


@settings(max_examples=60, suppress_health_check=list(HealthCheck), deadline=None)
@given(
    st.sampled_from([[1], [1, 0.5], [1, 0.25, 0.5]]),
    st.floats(0.05, 0.6),
    st.floats(0.5, 0.95),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_vqs_busy_periods_follow_one_k_red_configuration(scales, low, load, seed, stalling):
    """Between two empty times a server's jobs match one configuration k1 e_1 + km e_jm of its
    K_RED (eq. (7), indices shifted by 2a for a server of capacity C/2^a): only those two virtual
    queues, at most one VQ_1 job at a time, and the main jobs within the unreserved third."""
    J = 4
    spec = {
        "cluster": {"pools": [{"count": 2, "capacity": s} for s in scales]},
        "workload": {
            "load": load,
            "classes": [
                {
                    "demand": {"dist": "uniform", "low": low * min(scales), "high": min(scales)},
                    "duration": {"dist": "geometric", "mean": 6},
                }
            ],
        },
        "model": {"time": "slotted"},
        "policy": {"name": "vqs", "J": J, "stalling": stalling},
        "run": {"arrivals": 300, "seed": seed, "jobs": True, "batches": 4},
    }
    jobs = {k: np.array(v) for k, v in schedlab.simulate(spec).jobs.to_pydict().items()}
    caps = np.array([s for s in scales for _ in range(2)])
    top = caps.max()
    bounds = np.array(
        [2 / 3 * 2.0**-m * top if i == 0 else 0.5 * 2.0**-m * top for m in range(J) for i in (0, 1)]
    )
    typ = np.array(
        [
            int(np.argmax(x > bounds)) if np.any(x > bounds) else 2 * J - 1
            for x in jobs["demand[resource]"]
        ]
    )
    for s in np.unique(jobs["server"]):
        a = round(float(np.log2(top / caps[s])))
        mine = np.flatnonzero(jobs["server"] == s)
        order = mine[np.lexsort((mine, jobs["start"][mine]))]
        periods, current, busy_until = [], [], -np.inf
        for j in order:  # a new busy period starts when the server was empty at the decision
            if current and jobs["start"][j] >= busy_until:
                periods.append(current)
                current = []
            current.append(j)
            busy_until = max(busy_until, jobs["finish"][j])
        periods.append(current)
        configs = [(k.k1, 2 * a + 1, k.main + 2 * a, k.count) for k in reduced_compact(J - a)]
        for period in periods:
            types = set(typ[period].tolist())
            assert any(types <= {t1, jm} if k1 else types <= {jm} for k1, t1, jm, _ in configs), (
                types
            )
            for k1, t1, jm, _ in configs:
                if k1 and types <= {t1, jm} and t1 in types:
                    res = [j for j in period if typ[j] == t1]
                    assert max_overlap(jobs, res) <= 1
                    main = [j for j in period if typ[j] == jm]
                    assert max_load(jobs, main) <= caps[s] / 3 + 1e-9


def max_overlap(jobs, idx) -> int:
    ev = sorted(
        [(jobs["start"][j], 1) for j in idx] + [(jobs["finish"][j], -1) for j in idx],
        key=lambda e: (e[0], e[1]),
    )
    return max(itertools.accumulate(e[1] for e in ev), default=0)


def max_load(jobs, idx) -> float:
    d = jobs["demand[resource]"]
    ev = sorted(
        [(jobs["start"][j], 1, d[j]) for j in idx] + [(jobs["finish"][j], -1, d[j]) for j in idx],
        key=lambda e: (e[0], e[1]),
    )
    return max(itertools.accumulate(k * x for _, k, x in ev), default=0.0)


def test_stalling_stabilizes_vqs_bf_under_fixed_service():
    """§VIII: with deterministic service VQS-BF can lock into configuration (2,1) (Fig. 3b);
    stalling (paper 001 condition (5), beta = 0.9) forces the server to empty and renew."""
    sizes = {"dist": "discrete", "values": [2, 5], "probabilities": [2 / 3, 1 / 3]}
    base = slotted_spec("vqs-bf", sizes, 100, 0.0306, capacity=10, arrivals=300_000, seed=1)
    base["run"]["jobs"] = False
    plain = schedlab.simulate(base)
    base["policy"].update(stalling=True, stall_beta=0.9)
    stalled = schedlab.simulate(base)
    assert not plain.stable
    assert stalled.stable and stalled.counters["stalls"] > 1000
    assert stalled["mean_number_in_queue"].mean < 50


def test_dot_score_co_locates_complementary_jobs_max_mapping_cannot():
    """§VIII multi-resource: a cpu-heavy (0.6, 0.1) and a memory-heavy (0.1, 0.6) job fit together;
    the max-of-resources mapping sees two jobs of size 0.6 and never co-locates them."""
    spec = {
        "cluster": {"servers": 2, "capacity": {"cpu": 1.0, "mem": 1.0}},
        "workload": {
            "load": 0.8,
            "classes": [
                {
                    "probability": 0.5,
                    "demand": {"cpu": 0.6, "mem": 0.1},
                    "duration": {"dist": "exponential", "mean": 1},
                },
                {
                    "probability": 0.5,
                    "demand": {"cpu": 0.1, "mem": 0.6},
                    "duration": {"dist": "exponential", "mean": 1},
                },
            ],
        },
        "policy": {"name": "bf-js"},
        "run": {"arrivals": 3000, "seed": 2, "jobs": True},
    }
    together = {}
    for mode in ("dot", "max"):
        spec["policy"]["multi_resource"] = mode
        jobs = {k: np.array(v) for k, v in schedlab.simulate(spec).jobs.to_pydict().items()}
        cpu_heavy = np.flatnonzero(jobs["demand[cpu]"] == 0.6)
        mem_heavy = np.flatnonzero(jobs["demand[mem]"] == 0.6)
        together[mode] = sum(
            1
            for i in cpu_heavy[:300]
            for k in mem_heavy
            if jobs["server"][i] == jobs["server"][k]
            and jobs["start"][i] < jobs["finish"][k]
            and jobs["start"][k] < jobs["finish"][i]
        )
    assert together["max"] == 0 and together["dot"] > 50


def test_vqs_refuses_capacities_not_powers_of_two_apart():
    spec = slotted_spec("vqs", 0.2, 5, 0.1)
    spec["cluster"] = {"pools": [{"count": 1, "capacity": 1.0}, {"count": 1, "capacity": 0.75}]}
    with pytest.raises(SpecError, match="powers of two"):
        schedlab.simulate(spec)
    spec["cluster"] = {"pools": [{"count": 1, "capacity": 1.0}, {"count": 1, "capacity": 0.125}]}
    spec["policy"]["J"] = 4
    spec["workload"]["classes"][0]["demand"] = 0.1
    with pytest.raises(SpecError, match="J"):
        schedlab.simulate(spec)


def test_best_fit_is_packing_only():
    spec = {
        "cluster": {"servers": 4},
        "workload": {"load": 0.5, "classes": [{"need": 1, "duration": 1.0}]},
        "model": {"family": "pooled"},
        "policy": {"name": "bf-js"},
        "run": {"arrivals": 10},
    }
    with pytest.raises(SpecError, match="packing"):
        schedlab.simulate(spec)
