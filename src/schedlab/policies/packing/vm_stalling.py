"""Algorithm 1 (non-preemptive r-max-weight scheduling with stalling) and M14 (MaxWeight at local
refresh times).

Paper: Psychas & Ghaderi, "On Non-Preemptive VM Scheduling in the Cloud", POMACS 2018
(psychas2018), §3 (Algorithm 1), §6 (customizations), §7 (settings and the M14 baseline).

Model (§2). Each job class is a VM type j with a fixed resource vector w_j; servers are grouped
into server types by their capacity vectors. Q_j is the number of type-j jobs waiting (the
engine's ``class_in_queue``), served FCFS within a type.

Algorithm 1 (§3). Each server is *active* or *stalled*.

* An active server has a configuration k~ fixed for its whole active period; it holds at most
  k~_j type-j jobs, and each unused slot is an *empty slot* reserved for a future type-j arrival.
  An arriving type-j job goes to the first empty slot of type j (servers in index order), else it
  waits in queue j.
* When a job of type j leaves active server l, condition (5) is checked:
  f(k~, Q) < beta f(k^(r), Q) with k^(r) an r-max-weight configuration of l's server type for the
  current Q (f(k, Q) = <k, Q>, eq. (3)). If it holds, l stalls (takes no job until it empties);
  else l takes the next type-j job of queue j, or registers an empty slot of type j.
* A stalled server that is empty becomes active with an r-max-weight configuration (never the zero
  configuration) and fills it from the queues, registering empty slots for the rest.

Parameters (``VmStallingConfig``):

* ``subroutine``: the r-max-weight subroutine of §6.1 — "enumeration" over the cached maximal
  configurations (r = 1), "dp" (r = 1, integer resource units), "greedy" (Lemma 6.1,
  r = N_f / (R (N_f + 1)), with the improved fill when ``improved_greedy``);
* ``beta_rule``: "constant" uses ``beta``; "adaptive" uses beta = h(||Q||_1) q(s) with
  h(Q) = beta_bar (p + (1 - p) tanh(z sum_j Q_j)) (eq. (29), §6.2) and
  q(s) = (1 - s) 1(s < stall_limit) (§6.4, §7), s the fraction of servers stalled at the check
  (``linear_q = false`` gives the hard limit q(s) = 1(s < stall_limit) of §6.4);
* ``early_activation`` (§6.3): a stalled server also becomes active when its remaining jobs are a
  subset of the r-max-weight configuration. Inferred: this is checked when a job leaves the
  stalled server (including the departure that stalls it), the only times its content changes;
* ``refresh = "local"`` turns the algorithm into M14 (§1.1, §7): never stall; an active server
  that empties takes a new max-weight configuration (its local refresh time).

Defaults are §7's: r = 1 (enumeration), adaptive beta with p = -0.05, z = 0.005,
beta_bar = 0.9, q(s) = (1 - s) 1(s < 0.1), §6.3 on.

``recheck_when_empty`` (inferred, default on): condition (5) is checked only at departures, and
with the adaptive beta it cannot hold while queues are short (h < 0 for p < 0), so an active
server that has emptied with a configuration lacking a slot for the VMs that then arrive would keep
it; at the end of a finite run (after the last arrival) such VMs would wait forever. With this
setting, an empty active server whose configuration weighs less than an r-max-weight
configuration takes the latter when a departure empties it without stalling it, and when an
arrival has to wait (it holds no VM: nothing is preempted and no stalled period is needed; a
server whose last VM leaves at the same instant is left to the departure rule, which runs after
the arrivals). Off is the literal §3 text.

``start`` (inferred: the paper does not say how the servers start). All servers start empty. With
"on-demand" (default) a server has no configuration (no slots) until a VM arrives that finds no
empty slot of its type: then the first unconfigured empty server (index order) takes an r-max-weight
configuration for the queues at that moment and fills it, and so on while VMs still wait; the
servers are thus configured one at a time as the traffic needs them. "synchronized" gives every
server an r-max-weight configuration at the first decision epoch, all for the same nearly empty
queue vector (e.g. Q = e_j after a first type-j arrival), hence all the same configuration. That
start can trap M14 for good: on Table 1 (§7.2) every server takes (0, 3, 2) at t = 0, the
high-memory queue then grows (3 slots per server < 0.89 x 11/3 needed) while every server holds
high-memory VMs that are refilled as they leave, so no server ever empties to refresh.

Other inferred details: arrivals of one epoch are placed before the departures
of that epoch are handled; when several VMs leave at the same instant, all leave first and then
each departure is handled in turn (a freed slot is refilled only if the server's configuration,
possibly renewed by an earlier departure of that instant, still has it); configuration ties go
to the first maximal configuration in the order
of :func:`schedlab.optim.knapsack.maximal_configurations`.

Counters kept in the policy state and reported in the result's counters by :func:`report`:
``config_changes`` (new configurations taken) and ``stalled_server_time`` (integral of the
number of stalled servers over time). The engine counts ``stalls``.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from schedlab.optim.knapsack import (
    check_enumerable,
    dp_kernel,
    fill_maximal_kernel,
    greedy_kernel,
    max_weight_index,
    maximal_configurations,
    resource_units,
)
from schedlab.policies.packing.type_queues import QUEUE_FIELDS, queue_pop, queue_push
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
    n_arrived_new,
    n_completed_new,
    now,
    register,
    run_engine,
    stall,
    start,
)

SUB_ENUMERATION = 0
SUB_DP = 1
SUB_GREEDY = 2
SUBROUTINES = {"enumeration": SUB_ENUMERATION, "dp": SUB_DP, "greedy": SUB_GREEDY}


class VmStallingConfig(PolicyConfig):
    """Settings of Algorithm 1 (psychas2018 §3, §6) and M14 (``refresh = "local"``); defaults §7."""

    subroutine: Literal["enumeration", "dp", "greedy"] = "enumeration"
    improved_greedy: bool = True
    beta_rule: Literal["constant", "adaptive"] = "adaptive"
    beta: Annotated[float, Field(gt=0, lt=1)] = 0.9
    beta_bar: Annotated[float, Field(gt=0, lt=1)] = 0.9
    p: Annotated[float, Field(le=1)] = -0.05
    z: Annotated[float, Field(gt=0)] = 0.005
    stall_limit: Annotated[float, Field(gt=0, le=1)] = 0.1
    linear_q: bool = True
    early_activation: bool = True
    refresh: Literal["stalling", "local"] = "stalling"
    recheck_when_empty: bool = True
    start: Literal["on-demand", "synchronized"] = "on-demand"


STATE = PolicyState(
    "vm_stalling",
    [
        StateField("subroutine", "i8"),
        StateField("improved", "b1"),
        StateField("adaptive", "b1"),
        StateField("beta", "f8"),
        StateField("beta_bar", "f8"),
        StateField("p", "f8"),
        StateField("z", "f8"),
        StateField("stall_limit", "f8"),
        StateField("linear_q", "b1"),
        StateField("early", "b1"),
        StateField("local_refresh", "b1"),
        StateField("recheck_empty", "b1"),
        StateField("sync_start", "b1"),
        StateField("started", "b1"),
        StateField("n_unconfigured", "i8"),
        StateField("n_stalled", "i8"),
        StateField("config_changes", "i8"),
        StateField("stall_area", "f8"),
        StateField("t_last", "f8"),
        # VM types and server types
        StateField("w", "f8", ("classes", "resources")),
        StateField("server_type", "i8", "servers"),
        StateField("type_cap", "f8", ("types", "resources")),
        StateField("type_first", "i8", "types1"),
        StateField("configs", "i8", ("configs", "classes")),
        StateField("units", "i8", ("classes", "resources")),
        StateField("type_units", "i8", ("types", "resources")),
        StateField("fill_order", "i8", "classes"),
        # server configurations: k~ (cfg) and the jobs present per type (occ)
        StateField("cfg", "i8", ("servers", "classes")),
        StateField("configured", "b1", "servers"),
        StateField("occ", "i8", ("servers", "classes")),
        StateField("free", "i8", "classes"),  # empty slots per type over active servers
        # lower bounds (speed only): no active server below first_free[c] has an empty type-c
        # slot; no server below first_empty is empty and active
        StateField("first_free", "i8", "classes"),
        StateField("first_empty", "i8"),
        # per-type FIFO queues of waiting jobs
        *QUEUE_FIELDS,
        # scratch
        StateField("qf", "f8", "classes"),
        StateField("kbuf", "i8", "classes"),
    ],
)


def vm_types(context: PolicyContext) -> np.ndarray:
    """The (J, R) resource vectors of the VM types (one per job class)."""
    return np.array([[d.mean for d in c.demand] for c in context.classes], dtype=float)


def server_types(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct capacity rows (server types) and the type of each server."""
    caps, index = np.unique(capacity, axis=0, return_inverse=True)
    return caps, index.ravel()


def check_vm_model(context: PolicyContext) -> None:
    """The VM model of §2: VM types (fixed demand vectors per class; a trace only with a type per
    job, §7.3), continuous time and a decision at every event."""
    if context.trace is not None and not (context.trace.has_job_class and context.classes_declared):
        raise SpecError(
            "VM scheduling needs VM types: replay a typed trace (a job_class column and declared "
            "classes with fixed demands), not a raw one",
            field="workload.arrivals.path",
        )
    if context.family != "packing":
        raise SpecError("Algorithm 1 runs in the packing family", field="model.family")
    if context.slotted or context.decision_interval != 0:
        raise SpecError(
            "Algorithm 1 reacts to every arrival and departure: continuous time, no "
            "decision_interval",
            field="model.decision_interval" if context.decision_interval else "model.time",
        )
    for i, c in enumerate(context.classes):
        if not all(d.support[0] == d.support[1] for d in c.demand):  # one value each
            raise SpecError(
                "a VM type has a fixed resource vector: give fixed demands",
                field=f"workload.classes[{i}].demand",
            )


def check(context: PolicyContext, config: VmStallingConfig) -> None:
    """The VM model, and integer resource units for the DP subroutine."""
    check_vm_model(context)
    w = vm_types(context)
    for cap in server_types(context.capacity)[0]:
        try:
            check_enumerable(w[np.all(w <= cap * (1 + 1e-9), axis=1)], cap)
        except ValueError as exc:
            raise SpecError(str(exc), field="workload.classes") from None
    if config.subroutine == "dp":
        try:
            resource_units(vm_types(context), server_types(context.capacity)[0])
        except ValueError as exc:
            raise SpecError(str(exc), field="policy.subroutine") from None


def init(st, context: PolicyContext, config: VmStallingConfig):
    """Cache the maximal configurations of each server type (§6.1(i)) and the DP units."""
    w = vm_types(context)
    caps, stype = server_types(context.capacity)
    J = w.shape[0]
    blocks = []
    for cap in caps:
        fits = np.all(w <= cap * (1 + 1e-9), axis=1)
        sub = maximal_configurations(w[fits], cap)
        k = np.zeros((sub.shape[0], J), dtype=np.int64)
        k[:, fits] = sub
        blocks.append(k)
    units = np.zeros(w.shape, dtype=np.int64)
    type_units = np.zeros(caps.shape, dtype=np.int64)
    if config.subroutine == "dp":
        units, type_units = resource_units(w, caps)
    configs = np.vstack(blocks)
    first = np.cumsum([0] + [b.shape[0] for b in blocks]).astype(np.int64)
    sizes = engine_sizes(st, types=len(caps), types1=len(caps) + 1, configs=configs.shape[0])
    values = {
        "subroutine": SUBROUTINES[config.subroutine],
        "improved": config.improved_greedy,
        "adaptive": config.beta_rule == "adaptive",
        "beta": config.beta,
        "beta_bar": config.beta_bar,
        "p": config.p,
        "z": config.z,
        "stall_limit": config.stall_limit,
        "linear_q": config.linear_q,
        "early": config.early_activation,
        "local_refresh": config.refresh == "local",
        "recheck_empty": config.recheck_when_empty,
        "sync_start": config.start == "synchronized",
        "n_unconfigured": context.n_servers,
        "w": w,
        "server_type": stype.astype(np.int64),
        "type_cap": caps,
        "type_first": first,
        "configs": configs,
        "units": units,
        "type_units": type_units,
        "fill_order": np.arange(J, dtype=np.int64),
    }
    return STATE.allocate(sizes, values)


@kernel(wraparound=False)
def rmax_configuration(ps, t, q, k):
    """An r-max-weight (maximal, non-zero) configuration of server type t for queues q, into k;
    returns its weight (§6.1)."""
    if ps.subroutine == SUB_ENUMERATION:
        a = ps.type_first[t]
        i = a + max_weight_index(ps.configs[a : ps.type_first[t + 1]], q)
        k[:] = ps.configs[i]
    elif ps.subroutine == SUB_DP:
        dp_kernel(ps.units, ps.type_units[t], q, k)
        fill_maximal_kernel(ps.w, ps.type_cap[t], k, ps.fill_order)
    else:
        greedy_kernel(ps.w, ps.type_cap[t], q, ps.improved, k)
    total = 0.0
    for j in range(k.shape[0]):
        total += k[j] * q[j]
    return total


@kernel(wraparound=False)
def _queues(st, ps):
    total = 0.0
    for j in range(ps.qf.shape[0]):
        ps.qf[j] = st.class_in_queue[j]
        total += ps.qf[j]
    return total


@kernel(wraparound=False)
def stall_beta(ps, total_q, n_servers):
    """beta of condition (5): constant, or h(||Q||_1) q(s) (eq. (29), §6.4)."""
    if not ps.adaptive:
        return ps.beta
    h = ps.beta_bar * (ps.p + (1.0 - ps.p) * math.tanh(ps.z * total_q))
    s = ps.n_stalled / n_servers
    if s >= ps.stall_limit:
        return 0.0
    return h * (1.0 - s) if ps.linear_q else h


@kernel(wraparound=False)
def _place(st, ps, s, c):
    """Start the head of queue c on active server s, in one of its type-c slots."""
    j = queue_pop(ps.q_head, ps.q_tail, ps.q_next, c)
    start(st, j, s, 1.0)
    ps.occ[s, c] += 1
    ps.free[c] -= 1


@kernel(wraparound=False)
def _set_configuration(st, ps, s, k):
    """Server s (empty, or holding a subset of k) becomes active with configuration k, fills it
    from the queues and registers empty slots for the rest (Algorithm 1, lines 9-14)."""
    if not ps.configured[s]:  # its first configuration (``start = "on-demand"``)
        ps.configured[s] = True
        ps.n_unconfigured -= 1
    if st.stalled[s] != 0:
        activate(st, s)
        ps.n_stalled -= 1
    else:  # an active server renewing its configuration (M14): drop its old empty slots
        for c in range(k.shape[0]):
            ps.free[c] -= ps.cfg[s, c] - ps.occ[s, c]
    ps.config_changes += 1
    for c in range(k.shape[0]):
        ps.cfg[s, c] = k[c]
        ps.free[c] += k[c] - ps.occ[s, c]
        while ps.occ[s, c] < k[c] and ps.q_head[c] != -1:
            _place(st, ps, s, c)
        if ps.occ[s, c] < k[c]:
            ps.first_free[c] = min(ps.first_free[c], s)
    if st.n_on_server[s] == 0:
        ps.first_empty = min(ps.first_empty, s)


@kernel(wraparound=False)
def _stall(st, ps, s):
    stall(st, s)
    ps.n_stalled += 1
    for c in range(ps.cfg.shape[1]):
        ps.free[c] -= ps.cfg[s, c] - ps.occ[s, c]


@kernel(wraparound=False)
def _fill_free_slots(st, ps, c):
    """Arrivals of type c go to the first empty slots of type c (servers in index order)."""
    s = ps.first_free[c]
    L = ps.cfg.shape[0]
    while ps.free[c] > 0 and ps.q_head[c] != -1 and s < L:
        if st.stalled[s] == 0:
            while ps.occ[s, c] < ps.cfg[s, c] and ps.q_head[c] != -1:
                _place(st, ps, s, c)
            if ps.occ[s, c] < ps.cfg[s, c]:
                break
        s += 1
    ps.first_free[c] = s if s < L else 0


@kernel(wraparound=False)
def _refresh_if_better(st, ps, s):
    """``recheck_when_empty``: empty active server s takes an r-max-weight configuration when its
    own weighs less (it holds no VM, so the change preempts nothing and needs no stalled
    period)."""
    k = ps.kbuf
    _queues(st, ps)
    best = rmax_configuration(ps, ps.server_type[s], ps.qf, k)
    current = 0.0
    for j in range(k.shape[0]):
        current += ps.cfg[s, j] * ps.qf[j]
    if current < best:
        _set_configuration(st, ps, s, k)


@kernel(wraparound=False)
def _idle(st, ps, s):
    """Server s is active and holds no VM, none of them leaving at this epoch either (a server
    whose last VM leaves now is handled by the departure rule of §3, after the arrivals)."""
    if st.stalled[s] != 0 or st.n_on_server[s] != 0:
        return False
    held = 0
    for c in range(ps.occ.shape[1]):
        held += ps.occ[s, c]
    return held == 0


@kernel(wraparound=False)
def _recheck_empty_servers(st, ps):
    """Idle servers (:func:`_idle`), in index order, take an r-max-weight configuration when it
    weighs more than theirs (``recheck_when_empty``; else only servers never configured, ``start
    = "on-demand"``). Each fills its slots from the queues before the next one looks at them, so
    one waiting VM reconfigures one server, not all the empty ones at once. Called when an
    arrival has to wait."""
    L = ps.cfg.shape[0]
    first = L
    for s in range(ps.first_empty, L):
        if not _idle(st, ps, s):
            continue
        if _queues(st, ps) == 0.0:
            first = min(first, s)
            break
        if ps.recheck_empty or not ps.configured[s]:
            _refresh_if_better(st, ps, s)
        if st.n_on_server[s] == 0:
            first = min(first, s)
    ps.first_empty = first


@kernel(wraparound=False)
def _release(st, ps, s, c):
    """A type-c VM left server s: its slot is free again (an empty slot of an active server)."""
    ps.occ[s, c] -= 1
    if st.stalled[s] == 0:
        ps.free[c] += 1
        ps.first_free[c] = min(ps.first_free[c], s)
    if st.n_on_server[s] == 0:
        ps.first_empty = min(ps.first_empty, s)


@kernel(wraparound=False)
def _departure(st, ps, s, c):
    """Algorithm 1, "when a job of type j in server l is completed" (its slot was already
    released by :func:`_release`)."""
    L = ps.cfg.shape[0]
    t = ps.server_type[s]
    k = ps.kbuf
    if st.stalled[s] == 0:
        if ps.local_refresh:  # M14: new max-weight configuration when the server empties
            if st.n_on_server[s] == 0:
                _queues(st, ps)
                rmax_configuration(ps, t, ps.qf, k)
                _set_configuration(st, ps, s, k)
            elif ps.q_head[c] != -1 and ps.occ[s, c] < ps.cfg[s, c]:
                _place(st, ps, s, c)
            return
        else:
            total = _queues(st, ps)
            best = rmax_configuration(ps, t, ps.qf, k)
            current = 0.0
            for j in range(k.shape[0]):
                current += ps.cfg[s, j] * ps.qf[j]
            if current < stall_beta(ps, total, L) * best:  # condition (5)
                _stall(st, ps, s)
            elif ps.q_head[c] != -1 and ps.occ[s, c] < ps.cfg[s, c]:
                _place(st, ps, s, c)
            elif ps.recheck_empty and st.n_on_server[s] == 0:
                _refresh_if_better(st, ps, s)
    if st.stalled[s] != 0:
        if st.n_on_server[s] == 0:
            _queues(st, ps)
            rmax_configuration(ps, t, ps.qf, k)
            _set_configuration(st, ps, s, k)
        elif ps.early:  # §6.3: remaining jobs a subset of the r-max-weight configuration
            _queues(st, ps)
            rmax_configuration(ps, t, ps.qf, k)
            subset = True
            for j in range(k.shape[0]):
                if ps.occ[s, j] > k[j]:
                    subset = False
                    break
            if subset:
                _set_configuration(st, ps, s, k)


@kernel(wraparound=False)
def decide(st, ps):
    t_now = now(st)
    if ps.started:
        ps.stall_area += ps.n_stalled * (t_now - ps.t_last)
    ps.t_last = t_now
    for i in range(n_arrived_new(st)):
        j = st.arrived_buf[i]
        queue_push(ps.q_head, ps.q_tail, ps.q_next, st.job_class[j], j)
    if not ps.started:
        ps.started = True
        if ps.sync_start:
            _queues(st, ps)
            for s in range(ps.cfg.shape[0]):
                rmax_configuration(ps, ps.server_type[s], ps.qf, ps.kbuf)
                _set_configuration(st, ps, s, ps.kbuf)
    for c in range(ps.free.shape[0]):
        if ps.free[c] > 0 and ps.q_head[c] != -1:
            _fill_free_slots(st, ps, c)
    if ps.recheck_empty or ps.n_unconfigured > 0:
        for i in range(n_arrived_new(st)):
            j = st.arrived_buf[i]
            if is_waiting(st, j):
                _recheck_empty_servers(st, ps)
                break
    for i in range(n_completed_new(st)):  # all departures of the epoch leave first
        j = st.done_buf[i]
        _release(st, ps, st.server[j], st.job_class[j])
    for i in range(n_completed_new(st)):
        j = st.done_buf[i]
        _departure(st, ps, st.server[j], st.job_class[j])


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def report(ps, st) -> dict[str, float]:
    """§7.2 counters of the run (the ``report`` hook of the policy contract): configurations taken
    (``config_changes``; per unit time: divide by the run's length) and the integral of the number
    of stalled servers over time (``stalled_server_time``; divided by L times the run's length it
    is the time-average fraction of servers stalled, ``stalled_fraction``; configurations per unit
    time: ``config_change_rate``; both over the whole run, warm-up included)."""
    length = float(now(st))
    servers = st.capacity.shape[0]
    return {
        "config_changes": int(ps.config_changes),
        "stalled_server_time": float(ps.stall_area),
        "stalled_fraction": float(ps.stall_area) / (servers * length) if length > 0 else math.nan,
        "config_change_rate": int(ps.config_changes) / length if length > 0 else math.nan,
    }


_COMMON = {
    "kernels": Kernels(state=STATE, init=init, runner=run, config=VmStallingConfig),
    "traits": Traits(preemptive=False, size_knowledge="none", migrates=False),
    "hooks": Hooks(check=check, report=report),
}

register(
    Policy(
        name="vm-stalling",
        family="packing",
        about=About(
            title="Algorithm 1 (r-max-weight with stalling)",
            paper_label="Algorithm 1",
            paper="psychas2018",
            section="§3 Algorithm 1, §6",
            summary="fixed configuration per active period; stall on condition (5); reset when "
            "empty",
        ),
        **_COMMON,
    )
)
register(
    Policy(
        name="m14",
        family="packing",
        about=About(
            title="M14 (MaxWeight at local refresh times)",
            paper_label="M14",
            paper="psychas2018",
            section="§1.1, §7 (baseline [22])",
            summary="max-weight configuration each time a server empties; never stalls",
        ),
        preset={"refresh": "local"},
        **_COMMON,
    )
)
