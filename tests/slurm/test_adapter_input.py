"""The adapter's boundaries without a Slurm: the spec against the partition, the event log's
header and a last line cut short, Slurm's node lists and node states, squeue's job records."""

from __future__ import annotations

import json

import pytest

from schedlab.errors import SchedlabError, SpecError
from schedlab.model.spec import parse_spec
from schedlab.slurm.adapter import Adapter, _out
from schedlab.slurm.slurmctl import Slurm, SlurmJob, _expand

SPEC = {
    "cluster": {"servers": 4},
    "workload": {
        "load": 0.5,
        "classes": [
            {
                "name": "batch",
                "probability": 1.0,
                "need": 1,
                "duration": {"dist": "exponential", "mean": 1.0},
            }
        ],
    },
    "policy": {"name": "fcfs"},
    "run": {"arrivals": 10},
}  # fmt: skip


def adapter(tmp_path, nodes=("n1", "n2", "n3", "n4"), policy="fcfs") -> Adapter:
    return Adapter(
        spec=parse_spec(SPEC),
        policy=policy,
        slurm=Slurm(),
        partition="batch",
        nodes=list(nodes),
        log_path=tmp_path / "events.jsonl",
    )


def test_a_spec_for_another_node_count_is_one_line(tmp_path):
    with pytest.raises(SpecError) as e:
        adapter(tmp_path, nodes=("n1", "n2", "n3"))
    assert str(e.value) == (
        "cluster.servers: the spec has 4 servers, partition 'batch' has 3 nodes (n1,n2,n3)"
    )


def test_a_log_of_another_policy_or_nodes_is_refused(tmp_path):
    adapter(tmp_path).open().close()
    with pytest.raises(
        SchedlabError, match=r"events.jsonl:1: policy: the log was written for 'fcfs'"
    ):
        adapter(tmp_path, policy="easy-backfill").open()
    with pytest.raises(SchedlabError, match=r"events.jsonl:1: nodes: "):
        adapter(tmp_path, nodes=("m1", "m2", "m3", "m4")).open()


def test_the_log_replays_decisions_and_drops_a_last_line_cut_short(tmp_path):
    """Events written by hand: FCFS on 4 nodes; a 4-node job waits behind two running ones."""
    a = adapter(tmp_path).open()
    a.close()
    log = tmp_path / "events.jsonl"
    records = [
        {"op": "events", "at": 1.0, "complete": [], "submit": [
            {"id": 10, "need": 2, "requested": 60.0, "class": "batch"},
            {"id": 11, "need": 1, "requested": 60.0, "class": "batch"},
            {"id": 12, "need": 4, "requested": 60.0, "class": None},
        ]},
        {"op": "events", "at": 2.0, "complete": [10], "submit": []},
    ]  # fmt: skip
    with log.open("a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.write('{"op":"events","at":3.0,"comp')  # the crash cut the last line
    b = adapter(tmp_path).open()
    b.close()
    assert [(s.job, s.nodes) for s in b.starts] == [(10, ("n1", "n2")), (11, ("n3",))]
    assert b.scheduler.state().queue == (12,)
    assert b.time == 2.0
    assert log.read_text().endswith("}\n")  # the cut line is gone
    c = adapter(tmp_path).open()
    c.close()
    assert c.starts == b.starts


def test_a_rebuilt_scheduler_s_servers_are_the_nodes_its_running_jobs_hold(tmp_path):
    """FCFS on 4 nodes, a log written by hand: A (1 node) on n1, B (1) on n2; A ends, C (2)
    takes n1 and n3 (the lowest free). n4 drains: the rebuilt scheduler (3 servers) is given B
    then C again and names them servers 0 and 1-2, which are B's and C's nodes n2 and n1, n3.
    B ends: D (1) takes the server B freed, node n2, not n1 (C's)."""
    adapter(tmp_path).open().close()
    log = tmp_path / "events.jsonl"

    def job(i, need):
        return {"id": i, "need": need, "requested": 60.0, "class": "batch"}

    records = [
        {"op": "events", "at": 1.0, "complete": [], "submit": [job(1, 1), job(2, 1)]},
        {"op": "events", "at": 2.0, "complete": [1], "submit": [job(3, 2)]},
        {"op": "rebuild", "at": 3.0, "out": [3], "ended": [], "withdraw": [], "submit": []},
        {"op": "events", "at": 4.0, "complete": [2], "submit": [job(4, 1)]},
    ]
    with log.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    a = adapter(tmp_path).open()
    a.close()
    assert [(s.job, s.nodes) for s in a.starts] == [
        (1, ("n1",)),
        (2, ("n2",)),
        (3, ("n1", "n3")),
        (4, ("n2",)),
    ]
    assert a.node_of == [1, 0, 2] and a.held == {3: (0, 2), 4: (1,)}


def test_the_log_refuses_a_bad_line_that_is_not_the_last(tmp_path):
    adapter(tmp_path).open().close()
    log = tmp_path / "events.jsonl"
    with log.open("a") as f:
        f.write("not json\n")
        f.write(json.dumps({"op": "events", "at": 1.0, "complete": [], "submit": []}) + "\n")
    with pytest.raises(SchedlabError, match=r"events.jsonl:2: not a JSON line"):
        adapter(tmp_path).open()


@pytest.mark.parametrize(
    ("nodes", "names"),
    [
        ("", []),
        ("n1", ["n1"]),
        ("n[1-3,5]", ["n1", "n2", "n3", "n5"]),
        ("n[08-10],m2", ["n08", "n09", "n10", "m2"]),
        ("a[1-2]-ib,b3", ["a1-ib", "a2-ib", "b3"]),
    ],
)
def test_slurm_node_lists_expand_as_scontrol_show_hostnames(nodes, names):
    assert _expand(nodes) == names


@pytest.mark.parametrize(
    ("state", "out"),
    [
        ("idle", False),
        ("allocated", False),
        ("mixed", False),
        ("completing", False),
        ("drained", True),
        ("draining", True),
        ("down", True),
        ("down*", True),
        ("idle*", True),
        ("maint", True),
        ("unknown", True),
    ],
)
def test_nodes_out_of_service(state, out):
    assert _out(state) is out


def test_a_squeue_record_becomes_a_job():
    record = {
        "job_id": 7, "job_state": "PENDING", "priority": 0, "partition": "batch",
        "node_count": 3, "cpus": 3, "time_limit": 5, "submit_time": 100, "start_time": 0,
        "end_time": 0, "nodes": "", "comment": "",
    }  # fmt: skip
    job = SlurmJob.of(record, _expand)
    assert (job.id, job.held, job.nodes, job.time_limit, job.node_list) == (7, True, 3, 300.0, ())
    ran = SlurmJob.of({**record, "job_state": "TIMEOUT", "priority": 9, "nodes": "n[1-3]"}, _expand)
    assert not ran.held and ran.ended and ran.node_list == ("n1", "n2", "n3")
    assert SlurmJob.of({**record, "time_limit": None}, _expand).time_limit == float("inf")


def test_schedlab_slurm_with_a_missing_slurm_conf_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from schedlab.cli import app

    spec = tmp_path / "cluster.toml"
    spec.write_text(json_to_toml(SPEC))
    conf = tmp_path / "missing" / "slurm.conf"
    result = CliRunner().invoke(
        app, ["slurm", "--spec", str(spec), "--slurm-conf", str(conf)], env={"SLURM_CONF": ""}
    )
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and output.count("error:") == 1
    assert output == f"error: --slurm-conf: {conf} is not a file"
    assert not (tmp_path / "schedlab-slurm.jsonl").exists()


def json_to_toml(spec: dict) -> str:
    import tomli_w

    return tomli_w.dumps(spec)
