"""Decisions identical to the simulation's (issue 34 item 2): fed the event stream of a simulated
run (its arrivals, and its completions at their times and in its order), the online scheduler
takes exactly the actions the simulation took, for every registered policy in each of its
families (the spec of benchmarks/check_reference.py's case, fixed seed) and for a replay of the
KTH-SP2 log excerpt with EASY backfilling. The simulation's actions come from the engine's action
log; both sides run the same cached compiled runner."""

from __future__ import annotations

import math
import sys
from dataclasses import replace

import pytest

from schedlab.engine import constants as K
from schedlab.engine.session import ActionLogFull
from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.online import Scheduler
from schedlab.online.differential import instants, logged_run, replay
from schedlab.online.log import actions_of
from schedlab.policies.registry import get_policy
from schedlab.simulation.simulate import as_spec, prepare, steps, with_run
from schedlab.workloads.traces import convert
from tests.data import KTH
from tests.helpers.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from check_reference import PACKING_2R, PACKING_SLOTTED, POOLED, VM, registry_cases  # noqa: E402

sys.path.remove(str(BENCHMARKS))

EVENTS = 10_000  # events (arrivals and completions) compared per registered policy (item 2)
ARRIVALS = 2500  # the extra settings below: about 5,000 events each
CASES = registry_cases()
ONLINE = [c for c in CASES if not get_policy(c[0]).hooks.whole_run]


def unnamed(actions):
    """The actions without the servers the scheduler names (the engine's log names none;
    tests/online/test_servers.py checks them)."""
    return [replace(a, servers=()) for a in actions]


def model_of(base: dict, policy: str, params: dict, arrivals: int = ARRIVALS):
    spec = {**base, "policy": {"name": policy, **params}, "run": {"arrivals": arrivals, "seed": 7}}
    return compile_model(as_spec(spec))


def assert_same_decisions(model, events: int = 0) -> None:
    """The online scheduler's actions on the simulation's event stream are the simulation's;
    with ``events``, the run is first lengthened until its stream holds at least that many (a
    loss system's rejected arrivals never complete, a run ends with jobs present)."""
    logged = logged_run(model)
    stream = instants(model, logged)
    while (count := sum(len(i.events) for i in stream)) < events:
        arrivals = math.ceil(model.spec.run.arrivals * 1.05 * events / count)
        model = compile_model(with_run(model.spec, arrivals=arrivals))
        logged = logged_run(model)
        stream = instants(model, logged)
    online = unnamed(replay(Scheduler(model), stream))
    simulated = [a for a in logged.actions if a.kind != "complete"]
    assert simulated, "the simulation took no action"
    for i, (got, want) in enumerate(zip(online, simulated, strict=False)):
        assert got == want, f"action {i} of {len(simulated)} differs"
    assert len(online) == len(simulated)


@pytest.mark.parametrize(
    ("policy", "base", "params"),
    [(p, b, q) for p, _, b, q in ONLINE],
    ids=[f"{p}/{f}" for p, f, _, _ in ONLINE],
)
def test_online_actions_are_the_simulations(policy, base, params):
    assert_same_decisions(model_of(base, policy, params, EVENTS // 2), events=EVENTS)


@pytest.mark.parametrize(
    ("policy", "base"),
    [
        ("fifo-ff", PACKING_SLOTTED),
        ("fifo-ff", PACKING_2R),
        ("vqs-bf", PACKING_SLOTTED),
        ("bf-j", PACKING_2R),
    ],
    ids=["slotted", "two-resources", "vqs-bf-slotted", "bf-j-two-resources"],
)
def test_slotted_time_and_two_resources(policy, base):
    """The decision grid of slotted time (decisions at whole slots, psychas2019 §II) and
    resource vectors (BF-J's dot-product score, psychas2019 §VIII), beyond the registry's
    cases."""
    assert_same_decisions(model_of(base, policy, {}))


@pytest.mark.parametrize(
    ("policy", "base", "timers"), [("g16", VM, True), ("fifo-ff", PACKING_SLOTTED, False)]
)
def test_advancing_the_clock_between_events_changes_no_decision(policy, base, timers):
    """advance(now) between the events (at midpoints) returns the actions of the policy's
    timers (G16's sampling events) and of the decision grid up to now: the actions,
    concatenated, are the simulation's."""
    model = model_of(base, policy, {}, arrivals=400)
    logged = logged_run(model)
    stream = instants(model, logged)
    s = Scheduler(model)
    actions = []
    lo = -math.inf
    for previous, instant in zip([None, *stream], stream, strict=False):
        calls = [(s.events, instant.events, instant.time)]
        if previous is not None:
            calls.insert(0, (s.advance, None, (previous.time + instant.time) / 2))
        for call, events, hi in calls:
            taken = call(hi) if events is None else call(events, hi)
            assert all(lo < a.time <= hi for a in taken)  # each call: the actions up to its time
            actions += taken
            lo = hi
    assert unnamed(actions) == [a for a in logged.actions if a.kind != "complete"]
    between = any(a.time not in {i.time for i in stream} for a in actions)
    assert between == timers


def test_every_registered_policy_decides_online():
    """No built-in policy reads the whole run any more (BF-J/S, VQS and VQS-BF are per slot,
    decision 0013): every case of the registry is compared above."""
    assert len(ONLINE) == len(CASES)
    assert {"bf-j", "bf-s", "bf-js", "vqs", "vqs-bf"} <= {c[0] for c in ONLINE}


def test_a_policy_that_reads_the_whole_run_is_refused_in_one_line():
    """A plugin declaring ``whole_run`` (its state built from every job of the run) cannot
    decide online."""
    model = model_of(POOLED, "server-filling", {}, arrivals=50)
    model = replace(model, policy=replace(model.policy, whole_run=True))
    with pytest.raises(SpecError) as refused:
        Scheduler(model)
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith("policy.name: policy 'server-filling' cannot run online: it reads the")


def test_a_replay_of_the_kth_sp2_log_with_easy_backfilling(tmp_path):
    """The KTH-SP2 excerpt (300 jobs, 100 nodes) with requested times as EASY's estimates."""
    log = tmp_path / "kth.parquet"
    convert(KTH, "swf", log)
    spec = {
        "cluster": {"servers": 100},
        "workload": {"arrivals": {"process": "trace", "path": str(log)}},
        "model": {"family": "pooled"},
        "policy": {"name": "easy-backfill"},
        "run": {"allow_unstable": True},
    }
    model = compile_model(as_spec(spec))
    logged = logged_run(model)
    assert len(logged.jobs) == 300
    assert sum(a.kind == "start" for a in logged.actions) == 300
    assert_same_decisions(model)


def test_the_action_log_is_off_in_simulations_and_its_overflow_is_an_error():
    """An ordinary simulation logs nothing; a logged one with too small a log says so (the
    actions past its capacity were not kept) instead of handing out a partial log."""
    model = model_of(POOLED, "server-filling", {}, arrivals=200)
    plain = prepare(model)
    for _ in steps(plain):
        pass
    assert plain.st.ctr[K.LOG_ON] == 0 and plain.st.ctr[K.LOG_N] == 0
    logged = prepare(model, action_log=1)
    with pytest.raises(ActionLogFull, match=r"holds 1 records but \d+ actions were taken"):
        for _ in steps(logged, 10):
            actions_of(logged.st, int)
