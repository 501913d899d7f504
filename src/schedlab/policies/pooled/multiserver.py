"""Preemptive multiserver-job policies of paper 004, as one parametrized implementation.

At every arrival and completion the jobs are ordered (ordering.py: FCFS, SRPT, server need) and a
placement rule chooses which to serve (selection.py); running jobs not chosen are preempted
(preempt-resume, paper 004 §3.1). Every name below is this one ``decide`` with other parameters:

| name | order | placement | paper 004 |
|---|---|---|---|
| server-filling | FCFS | ServerFilling | §6 ("ServerFilling [14]") |
| server-filling-srpt | SRPT | ServerFilling | §3.2 |
| divisor-filling, -srpt | FCFS, SRPT | DivisorFilling | App. C |
| greedy-srpt | SRPT | greedy: stop at the first job that does not fit | §6 |
| first-fit-srpt | SRPT | first fit: skip jobs that do not fit | §6 ("Smallest Area First") |
| preemptive-first-fit | FCFS | first fit | general needs (real logs) |
| most-servers-first | need, largest first (FCFS ties) | first fit | general needs |
| least-servers-first | need, smallest first (FCFS ties) | first fit | general needs |
| max-weight | FCFS within a need | MaxWeight knapsack | §6 |
| srpt-1 | SRPT | one job at a time on all k servers | §4.1 resource-pooled bound |

``srpt-1`` simulates the resource-pooled M/G/1 of §3.1 on the same job sequence: the k servers act
as one server of speed 1 in size units (a job of need K gets allocation k/K, so its duration D
takes K D / k = its size S).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from numba import njit
from pydantic import BaseModel, ConfigDict, Field

from schedlab.engine.loop import run_engine
from schedlab.errors import SpecError
from schedlab.policies._legacy import NoParams, Policy, register
from schedlab.policies.pooled.ordering import (
    ORDER_FCFS,
    ORDER_GITTINS,
    ORDER_NEED_ASC,
    ORDER_NEED_DESC,
    ORDER_SRPT,
    add_candidate,
    apply_choice,
    first_position,
    grow_ordering_state,
    heap_pop,
    make_ordering_state,
    next_candidate,
    remember_boundary,
    sort_running,
    sync,
    wake_at_rank_change,
)
from schedlab.policies.pooled.selection import (
    divisor_filling_select,
    max_weight_counts,
    server_filling_select,
)

MODE_SERVER_FILLING = 0
MODE_DIVISOR_FILLING = 1
MODE_GREEDY = 2
MODE_FIRST_FIT = 3
MODE_MAX_WEIGHT = 4
MODE_RESOURCE_POOLED = 5


@njit(cache=True)
def _choose_filling(st, ps, k, n_run, mode):
    """ServerFilling: the smallest prefix needing >= k servers; DivisorFilling: the first k jobs."""
    m = 0
    r = first_position(st, ps)
    total = 0.0
    while m < k:
        j, r = next_candidate(st, ps, n_run, r, math.inf)
        if j == -1:
            break
        m = add_candidate(st, ps, m, j)
        total += st.demand[j, 0]
        if mode == MODE_SERVER_FILLING and total >= k:
            break
    needs = ps.cand_need
    chosen = ps.chosen
    if mode == MODE_SERVER_FILLING:
        server_filling_select(needs, m, k, chosen, ps.order)
        remember_boundary(ps, m, total >= k)
        return m
    remember_boundary(ps, m, m >= k)
    free = k - divisor_filling_select(needs, m, k, chosen)
    if ps.params[2] != 0.0:  # fill_idle: add the jobs of M that still fit, by priority
        for i in range(m):
            if chosen[i] == 0 and needs[i] <= free:
                chosen[i] = 1
                free -= needs[i]
    return m


@njit(cache=True)
def _choose_greedy(st, ps, k, n_run, skip):
    """In priority order, serve each job that fits; stop at the first that does not (greedy) or
    only consider the needs that still fit (first fit)."""
    m = 0
    r = first_position(st, ps)
    free = k
    while free >= 1.0:
        j, r = next_candidate(st, ps, n_run, r, free if skip else math.inf)
        if j == -1:
            break
        m = add_candidate(st, ps, m, j)
        if st.demand[j, 0] > free:
            remember_boundary(ps, m, not skip)  # greedy: cut at the first job that did not fit
            return m
        ps.chosen[m - 1] = 1
        free -= st.demand[j, 0]
    remember_boundary(ps, m, not skip and free < 1.0)
    return m


@njit(cache=True)
def _choose_max_weight(st, ps, k, n_run):
    """Serve take[c] jobs of each need class c (max-weight knapsack); running ones first, then
    the earliest waiting ones."""
    class_need = ps.class_need
    take = np.zeros(class_need.shape[0], dtype=np.int64)
    max_weight_counts(class_need, ps.count, k, take)
    m = 0
    for i in range(n_run):
        j = ps.run[i]
        c = ps.job_class[j]
        if take[c] > 0:
            m = add_candidate(st, ps, m, j)
            ps.chosen[m - 1] = 1
            take[c] -= 1
    for c in range(class_need.shape[0]):
        while take[c] > 0 and ps.size[c] > 0:
            j = heap_pop(st, ps, c)
            m = add_candidate(st, ps, m, j)
            ps.chosen[m - 1] = 1
            take[c] -= 1
    return m


@njit(cache=True)
def decide(st, ps):
    k = st.capacity[0, 0]
    if sync(st, ps, k):
        return
    mode = int(ps.params[1])
    n_run = sort_running(st, ps, k)
    allocation = 0.0
    if mode in (MODE_SERVER_FILLING, MODE_DIVISOR_FILLING):
        m = _choose_filling(st, ps, k, n_run, mode)
    elif mode in (MODE_GREEDY, MODE_FIRST_FIT):
        m = _choose_greedy(st, ps, k, n_run, mode == MODE_FIRST_FIT)
    elif mode == MODE_MAX_WEIGHT:
        m = _choose_max_weight(st, ps, k, n_run)
    else:  # MODE_RESOURCE_POOLED: the best job alone, on all k servers
        m = 0
        j, _ = next_candidate(st, ps, n_run, first_position(st, ps), math.inf)
        if j != -1:
            m = add_candidate(st, ps, 0, j)
            ps.chosen[0] = 1
        allocation = k
    apply_choice(st, ps, m, allocation)
    if int(ps.params[0]) == ORDER_GITTINS:
        wake_at_rank_change(st, ps, k, ps.params[6])


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def server_needs(model) -> np.ndarray:
    """The finite set of server needs of a pooled model (SpecError otherwise)."""
    needs: set[float] = set()
    for i, cls in enumerate(model.classes):
        if cls.elastic:
            raise SpecError(
                "this policy serves rigid multiserver jobs only",
                field=f"workload.classes[{i}].speedup",
            )
        values = cls.demand[0].values()
        if values is None:
            raise SpecError(
                "this policy needs a finite set of server needs (fixed, discrete, "
                "integer uniform or empirical)",
                field=f"workload.classes[{i}].need",
            )
        needs.update(float(v) for v in values)
    if model.trace is not None:
        needs.update(model.trace.needs.tolist())
    return np.array(sorted(needs))


def check_rigid(model, params) -> None:
    server_needs(model)


def check_nested_divisors(model, params) -> None:
    """Lemma 3.1's condition (paper 004 §3.2): every need divides k and every larger need."""
    k = model.pooled_k
    chain = [*server_needs(model).tolist(), k]
    for i, a in enumerate(chain):
        for b in chain[i + 1 :]:
            if b % a != 0:
                raise SpecError(
                    f"ServerFilling needs server needs that divide k and each other (powers of "
                    f"two, or of any integer x; paper 004 §3.2): need {a:g} does not divide "
                    f"{b:g} (k = {k:g}). For needs that only divide k use divisor-filling",
                    field="workload.classes",
                )


def check_divisors(model, params) -> None:
    """The divisible setting (paper 004 §3.2, App. C): every need divides k."""
    k = model.pooled_k
    for need in server_needs(model):
        if k % need != 0:
            raise SpecError(
                f"DivisorFilling needs server needs that divide k (paper 004 App. C): "
                f"{need:g} does not divide {k:g}; for general needs use first-fit-srpt, "
                "preemptive-first-fit or easy-backfill",
                field="workload.classes",
            )


class DivisorFillingParams(BaseModel):
    """``fill_idle`` (inferred, default true): read literally, App. C.1's recursion can leave
    servers idle while jobs of M wait when fewer than k jobs are present (e.g. one need-1 job with
    k = 8 matches no case); the policy then also serves the jobs of M that fit, in priority order.
    With at least k jobs present nothing changes (Theorem C.1 fills all k servers)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fill_idle: bool = True


class GittinsParams(BaseModel):
    """``sizes``: "unknown" (blind: the rank of a job's age in its need's size distribution,
    paper 004 §5.1) or "known" (the Gittins rank of a known size is its remaining size: SRPT).
    ``quantum``: ranks that rise with age (e.g. hyperexponential sizes) are re-ordered when a
    served job's rank reaches the smallest waiting rank or rises by this fraction."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sizes: Literal["unknown", "known"] = "unknown"
    quantum: Annotated[float, Field(gt=0, le=1)] = 0.01


class DivisorFillingGittinsParams(GittinsParams, DivisorFillingParams):
    """Both the Gittins and the DivisorFilling parameters."""


def _state(order: int, mode: int):
    def make_state(st, model, params: BaseModel) -> tuple:
        chosen = order
        if order == ORDER_GITTINS and getattr(params, "sizes", "unknown") == "known":
            chosen = ORDER_SRPT
        return make_ordering_state(
            st,
            model,
            chosen,
            mode,
            fill_idle=getattr(params, "fill_idle", False),
            quantum=getattr(params, "quantum", 0.0),
            listed=chosen == ORDER_FCFS and mode != MODE_MAX_WEIGHT,
        )

    return make_state


P004 = "Grosof et al. 2023 (paper 004)"
GENERAL = f"{P004}, §2.3 (general needs)"
# name, title, order, placement, reference, summary, check, parameters
POLICIES = [
    (
        "server-filling",
        "ServerFilling",
        ORDER_FCFS,
        MODE_SERVER_FILLING,
        f"{P004}, §6",
        "FCFS order; smallest prefix needing >= k servers, placed largest need first",
        check_nested_divisors,
        NoParams,
    ),
    (
        "server-filling-srpt",
        "ServerFilling-SRPT",
        ORDER_SRPT,
        MODE_SERVER_FILLING,
        f"{P004}, §3.2",
        "SRPT order; smallest prefix needing >= k servers, largest need first; "
        "heavy-traffic optimal (Thm 4.2)",
        check_nested_divisors,
        NoParams,
    ),
    (
        "divisor-filling",
        "DivisorFilling",
        ORDER_FCFS,
        MODE_DIVISOR_FILLING,
        f"{P004}, App. C",
        "FCFS order; recursive DivisorFilling placement for needs dividing k",
        check_divisors,
        DivisorFillingParams,
    ),
    (
        "divisor-filling-srpt",
        "DivisorFilling-SRPT",
        ORDER_SRPT,
        MODE_DIVISOR_FILLING,
        f"{P004}, App. C",
        "SRPT order; recursive DivisorFilling placement for needs dividing k",
        check_divisors,
        DivisorFillingParams,
    ),
    (
        "greedy-srpt",
        "GreedySRPT",
        ORDER_SRPT,
        MODE_GREEDY,
        f"{P004}, §6",
        "SRPT order; serve while jobs fit, stop at the first that does not",
        check_rigid,
        NoParams,
    ),
    (
        "first-fit-srpt",
        "FirstFitSRPT",
        ORDER_SRPT,
        MODE_FIRST_FIT,
        f"{P004}, §6",
        "SRPT order; serve every job that fits (Smallest Area First)",
        check_rigid,
        NoParams,
    ),
    (
        "preemptive-first-fit",
        "Preemptive FirstFit",
        ORDER_FCFS,
        MODE_FIRST_FIT,
        GENERAL,
        "FCFS order; serve every job that fits, preemptive",
        check_rigid,
        NoParams,
    ),
    (
        "most-servers-first",
        "MostServersFirst",
        ORDER_NEED_DESC,
        MODE_FIRST_FIT,
        GENERAL,
        "largest server need first (FCFS ties), first fit, preemptive",
        check_rigid,
        NoParams,
    ),
    (
        "least-servers-first",
        "LeastServersFirst",
        ORDER_NEED_ASC,
        MODE_FIRST_FIT,
        GENERAL,
        "smallest server need first (FCFS ties), first fit, preemptive",
        check_rigid,
        NoParams,
    ),
    (
        "server-filling-gittins",
        "ServerFilling-Gittins",
        ORDER_GITTINS,
        MODE_SERVER_FILLING,
        f"{P004}, §5.1",
        "Gittins-rank order (unknown sizes); smallest prefix needing >= k servers, largest need "
        "first; heavy-traffic optimal (Thm 5.2)",
        check_nested_divisors,
        GittinsParams,
    ),
    (
        "divisor-filling-gittins",
        "DivisorFilling-Gittins",
        ORDER_GITTINS,
        MODE_DIVISOR_FILLING,
        f"{P004}, §5.1 and App. C",
        "Gittins-rank order; recursive DivisorFilling placement for needs dividing k",
        check_divisors,
        DivisorFillingGittinsParams,
    ),
    (
        "gittins-1",
        "Gittins-1 (resource-pooled bound)",
        ORDER_GITTINS,
        MODE_RESOURCE_POOLED,
        f"{P004}, §5.3",
        "one server of speed k serving the least Gittins rank first: the bound for unknown sizes",
        check_rigid,
        GittinsParams,
    ),
    (
        "max-weight",
        "MaxWeight",
        ORDER_FCFS,
        MODE_MAX_WEIGHT,
        f"{P004}, §6",
        "serve the job set of maximum total weight (weight = jobs with the same need); exact "
        "knapsack",
        check_rigid,
        NoParams,
    ),
    (
        "srpt-1",
        "SRPT-1 (resource-pooled bound)",
        ORDER_SRPT,
        MODE_RESOURCE_POOLED,
        f"{P004}, §3.1 and §4.1",
        "one server of speed k serving the least remaining size first: "
        "a lower bound for every policy",
        check_rigid,
        NoParams,
    ),
]

for name, title, order, mode, reference, summary, check, params in POLICIES:
    register(
        Policy(
            name=name,
            family="pooled",
            title=title,
            reference=reference,
            summary=summary,
            runner=run,
            make_state=_state(order, mode),
            grow=grow_ordering_state,
            params=params,
            check=check,
            resource_pooled=mode == MODE_RESOURCE_POOLED,
        )
    )
