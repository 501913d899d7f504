"""ServerFilling for the multiserver-job model (pooled family).

Paper 004 (Grosof, Scully, Harchol-Balter, Scheller-Wolf, POMACS 2023), §3.2 and §6: order the jobs
in the system (here: arrival order, "ServerFilling [14]"), take the smallest initial subset M whose
total server need is at least k (all jobs if there is none), and place the jobs of M into service in
descending order of server need — ties by the ordering — until no servers remain or the next job
does not fit. Preemptive (preempt-resume), recomputed at every arrival and completion.

Lemma 3.1: when every need divides k and each need divides every larger need (powers of two, or of
any integer x), ServerFilling keeps all k servers busy whenever the jobs present need at least k.
The policy refuses other settings (DivisorFilling, paper 004 App. C, handles needs dividing k).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from schedlab.engine.actions import preempt, start
from schedlab.engine.constants import EPS, N_RUNNING, P_HEAD, WAITING
from schedlab.engine.loop import run_engine
from schedlab.errors import SpecError
from schedlab.policies.registry import NoParams, Policy, register


@njit(cache=True)
def sort_by_need_descending(st, buf, m):
    """Stable insertion sort of buf[:m] by decreasing server need (m <= k, small)."""
    for i in range(1, m):
        j = buf[i]
        key = st.demand[j, 0]
        h = i - 1
        while h >= 0 and st.demand[buf[h], 0] < key:
            buf[h + 1] = buf[h]
            h -= 1
        buf[h + 1] = j


@njit(cache=True)
def serve_set(st, buf, m, mark):
    """Place buf[:m] (sorted by decreasing need) until a job does not fit; mark the chosen ones."""
    free = st.capacity[0, 0]
    eps = st.clk[EPS]
    for i in range(m):
        j = buf[i]
        need = st.demand[j, 0]
        if need > free + eps:
            break
        mark[j] = 1
        free -= need


@njit(cache=True)
def apply_service_set(st, buf, m, mark):
    """Preempt running jobs outside the marked set, then start the marked waiting ones."""
    i = 0
    while i < st.ctr[N_RUNNING]:
        j = st.running[i]
        if mark[j] == 0:
            preempt(st, j)  # swap-removes j: running[i] now holds another job
        else:
            i += 1
    for i in range(m):
        j = buf[i]
        if mark[j] != 0:
            if st.status[j] == WAITING:
                start(st, j, 0, 1.0)
            mark[j] = 0


@njit(cache=True)
def decide(st, ps):
    buf, mark = ps
    k = st.capacity[0, 0]
    m = 0
    total = 0.0
    j = st.ctr[P_HEAD]
    while j != -1 and total < k:
        buf[m] = j
        m += 1
        total += st.demand[j, 0]
        j = st.p_next[j]
    sort_by_need_descending(st, buf, m)
    serve_set(st, buf, m, mark)
    apply_service_set(st, buf, m, mark)


@njit(cache=True)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def make_state(st, model, params) -> tuple:
    k = int(model.pooled_k)
    return (np.zeros(k + 1, dtype=np.int32), np.zeros(len(st.arrival), dtype=np.int8))


def server_needs(model) -> np.ndarray:
    """The set of server needs a pooled model can produce (SpecError if not a finite set)."""
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
                "this policy needs a finite set of server needs (fixed or discrete)",
                field=f"workload.classes[{i}].need",
            )
        needs.update(float(v) for v in values)
    if model.trace is not None:
        needs.update(np.unique(model.trace.demand[:, 0]).tolist())
    return np.array(sorted(needs))


def check_nested_divisors(model, params) -> None:
    """Lemma 3.1's condition: every need divides k and every larger need (paper 004 §3.2)."""
    k = model.pooled_k
    needs = server_needs(model)
    chain = [*needs.tolist(), k]
    for i, a in enumerate(chain):
        for b in chain[i + 1 :]:
            if b % a != 0:
                raise SpecError(
                    f"ServerFilling needs server needs that divide k and each other (powers of "
                    f"two, or of any integer x; paper 004 §3.2): need {a:g} does not divide "
                    f"{b:g} (k = {k:g}). For needs that only divide k use DivisorFilling",
                    field="workload.classes",
                )


register(
    Policy(
        name="server-filling",
        family="pooled",
        title="ServerFilling",
        reference="Grosof et al. 2023 (paper 004), §3.2 and §6",
        summary="FCFS-ordered smallest prefix needing >= k servers, placed largest need first; "
        "preemptive, throughput-optimal for power-of-two needs",
        runner=run,
        make_state=make_state,
        params=NoParams,
        check=check_nested_divisors,
    )
)
