"""The servers a job holds, named by the online scheduler in every family (issue 46).

Independent truth: the simulation's per-job table (``run.jobs``). Fed a simulated run's event
stream, the live scheduler's starts name, job by job, the start time and the servers the jobs
output names: the engine's server (packing, loss) and, in the pooled family, the jobs output's
lowest-free-first placement (report/jobs_formats.placement), for random workloads (several
seeds). Invariants in every family, also for preemptive and elastic pooled policies (whose jobs
output cannot name servers from start to finish): no server is held by two jobs at once in the
pooled family, a job holds its need times its allocation, and the servers held never exceed k.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from schedlab import simulate
from schedlab.model.compile import compile_model
from schedlab.online import Complete, Job, Scheduler, Submit
from schedlab.online.differential import instants, logged_run, replay
from schedlab.report.jobs_formats import Finished
from schedlab.simulation.simulate import as_spec
from tests.helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from check_reference import (
    ELASTIC,
    LOSS,
    PACKING,
    PACKING_2R,
    POOLED,
    POOLED_HYPER,
    VM_LOSS,
)

sys.path.remove(str(ROOT / "benchmarks"))

ARRIVALS = 600
SEEDS = (1, 2, 3)
NON_PREEMPTIVE = [
    ("fcfs", POOLED),
    ("easy-backfill", POOLED_HYPER),
    ("conservative-backfill", POOLED),
    ("sjbf", POOLED_HYPER),
    ("fifo-ff", PACKING),
    ("bf-j", PACKING_2R),
    ("best-fit-admission", LOSS),
    ("first-fit", LOSS),
]
PREEMPTIVE = [
    ("server-filling", POOLED),
    ("most-servers-first", POOLED_HYPER),
    ("elastic-first", ELASTIC),
    ("inelastic-first", ELASTIC),
    ("dra-preemption", VM_LOSS),
]


def small(k: int) -> dict:
    """A pooled FCFS cluster of ``k`` servers (a job's need is the caller's)."""
    job = {"probability": 1.0, "need": 1, "duration": {"dist": "exponential", "mean": 1.0}}
    return {
        "cluster": {"servers": k},
        "workload": {"load": 0.5, "classes": [job]},
        "policy": {"name": "fcfs"},
        "run": {"arrivals": 10},
    }


def spec_of(base: dict, policy: str, seed: int) -> dict:
    return {
        **base,
        "policy": {"name": policy},
        "run": {"arrivals": ARRIVALS, "seed": seed, "jobs": True},
    }


def live_run(spec: dict):
    """The simulated run's event stream fed to a live scheduler: its model and actions."""
    model = compile_model(as_spec(spec))
    return model, replay(Scheduler(model), instants(model, logged_run(model)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("policy", "base"), NON_PREEMPTIVE, ids=[p for p, _ in NON_PREEMPTIVE])
def test_live_starts_name_the_jobs_outputs_servers(policy, base, seed):
    spec = spec_of(base, policy, seed)
    model, actions = live_run(spec)
    table = simulate(spec).jobs
    done = Finished.of(table)
    k = int(spec["cluster"]["servers"])
    placed = done.servers(k)
    assert placed.unplaced == 0
    seq = table.filter(table.column("status").to_numpy(zero_copy_only=False) == "done")
    seq = seq.sort_by("job").column("job").to_pylist()
    want = {s: (float(done.start[i]), tuple(placed.servers(i).tolist())) for i, s in enumerate(seq)}
    starts = [a for a in actions if a.kind == "start"]
    assert len({a.job for a in starts}) == len(starts)  # non-preemptive: one start per job
    got = {a.job: (a.time, a.servers) for a in starts}
    assert set(want) <= set(got)
    assert {j: got[j] for j in want} == want
    if model.family == "pooled":
        assert any(len(a.servers) > 1 for a in starts)  # jobs that need several servers


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize(
    ("policy", "base"), NON_PREEMPTIVE + PREEMPTIVE, ids=[p for p, _ in NON_PREEMPTIVE + PREEMPTIVE]
)
def test_no_server_held_twice_and_capacity_never_exceeded(policy, base, seed):
    model = compile_model(as_spec(spec_of(base, policy, seed)))
    logged = logged_run(model)
    demand = logged.jobs.demand  # by arrival number: the live run's job ids
    k = int(model.spec.cluster.servers)
    pooled = model.family == "pooled"
    live = Scheduler(model)
    held: dict[int, tuple[int, ...]] = {}
    taken = 0
    for instant in instants(model, logged):
        actions = live.events(instant.events, instant.time)
        early = [a for a in actions if a.time < instant.time]
        done = [Complete(e.job_id) for e in instant.events if isinstance(e, Complete)]
        for a in [*early, *done, *actions[len(early) :]]:
            if isinstance(a, Complete):
                held.pop(a.job_id)
                continue
            if a.kind in ("start", "migrate", "set_allocation"):
                taken += a.kind == "start"
                if pooled:
                    assert len(a.servers) == round(float(demand[a.job][0]) * a.allocation), a
                else:
                    assert a.servers == (a.server,)
                held[a.job] = a.servers
            else:
                assert a.servers == ()
                if a.kind in ("preempt", "kill", "reject", "drop"):
                    held.pop(a.job, None)
        busy = [s for servers in held.values() for s in servers]
        assert all(0 <= s < k for s in busy)
        if pooled:
            assert len(busy) == len(set(busy)), f"a server held twice at t = {instant.time}"
        assert {r.id: r.servers for r in live.state().running} == held
    assert taken


def test_state_names_each_running_jobs_servers():
    """Pooled, k = 4, FCFS: a (2 servers) and b (1) start on 0-1 and 2; a completes, c (3
    servers) starts at once on the lowest free ones 0, 1, 3; d (1) waits. GET /state's running
    jobs hold the same."""
    s = Scheduler.from_spec(small(4))
    first = s.events([Submit(Job("a", 2)), Submit(Job("b", 1))], 0.0)
    assert [(a.job, a.servers) for a in first] == [("a", (0, 1)), ("b", (2,))]
    assert s.state().running[0].servers == (0, 1)
    second = s.events([Complete("a"), Submit(Job("c", 3)), Submit(Job("d", 1))], 1.0)
    assert [(a.kind, a.job, a.servers) for a in second] == [("start", "c", (0, 1, 3))]
    assert {r.id: r.servers for r in s.state().running} == {"b": (2,), "c": (0, 1, 3)}
    third = s.events([Complete("b")], 2.0)
    assert [(a.job, a.servers) for a in third] == [("d", (2,))]


def test_a_refused_event_names_no_server():
    """A refused event (an unknown completion) changes no holding: the next start takes the
    servers it would have taken."""
    s = Scheduler.from_spec(small(2))
    s.events([Submit(Job("a", 1))], 0.0)
    with pytest.raises(Exception, match="unknown job"):
        s.events([Complete("zz"), Submit(Job("b", 1))], 1.0)
    assert [a.servers for a in s.events([Submit(Job("b", 1))], 1.0)] == [(1,)]


def test_actions_without_servers_are_the_simulations():
    """The differential test's actions (tests/online/test_differential.py) with the servers
    left out are the ones the simulation logs: naming servers changes no decision."""
    spec = spec_of(POOLED, "easy-backfill", 1)
    model, actions = live_run(spec)
    simulated = [a for a in logged_run(model).actions if a.kind != "complete"]
    assert [replace(a, servers=()) for a in actions] == simulated
