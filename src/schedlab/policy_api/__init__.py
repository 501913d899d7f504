"""The policy author's API: everything a scheduling policy imports, from one module.

A policy (built-in or a user's plugin, docs/writing-policies.md) imports from here and from
NumPy/Numba only, never from this package's modules (the contract, the context, placement), which
import nothing above the engine: every built-in policy sits above them (decision 0027). What it
gets:

* **the decorator** :func:`kernel`: every compiled function of a policy is declared with it
  (``@kernel(wraparound=False)`` for the hot decision code that never indexes from the end);
* **the contract**: :class:`PolicyConfig` (its settings), :class:`PolicyState` and
  :class:`StateField` (its state), :func:`engine_sizes`, :class:`Policy` with its parts
  :class:`About`, :class:`Kernels`, :class:`Traits` and :class:`Hooks`, and :func:`register`;
* **the context** a policy's ``check`` and ``init`` are given: :class:`PolicyContext`, its
  :class:`JobClass` es and :class:`TraceView`;
* **the engine loop** :func:`run_engine` that its compiled ``run`` calls with its ``decide``;
* **the actions** a decision may take (:mod:`schedlab.engine.actions`): :func:`start`,
  :func:`preempt`, :func:`kill`, :func:`migrate`, :func:`set_allocation`, :func:`reject`,
  :func:`reject_waiting`, :func:`stall`, :func:`activate`, :func:`wake_at`, and the tests
  :func:`fits` and :func:`rate_of`;
* **named reads of the engine state** (:mod:`schedlab.engine.accessors`): :func:`now`,
  :func:`tolerance`, :func:`first_waiting`, :func:`first_present`, :func:`n_waiting`,
  :func:`n_running`, :func:`n_arrived`, :func:`n_arrived_new`, :func:`n_completed_new`,
  :func:`is_waiting`; per-job and per-server arrays are read by name (``st.demand[j, r]``);
* **helpers**: :func:`first_fit` placement; intrusive lists over slot arrays
  (:func:`list_append`, :func:`list_insert_after`, :func:`list_remove`);
* **errors**: :class:`SpecError` for a model or setting the policy cannot serve (one line naming
  the spec field).
"""

from __future__ import annotations

from schedlab._jit import kernel
from schedlab.engine.accessors import (
    first_present,
    first_waiting,
    is_waiting,
    n_arrived,
    n_arrived_new,
    n_completed_new,
    n_running,
    n_waiting,
    now,
    tolerance,
)
from schedlab.engine.actions import (
    activate,
    fits,
    kill,
    migrate,
    preempt,
    rate_of,
    reject,
    reject_waiting,
    set_allocation,
    stall,
    start,
    wake_at,
)
from schedlab.engine.lists_and_heaps import list_append, list_insert_after, list_remove
from schedlab.engine.loop import run_engine
from schedlab.errors import SpecError
from schedlab.policy_api.context import JobClass, PolicyContext, SizeLaw, TraceView
from schedlab.policy_api.contract import (
    About,
    Hooks,
    Kernels,
    NoConfig,
    Policy,
    PolicyConfig,
    PolicyState,
    StateField,
    Traits,
    engine_sizes,
    register,
)
from schedlab.policy_api.placement import first_fit

__all__ = [
    "About",
    "Hooks",
    "JobClass",
    "Kernels",
    "NoConfig",
    "Policy",
    "PolicyConfig",
    "PolicyContext",
    "PolicyState",
    "SizeLaw",
    "SpecError",
    "StateField",
    "TraceView",
    "Traits",
    "activate",
    "engine_sizes",
    "first_fit",
    "first_present",
    "first_waiting",
    "fits",
    "is_waiting",
    "kernel",
    "kill",
    "list_append",
    "list_insert_after",
    "list_remove",
    "migrate",
    "n_arrived",
    "n_arrived_new",
    "n_completed_new",
    "n_running",
    "n_waiting",
    "now",
    "preempt",
    "rate_of",
    "register",
    "reject",
    "reject_waiting",
    "run_engine",
    "set_allocation",
    "stall",
    "start",
    "tolerance",
    "wake_at",
]
