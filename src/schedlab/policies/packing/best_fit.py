"""BF-J, BF-S and BF-J/S: Best-Fit scheduling from the job's, the server's and both perspectives.

psychas2019 §IV-A; extensions of §VIII. One implementation,
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
server order) and job arrival order (BF-J's job order: a ring over arrival numbers modulo
``RING``; while the waiting jobs span more arrivals than that, BF-J walks the queue instead, with
the same picks). See ``indexes.py``. The state is per job slot (memory bounded by the jobs
present; docs/decisions/0013-per-slot-packing.md).

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
* stalling (``stalling = true``) for non-geometric service (§VIII, technique of psychas2018 §3):
  after a decision, a server that had a departure, is less than half full (every resource below
  half in dot mode) and cannot take a waiting job that would fit it were it empty, stops taking
  jobs until it empties ("for BF-J/S that condition is when the server is less than half full");
  it is then activated and filled by the BF-S step. ``max_stalled_fraction`` caps the fraction
  of stalled servers (psychas2018 §6.4; default 1: no cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from schedlab.policies.packing.indexes import (
    JOB_INDEX,
    NEG_INF,
    SERVER_INDEX,
    ix_insert,
    ix_largest_le,
    ix_max_item,
    ix_remove,
    ix_smallest_ge,
    new_index,
    new_tree,
    next_pow2,
    population_bounds,
    ring_first_ge,
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
    TraceView,
    Traits,
    activate,
    engine_sizes,
    first_waiting,
    fits,
    is_waiting,
    kernel,
    n_arrived,
    n_arrived_new,
    n_completed_new,
    register,
    run_engine,
    stall,
    start,
    tolerance,
)

MODES = {"bf-js": 0, "bf-j": 1, "bf-s": 2}
MODE_JS, MODE_J, MODE_S = 0, 1, 2
JOB_BUCKETS = 4096
RING = 1 << 16  # BF-J's arrival-ordered ring: waiting jobs at most this many arrivals apart
SAMPLE = 1 << 20  # most trace job sizes kept to place the size buckets


class BestFitConfig(PolicyConfig):
    """Settings of BF-J/S (psychas2019 §IV-A) and its §VIII extensions (module docstring)."""

    mode: Literal["bf-js", "bf-j", "bf-s"] = "bf-js"
    multi_resource: Literal["dot", "max"] = "dot"
    stalling: bool = False
    max_stalled_fraction: Annotated[float, Field(gt=0, le=1)] = 1.0


STATE = PolicyState(
    "best_fit",
    [
        # compiled configuration
        StateField("mode", "i8"),  # MODE_JS, MODE_J or MODE_S
        StateField("dot", "b1"),  # multi-resource dot-product score (else scalar sizes)
        StateField("stalling", "b1"),
        StateField("max_stalled", "i8"),  # most servers stalled at once
        StateField("eps", "f8"),  # fit tolerance
        StateField("jscale", "f8"),  # job size -> bucket (equal-width buckets)
        StateField("sscale", "f8"),  # residual capacity -> server bucket
        StateField("use_jtree", "b1"),  # BF-J keeps waiting jobs in a segment tree
        StateField("ring_ok", "b1"),  # the ring holds every waiting job (else: walk the queue)
        # scalar sizes (psychas2019 §VII-B mapping for several resources)
        StateField("top", "f8", "resources"),  # C_r, the largest capacity of each resource
        StateField("x", "f8", "jobs"),  # job size (set when it arrives)
        StateField("cap", "f8", "servers"),  # server capacity
        StateField("u", "f8", "servers"),  # used capacity
        StateField("res", "f8", "servers"),  # residual capacity (the server index's key)
        StateField("jix", JOB_INDEX, "jobs"),  # waiting jobs by size
        StateField("six", SERVER_INDEX),  # active servers by residual capacity
        StateField("sid", "i8", "servers"),  # server index (ties in the residual index)
        StateField("s_tree", "f8", "server_tree"),  # residual capacity over server index
        # -size of waiting jobs over arrival number mod the ring size, and their slots
        StateField("j_tree", "f8", "job_tree"),
        StateField("ring_job", "i4", "ring"),
        *SWEEP_FIELDS,  # decision epochs
        StateField("n_stalled", "i8"),
    ],
)

# ------------------------------------------------------------------------------ scalar helpers


@kernel(wraparound=False)
def _server_key(ps, s, active):
    """Re-key server s in the residual index (or take it out when not active)."""
    ix_remove(ps.six, s)
    if active:
        r = ps.cap[s] - ps.u[s]
        if r < 0.0:
            r = 0.0
        ps.res[s] = r
        ix_insert(ps.six, ps.res, ps.sid, ps.sscale, s, False)
        seg_set(ps.s_tree, s, r)
    else:
        seg_set(ps.s_tree, s, NEG_INF)


@kernel(wraparound=False)
def _start_scalar(st, ps, j, s):
    if not start(st, j, s, 1.0):
        return False
    ix_remove(ps.jix, j)
    if ps.use_jtree and ps.ring_ok:
        seg_set(ps.j_tree, st.seq[j] & (ps.ring_job.shape[0] - 1), NEG_INF)
    ps.u[s] += ps.x[j]
    _server_key(ps, s, True)
    return True


@kernel(wraparound=False)
def _fill_scalar(st, ps, s):
    """BF-S on server s: repeatedly the largest waiting job that fits. Returns jobs placed."""
    n = 0
    while True:
        j = ix_largest_le(ps.jix, ps.x, ps.jscale, ps.res[s] + ps.eps)
        if j < 0:
            break
        if not _start_scalar(st, ps, j, s):
            break
        n += 1
    return n


@kernel(wraparound=False)
def _place_scalar(st, ps, j):
    """BF-J for job j: the server with the least residual capacity that holds it."""
    s = ix_smallest_ge(ps.six, ps.res, ps.sscale, ps.x[j] - ps.eps)
    if s < 0:
        return False
    return _start_scalar(st, ps, j, s)


# --------------------------------------------------------------------------------- dot helpers


@kernel(wraparound=False)
def dot_score(st, j, s):
    """< d_j / c_s, (used_s + d_j) / c_s > (§VIII dot-product best-fit score)."""
    sc = 0.0
    for r in range(st.capacity.shape[1]):
        c = st.capacity[s, r]
        d = st.demand[j, r]
        sc += (d / c) * ((st.used[s, r] + d) / c)
    return sc


@kernel(wraparound=False)
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


@kernel(wraparound=False)
def _fill_dot(st, s, new_only):
    """BF-S (dot score) on server s over waiting jobs: the whole queue, or (``new_only``) only the
    arrivals since the last decision. Returns jobs placed."""
    n = 0
    while True:
        best = -1
        best_score = NEG_INF
        if not new_only:
            j = first_waiting(st)
            while j != -1:
                if fits(st, j, s, 1.0):
                    sc = dot_score(st, j, s)
                    if sc > best_score:
                        best_score = sc
                        best = j
                j = st.q_next[j]
        else:
            for i in range(n_arrived_new(st)):
                j = st.arrived_buf[i]
                if is_waiting(st, j) and fits(st, j, s, 1.0):
                    sc = dot_score(st, j, s)
                    if sc > best_score:
                        best_score = sc
                        best = j
        if best < 0 or not start(st, best, s, 1.0):
            break
        n += 1
    return n


@kernel(wraparound=False)
def _fits_empty(st, j, s):
    for r in range(st.capacity.shape[1]):
        if st.demand[j, r] > st.capacity[s, r] + tolerance(st):
            return False
    return True


# ------------------------------------------------------------------------------ BF-J's ring


@kernel(wraparound=False)
def scalar_size(st, top, j):
    """Job j's scalar size (:func:`scalar_sizes`, one job): its demand with one resource, else
    max_r demand_r / C_r."""
    if top.shape[0] == 1:
        return st.demand[j, 0]
    m = st.demand[j, 0] / top[0]
    for r in range(1, top.shape[0]):
        v = st.demand[j, r] / top[r]
        if v > m:
            m = v
    return m


@kernel(wraparound=False)
def _ring_put(st, ps, j):
    """Waiting job j into BF-J's ring (leaf = arrival number mod P); the ring is given up when
    the waiting jobs span P arrivals or more (the queue is walked until it is rebuilt)."""
    if not ps.ring_ok:
        return
    p = ps.ring_job.shape[0]
    if st.seq[j] - st.seq[first_waiting(st)] >= p:
        ps.ring_ok = False
        return
    k = st.seq[j] & (p - 1)
    ps.ring_job[k] = j
    seg_set(ps.j_tree, k, -ps.x[j])


@kernel(wraparound=False)
def _ring_rebuild(st, ps):
    """Refill the ring from the waiting queue once its jobs span less than P/2 arrivals (a ring
    given up is then rebuilt at most once per P/2 arrivals)."""
    p = ps.ring_job.shape[0]
    j = first_waiting(st)
    if j != -1 and n_arrived(st) - st.seq[j] >= p // 2:
        return
    tree = ps.j_tree
    tree[:] = NEG_INF
    while j != -1:
        k = st.seq[j] & (p - 1)
        ps.ring_job[k] = j
        tree[p + k] = -ps.x[j]
        j = st.q_next[j]
    for k in range(p - 1, 0, -1):
        a = tree[2 * k]
        b = tree[2 * k + 1]
        tree[k] = a if a >= b else b
    ps.ring_ok = True


@kernel(wraparound=False)
def _bf_j_all(st, ps):
    """BF-J over every waiting job in arrival order, skipping those larger than the roomiest
    server (scalar sizes): by the ring when it holds them, else by walking the queue."""
    if ps.ring_ok:
        j = first_waiting(st)
        if j == -1:
            return
        lo = st.seq[j]
        nxt = lo
        while True:
            top = ix_max_item(ps.six)
            if top < 0:
                break
            k = ring_first_ge(ps.j_tree, lo, nxt, -(ps.res[top] + ps.eps))
            if k < 0:
                break
            j = ps.ring_job[k]
            _place_scalar(st, ps, j)
            nxt = st.seq[j] + 1
        return
    j = first_waiting(st)
    while j != -1:
        nxt_j = st.q_next[j]
        top = ix_max_item(ps.six)
        if top < 0:
            break
        if -ps.x[j] >= -(ps.res[top] + ps.eps):
            _place_scalar(st, ps, j)
        j = nxt_j


# ------------------------------------------------------------------------------------ decide


@kernel(wraparound=False)
def decide(st, ps):
    mode = ps.mode
    dot = ps.dot
    x = ps.x
    u = ps.u
    # arrivals since the last decision: st.arrived_buf[:n_new] in arrival order, with arrival
    # numbers a0..n_arrived(st)-1
    n_new = n_arrived_new(st)
    a0 = n_arrived(st) - n_new
    arrived = st.arrived_buf

    # new arrivals get their size and join the size index (scalar mode)
    if not dot:
        if ps.use_jtree and not ps.ring_ok:
            _ring_rebuild(st, ps)
        for i in range(n_new):
            j = arrived[i]
            x[j] = scalar_size(st, ps.top, j)
            if is_waiting(st, j):
                ix_insert(ps.jix, x, st.seq, ps.jscale, j, True)
                if ps.use_jtree:
                    _ring_put(st, ps, j)

    # departures: release capacity, collect the servers that had them, activate empty stalled ones
    if not dot:
        for i in range(n_completed_new(st)):
            j = st.done_buf[i]
            s = st.server[j]
            u[s] -= x[j]
            if st.n_on_server[s] == 0:
                u[s] = 0.0
    nd = departed_servers(st, ps)
    dirty = ps.dirty
    for k in range(nd):
        s = dirty[k]
        if st.stalled[s] != 0 and st.n_on_server[s] == 0:
            activate(st, s)
            ps.n_stalled -= 1
        if not dot and st.stalled[s] == 0:
            _server_key(ps, s, True)

    if mode == MODE_JS:
        # (1) BF-S over the servers with departures, (2) BF-J over the new arrivals
        for k in range(nd):
            s = dirty[k]
            if st.stalled[s] == 0:
                if dot:
                    _fill_dot(st, s, False)
                else:
                    _fill_scalar(st, ps, s)
        for i in range(n_new):
            j = arrived[i]
            if is_waiting(st, j):
                if dot:
                    s = _best_server_dot(st, j, dirty, -1)
                    if s >= 0:
                        start(st, j, s, 1.0)
                else:
                    _place_scalar(st, ps, j)
    elif mode == MODE_J:
        if dot:
            # old jobs can only fit servers that had departures; new jobs anywhere
            if nd > 0:
                j = first_waiting(st)
                while j != -1 and st.seq[j] < a0:
                    nxt = st.q_next[j]
                    s = _best_server_dot(st, j, dirty, nd)
                    if s >= 0:
                        start(st, j, s, 1.0)
                    j = nxt
            for i in range(n_new):
                j = arrived[i]
                if is_waiting(st, j):
                    s = _best_server_dot(st, j, dirty, -1)
                    if s >= 0:
                        start(st, j, s, 1.0)
        elif nd > 0:
            _bf_j_all(st, ps)
        else:
            for i in range(n_new):
                j = arrived[i]
                if is_waiting(st, j):
                    _place_scalar(st, ps, j)
    else:
        # BF-S: servers in index order; those without departures can only take new arrivals
        n_srv = st.capacity.shape[0]
        thr_new = np.inf
        for i in range(n_new):
            j = arrived[i]
            if is_waiting(st, j):
                if dot:
                    thr_new = 0.0
                elif x[j] - ps.eps < thr_new:
                    thr_new = x[j] - ps.eps
        cur = -1
        di = 0
        while True:
            s, di, is_dirty = next_server(ps, nd, di, cur, thr_new, dot, n_srv)
            if s >= n_srv:
                break
            if st.stalled[s] == 0:
                placed = _fill_dot(st, s, not is_dirty) if dot else _fill_scalar(st, ps, s)
                if placed == 0 and not is_dirty and not dot:
                    thr_new = np.inf  # tighten: the smallest new job still waiting
                    for i in range(n_new):
                        j = arrived[i]
                        if is_waiting(st, j) and x[j] - ps.eps < thr_new:
                            thr_new = x[j] - ps.eps
            cur = s

    # §VIII stalling: servers with departures that stay less than half full while a job they
    # could hold (if empty) waits
    if ps.stalling:
        for k in range(nd):
            s = dirty[k]
            if st.stalled[s] != 0 or st.n_on_server[s] == 0:
                continue
            if ps.n_stalled + 1 > ps.max_stalled:
                break
            if dot:
                half = True
                for r in range(st.capacity.shape[1]):
                    if st.used[s, r] >= 0.5 * st.capacity[s, r]:
                        half = False
                if not half:
                    continue
                waiting = False
                j = first_waiting(st)
                while j != -1:
                    if _fits_empty(st, j, s):
                        waiting = True
                        break
                    j = st.q_next[j]
                if not waiting:
                    continue
            else:
                if u[s] >= 0.5 * ps.cap[s]:
                    continue
                if ix_largest_le(ps.jix, x, ps.jscale, ps.cap[s] + ps.eps) < 0:
                    continue
                _server_key(ps, s, False)
            stall(st, s)
            ps.n_stalled += 1


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


# ------------------------------------------------------------------------------------ set-up


def scalar_sizes(demand: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Scalar job sizes and server capacities for the single-resource algorithms.

    One resource: the demands and capacities themselves. Several: the max-of-resources mapping
    (psychas2019 §VII-B, §VIII): size = max_r demand_r / C_r, server = min_r capacity_r / C_r with
    C_r = max_l capacity_{l,r}; a set of jobs whose scalar sizes fit a server also fits it in
    every resource. Returns (sizes, capacities, mapped)."""
    if capacity.shape[1] == 1:
        return demand[:, 0].astype(float), capacity[:, 0].astype(float), False
    top = capacity.max(axis=0)
    return (demand / top).max(axis=1), (capacity / top).min(axis=1), True


@dataclass(frozen=True)
class TraceSizes:
    """The scalar job sizes of a replayed trace, read in one pass batch by batch: ``smallest``
    (None without jobs; VQS's J = "auto") and ``bounds``, the size index's buckets:
    :func:`population_bounds` over every ``stride``-th job (stride doubled while more than
    ``SAMPLE`` are kept), each sampled size standing for ``stride`` jobs."""

    smallest: float | None
    bounds: np.ndarray


def trace_sizes(trace: TraceView, capacity: np.ndarray) -> TraceSizes:
    """One streaming pass over the trace's demand rows (memory: a batch and the sample)."""
    parts: list[np.ndarray] = []
    kept = seen = 0
    stride = 1
    smallest = None
    for demand in trace.demand_batches():
        x, _, _ = scalar_sizes(demand, capacity)
        if x.size:
            low = float(x.min())
            smallest = low if smallest is None else min(smallest, low)
        part = x[(-seen) % stride :: stride]  # the jobs whose number is a multiple of stride
        parts.append(part)
        kept += part.size
        seen += x.size
        while kept > SAMPLE:
            parts = [np.concatenate(parts)[::2]]
            kept = parts[0].size
            stride *= 2
    sample = np.concatenate(parts) if parts else np.zeros(0)
    return TraceSizes(smallest, population_bounds(sample, per_bucket=max(1, 32 // stride)))


def job_bounds(context: PolicyContext) -> np.ndarray | None:
    """Bucket boundaries of the job size index: from a replayed trace's job sizes
    (:func:`trace_sizes`), else None (equal-width buckets; a law's sizes spread out). Only
    speed depends on them (indexes.py)."""
    if context.trace is None:
        return None
    return trace_sizes(context.trace, context.capacity).bounds


def init(st: Any, context: PolicyContext, config: BestFitConfig) -> Any:
    n_jobs = st.arrival.shape[0]
    n_srv = st.capacity.shape[0]
    n_res = st.capacity.shape[1]
    dot = n_res > 1 and config.multi_resource == "dot"
    mode = MODES[config.mode]
    if dot:
        cap = np.zeros(n_srv)
        eps = 0.0
    else:
        _, cap, mapped = scalar_sizes(st.demand[:0], st.capacity)
        eps = 0.25e-9 if mapped else 0.5 * float(tolerance(st))
    xmax = float(cap.max()) if not dot else 1.0
    s_buckets = min(JOB_BUCKETS, next_pow2(2 * n_srv))
    use_jt = mode == MODE_J and not dot
    ring = RING if use_jt else 1
    j_tree = np.full(2 * ring, NEG_INF)
    s_tree, _ = new_tree(n_srv)
    bounds = None if dot else job_bounds(context)
    jix = new_index(JOB_INDEX, n_jobs, JOB_BUCKETS if bounds is None else 0, bounds)
    sizes = engine_sizes(st, server_tree=s_tree.shape[0], job_tree=j_tree.shape[0], ring=ring)
    ps = STATE.allocate(
        sizes,
        {
            "mode": mode,
            "dot": dot,
            "stalling": config.stalling,
            "max_stalled": int(np.floor(config.max_stalled_fraction * n_srv + 1e-9)),
            "eps": eps,
            "jscale": JOB_BUCKETS / xmax,
            "sscale": s_buckets / xmax,
            "use_jtree": use_jt,
            "ring_ok": True,
            "top": st.capacity.max(axis=0).astype(float),
            "cap": cap,
            "res": cap,
            "jix": jix,
            "six": new_index(SERVER_INDEX, n_srv, s_buckets),
            "sid": np.arange(n_srv, dtype=np.int64),
            "s_tree": s_tree,
            "j_tree": j_tree,
        },
    )
    if not dot:
        _init_servers(ps)
    return ps


@kernel(wraparound=False)
def _init_servers(ps):
    for s in range(ps.cap.shape[0]):
        _server_key(ps, s, True)


def check(context: PolicyContext, config: BestFitConfig) -> None:
    if context.family != "packing":
        raise SpecError(
            "best-fit policies are packing-family policies (psychas2019)", field="model.family"
        )


_COMMON = {
    "kernels": Kernels(state=STATE, init=init, runner=run, config=BestFitConfig),
    "traits": Traits(preemptive=False, size_knowledge="none", migrates=False),
    "hooks": Hooks(check=check),
}

register(
    Policy(
        name="bf-js",
        family="packing",
        about=About(
            title="BF-J/S",
            paper="psychas2019",
            section="§IV-A, Theorem 2",
            summary="best fit: BF-S on servers with departures, then BF-J for new arrivals",
        ),
        preset={"mode": "bf-js"},
        **_COMMON,
    )
)
register(
    Policy(
        name="bf-j",
        family="packing",
        about=About(
            title="BF-J",
            paper="psychas2019",
            section="§IV-A",
            summary="best fit from the job's perspective: each waiting job to the tightest server",
        ),
        preset={"mode": "bf-j"},
        **_COMMON,
    )
)
register(
    Policy(
        name="bf-s",
        family="packing",
        about=About(
            title="BF-S",
            paper="psychas2019",
            section="§IV-A",
            summary="best fit, server's perspective: each server takes the largest jobs that fit",
        ),
        preset={"mode": "bf-s"},
        **_COMMON,
    )
)
