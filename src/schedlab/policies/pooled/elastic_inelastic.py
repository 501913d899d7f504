"""Class-priority allocation with per-class caps; Inelastic-First and Elastic-First as presets.

berg2020 (Berg, Harchol-Balter, Moseley, Wang, Whitehouse, SPAA 2020), §2. k servers, elastic jobs
run on any (fractional) number of servers with linear speedup, inelastic jobs on at most one (or at
most C servers, the generalization of §2), preemptive. The paper's two policies:

* **Elastic-First (EF)**: "in any state (i, j) where j > 0, EF allocates all k servers to the
  elastic job with the earliest arrival time. In any state (i, j) where j = 0, EF allocates one
  server to each inelastic job, in FCFS order, until either all jobs have received a server or
  all k servers have been allocated."
* **Inelastic-First (IF)**: "in any state (i, j) where i < k, one server is allocated to each
  inelastic job and the remaining k - i servers are allocated to the elastic job with the earliest
  arrival time if there is one. In any state (i, j) where i >= k, all k servers are allocated to
  the inelastic jobs with the k earliest arrival times."

Both are one rule, implemented once here (``class-priority``): the classes are split into priority
levels; at every decision epoch the servers are handed out level by level, and within a level in
FCFS (arrival) order across its classes, each job receiving ``min(cap of its class, servers
left)`` until no server is left. A job's cap defaults to its class's ``max_alloc`` (1 for
``speedup = "inelastic"``, k for a fully elastic class), so the first elastic job takes every
server left over: with linear speedup, FCFS within the elastic class means exactly that (§2). A job
losing its servers is preempted (preempt-resume); a running elastic job whose share changes gets a
new allocation (``set_allocation``).

Presets (inferred, stated here): for ``inelastic-first`` and ``elastic-first`` a class is
*elastic* when it is declared ``speedup = "elastic"`` and can use all k servers (no ``max_alloc``
below k), and *inelastic* otherwise (``speedup = "inelastic"``, or ``speedup = "elastic"`` with
``max_alloc = C < k``: the §2 generalization to inelastic jobs on up to C servers). Several
classes of one kind share a level and are served FCFS across classes. ``class-priority`` takes
the levels explicitly (``order``) and optional per-class caps (``caps``, at most the class's
``max_alloc``).

Incremental: the policy keeps one arrival-ordered linked list per level in its state (updated
from the new arrivals and completions of each epoch), so a decision walks only the jobs it serves.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

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
    is_waiting,
    kernel,
    list_append,
    list_remove,
    n_arrived_new,
    n_completed_new,
    n_running,
    preempt,
    register,
    run_engine,
    set_allocation,
    start,
    tolerance,
)

PRESET_ORDERS = ("inelastic-first", "elastic-first")


class ClassPriorityConfig(PolicyConfig):
    """Settings of the class-priority rule (berg2020 §2).

    ``order``: priority levels, highest first; each entry is a class name or a list of class names
    sharing one level (FCFS across them). Every class appears exactly once. ``"inelastic-first"`` /
    ``"elastic-first"`` derive the two levels from the classes (module docstring); None puts all
    classes in one level (FCFS with caps).
    ``caps``: per-job server cap of a class (default: its ``max_alloc``); 0 < cap <= max_alloc.
    """

    order: Literal["inelastic-first", "elastic-first"] | list[str | list[str]] | None = None
    caps: dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]] = Field(
        default_factory=dict
    )


@kernel(wraparound=False)
def decide(st, ps):
    level_of, cap_of, nxt, prv = ps.level_of, ps.cap_of, ps.nxt, ps.prv
    head, tail, chosen, share, target = ps.head, ps.tail, ps.chosen, ps.share, ps.target
    # Keep the per-level FCFS lists current: drop completed jobs, append new arrivals.
    for q in range(n_completed_new(st)):
        j = st.done_buf[q]
        level = level_of[st.job_class[j]]
        list_remove(nxt, prv, head, tail, level, level, j)
    for i in range(n_arrived_new(st)):
        j = st.arrived_buf[i]
        level = level_of[st.job_class[j]]
        list_append(nxt, prv, head, tail, level, level, j)
    # Target allocation: level by level, FCFS within a level, min(cap, servers left) per job.
    eps = tolerance(st)
    free = st.capacity[0, 0]
    m = 0
    for level in range(head.shape[0]):
        j = head[level]
        while j != -1 and free > eps:
            a = min(cap_of[st.job_class[j]], free)
            chosen[m] = j
            share[m] = a
            target[j] = a
            m += 1
            free -= a
            j = nxt[j]
        if free <= eps:
            break
    # Release first (preemptions, shrinking allocations), then grow and start: never over k.
    i = 0
    while i < n_running(st):
        j = st.running[i]
        if target[j] == 0.0:
            preempt(st, j)  # swap-removes j: running[i] now holds another job
        else:
            if target[j] < st.alloc[j] - eps:
                set_allocation(st, j, target[j])
            i += 1
    for q in range(m):
        j = chosen[q]
        a = share[q]
        if is_waiting(st, j):
            start(st, j, 0, a)
        elif a > st.alloc[j] + eps:
            set_allocation(st, j, a)
        target[j] = 0.0


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def _class_names(context: PolicyContext) -> list[str]:
    return [c.name for c in context.classes]


def _is_elastic_kind(context: PolicyContext, index: int) -> bool:
    """berg2020 kind of a class for the presets: elastic iff it is declared elastic and can use
    all k servers (so at k = 1 an inelastic class is still the inelastic one)."""
    if context.classes[index].declared_inelastic:
        return False
    return context.classes[index].max_alloc >= context.pooled_k


def levels_and_caps(
    context: PolicyContext, config: ClassPriorityConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Priority level and per-job cap of every class (raises SpecError on a bad setting)."""
    names = _class_names(context)
    n = len(names)
    order = config.order
    if order is None:
        level = np.zeros(n, dtype=np.int32)
    elif isinstance(order, str):
        elastic = np.array([_is_elastic_kind(context, c) for c in range(n)])
        first_elastic = order == "elastic-first"
        level = np.where(elastic == first_elastic, 0, 1).astype(np.int32)
        if level.min() == 1:  # only one kind present: a single level
            level[:] = 0
    else:
        level = np.full(n, -1, dtype=np.int32)
        for lv, entry in enumerate(order):
            group = [entry] if isinstance(entry, str) else list(entry)
            if not group:
                raise SpecError(
                    "a priority level must name at least one class", field="policy.order"
                )
            for name in group:
                if name not in names:
                    raise SpecError(
                        f"unknown class '{name}'; the classes are {', '.join(names)}",
                        field="policy.order",
                    )
                if level[names.index(name)] != -1:
                    raise SpecError(f"class '{name}' appears twice", field="policy.order")
                level[names.index(name)] = lv
        missing = [names[c] for c in range(n) if level[c] == -1]
        if missing:
            raise SpecError(
                f"every class needs a priority level; missing: {', '.join(missing)}",
                field="policy.order",
            )
    cap = np.array([c.max_alloc for c in context.classes], dtype=np.float64)
    for name, value in config.caps.items():
        if name not in names:
            raise SpecError(
                f"unknown class '{name}'; the classes are {', '.join(names)}",
                field=f"policy.caps.{name}",
            )
        c = names.index(name)
        if value > cap[c] + 1e-12:
            raise SpecError(
                f"cap {value:g} exceeds the class's max_alloc {cap[c]:g}",
                field=f"policy.caps.{name}",
            )
        cap[c] = value
    return level, cap


def check(context: PolicyContext, config: ClassPriorityConfig) -> None:
    """Refuse rigid jobs, traces, bad class names and presets whose order was overridden."""
    if context.trace is not None:
        raise SpecError(
            "class-priority allocation needs elastic/inelastic job classes, not a rigid trace",
            field="workload.arrivals",
        )
    for i, cls in enumerate(context.classes):
        if not cls.elastic:
            raise SpecError(
                f"policy '{context.policy_name}' allocates servers to elastic and inelastic jobs "
                "(berg2020 §2); this class is rigid: give speedup = 'elastic' or 'inelastic'",
                field=f"workload.classes[{i}].speedup",
            )
    preset = context.preset.get("order")
    if preset is not None and config.order != preset:
        raise SpecError(
            f"policy '{context.policy_name}' fixes order = '{preset}'; use policy 'class-priority' "
            "to choose the priority order",
            field="policy.order",
        )
    levels_and_caps(context, config)


STATE = PolicyState(
    "class_priority",
    [
        StateField("level_of", "i4", "classes"),  # priority level of each class
        StateField("cap_of", "f8", "classes"),  # per-job server cap of each class
        StateField("nxt", "i4", "jobs", fill=-1),  # arrival-ordered list of each level
        StateField("prv", "i4", "jobs", fill=-1),
        StateField("head", "i4", "levels", fill=-1),
        StateField("tail", "i4", "levels", fill=-1),
        StateField("chosen", "i4", "served"),  # jobs chosen at this epoch
        StateField("share", "f8", "served"),  # their allocations
        StateField("target", "f8", "jobs"),  # target allocation by job (0: none)
    ],
)


def init(st, context: PolicyContext, config: ClassPriorityConfig):
    level, cap = levels_and_caps(context, config)
    k = context.pooled_k
    served = math.ceil(k / float(cap.min())) + 2  # jobs holding servers at once
    sizes = engine_sizes(st, levels=int(level.max()) + 1, served=served)
    return STATE.allocate(sizes, {"level_of": level, "cap_of": cap})


_COMMON = {
    "family": "pooled",
    "kernels": Kernels(state=STATE, init=init, runner=run, config=ClassPriorityConfig),
    "traits": Traits(
        preemptive=True,  # a priority class takes its servers back at once (§2)
        size_knowledge="none",  # classes, not sizes
        migrates=False,
    ),
    "hooks": Hooks(check=check),
}

register(
    Policy(
        name="inelastic-first",
        about=About(
            title="Inelastic-First (IF)",
            paper_label="IF",
            paper="berg2020",
            section="§2; optimal when mu_I >= mu_E (§4.2, Thm 5)",
            summary="preemptive priority to inelastic jobs (one server each, FCFS); the servers "
            "left go to the earliest elastic job",
        ),
        preset={"order": "inelastic-first"},
        **_COMMON,
    )
)
register(
    Policy(
        name="elastic-first",
        about=About(
            title="Elastic-First (EF)",
            paper_label="EF",
            paper="berg2020",
            section="§2",
            summary="preemptive priority to elastic jobs (earliest elastic job takes all k "
            "servers); inelastic jobs FCFS on one server each when no elastic job is present",
        ),
        preset={"order": "elastic-first"},
        **_COMMON,
    )
)
register(
    Policy(
        name="class-priority",
        about=About(
            title="Class priority with per-class caps",
            paper="berg2020",
            section="§2 (IF and EF are instances)",
            summary="priority levels of classes, FCFS within a level, each job min(cap, servers "
            "left); preemptive",
        ),
        **_COMMON,
    )
)
