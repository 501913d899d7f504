"""Kernels shared by the packing policies of psychas2019 (BF-J/S, §IV-A; VQS-BF, §VI): the
servers that had departures since the last decision, and the sweep over servers in index order.

Both policies keep, after every decision, the property that no waiting job fits any server, so a
decision only needs the servers that had departures ("dirty") and, for new arrivals, the servers
with room for the smallest of them. The policy state provides the fields ``mark`` (i8 per
server: the decision epoch that last marked it), ``dirty`` (i4 per server), ``epoch`` (i8
scalar), spliced in as ``*SWEEP_FIELDS``, and ``s_tree`` (max segment tree of residual capacity
over server index; see indexes.py).
"""

from __future__ import annotations

from schedlab.policies.packing.indexes import seg_first_ge
from schedlab.policy_api import (
    StateField,
    kernel,
    n_completed_new,
)

SWEEP_FIELDS = (
    StateField("mark", "i8", "servers"),
    StateField("dirty", "i4", "servers"),
    StateField("epoch", "i8"),
)


@kernel(wraparound=False)
def departed_servers(st, ps):
    """Start a decision epoch; put the servers with departures since the last decision, in index
    order, in ``ps.dirty[:nd]`` and return nd."""
    ps.epoch += 1
    epoch = ps.epoch
    mark = ps.mark
    dirty = ps.dirty
    nd = 0
    for i in range(n_completed_new(st)):
        s = st.server[st.done_buf[i]]
        if mark[s] != epoch:
            mark[s] = epoch
            dirty[nd] = s
            nd += 1
    dirty[:nd].sort()
    return nd


@kernel(wraparound=False)
def next_server(ps, nd, di, cur, thr_new, every, n_srv):
    """The next server after ``cur`` in index order that a sweep visits: the next dirty one, or
    the next whose residual capacity reaches ``thr_new`` (the smallest new arrival's size; inf
    when none; ``every``: any next server when thr_new < inf). Returns (server, new di,
    is_dirty); server == n_srv ends the sweep."""
    while di < nd and ps.dirty[di] <= cur:
        di += 1
    nxt_d = ps.dirty[di] if di < nd else n_srv
    nxt_o = n_srv
    if thr_new < float("inf"):
        if every:
            nxt_o = cur + 1
        else:
            o = seg_first_ge(ps.s_tree, cur + 1, thr_new)
            if o >= 0:
                nxt_o = o
    s = nxt_d if nxt_d < nxt_o else nxt_o
    return s, di, s == nxt_d
