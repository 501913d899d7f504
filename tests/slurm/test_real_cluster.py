"""``schedlab slurm`` on a real Slurm (issue 46 item 3): the starts Slurm carries out are
schedlab's, in order and in placement, and schedlab's simulation of the same jobs (their observed
run times) starts them in the same order at the same times; a kill -9 runs no job twice; scancel,
jobs changed by hand, drained nodes and an unreachable slurmctld; and the test cluster itself
(it starts, holds jobs, runs what is released on the nodes named, keeps finished jobs readable,
leaves no daemon behind). Skipped as a whole, in one line, where Slurm is not installed."""

from __future__ import annotations

import collections
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import schedlab
from schedlab.model.spec import load_spec
from schedlab.report.jobs_formats import Finished
from schedlab.slurm.adapter import Adapter, partition_nodes
from schedlab.slurm.slurmctl import Slurm
from tests.helpers.slurm_spec import spec_text
from tests.slurm.conftest import skip_without_slurm, start_cluster

skip_without_slurm()
pytestmark = pytest.mark.slow  # real daemons and jobs that sleep: minutes of waiting


def sbatch(cluster, nodes: int, sleep: int, limit: int = 1) -> int:
    """A job of ``nodes`` nodes sleeping ``sleep`` s (time limit ``limit`` min) that appends its
    id to runs.txt when it runs."""
    runs = cluster.root / "runs.txt"
    out = cluster.run(
        "sbatch", "--parsable", "-N", str(nodes), "-t", str(limit), "-o", "/dev/null",
        "--wrap", f"echo $SLURM_JOB_ID >> {runs}; sleep {sleep}",
    )  # fmt: skip
    return int(out.stdout)


def submit(cluster, n: int, seed: int, sleeps: tuple[int, int] = (1, 3)) -> list[int]:
    """``n`` jobs of 1-3 nodes sleeping ``sleeps`` s (1-3), time limits 1-5 min."""
    return cluster.submit_sleeps(n, seed, sleeps)


def adapter_for(cluster, policy: str, log: Path, slurm: Slurm | None = None) -> Adapter:
    spec = cluster.root / "cluster.toml"
    spec.write_text(spec_text(cluster.nodes))
    slurm = slurm or Slurm(env={"SLURM_CONF": str(cluster.conf)})
    return Adapter(
        spec=load_spec(spec),
        policy=policy,
        slurm=slurm,
        partition="batch",
        nodes=partition_nodes(slurm, "batch"),
        log_path=log,
    ).open()


def run_until_idle(adapter: Adapter, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    adapter.run(poll=0.1, stop=lambda: adapter.idle() or time.monotonic() > deadline)
    adapter.close()
    assert adapter.idle(), "the adapter did not finish the jobs in time"


def slurm_jobs(cluster) -> dict[int, dict]:
    out = cluster.run("squeue", "--json", "--states=all").stdout
    return {j["job_id"]: j for j in json.loads(out)["jobs"]}


def ran_once(cluster, ids: list[int]) -> None:
    counts = collections.Counter(int(x) for x in (cluster.root / "runs.txt").read_text().split())
    assert counts == dict.fromkeys(ids, 1)


def simulated(log: Path, policy: str, k: int, tmp: Path) -> dict[int, tuple[float, tuple]]:
    """The jobs of the event log simulated with ``policy`` on k nodes (arrival: their submission
    to the adapter; duration: from their start to their completion as the adapter saw them;
    estimate: their time limit): each job's simulated start, from the first arrival, and the
    nodes the simulation's jobs output (its evalys/Gantt placement) gives it."""
    records = [json.loads(line) for line in log.read_text().splitlines()][1:]
    submitted = [(r["at"], s) for r in records for s in r.get("submit", [])]
    done_at = {j: r["at"] for r in records for j in r.get("complete", [])}
    started = {s.job: s.time for s in replayed(log, k).starts}
    lines = ["arrival,duration,need,estimate"]
    for at, s in submitted:
        lines.append(
            f"{at!r},{done_at[s['id']] - started[s['id']]!r},{s['need']},{s['requested']!r}"
        )
    trace = tmp / "observed.csv"
    trace.write_text("\n".join(lines) + "\n")
    spec = {
        "cluster": {"servers": k},
        "workload": {"arrivals": {"process": "trace", "path": str(trace)}},
        "policy": {"name": policy},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4},
    }
    done = Finished.of(schedlab.simulate(spec).jobs)  # every job, in arrival order
    placed = done.servers(k)
    order = [s["id"] for _, s in submitted]
    return {
        job: (float(done.start[i]), tuple(f"n{n + 1}" for n in placed.servers(i).tolist()))
        for i, job in enumerate(order)
    }


def replayed(log: Path, k: int) -> Adapter:
    """An adapter rebuilt from the event log alone (no Slurm is read)."""
    records = [json.loads(line) for line in log.read_text().splitlines()]
    spec = log.parent / "replay.toml"
    spec.write_text(spec_text(k))
    adapter = Adapter(
        spec=load_spec(spec),
        policy=records[0]["policy"],
        slurm=Slurm(),
        partition="batch",
        nodes=records[0]["nodes"],
        log_path=log,
    ).open()
    adapter.close()
    return adapter


@pytest.mark.parametrize("slurm_cluster", [12], indirect=True)
@pytest.mark.parametrize("policy", ["fcfs", "easy-backfill"])
def test_slurm_carries_out_the_policy(slurm_cluster, tmp_path, policy):
    c = slurm_cluster
    ids = submit(c, 40, seed=46)
    log = tmp_path / "events.jsonl"
    adapter = adapter_for(c, policy, log)
    run_until_idle(adapter)
    jobs = slurm_jobs(c)
    assert {jobs[i]["job_state"] for i in ids} == {"COMPLETED"}
    ran_once(c, ids)
    assert sorted(s.job for s in adapter.starts) == sorted(ids)
    for s in adapter.starts:  # placement: Slurm ran each job on the nodes schedlab named
        assert tuple(Slurm().hostnames(jobs[s.job]["nodes"])) == s.nodes
    starts = [jobs[s.job]["start_time"] for s in adapter.starts]  # order: Slurm's follows
    assert starts == sorted(starts)
    # FCFS starts in submission order; EASY backfilled at least one job ahead of an earlier one
    order = [s.job for s in adapter.starts]
    assert (order == sorted(order)) == (policy == "fcfs")
    # the simulation of the observed jobs starts them at the adapter's instants
    first = json.loads(log.read_text().splitlines()[1])["at"]  # the first arrival
    twin = simulated(log, policy, c.nodes, tmp_path)
    sim = {j: start for j, (start, _) in twin.items()}
    live = {s.job: s.time - first for s in adapter.starts}
    assert sorted(sim, key=lambda j: (sim[j], j)) == sorted(live, key=lambda j: (live[j], j))
    assert max(abs(sim[j] - live[j]) for j in ids) < 1e-6
    # and on the same nodes: the live run's Gantt chart is the simulation's jobs output's
    assert {s.job: s.nodes for s in adapter.starts} == {j: nodes for j, (_, nodes) in twin.items()}


class Crash(Exception):
    """The adapter's process dies (kill -9) at this point."""


class CrashingSlurm(Slurm):
    """Slurm's commands, the adapter dying just before its ``after``-th release: its decision
    is in the event log, Slurm still holds the job."""

    def __init__(self, env, after: int) -> None:
        super().__init__(env=env)
        self.left = after

    def start(self, job, nodes, comment):
        self.left -= 1
        if self.left == 0:
            raise Crash
        super().start(job, nodes, comment)


def test_a_crash_between_decision_and_release_starts_each_job_once(slurm_cluster, tmp_path):
    c = slurm_cluster
    ids = submit(c, 5, seed=7, sleeps=(1, 1))
    log = tmp_path / "events.jsonl"
    env = {"SLURM_CONF": str(c.conf)}
    first = adapter_for(c, "fcfs", log, CrashingSlurm(env, after=3))
    with pytest.raises(Crash):
        first.run(poll=0.1)
    first.close()
    again = adapter_for(c, "fcfs", log)
    run_until_idle(again)
    jobs = slurm_jobs(c)
    assert {jobs[i]["job_state"] for i in ids} == {"COMPLETED"}
    ran_once(c, ids)
    assert sorted(s.job for s in again.starts) == sorted(ids)  # the replay knows every start
    for s in again.starts:
        assert tuple(Slurm().hostnames(jobs[s.job]["nodes"])) == s.nodes


def test_kill_9_and_restart_runs_every_job_exactly_once(slurm_cluster, tmp_path):
    c = slurm_cluster
    ids = submit(c, 10, seed=3, sleeps=(1, 2))
    log = tmp_path / "events.jsonl"
    spec = tmp_path / "cluster.toml"
    spec.write_text(spec_text(c.nodes))
    command = [
        sys.executable, "-c", "from schedlab.cli import main; main()", "slurm", "--spec",
        str(spec), "--policy", "easy-backfill", "--event-log", str(log), "--poll", "0.1",
    ]  # fmt: skip
    env = {**c.env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    adapter = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(bool(r.get("complete")) for r in _lines(log)) < 3:
        time.sleep(0.1)
    adapter.kill()  # kill -9, mid-run
    adapter.wait()
    time.sleep(2.0)  # jobs end while no adapter runs
    done = subprocess.run(
        [*command, "--exit-when-idle"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    jobs = slurm_jobs(c)
    assert {jobs[i]["job_state"] for i in ids} == {"COMPLETED"}
    ran_once(c, ids)
    replay = replayed(log, c.nodes)
    assert sorted(s.job for s in replay.starts) == sorted(ids)
    assert not replay.known  # every job completed in the log
    for s in replay.starts:
        assert tuple(Slurm().hostnames(jobs[s.job]["nodes"])) == s.nodes


def _lines(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")]


def test_scancel_is_a_completion_and_a_job_changed_by_hand_is_reconciled(
    slurm_cluster, tmp_path, caplog
):
    """4 nodes: A (4 nodes, sleeps 60 s) runs, B (4 nodes) and C wait. C released by hand is
    held again (the policy decides); scancel A: a completion, B starts; C cancelled while
    waiting: withdrawn, never started."""
    c = slurm_cluster
    a, b, cc = sbatch(c, 4, 60, 2), sbatch(c, 4, 1), sbatch(c, 1, 1)
    adapter = adapter_for(c, "fcfs", tmp_path / "events.jsonl")
    caplog.set_level(logging.INFO, logger="schedlab.slurm")
    adapter.step()
    assert [s.job for s in adapter.starts] == [a]
    wait_state(c, a, "RUNNING")
    c.run("scontrol", "release", str(cc))  # behind the adapter's back
    adapter.step()
    assert slurm_jobs(c)[cc]["priority"] == 0  # held again
    assert f"waiting job {cc} was released by hand: held again" in caplog.text
    c.run("scancel", str(cc))
    c.run("scancel", str(a))
    wait_state(c, a, "CANCELLED")
    adapter.step()
    assert f"job {a} ended (CANCELLED): a completion" in caplog.text
    assert f"waiting job {cc} is CANCELLED" in caplog.text
    assert [s.job for s in adapter.starts] == [a, b]
    assert adapter.scheduler.state().queue == ()
    adapter.close()
    assert str(cc) not in (c.root / "runs.txt").read_text().split()  # it never ran


def wait_state(cluster, job: int, state: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while slurm_jobs(cluster)[job]["job_state"] != state:
        assert time.monotonic() < deadline, f"job {job} never {state}"
        time.sleep(0.1)


def test_a_drained_node_gets_no_job_and_comes_back_when_resumed(slurm_cluster, tmp_path):
    c = slurm_cluster
    c.run("scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=schedlab-test")
    ids = [sbatch(c, 1, 1) for _ in range(6)]
    whole = sbatch(c, 4, 1)
    adapter = adapter_for(c, "fcfs", tmp_path / "events.jsonl")
    deadline = time.monotonic() + 60
    adapter.run(poll=0.1, stop=lambda: set(adapter.known) == {whole} or time.monotonic() > deadline)
    assert whole in adapter.parked  # 4 nodes asked, 3 in service
    jobs = slurm_jobs(c)
    assert {jobs[i]["job_state"] for i in ids} == {"COMPLETED"}
    assert all("n1" not in s.nodes for s in adapter.starts)
    c.run("scontrol", "update", "NodeName=n1", "State=RESUME")
    run_until_idle(adapter)
    assert adapter.starts[-1].job == whole and adapter.starts[-1].nodes == ("n1", "n2", "n3", "n4")


def test_slurm_unreachable_is_retried_with_backoff(slurm_cluster, tmp_path, caplog):
    """slurmctld stopped (SIGSTOP) for 3 s: the reads time out, the adapter says so and retries,
    and finishes the jobs once it answers again."""
    c = slurm_cluster
    ids = submit(c, 4, seed=1, sleeps=(1, 1))
    slurm = Slurm(env={"SLURM_CONF": str(c.conf)}, timeout=1.0)
    adapter = adapter_for(c, "fcfs", tmp_path / "events.jsonl", slurm)
    caplog.set_level(logging.INFO, logger="schedlab.slurm")
    os.kill(c.pids["slurmctld"], signal.SIGSTOP)
    try:
        thread = threading.Thread(target=run_until_idle, args=(adapter, 60.0))
        thread.start()
        time.sleep(3.0)
    finally:
        os.kill(c.pids["slurmctld"], signal.SIGCONT)
    thread.join()
    assert "Slurm unreachable" in caplog.text
    ran_once(c, ids)
    assert adapter.idle()


def test_a_start_not_carried_out_before_its_node_drains_is_decided_again(slurm_cluster, tmp_path):
    """The adapter dies before releasing a and b (pinned to n1 and n2); n1 is drained before it
    restarts: both wait again and start on the nodes in service, each once."""
    c = slurm_cluster
    a, b = sbatch(c, 1, 1), sbatch(c, 1, 1)
    log = tmp_path / "events.jsonl"
    first = adapter_for(c, "fcfs", log, CrashingSlurm({"SLURM_CONF": str(c.conf)}, after=1))
    with pytest.raises(Crash):
        first.step()
    first.close()
    assert [(s.job, s.nodes) for s in first.starts] == [(a, ("n1",)), (b, ("n2",))]
    c.run("scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=schedlab-test")
    again = adapter_for(c, "fcfs", log)
    run_until_idle(again)
    jobs = slurm_jobs(c)
    assert (jobs[a]["nodes"], jobs[b]["nodes"]) == ("n2", "n3")
    assert [(s.job, s.nodes) for s in again.starts][-2:] == [(a, ("n2",)), (b, ("n3",))]
    ran_once(c, [a, b])


def test_a_waiting_job_started_by_hand_is_withdrawn_and_holds_its_node(
    slurm_cluster, tmp_path, caplog
):
    """4 nodes, FCFS: a (3 nodes) runs, b (2 nodes) and c (1 node) wait. c released by hand
    starts on n4: withdrawn, never counted as the policy's, and n4 leaves the capacity until c
    ends; scancel a: b starts on n1, n2."""
    c = slurm_cluster
    a, b, cc = sbatch(c, 3, 60, 2), sbatch(c, 2, 1), sbatch(c, 1, 3)
    adapter = adapter_for(c, "fcfs", tmp_path / "events.jsonl")
    caplog.set_level(logging.INFO, logger="schedlab.slurm")
    adapter.step()
    assert [(s.job, s.nodes) for s in adapter.starts] == [(a, ("n1", "n2", "n3"))]
    c.run("scontrol", "release", str(cc))
    wait_state(c, cc, "RUNNING")
    adapter.step()
    assert f"waiting job {cc} is RUNNING behind the adapter's back" in caplog.text
    assert adapter.out == {3} and cc not in adapter.known
    wait_state(c, cc, "COMPLETED")
    adapter.step()
    assert adapter.out == set()
    c.run("scancel", str(a))
    wait_state(c, a, "CANCELLED")
    adapter.step()
    assert [(s.job, s.nodes) for s in adapter.starts] == [
        (a, ("n1", "n2", "n3")),
        (b, ("n1", "n2")),
    ]
    adapter.close()


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_jobs_arrive_held_and_run_where_released(slurm_cluster):
    c = slurm_cluster
    assert c.idle()
    nodes = c.run("sinfo", "-h", "-N", "-o", "%N %t").stdout.split("\n")
    assert sorted(line for line in nodes if line) == [f"n{i} idle" for i in range(1, 5)]
    out = c.run(
        "sbatch", "--parsable", "-N", "2", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"
    ).stdout
    job = int(out.strip())
    time.sleep(1.0)  # a job not held would have started by now (four idle nodes)
    held = slurm_jobs(c)[job]
    assert held["job_state"] == "PENDING" and held["priority"] == 0
    c.run("scontrol", "update", f"JobId={job}", "ReqNodeList=n2,n4")
    c.run("scontrol", "release", str(job))
    assert wait_for(lambda: slurm_jobs(c)[job]["job_state"] == "COMPLETED")
    done = slurm_jobs(c)[job]
    assert done["nodes"] == "n[2,4]"
    assert 1 <= done["end_time"] - done["start_time"] <= 2
    assert f"JobId={job} " in (c.root / "jobcomp.txt").read_text()


def test_stop_ends_every_daemon_by_pid(tmp_path):
    cluster = start_cluster(tmp_path, nodes=2)
    pids = dict(cluster.pids)
    assert set(pids) == {"munged", "slurmctld", "slurmd-n1", "slurmd-n2"}
    cluster.stop()
    for pid in pids.values():
        assert not os.path.exists(f"/proc/{pid}") or _zombie(pid)
    assert not (tmp_path / "pids.json").exists()


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] == "Z"


def test_a_node_drained_under_a_running_job_leaves_when_the_job_ends(slurm_cluster, tmp_path):
    """4 nodes, FCFS: a (1 node) runs on n1, b (4 nodes) waits; n1 is drained while a runs. When
    a ends, n1 leaves (b waits, 3 nodes in service); resumed, b starts on n1-n4."""
    c = slurm_cluster
    a, b = sbatch(c, 1, 2), sbatch(c, 4, 1)
    adapter = adapter_for(c, "fcfs", tmp_path / "events.jsonl")
    adapter.step()
    assert [(s.job, s.nodes) for s in adapter.starts] == [(a, ("n1",))]
    wait_state(c, a, "RUNNING")
    c.run("scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=schedlab-test")
    adapter.step()  # n1 draining: out, but a keeps it (the scheduler still counts 4 nodes)
    assert adapter.out == {0} and adapter.k == 4
    wait_state(c, a, "COMPLETED")
    adapter.step()
    assert adapter.k == 3 and b in adapter.parked
    assert [s.job for s in adapter.starts] == [a]
    c.run("scontrol", "update", "NodeName=n1", "State=RESUME")
    deadline = time.monotonic() + 30
    adapter.run(poll=0.1, stop=lambda: len(adapter.starts) > 1 or time.monotonic() > deadline)
    assert [(s.job, s.nodes) for s in adapter.starts][-1] == (b, ("n1", "n2", "n3", "n4"))
    adapter.close()


def test_a_job_the_partition_cannot_hold_stays_held_with_its_reason(
    slurm_cluster, tmp_path, caplog
):
    """9 nodes asked of 4: it stays held, its comment says why, one log line says so (not one per
    poll); the other jobs run."""
    c = slurm_cluster
    big, small = sbatch(c, 9, 1), sbatch(c, 1, 1)
    adapter = adapter_for(c, "fcfs", tmp_path / "events.jsonl")
    caplog.set_level(logging.INFO, logger="schedlab.slurm")
    for _ in range(3):
        adapter.step()
    reason = "schedlab: needs 9 nodes, partition batch has 4"
    job = slurm_jobs(c)[big]
    assert job["job_state"] == "PENDING" and job["priority"] == 0 and job["comment"] == reason
    assert caplog.text.count(f"job {big} stays held: {reason}") == 1
    assert big not in adapter.known and [s.job for s in adapter.starts] == [small]
    adapter.close()
    again = adapter_for(c, "fcfs", tmp_path / "events.jsonl")  # a restart says it no more
    again.step()
    again.close()
    assert caplog.text.count(f"job {big} stays held") == 1
