"""The worked example of docs/auto-scaling.md, stepped through DRA's compiled core by hand.

Types (introduction of paper 002): G = (0.6, 0.6) reward 4, C = (0.7, 0.1) reward 3,
M = (0.1, 0.7) reward 3 on servers of capacity (1, 1); L = 4, r = 1. Configurations: CM = (0,1,1)
(u = 6), G = (1,0,0), C = (0,1,0). Every expectation below is derived by hand from Algorithms 1-2
as restored in notes/dra.md (the derivation is in the docs).
"""

from __future__ import annotations

import numpy as np

from schedlab.optim.reward import StaticProblem
from schedlab.policies.loss import dra as D

G, C, M = 0, 1, 2
PROBLEM = StaticProblem([[0.6, 0.6], [0.7, 0.1], [0.1, 0.7]], [1.0, 1.0], [4.0, 3.0, 3.0])


def conf(ps, s) -> list[int]:
    n = int(ps.n_confs)
    return np.asarray(ps.confs)[: n * 3].reshape(n, 3)[ps.conf_of[s]].tolist()


def arrive(state, job: int, j: int) -> int:
    s = D.accept_server(state, j)
    if s >= 0:
        D._place(state, job, j, s)
        state.y[j] += 1
        D.update(state)
    return s


def depart(state, job: int, j: int, s: int) -> int:
    """A departure from an Accept-Group server; returns the server a job migrated from."""
    ps = state
    was_accept = state.rg[s] == 0
    D._unplace(ps, job, j, s)
    state.y[j] -= 1
    src = D.reject_source(ps, j) if was_accept else -1
    if src >= 0:
        mover = state.jhead[src * 3 + j]
        D._unplace(ps, mover, j, src)
        D._place(ps, mover, j, s)
    D.update(ps)
    return src


def test_worked_example():
    sizes = {"jobs": 100, "servers": 4, "classes": 3, "resources": 2}
    st = D.build_state(PROBLEM, sizes, D.DraConfig(reservation=1))
    ps = st
    # t = 0: Y = 0, Yhat = (1,1,1): GPA -> 1 x CM, 1 x G; CRA gives servers 0, 1 to them.
    assert [conf(ps, s) for s in range(4)] == [[0, 1, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert ps.i_star == 3 and not ps.rg.any()
    # a G job: the only Accept-Group server with an empty G slot is server 1. Yhat = (2,1,1):
    # GPA wants 2 x G, so CRA reassigns empty server 2 to G.
    assert arrive(st, 0, G) == 1
    assert conf(ps, 2) == [1, 0, 0]
    # a C job goes into server 0 (CM). Yhat = (2,2,1): GPA = 1 x CM (M exhausted), 2 x G,
    # then J_3 = {C}: 1 x C; server 3 becomes a C server.
    assert arrive(st, 1, C) == 0
    assert conf(ps, 3) == [0, 1, 0]
    # another C job: server 0's C slot is full, server 3 has one: admitted there.
    assert arrive(st, 2, C) == 3
    # an M job fills server 0 (CM). Y = (1,2,1), Yhat = (2,3,2): GPA = 2 x CM (M exhausted:
    # ceil(2/1) < ceil(3/1)), then J_2 = {G, C}: 2 x G, and no server is left for C.
    # CRA, i = 1 (CM, 1 < 2): no server of the empty configuration; configuration C (unused by
    # GPA) has no empty server (server 3 holds a job); but server 2 (G, processed later, still at
    # the maximum rank) is empty: it becomes CM. i = 2 (G, 1 < 2): no empty maximum-rank server
    # is left, so i* = 2. Reject Group: newest servers of rank > 2: server 3 (C, maximum rank).
    assert arrive(st, 3, M) == 0
    assert conf(ps, 2) == [0, 1, 1]
    assert ps.i_star == 2
    assert np.flatnonzero(ps.rg).tolist() == [3]
    # a G arrival: server 1 (the only G server) is full: lost.
    assert D.accept_server(st, G) == -1
    # the C job of server 0 (Accept Group) leaves: the C job of server 3 (Reject Group) migrates
    # into the freed slot. Y = (1,1,1), Yhat = (2,2,2): GPA = 2 x CM, 2 x G. CRA: CM has 2;
    # G has 1 < 2 and server 3 is now empty and of maximum rank: it becomes G. All targets
    # met: i* = 3 and the Reject Group is empty.
    assert depart(st, 1, C, 0) == 3
    assert conf(ps, 3) == [1, 0, 0]
    assert ps.i_star == 3 and not ps.rg.any()
    assert np.asarray(ps.y).tolist() == [1, 1, 1]
