"""``schedlab slurm`` on a real Slurm (issue 46 item 3): the starts Slurm carries out are
schedlab's, in order and in placement, and schedlab's simulation of the same jobs (their observed
run times) starts them in the same order at the same times."""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path

import numpy as np
import pytest

import schedlab
from schedlab.model.spec import load_spec
from schedlab.slurm.adapter import Adapter, partition_nodes
from schedlab.slurm.slurmctl import Slurm

SPEC = """
[cluster]
servers = 4
[workload]
load = 0.5
[[workload.classes]]
name = "batch"
probability = 1.0
need = 1
duration = { dist = "exponential", mean = 1.0 }
[policy]
name = "fcfs"
[run]
arrivals = 10
"""


def submit(cluster, n: int, seed: int) -> list[int]:
    """``n`` jobs of 1-3 nodes sleeping 1-3 s, time limits 1-5 min; each appends its id to
    runs.txt when it runs."""
    rng = np.random.default_rng(seed)
    runs = cluster.root / "runs.txt"
    ids = []
    for _ in range(n):
        need, sleep, limit = (
            int(x) for x in (rng.integers(1, 4), rng.integers(1, 4), rng.integers(1, 6))
        )
        script = f"echo $SLURM_JOB_ID >> {runs}; sleep {sleep}"
        out = cluster.run(
            "sbatch",
            "--parsable",
            "-N",
            str(need),
            "-t",
            str(limit),
            "-o",
            "/dev/null",
            "--wrap",
            script,
        ).stdout
        ids.append(int(out.strip()))
    return ids


def adapter_for(cluster, policy: str, log: Path) -> Adapter:
    spec = cluster.root / "cluster.toml"
    spec.write_text(SPEC)
    slurm = Slurm(env={"SLURM_CONF": str(cluster.conf)})
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


def simulated_starts(log: Path, policy: str, tmp: Path) -> dict[int, float]:
    """The jobs of the event log simulated with ``policy`` on 4 nodes (arrival: their submission
    to the adapter; duration: from their start to their completion as the adapter saw them;
    estimate: their time limit): each job's simulated start, from the first arrival."""
    records = [json.loads(line) for line in log.read_text().splitlines()][1:]
    submitted = [(r["at"], s) for r in records for s in r.get("submit", [])]
    done_at = {j: r["at"] for r in records for j in r.get("complete", [])}
    started = {s.job: s.time for s in replayed(log).starts}
    lines = ["arrival,duration,need,estimate"]
    for at, s in submitted:
        lines.append(
            f"{at!r},{done_at[s['id']] - started[s['id']]!r},{s['need']},{s['requested']!r}"
        )
    trace = tmp / "observed.csv"
    trace.write_text("\n".join(lines) + "\n")
    spec = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(trace)}},
        "policy": {"name": policy},
        "run": {"jobs": True, "allow_unstable": True, "warmup": 0.0, "batches": 4},
    }
    result = schedlab.simulate(spec).jobs.to_pydict()
    order = [s["id"] for _, s in submitted]
    return {order[seq]: start for seq, start in zip(result["job"], result["start"], strict=True)}


def replayed(log: Path) -> Adapter:
    """An adapter rebuilt from the event log alone (no Slurm is read)."""
    records = [json.loads(line) for line in log.read_text().splitlines()]
    spec = log.parent / "replay.toml"
    spec.write_text(SPEC)
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
    # the simulation of the observed jobs starts them at the adapter's instants
    first = min(r.time for r in adapter.starts)
    simulated = simulated_starts(log, policy, tmp_path)
    live = {s.job: s.time - first for s in adapter.starts}
    assert sorted(simulated, key=lambda j: (simulated[j], j)) == sorted(
        live, key=lambda j: (live[j], j)
    )
    assert max(abs(simulated[j] - live[j]) for j in ids) < 1e-6
