"""VQS and VQS-BF: virtual-queue scheduling over the universal partition I (paper 000 §V, §VI).

Paper 000 (Psychas & Ghaderi, INFOCOM 2019).

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
* stalling (``stalling = true``, §VIII with paper 001 §3 condition (5)): when a job departs from a
  server that stays non-empty, the server stalls if the weight of its active configuration is
  below ``stall_beta`` times the max weight over its K_RED; it takes no jobs until it empties,
  then renews its configuration. ``max_stalled_fraction`` caps the stalled fraction (paper 001
  §6.4).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from numba import njit
from pydantic import BaseModel, ConfigDict, Field

from schedlab.engine.actions import activate, stall, start
from schedlab.engine.constants import EPS, N_ARRIVED_NEW, N_COMPLETED_NEW, WAITING
from schedlab.engine.loop import run_engine
from schedlab.engine.structures import list_append, list_remove
from schedlab.errors import SpecError
from schedlab.optim.configurations import reduced_compact, universal_partition
from schedlab.policies._legacy import Policy, register
from schedlab.policies.packing.best_fit import JOB_BUCKETS, scalar_sizes
from schedlab.policies.packing.indexes import (
    NEG_INF,
    ix_insert,
    ix_largest_le,
    ix_remove,
    new_index,
    new_tree,
    population_bounds,
    seg_first_ge,
    seg_set,
)

MAX_J = 24

# fpar
F_EPS, F_JSCALE, F_STALL, F_BETA, F_MAX_STALLED = range(5)
N_FPAR = 5
# ictr
C_EPOCH, C_STALLED = 0, 1
# job roles under VQS
ROLE_RESERVED, ROLE_MAIN = 1, 2


class VqsParams(BaseModel):
    """Parameters of VQS (§V) and VQS-BF (§VI)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    J: Annotated[int, Field(ge=2, le=MAX_J)] | Literal["auto"] = "auto"
    stalling: bool = False
    stall_beta: Annotated[float, Field(gt=0, lt=1)] = 0.9
    max_stalled_fraction: Annotated[float, Field(gt=0, le=1)] = 1.0


# ------------------------------------------------------------------------ linked lists (servers)


@njit(cache=True)
def _list_push(nxt, prv, head, tail, inlist, lst, s):
    """Append s to list lst (each item in at most one list of this family)."""
    if inlist[s] >= 0:
        return
    list_append(nxt, prv, head, tail, lst, lst, s)
    inlist[s] = lst


@njit(cache=True)
def _list_drop(nxt, prv, head, tail, inlist, s):
    lst = inlist[s]
    if lst < 0:
        return
    list_remove(nxt, prv, head, tail, lst, lst, s)
    inlist[s] = -1


# ----------------------------------------------------------------------------- configurations


@njit(cache=True)
def argmax_config(q, cfg, a):
    """Max-weight configuration of class a (eq. (8)): (index, weight); ties: first in eq. (7)."""
    best = -1
    best_w = -1.0
    for c in range(cfg.shape[1]):
        k1 = cfg[a, c, 0]
        if k1 < 0:
            break
        w = k1 * q[cfg[a, c, 1]] + cfg[a, c, 3] * q[cfg[a, c, 2]]
        if w > best_w:
            best_w = w
            best = c
    return best, best_w


@njit(cache=True)
def config_weight(q, cfg, a, c):
    return cfg[a, c, 0] * q[cfg[a, c, 1]] + cfg[a, c, 3] * q[cfg[a, c, 2]]


@njit(cache=True)
def _should_stall(st, s, q, cfg, cls, conf, fpar, ictr):
    """paper 001 condition (5) with K_RED: weight(active) < beta * max weight."""
    if fpar[F_STALL] == 0.0 or ictr[C_STALLED] + 1 > fpar[F_MAX_STALLED]:
        return False
    a = cls[s]
    _, best = argmax_config(q, cfg, a)
    return config_weight(q, cfg, a, conf[s]) < fpar[F_BETA] * best


# ------------------------------------------------------------------------------------- VQS


@njit(cache=True)
def _vqs_start(st, j, s, role, x, typ, q, vq, srv, lists, lo_abs, eps):
    """Start job j on server s as its VQ_1 job (role 1) or a main-queue job (role 2)."""
    vq_nxt, vq_prv, vq_head, vq_tail = vq
    _conf, _cls, used_main, cap_main, has1, main_t, role_of = srv
    o_nxt, o_prv, o_head, o_tail, o_in, r_nxt, r_prv, r_head, r_tail, r_in = lists
    if not start(st, j, s, 1.0):
        return False
    t = typ[j]
    q[t] -= 1
    list_remove(vq_nxt, vq_prv, vq_head, vq_tail, t, t, j)  # out of its virtual queue
    role_of[j] = role
    if role == ROLE_RESERVED:
        has1[s] = 1
        _list_drop(r_nxt, r_prv, r_head, r_tail, r_in, s)
    else:
        used_main[s] += x[j]
        if cap_main[s] - used_main[s] + eps <= lo_abs[main_t[s]]:
            _list_drop(o_nxt, o_prv, o_head, o_tail, o_in, s)
    return True


@njit(cache=True)
def _vqs_open(s, cfg, srv, lists, lo_abs, eps):
    """Put server s (active, non-empty) in the lists of the virtual queues it can serve now."""
    conf, cls, used_main, cap_main, has1, main_t, _role_of = srv
    o_nxt, o_prv, o_head, o_tail, o_in, r_nxt, r_prv, r_head, r_tail, r_in = lists
    c = conf[s]
    a = cls[s]
    if cfg[a, c, 0] == 1 and has1[s] == 0:
        _list_push(r_nxt, r_prv, r_head, r_tail, r_in, cfg[a, c, 1], s)
    t = main_t[s]
    if cap_main[s] - used_main[s] + eps > lo_abs[t]:
        _list_push(o_nxt, o_prv, o_head, o_tail, o_in, t, s)


@njit(cache=True)
def _vqs_fill(st, s, x, typ, q, vq, srv, lists, cfg, lo_abs, eps):
    """VQS step 2 on server s: (i) the head of VQ_1 into the reserved part; (ii) jobs of VQ_jm in
    FIFO order, each that fits, until no job of I_jm can fit. Returns jobs placed."""
    vq_nxt, _vq_prv, vq_head, _vq_tail = vq
    conf, cls, used_main, cap_main, has1, main_t, _role_of = srv
    a = cls[s]
    c = conf[s]
    n = 0
    if cfg[a, c, 0] == 1 and has1[s] == 0:
        j = vq_head[cfg[a, c, 1]]
        if j != -1 and _vqs_start(st, j, s, ROLE_RESERVED, x, typ, q, vq, srv, lists, lo_abs, eps):
            n += 1
    t = main_t[s]
    j = vq_head[t]
    while j != -1 and cap_main[s] - used_main[s] + eps > lo_abs[t]:
        nxt = vq_nxt[j]
        if x[j] <= cap_main[s] - used_main[s] + eps:
            if not _vqs_start(st, j, s, ROLE_MAIN, x, typ, q, vq, srv, lists, lo_abs, eps):
                break
            n += 1
        j = nxt
    return n


@njit(cache=True)
def _vqs_renew(s, q, cfg, srv, cap, reserve):
    """Set the max-weight configuration of empty server s (eq. (8)); returns its weight."""
    conf, cls, used_main, cap_main, has1, main_t, _role_of = srv
    a = cls[s]
    c, w = argmax_config(q, cfg, a)
    conf[s] = c
    main_t[s] = cfg[a, c, 2]
    used_main[s] = 0.0
    has1[s] = 0
    cap_main[s] = cap[s] - reserve[s] if cfg[a, c, 0] == 1 else cap[s]
    return w


@njit(cache=True)
def decide_vqs(st, ps):
    fpar, x, typ, q, cap, reserve, lo_abs, cfg, vq, srv, lists, empty, mark, dirty, ictr = ps
    conf, cls, used_main, cap_main, has1, _main_t, role_of = srv
    o_nxt, o_prv, o_head, o_tail, o_in, r_nxt, r_prv, r_head, r_tail, r_in = lists
    vq_nxt, vq_prv, vq_head, vq_tail = vq
    eps = fpar[F_EPS]
    ictr[C_EPOCH] += 1
    epoch = ictr[C_EPOCH]
    n_new = st.ctr[N_ARRIVED_NEW]
    for ia in range(n_new):  # arrivals join their virtual queue
        j = st.arrived_buf[ia]
        t = typ[j]
        last = vq_tail[t]
        vq_prv[j] = last
        vq_nxt[j] = -1
        if last == -1:
            vq_head[t] = j
        else:
            vq_nxt[last] = j
        vq_tail[t] = j
        q[t] += 1
    nd = 0
    for i in range(st.ctr[N_COMPLETED_NEW]):
        j = st.done_buf[i]
        s = st.server[j]
        if role_of[j] == ROLE_RESERVED:
            has1[s] = 0
        else:
            used_main[s] -= x[j]
        if mark[s] != epoch:
            mark[s] = epoch
            dirty[nd] = s
            nd += 1
    dirty[:nd].sort()
    for k in range(nd):
        s = dirty[k]
        if st.n_on_server[s] == 0:
            _list_drop(o_nxt, o_prv, o_head, o_tail, o_in, s)
            _list_drop(r_nxt, r_prv, r_head, r_tail, r_in, s)
            conf[s] = -1
            used_main[s] = 0.0
            has1[s] = 0
            if st.stalled[s] != 0:
                activate(st, s)
                ictr[C_STALLED] -= 1
            seg_set(empty[cls[s]], s, 1.0)
        elif st.stalled[s] == 0:
            if _should_stall(st, s, q, cfg, cls, conf, fpar, ictr):
                stall(st, s)
                ictr[C_STALLED] += 1
                _list_drop(o_nxt, o_prv, o_head, o_tail, o_in, s)
                _list_drop(r_nxt, r_prv, r_head, r_tail, r_in, s)
            else:
                _vqs_open(s, cfg, srv, lists, lo_abs, eps)
                _vqs_fill(st, s, x, typ, q, vq, srv, lists, cfg, lo_abs, eps)
    # new arrivals: to a server whose active configuration serves their virtual queue
    for ia in range(n_new):
        j = st.arrived_buf[ia]
        if st.status[j] != WAITING:
            continue
        t = typ[j]
        s = r_head[t]
        if s != -1:
            _vqs_start(st, j, s, ROLE_RESERVED, x, typ, q, vq, srv, lists, lo_abs, eps)
            continue
        s = o_head[t]
        while s != -1:
            nxt = o_nxt[s]
            if x[j] <= cap_main[s] - used_main[s] + eps:
                _vqs_start(st, j, s, ROLE_MAIN, x, typ, q, vq, srv, lists, lo_abs, eps)
                break
            s = nxt
    # empty servers renew their configuration (eq. (8)-(9)) and schedule
    for a in range(empty.shape[0]):
        s = -1
        while True:
            _, w = argmax_config(q, cfg, a)
            if w <= 0.0:
                break
            s = seg_first_ge(empty[a], s + 1, 0.5)
            if s < 0:
                break
            _vqs_renew(s, q, cfg, srv, cap, reserve)
            if _vqs_fill(st, s, x, typ, q, vq, srv, lists, cfg, lo_abs, eps) == 0:
                conf[s] = -1
                break
            seg_set(empty[a], s, NEG_INF)
            _vqs_open(s, cfg, srv, lists, lo_abs, eps)


@njit(cache=True)
def run_vqs(st, ps, max_events):
    return run_engine(st, ps, decide_vqs, max_events)


# ----------------------------------------------------------------------------------- VQS-BF


@njit(cache=True)
def _bf_start(st, j, s, x, typ, q, jix, u, res, cap, s_tree, cnt, conf, cls, cfg):
    if not start(st, j, s, 1.0):
        return False
    t = typ[j]
    q[t] -= 1
    ix_remove(jix, j)
    u[s] += x[j]
    r = cap[s] - u[s]
    res[s] = r if r > 0.0 else 0.0
    seg_set(s_tree, s, res[s])
    c = conf[s]
    a = cls[s]
    if cfg[a, c, 0] == 1 and t == cfg[a, c, 1]:
        cnt[s, 0] += 1
    if t == cfg[a, c, 2]:
        cnt[s, 1] += 1
    return True


@njit(cache=True)
def _largest_of_type(jix, x, typ, jscale, thr, t, hi_abs):
    """The largest waiting job of virtual queue t with size <= thr, or -1."""
    lim = thr if thr < hi_abs[t] else hi_abs[t]
    j = ix_largest_le(jix, x, jscale, lim)
    if j >= 0 and typ[j] == t:
        return j
    return -1


@njit(cache=True)
def _bf_visit(st, s, x, typ, q, jix, u, res, cap, s_tree, cnt, conf, cls, cfg, hi_abs, fp):
    """VQS-BF on server s: renew the configuration if empty, then steps (i), (ii), (iii)."""
    eps = fp[F_EPS]
    jscale = fp[F_JSCALE]
    a = cls[s]
    if st.n_on_server[s] == 0:
        c, _ = argmax_config(q, cfg, a)
        conf[s] = c
        cnt[s, 0] = 0
        cnt[s, 1] = 0
    c = conf[s]
    n = 0
    if cfg[a, c, 0] == 1 and cnt[s, 0] < 1:  # (i)
        j = _largest_of_type(jix, x, typ, jscale, res[s] + eps, cfg[a, c, 1], hi_abs)
        if j >= 0 and _bf_start(st, j, s, x, typ, q, jix, u, res, cap, s_tree, cnt, conf, cls, cfg):
            n += 1
    t = cfg[a, c, 2]
    while cnt[s, 1] < cfg[a, c, 3]:  # (ii)
        j = _largest_of_type(jix, x, typ, jscale, res[s] + eps, t, hi_abs)
        if j < 0 or not _bf_start(
            st, j, s, x, typ, q, jix, u, res, cap, s_tree, cnt, conf, cls, cfg
        ):
            break
        n += 1
    while True:  # (iii) BF-S
        j = ix_largest_le(jix, x, jscale, res[s] + eps)
        if j < 0 or not _bf_start(
            st, j, s, x, typ, q, jix, u, res, cap, s_tree, cnt, conf, cls, cfg
        ):
            break
        n += 1
    return n


@njit(cache=True)
def decide_vqs_bf(st, ps):
    fpar, x, typ, q, cap, hi_abs, cfg, jix, u, res, s_tree, cnt, conf, cls, mark, dirty, ictr = ps
    eps = fpar[F_EPS]
    jscale = fpar[F_JSCALE]
    ictr[C_EPOCH] += 1
    epoch = ictr[C_EPOCH]
    n_new = st.ctr[N_ARRIVED_NEW]
    thr_new = np.inf
    for ia in range(n_new):
        j = st.arrived_buf[ia]
        ix_insert(jix, x, jscale, j, True, st.seq)
        q[typ[j]] += 1
        if x[j] - eps < thr_new:
            thr_new = x[j] - eps
    nd = 0
    for i in range(st.ctr[N_COMPLETED_NEW]):
        j = st.done_buf[i]
        s = st.server[j]
        u[s] -= x[j]
        t = typ[j]
        c = conf[s]
        a = cls[s]
        if cfg[a, c, 0] == 1 and t == cfg[a, c, 1]:
            cnt[s, 0] -= 1
        if t == cfg[a, c, 2]:
            cnt[s, 1] -= 1
        if mark[s] != epoch:
            mark[s] = epoch
            dirty[nd] = s
            nd += 1
    dirty[:nd].sort()
    for k in range(nd):
        s = dirty[k]
        if st.n_on_server[s] == 0:
            u[s] = 0.0
            if st.stalled[s] != 0:
                activate(st, s)
                ictr[C_STALLED] -= 1
        if st.stalled[s] == 0:
            r = cap[s] - u[s]
            res[s] = r if r > 0.0 else 0.0
            seg_set(s_tree, s, res[s])
    # servers in index order: those with departures, and those with room for a new arrival
    n_srv = cap.shape[0]
    cur = -1
    di = 0
    while True:
        while di < nd and dirty[di] <= cur:
            di += 1
        nxt_d = dirty[di] if di < nd else n_srv
        nxt_o = n_srv
        if thr_new < np.inf:
            o = seg_first_ge(s_tree, cur + 1, thr_new)
            if o >= 0:
                nxt_o = o
        s = nxt_d if nxt_d < nxt_o else nxt_o
        if s >= n_srv:
            break
        cur = s
        if st.stalled[s] != 0:
            continue
        if (
            s == nxt_d
            and st.n_on_server[s] > 0
            and _should_stall(st, s, q, cfg, cls, conf, fpar, ictr)
        ):
            stall(st, s)
            ictr[C_STALLED] += 1
            seg_set(s_tree, s, NEG_INF)
            continue
        placed = _bf_visit(
            st, s, x, typ, q, jix, u, res, cap, s_tree, cnt, conf, cls, cfg, hi_abs, fpar
        )
        if placed == 0 and s != nxt_d:
            thr_new = np.inf
            for ia in range(n_new):
                j = st.arrived_buf[ia]
                if st.status[j] == WAITING and x[j] - eps < thr_new:
                    thr_new = x[j] - eps


@njit(cache=True)
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
            "VQS/VQS-BF need server capacities that differ by powers of two (paper 000 §VIII); "
            f"got {sorted(set(np.round(cap, 12).tolist()))}",
            field="cluster",
        )
    return a


def j_for_min_size(min_size: float, top: float) -> int:
    """The smallest J with 1/2^J <= min_size / C (Theorem 3: all jobs at least 1/2^J), >= 2."""
    if not min_size > 0:
        return MAX_J
    return int(min(MAX_J, max(2, math.ceil(math.log2(top / min_size) - 1e-12))))


def resolve_j(model: Any, params: VqsParams, x: np.ndarray | None = None) -> int:
    """J of the run: the parameter, or (``auto``) from the smallest possible job size."""
    if params.J != "auto":
        return int(params.J)
    _, cap, _ = scalar_sizes(np.ones((1, model.capacity.shape[1])), model.capacity)
    top = float(cap.max())
    if x is not None and x.size:
        return j_for_min_size(float(x.min()), top)
    # the smallest scalar size the classes can produce
    lows = []
    caps_top = model.capacity.max(axis=0)
    for c in model.classes:
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


def _common(st: Any, model: Any, params: VqsParams) -> tuple:
    x, cap, mapped = scalar_sizes(st.demand, st.capacity)
    classes = server_classes(cap)
    J = resolve_j(model, params, x if model.trace is not None else None)
    if J - int(classes.max()) < 2:
        raise SpecError(
            f"J = {J} is too small for servers {2 ** int(classes.max())} times smaller than the "
            "largest (a server of capacity C/2^a needs J - a >= 2); raise J",
            field="policy.J",
        )
    top = float(cap.max())
    part = universal_partition(J)
    lo_abs = top * part.lower
    lo_abs[-1] = 0.0  # VQ_{2J-1} also holds every job of size <= 2^-J
    hi_abs = top * part.upper
    hi_abs[0] = top
    typ = np.full(x.shape[0], 2 * J - 1, dtype=np.int64)
    assigned = np.zeros(x.shape[0], dtype=bool)
    for t in range(2 * J - 1):
        hit = ~assigned & (x > lo_abs[t])
        typ[hit] = t
        assigned |= hit
    eps = 0.25e-9 if mapped else 0.5 * float(st.clk[EPS])
    fpar = np.zeros(N_FPAR)
    fpar[F_EPS] = eps
    fpar[F_JSCALE] = JOB_BUCKETS / top
    fpar[F_STALL] = 1.0 if params.stalling else 0.0
    fpar[F_BETA] = params.stall_beta
    fpar[F_MAX_STALLED] = np.floor(params.max_stalled_fraction * cap.size + 1e-9)
    return fpar, x, typ, cap, classes, config_table(J, classes), lo_abs, hi_abs, J


def make_state_vqs(st: Any, model: Any, params: VqsParams) -> tuple:
    fpar, x, typ, cap, classes, cfg, lo_abs, _, J = _common(st, model, params)
    n, n_srv, n_q = x.shape[0], cap.shape[0], 2 * J
    reserve = cap * (2.0 / 3.0)  # the largest VQ_1 size of each server (I_1's upper end)
    vq = tuple(np.full(m, -1, dtype=np.int32) for m in (n, n, n_q, n_q))
    srv = (
        np.full(n_srv, -1, dtype=np.int64),  # active configuration
        classes,
        np.zeros(n_srv),  # capacity used by main-queue jobs
        cap.copy(),  # capacity for main-queue jobs
        np.zeros(n_srv, dtype=np.int64),  # holds its VQ_1 job
        np.zeros(n_srv, dtype=np.int64),  # main virtual queue
        np.zeros(n, dtype=np.int8),  # role of each job
    )

    def lst() -> tuple:
        return (
            np.full(n_srv, -1, dtype=np.int32),
            np.full(n_srv, -1, dtype=np.int32),
            np.full(n_q, -1, dtype=np.int32),
            np.full(n_q, -1, dtype=np.int32),
            np.full(n_srv, -1, dtype=np.int64),
        )

    lists = lst() + lst()
    empty = np.vstack([new_tree(n_srv)[0] for _ in range(int(classes.max()) + 1)])
    for s in range(n_srv):
        empty[classes[s], empty.shape[1] // 2 + s] = 1.0
    for a in range(empty.shape[0]):
        _rebuild(empty[a])
    return (
        fpar,
        x,
        typ,
        np.zeros(n_q, dtype=np.int64),
        cap,
        reserve,
        lo_abs,
        cfg,
        vq,
        srv,
        lists,
        empty,
        np.zeros(n_srv, dtype=np.int64),
        np.zeros(n_srv, dtype=np.int32),
        np.zeros(2, dtype=np.int64),
    )


def _rebuild(tree: np.ndarray) -> None:
    p = tree.shape[0] // 2
    for k in range(p - 1, 0, -1):
        tree[k] = max(tree[2 * k], tree[2 * k + 1])


def make_state_vqs_bf(st: Any, model: Any, params: VqsParams) -> tuple:
    fpar, x, typ, cap, classes, cfg, _, hi_abs, J = _common(st, model, params)
    n, n_srv = x.shape[0], cap.shape[0]
    s_tree, _ = new_tree(n_srv)
    s_tree[s_tree.shape[0] // 2 : s_tree.shape[0] // 2 + n_srv] = cap
    _rebuild(s_tree)
    return (
        fpar,
        x,
        typ,
        np.zeros(2 * J, dtype=np.int64),
        cap,
        hi_abs,
        cfg,
        new_index(n, 0, population_bounds(x)),
        np.zeros(n_srv),
        cap.copy(),
        s_tree,
        np.zeros((n_srv, 2), dtype=np.int64),
        np.zeros(n_srv, dtype=np.int64),
        classes,
        np.zeros(n_srv, dtype=np.int64),
        np.zeros(n_srv, dtype=np.int32),
        np.zeros(2, dtype=np.int64),
    )


def check(model: Any, params: VqsParams) -> None:
    if model.family != "packing":
        raise SpecError(
            "VQS policies are packing-family policies (paper 000)", field="model.family"
        )
    _, cap, _ = scalar_sizes(np.ones((1, model.capacity.shape[1])), model.capacity)
    classes = server_classes(cap)
    if params.J != "auto" and int(params.J) - int(classes.max()) < 2:
        raise SpecError(
            f"J = {params.J} is too small for servers {2 ** int(classes.max())} times smaller "
            "than the largest (needs J - a >= 2)",
            field="policy.J",
        )


register(
    Policy(
        name="vqs",
        family="packing",
        title="VQS",
        reference="Psychas & Ghaderi 2019 (paper 000), §V, eq. (6)-(9), Theorem 3",
        summary="virtual queues over partition I; max-weight K_RED configuration at empty times",
        runner=run_vqs,
        make_state=make_state_vqs,
        params=VqsParams,
        check=check,
    )
)
register(
    Policy(
        name="vqs-bf",
        family="packing",
        title="VQS-BF",
        reference="Psychas & Ghaderi 2019 (paper 000), §VI, Theorem 4",
        summary="VQS configurations, largest-fit within them, then BF-S on the remaining room",
        runner=run_vqs_bf,
        make_state=make_state_vqs_bf,
        params=VqsParams,
        check=check,
    )
)
