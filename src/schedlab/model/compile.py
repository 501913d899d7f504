"""Turn a validated spec into a runnable model: resources, capacity matrix, classes, arrival rate.

Load (one definition for all three families, documented in docs/models.md): the offered load of
resource r is

    rho_r = lambda * sum_c p_c E[demand_{c,r}] E[duration_c] / sum_l capacity_{l,r}

and ``load`` is the bottleneck max_r rho_r. For the pooled family this is grosof2023's
rho = lambda E[S] with S = K D / k (§3.1) and berg2020's (lambda_I/mu_I + lambda_E/mu_E)/k; for
the packing family it is psychas2019's traffic intensity alpha = lambda R_bar / (mu L) (§VII-A3);
for the loss family it is the offered resource load (psychas2022's sum_j rho_j b_j / c).
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ValidationError

from schedlab.errors import SpecError
from schedlab.model.budget import check_arrays, check_budget
from schedlab.model.distributions import Fixed, _Dist
from schedlab.model.spec import (
    Family,
    JobClassSpec,
    SimulationSpec,
    _format_loc,
)
from schedlab.policies.user_code import call_policy
from schedlab.policy_api.context import JobClass, PolicyContext, TraceView
from schedlab.policy_api.contract import Policy
from schedlab.workloads.batch_vectors import BatchVector, class_shares, vector_table

if TYPE_CHECKING:  # a trace (and pyarrow) loads when a spec replays one (issue 33)
    from schedlab.workloads.trace_table import TraceTable

POOLED_RESOURCE = "servers"
SCALAR_RESOURCE = "resource"


@dataclass(frozen=True)
class CompiledClass:
    name: str
    probability: float
    demand: tuple[_Dist, ...]  # one distribution per resource
    duration: _Dist
    elastic: bool
    max_alloc: float
    reward: float


@dataclass(frozen=True)
class CompiledModel:
    """Everything the engine and the job generator need, derived from a SimulationSpec."""

    spec: SimulationSpec
    family: Family
    slotted: bool
    delta: float
    resources: tuple[str, ...]
    capacity: np.ndarray  # (L, R)
    classes: tuple[CompiledClass, ...]
    rate: float  # arrivals per time unit
    load: float  # bottleneck offered load
    load_by_resource: dict[str, float]
    policy: Policy
    config: BaseModel  # the policy's validated settings (PolicyConfig)
    trace: TraceTable | None = None
    notes: list[str] = field(default_factory=list)

    def trace_jobs(self) -> int:
        """How many of the trace's jobs this run replays (rescaled to the model's rate,
        truncated to run.arrivals and run.horizon), counted over the table's row groups."""
        assert self.trace is not None
        run = self.spec.run
        keep = self.trace.n_rows
        if run.arrivals is not None:
            keep = min(keep, run.arrivals)
        if run.horizon is not None:
            scale = self.trace.rate / self.rate
            before = sum(
                int(np.searchsorted(cols.arrival * scale, run.horizon, side="right"))
                for cols in self.trace.batches()
            )
            keep = min(keep, before)
        return keep

    @functools.cached_property
    def context(self) -> PolicyContext:
        """What the policy is told about this model (built once; policy_api/context.py)."""
        declared = self.spec.workload.classes  # compiled in this order
        trace = None
        if self.trace is not None:
            trace = TraceView(
                needs=self.trace.needs,
                has_job_class=self.trace.has_job_class,
                jobs_with_estimate=self.trace.n_estimates,
                users=self.trace.users,
                replayed_demand=functools.partial(replayed_demand, self),
                demand_batches=functools.partial(replayed_demand_batches, self),
            )
        return PolicyContext(
            policy_name=self.policy.name,
            preset=dict(self.policy.preset),
            family=self.family,
            slotted=self.slotted,
            decision_interval=self.delta,
            resources=self.resources,
            capacity=self.capacity,
            classes=tuple(
                JobClass(
                    name=c.name,
                    probability=c.probability,
                    demand=c.demand,
                    duration=c.duration,
                    elastic=c.elastic,
                    max_alloc=c.max_alloc,
                    reward=c.reward,
                    declared_inelastic=i < len(declared) and declared[i].speedup == "inelastic",
                )
                for i, c in enumerate(self.classes)
            ),
            classes_declared=bool(declared),
            rate=self.rate,
            load=self.load,
            seed=self.spec.run.seed,
            trace=trace,
        )

    @property
    def n_servers(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def pooled_k(self) -> float:
        """Total capacity of the pooled server (k unit servers)."""
        return float(self.capacity[0, 0])


def replayed_demand(model: CompiledModel) -> np.ndarray:
    """The demand rows of the trace jobs a run of ``model`` replays."""
    return np.concatenate(list(replayed_demand_batches(model)))


def replayed_demand_batches(model: CompiledModel) -> Iterator[np.ndarray]:
    """The same rows, batch by batch as the table is read (memory: one batch)."""
    assert model.trace is not None
    left = model.trace_jobs()
    for cols in model.trace.batches():
        if left <= 0:
            return
        yield cols.demand[:left]
        left -= cols.demand.shape[0]


def _cluster(spec: SimulationSpec, family: Family) -> tuple[tuple[str, ...], np.ndarray]:
    c = spec.cluster
    if family == "pooled":
        if c.pools is not None or c.capacity is not None:
            raise SpecError(
                "the pooled family takes servers = k (k unit servers pooled); "
                "capacities and pools belong to the packing and loss families",
                field="cluster",
            )
        return (POOLED_RESOURCE,), np.array([[float(c.servers)]])
    pools = c.pools if c.pools is not None else None
    rows: list[tuple[int, float | dict[str, float]]]
    if pools is None:
        rows = [(int(c.servers), c.capacity if c.capacity is not None else 1.0)]  # type: ignore[arg-type]
    else:
        rows = [(p.count, p.capacity) for p in pools]
    dicts = [isinstance(cap, dict) for _, cap in rows]
    if any(dicts) and not all(dicts):
        raise SpecError("either every pool names its resources or none does", field="cluster.pools")
    if all(dicts):
        names = tuple(rows[0][1])  # type: ignore[arg-type]
        for i, (_, cap) in enumerate(rows):
            if set(cap) != set(names):  # type: ignore[arg-type]
                raise SpecError(
                    f"resources {sorted(cap)} differ from the first pool's {sorted(names)}",  # type: ignore[arg-type]
                    field=f"cluster.pools[{i}].capacity",
                )
        capacity = np.array(
            [[cap[r] for r in names] for count, cap in rows for _ in range(count)],  # type: ignore[index]
            dtype=float,
        )
        return names, capacity
    capacity = np.array([[cap] for count, cap in rows for _ in range(count)], dtype=float)
    return (SCALAR_RESOURCE,), capacity


def _class_demand(
    cls: JobClassSpec, i: int, family: Family, resources: tuple[str, ...], k: float
) -> tuple[tuple[_Dist, ...], bool, float]:
    where = f"workload.classes[{i}]"
    if family == "pooled":
        if cls.demand is not None:
            raise SpecError(
                "pooled jobs give their server need as need = ...", field=f"{where}.demand"
            )
        if cls.speedup == "rigid":
            if cls.need is None:
                raise SpecError(
                    "a rigid pooled job needs need = <number of servers>", field=f"{where}.need"
                )
            values = cls.need.values()
            lo, hi = cls.need.support
            if not cls.need.integer:
                raise SpecError("server needs must be whole numbers", field=f"{where}.need")
            if lo < 1:
                raise SpecError("server needs must be at least 1", field=f"{where}.need")
            if hi > k:
                bad = hi if values is None else values[values > k].min()
                raise SpecError(
                    f"need {bad:g} is larger than the {k:g} servers of the cluster",
                    field=f"{where}.need",
                )
            return (cls.need,), False, 1.0
        cap = 1.0 if cls.speedup == "inelastic" else (cls.max_alloc or k)
        if cap > k:
            raise SpecError(
                f"max_alloc {cap:g} exceeds the {k:g} servers", field=f"{where}.max_alloc"
            )
        return (Fixed(value=1.0),), True, float(cap)
    if cls.need is not None:
        raise SpecError(
            f"the {family} family gives resource demands as demand = ...", field=f"{where}.need"
        )
    if cls.speedup != "rigid":
        raise SpecError(
            f"the {family} family is non-preemptive with rigid jobs; elastic jobs belong to the "
            "pooled family",
            field=f"{where}.speedup",
        )
    if cls.demand is None:
        raise SpecError("missing required field", field=f"{where}.demand")
    if isinstance(cls.demand, dict):
        if resources == (SCALAR_RESOURCE,):
            raise SpecError(
                "the cluster has a single unnamed resource: give demand as a number or a "
                "distribution (or name the resources in the cluster's capacity)",
                field=f"{where}.demand",
            )
        for name in cls.demand:
            if name not in resources:
                guess = difflib.get_close_matches(name, resources, n=1)
                hint = f" (did you mean '{guess[0]}'?)" if guess else ""
                raise SpecError(
                    f"unknown resource '{name}'{hint}; the cluster has {', '.join(resources)}",
                    field=f"{where}.demand.{name}",
                )
        dists = tuple(cls.demand.get(r, Fixed(value=0.0)) for r in resources)
    else:
        if len(resources) != 1:
            raise SpecError(
                f"the cluster has resources {', '.join(resources)}: give demand as a table "
                "{ " + ", ".join(f"{r} = ..." for r in resources) + " }",
                field=f"{where}.demand",
            )
        dists = (cls.demand,)
    return dists, False, 1.0


def _check_fits_somewhere(
    dists: tuple[_Dist, ...], capacity: np.ndarray, where: str, resources: tuple[str, ...]
) -> None:
    """Refuse a class none of whose jobs can fit on any server (even its smallest demand)."""
    smallest = np.array([d.support[0] for d in dists])
    if not np.any(np.all(smallest[None, :] <= capacity + 1e-12, axis=1)):
        need = ", ".join(f"{r}={v:g}" for r, v in zip(resources, smallest, strict=True))
        raise SpecError(
            f"demand ({need}) is larger than every server's capacity", field=f"{where}.demand"
        )
    for r, d in enumerate(dists):
        if d.support[0] < 0:
            raise SpecError("demands must be >= 0", field=f"{where}.demand.{resources[r]}")


def _check_trace_classes(trace: TraceTable, classes: tuple[CompiledClass, ...]) -> None:
    """A trace with declared classes: the table's job_class column names each job's class
    (0-based), and each class has a fixed demand (a job takes its class's demand and reward)."""
    where = "workload.arrivals.path"
    if not trace.has_job_class:
        raise SpecError(
            f"{trace.path}: declared classes need a job_class column in the job table", field=where
        )
    lo, hi = trace.job_class_range
    if lo < 0 or hi >= len(classes):
        seen = 0
        for cols in trace.batches():  # the first bad row, in arrival order
            bad = (cols.job_class < 0) | (cols.job_class >= len(classes))
            if bad.any():
                row = int(np.argmax(bad))
                raise SpecError(
                    f"{trace.path}: row {seen + row + 1}: job_class {int(cols.job_class[row])} "
                    f"is not one of the {len(classes)} declared classes",
                    field=where,
                )
            seen += cols.job_class.size
    for i, c in enumerate(classes):
        if any(d.support[0] != d.support[1] for d in c.demand):
            raise SpecError(
                "with a trace, a declared class needs a fixed demand",
                field=f"workload.classes[{i}].demand",
            )


def _policy(spec: SimulationSpec) -> tuple[Policy, BaseModel]:
    from schedlab.policies.registry import get_policy

    policy = get_policy(spec.policy.name)
    try:
        params = policy.kernels.config.model_validate({**policy.preset, **spec.policy.params})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = _format_loc(tuple(err["loc"]))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            known = sorted(policy.kernels.config.model_fields)
            msg = f"unknown parameter of policy '{policy.name}'" + (
                f"; it takes {', '.join(known)}" if known else "; it takes no parameters"
            )
        raise SpecError(msg, field=f"policy.{loc}") from None
    return policy, params


def offered_load(
    classes: tuple[CompiledClass, ...],
    capacity: np.ndarray,
    rate: float,
    resources: tuple[str, ...],
) -> dict[str, float]:
    """rho_r for each resource (module docstring)."""
    work = np.zeros(len(resources))
    for c in classes:
        for r, d in enumerate(c.demand):
            work[r] += c.probability * d.mean * c.duration.mean
    total = capacity.sum(axis=0)
    return {name: float(rate * work[r] / total[r]) for r, name in enumerate(resources)}


MAX_BATCH = 10**9


def _check_batch_sizes(dist: Any, per_slot_mean: float | None) -> None:
    """Batch sizes are whole numbers; per-slot counts (slotted time) must stay whole numbers when
    rescaled to the mean the load needs."""
    if not dist.integer:
        raise SpecError("batch sizes must be whole numbers", field="workload.arrivals.batch_size")
    if dist.mean > MAX_BATCH:
        raise SpecError(
            f"batches of {dist.mean:.3g} jobs on average (more than {MAX_BATCH:,}) cannot be "
            "simulated: one batch would not fit in memory",
            field="workload.arrivals.batch_size",
        )
    if per_slot_mean is None and not dist.mean > 0:
        raise SpecError(
            "batches in continuous time need a mean size > 0 (0 is only a per-slot count)",
            field="workload.arrivals.batch_size",
        )
    if per_slot_mean is None or math.isclose(dist.mean, per_slot_mean, rel_tol=1e-12):
        return
    if not dist.with_mean(per_slot_mean).integer:
        raise SpecError(
            f"this batch_size distribution has mean {dist.mean:g} but the load needs "
            f"{per_slot_mean:g} jobs per batch and it cannot be rescaled keeping whole numbers; "
            "give rate/load consistent with it, or use dist = 'poisson'/'geometric'",
            field="workload.arrivals.batch_size",
        )


def _vector_shares(
    vectors: list[BatchVector], classes: list[CompiledClass], slotted: bool
) -> list[CompiledClass]:
    """With batch vectors (psychas2018 Corollary 5.3) a class's share of the arriving VMs is
    sum_v v_j p_v / E|v| (eq. (47) over the request rate), so ``workload.rate`` (VMs per unit
    time) and ``load`` keep their meaning: lambda_j = rate * share_j."""
    if slotted:
        raise SpecError(
            "batch vectors are requests in continuous time (Corollary 5.3); use "
            "model.time = 'continuous'",
            field="workload.arrivals.vectors",
        )
    shares = class_shares(vector_table(vectors, [c.name for c in classes]))
    return [replace(c, probability=float(p)) for c, p in zip(classes, shares, strict=True)]


def compile_model(spec: SimulationSpec) -> CompiledModel:
    """Validate a spec across sections and derive the model arrays. Raises SpecError."""
    policy, params = _policy(spec)
    family: Family = spec.model.family or policy.family
    if family not in policy.families:
        raise SpecError(
            f"policy '{policy.name}' serves the {', '.join(policy.families)} family, not {family}",
            field="model.family",
        )
    check_arrays(spec)  # before the cluster's arrays are built
    resources, capacity = _cluster(spec, family)
    k = float(capacity[0, 0]) if family == "pooled" else math.nan
    slotted = spec.model.time == "slotted"
    wl = spec.workload
    trace = None
    classes: list[CompiledClass] = []
    if wl.arrivals.process == "trace":
        from schedlab.workloads.trace_table import read_trace_table

        trace = read_trace_table(
            wl.arrivals.path,
            family=family,
            resources=resources,  # type: ignore[arg-type]
            capacity=capacity,
            field="workload.arrivals.path",
        )
        if spec.run.arrivals is not None:  # the replayed prefix's own load (issue 43 item 4)
            trace = trace.prefix(spec.run.arrivals)
    if trace is not None and not wl.classes:
        classes = [
            CompiledClass(
                name="trace",
                probability=1.0,
                demand=tuple(Fixed(value=float(m)) for m in trace.mean_demand),
                duration=Fixed(value=float(trace.mean_duration)),
                elastic=False,
                max_alloc=1.0,
                reward=1.0,
            )
        ]
    else:
        for i, cls in enumerate(wl.classes):
            dists, elastic, cap = _class_demand(cls, i, family, resources, k)
            if family != "pooled":
                _check_fits_somewhere(dists, capacity, f"workload.classes[{i}]", resources)
            where = f"workload.classes[{i}].duration"
            try:
                mean = cls.duration.mean
                _ = cls.duration.second_moment, [(d.mean, d.second_moment) for d in dists]
            except ValueError as exc:
                raise SpecError(str(exc), field=where) from None
            except OverflowError:
                raise SpecError(
                    "its moments (or a demand's) overflow: the values are too large", field=where
                ) from None
            if not mean > 0 or not math.isfinite(mean):
                raise SpecError("durations need a finite mean > 0", field=where)
            if slotted and (not cls.duration.integer or cls.duration.support[0] < 1):
                raise SpecError(
                    "slotted time needs whole-slot durations >= 1 (e.g. dist = 'geometric' or "
                    "'fixed' with an integer value)",
                    field=where,
                )
            classes.append(
                CompiledClass(
                    name=cls.name or f"class{i}",
                    probability=cls.probability,
                    demand=dists,
                    duration=cls.duration,
                    elastic=elastic,
                    max_alloc=cap,
                    reward=cls.reward,
                )
            )
        names = [c.name for c in classes]
        if len(set(names)) != len(names):
            raise SpecError("class names must be distinct", field="workload.classes")
        if trace is not None:
            _check_trace_classes(trace, tuple(classes))
        if wl.arrivals.vectors is not None:
            classes = _vector_shares(wl.arrivals.vectors, classes, slotted)
    if slotted:
        arr = wl.arrivals
        if arr.process not in ("poisson", "batch") or arr.interarrival is not None:
            raise SpecError(
                "slotted time takes per-slot counts: process = 'poisson' or 'batch' with "
                "batch_size (the count per slot), and no interarrival",
                field="workload.arrivals",
            )
    one_job_work = offered_load(tuple(classes), capacity, 1.0, resources)
    bottleneck = max(one_job_work.values())
    if trace is not None:
        base_rate = trace.rate
        rate = base_rate if wl.load is None else wl.load / bottleneck
        if wl.load is not None and wl.arrivals.time_scale != 1.0:
            raise SpecError(
                "give either load or time_scale for a trace, not both",
                field="workload.arrivals.time_scale",
            )
        if wl.load is None:
            rate = base_rate / wl.arrivals.time_scale
    elif wl.rate is not None:
        rate = wl.rate
    else:
        rate = float(wl.load) / bottleneck if bottleneck > 0 else math.inf  # type: ignore[arg-type]
    which = "workload.load" if wl.load is not None else "workload.rate"
    if not (0 < rate < math.inf and 0 < 1.0 / rate < math.inf):
        raise SpecError(
            f"arrival rate {rate:.4g} per time unit cannot be simulated: it needs a finite, "
            "nonzero mean time between arrivals (at least one job must need some resource)",
            field=which,
        )
    if wl.arrivals.process == "batch" and wl.arrivals.batch_size is not None:
        _check_batch_sizes(wl.arrivals.batch_size, rate if slotted else None)
    loads = {r: v * rate for r, v in one_job_work.items()}
    load = max(loads.values())
    if family != "loss" and load >= 1.0 and not spec.run.allow_unstable:
        raise SpecError(
            f"load {load:.4g} >= 1: the offered work exceeds the cluster's capacity, so no policy "
            "has a steady state; set run.allow_unstable = true (CLI: --allow-unstable) to "
            "simulate it anyway",
            field=which,
        )
    check_budget(
        spec,
        rate,
        None if trace is None else trace.n_rows,
        load=load,
        whole_run=policy.name if policy.hooks.whole_run else None,
        loss=family == "loss",
        resources=len(resources),
    )
    model = CompiledModel(
        spec=spec,
        family=family,
        slotted=slotted,
        delta=1.0 if slotted else spec.model.decision_interval,
        resources=resources,
        capacity=capacity,
        classes=tuple(classes),
        rate=rate,
        load=load,
        load_by_resource=loads,
        policy=policy,
        config=params,
        trace=trace,
    )
    if trace is not None and model.trace_jobs() == 0:
        raise SpecError("no trace job arrives within run.horizon", field="run.horizon")
    call_policy(policy.name, policy.hooks.check, model.context, params)
    return model
