"""Execute runs locally (a process pool) or on a Dask distributed cluster, storing each as it ends.

A run is a (spec, replication) pair identified by its hash. Runs already in the store are skipped,
so an interrupted sweep resumes where it stopped. Results do not depend on where a run executes:
every random number comes from the run's own seed and replication (common random numbers).

Several sweeps may share a result directory: each run is locked before it is computed
(experiments/run_locks.py), a sweep skips runs another live sweep is computing and waits for them to
be stored (taking them over if that sweep dies), so every run is computed and stored once. Local
workers die with the sweep (kill -9, SIGTERM or Ctrl-C of ``schedlab run``).

A run whose spec asks for its per-job table at a path (``run.jobs = "..."``) writes it inside the
result directory, one file per run: ``DIR/jobs/<spec_hash>.parquet`` (the spec's path names no
place outside the directory, and runs never overwrite each other's table).
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.errors import SchedlabError
from schedlab.experiments.run_locks import RunLocks, holder_name, worker_init
from schedlab.experiments.run_rows import canonical_json, spec_hash
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import SimulationSpec

if TYPE_CHECKING:
    from schedlab.simulation.result import Result

Progress = Callable[[int, int], None]  # (runs finished, runs to do)
LOCK_POLL_S = 0.5  # how often a sweep looks for runs another sweep is computing


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

    @functools.cached_property
    def hash(self) -> str:
        """The run's identity (records.spec_hash); computed once (a sweep asks for it several
        times per run: lock, store, release)."""
        return spec_hash(_parse(self.spec_json), self.replication)

    @classmethod
    def of(cls, spec: SimulationSpec, replication: int = 0, **kw: Any) -> Task:
        return cls(spec_json=canonical_json(spec), replication=replication, **kw)


def _parse(spec_json: str) -> SimulationSpec:
    from schedlab.model.spec import parse_spec

    return parse_spec(json.loads(spec_json))


JOBS = "jobs"  # DIR/jobs/: the per-job tables of the runs whose spec asks for one at a path


def jobs_target(root: str | Path, task: Task) -> Path:
    """Where a run of a sweep writes its per-job table: ``DIR/jobs/<spec_hash>.parquet``."""
    from schedlab import outputs

    outputs.make_dirs(outputs.inside(Path(root), JOBS))
    return outputs.inside(Path(root), f"{JOBS}/{task.hash}.parquet")


def replicate(task: Task, plugins: tuple[str, ...] = (), root: str | None = None) -> Result:
    """One replication of a spec (canonical JSON): the job of every worker process, local or
    Dask, for sweeps and for ``schedlab.simulate``'s parallel replications. The worker first
    imports the plugin files that registered the parent's user policies. A per-job table asked
    for at a path goes to :func:`jobs_target` of the result directory ``root`` (a sweep's). An
    error is a :class:`RunFailed` naming the run."""
    from schedlab.model.compile import compile_model
    from schedlab.plugins import load_plugin
    from schedlab.simulation.simulate import run_model, with_run

    for path in plugins:
        load_plugin(path)
    spec = _parse(task.spec_json)
    try:
        if isinstance(spec.run.jobs, str) and root is not None:
            model = compile_model(with_run(spec, jobs=str(jobs_target(root, task))))
        else:
            model = compile_model(spec)
        result = run_model(model, task.replication)
    except SchedlabError as exc:
        where = f"point {task.point} " if task.point >= 0 else ""
        axes = ", ".join(f"{k}={v}" for k, v in task.axes.items())
        raise RunFailed(
            f"run {where}({axes or 'no axes'}, replication {task.replication}): {exc}"
        ) from None
    result.spec = spec  # the spec as given (not the one with the jobs path inside ``root``)
    return result


def execute(task: Task, plugins: tuple[str, ...] = (), root: str | None = None) -> dict[str, Any]:
    """:func:`replicate` and the run's record, as a sweep stores it (built in the worker)."""
    from schedlab.experiments.run_rows import run_row

    return run_row(
        replicate(task, plugins, root),
        replication=task.replication,
        experiment=task.experiment,
        point=task.point,
        axes=task.axes,
    )


def execute_on_worker(
    task: Task, plugins: tuple[str, ...] = (), root: str | None = None
) -> dict[str, Any]:
    """:func:`execute` in a Dask worker, after the entry points' process tuning
    (``schedlab.configure``, decision 0020: the worker process runs schedlab's tasks)."""
    from schedlab._jit import configure

    configure()
    return execute(task, plugins, root)


@dataclass
class Summary:
    total: int
    cached: int
    ran: int
    elsewhere: int = 0  # stored meanwhile by another sweep on the same directory


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


EVENTS_PER_ARRIVAL = 2  # an arrival and a departure (or a loss)


def estimated_cost(task: Task) -> tuple[float, float]:
    """Relative CPU cost of a run: arrivals x events per arrival x the policy's cost per event
    (``Hooks.event_cost``); ties (e.g. the loads of one policy) go to the higher load, which
    keeps more jobs present per decision. Used to start the longest runs first, so that no long
    run starts last and leaves the other workers idle (the stragglers of issue 12 item 5)."""
    from schedlab.policies.registry import get_policy

    spec = _parse(task.spec_json)
    workload = spec.workload
    arrivals = spec.run.arrivals or (spec.run.horizon or 1.0) * (workload.rate or 1.0)
    cost = float(arrivals) * EVENTS_PER_ARRIVAL * get_policy(spec.policy.name).hooks.event_cost
    return cost, float(workload.load or 0.0)


def run_tasks(
    tasks: Iterable[Task],
    store: ResultStore,
    *,
    workers: int | None = None,
    cluster: Any = None,
    security: Any = None,
    progress: Progress | None = None,
    plugins: tuple[str, ...] | None = None,
) -> Summary:
    """Run every task whose hash is not yet stored; store each record as soon as it exists.

    Runs locked by another live sweep are left to it; this call returns once every task is
    stored (computing those whose lock holder died). ``cluster`` is a Dask scheduler address or a
    ``distributed.Client``. ``plugins`` are plugin files the workers import first (default: those
    imported in this process). Runs start in decreasing order of :func:`estimated_cost`."""
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
    locks = RunLocks(store.root)

    def finished(ran: bool) -> None:
        summary.ran += ran
        if progress is not None:
            progress(summary.ran + summary.elsewhere, len(todo))

    if progress is not None:
        progress(0, len(todo))
    previous = signal.getsignal(signal.SIGTERM) if _main_thread() else None
    if previous is not None:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        pending = todo
        while pending:
            if cluster is not None:
                _run_dask(pending, cluster, security, plugins, store, locks, finished)
            elif (workers or default_workers()) == 1 or len(pending) == 1:
                for task in pending:
                    finished(execute_and_store(task, str(store.root), plugins))
            else:
                _run_pool(pending, workers or default_workers(), store.root, plugins, finished)
            pending = _wait_for_others(pending, store, locks, summary, finished)
        # every run is stored now: those this sweep did not store, another one did
        summary.elsewhere = len(todo) - summary.ran
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: {summary.ran} of {len(todo)} runs finished and stored in {store.root}; "
            "rerun the same command to complete the sweep"
        ) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return summary


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM stops a sweep like Ctrl-C: workers stopped, finished runs kept."""
    raise KeyboardInterrupt


def _wait_for_others(
    tasks: list[Task],
    store: ResultStore,
    locks: RunLocks,
    summary: Summary,
    finished: Callable[[bool], None],
) -> list[Task]:
    """Wait until the tasks another sweep locked are stored; those whose lock holder is gone
    (stale locks) are returned to be computed here."""
    waiting = [t for t in tasks if not store.has(t.hash)]
    while True:
        stored = [t for t in waiting if store.has(t.hash)]
        for _ in stored:
            summary.elsewhere += 1
            finished(False)
        waiting = [t for t in waiting if not store.has(t.hash)]
        if not any(locks.busy(t.hash) for t in waiting):
            return waiting
        time.sleep(LOCK_POLL_S)


PRELOAD = [
    "schedlab.experiments.runner",
    "schedlab.simulation.simulate",
    "schedlab.policies.registry",
    "schedlab.experiments.warm",  # runs the sweep's policies once: workers inherit the code
]


def _fork_server() -> multiprocessing.context.BaseContext:
    """A fork server that imports schedlab and loads the policies named in ``WARM_ENV`` when it
    starts; spawn where there is no fork server."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def can_fork_here() -> bool:
    """True where workers may be forked from this process: fork exists and no other thread runs
    (a fork copies the locks other threads hold, held forever in the child)."""
    import threading

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def worker_pool(workers: int, spec_jsons: Sequence[str]) -> ProcessPoolExecutor:
    """Local worker processes, ready to run ``spec_jsons``' policies, which die with this process
    (worker_init). Decision 0009: where :func:`can_fork_here`, this process loads the policies'
    compiled code (experiments/warm.py) and the workers are forked from it, so they start at once
    and never re-import the caller's ``__main__`` (a script without an ``if __name__ ==
    "__main__":`` guard works); elsewhere (another thread runs: a notebook kernel, a Dask client)
    they come from a fork server that imports schedlab and loads the policies."""
    from schedlab.experiments.warm import WARM_ENV, warm, warm_specs

    specs = warm_specs(list(spec_jsons))
    if can_fork_here():
        warm(specs)
        context = multiprocessing.get_context("fork")
    else:
        os.environ[WARM_ENV] = specs  # read by a new fork server
        context = _fork_server()
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=worker_init,
        initargs=(os.getpid(),),
    )


def execute_and_store(task: Task, root: str, plugins: tuple[str, ...] = ()) -> bool:
    """Lock, run and store one task (in the worker for local pools: the parent then has no
    per-run work left to take CPU from the workers). False when another process holds it."""
    from schedlab.experiments.store import ResultStore

    store = ResultStore(root)
    locks = RunLocks(root)
    if not locks.take(task.hash):
        return False
    try:
        if store.has(task.hash):  # stored between our listing and our lock
            return False
        store.write(execute(task, plugins, root))
    finally:
        locks.release(task.hash)
    return True


def _run_pool(
    todo: list[Task],
    workers: int,
    root: Path,
    plugins: tuple[str, ...],
    finished: Callable[[bool], None],
) -> None:
    others = set(multiprocessing.active_children())  # child processes not of this pool
    pool = worker_pool(min(workers, len(todo)), [t.spec_json for t in todo])
    pending: set[Future] = set()
    pool_workers: list[multiprocessing.Process] = []
    try:
        pending = {pool.submit(execute_and_store, task, str(root), plugins) for task in todo}
        # the pool's workers, started by the submissions: this process's children since
        pool_workers = [p for p in multiprocessing.active_children() if p not in others]
        while pending:
            complete, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in complete:
                finished(fut.result())
    except BrokenProcessPool:
        pids = {p.pid for p in pool_workers if p.pid is not None}
        raise WorkerLost(_lost_message(todo, root, pids)) from None
    finally:
        if pending:  # interrupted or failed: stop the workers now, keep what is stored
            for process in pool_workers:
                if process.is_alive():
                    process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


DASK_SCHEMES = ("tcp", "tls", "ws", "wss", "inproc", "ucx")
TLS_SCHEMES = ("tls", "wss")


def check_cluster_address(address: str, security: Any = None) -> None:
    """One line unless ``address`` is a Dask scheduler address, ``[scheme://]host:port``, whose
    scheme is TLS only with ``security`` (a TLS address without it is not a plain connection)."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    host, colon, port = rest.rpartition(":")
    if scheme not in DASK_SCHEMES or (
        scheme != "inproc"
        and not (colon and host and port.isdigit() and not any(c.isspace() for c in host))
    ):
        raise SchedlabError(
            f"cluster {address!r}: not a Dask scheduler address ([scheme://]host:port with a "
            f"scheme of {', '.join(DASK_SCHEMES)}; e.g. tcp://host:8786)"
        )
    if scheme in TLS_SCHEMES and security is None:
        raise SchedlabError(
            f"cluster {address}: a TLS scheduler needs its certificates: give --cluster-security "
            "FILE (tls_ca_file, tls_client_cert, tls_client_key; docs/guarantees.md#dask)"
        )


class WorkerLost(SchedlabError):
    """A local worker process died (killed, out of memory) during a run; the sweep stops."""


def _lost_message(todo: list[Task], root: Path, workers: set[int] | None = None) -> str:
    """One line: the runs cut short (not stored, and locked by a process that is gone or by one
    of this sweep's ``workers``, which stop with it: a worker may have taken over the dead one's
    run), what is kept, and how to finish (a rerun computes exactly the missing runs)."""
    store, locks = ResultStore(root), RunLocks(root)
    ours = {holder_name(pid) for pid in workers or ()}
    lost = [
        t
        for t in todo
        if not store.has(t.hash)
        and (holder := locks.holder(t.hash)) is not None
        and (holder in ours or not locks.alive(holder))
    ]
    named = ", ".join(
        f"{t.hash[:12]} ({', '.join(f'{k}={v}' for k, v in t.axes.items() if v != '') or 'run'})"
        for t in lost[:3]
    )
    more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
    return (
        f"a worker process died (killed, or out of memory?); runs cut short: {named or 'unknown'}"
        f"{more}; the sweep stopped, finished runs are stored in {root}; rerun the same command "
        "to complete it"
    )


def dask_client(cluster: Any, security: Any = None) -> tuple[Any, bool]:
    """A ``distributed.Client`` for an address (owned: close it) or the given client (not owned)."""
    if not isinstance(cluster, str):
        return cluster, False
    check_cluster_address(cluster, security)
    from dask.distributed import Client

    try:
        return Client(cluster, timeout="10s", security=security), True
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise SchedlabError(f"cannot reach the Dask scheduler at {cluster}: {exc}") from None


def _run_dask(
    todo: list[Task],
    cluster: Any,
    security: Any,
    plugins: tuple[str, ...],
    store: ResultStore,
    locks: RunLocks,
    finished: Callable[[bool], None],
) -> None:
    """Run on a Dask cluster; the parent locks, checks and stores every returned row."""
    from dask.distributed import as_completed

    client, owned = dask_client(cluster, security)
    mine = [t for t in todo if locks.take(t.hash)]
    try:
        # Priorities follow the order of `todo` (longest first) on the cluster too.
        futures = {
            client.submit(
                execute_on_worker, t, plugins, str(store.root), pure=False, priority=len(mine) - i
            ): t
            for i, t in enumerate(mine)
        }
        for fut in as_completed(futures):
            task = futures[fut]
            store.write(checked_row(task, _fetch(fut, task, store.root)))
            locks.release(task.hash)
            finished(True)
    finally:
        for task in mine:
            locks.release(task.hash)
        if owned:
            client.close()


GATHER_TIMEOUT_S = 120.0
"""Time to fetch a finished run's row from its Dask worker. Distributed retries a fetch that fails
("Couldn't gather keys": the worker registered an address this machine cannot reach) by
recomputing the run, forever; this bounds it."""


def _fetch(fut: Any, task: Task, root: Path) -> Any:
    """The row of a finished Dask future, or one line when it cannot be fetched in time."""
    try:
        return fut.result(timeout=GATHER_TIMEOUT_S)
    except TimeoutError:
        raise SchedlabError(
            f"could not fetch the result of run {task.hash[:12]} from its Dask worker within "
            f"{GATHER_TIMEOUT_S:g} s (is every worker reachable from here at the address it "
            "registered, e.g. its --contact-address?); the sweep stopped, finished runs are "
            f"stored in {root}; rerun the same command to complete it"
        ) from None


class BadWorkerRow(SchedlabError):
    """A row returned by a Dask worker does not answer the task it was sent."""


def checked_row(task: Task, row: Any) -> dict[str, Any]:
    """``row`` if it answers ``task``: its identity (spec hash recomputed here from the task, never
    taken from the worker; the canonical spec, replication, experiment and point) must be the
    task's, and every value a plain scalar. Anything else is refused (docs/guarantees.md)."""
    expected = {
        "spec_hash": task.hash,
        "spec_json": canonical_json(_parse(task.spec_json)),
        "replication": task.replication,
        "experiment": task.experiment,
        "point": task.point,
    }
    if not isinstance(row, dict):
        raise BadWorkerRow(f"a Dask worker returned {type(row).__name__}, not a run record")
    for name, value in expected.items():
        if row.get(name) != value:
            raise BadWorkerRow(
                f"a Dask worker returned a row whose {name} does not match its task "
                f"(run {task.hash}); nothing of it was stored"
            )
    for name, value in row.items():
        if not isinstance(name, str) or not (
            value is None or isinstance(value, bool | int | float | str)
        ):
            raise BadWorkerRow(
                f"a Dask worker returned a row with a non-scalar field {name!r} (run {task.hash})"
            )
    return row


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
