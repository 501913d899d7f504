"""The audit of DRA's bookkeeping (psychas2022 §4, notes/dra.md) against the engine's own state,
and of its Accept/Reject groups against a brute-force recomputation of GPA and CRA; ``run_audited``
advances a run in small chunks of events and audits after each (tests/policies/loss/)."""

from __future__ import annotations

import numpy as np

from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.optim.reward import StaticProblem
from schedlab.policies.loss import dra as D
from schedlab.policy_api.contract import engine_sizes
from schedlab.simulation.simulate import prepare, steps

BIG = D.BIG_RANK


def dra_problem(model) -> StaticProblem:
    demand = np.array([[d.support[0] for d in c.demand] for c in model.classes])
    return StaticProblem(demand, model.capacity[0], np.array([c.reward for c in model.classes]))


def recency(ps, c) -> list[int]:
    out, s = [], int(ps.rhead[c])
    while s >= 0:
        out.append(s)
        s = int(ps.rnext[s])
    return out


def audit_dra(st, ps, problem: StaticProblem, cra: bool = True) -> None:
    n_types = int(ps.n_types)
    n_srv = int(ps.n_servers)
    n_conf = int(ps.n_confs)
    confs = np.asarray(ps.confs)[: n_conf * n_types].reshape(n_conf, n_types)
    filled = np.asarray(ps.filled).reshape(n_srv, n_types)
    # engine truth: running jobs per (server, type), used capacity
    truth = np.zeros((n_srv, n_types), dtype=np.int64)
    used = np.zeros_like(st.used)
    for q in range(int(st.ctr[K.N_RUNNING])):
        j = int(st.running[q])
        truth[st.server[j], st.job_class[j]] += 1
        used[st.server[j]] += st.demand[j]
    assert np.array_equal(filled, truth)
    assert np.all(used <= st.capacity + 1e-9)
    conf_of = np.asarray(ps.conf_of)
    assert np.all(filled <= confs[conf_of]), "a job outside a slot of its type"
    assert np.array_equal(np.asarray(ps.y), truth.sum(axis=0))
    for c in range(n_conf):
        members = recency(ps, c)
        assert sorted(members) == sorted(np.flatnonzero(conf_of == c).tolist())
        assert ps.count[c] == len(members)
        assert ps.nempty[c] == sum(truth[s].sum() == 0 for s in members)
    for j in range(n_types):
        free = {int(ps.free[j * n_srv + p]) for p in range(int(ps.nfree[j]))}
        assert free == set(np.flatnonzero(filled[:, j] < confs[conf_of, j]).tolist())
    if cra:  # right after an update (every event; not between periodic updates)
        audit_cra(ps, problem, truth)


def audit_cra(ps, problem: StaticProblem, truth: np.ndarray) -> None:
    """GPA targets and the CRA classification recomputed by brute force; ``truth`` (L, J) is
    the jobs of each type on each server."""
    n_types = int(ps.n_types)
    n_srv = int(ps.n_servers)
    n_conf = int(ps.n_confs)
    confs = np.asarray(ps.confs)[: n_conf * n_types].reshape(n_conf, n_types)
    r = int(ps.reserve)
    rounding = "floor" if ps.floor_rounding else "ceil"
    g = problem.gpa(np.asarray(ps.y) + r, n_srv, rounding=rounding)
    row = {confs[c].tobytes(): c for c in range(n_conf)}
    target = np.zeros(n_conf, dtype=np.int64)
    order = []
    for k, n in zip(g.configurations, g.counts, strict=True):
        target[row[k.tobytes()]] = n
        order.append(row[k.tobytes()])
    assert np.array_equal(np.asarray(ps.target)[:n_conf], target)
    pos = {c: i + 1 for i, c in enumerate(order)}
    rank = np.full(n_srv, BIG)
    for c in range(1, n_conf):
        members = recency(ps, c)  # index 1 first
        surplus = max(len(members) - target[c], 0) if c in pos else len(members)
        for idx, s in enumerate(members):
            rank[s] = BIG if idx < surplus else pos[c]
    unmet = [i for i, c in enumerate(order) if ps.count[c] < target[c]]
    i_star = unmet[0] + 1 if unmet else len(order) + 1
    assert ps.i_star == i_star
    if unmet:
        # CRA ran out of empty maximum-rank servers at i*: every server that was one then (in
        # any configuration GPA processes at or after i*, a surplus of an earlier one, unused by
        # GPA or empty) was reassigned, so every empty server left has rank <= i*.
        idle = [s for s in range(n_srv) if truth[s].sum() == 0 and rank[s] > i_star]
        assert not idle, idle
    reject = {
        recency(ps, c)[0]
        for c in range(1, n_conf)
        if ps.count[c] > 0 and rank[recency(ps, c)[0]] > i_star
    }
    assert {s for s in range(n_srv) if ps.rg[s]} == reject


def run_audited(spec: dict, chunk: int = 7) -> None:
    spec["run"]["check"] = True
    model = compile_model(parse_spec(spec))
    run = prepare(model)
    problem = dra_problem(model)
    run.ps = D.build_state(problem, engine_sizes(run.st), model.config)
    cra = model.config.update == "event"
    audit_dra(run.st, run.ps, problem, cra)
    for _ in steps(run, chunk):
        assert run.st.ctr[K.VIOLATION] == 0
        audit_dra(run.st, run.ps, problem, cra)
    st, view = run.st, run.ps
    assert st.ctr[K.VIOLATION] == 0
    audit_dra(st, view, problem, cra)
    assert st.ctr[K.N_LOST] == st.ctr[K.DROPPED] + st.ctr[K.PREEMPTIONS]
    if not model.config.preemption:
        assert st.ctr[K.PREEMPTIONS] == 0
    assert st.ctr[K.MIGRATIONS] == view.migrations
