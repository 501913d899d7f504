"""Algorithm 1 (psychas2018 §3) branch by branch, stepping the engine one event at a time and
checking each transition against the rules of §3 and §6.3; M14 never stalls; Theorem 3.1
empirically (bounded queues inside C_{r beta}, growth outside C)."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.api import simulate
from schedlab.engine import constants as K
from schedlab.errors import SpecError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.optim.knapsack import maximal_configurations
from schedlab.simulation.simulate import prepare, steps

SIZES = [4.0, 1.0, 2.0]


def vm_spec(policy: str, rate: float, arrivals: int, servers: int = 2, seed: int = 3, **params):
    return {
        "cluster": {"servers": servers, "capacity": 6},
        "workload": {
            "rate": rate,
            "classes": [
                {
                    "name": f"t{i}",
                    "probability": p,
                    "demand": s,
                    "duration": {"dist": "exponential", "mean": 1},
                }
                for i, (s, p) in enumerate(zip(SIZES, [0.2, 0.6, 0.2], strict=True))
            ],
        },
        "policy": {"name": policy, **params},
        "run": {"arrivals": arrivals, "seed": seed, "allow_unstable": True},
    }


def snapshot(st, ps):
    running = {}
    for j in np.flatnonzero(st.status == K.RUNNING):
        running[int(st.seq[j])] = (int(st.server[j]), int(st.job_class[j]))
    return {
        "stalled": st.stalled.copy(),
        "cfg": np.array(ps.cfg).copy(),
        "occ": np.array(ps.occ).copy(),
        "q": st.class_in_queue.copy(),
        "running": running,
        "arrived": int(st.ctr[K.ARRIVED]),
        "done": int(st.ctr[K.N_DONE]),
        "stalls": int(st.ctr[K.STALLS]),
        "used": st.used.copy(),
    }


def step_through(spec):
    """All (before, after) snapshots of one run, one event per step."""
    model = compile_model(parse_spec(spec))
    run = prepare(model)
    stepping = steps(run, 1)
    out = []
    prev = snapshot(run.st, run.ps)
    for _ in stepping:
        cur = snapshot(run.st, run.ps)
        out.append((prev, cur))
        prev = cur
        assert run.st.ctr[K.VIOLATION] == 0
    return model, out


def weight(k, q):
    return float(np.dot(k, q))


CONFIGS = maximal_configurations(np.array(SIZES)[:, None], [6.0])


def max_weight(q):
    return float((CONFIGS @ q).max())


def common_invariants(before, after, model):
    cap = model.capacity
    assert np.all(after["used"] <= cap + 1e-9)  # capacity
    for seq, (s, _c) in before["running"].items():  # non-preemption: stays where it is or departs
        if seq in after["running"]:
            assert after["running"][seq][0] == s
    for s in range(cap.shape[0]):
        if after["stalled"][s] == 0:
            assert np.all(after["occ"][s] <= after["cfg"][s])
            # an empty slot of type j implies Q_j = 0 (§4)
            assert np.all((after["cfg"][s] > after["occ"][s]) <= (after["q"] == 0))


def departed(before, after):
    gone = [seq for seq in before["running"] if seq not in after["running"]]
    return [before["running"][seq] for seq in gone]


def test_algorithm1_branches_constant_beta():
    beta = 0.7
    model, steps = step_through(
        vm_spec(
            "vm-stalling",
            11.5,
            600,
            beta_rule="constant",
            beta=beta,
            early_activation=False,
            recheck_when_empty=False,
        )
    )
    seen = {
        "stall": 0,
        "no_stall": 0,
        "activate_when_empty": 0,
        "slot_used_by_arrival": 0,
        "first_configuration": 0,
        "waits_beside_reserved_room": 0,
    }
    for before, after in steps:
        common_invariants(before, after, model)
        newly_stalled = np.flatnonzero((after["stalled"] == 1) & (before["stalled"] == 0))
        newly_active = np.flatnonzero((after["stalled"] == 0) & (before["stalled"] == 1))
        deps = departed(before, after)
        for s in range(model.n_servers):
            # a stalled server never takes a job
            if before["stalled"][s] and after["stalled"][s]:
                assert np.all(after["occ"][s] <= before["occ"][s])
        if after["done"] > before["done"]:
            ((s, c),) = deps
            placed = after["occ"][s] - before["occ"][s] + np.eye(len(SIZES), dtype=int)[c]
            q = (after["q"] + placed).astype(float)  # Q when condition (5) was checked
            stalled_here = after["stalls"] > before["stalls"]
            if before["stalled"][s] == 0:
                holds = weight(before["cfg"][s], q) < beta * max_weight(q)
                if stalled_here:  # stall on condition (5), checked at this departure
                    assert holds
                    # it stays stalled unless this departure emptied it (then: activated)
                    assert s in newly_stalled or before["occ"][s].sum() == 1
                    seen["stall"] += 1
                else:
                    assert not holds
                    seen["no_stall"] += 1
                    # the freed type-c slot takes the head of queue c if any
                    if before["q"][c] > 0:
                        assert after["occ"][s, c] == before["occ"][s, c]
                        assert after["q"][c] == before["q"][c] - 1
            if s in newly_active or (stalled_here and after["stalled"][s] == 0):
                # activation only when empty, with a max-weight configuration
                assert before["occ"][s].sum() - 1 == 0
                q_pre = after["q"] + after["occ"][s]
                assert weight(after["cfg"][s], q_pre) == max_weight(q_pre.astype(float))
                assert after["cfg"][s].sum() > 0  # never the zero configuration
                seen["activate_when_empty"] += 1
            # no other server changes state at a departure
            others = [x for x in np.concatenate([newly_stalled, newly_active]) if x != s]
            assert not others
        else:  # an arrival: never a stall or activation; it takes the first empty slot of its
            # type, else (start = "on-demand") the first server never configured takes a
            # max-weight configuration for the queues with the arrival in them
            assert len(newly_stalled) == 0 and len(newly_active) == 0
            unconfigured = [x for x in range(model.n_servers) if before["cfg"][x].sum() == 0]
            for x in range(model.n_servers):
                if not np.array_equal(before["cfg"][x], after["cfg"][x]):
                    assert x in unconfigured
            c = (
                int(np.argmax(after["q"] - before["q"] != 0))
                if np.any(after["q"] != before["q"])
                else None
            )
            started = [v for seq, v in after["running"].items() if seq not in before["running"]]
            slots = [
                s
                for s in range(model.n_servers)
                if before["stalled"][s] == 0 and np.any(before["cfg"][s] > before["occ"][s])
            ]
            if started:
                ((s, c),) = started
                free = [x for x in slots if before["cfg"][x, c] > before["occ"][x, c]]
                if free:
                    assert s == free[0]
                    seen["slot_used_by_arrival"] += 1
                else:
                    assert s == unconfigured[0]
                    q_pre = (after["q"] + after["occ"][s]).astype(float)
                    assert after["cfg"][s].sum() > 0
                    assert weight(after["cfg"][s], q_pre) == max_weight(q_pre)
                    seen["first_configuration"] += 1
            else:
                assert c is not None
                assert all(before["cfg"][x, c] == before["occ"][x, c] for x in slots)
                assert not unconfigured
                # reservation: it waits even where it would fit, if that room is another type's
                room = model.capacity[:, 0] - after["used"][:, 0]
                if np.any((room >= SIZES[c]) & (after["stalled"] == 0)):
                    seen["waits_beside_reserved_room"] += 1
    assert all(v > 0 for v in seen.values()), seen


def test_early_activation_section63():
    model, steps = step_through(
        vm_spec("vm-stalling", 11.5, 600, beta_rule="constant", beta=0.7, recheck_when_empty=False)
    )
    early = 0
    for before, after in steps:
        common_invariants(before, after, model)
        for s in np.flatnonzero((after["stalled"] == 0) & (before["stalled"] == 1)):
            remaining = before["occ"][s].copy()
            if after["done"] > before["done"]:
                ((s2, c),) = departed(before, after)
                if s2 == s:
                    remaining[c] -= 1
            assert np.all(remaining <= after["cfg"][s])  # a subset of the new configuration
            q_pre = after["q"] + after["occ"][s] - remaining
            assert weight(after["cfg"][s], q_pre) == max_weight(q_pre.astype(float))
            early += remaining.sum() > 0
    assert early > 0


def test_m14_never_stalls_and_refreshes_when_empty():
    model, steps = step_through(vm_spec("m14", 11.5, 400, recheck_when_empty=False))
    refreshed = 0
    for before, after in steps:
        common_invariants(before, after, model)
        assert not np.any(after["stalled"])
        for s in range(model.n_servers):
            if not np.array_equal(before["cfg"][s], after["cfg"][s]):
                if before["cfg"][s].sum() == 0:  # its first configuration (on-demand start)
                    assert after["arrived"] > before["arrived"]
                    continue
                assert before["occ"][s].sum() == 1 and after["done"] > before["done"]
                refreshed += 1
    assert refreshed > 0


def test_theorem31_inside_and_outside_capacity():
    """Inside C_{r beta} (r = 1, beta = 0.9; Example 1 at zeta = 0.6): bounded queue; outside C
    (zeta = 1.1): the queue grows."""
    from schedlab.optim.vm_capacity import ServerType, max_scaling

    s_star = max_scaling([[4], [1]], [ServerType(1, (6.0,))], [1 / 9, 8 / 9]).max_scaling

    def spec(zeta):
        return {
            "cluster": {"servers": 1, "capacity": 6},
            "workload": {
                "rate": zeta * s_star,
                "classes": [
                    {
                        "probability": 1 / 9,
                        "demand": 4,
                        "duration": {"dist": "exponential", "mean": 1},
                    },
                    {
                        "probability": 8 / 9,
                        "demand": 1,
                        "duration": {"dist": "exponential", "mean": 1},
                    },
                ],
            },
            "policy": {"name": "vm-stalling", "beta_rule": "constant", "beta": 0.9},
            "run": {"arrivals": 40000, "seed": 5, "allow_unstable": True},
        }

    inside = simulate(spec(0.6))
    outside = simulate(spec(1.1))
    # the policy's report hook: the first configuration, one per stall (each stalled server
    # activates again once it drains; the run drains) and the refreshes of the empty server
    # (recheck_when_empty), and some stalled time when it stalled
    assert inside.counters["stalls"] > 0
    assert inside.counters["config_changes"] >= 1 + inside.counters["stalls"]
    assert inside.counters["stalled_server_time"] > 0
    length = inside.timeseries.column("time").to_numpy()[-1]  # the last sample: about the end
    assert 0 < inside.counters["stalled_fraction"] <= 1
    assert inside.counters["stalled_fraction"] == pytest.approx(
        inside.counters["stalled_server_time"] / (1 * length), rel=0.05
    )
    assert inside.counters["config_change_rate"] == pytest.approx(
        inside.counters["config_changes"] / length, rel=0.05
    )
    assert inside.stable
    assert not outside.stable
    ts = outside.timeseries.to_pydict()
    half = len(ts["number_in_queue"]) // 2
    assert np.mean(ts["number_in_queue"][half:]) > 2 * np.mean(ts["number_in_queue"][:half])
    assert inside.metrics["mean_number_in_queue"].mean < 50


def test_theorem31_greedy_subroutine():
    """Theorem 3.1 with the greedy of Lemma 6.1 (r = 1/2 for Example 1: N_f = 1, R = 1) and
    beta = 0.45 < r: a workload inside C_{r beta} (zeta = 0.2) stays bounded; outside C
    (zeta = 1.1) the queue grows."""
    from schedlab.optim.knapsack import greedy_ratio
    from schedlab.reproduce.psychas2018 import example1_spec
    from schedlab.simulation.simulate import with_run

    r = greedy_ratio([[4.0], [1.0]], [6.0])
    assert r == 0.5
    params = {"subroutine": "greedy", "beta_rule": "constant", "beta": 0.45}

    def run(zeta):
        spec = example1_spec("vm-stalling", 20_000).model_dump(exclude_unset=True)
        spec["workload"]["rate"] *= zeta / 0.89
        spec["policy"] |= params
        return simulate(with_run(parse_spec(spec), timeseries=200))

    inside, outside = run(0.2), run(1.1)
    assert inside.stable and not outside.stable
    q_out = np.array(outside.timeseries.to_pydict()["number_in_queue"])
    half = q_out.size // 2
    assert q_out[half:].mean() > 2 * q_out[:half].mean()
    assert inside.metrics["mean_number_in_queue"].mean < 5


def test_theorem31_table1_many_servers():
    """Theorem 3.1 on Table 1 (3 resources, 10 servers, r = 1, constant beta = 0.9): zeta = 0.8
    is inside C_{r beta}: stable, queue bounded over the run; zeta = 1.05 is outside C: the queue
    grows."""
    from schedlab.reproduce.psychas2018 import table1_spec
    from schedlab.simulation.simulate import with_run

    def run(zeta):
        spec = table1_spec("vm-stalling", 10, zeta, 30_000, False, beta_rule="constant", beta=0.9)
        return simulate(with_run(spec, timeseries=200))

    inside, outside = run(0.8), run(1.05)
    assert inside.stable and not outside.stable
    q_in = np.array(inside.timeseries.to_pydict()["number_in_queue"])
    q_out = np.array(outside.timeseries.to_pydict()["number_in_queue"])
    half = q_in.size // 2
    assert q_in[half:].max() <= 2 * max(q_in[:half].max(), 1)  # no growth inside
    assert q_out[half:].mean() > 2 * q_out[:half].mean()  # growth outside
    assert q_out[-1] > 10 * max(q_in.max(), 1)


def test_recheck_when_empty_ends_drained_runs():
    """Two identical size-1 types on one server of capacity 2, adaptive beta (h < 0 for short
    queues): the literal algorithm can leave a VM waiting forever after the last arrival; with
    recheck_when_empty an empty server takes a configuration with a slot for it."""
    base = {
        "cluster": {"servers": 1, "capacity": 2},
        "workload": {
            "rate": 1.0,
            "classes": [
                {"probability": 1 / 3, "demand": 1, "duration": {"dist": "exponential", "mean": 1}}
            ]
            * 3,
        },
        "run": {"arrivals": 3, "allow_unstable": True},
    }
    stuck = 0
    for seed in range(30):
        literal = {**base, "policy": {"name": "vm-stalling", "recheck_when_empty": False}}
        literal["run"] = {**base["run"], "seed": seed}
        fixed = {**literal, "policy": {"name": "vm-stalling"}}
        stuck += simulate(literal).counters["still_in_system"] > 0
        assert simulate(fixed).counters["still_in_system"] == 0
    assert stuck > 0


def test_start_on_demand_and_synchronized():
    """``start``: on demand, the first arrival configures one server (a max-weight configuration
    for Q = that arrival); synchronized, every server takes that same configuration at once."""
    for start, configured in (("on-demand", 1), ("synchronized", 4)):
        model = compile_model(parse_spec(vm_spec("m14", 11.5, 50, servers=4, start=start)))
        run = prepare(model)
        next(steps(run, 1))
        st, ps = run.st, run.ps
        assert st.ctr[K.ARRIVED] == 1
        c = int(st.job_class[np.flatnonzero(st.status == K.RUNNING)[0]])
        cfg = np.array(ps.cfg)
        rows = cfg[cfg.sum(axis=1) > 0]
        assert rows.shape[0] == configured
        assert np.all(rows[:, c] == CONFIGS[:, c].max())  # max weight for Q = e_c
        assert np.all(rows == rows[0])


@pytest.mark.parametrize(
    "demand",
    [{"dist": "uniform", "low": 1, "high": 2}, {"dist": "discrete", "values": [1, 2]}],
)
def test_a_vm_type_with_a_random_demand_is_refused_naming_the_field(demand):
    spec = vm_spec("vm-stalling", 1.0, 100)
    spec["workload"]["classes"][1]["demand"] = demand
    with pytest.raises(SpecError, match="fixed resource vector") as info:
        compile_model(parse_spec(spec))
    assert info.value.field == "workload.classes[1].demand"
