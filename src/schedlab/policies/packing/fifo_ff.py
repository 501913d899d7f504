"""FIFO with First-Fit placement (FIFO-FF), which is also FCFS and first-fit admission.

psychas2019 §VII-B: FIFO-FF "schedules jobs in a FIFO manner, by attempting to pack the first job
in the queue to the first server that has sufficient capacity to accommodate the job". With
``blocking = true`` (the paper's FIFO) a head-of-line job that fits nowhere blocks the jobs behind
it; with ``blocking = false`` later jobs are still tried.

The same rule serves the other two families:

* ``fcfs`` (pooled): one server of capacity k, so FIFO-FF is FCFS with head-of-line blocking, the
  baseline of the multiserver-job literature (grosof2023 §1, §6).
* ``first-fit`` (loss): each arrival is admitted into the first server with room, otherwise lost
  (no queue; the engine drops jobs not admitted at their decision epoch; psychas2022 §2).

Site rules (``user_limit``, ``queue_order``; :mod:`schedlab.policies.pooled.site_rules`,
decision 0029), in every family: the waiting jobs are walked by (queue rank, arrival), a job
whose user (SWF field 12) has ``user_limit`` jobs running is skipped, and head-of-line blocking
applies to the first *eligible* job in that order that fits nowhere.

This module is the example of docs/writing-policies.md.
"""

from __future__ import annotations

from schedlab.policies.pooled import site_rules
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
    register,
    run_engine,
)


class FifoFirstFitConfig(SiteRulesConfig):
    """``blocking``: the head of the queue blocks the jobs behind it when it fits nowhere
    (psychas2019 §VII-B, "FIFO manner"); false tries every waiting job in arrival order;
    ``user_limit``, ``queue_order``: the log's site rules (module docstring)."""

    blocking: bool = True


STATE = PolicyState("fifo_ff", [StateField("blocking", "b1"), *SITE_FIELDS])


def init(st, context: PolicyContext, config: FifoFirstFitConfig):
    """The policy state of one run: the compiled configuration."""
    sizes = {**engine_sizes(st), **site_rules.sizes(context, config)}
    return STATE.allocate(sizes, {"blocking": config.blocking, **site_rules.values(config)})


@kernel(wraparound=False)
def decide(st, ps):
    """Walk the queue in arrival order (by queue rank first with a queue order); start each
    eligible job on the first server with room."""
    site_rules.ended(st, ps)
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
        s = first_fit(st, j, 1.0)
        if s >= 0:
            site_rules.start_job(st, ps, j, s)
        elif ps.blocking:
            break
        j = nxt


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def known_limits(config: FifoFirstFitConfig) -> tuple[str, ...]:
    """With head-of-line blocking this is FCFS: its saturated-system limit (pooled family)."""
    return ("fcfs-saturated",) if config.blocking else ()


KERNELS = Kernels(state=STATE, init=init, runner=run, config=FifoFirstFitConfig)
TRAITS = Traits(preemptive=False, size_knowledge="none", migrates=False)
HOOKS = Hooks(known_limits=known_limits, check=site_rules.check)

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
