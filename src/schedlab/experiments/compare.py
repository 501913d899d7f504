"""Which policy for my workload: every applicable built-in policy and the analytic bounds that
apply, over a range of loads (the library side of ``schedlab compare``).

A workload is a simulation spec (its cluster, workload and model; its policy is replaced) or a
canonical trace table (Parquet): replayed at its own arrival times (``native``: the log's own load,
the default of ``schedlab compare``) or with its arrival times rescaled to each load given. A trace
replay is deterministic: it runs once per point (its intervals are batch means within the replay,
docs/statistics.md). A policy
applies when the family is one of its families and the model passes its ``check`` (the registry
refuses e.g. ServerFilling for needs that are not powers of two); refused ones are listed with
the reason. Every policy at a load sees the same job sequence (common random numbers).

On a trace workload (a real cluster's log) the ranking answers "which policy can my cluster
run": only the policies a batch cluster can run (their traits: non-preemptive, sizes not known
exactly; :class:`~schedlab.policy_api.contract.PolicyTraits`) are ranked as choices; the others
(and the resource-pooled bounds) are run and listed apart as the "bounds and idealized
policies" (``Plan.idealized``). ``all_policies`` ranks everything together, as synthetic
workloads always do.

Bounds, each only where its theorem's assumptions hold:

* pooled family, rigid jobs, Poisson arrivals: E[T] of SRPT-1 (grosof2023 §4.1, a lower bound for
  every policy; :mod:`schedlab.analysis.srpt`) and Theorem 4.1's upper bound on
  ServerFilling-SRPT (§4.1; :mod:`schedlab.analysis.theorem41`, when the needs nest or divide k);
* pooled family, fixed needs, exponential durations, Poisson arrivals: FCFS's exact stability
  limit rho* from its saturated system (:mod:`schedlab.analysis.saturated`);
* packing family, fixed one-resource demands on identical servers: psychas2019's capacity LP
  (eq. (4), :mod:`schedlab.optim.capacity_lp`): no policy is stable above that load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError, SpecError
from schedlab.experiments.runner import Task
from schedlab.model.spec import SimulationSpec, parse_spec

# options of a calibrated context on the log's clock (a capacity schedule's steps, the week's
# prime time): they hold at the log's own times only
CLOCKED = ("capacity_schedule", "prime_time_max_request", "prime_time_hours", "prime_time_clock")


@dataclass(frozen=True)
class Skipped:
    policy: str
    reason: str


@dataclass(frozen=True)
class BoundCurve:
    """An analytic E[T] per load (``values``: load -> E[T]); ``applies_to`` names what it bounds."""

    name: str
    values: dict[float, float]
    meaning: str


@dataclass(frozen=True)
class LoadLimit:
    """A load above which a policy (or every policy) has no steady state."""

    name: str
    load: float
    meaning: str


@dataclass
class Plan:
    name: str
    family: str
    base: dict[str, Any]  # the workload's spec (JSON form) without policy and load
    loads: list[float]
    policies: list[str]
    skipped: list[Skipped] = field(default_factory=list)
    bounds: list[BoundCurve] = field(default_factory=list)
    limits: list[LoadLimit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    native: float | None = None  # the log's own load, when it is one of the loads
    idealized: list[str] = field(default_factory=list)  # ranked apart (module docstring)
    warnings: list[str] = field(default_factory=list)  # said once before the runs, and noted
    native_jobs: bool = False  # runs at the log's own load keep their per-job table (log check)
    left_out: dict[str, str] = field(default_factory=dict)  # policy -> why (its limit)
    sizes: int = 0  # distinct (need, duration) of a log, counted when a policy's limit asks
    k: int = 0  # servers (pooled: the k of the needs), 0 when unknown
    jobs: int = 0  # jobs a run replays (a trace), 0 for a synthetic workload
    # a calibrated context (compare --calibrated): the policy options offered to every policy,
    # and those each policy takes (its config has them and its check accepts them)
    context: dict[str, Any] = field(default_factory=dict)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def spec(self, policy: str, load: float | None) -> SimulationSpec:
        """The run of ``policy`` at ``load`` (None or the native load: the log's own times) with
        the options it takes of the calibrated context (a capacity schedule and a prime time,
        on the log's clock, at the log's own times only)."""
        workload = dict(self.base["workload"])
        run = dict(self.base["run"])
        options = dict(self.options.get(policy, {}))
        if load is not None and load != self.native:
            workload["load"] = load
            for clocked in CLOCKED:  # on the log's clock: not at another load's times
                options.pop(clocked, None)
        elif self.native_jobs:
            run["jobs"] = JOBS_FOLDER
        data = {
            **self.base,
            "workload": workload,
            "run": run,
            "model": {**self.base.get("model", {}), "family": self.family},
            "policy": {"name": policy, **options},
        }
        return parse_spec(data)

    def context_line(self) -> str:
        """Which options of the calibrated context each policy ran under (one line)."""
        if not self.context:
            return (
                "every policy ran on the fitted capacity alone (no queue order, user limit or "
                "downtime in the calibrated context)"
            )
        ran = "; ".join(
            f"{p}: {', '.join(sorted(self.options.get(p, {}))) or 'none'}" for p in self.policies
        )
        return (
            f"calibrated context: every policy on the fitted capacity; of the fitted options "
            f"({', '.join(sorted(self.context))}), each took {ran}"
            + (
                " (capacity_schedule and prime time at the log's own load only)"
                if set(CLOCKED) & set(self.context) and any(x != self.native for x in self.loads)
                else ""
            )
        )

    def left_out_line(self) -> str:
        """One line: the policies left out at this k (or for this log's distinct job sizes) and
        the option that runs them."""
        named = ", ".join(f"{p} ({why})" for p, why in sorted(self.left_out.items()))
        sizes = f" and {self.sizes:,} distinct job sizes" if self.sizes else ""
        return (
            f"left out at k = {self.k:,}{sizes}, their cost per event grows with k or with the "
            f"log's distinct job sizes (benchmarks/bench_policy_k.py): {named}; --policy NAME "
            "runs one anyway"
        )

    def tasks(self, replications: int) -> list[Task]:
        out = []
        for i, (load, policy) in enumerate((x, p) for x in self.loads for p in self.policies):
            spec = self.spec(policy, load)
            axes = {"policy": policy, "workload.load": load}
            out += [
                Task.of(spec, r, experiment=self.name, point=i, axes=axes)
                for r in range(replications)
            ]
        return out


NATIVE = "native"
JOBS_FOLDER = "jobs"  # a run's per-job table: OUT/jobs/<run hash>.parquet (runner.jobs_target)


def is_trace(base: dict[str, Any]) -> bool:
    return base["workload"].get("arrivals", {}).get("process") == "trace"


def split_native(text: str) -> tuple[bool, str]:
    """``native`` in a --loads list (``native``, ``native,0.9``): whether it is there, and the
    rest of the text."""
    items = [x.strip() for x in text.split(",")] if ":" not in text else [text]
    native = NATIVE in items
    return native, ",".join(x for x in items if x != NATIVE)


def parse_loads(text: str) -> list[float]:
    """``0.5:0.95:0.05`` (start:stop:step, stop included) or ``0.5,0.7,0.9``."""
    try:
        if ":" in text:
            start, stop, step = (float(v) for v in text.split(":"))
            if step <= 0 or stop < start:
                raise ValueError
            n = math.floor((stop - start) / step + 1e-9) + 1
            loads = [round(start + i * step, 10) for i in range(n)]
        else:
            loads = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SchedlabError(
            f"--loads: expected START:STOP:STEP (e.g. 0.5:0.95:0.05) or a list (0.5,0.8), "
            f"got {text!r}"
        ) from None
    if not loads or any(x <= 0 for x in loads):
        raise SchedlabError(f"--loads: loads must be positive, got {text!r}")
    return sorted(set(loads))


def default_family(base: dict[str, Any], policy: str | None) -> str:
    """The spec's model family, else its policy's family, else pooled."""
    from schedlab.policies.registry import get_policy

    family = base.get("model", {}).get("family")
    if family:
        return str(family)
    if policy:
        try:
            return get_policy(policy).family
        except SpecError:
            pass
    return "pooled"


def workload_base(
    path: Path, *, servers: int | None, arrivals: int | None, seed: int
) -> tuple[dict[str, Any], str, str | None]:
    """The spec (JSON form) of a workload file, its name and the policy it names: a simulation
    spec's cluster, workload and model, or a canonical trace table replayed on ``servers``
    (default: the table's k)."""
    if not path.exists():
        raise SchedlabError(f"{path}: no such file")
    run: dict[str, Any] = {"timeseries": 0, "check": False, "allow_unstable": True, "seed": seed}
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        from schedlab.workloads.traces.canonical import get_meta

        try:
            meta = get_meta(pq.read_schema(path))
        except (pa.ArrowInvalid, OSError, KeyError, ValueError) as exc:
            raise SchedlabError(f"{path}: not a canonical trace table ({exc})") from None
        k = servers or int(meta.get("k") or 0)
        if not k:
            raise SchedlabError(f"{path}: the table names no server count k; give --servers")
        if arrivals is not None:
            run["arrivals"] = arrivals
        base = {
            "cluster": {"servers": k},
            "workload": {"arrivals": {"process": "trace", "path": str(path.resolve())}},
            "run": {**run, "warmup": 0.0},
        }
        return base, path.stem, None
    from schedlab.model.spec import load_spec

    spec = load_spec(path)
    data = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    policy = data.pop("policy", {}).get("name")
    data["workload"].pop("rate", None)
    data["run"] = {**data.get("run", {}), **run}
    data["run"].pop("replications", None)
    if arrivals is not None:
        data["run"]["arrivals"] = arrivals
        data["run"].pop("horizon", None)
    if servers is not None:
        data["cluster"] = {"servers": servers}
    return data, path.stem, policy


def plan(
    name: str,
    base: dict[str, Any],
    family: str,
    loads: list[float],
    only: list[str] | None = None,
    *,
    native: bool = False,
    all_policies: bool = False,
    native_jobs: bool = False,
    context: dict[str, Any] | None = None,
) -> Plan:
    """Every registered policy of ``family`` (built-in or plugin) that accepts the model, and
    the bounds that apply; ``native``: the trace also replays at its own arrival times; on a
    trace, unless ``all_policies``, those a batch cluster cannot run are marked to be ranked
    apart. Unless ``only`` names them, the policies whose cost per event grows with k
    (``Hooks.max_default_k``, benchmarks/bench_policy_k.py) are left out above their k
    (``Plan.left_out``). ``native_jobs``: the runs at the log's own load keep their per-job
    table (the log check reads them instead of replaying the log again). ``context``: policy
    options offered to every policy (compare --calibrated); each runs with those its config has
    and its check accepts (``Plan.options``)."""
    from schedlab.policies.registry import all_policies as registered

    the_plan = Plan(
        name=name,
        family=family,
        base=base,
        loads=list(loads),
        policies=[],
        native_jobs=native_jobs,
        context=dict(context or {}),
    )
    if native:
        if not is_trace(base):
            raise SchedlabError(
                "--loads native: only a trace has its own arrival times; give loads for a "
                "synthetic workload (e.g. --loads 0.5:0.9:0.1)"
            )
        the_plan.native = native_load(the_plan, family)
        the_plan.loads = sorted({*loads, the_plan.native})
    candidates = [p for p in registered() if family in p.families]
    if only:
        unknown = sorted(set(only) - {p.name for p in candidates})
        if unknown:
            raise SchedlabError(f"--policy: not a {family}-family policy: {', '.join(unknown)}")
        candidates = [p for p in candidates if p.name in only]
    if not candidates:
        raise SchedlabError(f"no policy belongs to the family '{family}'")
    estimating = []  # policies that use the jobs' requested times
    trace = None  # the replayed table, if any
    for policy in candidates:
        try:
            model = _with_context(the_plan, policy.name)
        except SpecError as exc:
            the_plan.skipped.append(Skipped(policy.name, str(exc).splitlines()[0]))
            continue
        the_plan.k = int(model.pooled_k) if model.family == "pooled" else model.n_servers
        if model.trace is not None:
            the_plan.jobs = model.trace_jobs()
        limit = policy.hooks.max_default_k
        if not only and limit is not None and the_plan.k > limit:
            the_plan.left_out[policy.name] = f"above k = {limit:,}"
            continue
        limit = policy.hooks.max_default_sizes
        if not only and limit is not None and model.trace is not None:
            the_plan.sizes = the_plan.sizes or distinct_sizes(model.trace)
            if the_plan.sizes > limit:
                the_plan.left_out[policy.name] = f"above {limit:,} sizes"
                continue
        the_plan.policies.append(policy.name)
        traits = policy.traits_at(model.config)
        if is_trace(base) and not all_policies and not traits.batch_runnable:
            the_plan.idealized.append(policy.name)
        if traits.size_knowledge == "estimate":
            estimating.append(policy.name)
        trace = model.trace or trace
    if estimating and trace is not None and trace.n_estimates < trace.n_rows:
        the_plan.warnings.append(
            f"{trace.n_rows - trace.n_estimates:,} of the trace's {trace.n_rows:,} jobs have no "
            f"requested time: {', '.join(estimating)} expect their actual run time instead "
            "(counted in jobs_without_requested_time)"
        )
    if not the_plan.policies and the_plan.left_out:
        raise SchedlabError(the_plan.left_out_line())
    if not the_plan.policies:
        distinct = sorted({s.reason for s in the_plan.skipped})
        reasons = (
            f"all {len(the_plan.skipped)} refuse it: {distinct[0]}"
            if len(distinct) == 1
            else "; ".join(f"{s.policy}: {s.reason}" for s in the_plan.skipped)
        )
        raise SchedlabError(
            f"no {family}-family policy accepts this workload ({reasons}); "
            "is --family the right one?"
        )
    _add_bounds(the_plan)
    return the_plan


def _with_context(the_plan: Plan, policy: str) -> Any:
    """The policy's model at the log's own load (else the first), with the calibrated context's
    options its config has; an option its check refuses (e.g. a queue order for conservative
    backfilling) is dropped and the model compiled again (``Plan.options`` keeps the rest)."""
    from schedlab.experiments.calibrate import accepted, refused
    from schedlab.model.compile import compile_model

    taken = accepted(policy, the_plan.context)
    while True:
        the_plan.options[policy] = taken
        try:
            load = the_plan.native if the_plan.native is not None else the_plan.loads[0]
            return compile_model(the_plan.spec(policy, load))
        except SpecError as exc:
            name = refused(exc, taken)
            if name is None:
                raise
            taken = {k: v for k, v in taken.items() if k != name}


def distinct_sizes(trace: Any) -> int:
    """Distinct (server need, duration) pairs of a trace's jobs (the atoms of its size laws)."""
    import numpy as np

    pairs = [
        np.unique(np.column_stack([cols.demand[:, 0], cols.duration]), axis=0)
        for cols in trace.batches()
    ]
    return int(np.unique(np.concatenate(pairs), axis=0).shape[0]) if pairs else 0


def native_load(p: Plan, family: str) -> float:
    """The offered load of the trace replayed at its own arrival times (model/compile.py)."""
    from schedlab.model.compile import compile_model
    from schedlab.policies.registry import all_policies

    candidates = [q.name for q in all_policies() if family in q.families]
    for policy in candidates:  # the load does not depend on the policy: the first that compiles
        try:
            return float(compile_model(p.spec(policy, None)).load)
        except SpecError:
            continue
    raise SchedlabError(f"no {family}-family policy accepts this trace")


def _fixed(dist: dict[str, Any] | None) -> float | None:
    return float(dist["value"]) if dist and dist.get("dist") == "fixed" else None


def _add_bounds(p: Plan) -> None:
    workload = p.base["workload"]
    poisson = workload.get("arrivals", {}).get("process", "poisson") == "poisson"
    classes = workload.get("classes", [])
    if not poisson or not classes:
        p.notes.append(
            "no analytic bound: the bounds need Poisson arrivals and job classes (not a trace)"
        )
        return
    if p.family == "pooled":
        _pooled_bounds(p, classes)
    elif p.family == "packing":
        _packing_limit(p, classes)


def _pooled_bounds(p: Plan, classes: list[dict[str, Any]]) -> None:
    from schedlab.analysis.saturated import fcfs_saturated
    from schedlab.analysis.theorem41 import theorem41_bounds
    from schedlab.model.compile import compile_model

    if any(c.get("speedup", "rigid") != "rigid" for c in classes):
        p.notes.append("SRPT-1 and Theorem 4.1 are stated for rigid jobs: not drawn")
        return
    lower, upper = {}, {}
    try:
        for load in p.loads:
            if load >= 1:
                continue
            b = theorem41_bounds(compile_model(p.spec(p.policies[0], load)))
            lower[load] = b.lower
            if b.covered:
                upper[load] = b.upper
    except (ValueError, SpecError) as exc:
        p.notes.append(f"SRPT-1 bound not computed: {exc}")
    if lower:
        p.bounds.append(
            BoundCurve("SRPT-1, M/G/1-SRPT formula", lower, "no policy has a lower E[T] (§4.1)")
        )
    if upper:
        p.bounds.append(
            BoundCurve(
                "Theorem 4.1 bound on ServerFilling-SRPT",
                upper,
                "ServerFilling-SRPT's E[T] is at most this (grosof2023 Theorem 4.1)",
            )
        )
    needs = [_fixed(c.get("need")) for c in classes]
    exponential = all(c["duration"].get("dist") == "exponential" for c in classes)
    k = p.base["cluster"].get("servers")
    if k and exponential and all(n is not None and n == int(n) for n in needs):
        rates = [1.0 / c["duration"]["mean"] for c in classes]
        probs = [c.get("probability", 1.0) for c in classes]
        try:
            limit = fcfs_saturated(int(k), [int(n) for n in needs], probs, rates).load_limit
        except ValueError as exc:
            p.notes.append(f"FCFS's rho* not computed: {exc}")
            return
        p.limits.append(
            LoadLimit("FCFS", limit, "FCFS is stable exactly below it, from its saturated system")
        )


def _packing_limit(p: Plan, classes: list[dict[str, Any]]) -> None:
    from schedlab.optim.capacity_lp import max_workload

    cluster = p.base["cluster"]
    sizes = [_fixed(c.get("demand")) for c in classes]
    capacity = cluster.get("capacity", 1.0)
    if cluster.get("servers") is None or not isinstance(capacity, int | float):
        p.notes.append("capacity LP not computed: it needs identical one-resource servers")
        return
    if any(s is None for s in sizes):
        p.notes.append("capacity LP not computed: it needs fixed (finite-type) demands")
        return
    probs = [c.get("probability", 1.0) for c in classes]
    try:
        lp = max_workload(sizes, probs, servers=int(cluster["servers"]), capacity=float(capacity))
    except ValueError as exc:
        p.notes.append(f"capacity LP not computed: {exc}")
        return
    p.limits.append(
        LoadLimit(
            "capacity LP",
            lp.traffic_intensity,
            "no policy is stable above this load (psychas2019 eq. (4))",
        )
    )


def jobs_covered(base: dict[str, Any]) -> str:
    """Which jobs the comparison's runs cover, in words, for its tables and figures (issue 43
    item 4): a trace's rows (its window of the converted log, if it was cut to one, and the
    prefix that ``--arrivals`` keeps, in arrival order); a model's arrivals per run and its
    warm-up."""
    run = base["run"]
    arrivals = run.get("arrivals")
    if not is_trace(base):
        length = f"{arrivals:,} arrivals" if arrivals else f"a horizon of {run.get('horizon'):g}"
        warmup = float(run.get("warmup", 0.1))
        return f"{length} per run, the first {warmup:.0%} a warm-up" if warmup else length
    import pyarrow.parquet as pq

    from schedlab.workloads.traces.canonical import get_meta

    path = base["workload"]["arrivals"]["path"]
    rows = pq.ParquetFile(path).metadata.num_rows
    window = ""
    for step in get_meta(pq.read_schema(path)).get("transforms", []):
        if step.get("name") == "window_jobs":
            first = int(step["start"]) + 1
            window = f" (jobs {first:,} to {first + rows - 1:,} of the converted log)"
        elif step.get("name") == "window_time":
            window = f" (those arriving in [{step['start']:g}, {step['end']:g}) s of the log)"
    if arrivals is not None and arrivals < rows:
        return f"the first {arrivals:,} of the table's {rows:,} jobs{window}, in arrival order"
    return f"all {rows:,} jobs of the table{window}"


BYTES_PER_LOG_JOB = 1_000.0
"""Memory per job of a log, per process: a replay holds the trace's columns and streams its
per-job table (about 100 bytes per job measured: 312 MB peak RSS at 1,000 jobs, 342 MB at
300,000, on the Curie-sized log of benchmarks/bench_compare_logs.py), and compare's own process
reads one run's per-job table at a time for the log check and the jobs output; rounded up
tenfold, as model/budget.py's figures are pessimistic."""


def memory_need(p: Plan, workers: int) -> tuple[float, float]:
    """Bytes a comparison of a log holds at once (``workers`` replays and compare's own process,
    each the base of model/budget.py, its log jobs and k servers), and per process."""
    from schedlab.model.budget import BASE_BYTES, BYTES_PER_SERVER

    per_process = BASE_BYTES + BYTES_PER_LOG_JOB * p.jobs + BYTES_PER_SERVER * p.k
    return (workers + 1) * per_process, per_process


def check_memory(p: Plan, workers: int, budget_gib: float | None, path: Path) -> None:
    """Refuse, in one line before any run, a log whose replay does not fit ``budget_gib`` (None:
    model/budget.py's memory budget, the one every run is checked against); a synthetic
    workload's runs are checked by model/budget.py."""
    from schedlab.model.budget import MemoryBudget, memory_budget

    if not p.jobs:
        return
    need, per_process = memory_need(p, workers)
    budget = (
        memory_budget()
        if budget_gib is None
        else MemoryBudget(budget_gib * 2**30, "--memory-budget")
    )
    if need > budget.bytes:
        raise SchedlabError(
            f"{path}: replaying {p.jobs:,} jobs on k = {p.k:,} with {workers} worker(s) needs "
            f"about {need / 2**30:.3g} GiB ({workers + 1} processes x "
            f"{per_process / 2**30:.3g} GiB), more than {budget.says()}; give --memory-budget "
            "GIB, fewer --workers or --arrivals N"
        )
