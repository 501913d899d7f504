"""The online scheduler's contract (issue 34 item 1): a hand-worked schedule, bad input refused
in one line with nothing changed, a policy's invalid action refused with the state as before,
and the engine's buffers (job slots, the instant's block, the action log) growing unseen."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.errors import PolicyError, SpecError
from schedlab.online import Action, Complete, Job, RunningJob, Scheduler, Submit
from schedlab.online import scheduler as scheduler_module
from tests.helpers.paths import ROOT

FUZZ_PLUGIN = ROOT / "tests" / "fixtures" / "plugins" / "fuzz_actions.py"


def two_servers(policy: str = "fcfs", **options) -> Scheduler:
    """FCFS (pooled family) on k = 2 servers; class 'one' needs 1 server, 'two' needs 2."""
    spec = {
        "cluster": {"servers": 2},
        "workload": {
            "load": 0.5,
            "classes": [
                {
                    "name": "one",
                    "probability": 0.5,
                    "need": 1,
                    "duration": {"dist": "exponential", "mean": 1.0},
                },
                {
                    "name": "two",
                    "probability": 0.5,
                    "need": 2,
                    "duration": {"dist": "exponential", "mean": 1.0},
                },
            ],
        },
        "model": {"family": "pooled"},
        "policy": {"name": "server-filling"},
        "run": {"arrivals": 10},
    }
    return Scheduler.from_spec(spec, policy, options=options or None)


def start(t: float, job: str, servers: tuple[int, ...] = (0,)) -> Action:
    """A pooled start on ``servers`` (lowest free first, tests/online/test_servers.py)."""
    return Action(time=t, kind="start", job=job, server=0, allocation=1.0, servers=servers)


def test_fcfs_on_two_servers_by_hand():
    """a (1 server, 2 s), b (2 servers, 1 s), c (1 server, 1 s) arrive at 0. FCFS starts a; b
    needs both servers and c may not pass it (FCFS, no backfilling): 1 server idles. At 2, a
    ends and b takes both; at 3, b ends and c starts; it ends at 4."""
    s = two_servers()
    arrive = [
        Submit(Job("a", 1, size=2.0)),
        Submit(Job("b", 2, size=1.0, job_class="two")),
        Submit(Job("c", size=1.0)),
    ]
    assert s.events(arrive, 0.0) == [start(0.0, "a")]
    state = s.state()
    assert state.queue == ("b", "c")
    assert state.running == (RunningJob("a", 0, 1.0, (0,)),)
    assert state.free == ((1.0,),)
    assert s.complete("a", 2.0) == [start(2.0, "b", (0, 1))]
    assert s.state().free == ((0.0,),)
    assert s.complete("b", 3.0) == [start(3.0, "c")]
    assert s.complete("c", 4.0) == []
    assert s.state().queue == () and s.state().running == ()
    metrics = s.metrics()
    assert metrics["events"] == 6 and metrics["decisions"] == 4
    # jobs in system: 3 on [0, 2), 2 on [2, 3), 1 on [3, 4): (6 + 2 + 1) / 4
    assert metrics["mean_in_system"] == pytest.approx(9 / 4)
    assert metrics["decision_latency"]["count"] == 4


def test_the_policy_name_and_options_replace_the_specs():
    s = two_servers("fifo-ff", blocking=False)  # first fit: c passes b
    arrive = [Submit(Job("a", 1)), Submit(Job("b", 2, job_class="two")), Submit(Job("c", 1))]
    assert s.events(arrive, 0.0) == [start(0.0, "a"), start(0.0, "c", (1,))]


def busy() -> Scheduler:
    s = two_servers()
    s.events(
        [Submit(Job("a", 1, size=2.0)), Submit(Job("b", 2, job_class="two")), Submit(Job(7, 1))],
        1.0,
    )
    return s


BAD_EVENTS = {
    "unknown job": ([Complete("zz")], 2.0, "job_id: unknown job 'zz': it was never submitted"),
    "waiting job": ([Complete("b")], 2.0, "job_id: job 'b' is not running: it is waiting"),
    "twice": ([Complete("a"), Complete("a")], 2.0, "job_id: job 'a' completes twice"),
    "id reused": ([Submit(Job("a", 1))], 2.0, "id: job id 'a' is already used"),
    "id twice": ([Submit(Job("d", 1)), Submit(Job("d", 1))], 2.0, "id: job id 'd' is already used"),
    "backwards": (
        [Submit(Job("d", 1))],
        0.5,
        "at: time goes backwards: 0.5 is before the latest event at 1.0",
    ),
    "not finite": ([], float("nan"), "at: time nan is not a finite number"),
    "time past a float": ([], 10**400, "at: time 1.000e+400 is beyond a float's range"),
    "need past a float": (
        [Submit(Job("d", 10**400))],
        2.0,
        "demand: job 'd': demand 1.000e+400 is beyond a float's range",
    ),
    "size past a float": (
        [Submit(Job("d", 1, size=10**400))],
        2.0,
        "size: job 'd': size 1.000e+400 is beyond a float's range",
    ),
    "above the cluster": (
        [Submit(Job("d", 3))],
        2.0,
        "demand: job 'd': demand [3.0] fits no server of the cluster",
    ),
    "unknown class": (
        [Submit(Job("d", 1, job_class="three"))],
        2.0,
        "job_class: job 'd': unknown class 'three'; the classes are one, two",
    ),
    "bad size": (
        [Submit(Job("d", 1, size=-1.0))],
        2.0,
        "size: job 'd': size -1.0 must be a finite number >= 0",
    ),
    "vector": (
        [Submit(Job("d", (1, 1)))],
        2.0,
        "demand: job 'd': demand has 2 value(s), the cluster 1 resource(s) (servers)",
    ),
}


@pytest.mark.parametrize("case", list(BAD_EVENTS))
def test_bad_input_is_one_line_and_changes_nothing(case):
    """The refused event leaves the state as it was, and the scheduler then decides as one that
    never saw it."""
    events, at, message = BAD_EVENTS[case]
    s, untouched = busy(), busy()
    before, metrics = s.state(), s.metrics()
    with pytest.raises(SpecError) as refused:
        s.events(events, at)
    assert str(refused.value) == message
    assert s.state() == before
    assert s.metrics()["decisions"] == metrics["decisions"]
    assert s.metrics()["events"] == metrics["events"]
    follow = [Complete("a"), Submit(Job("d", 1, size=1.0))]
    assert s.events(follow, 3.0) == untouched.events(follow, 3.0)
    assert s.state() == untouched.state()


def test_a_policy_s_invalid_action_is_a_policy_error_and_the_state_is_as_before():
    """A plugin that takes random, partly invalid actions: its first invalid one is refused
    with the policy, the action, the job and the reason; the state is the one before."""
    from schedlab import load_plugin

    load_plugin(FUZZ_PLUGIN)
    s = two_servers("fuzz-actions", p_bad=0.1, p_out=0.0, kind=0, seed=1)
    for i in range(200):
        before = s.state()
        try:
            s.submit(Job(i, 1, size=1.0), float(i))
        except PolicyError as error:
            message = str(error)
            break
    else:
        pytest.fail("the fuzz policy never took an invalid action")
    assert i == 10  # the jobs before were placed: a state with jobs waiting and running
    assert message == (
        "policy 'fuzz-actions' took an invalid action at t = 10.0: start of job 0 which is not "
        "waiting; the event was not applied"
    )
    assert "\n" not in message
    assert s.state() == before


def test_a_plugin_raising_after_its_runner_is_called_without_dispatch_is_named_in_one_line():
    """After its first call the runner is called through its compiled entry point (decision
    0016): an exception raised in it later is still the policy's, one line naming the plugin's
    file and line, and the state is the one before."""
    from schedlab import load_plugin

    load_plugin(FUZZ_PLUGIN)
    s = two_servers("fuzz-actions", p_bad=0.0, p_out=0.0, kind=0, seed=1, raise_after=3)
    for i in range(3):
        s.submit(Job(i, 1, size=1.0), float(i))
    runner = s.model.policy.kernels.runner
    assert s.session._entry is not runner  # the entry point, not the dispatcher
    before = s.state()
    with pytest.raises(PolicyError) as raised:
        s.submit(Job(3, 1, size=1.0), 3.0)
    line = next(
        n
        for n, text in enumerate(FUZZ_PLUGIN.read_text().splitlines(), 1)
        if "gives up on purpose" in text
    )
    assert str(raised.value) == (
        f"policy 'fuzz-actions' ({FUZZ_PLUGIN}:{line}) raised ValueError: "
        "the fuzz policy gives up on purpose"
    )
    assert s.state() == before


def test_slots_block_and_action_log_grow_as_needed(monkeypatch):
    """3,000 jobs in one instant (more than the initial 1,024 slots and 64-job block) and a log
    of 1 row: every job is queued and every start is returned."""
    monkeypatch.setattr(scheduler_module, "LOG_ROWS", 1)
    s = two_servers("fifo-ff", blocking=False)
    actions = s.events([Submit(Job(i, 1, size=1.0)) for i in range(3000)], 0.0)
    assert actions == [start(0.0, 0), start(0.0, 1, (1,))]
    assert len(s.state().queue) == 2998
    assert s.events([Complete(0), Complete(1)], 1.0) == [start(1.0, 2), start(1.0, 3, (1,))]


def _per_job_metrics(s: Scheduler) -> int:
    """The total of the engine's per-job sums and quantile sketch counts."""
    st = s.session.st
    return int(sum(a.sum() for a in (st.jacc, st.sk_response, st.sk_waiting, st.sk_bsld)))


def test_no_job_is_measured_online_and_a_failed_completion_changes_nothing():
    """Nothing online reads a simulation's per-job sums and quantile sketches (3 x 77 KB): a
    completion leaves them empty, so the copy before each event leaves them out; a policy error
    after job 0's completion leaves the state as before."""
    from schedlab import load_plugin

    load_plugin(FUZZ_PLUGIN)
    failing = two_servers("fuzz-actions", p_bad=0.0, raise_after=2)
    passing = two_servers("fuzz-actions", p_bad=0.0)
    for s in (failing, passing):
        s.submit(Job(0, 1, size=1.0), 0.0)
        s.submit(Job(1, 1, size=1.0), 0.5)
    before = failing.state()
    passing.complete(0, 1.0)
    assert [r.id for r in passing.state().running] == [1]
    assert _per_job_metrics(passing) == 0
    with pytest.raises(PolicyError):
        failing.complete(0, 1.0)
    assert failing.state() == before and _per_job_metrics(failing) == 0


def test_an_event_redone_after_the_action_log_overflows_takes_the_same_actions(monkeypatch):
    """EASY backfilling keeps per-slot arrays in its state (expected ends, reservations, its
    profile): an event redone from the copy taken before it (an action log of 1 row overflows
    at each event with 2 actions or more) decides as with a log large enough."""
    rng = np.random.default_rng(3)
    needs, sizes = rng.integers(1, 3, 300), rng.exponential(1.0, 300)
    times = np.cumsum(rng.exponential(0.4, 300))
    decided = []
    for rows in (scheduler_module.LOG_ROWS, 1):
        monkeypatch.setattr(scheduler_module, "LOG_ROWS", rows)
        s = two_servers("easy-backfill")
        ends: dict[int, float] = {}  # started jobs: when they end
        actions = []
        for i, t in enumerate(times):
            done = sorted(j for j, end in ends.items() if end <= t)
            for j in done:
                del ends[j]
            job = Job(i, int(needs[i]), size=float(sizes[i]), requested=2 * float(sizes[i]))
            new = s.events([*map(Complete, done), Submit(job)], float(t))
            ends.update({a.job: a.time + float(sizes[a.job]) for a in new if a.kind == "start"})
            actions += new
        decided.append(actions)
    assert decided[0] == decided[1]


def test_a_departed_job_leaves_only_its_id_behind():
    """A long-running service holds the jobs present; of a job gone (completed or rejected) it
    keeps only the id, to refuse its reuse: 2,000 jobs through two servers leave two known to
    be present and every id still refused."""
    s = two_servers("fcfs")
    for i in range(1000):
        s.events([Submit(Job(2 * i, 1, size=1.0)), Submit(Job(2 * i + 1, 1, size=1.0))], 2.0 * i)
        s.events([Complete(2 * i), Complete(2 * i + 1)], 2.0 * i + 1)
    s.events([Submit(Job("x", 1)), Submit(Job("y", 1)), Submit(Job("z", 1))], 5000.0)
    assert set(s._ids.values()) == set(s._slot) == {"x", "y", "z"}
    state = s.state()
    assert state.queue == ("z",) and {r.id for r in state.running} == {"x", "y"}
    with pytest.raises(SpecError, match="job id 7 is already used"):
        s.submit(Job(7, 1), 5001.0)
    with pytest.raises(SpecError, match="job 7 is not running: it has left"):
        s.complete(7, 5001.0)


def _arrays(s: Scheduler) -> dict[str, np.ndarray]:
    """Every array and scalar of the engine and policy states, copied (policy fields by path)."""
    from schedlab.engine.snapshot import field_paths

    st = s.session.st
    out = {f"engine.{n}": np.array(a, copy=True) for n, a in zip(st._fields, st, strict=True)}
    out.pop("engine.log_i"), out.pop("engine.log_f")  # the actions of the last call: read out
    for path, _, _ in field_paths(s.model.policy.kernels.state.fields):
        value = s.session.ps
        for name in path.split("."):
            value = getattr(value, name)
        out[f"policy.{path}"] = np.array(value, copy=True)
    return out


@pytest.mark.parametrize("policy", ["easy-backfill", "server-filling-srpt", "fcfs"])
def test_the_state_put_back_from_the_journal_is_the_state_before_the_event(policy, monkeypatch):
    """Between two copies the scheduler keeps the events applied (the journal); putting the
    state back is the copy with them run again. 50 events into a journal of 32, an event that
    fails after the engine took it (its actions cannot be read) leaves every array of both
    states as it was, and the events after it decide as in a scheduler that never saw it."""
    rng = np.random.default_rng(5)
    undone, untouched = two_servers(policy), two_servers(policy)
    assert undone.journal.length == scheduler_module.JOURNAL
    running: list[int] = []
    for i in range(50):
        done = running[:1] if rng.random() < 0.5 else []
        job = Job(i, int(rng.integers(1, 3)), size=float(rng.exponential()), requested=9.0)
        batch = [*map(Complete, done), Submit(job)]
        for s in (undone, untouched):
            s.events(batch, float(i))
        running = [r.id for r in undone.state().running]
    assert 0 < len(undone.journal) < scheduler_module.JOURNAL  # mid-journal
    before = _arrays(undone)

    def unreadable(*args):
        raise RuntimeError("the actions cannot be read")

    with monkeypatch.context() as patched:
        patched.setattr(scheduler_module, "actions_of", unreadable)
        with pytest.raises(RuntimeError):
            undone.events([Complete(running[0]), Submit(Job("x", 2, size=1.0))], 50.0)
    after = _arrays(undone)
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    for t in (51.0, 52.0):
        job = Job(f"y{t}", 1, size=1.0, requested=9.0)
        assert undone.events([Submit(job)], t) == untouched.events([Submit(job)], t)


def test_a_policy_drawing_outside_its_state_is_copied_before_every_event():
    """G16 (vm tokens) draws from Numba's global generator, which no copy holds: it is not
    replayable, so its state is copied before every event, never rebuilt by running events
    again; a plugin's policy is treated so unless it says otherwise."""
    from schedlab import load_plugin
    from schedlab.policies.registry import get_policy

    assert get_policy("g16").hooks.replayable is False
    load_plugin(FUZZ_PLUGIN)
    assert two_servers("fuzz-actions").journal.length == 1


def test_every_built_in_policy_drawing_from_numba_s_global_generator_is_not_replayable():
    """A guard for the journal: a built-in policy whose module calls np.random (Numba's global
    generator in compiled code, outside the policy state) must say replayable=False."""
    import inspect
    import sys

    from schedlab.policies.registry import all_policies

    for policy in all_policies():
        runner = getattr(policy.kernels.runner, "py_func", policy.kernels.runner)
        module = sys.modules[runner.__module__]
        if not module.__name__.startswith("schedlab."):
            continue
        if "np.random." in inspect.getsource(module):
            assert policy.hooks.replayable is False, policy.name
