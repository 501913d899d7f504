"""Issue 15 item 2: a killed sweep leaves no process behind; a rerun completes every run exactly
once; two concurrent sweeps on one directory compute every run once (docs/guarantees.md)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from schedlab.experiments.run_locks import RunLocks, running
from schedlab.experiments.spec import load_experiment
from schedlab.experiments.store import ResultStore
from tests.helpers import paths

SRC = str(paths.SRC)
RUNS = 8

EXPERIMENT = f"""
name = "kill-test"
replications = {RUNS // 2}
[base]
cluster = {{ servers = 1 }}
policy = {{ name = "fcfs" }}
run = {{ arrivals = 400000, seed = 5, timeseries = 0 }}
[base.workload]
load = 0.5
classes = [{{ need = 1, duration = {{ dist = "exponential", mean = 1.0 }} }}]
[sweep]
"workload.load" = [0.5, 0.6]
"""


def start(exp: Path, out: Path, workers: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "schedlab.cli",
            "run",
            str(exp),
            *("--workers", str(workers)),
            "--out",
            str(out),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own session: every process it starts is findable
    )


def session_members(sid: int) -> list[psutil.Process]:
    members = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                members.append(p)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return members


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    path = tmp_path / "kill.toml"
    path.write_text(EXPERIMENT)
    return path


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_kill_9_leaves_no_process_and_rerun_completes(experiment: Path, tmp_path: Path, sig):
    out = tmp_path / "out"
    proc = start(experiment, out, workers=2)
    sid = proc.pid
    try:
        deadline = time.monotonic() + 120
        locks = out / "locks"
        while not (locks.is_dir() and any(locks.iterdir())):  # workers are computing
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the sweep never started a run"
            time.sleep(0.05)
        assert len(session_members(sid)) >= 3  # parent, fork server, workers
        os.kill(proc.pid, sig)
        code = proc.wait()
        if sig == signal.SIGTERM:  # handled like Ctrl-C: workers stopped, a one-line message
            assert code == 130, proc.stdout.read()
        deadline = time.monotonic() + 10
        while session_members(sid) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = session_members(sid)
        assert not survivors, [(p.pid, p.cmdline()) for p in survivors]
    finally:
        for p in session_members(sid):
            p.kill()
    stored_before = len(ResultStore(out).files())
    assert stored_before < RUNS  # killed mid-sweep
    rerun = start(experiment, out, workers=2)
    text = rerun.communicate(timeout=300)[0]
    assert rerun.returncode == 0, text
    ran, cached = map(int, re.search(r"(\d+) runs done, (\d+) already stored", text).groups())
    assert (ran, cached) == (RUNS - stored_before, stored_before)
    hashes = {t.hash for t in load_experiment(experiment).tasks()}
    assert {p.stem for p in ResultStore(out).files()} == hashes
    assert not any((out / "locks").iterdir())  # every lock released or taken over


def test_two_concurrent_sweeps_compute_every_run_once(experiment: Path, tmp_path: Path):
    out = tmp_path / "out"
    procs = [start(experiment, out, workers=1) for _ in range(2)]
    texts = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), texts
    ran = [int(re.search(r"(\d+) runs done", t).group(1)) for t in texts]
    assert sum(ran) == RUNS, texts
    assert len(ResultStore(out).files()) == RUNS


def test_stale_lock_is_taken_over(tmp_path: Path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not running(dead.pid)
    locks = RunLocks(tmp_path)
    locks.dir.mkdir(parents=True)
    host = locks.me.split(" ")[0]
    (locks.dir / "abc").write_text(f"{host} {dead.pid}")
    assert not locks.busy("abc")
    assert locks.take("abc")
    other = RunLocks(tmp_path)
    other.me = f"{host} {os.getppid()}"  # a live process
    assert not other.take("abc")  # ours is live: refused
    locks.release("abc")
    assert not (locks.dir / "abc").exists()


SCRIPT = """
import threading, time
import schedlab
{thread}
experiment = {{
    "name": "script",
    "replications": 2,
    "base": {{
        "cluster": {{"servers": 2}},
        "workload": {{"load": 0.5, "classes": [
            {{"need": 1, "duration": {{"dist": "exponential", "mean": 1.0}}}}]}},
        "policy": {{"name": "fcfs"}},
        "run": {{"arrivals": 2000, "seed": 3}},
    }},
    "sweep": {{"workload.load": [0.3, 0.6]}},
}}
from schedlab.experiments.runner import can_fork_here
print("fork" if can_fork_here() else "fork server", flush=True)
res = schedlab.sweep(experiment, workers=2)
print("runs", len(res), flush=True)
"""


@pytest.mark.parametrize("thread", [False, True], ids=["single-threaded", "with-a-thread"])
def test_a_script_without_a_main_guard_sweeps_in_parallel(tmp_path: Path, thread: bool):
    """The README's sweep as a plain script with no ``if __name__ == "__main__":`` guard runs:
    workers forked from it never re-run it (decision 0009). With another thread alive, workers
    come from a fork server, which re-imports the script: that case keeps the guard (guide §9)."""
    script = tmp_path / "sweep_script.py"
    start_thread = "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()"
    body = SCRIPT.format(thread=start_thread if thread else "")
    if thread:  # a fork server re-imports __main__: this case needs the guard
        head, tail = body.split("from schedlab.experiments.runner", 1)
        body = (
            head
            + 'if __name__ == "__main__":\n'
            + "".join(
                f"    {line}\n" for line in ("from schedlab.experiments.runner" + tail).splitlines()
            )
        )
    script.write_text(body)
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["fork server" if thread else "fork", "runs 4"]


FIRST_RUN_SCRIPT = """
import json, sys
import schedlab.plugins  # run_tasks imports it (the plugins its workers load) before the pool
from schedlab.experiments.runner import Task, execute_and_store, worker_pool
from schedlab.experiments.store import ResultStore
from schedlab.model.spec import parse_spec

spec = {{
    "cluster": {{"servers": 2}},
    "workload": {{"load": 0.5, "classes": [{{"need": 1, "duration": {{"dist": "exponential",
                  "mean": 1.0}}}}]}},
    "policy": {{"name": "fcfs"}},
    "run": {{"arrivals": 2000, "seed": 3}},
}}
task = Task.of(parse_spec(spec), replication=1)
worker_pool(2, [task.spec_json]).shutdown()  # the sweep's warm-up, before its workers fork
before = set(sys.modules)
assert execute_and_store(task, {root!r})
print(json.dumps(sorted(set(sys.modules) - before)))
ResultStore({root!r}).read()  # a sweep that resumes checks the stored runs before its warm-up
print("pandas" in sys.modules)
"""


def test_the_warm_up_loads_everything_a_workers_first_run_needs(tmp_path: Path):
    """Decision 0009: a worker forked after the sweep's warm-up imports nothing when it runs and
    stores its first run (PyArrow's first table imported pandas there, 0.7 s in every worker);
    and no sweep process imports pandas, nor when it reads the stored runs (``pa.array`` and
    ``pq.read_table`` import it: 0.35 s of the warm-up or of a resumed sweep's start; issue 33
    item 2)."""
    env = {**os.environ, "PYTHONPATH": SRC}
    script = FIRST_RUN_SCRIPT.format(root=str(tmp_path / "out"))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-2:] == ["[]", "False"]
    assert len(ResultStore(tmp_path / "out").done()) == 1
