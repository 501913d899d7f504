"""``schedlab.simulate(spec) -> Result``: compile the spec, generate the jobs, run the engine."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from schedlab.engine import constants as K
from schedlab.engine.metrics import compute_metrics
from schedlab.engine.reliability import short_run
from schedlab.engine.state import (
    VIOLATION_MESSAGES,
    EngineSettings,
    State,
    build_state,
    engine_handle,
)
from schedlab.errors import InvariantViolation
from schedlab.model.compile import CompiledModel, compile_model
from schedlab.model.spec import SimulationSpec, errors_located_in, load_spec, parse_spec
from schedlab.simulation.generate import Jobs, generate_jobs
from schedlab.simulation.result import Result, combine_replications
from schedlab.simulation.stability_limits import limit_verdict

EVENTS_PER_CHUNK = 2_000_000
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


def simulate(
    spec: SimulationSpec | dict[str, Any] | str | Path,
    *,
    progress: Progress | None = None,
) -> Result:
    """Run a simulation spec (object, dict or TOML path) and return its :class:`Result`.

    With ``run.replications = R > 1`` the R independent replications are combined: each metric is
    the mean of the replication means with a Student-t 95% interval; ``result.replications`` holds
    the individual results.
    """
    path = spec if isinstance(spec, str | Path) else None
    with errors_located_in(path):
        model = compile_model(as_spec(spec))
    return simulate_model(model, progress=progress)


def simulate_model(model: CompiledModel, *, progress: Progress | None = None) -> Result:
    """Run every replication of an already compiled model."""
    reps = [run_model(model, r, progress=progress) for r in range(model.spec.run.replications)]
    return reps[0] if len(reps) == 1 else combine_replications(reps)


def engine_settings(model: CompiledModel, n_jobs: int) -> EngineSettings:
    run = model.spec.run
    return EngineSettings(
        preempt_mode=PREEMPT_MODE[model.family],
        migrate_ok=model.family == "loss",
        loss=model.family == "loss",
        delta=model.delta,
        check=run.check,
        drain=run.drain,
        warmup_jobs=int(run.warmup * n_jobs),
        batches=run.batches,
        timeseries=run.timeseries,
    )


def prepare(model: CompiledModel, replication: int = 0) -> tuple[Jobs, State, tuple]:
    """The jobs, the initial engine state and the policy state of one replication."""
    jobs = generate_jobs(model, model.spec.run.seed, replication)
    elastic = np.array([c.elastic for c in model.classes], dtype=np.int8)
    max_alloc = np.array([c.max_alloc for c in model.classes])
    if model.policy.resource_pooled:  # one server of capacity k (paper 004 §3.1)
        elastic[:] = 1
        max_alloc[:] = model.pooled_k
    st = build_state(
        jobs.arrival,
        jobs.job_class,
        jobs.demand,
        jobs.work,
        jobs.estimate,
        class_elastic=elastic,
        class_max_alloc=max_alloc,
        class_reward=np.array([c.reward for c in model.classes]),
        capacity=model.capacity,
        settings=engine_settings(model, len(jobs)),
    )
    ps = model.policy.init(st, model, model.config)
    return jobs, st, ps


def run_loop(model: CompiledModel, st: State, ps: tuple, progress: Progress | None = None) -> float:
    """Run the compiled loop to the end; returns the loop's wall time in seconds."""
    runner = model.policy.runner
    n = int(st.ctr[K.N_JOBS])
    handle = engine_handle(st)
    start = time.perf_counter()
    while not runner(handle, ps, EVENTS_PER_CHUNK):
        if progress is not None:
            progress(int(st.ctr[K.ARRIVED]), n)
    if progress is not None:
        progress(n, n)
    elapsed = time.perf_counter() - start
    code = int(st.ctr[K.VIOLATION])
    if code:
        message = VIOLATION_MESSAGES[code].format(
            job=int(st.ctr[K.VIOL_JOB]), server=int(st.ctr[K.VIOL_SERVER])
        )
        raise InvariantViolation(
            f"policy '{model.policy.name}' broke the model at t = {st.clk[K.NOW]:.6g}: {message}"
        )
    return elapsed


def run_model(
    model: CompiledModel, replication: int = 0, *, progress: Progress | None = None
) -> Result:
    """One replication of a compiled model."""
    t0 = time.perf_counter()
    jobs, st, ps = prepare(model, replication)
    loop_s = run_loop(model, st, ps, progress)
    run = model.spec.run
    computed = compute_metrics(
        st,
        warmup_jobs=int(run.warmup * len(jobs)),
        batches=run.batches,
        resources=model.resources,
        class_names=tuple(c.name for c in model.classes),
        loss=model.family == "loss",
    )
    instability = limit_verdict(model) or computed.instability
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
        | (model.policy.report(ps, st) if getattr(model.policy, "report", None) else {}),
        warnings=computed.warnings,
        timeseries=timeseries_table(st, model),
        jobs=jobs_table(st, model) if run.jobs else None,
        too_short=short_run(model, computed.counters["arrivals"]),
    )


def timeseries_table(st: State, model: CompiledModel) -> pa.Table:
    keep = ~np.isnan(st.ts_values[:, K.TS_SYSTEM])
    values = st.ts_values[keep]
    columns: dict[str, Any] = {
        "time": st.ts_times[keep],
        "number_in_system": values[:, K.TS_SYSTEM],
        "number_in_queue": values[:, K.TS_QUEUE],
        "reward_rate": values[:, K.TS_REWARD],
    }
    total = st.capacity.sum(axis=0)
    for r, name in enumerate(model.resources):
        columns[f"utilization[{name}]"] = values[:, K.TS_FIRST_RESOURCE + r] / total[r]
    return pa.table(columns)


def jobs_table(st: State, model: CompiledModel) -> pa.Table:
    """One row per job: the per-job record of the run."""
    names = np.array([c.name for c in model.classes])
    status_names = np.array(["not_arrived", "waiting", "running", "done", "lost"])
    columns: dict[str, Any] = {
        "job": np.arange(st.arrival.shape[0]),
        "arrival": st.arrival,
        "job_class": names[st.job_class],
        "work": st.work,
    }
    for r, name in enumerate(model.resources):
        columns[f"demand[{name}]"] = st.demand[:, r]
    columns.update(
        {
            "start": st.t_start,
            "finish": st.t_finish,
            "response_time": st.t_finish - st.arrival,
            "server": st.server,
            "status": status_names[st.status],
        }
    )
    return pa.table(columns)
