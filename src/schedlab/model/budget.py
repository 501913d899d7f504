"""Refuse run lengths that cannot finish: estimated time and memory of a compiled model.

``arrivals = 1e12``, ``horizon = 1e12`` or ``replications = 1e9`` would run for years or run out of
memory after minutes; :func:`check_budget` refuses them with one line stating the estimate
(issue 15 item 8). The estimate is deliberately pessimistic:

* events: ``EVENTS_PER_ARRIVAL`` per arrival (an arrival, a start and a completion, plus
  decisions), times the replications; the arrivals of a horizon run are rate x horizon;
* time: events at ``EVENTS_PER_SECOND``, below the slowest engine rate measured on the 2-core
  reference machine (docs/guide.md, performance table);
* memory (engine v2, docs/decisions/0003-streaming-jobs.md): the engine holds only the jobs in
  the system, in job slots that double when full. Measured per slot: 145 bytes of engine arrays
  plus at most about 55 of policy arrays (41 for the ServerFilling family with 4 needs), so
  ``BYTES_PER_SLOT`` = 2 x 200 covers a doubling. A stable run's jobs present do not grow with the
  run length, so its memory is ``BASE_BYTES`` (the interpreter, NumPy/Numba and the compiled
  code: 302 MB peak RSS measured by benchmarks/bench_memory.py at 10^5 to 10^8 arrivals) plus a
  bounded number of slots; a run at load rho >= 1 (run.allow_unstable, pooled and packing
  families) accumulates about (1 - 1/rho) jobs per arrival. A ``whole_run`` policy (a plugin
  whose state is built from every job of the run) holds every job: ``BYTES_PER_ARRIVAL``
  (engine slot 145 + job block 36 + the generated jobs 36 + policy arrays, rounded up) plus 16 per
  resource per arrival.

Arrays sized by the spec rather than by the jobs (issue 28 item 6): per server, the engine's
capacity and usage rows and the policies' per-server tables, ``BYTES_PER_SERVER`` plus
``BYTES_PER_SERVER_RESOURCE`` per resource (measured: 20 bytes per unit server in a pooled run,
85 to 186 per server in packing runs; pooled servers count as unit servers, since a policy may
keep one row per unit); per time-series sample ``BYTES_PER_SAMPLE`` (the sampled values, their
times and the Arrow table built from them: 106 bytes measured with one resource).
:func:`check_arrays` refuses them before any is built.

A run estimated above ``run.max_hours`` (default 24 hours) or above the memory budget is
refused. Raise ``run.max_hours`` (a spec field, also per sweep in ``[base.run]``) to accept a
longer run knowingly. The memory budget (:func:`memory_budget`, issue 45 item 7) is
``BASE_BYTES`` plus ``BUDGET_FRACTION`` of the memory still available to this process: the least
of the machine's available memory (Linux's MemAvailable, else its physical memory), the room left
under the address-space and data limits (``ulimit -v``, ``ulimit -d``) and under the cgroup's
``memory.max``; the environment variable ``SCHEDLAB_MEMORY_BUDGET`` (bytes, or with a K, M, G or
T suffix: powers of 1024) sets it instead.
"""

from __future__ import annotations

import math
import os
import re
import resource
from dataclasses import dataclass
from pathlib import Path

from schedlab.errors import SpecError

EVENTS_PER_ARRIVAL = 4.0
EVENTS_PER_SECOND = 1.0e6
BYTES_PER_SLOT = 400.0
BASE_BYTES = 400.0e6
BYTES_PER_ARRIVAL = 320.0
BYTES_PER_SERVER = 200.0
BYTES_PER_SERVER_RESOURCE = 48.0
BYTES_PER_SAMPLE = 160.0
BUDGET_ENV = "SCHEDLAB_MEMORY_BUDGET"
BUDGET_FRACTION = 0.8  # of the memory available: the estimates are within 3x of measured peaks


@dataclass(frozen=True)
class Budget:
    arrivals: float  # per replication
    events: float  # all replications
    hours: float
    memory_bytes: float  # peak, one replication at a time
    present: float = 0.0  # jobs in the system at the end (load >= 1), 0 when bounded


def physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf


@dataclass(frozen=True)
class MemoryBudget:
    """The peak memory a run may take, in bytes, and where that figure comes from."""

    bytes: float
    source: str

    def says(self) -> str:
        return f"the memory budget of {self.bytes / 2**30:.3g} GiB ({self.source})"


def memory_budget() -> MemoryBudget:
    """$SCHEDLAB_MEMORY_BUDGET, else BASE_BYTES plus BUDGET_FRACTION of the memory available
    (module docstring)."""
    given = os.environ.get(BUDGET_ENV, "").strip()
    if given:
        return MemoryBudget(_bytes(given), f"${BUDGET_ENV}")
    room, where = available_memory()
    return MemoryBudget(
        BASE_BYTES + BUDGET_FRACTION * room,
        f"{BUDGET_FRACTION:.0%} of the {room / 2**30:.3g} GiB {where}, plus "
        f"{BASE_BYTES / 2**30:.2g} GiB for the interpreter; ${BUDGET_ENV} sets it",
    )


def available_memory() -> tuple[float, str]:
    """(bytes, what limits them): the least room this process has to grow into."""
    status = _proc_fields(Path("/proc/self/status"))
    meminfo = _proc_fields(Path("/proc/meminfo"))
    candidates = [
        (meminfo["MemAvailable"], "available on this machine")
        if "MemAvailable" in meminfo
        else (physical_memory(), "of this machine")
    ]
    for limit, used, name in (
        (resource.RLIMIT_AS, "VmSize", "address-space limit (ulimit -v)"),
        (resource.RLIMIT_DATA, "VmData", "data limit (ulimit -d)"),
    ):
        soft = resource.getrlimit(limit)[0]
        if soft != resource.RLIM_INFINITY:
            candidates.append((soft - status.get(used, 0.0), f"left under the {name}"))
    cgroup = Path("/sys/fs/cgroup")
    try:
        cap = (cgroup / "memory.max").read_text().strip()
        if cap != "max":
            current = float((cgroup / "memory.current").read_text())
            candidates.append((float(cap) - current, "left under the cgroup's memory.max"))
    except (OSError, ValueError):
        pass
    room, where = min(candidates)
    return max(room, 0.0), where


def _proc_fields(path: Path) -> dict[str, float]:
    """The "Name:  N kB" lines of a /proc file, in bytes (empty where there is no /proc)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    found = re.findall(r"^(\w+):\s+(\d+) kB$", text, re.MULTILINE)
    return {name: float(value) * 1024 for name, value in found}


UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _bytes(text: str) -> float:
    matched = re.fullmatch(r"(\d+(?:\.\d*)?)\s*([KMGT]?)(?:I?B)?", text.upper())
    if matched is None:
        raise SpecError(f"${BUDGET_ENV}: '{text}' is no amount of memory (bytes, or e.g. 512M, 8G)")
    return float(matched.group(1)) * UNITS[matched.group(2)]


def array_bytes(spec) -> float:
    """Bytes of the arrays sized by the cluster and the time series (module docstring)."""
    c = spec.cluster
    if c.pools is not None:
        servers = float(sum(p.count for p in c.pools))
        capacity = c.pools[0].capacity
    else:
        servers, capacity = float(c.servers or 0), c.capacity
    resources = len(capacity) if isinstance(capacity, dict) else 1
    per_server = BYTES_PER_SERVER + BYTES_PER_SERVER_RESOURCE * resources
    return servers * per_server + BYTES_PER_SAMPLE * float(spec.run.timeseries)


def check_arrays(spec) -> None:
    """A one-line SpecError when the cluster's and time series' arrays exceed the memory."""
    need = BASE_BYTES + array_bytes(spec)
    budget = memory_budget()
    if need > budget.bytes:
        field = (
            "run.timeseries"
            if BYTES_PER_SAMPLE * spec.run.timeseries > need / 2
            else "cluster.pools"
            if spec.cluster.pools is not None
            else "cluster.servers"
        )
        raise SpecError(
            f"the cluster ({_servers(spec)} servers) and time series ({spec.run.timeseries:,} "
            f"samples) need about {need / 2**30:.3g} GiB of memory, more than "
            f"{budget.says()}: make them smaller",
            field=field,
        )


def _servers(spec) -> str:
    c = spec.cluster
    n = sum(p.count for p in c.pools) if c.pools is not None else c.servers
    return f"{n:,}" if n < 1e15 else f"{n:.3g}"


def estimate(
    spec,
    rate: float,
    trace_jobs: int | None,
    *,
    load: float = 0.0,
    whole_run: str | None = None,
    loss: bool = False,
    resources: int = 1,
) -> Budget:
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
    base = BASE_BYTES + array_bytes(spec)
    if whole_run:
        memory = base + (BYTES_PER_ARRIVAL + 16.0 * resources) * arrivals
    else:
        present = 0.0 if loss or load < 1.0 else (1.0 - 1.0 / load) * arrivals
        memory = base + BYTES_PER_SLOT * present
        return Budget(arrivals, events, events / EVENTS_PER_SECOND / 3600, memory, present)
    return Budget(arrivals, events, events / EVENTS_PER_SECOND / 3600, memory)


def check_budget(spec, rate: float, trace_jobs: int | None = None, **model: object) -> None:
    """Raise a one-line SpecError when the run would exceed run.max_hours or the memory
    (``model``: the keyword arguments of :func:`estimate` that describe the compiled model)."""
    b = estimate(spec, rate, trace_jobs, **model)  # type: ignore[arg-type]
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
    budget = memory_budget()
    if b.memory_bytes > budget.bytes:
        holds = (
            f"policy '{model['whole_run']}' keeps every job of the run in memory (its state is "
            "built from the whole run, docs/decisions/0003): "
            if model.get("whole_run")
            else f"load {model.get('load', 0.0):.4g} >= 1 leaves about {b.present:.3g} jobs in "
            "the system: "
            if b.present
            else ""
        )
        raise SpecError(
            f"{holds}{what}, more than {budget.says()}: shorten the run",
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
