"""Refuse run lengths that cannot finish: estimated time and memory of a compiled model.

``arrivals = 1e12``, ``horizon = 1e12`` or ``replications = 1e9`` would run for years or run out of
memory after minutes; :func:`check_budget` refuses them with one line stating the estimate
(issue 15 item 8). The estimate is deliberately pessimistic:

* events: ``EVENTS_PER_ARRIVAL`` per arrival (an arrival, a start and a completion, plus
  decisions), times the replications; the arrivals of a horizon run are rate x horizon;
* time: events at ``EVENTS_PER_SECOND``, below the slowest engine rate measured on the 2-core
  reference machine (docs/guide.md, performance table);
* memory: ``BYTES_PER_JOB`` per job held at once (the engine keeps per-job state; measured 161
  bytes for the engine arrays and the generated jobs, rounded up for policy state).

A run estimated above ``run.max_hours`` (default 24 hours) or above the machine's physical memory
is refused. Raise ``run.max_hours`` (a spec field, also per sweep in ``[base.run]``) to accept a
longer run knowingly.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from schedlab.errors import SpecError

EVENTS_PER_ARRIVAL = 4.0
EVENTS_PER_SECOND = 1.0e6
BYTES_PER_JOB = 200.0


@dataclass(frozen=True)
class Budget:
    arrivals: float  # per replication
    events: float  # all replications
    hours: float
    memory_bytes: float  # peak, one replication at a time


def physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf


def estimate(spec, rate: float, trace_jobs: int | None) -> Budget:
    run = spec.run
    if run.arrivals is not None:
        arrivals = float(run.arrivals)
    elif run.horizon is not None:
        arrivals = rate * run.horizon
        if trace_jobs is not None:
            arrivals = min(arrivals, float(trace_jobs))
    else:
        arrivals = float(trace_jobs or 0)
    events = EVENTS_PER_ARRIVAL * arrivals * run.replications
    return Budget(arrivals, events, events / EVENTS_PER_SECOND / 3600, BYTES_PER_JOB * arrivals)


def check_budget(spec, rate: float, trace_jobs: int | None = None) -> None:
    """Raise a one-line SpecError when the run would exceed run.max_hours or the memory."""
    b = estimate(spec, rate, trace_jobs)
    run = spec.run
    field = (
        "run.replications"
        if run.replications > 1 and b.arrivals * EVENTS_PER_ARRIVAL / EVENTS_PER_SECOND < 3600
        else ("run.arrivals" if run.arrivals is not None else "run.horizon")
    )
    what = (
        f"about {b.arrivals:.3g} arrivals x {run.replications:,} replication(s) = "
        f"{b.events:.3g} events: about {_duration(b.hours)} at {EVENTS_PER_SECOND:.0e} events/s "
        f"and {b.memory_bytes / 2**30:.3g} GiB of memory"
    )
    memory = physical_memory()
    if b.memory_bytes > memory:
        raise SpecError(
            f"{what}, more than this machine's {memory / 2**30:.3g} GiB: shorten the run",
            field=field,
        )
    if b.hours > run.max_hours:
        raise SpecError(
            f"{what}, more than run.max_hours = {run.max_hours:g}: shorten the run or raise "
            "run.max_hours",
            field=field,
        )


def _duration(hours: float) -> str:
    if hours >= 24 * 365:
        return f"{hours / 24 / 365:.3g} years"
    if hours >= 48:
        return f"{hours / 24:.3g} days"
    return f"{hours:.3g} hours"
