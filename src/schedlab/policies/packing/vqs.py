"""VQS and VQS-BF: virtual-queue scheduling over the universal partition I (psychas2019 §V, §VI).

psychas2019 (Psychas & Ghaderi, INFOCOM 2019).

Virtual queues (§V-A). Job sizes are cut by partition I of eq. (6) with parameter J:
I_2m = (2/3 2^-m, 2^-m], I_2m+1 = (1/2 2^-m, 2/3 2^-m], m = 0..J-1 (sizes relative to the largest
server capacity C); a job of size in I_j waits in VQ_j, jobs of size <= 2^-J in VQ_{2J-1}, without
rounding their sizes. Q_j is the number of jobs in VQ_j.

VQS (§V-B), two steps per server and slot:
1. active configuration: when server l is empty (eq. (9): "it has been empty or all its jobs
   depart"), it takes the max-weight configuration of K_RED^(J) (eq. (7), 4J - 4 configurations)
   k* = argmax <k, Q> (eq. (8); ties: the first in the order of eq. (7)) and keeps it until it
   empties again;
2. scheduling with k = k1 e_1 + km e_jm: (i) if k1 = 1, 2/3 of the capacity is reserved for VQ_1
   and the server holds at most one VQ_1 job, taking the head of VQ_1 when it has none; (ii) it
   schedules jobs of VQ_jm "starting from the head-of-the-line job, until no more jobs can fit"
   (in the capacity not reserved for VQ_1): we take the jobs of VQ_jm in FIFO order, each one that
   fits, until the remaining room is below the smallest size of I_jm. Theorem 3: 2/3 of rho*.

VQS-BF (§VI): the same active configurations; scheduling (i) if k1 = 1 and the server holds no
VQ_1 job, the largest VQ_1 job that fits (nothing reserved); (ii) the largest VQ_jm jobs that fit,
until the server holds at least km jobs of VQ_jm, or none fits; (iii) BF-S: the largest jobs of the
whole queue that fit. Theorem 4: 2/3 of rho*.

Incremental implementation (exact for VQS-BF). After a decision no waiting job fits any server
(step (iii)), so between decisions only servers with departures and newly arrived jobs matter.
VQS-BF visits, in server index order, the servers with departures and those with room for a new
arrival (a segment tree over residual capacity), renewing the configuration of each empty one
(a server left empty after a decision cannot take any waiting job, so renewing it later is the
same); this equals running (i)-(iii) on every server every slot. VQS visits the servers with
departures (index order), then offers each new arrival to the servers whose configuration serves
its virtual queue and have room for it (first in list order), then lets the empty servers renew
their configuration (index order, per capacity class) — the paper does not order servers within
a slot.

Inferred details:
* VQS-BF step (i) takes a VQ_1 job only when the server holds none (as VQS does), i.e. up to k1;
* a configuration's weight uses Q at the moment the server renews it (earlier servers in the
  same slot have already taken jobs);
* heterogeneous servers (§VIII: "applied without changes when servers have resources that differ by
  a power of 2"): a server of capacity C/2^a uses K_RED^(J-a) in its own units, i.e. eq. (7) with
  every virtual-queue index shifted by 2a (I scaled by 2^-a is I shifted by 2a), on the same
  virtual queues; it needs J - a >= 2;
* multi-resource jobs: the max-of-resources mapping of §VII-B/§VIII (VQS is a single-resource
  algorithm);
* stalling (``stalling = true``, §VIII with psychas2018 §3 condition (5)): when a job departs from a
  server that stays non-empty, the server stalls if the weight of its active configuration is
  below ``stall_beta`` times the max weight over its K_RED; it takes no jobs until it empties,
  then renews its configuration. ``max_stalled_fraction`` caps the stalled fraction (psychas2018
  §6.4).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from schedlab.optim.configurations import reduced_compact, universal_partition
from schedlab.policies.packing.best_fit import (
    JOB_BUCKETS,
    job_bounds,
    scalar_size,
    scalar_sizes,
    trace_sizes,
)
from schedlab.policies.packing.indexes import (
    JOB_INDEX,
    NEG_INF,
    ix_insert,
    ix_largest_le,
    ix_remove,
    new_index,
    new_tree,
    seg_first_ge,
    seg_set,
)
from schedlab.policies.packing.sweep import SWEEP_FIELDS, departed_servers, next_server
from schedlab.policy_api import (
    About,
    Hooks,
    Kernels,
    Policy,
    PolicyConfig,
    PolicyContext,
    PolicyState,
    SpecError,
    StateField,
    Traits,
    activate,
    engine_sizes,
    is_waiting,
    kernel,
    list_append,
    list_remove,
    n_arrived_new,
    n_completed_new,
    register,
    run_engine,
    stall,
    start,
    tolerance,
)

MAX_J = 24
# role of a job started by VQS
ROLE_RESERVED, ROLE_MAIN = 1, 2


class VqsConfig(PolicyConfig):
    """Settings of VQS (psychas2019 §V) and VQS-BF (§VI); stalling after psychas2018 §3."""

    J: Annotated[int, Field(ge=2, le=MAX_J)] | Literal["auto"] = "auto"
    stalling: bool = False
    stall_beta: Annotated[float, Field(gt=0, lt=1)] = 0.9
    max_stalled_fraction: Annotated[float, Field(gt=0, le=1)] = 1.0


def _common_fields() -> list[StateField]:
    """Fields of both VQS and VQS-BF."""
    return [
        StateField("eps", "f8"),  # fit tolerance
        StateField("jscale", "f8"),  # job size -> bucket
        StateField("stalling", "b1"),
        StateField("stall_beta", "f8"),
        StateField("max_stalled", "i8"),  # most servers stalled at once
        StateField("top", "f8", "resources"),  # C_r, the largest capacity of each resource
        StateField("lo_abs", "f8", "queues"),  # lower end of each I_j (absolute)
        StateField("x", "f8", "jobs"),  # scalar job size (set when it arrives)
        StateField("typ", "i8", "jobs"),  # virtual queue of each job (set when it arrives)
        StateField("q", "i8", "queues"),  # Q_j: jobs in virtual queue j
        StateField("cap", "f8", "servers"),
        StateField("cls", "i8", "servers"),  # a_l: capacity C / 2^a_l
        StateField("conf", "i8", "servers"),  # active configuration (-1: none)
        # K_RED^(J - a) of eq. (7) per server class a, row c (config_table)
        StateField("cfg_k1", "i8", ("server_classes", "configs")),  # k1 (-1: unused row)
        StateField("cfg_reserved_q", "i8", ("server_classes", "configs")),  # VQ_1 of class a
        StateField("cfg_main_q", "i8", ("server_classes", "configs")),  # jm
        StateField("cfg_count", "i8", ("server_classes", "configs")),  # km
        *SWEEP_FIELDS,  # decision epochs
        StateField("n_stalled", "i8"),
    ]


VQS_STATE = PolicyState(
    "vqs",
    [
        *_common_fields(),
        StateField("reserve", "f8", "servers"),  # room reserved for the VQ_1 job
        # virtual queues: FIFO lists of jobs
        StateField("vq_nxt", "i4", "jobs", fill=-1),
        StateField("vq_prv", "i4", "jobs", fill=-1),
        StateField("vq_head", "i4", "queues", fill=-1),
        StateField("vq_tail", "i4", "queues", fill=-1),
        # per server
        StateField("used_main", "f8", "servers"),  # capacity used by main-queue jobs
        StateField("cap_main", "f8", "servers"),  # capacity for main-queue jobs
        StateField("has1", "i8", "servers"),  # holds its VQ_1 job
        StateField("main_t", "i8", "servers"),  # main virtual queue
        StateField("role_of", "i1", "jobs"),  # ROLE_RESERVED or ROLE_MAIN
        # servers open to each virtual queue: main part (o_*) and reserved part (r_*)
        StateField("o_nxt", "i4", "servers", fill=-1),
        StateField("o_prv", "i4", "servers", fill=-1),
        StateField("o_head", "i4", "queues", fill=-1),
        StateField("o_tail", "i4", "queues", fill=-1),
        StateField("o_in", "i8", "servers", fill=-1),
        StateField("r_nxt", "i4", "servers", fill=-1),
        StateField("r_prv", "i4", "servers", fill=-1),
        StateField("r_head", "i4", "queues", fill=-1),
        StateField("r_tail", "i4", "queues", fill=-1),
        StateField("r_in", "i8", "servers", fill=-1),
        # empty servers per class: max segment trees over server index (1: empty)
        StateField("empty", "f8", ("server_classes", "server_tree")),
    ],
)

VQS_BF_STATE = PolicyState(
    "vqs_bf",
    [
        *_common_fields(),
        StateField("hi_abs", "f8", "queues"),  # upper end of each I_j (absolute)
        StateField("jix", JOB_INDEX, "jobs"),  # waiting jobs by size
        StateField("u", "f8", "servers"),  # used capacity
        StateField("res", "f8", "servers"),  # residual capacity
        StateField("s_tree", "f8", "server_tree"),  # residual capacity over server index
        StateField("n_reserved", "i8", "servers"),  # jobs of the configuration's VQ_1
        StateField("n_main", "i8", "servers"),  # jobs of the configuration's main queue
    ],
)

# ------------------------------------------------------------------------ linked lists (servers)


@kernel(wraparound=False)
def _list_push(nxt, prv, head, tail, inlist, lst, s):
    """Append s to list lst (each item in at most one list of this family)."""
    if inlist[s] >= 0:
        return
    list_append(nxt, prv, head, tail, lst, lst, s)
    inlist[s] = lst


@kernel(wraparound=False)
def _list_drop(nxt, prv, head, tail, inlist, s):
    lst = inlist[s]
    if lst < 0:
        return
    list_remove(nxt, prv, head, tail, lst, lst, s)
    inlist[s] = -1


@kernel(wraparound=False)
def _drop_open(ps, s):
    _list_drop(ps.o_nxt, ps.o_prv, ps.o_head, ps.o_tail, ps.o_in, s)


@kernel(wraparound=False)
def _drop_reserved(ps, s):
    _list_drop(ps.r_nxt, ps.r_prv, ps.r_head, ps.r_tail, ps.r_in, s)


# ----------------------------------------------------------------------------- configurations


@kernel(wraparound=False)
def argmax_config(ps, a):
    """Max-weight configuration of class a (eq. (8)): (index, weight); ties: first in eq. (7)."""
    q = ps.q
    best = -1
    best_w = -1.0
    for c in range(ps.cfg_k1.shape[1]):
        k1 = ps.cfg_k1[a, c]
        if k1 < 0:
            break
        w = k1 * q[ps.cfg_reserved_q[a, c]] + ps.cfg_count[a, c] * q[ps.cfg_main_q[a, c]]
        if w > best_w:
            best_w = w
            best = c
    return best, best_w


@kernel(wraparound=False)
def config_weight(ps, a, c):
    q = ps.q
    return (
        ps.cfg_k1[a, c] * q[ps.cfg_reserved_q[a, c]] + ps.cfg_count[a, c] * q[ps.cfg_main_q[a, c]]
    )


@kernel(wraparound=False)
def _should_stall(ps, s):
    """psychas2018 condition (5) with K_RED: weight(active) < beta * max weight."""
    if not ps.stalling or ps.n_stalled + 1 > ps.max_stalled:
        return False
    a = ps.cls[s]
    _, best = argmax_config(ps, a)
    return config_weight(ps, a, ps.conf[s]) < ps.stall_beta * best


# ------------------------------------------------------------------------------------- VQS


@kernel(wraparound=False)
def _vqs_start(st, ps, j, s, role):
    """Start job j on server s as its VQ_1 job (role 1) or a main-queue job (role 2)."""
    if not start(st, j, s, 1.0):
        return False
    t = ps.typ[j]
    ps.q[t] -= 1
    list_remove(ps.vq_nxt, ps.vq_prv, ps.vq_head, ps.vq_tail, t, t, j)  # out of its queue
    ps.role_of[j] = role
    if role == ROLE_RESERVED:
        ps.has1[s] = 1
        _drop_reserved(ps, s)
    else:
        ps.used_main[s] += ps.x[j]
        if ps.cap_main[s] - ps.used_main[s] + ps.eps <= ps.lo_abs[ps.main_t[s]]:
            _drop_open(ps, s)
    return True


@kernel(wraparound=False)
def _vqs_open(ps, s):
    """Put server s (active, non-empty) in the lists of the virtual queues it can serve now."""
    c = ps.conf[s]
    a = ps.cls[s]
    if ps.cfg_k1[a, c] == 1 and ps.has1[s] == 0:
        _list_push(ps.r_nxt, ps.r_prv, ps.r_head, ps.r_tail, ps.r_in, ps.cfg_reserved_q[a, c], s)
    t = ps.main_t[s]
    if ps.cap_main[s] - ps.used_main[s] + ps.eps > ps.lo_abs[t]:
        _list_push(ps.o_nxt, ps.o_prv, ps.o_head, ps.o_tail, ps.o_in, t, s)


@kernel(wraparound=False)
def _vqs_fill(st, ps, s):
    """VQS step 2 on server s: (i) the head of VQ_1 into the reserved part; (ii) jobs of VQ_jm in
    FIFO order, each that fits, until no job of I_jm can fit. Returns jobs placed."""
    a = ps.cls[s]
    c = ps.conf[s]
    n = 0
    if ps.cfg_k1[a, c] == 1 and ps.has1[s] == 0:
        j = ps.vq_head[ps.cfg_reserved_q[a, c]]
        if j != -1 and _vqs_start(st, ps, j, s, ROLE_RESERVED):
            n += 1
    t = ps.main_t[s]
    j = ps.vq_head[t]
    while j != -1 and ps.cap_main[s] - ps.used_main[s] + ps.eps > ps.lo_abs[t]:
        nxt = ps.vq_nxt[j]
        if ps.x[j] <= ps.cap_main[s] - ps.used_main[s] + ps.eps:
            if not _vqs_start(st, ps, j, s, ROLE_MAIN):
                break
            n += 1
        j = nxt
    return n


@kernel(wraparound=False)
def _vqs_renew(ps, s):
    """Set the max-weight configuration of empty server s (eq. (8)); returns its weight."""
    a = ps.cls[s]
    c, w = argmax_config(ps, a)
    ps.conf[s] = c
    ps.main_t[s] = ps.cfg_main_q[a, c]
    ps.used_main[s] = 0.0
    ps.has1[s] = 0
    ps.cap_main[s] = ps.cap[s] - ps.reserve[s] if ps.cfg_k1[a, c] == 1 else ps.cap[s]
    return w


@kernel(wraparound=False)
def _arrive(st, ps, j):
    """Job j's scalar size and virtual queue (partition I, eq. (6)): the first I_t, in order,
    whose lower end it exceeds, else VQ_{2J-1}."""
    x = scalar_size(st, ps.top, j)
    ps.x[j] = x
    n = ps.lo_abs.shape[0]
    t = n - 1
    for k in range(n - 1):
        if x > ps.lo_abs[k]:
            t = k
            break
    ps.typ[j] = t


@kernel(wraparound=False)
def decide_vqs(st, ps):
    # arrivals since the last decision: st.arrived_buf[:n_new], in arrival order
    n_new = n_arrived_new(st)
    arrived = st.arrived_buf
    vq_nxt, vq_prv, vq_head, vq_tail = ps.vq_nxt, ps.vq_prv, ps.vq_head, ps.vq_tail
    for i in range(n_new):  # arrivals join their virtual queue
        j = arrived[i]
        _arrive(st, ps, j)
        t = ps.typ[j]
        list_append(vq_nxt, vq_prv, vq_head, vq_tail, t, t, j)
        ps.q[t] += 1
    for i in range(n_completed_new(st)):
        j = st.done_buf[i]
        s = st.server[j]
        if ps.role_of[j] == ROLE_RESERVED:
            ps.has1[s] = 0
        else:
            ps.used_main[s] -= ps.x[j]
    nd = departed_servers(st, ps)
    for k in range(nd):
        s = ps.dirty[k]
        if st.n_on_server[s] == 0:
            _drop_open(ps, s)
            _drop_reserved(ps, s)
            ps.conf[s] = -1
            ps.used_main[s] = 0.0
            ps.has1[s] = 0
            if st.stalled[s] != 0:
                activate(st, s)
                ps.n_stalled -= 1
            seg_set(ps.empty[ps.cls[s]], s, 1.0)
        elif st.stalled[s] == 0:
            if _should_stall(ps, s):
                stall(st, s)
                ps.n_stalled += 1
                _drop_open(ps, s)
                _drop_reserved(ps, s)
            else:
                _vqs_open(ps, s)
                _vqs_fill(st, ps, s)
    # new arrivals: to a server whose active configuration serves their virtual queue
    for i in range(n_new):
        j = arrived[i]
        if not is_waiting(st, j):
            continue
        t = ps.typ[j]
        s = ps.r_head[t]
        if s != -1:
            _vqs_start(st, ps, j, s, ROLE_RESERVED)
            continue
        s = ps.o_head[t]
        while s != -1:
            nxt = ps.o_nxt[s]
            if ps.x[j] <= ps.cap_main[s] - ps.used_main[s] + ps.eps:
                _vqs_start(st, ps, j, s, ROLE_MAIN)
                break
            s = nxt
    # empty servers renew their configuration (eq. (8)-(9)) and schedule
    empty = ps.empty
    for a in range(empty.shape[0]):
        s = -1
        while True:
            _, w = argmax_config(ps, a)
            if w <= 0.0:
                break
            s = seg_first_ge(empty[a], s + 1, 0.5)
            if s < 0:
                break
            _vqs_renew(ps, s)
            if _vqs_fill(st, ps, s) == 0:
                ps.conf[s] = -1
                break
            seg_set(empty[a], s, NEG_INF)
            _vqs_open(ps, s)


@kernel(wraparound=False)
def run_vqs(st, ps, max_events):
    return run_engine(st, ps, decide_vqs, max_events)


# ----------------------------------------------------------------------------------- VQS-BF


@kernel(wraparound=False)
def _bf_start(st, ps, j, s):
    if not start(st, j, s, 1.0):
        return False
    t = ps.typ[j]
    ps.q[t] -= 1
    ix_remove(ps.jix, j)
    ps.u[s] += ps.x[j]
    r = ps.cap[s] - ps.u[s]
    ps.res[s] = r if r > 0.0 else 0.0
    seg_set(ps.s_tree, s, ps.res[s])
    c = ps.conf[s]
    a = ps.cls[s]
    if ps.cfg_k1[a, c] == 1 and t == ps.cfg_reserved_q[a, c]:
        ps.n_reserved[s] += 1
    if t == ps.cfg_main_q[a, c]:
        ps.n_main[s] += 1
    return True


@kernel(wraparound=False)
def _largest_of_type(ps, thr, t):
    """The largest waiting job of virtual queue t with size <= thr, or -1."""
    lim = thr if thr < ps.hi_abs[t] else ps.hi_abs[t]
    j = ix_largest_le(ps.jix, ps.x, ps.jscale, lim)
    if j >= 0 and ps.typ[j] == t:
        return j
    return -1


@kernel(wraparound=False)
def _bf_visit(st, ps, s):
    """VQS-BF on server s: renew the configuration if empty, then steps (i), (ii), (iii)."""
    eps = ps.eps
    a = ps.cls[s]
    if st.n_on_server[s] == 0:
        c, _ = argmax_config(ps, a)
        ps.conf[s] = c
        ps.n_reserved[s] = 0
        ps.n_main[s] = 0
    c = ps.conf[s]
    n = 0
    if ps.cfg_k1[a, c] == 1 and ps.n_reserved[s] < 1:  # (i)
        j = _largest_of_type(ps, ps.res[s] + eps, ps.cfg_reserved_q[a, c])
        if j >= 0 and _bf_start(st, ps, j, s):
            n += 1
    t = ps.cfg_main_q[a, c]
    while ps.n_main[s] < ps.cfg_count[a, c]:  # (ii)
        j = _largest_of_type(ps, ps.res[s] + eps, t)
        if j < 0 or not _bf_start(st, ps, j, s):
            break
        n += 1
    while True:  # (iii) BF-S
        j = ix_largest_le(ps.jix, ps.x, ps.jscale, ps.res[s] + eps)
        if j < 0 or not _bf_start(st, ps, j, s):
            break
        n += 1
    return n


@kernel(wraparound=False)
def decide_vqs_bf(st, ps):
    eps = ps.eps
    x = ps.x
    # arrivals since the last decision: st.arrived_buf[:n_new], in arrival order
    n_new = n_arrived_new(st)
    arrived = st.arrived_buf
    thr_new = np.inf
    for i in range(n_new):
        j = arrived[i]
        _arrive(st, ps, j)
        ix_insert(ps.jix, x, st.seq, ps.jscale, j, True)
        ps.q[ps.typ[j]] += 1
        if x[j] - eps < thr_new:
            thr_new = x[j] - eps
    for i in range(n_completed_new(st)):
        j = st.done_buf[i]
        s = st.server[j]
        ps.u[s] -= x[j]
        t = ps.typ[j]
        c = ps.conf[s]
        a = ps.cls[s]
        if ps.cfg_k1[a, c] == 1 and t == ps.cfg_reserved_q[a, c]:
            ps.n_reserved[s] -= 1
        if t == ps.cfg_main_q[a, c]:
            ps.n_main[s] -= 1
    nd = departed_servers(st, ps)
    for k in range(nd):
        s = ps.dirty[k]
        if st.n_on_server[s] == 0:
            ps.u[s] = 0.0
            if st.stalled[s] != 0:
                activate(st, s)
                ps.n_stalled -= 1
        if st.stalled[s] == 0:
            r = ps.cap[s] - ps.u[s]
            ps.res[s] = r if r > 0.0 else 0.0
            seg_set(ps.s_tree, s, ps.res[s])
    # servers in index order: those with departures, and those with room for a new arrival
    n_srv = ps.cap.shape[0]
    cur = -1
    di = 0
    while True:
        s, di, is_dirty = next_server(ps, nd, di, cur, thr_new, False, n_srv)
        if s >= n_srv:
            break
        cur = s
        if st.stalled[s] != 0:
            continue
        if is_dirty and st.n_on_server[s] > 0 and _should_stall(ps, s):
            stall(st, s)
            ps.n_stalled += 1
            seg_set(ps.s_tree, s, NEG_INF)
            continue
        placed = _bf_visit(st, ps, s)
        if placed == 0 and not is_dirty:
            thr_new = np.inf
            for i in range(n_new):
                j = arrived[i]
                if is_waiting(st, j) and x[j] - eps < thr_new:
                    thr_new = x[j] - eps


@kernel(wraparound=False)
def run_vqs_bf(st, ps, max_events):
    return run_engine(st, ps, decide_vqs_bf, max_events)


# ------------------------------------------------------------------------------------ set-up


def server_classes(cap: np.ndarray) -> np.ndarray:
    """a_l with capacity_l = C / 2^a_l (C the largest); SpecError unless powers of two apart."""
    top = float(cap.max())
    ratio = top / cap
    a = np.rint(np.log2(ratio)).astype(np.int64)
    if not np.allclose(ratio, 2.0**a, rtol=1e-9):
        raise SpecError(
            "VQS/VQS-BF need server capacities that differ by powers of two (psychas2019 §VIII); "
            f"got {sorted(set(np.round(cap, 12).tolist()))}",
            field="cluster",
        )
    return a


def j_for_min_size(min_size: float, top: float) -> int:
    """The smallest J with 1/2^J <= min_size / C (Theorem 3: all jobs at least 1/2^J), >= 2."""
    if not min_size > 0:
        return MAX_J
    return int(min(MAX_J, max(2, math.ceil(math.log2(top / min_size) - 1e-12))))


def resolve_j(context: PolicyContext, config: VqsConfig) -> int:
    """J of the run: the parameter, or (``auto``) from the smallest possible job size: a
    replayed trace's smallest job (one streaming pass), else the classes' laws."""
    if config.J != "auto":
        return int(config.J)
    _, cap, _ = scalar_sizes(np.ones((1, context.capacity.shape[1])), context.capacity)
    top = float(cap.max())
    if context.trace is not None:
        smallest = trace_sizes(context.trace, context.capacity).smallest
        if smallest is not None:
            return j_for_min_size(smallest, top)
    # the smallest scalar size the classes can produce
    lows = []
    caps_top = context.capacity.max(axis=0)
    for c in context.classes:
        lo = np.array([d.support[0] for d in c.demand])
        lows.append(lo[0] if lo.size == 1 else float((lo / caps_top).max()))
    return j_for_min_size(min(lows), top)


def config_table(J: int, classes: np.ndarray) -> np.ndarray:
    """cfg[a, c] = (k1, VQ_1 index, main VQ index, km) of K_RED^(J-a) shifted by 2a; unused rows
    are -1. Class a's reserved virtual queue is 2a + 1."""
    n_cls = int(classes.max()) + 1
    rows = 4 * J - 4
    cfg = np.full((n_cls, rows, 4), -1, dtype=np.int64)
    for a in range(n_cls):
        if J - a < 2:
            continue
        for i, k in enumerate(reduced_compact(J - a)):
            cfg[a, i] = (k.k1, 2 * a + 1, k.main + 2 * a, k.count)
    return cfg


def _common(
    st: Any, context: PolicyContext, config: VqsConfig
) -> tuple[dict[str, Any], dict[str, int]]:
    """Values and sizes shared by the VQS and VQS-BF states."""
    _, cap, mapped = scalar_sizes(st.demand[:0], st.capacity)
    classes = server_classes(cap)
    J = resolve_j(context, config)  # checked by check()
    top = float(cap.max())
    part = universal_partition(J)
    lo_abs = top * part.lower
    lo_abs[-1] = 0.0  # VQ_{2J-1} also holds every job of size <= 2^-J
    hi_abs = top * part.upper
    hi_abs[0] = top
    cfg = config_table(J, classes)
    values = {
        "eps": 0.25e-9 if mapped else 0.5 * float(tolerance(st)),
        "jscale": JOB_BUCKETS / top,
        "stalling": config.stalling,
        "stall_beta": config.stall_beta,
        "max_stalled": int(np.floor(config.max_stalled_fraction * cap.size + 1e-9)),
        "top": st.capacity.max(axis=0).astype(float),
        "cap": cap,
        "cls": classes,
        "conf": np.full(cap.size, -1, dtype=np.int64),
        "cfg_k1": cfg[:, :, 0],
        "cfg_reserved_q": cfg[:, :, 1],
        "cfg_main_q": cfg[:, :, 2],
        "cfg_count": cfg[:, :, 3],
        "lo_abs": lo_abs,
        "hi_abs": hi_abs,
    }
    sizes = engine_sizes(
        st,
        queues=2 * J,
        server_classes=cfg.shape[0],
        configs=cfg.shape[1],
        server_tree=new_tree(cap.size)[0].shape[0],
    )
    return values, sizes


def init_vqs(st: Any, context: PolicyContext, config: VqsConfig) -> Any:
    values, sizes = _common(st, context, config)
    cap, classes = values["cap"], values["cls"]
    del values["hi_abs"]
    n_srv = cap.shape[0]
    empty = np.vstack([new_tree(n_srv)[0] for _ in range(int(classes.max()) + 1)])
    for s in range(n_srv):
        empty[classes[s], empty.shape[1] // 2 + s] = 1.0
    for a in range(empty.shape[0]):
        _rebuild(empty[a])
    values.update(
        {
            "reserve": cap * (2.0 / 3.0),  # the largest VQ_1 size of each server (I_1's top)
            "cap_main": cap,
            "empty": empty,
        }
    )
    return VQS_STATE.allocate(sizes, values)


def _rebuild(tree: np.ndarray) -> None:
    p = tree.shape[0] // 2
    for k in range(p - 1, 0, -1):
        tree[k] = max(tree[2 * k], tree[2 * k + 1])


def init_vqs_bf(st: Any, context: PolicyContext, config: VqsConfig) -> Any:
    values, sizes = _common(st, context, config)
    cap = values["cap"]
    n_srv = cap.shape[0]
    bounds = job_bounds(context)
    s_tree, _ = new_tree(n_srv)
    s_tree[s_tree.shape[0] // 2 : s_tree.shape[0] // 2 + n_srv] = cap
    _rebuild(s_tree)
    values.update(
        {
            "conf": np.zeros(n_srv, dtype=np.int64),
            "jix": new_index(
                JOB_INDEX, engine_sizes(st)["jobs"], JOB_BUCKETS if bounds is None else 0, bounds
            ),
            "res": cap,
            "s_tree": s_tree,
        }
    )
    return VQS_BF_STATE.allocate(sizes, values)


def check(context: PolicyContext, config: VqsConfig) -> None:
    if context.family != "packing":
        raise SpecError(
            "VQS policies are packing-family policies (psychas2019)", field="model.family"
        )
    _, cap, _ = scalar_sizes(np.ones((1, context.capacity.shape[1])), context.capacity)
    classes = server_classes(cap)
    J = resolve_j(context, config)
    if J - int(classes.max()) < 2:
        raise SpecError(
            f"J = {J} is too small for servers {2 ** int(classes.max())} times smaller than the "
            "largest (a server of capacity C/2^a needs J - a >= 2); raise J",
            field="policy.J",
        )


TRAITS = Traits(preemptive=False, size_knowledge="none", migrates=False)

register(
    Policy(
        name="vqs",
        family="packing",
        about=About(
            title="VQS",
            paper="psychas2019",
            section="§V, eq. (6)-(9), Theorem 3",
            summary="virtual queues over partition I; max-weight K_RED configuration at empty "
            "times",
        ),
        kernels=Kernels(state=VQS_STATE, init=init_vqs, runner=run_vqs, config=VqsConfig),
        traits=TRAITS,
        hooks=Hooks(check=check),
    )
)
register(
    Policy(
        name="vqs-bf",
        family="packing",
        about=About(
            title="VQS-BF",
            paper="psychas2019",
            section="§VI, Theorem 4",
            summary="VQS configurations, largest-fit within them, then BF-S on the remaining room",
        ),
        kernels=Kernels(state=VQS_BF_STATE, init=init_vqs_bf, runner=run_vqs_bf, config=VqsConfig),
        traits=TRAITS,
        hooks=Hooks(check=check),
    )
)
