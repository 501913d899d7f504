"""``schedlab.simulate(spec) -> Result``: compile the spec, stream the jobs through the engine.

The jobs come from :class:`~schedlab.simulation.generate.JobSource` in blocks of ``BLOCK``; the
compiled loop returns to Python when the block is used up (refill), when every job slot is taken
(grow the engine's and the policy's per-slot arrays by doubling) or when the per-job output buffer
is full (write a Parquet row group), and resumes where it stopped (decision 0003). The engine
session (engine/session.py, decision 0019) serves these requests; this module builds it from the
model.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedlab._jit import compile_for
from schedlab.engine import constants as K
from schedlab.engine.session import EngineSession
from schedlab.engine.state import EngineSettings, RunWindow, State, build_state
from schedlab.errors import InvariantViolation, PolicyError
from schedlab.measurement.capacity import CapacitySweep, SweepingWriter
from schedlab.measurement.jobs_output import JobsWriter, jobs_path
from schedlab.measurement.metrics import BACKLOG, Estimate, compute_metrics
from schedlab.measurement.reliability import short_run
from schedlab.model.compile import CompiledModel
from schedlab.model.spec import SimulationSpec, load_spec, parse_spec
from schedlab.policies.user_code import call_policy
from schedlab.simulation.generate import Jobs, JobSource, concatenate
from schedlab.simulation.result import Result, combine_replications
from schedlab.simulation.stability_limits import limit_verdict

EVENTS_PER_CHUNK = 2_000_000
BLOCK = 1 << 16  # jobs the engine holds ready to arrive (any value gives the same run)
SLOTS = 1 << 10  # initial job slots (doubled when more jobs are present at once)
JOBS_CHUNK = 1 << 16  # per-job records per Parquet row group (run.jobs)
PREEMPT_MODE = {"pooled": K.PREEMPT_RESUME, "packing": K.PREEMPT_NONE, "loss": K.PREEMPT_DROP}

Progress = Callable[[int, int], None]  # (arrivals processed, total arrivals)


def as_spec(spec: SimulationSpec | dict[str, Any] | str | Path) -> SimulationSpec:
    if isinstance(spec, SimulationSpec):
        return spec
    if isinstance(spec, dict):
        return parse_spec(spec)
    return load_spec(spec)


def with_run(spec: SimulationSpec, **changes: Any) -> SimulationSpec:
    """A copy of ``spec`` with [run] fields replaced (None values are ignored), revalidated."""
    changes = {k: v for k, v in changes.items() if v is not None}
    if not changes:
        return spec
    data = spec.model_dump(by_alias=True, exclude_unset=True)
    run = dict(data.get("run", {}))
    if "arrivals" in changes:
        run.pop("horizon", None)
    if "horizon" in changes:
        run.pop("arrivals", None)
    run.update(changes)
    data["run"] = run
    return parse_spec(data)


def simulate_model(model: CompiledModel, *, progress: Progress | None = None) -> Result:
    """Run every replication of an already compiled model."""
    reps = [run_model(model, r, progress=progress) for r in range(model.spec.run.replications)]
    return reps[0] if len(reps) == 1 else combine_replications(reps)


def engine_settings(model: CompiledModel, *, reuse_slots: bool) -> EngineSettings:
    run = model.spec.run
    return EngineSettings(
        preempt_mode=PREEMPT_MODE[model.family],
        migrate_ok=model.family == "loss",
        loss=model.family == "loss",
        delta=model.delta,
        check=run.check,
        drain=run.drain,
        batches=run.batches,
        timeseries=run.timeseries,
        slowdown_threshold=run.slowdown_threshold,
        reuse_slots=reuse_slots,
        jobs_chunk=JOBS_CHUNK if run.jobs or sweeps_capacity(model) else 0,
        few_running=few_running(model),
        waiting_list=model.policy.hooks.waiting_list or model.family == "loss",
        quantiles=run.quantiles,
    )


def sweeps_capacity(model: CompiledModel) -> bool:
    """A finite replay of rigid jobs on k pooled servers, drained: it has a makespan, and its
    utilization over it and its loss of capacity (measurement/capacity.py) are measured from the
    per-job records as they leave (the engine's per-job buffer, also without ``run.jobs``)."""
    return (
        model.trace is not None
        and model.family == "pooled"
        and not model.policy.hooks.resource_pooled
        and not any(c.elastic for c in model.classes)
        and model.spec.run.drain
    )


FEW_RUNNING = 16  # running jobs up to which a scan finds the next departure faster than a heap


def few_running(model: CompiledModel) -> bool:
    """At most FEW_RUNNING jobs can run at once: rigid jobs of a pooled model, k servers, each
    job holding at least the smallest server need (the engine then finds the next departure by
    scanning the running jobs, structures.py; any number still works, only slower)."""
    if model.family != "pooled" or model.policy.hooks.resource_pooled:
        return False
    if any(c.elastic for c in model.classes):
        return False
    smallest = float(model.context.need_values().min(initial=np.inf))  # the needs policies see
    return smallest > 0 and model.pooled_k / smallest <= FEW_RUNNING


@dataclass
class Run:
    """One replication in progress: its engine session (engine and policy states, job feed,
    per-job output) and measurement window."""

    model: CompiledModel
    session: EngineSession
    window: RunWindow
    capacity: SweepingWriter | None = None  # the session's writer when it measures capacity

    @property
    def writer(self) -> JobsWriter | None:
        """The per-job output (run.jobs), or None."""
        if self.capacity is not None:
            return self.capacity.jobs
        return self.session.writer  # type: ignore[return-value]

    @property
    def st(self) -> State:
        """The engine state now (a new object after the slots grow)."""
        return self.session.st

    @property
    def ps(self) -> Any:
        """The policy state now (a new object after the slots grow)."""
        return self.session.ps

    @ps.setter
    def ps(self, value: Any) -> None:  # tests and audits put a state of their own in
        self.session.ps = value


def prepare(
    model: CompiledModel,
    replication: int = 0,
    *,
    block: int = BLOCK,
    slots: int = SLOTS,
    jobs: Jobs | None = None,
    action_log: int = 0,
) -> Run:
    """The initial engine and policy states of one replication, with its job feed.

    Policies whose state is per slot (every policy but those marked ``whole_run``) start with
    ``slots`` job slots, reused and doubled as needed, and a block of ``block`` jobs to arrive.
    ``whole_run`` policies see the whole job sequence at once (slot = arrival number, decision
    0003 §4): memory grows with the run.
    ``jobs``: run these jobs instead of the model's job sequence (tests, hand-made instances);
    ``action_log``: rows of the engine's action log (0: off; schedlab.online.actions_of reads it,
    differential tests)."""
    streaming = not model.policy.hooks.whole_run
    settings = engine_settings(model, reuse_slots=streaming)
    if action_log:
        settings = replace(settings, action_log=action_log)
    if jobs is None:
        source = JobSource(model, model.spec.run.seed, replication)
        w = source.window()
        window = RunWindow(w.n_jobs, w.warm_jobs, w.t_warm, w.t_end)
        units: Iterator[Jobs] = source.units()
    else:
        n = len(jobs)
        warm = min(int(model.spec.run.warmup * n), n - 1)
        window = RunWindow(n, warm, float(jobs.arrival[warm]), float(jobs.arrival[-1]))
        units = iter([jobs])
    everything = None
    if not streaming:
        everything = concatenate(list(units))
        units = iter([everything])
        slots = block = len(everything)
    session = EngineSession(
        new_state(model, settings, window, slots=slots, block=block),
        model.policy.kernels,
        lambda st: init_policy(st, model, replication),
        call=functools.partial(call_policy, model.policy.name),
        jobs=units,
        every_job=everything,  # the policy's init sees every job in its slot
    )
    run = Run(model=model, session=session, window=window)
    if model.spec.run.jobs:
        from schedlab.workloads.trace_table import LoggedJobs  # pyarrow: loaded when used

        names = tuple(c.name for c in model.classes)
        target = jobs_path(model.spec.run.jobs, replication)
        logged = LoggedJobs.of(model.trace) if model.trace is not None else None
        session.writer = JobsWriter(target, names, model.resources, logged)
    if sweeps_capacity(model):
        sweep = CapacitySweep(k=float(session.st.capacity.sum(axis=0)[0]), t0=window.t_warm)
        run.capacity = SweepingWriter(sweep, session.writer)
        session.writer = run.capacity
    return run


def new_state(
    model: CompiledModel, settings: EngineSettings, window: RunWindow, *, slots: int, block: int
) -> State:
    """The engine state of a run of ``model`` before its first job (classes, cluster)."""
    elastic = np.array([c.elastic for c in model.classes], dtype=np.int8)
    max_alloc = np.array([c.max_alloc for c in model.classes])
    if model.policy.hooks.resource_pooled:  # one server of capacity k (grosof2023 §3.1)
        elastic[:] = 1
        max_alloc[:] = model.pooled_k
    return build_state(
        class_elastic=elastic,
        class_max_alloc=max_alloc,
        class_reward=np.array([c.reward for c in model.classes]),
        capacity=model.capacity,
        settings=settings,
        window=window,
        slots=slots,
        block=block,
    )


def _gittins_tables(model: CompiledModel) -> Any:
    from schedlab.analysis.gittins import gittins_tables  # scipy.optimize: import on use

    return gittins_tables(model)


# The tables a policy may ask for (Hooks.tables), built from the model's size laws: policies/
# may not import analysis/.
TABLE_BUILDERS: dict[str, Callable[[CompiledModel], Any]] = {"gittins": _gittins_tables}


def init_policy(st: State, model: CompiledModel, replication: int = 0) -> Any:
    """The policy's initial state, given the model's context (of this replication: its own
    random stream) and the tables it asks for."""
    policy = model.policy
    names = call_policy(policy.name, policy.hooks.tables, model.config)
    unknown = [n for n in names if n not in TABLE_BUILDERS]
    if unknown:
        raise PolicyError(
            f"policy '{policy.name}' asks for table(s) {', '.join(map(repr, unknown))}; the "
            f"pipeline builds {', '.join(map(repr, TABLE_BUILDERS))}"
        )
    tables = {name: TABLE_BUILDERS[name](model) for name in names}
    context = replace(model.context, replication=replication)
    return call_policy(policy.name, policy.kernels.init, st, context, model.config, **tables)


def run_loop(run: Run, progress: Progress | None = None) -> float:
    """Run the compiled loop to the end; returns the loop's wall time in seconds."""
    try:
        return _run_loop(run, progress)
    finally:
        if run.writer is not None:
            run.writer.close()


def steps(run: Run, max_events: int = EVENTS_PER_CHUNK) -> Iterator[None]:
    """Run the compiled loop ``max_events`` events at a time (the session serves its requests:
    refill the block, grow the slots, write per-job records), yielding after each call, until
    the run is over. ``run.st`` and ``run.ps`` are replaced when the slots grow: read them after
    each step (audits of the state between events do)."""
    while run.session.run(max_events) != K.R_FINISHED:
        yield


def compile_runner(run: Run) -> None:
    """Compile the policy's runner for this run (a plugin's first run: seconds), or load it from
    the disk cache, before the loop is timed: the loop's time and its events/s are the
    simulation's alone. A plugin that fails to compile fails here as at its first call."""
    runner = run.model.policy.kernels.runner
    compile_now = functools.partial(compile_for, runner)
    call_policy(
        run.model.policy.name,
        runner,
        run.session.handle,
        run.ps,
        EVENTS_PER_CHUNK,
        via=compile_now,
    )


def _run_loop(run: Run, progress: Progress | None) -> float:
    horizon = run.model.spec.run.horizon
    total = run.window.n_jobs or max(1, round(run.model.rate * (horizon or 0.0)))
    compile_runner(run)
    start = time.perf_counter()
    for _ in steps(run):
        if progress is not None:
            progress(int(run.st.ctr[K.ARRIVED]), total)
    if progress is not None:
        progress(int(run.st.ctr[K.ARRIVED]), total)
    elapsed = time.perf_counter() - start
    st = run.st
    if run.capacity is not None:
        run.capacity.advance(st)
    if run.writer is not None:
        run.writer.finish(st)
    message = run.session.violation()
    if message is not None:
        raise InvariantViolation(
            f"policy '{run.model.policy.name}' broke the model at t = {st.clk[K.NOW]:.6g}: "
            f"{message}"
        )
    return elapsed


def run_model(
    model: CompiledModel,
    replication: int = 0,
    *,
    progress: Progress | None = None,
    block: int = BLOCK,
    slots: int = SLOTS,
) -> Result:
    """One replication of a compiled model (``block``, ``slots``: see :func:`prepare`; they
    change memory and speed, never the result)."""
    t0 = time.perf_counter()
    run = prepare(model, replication, block=block, slots=slots)
    loop_s = run_loop(run, progress)
    st = run.st
    computed = compute_metrics(
        st,
        batches=model.spec.run.batches,
        resources=model.resources,
        class_names=tuple(c.name for c in model.classes),
        loss=model.family == "loss",
        finite=model.trace is not None,
    )
    if run.capacity is not None and "makespan" in computed.metrics and not st.ctr[K.PREEMPTIONS]:
        computed.metrics.update(capacity_metrics(run.capacity.sweep))
    limit = limit_verdict(model)
    backlog = computed.backlog
    if model.trace is not None:  # a finite replay: a load limit means a backlog, not instability
        backlog = backlog or (f"{BACKLOG} ({limit})" if limit else None)
        limit = None
    instability = limit or computed.instability
    return Result(
        spec=model.spec,
        policy=model.policy.name,
        family=model.family,
        load=model.load,
        rate=model.rate,
        metrics=computed.metrics,
        stable=instability is None,
        instability=instability,
        events=int(st.ctr[K.EVENTS]),
        wall_s=time.perf_counter() - t0,
        loop_s=loop_s,
        counters=computed.counters
        | (model.policy.hooks.report(run.ps, st) if model.policy.hooks.report else {}),
        warnings=computed.warnings + trace_warmup(model, run.window),
        timeseries_columns=timeseries_columns(st, model),
        jobs_path=run.writer.path if run.writer is not None else None,
        jobs_table=run.writer.table() if run.writer is not None else None,
        too_short=short_run(model, computed.counters["arrivals"]),
        backlog=backlog,
        time_unit=model.trace.time_unit if model.trace is not None else None,
    )


def capacity_metrics(sweep: CapacitySweep) -> dict[str, Estimate]:
    """Utilization over the makespan and loss of capacity (measurement/capacity.py): values of the
    one replay, without interval (as its makespan)."""
    none = (np.nan, np.nan)
    return {
        "utilization_over_makespan": Estimate(sweep.utilization(), none),
        "loss_of_capacity": Estimate(sweep.loss_of_capacity(), none),
    }


def trace_warmup(model: CompiledModel, window: RunWindow) -> list[str]:
    """A trace replay measures every job unless ``run.warmup`` is set; then it is stated."""
    if model.trace is None or not window.warm_jobs:
        return []
    return [
        f"warm-up: the first {window.warm_jobs:,} of the log's {window.n_jobs:,} jobs are not "
        f"measured (run.warmup = {model.spec.run.warmup:g})"
    ]


def timeseries_columns(st: State, model: CompiledModel) -> dict[str, np.ndarray]:
    """The sampled time series' columns (:attr:`Result.timeseries` builds the table)."""
    keep = ~np.isnan(st.ts_values[:, K.TS_SYSTEM])
    values = st.ts_values[keep]
    columns: dict[str, np.ndarray] = {
        "time": st.ts_times[keep],
        "number_in_system": values[:, K.TS_SYSTEM],
        "number_in_queue": values[:, K.TS_QUEUE],
    }
    if model.family == "loss":  # rewards are defined in the loss family only (psychas2022)
        columns["reward_rate"] = values[:, K.TS_REWARD]
    total = st.capacity.sum(axis=0)
    for r, name in enumerate(model.resources):
        columns[f"utilization[{name}]"] = values[:, K.TS_FIRST_RESOURCE + r] / total[r]
    return columns
