"""FIFO with First-Fit placement (FIFO-FF), which is also FCFS and first-fit admission.

psychas2019 §VII-B: FIFO-FF "schedules jobs in a FIFO manner, by attempting to pack the first job
in the queue to the first server that has sufficient capacity to accommodate the job". With
``blocking = true`` (the paper's FIFO) a head-of-line job that fits nowhere blocks the jobs behind
it; with ``blocking = false`` later jobs are still tried.

The same rule serves the other two families:

* ``fcfs`` (pooled): one server of capacity k, so FIFO-FF is FCFS with head-of-line blocking, the
  baseline of the multiserver-job literature (grosof2023 §1, §6). There a ``capacity_schedule``
  (steps ``{at, servers}``, :mod:`~schedlab.policies.pooled.capacity_schedule`; pooled family
  only) makes only ``servers`` of the k usable from ``at`` on: a job starts when its need is
  free among the usable servers, a step down preempts nothing, and a decision epoch is taken at
  every step (decision 0030).
* ``first-fit`` (loss): each arrival is admitted into the first server with room, otherwise lost
  (no queue; the engine drops jobs not admitted at their decision epoch; psychas2022 §2).

Site rules (``user_limit``, ``queue_order``, ``queue_rank_wait``, ``prime_time_*``;
:mod:`schedlab.policies.pooled.site_rules`, decisions 0029, 0034, 0039), in every family: the
waiting jobs are walked by (queue rank, arrival), or by arrival + rank * queue_rank_wait, a job
whose user (SWF field 12) has ``user_limit`` jobs running, or whose requested time exceeds the
prime-time limit during prime time, is skipped, and head-of-line blocking applies to the first
*eligible* job in that order that fits nowhere.

This module is the example of docs/writing-policies.md.
"""

from __future__ import annotations

from schedlab.policies.pooled import site_rules
from schedlab.policies.pooled.capacity_schedule import (
    CAPACITY_FIELDS,
    CapacityStep,
    capacity_sizes,
    capacity_steps,
    capacity_values,
    check_schedule,
)
from schedlab.policies.pooled.site_rules import SITE_FIELDS, SiteRulesConfig
from schedlab.policy_api import (
    About,
    Hooks,
    Kernels,
    Policy,
    PolicyContext,
    PolicyState,
    StateField,
    Traits,
    engine_sizes,
    first_fit,
    first_waiting,
    kernel,
    now,
    register,
    run_engine,
    tolerance,
)


class FifoFirstFitConfig(SiteRulesConfig):
    """``blocking``: the head of the queue blocks the jobs behind it when it fits nowhere
    (psychas2019 §VII-B, "FIFO manner"); false tries every waiting job in arrival order;
    ``user_limit``, ``queue_order``, ``queue_rank_wait``, ``prime_time_max_request``,
    ``prime_time_hours``, ``prime_time_clock``: the log's site rules (module docstring);
    ``capacity_schedule``: the usable servers over time, steps in increasing
    ``at`` (pooled family only; empty: all k always)."""

    blocking: bool = True
    capacity_schedule: tuple[CapacityStep, ...] = ()


STATE = PolicyState("fifo_ff", [StateField("blocking", "b1"), *SITE_FIELDS, *CAPACITY_FIELDS])


def init(st, context: PolicyContext, config: FifoFirstFitConfig):
    """The policy state of one run: the compiled configuration."""
    steps = config.capacity_schedule
    sizes = {**engine_sizes(st), **site_rules.sizes(context, config), **capacity_sizes(steps)}
    values = {
        "blocking": config.blocking,
        **site_rules.values(config),
        **capacity_values(steps, float(context.capacity[0, 0])),
    }
    return STATE.allocate(sizes, values)


def check(context: PolicyContext, config: FifoFirstFitConfig) -> None:
    """The site rules' checks; a capacity schedule on the pooled family only, its steps in
    order and within k."""
    site_rules.check(context, config)
    check_schedule(context, config.capacity_schedule)


@kernel(wraparound=False)
def _usable_fit(st, ps, j):
    """Server 0 when job j's need is free among the usable servers (pooled family, with a
    capacity schedule), else -1."""
    fits = st.used[0, 0] + st.demand[j, 0] <= ps.cap_now + tolerance(st)
    return 0 if fits else -1


@kernel(wraparound=False)
def decide(st, ps):
    """Walk the queue in arrival order (in the queue order with one: site_rules); start each
    eligible job on the first server with room (among the usable servers with a capacity
    schedule)."""
    site_rules.ended(st, ps)
    site_rules.prime_time(st, ps, now(st))
    if ps.stepped:
        capacity_steps(st, ps, now(st))
    j = first_waiting(st)
    n = site_rules.waiting_in_order(st, ps, j)  # -1: arrival order (no queue order)
    if n >= 0:
        j = ps.order[0] if n > 0 else -1
    i = 0
    while j != -1:
        nxt = site_rules.after(st, ps, j, i, n)  # read before acting: start() unlinks j
        i += 1
        if not site_rules.eligible(st, ps, j):
            j = nxt
            continue
        s = _usable_fit(st, ps, j) if ps.stepped else first_fit(st, j, 1.0)
        if s >= 0:
            site_rules.start_job(st, ps, j, s)
        elif ps.blocking:
            break
        j = nxt


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def known_limits(config: FifoFirstFitConfig) -> tuple[str, ...]:
    """With head-of-line blocking this is FCFS: its saturated-system limit (pooled family; not
    with a capacity schedule, which changes the servers)."""
    return ("fcfs-saturated",) if config.blocking and not config.capacity_schedule else ()


KERNELS = Kernels(state=STATE, init=init, runner=run, config=FifoFirstFitConfig)
TRAITS = Traits(preemptive=False, size_knowledge="none", migrates=False)
HOOKS = Hooks(known_limits=known_limits, check=check)

register(
    Policy(
        name="fifo-ff",
        family="packing",
        families=("packing", "pooled", "loss"),
        about=About(
            title="FIFO-FF",
            paper="psychas2019",
            section="§VII-B",
            summary="FIFO queue; head job to the first server with room; head-of-line blocking",
        ),
        kernels=KERNELS,
        traits=TRAITS,
        hooks=HOOKS,
    )
)
register(
    Policy(
        name="fcfs",
        family="pooled",
        families=("pooled", "packing"),
        about=About(
            title="FCFS",
            paper="grosof2023",
            section="§1, §6 (FCFS baseline)",
            summary="first-come first-served with head-of-line blocking on k pooled servers",
        ),
        kernels=KERNELS,
        traits=TRAITS,
        hooks=HOOKS,
    )
)
register(
    Policy(
        name="first-fit",
        family="loss",
        families=("loss", "packing"),
        about=About(
            title="First-fit admission",
            paper="psychas2022",
            section="§2 (loss-model baseline)",
            summary="admit each arrival into the first server with room, otherwise lose it",
        ),
        kernels=KERNELS,
        traits=TRAITS,
        preset={"blocking": False},
        hooks=HOOKS,
    )
)
