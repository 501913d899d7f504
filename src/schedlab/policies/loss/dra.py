"""GPA-driven reservation: DRA (Algorithm 2) and DRA+preemption (§7.2) of psychas2022.

Paper: Psychas & Ghaderi, "A Theory of Auto-Scaling for Resource Reservation in Cloud Services",
Stochastic Systems 2022 (key ``psychas2022``), §3.1 (GPA, Algorithm 1), §4 (DRA, Algorithm 2),
§7.2 (DRA+preemption); the lost inline math is restored in notes/dra.md, which this follows.

Each server s holds a configuration conf(s) (a vector of *slots* per VM type) and the jobs
placed in those slots. Servers of one configuration are indexed 1..X_k, index 1 = the most
recently assigned (a recency list per configuration, head = index 1).

At every update (every admission and every departure; ``update = "periodic"`` runs it every
``period`` time units instead):

1. Yhat = Y + r(L) 1 (Y: admitted jobs per type); GPA (Algorithm 1) on (Yhat, L) gives target
   counts X^g per configuration in GPA order k_1, k_2, ... (the knapsacks MaxReward(J') do not
   depend on the workload, Remark 1: up to EAGER_TYPES types all 2^J are precomputed; beyond,
   each is solved by the compiled exact knapsack the first time GPA meets J' and cached).
2. CRA: for i = 1..m and k = k_i: if X_k < X^g_k, empty servers of maximum rank are reassigned
   to k until X_k = X^g_k or none is left; otherwise the X_k - X^g_k newest servers of k are
   surplus and keep the maximum rank. i* is the first i whose target could not be met (m + 1
   when all were). The Reject Group is the newest server of each configuration whose rank
   exceeds i*; all other servers form the Accept Group.

An arriving type-j job is admitted into an Accept-Group server with an empty type-j slot, or
lost. When a type-j job leaves an Accept-Group server, a type-j job of the highest-rank
Reject-Group server holding one migrates into the freed slot.

Incremental CRA: the state keeps X_k, the recency list and the list of empty servers of every
configuration, the set of servers with an empty slot of each type and the Reject Group, so an
update costs O(J^2 + number of configurations + surplus servers walked), independent of L: no
update scans the servers.

INFERRED choices (notes/dra.md), all parameters or stated here:

* ``reservation`` r(L): default ceil(sqrt(L)) (the paper asks r = omega(log L), r = o(L)).
* ``rounding``: GPA's per-iteration server count rounds up (ceil(Yrem_j / k_i[j])), capped by the
  servers left; the exhausted type on ties is the lowest index.
* Which empty maximum-rank server CRA reassigns first (the paper: "any"): a server of the empty
  configuration, then one of a configuration GPA does not use, then a surplus server of an
  already processed configuration (the newest empty one), then one of a configuration GPA
  processes later.
* Which Accept-Group server takes an arrival (the paper: "any"): the last entry of the type's
  set of servers with a free slot (an O(1) choice; the set is unordered).
* The Reject-Group server a migration comes from: the highest rank; among equal ranks the
  lowest configuration index.
* Order within an event: a departure's migration uses the classification in force at the
  departure, then the update runs. Jobs leaving at the same instant all leave first; a later
  departure of the batch migrates nothing when an update after an earlier one reassigned its
  (then empty) server, so that its freed slot no longer exists.
* DRA+preemption (§7.2): when a job of priority p > the lowest priority is lost, jobs of the
  lowest priority are preempted, smallest size first, until their total size reaches
  ``preempt_factor`` x r x the arriving job's size (default factor 1: "size times r") or none
  are left; preempted jobs are lost and counted. The preempted jobs are taken from the
  Reject Group first (as migrations are), then from the other servers in server order.
  Sizes are the largest normalized demand max_r b_jr / c_r.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field

from schedlab.optim.reward import (
    VALUE_TOL,
    StaticProblem,
    knapsack_tables,
    lexicographic_argmax,
    workload_of_model,
)
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
    engine_sizes,
    kernel,
    list_insert_after,
    list_remove,
    migrate,
    n_arrived_new,
    n_completed_new,
    now,
    preempt,
    register,
    run_engine,
    start,
    wake_at,
)

EAGER_TYPES = 12  # up to this many types, MaxReward of all 2^J subsets is precomputed
MAX_TYPES = 62  # subsets are bit masks of an int64
LAZY_CONFS = 4096  # room for configurations found while running (J > EAGER_TYPES)
CACHE_SLOTS = 1 << 14  # MaxReward cache entries while running (J > EAGER_TYPES)
BIG_RANK = 1 << 30

STATE = PolicyState(
    "dra",
    [
        # compiled configuration and counters
        StateField("n_types", "i8"),
        StateField("n_servers", "i8"),
        StateField("n_confs", "i8"),
        StateField("reserve", "i8"),  # r(L)
        StateField("periodic", "b1"),  # CRA only at periodic updates
        StateField("period", "f8"),
        StateField("next_update", "f8"),
        StateField("floor_rounding", "b1"),  # GPA rounds down (INFERRED alternative)
        StateField("preemption", "b1"),  # DRA+preemption
        StateField("preempt_factor", "f8"),
        StateField("lowest", "i8"),  # lowest priority value
        StateField("m", "i8"),  # configurations in the current GPA output
        StateField("i_star", "i8"),
        StateField("n_rg", "i8"),  # servers in the Reject Group
        StateField("reassignments", "i8"),  # configuration changes made by CRA
        StateField("migrations", "i8"),
        StateField("preempted", "i8"),
        StateField("updates", "i8"),
        # configurations: row 0 is the empty configuration; slots flattened (C * J)
        StateField("confs", "i8", "conf_slots"),
        StateField("dense", "b1"),  # MaxReward precomputed for every mask (J <= EAGER_TYPES)
        StateField("mr_of_mask", "i4", "masks"),  # its row per bit mask (dense)
        # MaxReward(J') cache otherwise: open addressing, key = bit mask (-1: free), value = row
        StateField("mr_key", "i8", "mr_cache", -1),
        StateField("mr_val", "i4", "mr_cache", -1),
        StateField("mr_size", "i8"),
        StateField("grid_w", "i8", "type_resources"),  # knapsack grid (J * R), for lazy MaxReward
        StateField("grid_cap", "i8", "grid_resources"),
        StateField("value", "f8", "classes"),  # u_j
        StateField("value_tol", "f8"),
        StateField("size", "f8", "classes"),  # normalized size max_r b_jr / c_r
        StateField("priority", "i8", "classes"),
        # servers: configuration, recency list (head = index 1), empty list, jobs
        StateField("conf_of", "i4", "servers", -1),
        StateField("rnext", "i4", "servers", -1),
        StateField("rprev", "i4", "servers", -1),
        StateField("rhead", "i4", "confs", -1),
        StateField("rtail", "i4", "confs", -1),
        StateField("count", "i4", "confs"),  # X_k
        StateField("enext", "i4", "servers", -1),
        StateField("eprev", "i4", "servers", -1),
        StateField("ehead", "i4", "confs", -1),
        StateField("etail", "i4", "confs", -1),
        StateField("nempty", "i4", "confs"),
        StateField("njobs", "i4", "servers"),
        StateField("filled", "i4", "server_slots"),  # (L * J) jobs of type j on server s
        StateField("free", "i4", "server_slots"),  # (J * L) servers with an empty type-j slot
        StateField("free_pos", "i4", "server_slots", -1),
        StateField("nfree", "i4", "classes"),
        StateField("jhead", "i4", "server_slots", -1),  # jobs of type j on server s
        StateField("jtail", "i4", "server_slots", -1),
        StateField("left_accept", "b1", "jobs"),  # a departed job left an Accept-Group server
        StateField("jnext", "i4", "jobs", -1),
        StateField("jprev", "i4", "jobs", -1),
        # GPA output and classification
        StateField("target", "i4", "confs"),  # X^g
        StateField("gpa_pos", "i4", "confs"),  # 1..m, 0 = not used by GPA
        StateField("order", "i4", "classes"),
        StateField("rg", "i1", "servers"),  # 1: Reject Group
        StateField("rg_list", "i4", "confs"),
        StateField("y", "i8", "classes"),  # admitted jobs per type
        StateField("left", "f8", "classes"),  # workspace
    ],
)


# ------------------------------------------------------------------------------ free-server sets


@kernel(wraparound=False, inline="always")
def _free_add(ps, j, s):
    n_srv = ps.n_servers
    if ps.free_pos[j * n_srv + s] >= 0:
        return
    n = ps.nfree[j]
    ps.free[j * n_srv + n] = s
    ps.free_pos[j * n_srv + s] = n
    ps.nfree[j] = n + 1


@kernel(wraparound=False, inline="always")
def _free_remove(ps, j, s):
    n_srv = ps.n_servers
    p = ps.free_pos[j * n_srv + s]
    if p < 0:
        return
    last = ps.nfree[j] - 1
    moved = ps.free[j * n_srv + last]
    ps.free[j * n_srv + p] = moved
    ps.free_pos[j * n_srv + moved] = p
    ps.free_pos[j * n_srv + s] = -1
    ps.nfree[j] = last


# ------------------------------------------------------------------------------ configurations


@kernel(wraparound=False)
def assign(ps, s, c):
    """Give empty server s configuration c; it becomes index 1 of c."""
    n_types = ps.n_types
    old = ps.conf_of[s]
    if old >= 0:
        list_remove(ps.rnext, ps.rprev, ps.rhead, ps.rtail, old, old, s)
        list_remove(ps.enext, ps.eprev, ps.ehead, ps.etail, old, old, s)
        ps.count[old] -= 1
        ps.nempty[old] -= 1
        for j in range(n_types):
            if ps.confs[old * n_types + j] > 0:
                _free_remove(ps, j, s)
    ps.conf_of[s] = c
    list_insert_after(ps.rnext, ps.rprev, ps.rhead, ps.rtail, c, c, -1, s)
    list_insert_after(ps.enext, ps.eprev, ps.ehead, ps.etail, c, c, -1, s)
    ps.count[c] += 1
    ps.nempty[c] += 1
    for j in range(n_types):
        if ps.confs[c * n_types + j] > 0:
            _free_add(ps, j, s)


@kernel(wraparound=False, inline="always")
def _cache_slot(mask, n_slots):
    """Home slot of a bit mask in the MaxReward cache (n_slots a power of 2)."""
    return (mask ^ (mask >> 16) ^ (mask >> 32)) & (n_slots - 1)


@kernel(wraparound=False)
def _conf_row(ps, k):
    """The row of configuration k, added to the table if new."""
    n_types = ps.n_types
    for c in range(ps.n_confs):
        same = True
        for j in range(n_types):
            if ps.confs[c * n_types + j] != k[j]:
                same = False
                break
        if same:
            return c
    c = ps.n_confs
    if (c + 1) * n_types > ps.confs.shape[0]:
        raise ValueError("DRA: more distinct MaxReward configurations than LAZY_CONFS")
    for j in range(n_types):
        ps.confs[c * n_types + j] = k[j]
    ps.n_confs = c + 1
    return c


@kernel(wraparound=False)
def max_reward_conf(ps, mask):
    """Row of MaxReward(J') (Definition 2.3) for the types in bit mask J': from the cache, else
    solved now by the exact knapsack of optim.reward and cached (J > EAGER_TYPES)."""
    n_slots = ps.mr_key.shape[0]
    i = _cache_slot(mask, n_slots)
    while ps.mr_key[i] != -1:
        if ps.mr_key[i] == mask:
            return ps.mr_val[i]
        i = (i + 1) & (n_slots - 1)
    n_types = ps.n_types
    allowed = np.zeros(n_types, dtype=np.bool_)
    for j in range(n_types):
        allowed[j] = (mask >> j) & 1
    w = ps.grid_w.reshape((n_types, ps.grid_cap.shape[0]))
    tables = knapsack_tables(w, ps.grid_cap, ps.value, allowed)
    tol = ps.value_tol * max(1.0, tables[0, -1])
    c = _conf_row(ps, lexicographic_argmax(w, ps.grid_cap, ps.value, allowed, tables, tol))
    if 4 * (ps.mr_size + 1) <= 3 * n_slots:  # a full cache keeps working, uncached
        ps.mr_key[i] = mask
        ps.mr_val[i] = c
        ps.mr_size += 1
    return c


@kernel(wraparound=False)
def gpa(ps):
    """GPA (Algorithm 1) on Yhat = Y + r and L servers: sets target, gpa_pos, order, S_M."""
    n_types = ps.n_types
    for i in range(ps.m):
        c = ps.order[i]
        ps.target[c] = 0
        ps.gpa_pos[c] = 0
    r = ps.reserve
    for j in range(n_types):
        ps.left[j] = ps.y[j] + r
    active = (1 << n_types) - 1
    l_rem = ps.n_servers
    floor = ps.floor_rounding
    m = 0
    while active != 0 and l_rem > 0:
        c = ps.mr_of_mask[active] if ps.dense else max_reward_conf(ps, active)
        if c == 0:
            break
        best = -1
        n_i = 0
        for j in range(n_types):
            k = ps.confs[c * n_types + j]
            if k > 0:
                q = ps.left[j] / k
                need = int(np.floor(q)) if floor else int(np.ceil(q))
                if best < 0 or need < n_i:
                    best = j
                    n_i = need
        if n_i > l_rem:
            n_i = l_rem
        if n_i > 0:
            ps.target[c] = n_i
            ps.gpa_pos[c] = m + 1
            ps.order[m] = c
            m += 1
            l_rem -= n_i
            for j in range(n_types):
                k = ps.confs[c * n_types + j]
                if k > 0:
                    v = ps.left[j] - n_i * k
                    ps.left[j] = v if v > 0.0 else 0.0
        active &= ~(1 << best)
    ps.m = m


@kernel(wraparound=False)
def _surplus(ps, c):
    """Servers of c beyond its GPA target (all of them when GPA does not use c)."""
    extra = ps.count[c] - ps.target[c]
    return extra if extra > 0 else 0


@kernel(wraparound=False)
def _reassignable(ps, i):
    """An empty server of maximum rank while CRA processes GPA position i (0-based), or -1.
    Search order (INFERRED, module docstring): empty configuration, configurations unused by GPA,
    surplus of processed ones (newest first), configurations GPA processes later."""
    if ps.nempty[0] > 0:
        return ps.ehead[0]
    n_conf = ps.n_confs
    for c in range(1, n_conf):
        if ps.gpa_pos[c] == 0 and ps.nempty[c] > 0:
            return ps.ehead[c]
    for i2 in range(i):
        c = ps.order[i2]
        extra = _surplus(ps, c)
        if extra > 0 and ps.nempty[c] > 0:
            s = ps.rhead[c]
            while extra > 0 and s >= 0:
                if ps.njobs[s] == 0:
                    return s
                s = ps.rnext[s]
                extra -= 1
    for i2 in range(i + 1, ps.m):
        c = ps.order[i2]
        if ps.nempty[c] > 0:
            return ps.ehead[c]
    return -1


@kernel(wraparound=False)
def head_rank(ps, c):
    """Rank of the newest server of configuration c after CRA."""
    if ps.gpa_pos[c] == 0 or _surplus(ps, c) > 0:
        return BIG_RANK
    return ps.gpa_pos[c]


@kernel(wraparound=False)
def cra(ps):
    """Classification and reassignment (§4): reassign, find i*, rebuild the Reject Group."""
    m = ps.m
    i_star = m + 1
    for i in range(m):
        c = ps.order[i]
        while ps.count[c] < ps.target[c]:
            s = _reassignable(ps, i)
            if s < 0:
                break
            assign(ps, s, c)
            ps.reassignments += 1
        if ps.count[c] < ps.target[c] and i_star == m + 1:
            i_star = i + 1
    ps.i_star = i_star
    for q in range(ps.n_rg):
        ps.rg[ps.rg_list[q]] = 0
    n_rg = 0
    for c in range(1, ps.n_confs):
        if ps.count[c] > 0 and head_rank(ps, c) > i_star:
            s = ps.rhead[c]
            ps.rg[s] = 1
            ps.rg_list[n_rg] = s
            n_rg += 1
    ps.n_rg = n_rg
    ps.updates += 1


@kernel(wraparound=False)
def update(ps):
    gpa(ps)
    cra(ps)


# ------------------------------------------------------------------------------ jobs


@kernel(wraparound=False)
def _place(ps, job, j, s):
    """Bookkeeping of job (type j) entering server s."""
    n_types = ps.n_types
    c = ps.conf_of[s]
    x = s * n_types + j
    ps.filled[x] += 1
    if ps.filled[x] >= ps.confs[c * n_types + j]:
        _free_remove(ps, j, s)
    if ps.njobs[s] == 0:
        list_remove(ps.enext, ps.eprev, ps.ehead, ps.etail, c, c, s)
        ps.nempty[c] -= 1
    ps.njobs[s] += 1
    list_insert_after(ps.jnext, ps.jprev, ps.jhead, ps.jtail, x, x, -1, job)


@kernel(wraparound=False)
def _unplace(ps, job, j, s):
    """Bookkeeping of job (type j) leaving server s."""
    n_types = ps.n_types
    c = ps.conf_of[s]
    x = s * n_types + j
    list_remove(ps.jnext, ps.jprev, ps.jhead, ps.jtail, x, x, job)
    ps.filled[x] -= 1
    _free_add(ps, j, s)
    ps.njobs[s] -= 1
    if ps.njobs[s] == 0:
        list_insert_after(ps.enext, ps.eprev, ps.ehead, ps.etail, c, c, -1, s)
        ps.nempty[c] += 1


@kernel(wraparound=False)
def accept_server(ps, j):
    """An Accept-Group server with an empty type-j slot, or -1."""
    n_srv = ps.n_servers
    base = j * n_srv
    p = ps.nfree[j] - 1
    while p >= 0:
        s = ps.free[base + p]
        if ps.rg[s] == 0:
            return s
        p -= 1
    return -1


@kernel(wraparound=False)
def reject_source(ps, j):
    """The highest-rank Reject-Group server holding a type-j job, or -1."""
    n_types = ps.n_types
    best = -1
    best_rank = -1
    for q in range(ps.n_rg):
        s = ps.rg_list[q]
        if ps.filled[s * n_types + j] > 0:
            rank = head_rank(ps, ps.conf_of[s])
            if rank > best_rank:
                best, best_rank = s, rank
    return best


@kernel(wraparound=False)
def _preempt_for(st, ps, j):
    """DRA+preemption (§7.2): free lowest-priority jobs, smallest first (INFERRED stop rule)."""
    n_types = ps.n_types
    lowest = ps.lowest
    if ps.priority[j] <= lowest:
        return
    goal = ps.preempt_factor * ps.reserve * ps.size[j]
    freed = 0.0
    while freed < goal:
        # smallest lowest-priority type with a job in the system
        t = -1
        for i in range(n_types):
            if ps.priority[i] == lowest and ps.y[i] > 0 and (t < 0 or ps.size[i] < ps.size[t]):
                t = i
        if t < 0:
            return
        s = reject_source(ps, t)
        if s < 0:
            for s2 in range(ps.n_servers):
                if ps.filled[s2 * n_types + t] > 0:
                    s = s2
                    break
        victim = ps.jhead[s * n_types + t]
        _unplace(ps, victim, t, s)
        ps.y[t] -= 1
        preempt(st, victim)
        ps.preempted += 1
        freed += ps.size[t]
        if ps.periodic == 0:
            update(ps)


@kernel(wraparound=False)
def decide(st, ps):
    n_types = ps.n_types
    periodic = ps.periodic
    n_done = n_completed_new(st)
    for q in range(n_done):  # simultaneous departures leave together: none may be migrated
        job = st.done_buf[q]
        j = st.job_class[job]
        s = st.server[job]
        ps.left_accept[job] = ps.rg[s] == 0
        _unplace(ps, job, j, s)
        ps.y[j] -= 1
    for q in range(n_done):
        job = st.done_buf[q]
        j = st.job_class[job]
        s = st.server[job]
        # the freed slot must still exist: an update after an earlier departure of the same
        # batch may have given the (then empty) server s another configuration
        if ps.left_accept[job] and ps.free_pos[j * ps.n_servers + s] >= 0:
            src = reject_source(ps, j)
            if src >= 0 and src != s:  # s itself may have joined the Reject Group since
                mover = ps.jhead[src * n_types + j]
                _unplace(ps, mover, j, src)
                migrate(st, mover, s)
                _place(ps, mover, j, s)
                ps.migrations += 1
        if not periodic:
            update(ps)
    for q in range(n_arrived_new(st)):
        job = st.arrived_buf[q]
        j = st.job_class[job]
        s = accept_server(ps, j)
        if s >= 0:
            start(st, job, s, 1.0)
            _place(ps, job, j, s)
            ps.y[j] += 1
            if not periodic:
                update(ps)
        elif ps.preemption:
            _preempt_for(st, ps, j)
    if periodic and now(st) >= ps.next_update:
        update(ps)
        ps.next_update = now(st) + ps.period
        wake_at(st, ps.next_update)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


@kernel(wraparound=False)
def initialize(ps, conf_idx, placement):
    """Initialization (§4): server s gets configuration ``conf_idx[s]`` (its placement's row)
    holding ``placement[s, j]`` jobs of each type (counted in Y), then CRA runs."""
    n_types = ps.n_types
    for s in range(conf_idx.shape[0]):
        ps.conf_of[s] = -1
    for s in range(conf_idx.shape[0] - 1, -1, -1):  # server 0 ends up first in every list
        assign(ps, s, conf_idx[s])
        c = conf_idx[s]
        for j in range(n_types):
            n = placement[s, j]
            if n > 0:
                x = s * n_types + j
                ps.filled[x] = n
                ps.y[j] += n
                if n >= ps.confs[c * n_types + j]:
                    _free_remove(ps, j, s)
        if placement[s].sum() > 0:
            list_remove(ps.enext, ps.eprev, ps.ehead, ps.etail, c, c, s)
            ps.nempty[c] -= 1
            ps.njobs[s] = placement[s].sum()
    update(ps)


# ------------------------------------------------------------------------------ set-up


class DraConfig(PolicyConfig):
    """DRA settings (psychas2022 §4, §7.2); the INFERRED ones are listed in the module doc."""

    reservation: int | None = Field(
        default=None,
        ge=1,
        description="r(L); default ceil(sqrt(L)) (INFERRED); r = 0 would admit no job ever "
        "(GPA on Yhat = Y = 0 reserves no slot)",
    )
    update: Literal["event", "periodic"] = "event"
    period: float = Field(default=1.0, gt=0, description="time between periodic updates")
    rounding: Literal["ceil", "floor"] = "ceil"
    preemption: bool = False
    priorities: list[int] | None = Field(
        default=None, description="priority per job class (DRA+preemption); default: all 0"
    )
    preempt_factor: float = Field(default=1.0, gt=0, description="stop at factor x r x size")


def reservation_factor(config: DraConfig, servers: int) -> int:
    return config.reservation if config.reservation is not None else math.ceil(math.sqrt(servers))


_TABLES: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}


def configuration_table(problem: StaticProblem) -> tuple[np.ndarray, np.ndarray]:
    """Rows: the empty configuration, then (J <= EAGER_TYPES) the greedy configurations
    (Definition 3.3) in decreasing order; and the row of MaxReward(J') for every bit mask J'
    (2^J knapsacks, computed once per process for each set of VM types: replications and sweeps
    reuse it). With more types only the empty row: MaxReward(J') is solved while running, for
    the subsets GPA meets, and cached (max_reward_conf)."""
    key = b"".join(a.tobytes() for a in (problem.demand, problem.capacity, problem.reward))
    key += str(problem.demand.shape).encode()
    if key not in _TABLES:
        _TABLES[key] = _configuration_table(problem)
    rows, mr = _TABLES[key]
    return rows.copy(), mr.copy()


def _configuration_table(problem: StaticProblem) -> tuple[np.ndarray, np.ndarray]:
    n = problem.n_types
    if n > EAGER_TYPES:
        return np.zeros((1, n), dtype=np.int64), np.zeros(0, dtype=np.int32)
    greedy = problem.greedy_configurations()
    rows = np.vstack([np.zeros((1, n), dtype=np.int64), greedy])
    index = {k.tobytes(): i for i, k in enumerate(rows)}
    mr = np.zeros(1 << n, dtype=np.int32)
    for mask in range(1, 1 << n):
        mr[mask] = index[problem.max_reward(mask).tobytes()]
    return rows, mr


def build_state(
    problem: StaticProblem,
    sizes: dict[str, int],
    config: DraConfig,
    placement: np.ndarray | None = None,
    configuration: np.ndarray | None = None,
) -> Any:
    """The DRA state for ``sizes["servers"]`` servers of the given VM types (``sizes``: the
    engine sizes, :func:`~schedlab.policy_api.contract.engine_sizes`), initialized (§4) from
    ``placement`` ((L, J) jobs per type on each server; None: all empty) and ``configuration``
    ((L, J) slots per type on each server, at least the placement; None: each server takes its
    placement as its configuration, so an empty one has the empty configuration), then CRA
    runs. (The jobs of a given placement are bookkeeping only: the engine always starts
    empty.)"""
    rows, mr = configuration_table(problem)
    n_types = problem.n_types
    n_servers = sizes["servers"]
    place = (
        np.zeros((n_servers, n_types), dtype=np.int64)
        if placement is None
        else np.asarray(placement, dtype=np.int64)
    )
    slots = place if configuration is None else np.asarray(configuration, dtype=np.int64)
    index = {k.tobytes(): i for i, k in enumerate(rows)}
    extra = []
    conf_idx = np.zeros(n_servers, dtype=np.int32)
    for s in range(n_servers):
        if np.any(place[s] > slots[s]):
            raise ValueError(f"server {s}: placement {place[s].tolist()} exceeds its slots")
        key = slots[s].tobytes()
        if key not in index:
            if not problem.is_feasible(slots[s]):
                raise ValueError(f"server {s}: configuration {slots[s].tolist()} is infeasible")
            index[key] = rows.shape[0] + len(extra)
            extra.append(slots[s])
        conf_idx[s] = index[key]
    if extra:
        rows = np.vstack([rows, np.array(extra, dtype=np.int64)])
    n_conf = rows.shape[0]
    room = n_conf + (LAZY_CONFS if mr.size == 0 else 0)
    table = np.zeros((room, n_types), dtype=np.int64)
    table[:n_conf] = rows
    n_slots = 1 if mr.size else CACHE_SLOTS  # the cache serves J > EAGER_TYPES only
    keys = np.full(n_slots, -1, dtype=np.int64)
    w, cap = problem.grid
    prio = np.array(config.priorities or [0] * n_types, dtype=np.int64)
    all_sizes = {
        **sizes,
        "classes": n_types,
        "confs": room,
        "conf_slots": room * n_types,
        "mr_cache": keys.size,
        "masks": max(mr.size, 1),
        "type_resources": w.size,
        "grid_resources": cap.size,
        "server_slots": n_servers * n_types,
    }
    ps = STATE.allocate(
        all_sizes,
        {
            "n_types": n_types,
            "n_servers": n_servers,
            "n_confs": n_conf,
            "reserve": reservation_factor(config, n_servers),
            "periodic": config.update == "periodic",
            "period": config.period,
            "floor_rounding": config.rounding == "floor",
            "preemption": config.preemption,
            "preempt_factor": config.preempt_factor,
            "lowest": int(prio.min()),
            "confs": table.ravel(),
            "dense": mr.size > 0,
            "mr_of_mask": mr if mr.size else np.zeros(1, dtype=np.int32),
            "mr_key": keys,
            "grid_w": w.ravel(),
            "grid_cap": cap,
            "value": problem.reward,
            "value_tol": VALUE_TOL,
            "size": (problem.demand / problem.capacity[None, :]).max(axis=1),
            "priority": prio,
        },
    )
    initialize(ps, conf_idx, place.astype(np.int32))
    return ps


def init(st: Any, context: PolicyContext, config: DraConfig) -> Any:
    """The policy state of one run (the engine starts with empty servers)."""
    return build_state(workload_of_model(context).problem, engine_sizes(st), config)


def check(context: PolicyContext, config: DraConfig) -> None:
    if context.family != "loss":
        raise SpecError("DRA is a loss-family policy (psychas2022)", field="model.family")
    if context.demands_from_trace:
        raise SpecError(
            "DRA needs VM types: declare one class per type and give the trace a job_class "
            "column (docs/auto-scaling.md)",
            field="workload.classes",
        )
    if len(context.classes) > MAX_TYPES:
        raise SpecError(
            f"DRA keeps subsets of job classes as 64-bit masks: at most {MAX_TYPES} classes",
            field="workload.classes",
        )
    for i, cls in enumerate(context.classes):
        if any(d.support[0] != d.support[1] for d in cls.demand):
            raise SpecError("a VM type needs a fixed demand", field=f"workload.classes[{i}].demand")
    if np.any(context.capacity != context.capacity[0]):
        raise SpecError("DRA assumes identical servers (psychas2022 §2)", field="cluster")
    if config.priorities is not None and len(config.priorities) != len(context.classes):
        raise SpecError("give one priority per job class", field="policy.priorities")


def preempts(config: DraConfig) -> bool:
    """DRA+preemption preempts (the preempted jobs are lost, §7.2); DRA does not."""
    return config.preemption


_COMMON = {
    "kernels": Kernels(state=STATE, init=init, runner=run, config=DraConfig),
    "traits": Traits(
        preemptive=preempts,
        size_knowledge="none",
        migrates=True,  # Reject-Group jobs move into freed Accept-Group slots (§4)
    ),
    "hooks": Hooks(check=check),
}

register(
    Policy(
        name="dra",
        family="loss",
        about=About(
            title="DRA",
            paper="psychas2022",
            section="§4, Algorithm 2",
            summary="dynamic reservation: track GPA of the jobs present plus r(L) spare slots "
            "per type",
        ),
        **_COMMON,
    )
)
register(
    Policy(
        name="dra-preemption",
        family="loss",
        about=About(
            title="DRA+preemption",
            paper="psychas2022",
            section="§7.2",
            summary="DRA that preempts lowest-priority jobs, smallest first, when a higher one "
            "is lost",
        ),
        preset={"preemption": True},
        **_COMMON,
    )
)
