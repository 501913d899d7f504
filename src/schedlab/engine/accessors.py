"""Named reads of the engine state for policies: what a decision epoch sees, without the
counter and clock indices of :mod:`schedlab.engine.constants` (docs/writing-policies.md).

Each is a one-line compiled function that LLVM inlines into the policy's decision: reading
``now(st)`` costs what ``st.clk[NOW]`` costs. Per-job and per-server arrays are read by their
names (``st.demand[j, r]``, ``st.capacity[s, r]``, ``st.q_next[j]``, ...; engine/state.py).
"""

from __future__ import annotations

from schedlab._jit import kernel
from schedlab.engine.constants import (
    ARRIVED,
    EPS,
    N_ARRIVED_NEW,
    N_COMPLETED_NEW,
    N_RUNNING,
    N_WAITING,
    NOW,
    P_HEAD,
    Q_HEAD,
    WAITING,
)


@kernel(wraparound=False)
def now(st):
    """The time of this decision epoch."""
    return st.clk[NOW]


@kernel(wraparound=False)
def tolerance(st):
    """The capacity tolerance: a demand fits when it exceeds the room left by at most this."""
    return st.clk[EPS]


@kernel(wraparound=False)
def first_waiting(st):
    """The earliest-arrived waiting job (-1: none); the next is ``st.q_next[j]`` (engine list
    of waiting jobs in arrival order, kept when the policy declares ``waiting_list``)."""
    return st.ctr[Q_HEAD]


@kernel(wraparound=False)
def first_present(st):
    """The earliest-arrived job in the system (-1: none); the next is ``st.p_next[j]``."""
    return st.ctr[P_HEAD]


@kernel(wraparound=False)
def n_waiting(st):
    """Jobs waiting for service."""
    return st.ctr[N_WAITING]


@kernel(wraparound=False)
def n_running(st):
    """Jobs in service; their slots are ``st.running[:n_running(st)]``."""
    return st.ctr[N_RUNNING]


@kernel(wraparound=False)
def n_arrived(st):
    """Jobs arrived since the start of the run (this epoch's included)."""
    return st.ctr[ARRIVED]


@kernel(wraparound=False)
def n_arrived_new(st):
    """Jobs arrived since the last decision; their slots are ``st.arrived_buf[:n]``, in arrival
    order."""
    return st.ctr[N_ARRIVED_NEW]


@kernel(wraparound=False)
def n_completed_new(st):
    """Jobs completed since the last decision; their slots are ``st.done_buf[:n]``."""
    return st.ctr[N_COMPLETED_NEW]


@kernel(wraparound=False)
def is_waiting(st, j):
    """Job ``j`` is waiting for service (not running, finished or lost)."""
    return st.status[j] == WAITING
