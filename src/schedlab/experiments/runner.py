"""Execute runs locally (a process pool) or on a Dask distributed cluster, storing each as it ends.

A run is a (spec, replication) pair identified by its hash. Runs already in the store are skipped,
so an interrupted sweep resumes where it stopped. Results do not depend on where a run executes:
every random number comes from the run's own seed and replication (common random numbers).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import SchedlabError
from schedlab.experiments.records import canonical_json, spec_hash
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import SimulationSpec

Progress = Callable[[int, int], None]  # (runs finished, runs to do)


class RunFailed(SchedlabError):
    """A run raised an error; the message names its point and spec."""


class Interrupted(SchedlabError):
    """The sweep was interrupted; finished runs are stored."""

    exit_code = 130


@dataclass(frozen=True)
class Task:
    """One run: a spec (canonical JSON), a replication, and where it sits in an experiment."""

    spec_json: str
    replication: int = 0
    experiment: str = ""
    point: int = -1
    axes: dict[str, Any] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        return spec_hash(_parse(self.spec_json), self.replication)

    @classmethod
    def of(cls, spec: SimulationSpec, replication: int = 0, **kw: Any) -> Task:
        return cls(spec_json=canonical_json(spec), replication=replication, **kw)


def _parse(spec_json: str) -> SimulationSpec:
    from schedlab.model.spec import parse_spec

    return parse_spec(json.loads(spec_json))


def execute(task: Task, plugins: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run one task and return its record (runs in worker processes, which first import the
    plugin files that registered the parent's user policies)."""
    from schedlab.engine.simulate import run_model
    from schedlab.experiments.records import run_record
    from schedlab.model.compile import compile_model
    from schedlab.plugins import load_plugin

    for path in plugins:
        load_plugin(path)
    try:
        model = compile_model(_parse(task.spec_json))
        result = run_model(model, task.replication)
    except SchedlabError as exc:
        where = f"point {task.point} " if task.point >= 0 else ""
        axes = ", ".join(f"{k}={v}" for k, v in task.axes.items())
        raise RunFailed(
            f"run {where}({axes or 'no axes'}, replication {task.replication}): {exc}"
        ) from None
    return run_record(
        result,
        replication=task.replication,
        experiment=task.experiment,
        point=task.point,
        axes=task.axes,
    )


@dataclass
class Summary:
    total: int
    cached: int
    ran: int


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Reciprocal throughput (µs per event) of the policies measured in issue 12 (paper 004's Fig. 2
# setting, 10^7 arrivals); other policies count as 1. Only the ranking of runs uses it.
POLICY_EVENT_COST = {"server-filling": 1.3, "server-filling-srpt": 2.9, "max-weight": 2.2}
EVENTS_PER_ARRIVAL = 2  # an arrival and a departure (or a loss)


def estimated_cost(task: Task) -> tuple[float, float]:
    """Relative CPU cost of a run: arrivals x events per arrival x the policy's cost per event;
    ties (e.g. the loads of one policy) go to the higher load, which keeps more jobs present
    per decision. Used to start the longest runs first, so that no long run starts last and
    leaves the other workers idle (the stragglers of issue 12 item 5)."""
    data = json.loads(task.spec_json)
    run = data.get("run", {})
    workload = data.get("workload", {})
    arrivals = run.get("arrivals") or (run.get("horizon") or 1.0) * (workload.get("rate") or 1.0)
    policy = data.get("policy", {}).get("name", "")
    cost = float(arrivals) * EVENTS_PER_ARRIVAL * POLICY_EVENT_COST.get(policy, 1.0)
    return cost, float(workload.get("load") or 0.0)


def run_tasks(
    tasks: Iterable[Task],
    store: ResultStore,
    *,
    workers: int | None = None,
    cluster: Any = None,
    progress: Progress | None = None,
    plugins: tuple[str, ...] | None = None,
) -> Summary:
    """Run every task whose hash is not yet stored; store each record as soon as it exists.

    ``cluster`` is a Dask scheduler address or a ``distributed.Client``. ``plugins`` are plugin
    files the workers import first (default: those imported in this process). Runs start in
    decreasing order of :func:`estimated_cost`."""
    from schedlab.plugins import loaded_plugin_files

    plugins = loaded_plugin_files() if plugins is None else plugins
    store.ensure_writable()
    done = store.done()
    unique: dict[str, Task] = {}
    for task in tasks:
        unique.setdefault(task.hash, task)
    todo = sorted((t for h, t in unique.items() if h not in done), key=estimated_cost, reverse=True)
    summary = Summary(total=len(unique), cached=len(unique) - len(todo), ran=0)
    if not todo:
        return summary

    def finished(row: dict[str, Any] | None) -> None:
        if row is not None:  # None: a local worker stored it itself
            store.write(row)
        summary.ran += 1
        if progress is not None:
            progress(summary.ran, len(todo))

    if progress is not None:
        progress(0, len(todo))
    try:
        if cluster is not None:
            _run_dask(todo, cluster, plugins, finished)
        elif (workers or default_workers()) == 1:
            for task in todo:
                finished(execute(task, plugins))
        else:
            _run_pool(todo, workers or default_workers(), store.root, plugins, finished)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: {summary.ran} of {len(todo)} runs finished and stored in {store.root}; "
            "rerun the same command to complete the sweep"
        ) from None
    return summary


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback from every worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


PRELOAD = [
    "schedlab.experiments.runner",
    "schedlab.engine.simulate",
    "schedlab.policies.registry",
    "schedlab.experiments.warm",  # runs the sweep's policies once: workers inherit the code
]


def _context() -> multiprocessing.context.BaseContext:
    """Workers forked from a fork server that has imported schedlab once (about 1.4 s of
    imports, mostly SciPy and Numba, saved per worker and per sweep); spawn where there is no
    fork server. Never plain fork: the parent may run threads (progress bars, Dask)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """Local worker processes (forked from a fork server that has imported schedlab)."""
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=_context(), initializer=_ignore_sigint
    )


def execute_and_store(task: Task, root: str, plugins: tuple[str, ...] = ()) -> None:
    """Run one task and store its record from the worker (local pools: the parent then has no
    per-run work left to take CPU from the workers)."""
    from schedlab.experiments.store import ResultStore

    ResultStore(root).write(execute(task, plugins))


def _run_pool(
    todo: list[Task],
    workers: int,
    root: Path,
    plugins: tuple[str, ...],
    finished: Callable[[dict[str, Any] | None], None],
) -> None:
    from schedlab.experiments.warm import WARM_ENV, warm_specs

    os.environ[WARM_ENV] = warm_specs([t.spec_json for t in todo])  # read by a new fork server
    pool = worker_pool(min(workers, len(todo)))
    pending: set[Future] = set()
    try:
        pending = {pool.submit(execute_and_store, task, str(root), plugins) for task in todo}
        while pending:
            complete, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in complete:
                fut.result()
                finished(None)
    finally:
        if pending:  # interrupted or failed: stop the workers now, keep what is stored
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


def dask_client(cluster: Any) -> tuple[Any, bool]:
    """A ``distributed.Client`` for an address (owned: close it) or the given client (not owned)."""
    if not isinstance(cluster, str):
        return cluster, False
    from dask.distributed import Client

    try:
        return Client(cluster, timeout="10s"), True
    except (OSError, TimeoutError) as exc:
        raise SchedlabError(f"cannot reach the Dask scheduler at {cluster}: {exc}") from None


def _run_dask(
    todo: list[Task],
    cluster: Any,
    plugins: tuple[str, ...],
    finished: Callable[[dict[str, Any]], None],
) -> None:
    from dask.distributed import as_completed

    client, owned = dask_client(cluster)
    try:
        # Priorities follow the order of `todo` (longest first) on the cluster too.
        futures = [
            client.submit(execute, task, plugins, pure=False, priority=len(todo) - i)
            for i, task in enumerate(todo)
        ]
        for fut in as_completed(futures):
            finished(fut.result())
    finally:
        if owned:
            client.close()


def run_specs(
    specs: list[SimulationSpec],
    store: ResultStore,
    *,
    replications: int = 1,
    workers: int | None = None,
    cluster: Any = None,
    progress: Progress | None = None,
    experiment: str = "",
) -> list[list[dict]]:
    """Run each spec for ``replications`` replications (cached); for each spec, its records."""
    tasks = [
        [Task.of(spec, r, experiment=experiment, point=i) for r in range(replications)]
        for i, spec in enumerate(specs)
    ]
    run_tasks(
        [t for group in tasks for t in group],
        store,
        workers=workers,
        cluster=cluster,
        progress=progress,
    )
    return [store.read([t.hash for t in group]) for group in tasks]
