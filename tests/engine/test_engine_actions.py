"""The engine refuses every invalid action (the engine contract, docs/architecture.md §2), naming
job and server.

Each test runs a deliberately wrong policy; the engine must stop with InvariantViolation.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numba import njit

from schedlab.engine import actions as A
from schedlab.engine.constants import N_RUNNING, P_HEAD, Q_HEAD, Q_TAIL
from schedlab.engine.loop import run_engine
from schedlab.errors import InvariantViolation
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.policy_api.contract import (
    About,
    Kernels,
    Policy,
    PolicyState,
    StateField,
    engine_sizes,
)
from schedlab.simulation.simulate import simulate_model
from tests.helpers.specs import pooled_spec


@njit
def start_everything_on_server_0(st, ps):
    j = st.ctr[Q_HEAD]
    while j != -1:
        nxt = st.q_next[j]
        A.start(st, j, 0, 1.0)
        j = nxt


@njit
def preempt_whatever_runs(st, ps):
    j = st.ctr[Q_HEAD]
    if j != -1 and A.fits(st, j, 0, 1.0):
        A.start(st, j, 0, 1.0)
    if st.ctr[N_RUNNING] > 0:
        A.preempt(st, st.running[0])


@njit
def reject_then_start(st, ps):
    j = st.ctr[Q_HEAD]
    if j != -1:
        A.reject(st, j)
        A.start(st, j, 0, 1.0)


@njit
def stall_then_start(st, ps):
    A.stall(st, 0)
    j = st.ctr[Q_HEAD]
    if j != -1:
        A.start(st, j, 0, 1.0)


@njit
def migrate_in_packing(st, ps):
    j = st.ctr[Q_HEAD]
    if j != -1 and A.fits(st, j, 0, 1.0):
        A.start(st, j, 0, 1.0)
    if st.ctr[N_RUNNING] > 0:
        A.migrate(st, st.running[0], 1)


@njit
def half_a_rigid_job(st, ps):
    j = st.ctr[Q_HEAD]
    if j != -1:
        A.start(st, j, 0, 0.5)


@njit
def restart_a_running_job(st, ps):
    j = st.ctr[P_HEAD]
    if j != -1 and st.status[j] != 1:
        A.start(st, j, 0, 1.0)
    j = st.ctr[Q_HEAD]
    if j != -1 and A.fits(st, j, 0, 1.0):
        A.start(st, j, 0, 1.0)


@njit
def wrong_server(st, ps):
    j = st.ctr[Q_HEAD]
    if j != -1:
        A.start(st, j, 7, 1.0)


def run_bad(decide, spec, *, check: bool = True):
    model = compile_model(parse_spec(spec))
    runner = njit(lambda st, ps, n: run_engine(st, ps, decide, n))
    state = PolicyState("bad", [StateField("unused", "i1")])
    bad = Policy(
        name="bad",
        family=model.family,
        about=About(title="bad", paper="grosof2023", section="test", summary=""),
        kernels=Kernels(
            state=state, init=lambda st, m, c: state.allocate(engine_sizes(st)), runner=runner
        ),
    )
    run = model.spec.run.model_copy(update={"check": check})
    model = dataclasses.replace(model, policy=bad, spec=model.spec.model_copy(update={"run": run}))
    return simulate_model(model)


def packing_spec(**changes):
    spec = {
        "cluster": {"servers": 2, "capacity": 1.0},
        "workload": {"load": 0.8, "classes": [{"demand": 0.6, "duration": 1.0}]},
        "policy": {"name": "fifo-ff"},
        "run": {"arrivals": 200, "seed": 1},
    }
    spec.update(changes)
    return spec


@pytest.mark.parametrize(
    ("decide", "spec", "message"),
    [
        (start_everything_on_server_0, packing_spec(), "exceeds its capacity"),
        (preempt_whatever_runs, packing_spec(), "non-preemptive model"),
        (reject_then_start, packing_spec(), "was lost"),
        (stall_then_start, packing_spec(), "stalled server 0"),
        (migrate_in_packing, packing_spec(), "model without migration"),
        (half_a_rigid_job, pooled_spec(4, 0.5, arrivals=50), "rigid job"),
        (restart_a_running_job, pooled_spec(4, 0.5, arrivals=50), "not waiting"),
        (wrong_server, packing_spec(), "server 7 which does not exist"),
    ],
)
def test_invalid_actions_stop_the_run(decide, spec, message):
    with pytest.raises(InvariantViolation, match=message):
        run_bad(decide, spec)


def test_capacity_is_trusted_when_checks_are_off():
    """run.check = false skips validation: the (wrong) placement then goes through."""
    result = run_bad(start_everything_on_server_0, packing_spec(), check=False)
    assert result.counters["completions"] == 200


@njit
def lcfs_preemptive_resume(st, ps):
    newest = st.ctr[Q_TAIL]
    if newest == -1:
        return
    if st.ctr[N_RUNNING] > 0:
        running = st.running[0]
        if running > newest:  # job ids are in arrival order
            return
        A.preempt(st, running)
    A.start(st, newest, 0, 1.0)


def test_preempt_resume_keeps_progress():
    """M/M/1 under LCFS preemptive-resume has E[T] = 1/(mu - lambda), as FCFS (a classical
    result); it holds only if preempted jobs keep their progress."""
    spec = pooled_spec(1, 0.6, arrivals=200_000, jobs=True, seed=8)
    result = run_bad(lcfs_preemptive_resume, spec)
    assert result.counters["preemptions"] > 10_000
    assert result["mean_response_time"].covers(1 / (1 - 0.6), 0.999)
    jobs = result.jobs.to_pydict()
    served = np.array(jobs["finish"]) - np.array(jobs["start"])
    assert np.all(served >= np.array(jobs["work"]) - 1e-9)
