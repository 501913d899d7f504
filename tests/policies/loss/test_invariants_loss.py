"""Invariants of paper 002's policies (psychas2022): DRA, DRA+preemption, power-of-d, best fit.

DRA runs are advanced in small chunks of events; after each chunk the policy's bookkeeping is
audited against the engine's own state and its Accept/Reject groups against a brute-force
recomputation of GPA and CRA (§4, notes/dra.md):

* capacity never exceeded (the engine validates every start and migration, and the used
  capacity of every server is re-summed from the running jobs);
* every running job sits in a slot of its type: jobs of type j on server s <= k_j of the
  server's configuration (so every admission and migration went into a slot of its type);
* no admitted job is lost except by a counted preemption (lost = dropped at arrival +
  preempted), and plain DRA never preempts;
* CRA: targets equal GPA(Y + r, L) computed independently (StaticProblem.gpa), every target not
  met has no empty maximum-rank server left, i* is the first unmet target, and the Reject
  Group is exactly the newest server of every configuration of rank > i*.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.optim.reward import StaticProblem
from schedlab.policies.loss import dra as D
from tests.helpers.audit import audit
from tests.helpers.dra_audit import audit_cra, run_audited
from tests.helpers.spec_strategies import vm_specs

TESTED_POLICIES = {"dra", "dra-preemption", "power-of-d", "best-fit-admission"}


RELAXED = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@RELAXED
@given(vm_specs("dra"))
def test_dra_invariants_and_cra_against_brute_force(spec):
    run_audited(spec)


@RELAXED
@given(vm_specs("dra", update="periodic", period=0.3))
def test_dra_periodic_updates_invariants(spec):
    run_audited(spec)


@RELAXED
@given(vm_specs("dra-preemption"))
def test_dra_preemption_invariants(spec):
    run_audited(spec)


@RELAXED
@given(vm_specs("power-of-d", d=2))
def test_power_of_d_invariants(spec):
    audit(schedlab.simulate({**spec, "run": {**spec["run"], "check": True}}), spec)


@RELAXED
@given(vm_specs("best-fit-admission"))
def test_best_fit_admission_invariants(spec):
    audit(schedlab.simulate({**spec, "run": {**spec["run"], "check": True}}), spec)


def test_dra_initialization_from_a_placement():
    """§4 Initialization: servers with jobs take their placement as configuration (also one
    outside the greedy set), then CRA classifies; the audit's brute force must agree."""
    problem = StaticProblem([[1, 1], [4, 16], [2, 32], [32, 256]], [80, 640], [1.125, 6, 6, 64])
    placement = np.zeros((6, 4), dtype=np.int64)
    placement[0] = [3, 0, 1, 0]  # not a greedy configuration
    placement[1] = [0, 8, 8, 1]
    placement[2] = [0, 0, 0, 1]
    sizes = {"jobs": 10, "servers": 6, "classes": 4, "resources": 2}
    ps = D.build_state(problem, sizes, D.DraConfig(reservation=2), placement)
    n_types, n_conf = 4, int(ps.n_confs)
    confs = np.asarray(ps.confs)[: n_conf * n_types].reshape(n_conf, n_types)
    assert confs[ps.conf_of[0]].tolist() == [3, 0, 1, 0]
    assert confs[ps.conf_of[1]].tolist() == [0, 8, 8, 1]
    assert np.asarray(ps.y).tolist() == [3, 8, 9, 2]
    # Yhat = Y + 2 = (5, 10, 11, 4): GPA's first configuration is MaxReward of all types
    g = problem.gpa(np.array([5, 10, 11, 4]), 6)
    first = {confs[c].tobytes(): c for c in range(n_conf)}[g.configurations[0].tobytes()]
    assert ps.target[first] == g.counts[0]
    audit_cra(ps, problem, placement)
    # empty servers do not stay in the empty configuration while a GPA target is unmet
    if ps.i_star <= ps.m:
        assert all(ps.conf_of[s] != 0 for s in range(3, 6))


@st.composite
def random_states(draw):
    """A random problem (1-4 types, 2 resources) and L servers, each with a random feasible
    configuration (a greedy one, another one, or none) holding a random part of its slots."""
    n_types = draw(st.integers(1, 4))
    cap = np.array([draw(st.integers(3, 10)), draw(st.integers(3, 10))])
    demand = np.array(
        [
            [draw(st.integers(1, int(cap[0]))), draw(st.integers(0, int(cap[1])))]
            for _ in range(n_types)
        ]
    )
    reward = [float(draw(st.integers(1, 20))) for _ in range(n_types)]
    problem = StaticProblem(demand, cap, reward)
    greedy = problem.greedy_configurations()
    servers = draw(st.integers(1, 10))
    slots = np.zeros((servers, n_types), dtype=np.int64)
    placement = np.zeros_like(slots)
    for s in range(servers):
        kind = draw(st.sampled_from(["greedy", "random", "none"]))
        if kind == "greedy":
            slots[s] = greedy[draw(st.integers(0, len(greedy) - 1))]
        elif kind == "random":
            for _ in range(draw(st.integers(1, 6))):
                j = draw(st.integers(0, n_types - 1))
                slots[s, j] += 1
                if not problem.is_feasible(slots[s]):
                    slots[s, j] -= 1
        placement[s] = [draw(st.integers(0, int(k))) for k in slots[s]]
        if kind == "none":
            slots[s] = placement[s]  # §4: a server without configuration takes its placement
    return problem, slots, placement, draw(st.integers(1, 4))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(random_states())
def test_cra_groups_match_brute_force_on_random_states(state):
    """§4 Initialization + CRA on random states: targets = GPA(Y + r, L), i* = the first unmet
    target, the Reject Group = the newest server of each configuration of rank > i*, and no
    empty server of rank > i* is left while a target is unmet (audit_cra)."""
    problem, slots, placement, r = state
    sizes = {"jobs": 4, "servers": slots.shape[0], "classes": problem.n_types, "resources": 2}
    ps = D.build_state(problem, sizes, D.DraConfig(reservation=r), placement, slots)
    assert np.array_equal(np.asarray(ps.y), placement.sum(axis=0))
    n_conf = int(ps.n_confs)
    confs = np.asarray(ps.confs)[: n_conf * problem.n_types].reshape(n_conf, problem.n_types)
    held = placement.sum(axis=1) > 0
    # a server with jobs keeps its configuration (only empty ones are reassigned)
    assert np.array_equal(confs[np.asarray(ps.conf_of)][held], slots[held])
    audit_cra(ps, problem, placement)


def test_dra_reward_between_first_fit_and_bound():
    """Worst-case subset at L = 60: DRA earns per server at most F* and at least half of F^g
    (a coarse sanity check; the convergence to F^g is reproduce psychas2022-fig3)."""
    problem = StaticProblem([[1, 1], [4, 16], [2, 32], [32, 256]], [80, 640], [1.125, 6, 6, 64])
    rho = np.array([2.0, 3.7, 4.8, 1.83])
    f_star = problem.optimum(rho).value
    f_g = problem.global_greedy(rho).reward
    servers = 60
    classes = [
        {
            "name": f"t{j}",
            "probability": rho[j] / rho.sum(),
            "demand": {"cpu": float(problem.demand[j, 0]), "mem": float(problem.demand[j, 1])},
            "duration": {"dist": "exponential", "mean": 1.0},
            "reward": float(problem.reward[j]),
        }
        for j in range(4)
    ]
    spec = {
        "cluster": {"servers": servers, "capacity": {"cpu": 80, "mem": 640}},
        "workload": {"rate": float(rho.sum() * servers), "classes": classes},
        "model": {"family": "loss"},
        "policy": {"name": "dra"},
        "run": {"arrivals": 40_000, "seed": 4},
    }
    r = schedlab.simulate(spec)
    per = r["reward_rate_per_server"]
    assert per.ci95[1] <= f_star + 1e-9
    assert per.mean >= 0.5 * f_g
    assert r.counters["migrations"] > 0
    assert "migration_rate" not in r.metrics  # a count without an interval is no estimate


def test_dra_preemption_protects_the_high_priority_type():
    """§7.2: with a low-priority type flooding the servers, DRA+preemption preempts (counted,
    lost) low-priority jobs and loses fewer high-priority ones than DRA on the same jobs."""
    classes = [
        {"name": "low", "probability": 0.8, "demand": {"cpu": 1, "mem": 1},
         "duration": {"dist": "exponential", "mean": 1.0}, "reward": 1.0},
        {"name": "high", "probability": 0.2, "demand": {"cpu": 2, "mem": 2},
         "duration": {"dist": "exponential", "mean": 1.0}, "reward": 8.0},
    ]  # fmt: skip
    base = {
        "cluster": {"servers": 20, "capacity": {"cpu": 8, "mem": 8}},
        "workload": {"rate": 20 * 12.0, "classes": classes},
        "model": {"family": "loss"},
        "run": {"arrivals": 30_000, "seed": 8},
    }
    plain = schedlab.simulate({**base, "policy": {"name": "dra"}})
    pre = schedlab.simulate({**base, "policy": {"name": "dra-preemption", "priorities": [0, 1]}})
    assert plain.counters["preemptions"] == 0
    assert pre.counters["preemptions"] > 0
    assert pre["loss_probability[high]"].mean < plain["loss_probability[high]"].mean


def _spec_with(**changes):
    spec = {
        "cluster": {"servers": 4, "capacity": {"cpu": 8, "mem": 8}},
        "workload": {
            "rate": 4.0,
            "classes": [
                {"name": "a", "demand": {"cpu": 1, "mem": 2},
                 "duration": {"dist": "exponential", "mean": 1.0}, "reward": 1.0}
            ],
        },
        "model": {"family": "loss"},
        "policy": {"name": "dra"},
        "run": {"arrivals": 100},
    }  # fmt: skip
    for key, value in changes.items():
        section, field = key.split("__")
        spec[section][field] = value
    return spec


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"workload__classes": [{"demand": {"cpu": {"dist": "uniform", "low": 1, "high": 2}},
                                    "duration": 1.0}]},
            "workload.classes[0].demand",
            "fixed demand",
        ),
        ({"policy__priorities": [0, 1]}, "policy.priorities", "one priority per job class"),
        ({"model__family": "packing"}, "model.family", "loss"),
        ({"policy__reservation": 0}, "policy.reservation", "greater than or equal"),
        ({"cluster__capacity": None, "cluster__servers": None,
          "cluster__pools": [{"count": 2, "capacity": {"cpu": 8, "mem": 8}},
                             {"count": 2, "capacity": {"cpu": 4, "mem": 8}}]},
         "cluster", "identical servers"),
    ],
)  # fmt: skip
def test_dra_bad_specs_are_one_line_errors(changes, field, message):
    from schedlab.errors import SpecError

    spec = _spec_with(**changes)
    spec["cluster"] = {k: v for k, v in spec["cluster"].items() if v is not None}
    with pytest.raises(SpecError) as err:
        compile_model(parse_spec(spec))
    assert err.value.field == field and message in str(err.value)
