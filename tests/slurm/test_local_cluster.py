"""The test cluster itself: it starts, holds jobs, runs what is released on the nodes named, keeps
finished jobs readable, and leaves no daemon behind."""

from __future__ import annotations

import json
import os
import time

from tests.slurm.conftest import start_cluster


def jobs(cluster) -> dict[int, dict]:
    out = cluster.run("squeue", "--json", "--states=all").stdout
    return {j["job_id"]: j for j in json.loads(out)["jobs"]}


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
    out = c.run("sbatch", "--parsable", "-N", "2", "-t", "1", "--wrap", "sleep 1").stdout
    job = int(out.strip())
    time.sleep(1.0)  # a job not held would have started by now (four idle nodes)
    held = jobs(c)[job]
    assert held["job_state"] == "PENDING" and held["priority"] == 0
    c.run("scontrol", "update", f"JobId={job}", "ReqNodeList=n2,n4")
    c.run("scontrol", "release", str(job))
    assert wait_for(lambda: jobs(c)[job]["job_state"] == "COMPLETED")
    done = jobs(c)[job]
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
