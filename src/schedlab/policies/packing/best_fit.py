"""BF-J, BF-S and BF-J/S: Best-Fit scheduling from the job's, the server's and both perspectives.

Paper 000 (Psychas & Ghaderi, INFOCOM 2019), §IV-A; extensions of §VIII. One implementation,
parametrized by ``mode``:

* **BF-J** (job's perspective): the waiting jobs in arrival order; each is placed in the server with
  the least residual capacity among those that can hold it, else it stays in the queue.
* **BF-S** (server's perspective): the servers in index order; each is filled by repeatedly taking
  the largest waiting job that fits, until none fits.
* **BF-J/S** (``mode = "bf-js"``, the default): (1) BF-S over the servers that had departures since
  the last decision, in index order; (2) BF-J over the newly arrived jobs not placed in step 1, in
  arrival order. Theorem 2: at least 1/2 of the maximum workload rho*.

Exactness of the incremental implementation. The paper runs BF-J and BF-S over the whole queue
and all servers in every slot. After any decision of these policies no waiting job fits in any
(non-stalled) server, and between decisions servers only lose room unless a job departs; so only
servers with departures and newly arrived jobs can change anything. The policies therefore touch
only those, and give exactly the placements of the full scans, at a cost of O(log) per placement:
waiting jobs are kept in a bucket index by size (largest that fits: BF-S), servers in a bucket index
by residual capacity (tightest that fits: BF-J), plus segment trees over server index (BF-S's
server order) and job arrival order (BF-J's job order). See ``indexes.py``.

Inferred details (the paper leaves them open):
* ties: BF-S takes the oldest of equally large jobs; BF-J the lowest-indexed of equally tight
  servers;
* the fit test uses the engine's capacity tolerance (half of it, so every placement the policy
  considers feasible is accepted by the engine).

§VIII extensions, all parameters of this one implementation:
* heterogeneous servers: best fit on absolute residual capacities (§VIII: "BF-J/S and our analysis
  can indeed be easily applied without this assumption");
* multi-resource jobs (``multi_resource``): ``"max"`` maps each job to the scalar
  max_r demand_r / C_r (C_r the largest capacity of resource r) and each server to
  min_r capacity_r / C_r, the paper's preprocessing of the Google trace (§VII-B, §VIII: "resource
  requirements will not be violated"); ``"dot"`` (default) keeps the vectors and uses the
  dot-product best-fit score suggested in §VIII (after Tetris, ref. [14]):
  score(j, s) = < d_j / c_s, (used_s + d_j) / c_s >, the job's normalized requirements against
  the server's normalized occupancy once the job is placed. BF-J puts job j on the fitting server
  of highest score, BF-S fills server s with the fitting job of highest score. With one resource
  both reduce to best fit (least residual capacity; largest job) — our choice of the score's
  server-side form, which §VIII does not fix. Dot mode scans servers/queue linearly: O(L) per
  new job and O(queue) per server with departures;
* stalling (``stalling = true``) for non-geometric service (§VIII, technique of paper 001 §3):
  after a decision, a server that had a departure, is less than half full (every resource below
  half in dot mode) and cannot take a waiting job that would fit it were it empty, stops taking
  jobs until it empties ("for BF-J/S that condition is when the server is less than half full");
  it is then activated and filled by the BF-S step. ``max_stalled_fraction`` caps the fraction
  of stalled servers (paper 001 §6.4; default 1: no cap).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from numba import njit
from pydantic import BaseModel, ConfigDict, Field

from schedlab.engine.actions import activate, fits, stall, start
from schedlab.engine.constants import (
    ARRIVED,
    EPS,
    N_ARRIVED_NEW,
    N_COMPLETED_NEW,
    Q_HEAD,
    WAITING,
)
from schedlab.engine.loop import run_engine
from schedlab.errors import SpecError
from schedlab.policies._legacy import Policy, register
from schedlab.policies.packing.indexes import (
    NEG_INF,
    ix_insert,
    ix_largest_le,
    ix_max_item,
    ix_remove,
    ix_smallest_ge,
    new_index,
    new_tree,
    next_pow2,
    population_bounds,
    seg_first_ge,
    seg_set,
)

MODES = {"bf-js": 0, "bf-j": 1, "bf-s": 2}
MODE_JS, MODE_J, MODE_S = 0, 1, 2
JOB_BUCKETS = 4096

# fpar: float parameters
F_MODE, F_DOT, F_STALL, F_MAX_STALLED, F_EPS, F_JSCALE, F_SSCALE, F_JTREE = range(8)
N_FPAR = 8
# ictr: integer counters
C_EPOCH, C_STALLED = 0, 1


class BestFitParams(BaseModel):
    """Parameters of BF-J/S (paper 000 §IV-A) and its §VIII extensions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["bf-js", "bf-j", "bf-s"] = "bf-js"
    multi_resource: Literal["dot", "max"] = "dot"
    stalling: bool = False
    max_stalled_fraction: Annotated[float, Field(gt=0, le=1)] = 1.0


# ------------------------------------------------------------------------------ scalar helpers


@njit(cache=True)
def _server_key(six, res, cap, u, s_tree, sscale, s, active):
    """Re-key server s in the residual index (or take it out when not active)."""
    ix_remove(six, s)
    if active:
        r = cap[s] - u[s]
        if r < 0.0:
            r = 0.0
        res[s] = r
        ix_insert(six, res, sscale, s, False)
        seg_set(s_tree, s, r)
    else:
        seg_set(s_tree, s, NEG_INF)


@njit(cache=True)
def _start_scalar(st, j, s, x, cap, u, res, jix, six, s_tree, j_tree, sscale, use_jtree):
    if not start(st, j, s, 1.0):
        return False
    ix_remove(jix, j)
    if use_jtree:
        seg_set(j_tree, j, NEG_INF)
    u[s] += x[j]
    _server_key(six, res, cap, u, s_tree, sscale, s, True)
    return True


@njit(cache=True)
def _fill_scalar(st, s, x, cap, u, res, jix, six, s_tree, j_tree, jscale, sscale, eps, use_jt):
    """BF-S on server s: repeatedly the largest waiting job that fits. Returns jobs placed."""
    n = 0
    while True:
        j = ix_largest_le(jix, x, jscale, res[s] + eps)
        if j < 0:
            break
        if not _start_scalar(st, j, s, x, cap, u, res, jix, six, s_tree, j_tree, sscale, use_jt):
            break
        n += 1
    return n


@njit(cache=True)
def _place_scalar(st, j, x, cap, u, res, jix, six, s_tree, j_tree, sscale, eps, use_jt):
    """BF-J for job j: the server with the least residual capacity that holds it."""
    s = ix_smallest_ge(six, res, sscale, x[j] - eps)
    if s < 0:
        return False
    return _start_scalar(st, j, s, x, cap, u, res, jix, six, s_tree, j_tree, sscale, use_jt)


# --------------------------------------------------------------------------------- dot helpers


@njit(cache=True)
def dot_score(st, j, s):
    """< d_j / c_s, (used_s + d_j) / c_s > (§VIII dot-product best-fit score)."""
    sc = 0.0
    for r in range(st.capacity.shape[1]):
        c = st.capacity[s, r]
        d = st.demand[j, r]
        sc += (d / c) * ((st.used[s, r] + d) / c)
    return sc


@njit(cache=True)
def _best_server_dot(st, j, servers, n_servers):
    """Highest-score server where j fits, among servers[:n_servers] (all when n_servers < 0)."""
    best = -1
    best_score = NEG_INF
    n = st.capacity.shape[0] if n_servers < 0 else n_servers
    for i in range(n):
        s = i if n_servers < 0 else servers[i]
        if fits(st, j, s, 1.0):
            sc = dot_score(st, j, s)
            if sc > best_score:
                best_score = sc
                best = s
    return best


@njit(cache=True)
def _fill_dot(st, s, new_only):
    """BF-S (dot score) on server s over waiting jobs: the whole queue, or only the arrivals since
    the last decision when ``new_only``. Returns jobs placed."""
    n = 0
    while True:
        best = -1
        best_score = NEG_INF
        if not new_only:
            j = st.ctr[Q_HEAD]
            while j != -1:
                if fits(st, j, s, 1.0):
                    sc = dot_score(st, j, s)
                    if sc > best_score:
                        best_score = sc
                        best = j
                j = st.q_next[j]
        else:
            for ia in range(st.ctr[N_ARRIVED_NEW]):
                j = st.arrived_buf[ia]
                if st.status[j] == WAITING and fits(st, j, s, 1.0):
                    sc = dot_score(st, j, s)
                    if sc > best_score:
                        best_score = sc
                        best = j
        if best < 0 or not start(st, best, s, 1.0):
            break
        n += 1
    return n


@njit(cache=True)
def _fits_empty(st, j, s):
    for r in range(st.capacity.shape[1]):
        if st.demand[j, r] > st.capacity[s, r] + st.clk[EPS]:
            return False
    return True


# ------------------------------------------------------------------------------------ decide


@njit(cache=True)
def decide(st, ps):
    fpar, x, cap, u, res, jix, six, s_tree, j_tree, mark, dirty, ictr = ps
    mode = int(fpar[F_MODE])
    dot = fpar[F_DOT] != 0.0
    eps = fpar[F_EPS]
    jscale = fpar[F_JSCALE]
    sscale = fpar[F_SSCALE]
    use_jt = fpar[F_JTREE] != 0.0
    ictr[C_EPOCH] += 1
    epoch = ictr[C_EPOCH]
    n_new = st.ctr[N_ARRIVED_NEW]
    seq_new = st.ctr[ARRIVED] - n_new  # arrival sequence number of the first new arrival

    # new arrivals join the size index (scalar mode)
    if not dot:
        for ia in range(n_new):
            j = st.arrived_buf[ia]
            if st.status[j] == WAITING:
                ix_insert(jix, x, jscale, j, True, st.seq)
                if use_jt:
                    seg_set(j_tree, j, -x[j])

    # departures: release capacity, collect the servers that had them, activate empty stalled ones
    nd = 0
    for i in range(st.ctr[N_COMPLETED_NEW]):
        j = st.done_buf[i]
        s = st.server[j]
        if not dot:
            u[s] -= x[j]
            if st.n_on_server[s] == 0:
                u[s] = 0.0
        if mark[s] != epoch:
            mark[s] = epoch
            dirty[nd] = s
            nd += 1
    dirty[:nd].sort()
    for k in range(nd):
        s = dirty[k]
        if st.stalled[s] != 0 and st.n_on_server[s] == 0:
            activate(st, s)
            ictr[C_STALLED] -= 1
        if not dot and st.stalled[s] == 0:
            _server_key(six, res, cap, u, s_tree, sscale, s, True)

    if mode == MODE_JS:
        # (1) BF-S over the servers with departures, (2) BF-J over the new arrivals
        for k in range(nd):
            s = dirty[k]
            if st.stalled[s] == 0:
                if dot:
                    _fill_dot(st, s, False)
                else:
                    _fill_scalar(
                        st, s, x, cap, u, res, jix, six, s_tree, j_tree, jscale, sscale, eps, use_jt
                    )
        for ia in range(n_new):
            j = st.arrived_buf[ia]
            if st.status[j] == WAITING:
                if dot:
                    s = _best_server_dot(st, j, dirty, -1)
                    if s >= 0:
                        start(st, j, s, 1.0)
                else:
                    _place_scalar(
                        st, j, x, cap, u, res, jix, six, s_tree, j_tree, sscale, eps, use_jt
                    )
    elif mode == MODE_J:
        if dot:
            # old jobs can only fit servers that had departures; new jobs anywhere
            if nd > 0:
                j = st.ctr[Q_HEAD]
                while j != -1 and st.seq[j] < seq_new:
                    nxt = st.q_next[j]
                    s = _best_server_dot(st, j, dirty, nd)
                    if s >= 0:
                        start(st, j, s, 1.0)
                    j = nxt
            for ia in range(n_new):
                j = st.arrived_buf[ia]
                if st.status[j] == WAITING:
                    s = _best_server_dot(st, j, dirty, -1)
                    if s >= 0:
                        start(st, j, s, 1.0)
        elif nd > 0:
            # every waiting job in arrival order; skip those larger than the roomiest server
            prev = -1
            while True:
                top = ix_max_item(six)
                if top < 0:
                    break
                j = seg_first_ge(j_tree, prev + 1, -(res[top] + eps))
                if j < 0:
                    break
                _place_scalar(st, j, x, cap, u, res, jix, six, s_tree, j_tree, sscale, eps, use_jt)
                prev = j
        else:
            for ia in range(n_new):
                j = st.arrived_buf[ia]
                if st.status[j] == WAITING:
                    _place_scalar(
                        st, j, x, cap, u, res, jix, six, s_tree, j_tree, sscale, eps, use_jt
                    )
    else:
        # BF-S: servers in index order; those without departures can only take new arrivals
        n_srv = st.capacity.shape[0]
        thr_new = np.inf
        for ia in range(n_new):
            j = st.arrived_buf[ia]
            if st.status[j] == WAITING:
                if dot:
                    thr_new = 0.0
                elif x[j] - eps < thr_new:
                    thr_new = x[j] - eps
        cur = -1
        di = 0
        while True:
            while di < nd and dirty[di] <= cur:
                di += 1
            nxt_d = dirty[di] if di < nd else n_srv
            nxt_o = n_srv
            if thr_new < np.inf:
                if dot:
                    nxt_o = cur + 1
                else:
                    o = seg_first_ge(s_tree, cur + 1, thr_new)
                    if o >= 0:
                        nxt_o = o
            s = nxt_d if nxt_d < nxt_o else nxt_o
            if s >= n_srv:
                break
            is_dirty = s == nxt_d
            if st.stalled[s] == 0:
                if dot:
                    placed = _fill_dot(st, s, not is_dirty)
                else:
                    placed = _fill_scalar(
                        st, s, x, cap, u, res, jix, six, s_tree, j_tree, jscale, sscale, eps, use_jt
                    )
                if placed == 0 and not is_dirty and not dot:
                    thr_new = np.inf  # tighten: the smallest new job still waiting
                    for ia in range(n_new):
                        j = st.arrived_buf[ia]
                        if st.status[j] == WAITING and x[j] - eps < thr_new:
                            thr_new = x[j] - eps
            cur = s

    # §VIII stalling: servers with departures that stay less than half full while a job they
    # could hold (if empty) waits
    if fpar[F_STALL] != 0.0:
        for k in range(nd):
            s = dirty[k]
            if st.stalled[s] != 0 or st.n_on_server[s] == 0:
                continue
            if ictr[C_STALLED] + 1 > fpar[F_MAX_STALLED]:
                break
            if dot:
                half = True
                for r in range(st.capacity.shape[1]):
                    if st.used[s, r] >= 0.5 * st.capacity[s, r]:
                        half = False
                if not half:
                    continue
                waiting = False
                j = st.ctr[Q_HEAD]
                while j != -1:
                    if _fits_empty(st, j, s):
                        waiting = True
                        break
                    j = st.q_next[j]
                if not waiting:
                    continue
            else:
                if u[s] >= 0.5 * cap[s]:
                    continue
                if ix_largest_le(jix, x, jscale, cap[s] + eps) < 0:
                    continue
                _server_key(six, res, cap, u, s_tree, sscale, s, False)
            stall(st, s)
            ictr[C_STALLED] += 1


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


# ------------------------------------------------------------------------------------ set-up


def scalar_sizes(demand: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Scalar job sizes and server capacities for the single-resource algorithms.

    One resource: the demands and capacities themselves. Several: the max-of-resources mapping
    (paper 000 §VII-B, §VIII): size = max_r demand_r / C_r, server = min_r capacity_r / C_r with
    C_r = max_l capacity_{l,r}; a set of jobs whose scalar sizes fit a server also fits it in
    every resource. Returns (sizes, capacities, mapped)."""
    if capacity.shape[1] == 1:
        return demand[:, 0].astype(float), capacity[:, 0].astype(float), False
    top = capacity.max(axis=0)
    return (demand / top).max(axis=1), (capacity / top).min(axis=1), True


def make_state(st: Any, model: Any, params: BestFitParams) -> tuple:
    n_jobs = st.arrival.shape[0]
    n_srv = st.capacity.shape[0]
    n_res = st.capacity.shape[1]
    dot = n_res > 1 and params.multi_resource == "dot"
    mode = MODES[params.mode]
    if dot:
        x = np.zeros(1)
        cap = np.zeros(n_srv)
        eps = 0.0
    else:
        x, cap, mapped = scalar_sizes(st.demand, st.capacity)
        eps = 0.25e-9 if mapped else 0.5 * float(st.clk[EPS])
    xmax = float(cap.max()) if not dot else 1.0
    s_buckets = min(JOB_BUCKETS, next_pow2(2 * n_srv))
    use_jt = mode == MODE_J and not dot
    j_tree, _ = new_tree(n_jobs if use_jt else 1)
    s_tree, _ = new_tree(n_srv)
    fpar = np.zeros(N_FPAR)
    fpar[F_MODE] = mode
    fpar[F_DOT] = 1.0 if dot else 0.0
    fpar[F_STALL] = 1.0 if params.stalling else 0.0
    fpar[F_MAX_STALLED] = np.floor(params.max_stalled_fraction * n_srv + 1e-9)
    fpar[F_EPS] = eps
    fpar[F_JSCALE] = JOB_BUCKETS / xmax
    fpar[F_SSCALE] = s_buckets / xmax
    fpar[F_JTREE] = 1.0 if use_jt else 0.0
    jix = new_index(1, JOB_BUCKETS) if dot else new_index(n_jobs, 0, population_bounds(x))
    six = new_index(n_srv, s_buckets)
    u = np.zeros(n_srv)
    res = cap.copy()
    ps = (
        fpar,
        x,
        cap,
        u,
        res,
        jix,
        six,
        s_tree,
        j_tree,
        np.zeros(n_srv, dtype=np.int64),
        np.zeros(n_srv, dtype=np.int32),
        np.zeros(2, dtype=np.int64),
    )
    if not dot:
        _init_servers(six, res, cap, u, s_tree, fpar[F_SSCALE])
    return ps


@njit(cache=True)
def _init_servers(six, res, cap, u, s_tree, sscale):
    for s in range(cap.shape[0]):
        _server_key(six, res, cap, u, s_tree, sscale, s, True)


def check(model: Any, params: BestFitParams) -> None:
    if model.family != "packing":
        raise SpecError(
            "best-fit policies are packing-family policies (paper 000)", field="model.family"
        )


_COMMON = {
    "runner": run,
    "make_state": make_state,
    "params": BestFitParams,
    "check": check,
}

register(
    Policy(
        name="bf-js",
        family="packing",
        title="BF-J/S",
        reference="Psychas & Ghaderi 2019 (paper 000), §IV-A, Theorem 2",
        summary="best fit: BF-S on servers with departures, then BF-J for new arrivals",
        preset={"mode": "bf-js"},
        **_COMMON,
    )
)
register(
    Policy(
        name="bf-j",
        family="packing",
        title="BF-J",
        reference="Psychas & Ghaderi 2019 (paper 000), §IV-A",
        summary="best fit from the job's perspective: each waiting job to the tightest server",
        preset={"mode": "bf-j"},
        **_COMMON,
    )
)
register(
    Policy(
        name="bf-s",
        family="packing",
        title="BF-S",
        reference="Psychas & Ghaderi 2019 (paper 000), §IV-A",
        summary="best fit, server's perspective: each server takes the largest jobs that fit",
        preset={"mode": "bf-s"},
        **_COMMON,
    )
)
