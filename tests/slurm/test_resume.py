"""The adapter's resume on its Idempotency-Keys and action cursor (issue 46 durability, issue 45
item 2; decision 0028 "Resume"), against a fake slurmctl whose clock the test drives: a crash
after the log and before a release, after a release and before the cursor write, or after the
cursor write, then a restart on the same log. Every job is released exactly once, on the nodes
first decided; when Slurm's world does not move while the adapter is down, the resumed run's
event log is the uncrashed run's, line for line (event times are Slurm's, not the poll clock's)."""

from __future__ import annotations

import collections
import dataclasses
import json
import logging

import pytest

from schedlab.model.spec import parse_spec
from schedlab.slurm.adapter import Adapter
from schedlab.slurm.slurmctl import Refused, SlurmJob
from tests.slurm.test_adapter_input import SPEC

NODES = ["n1", "n2", "n3", "n4"]
T0 = 1_000_000  # Slurm's clock at the start (s since the epoch)
# (submitted at, nodes, runs for): FCFS on 4 nodes makes C and E wait, D and F start on ends
JOBS = [(0, 2, 3), (0, 1, 2), (0, 2, 4), (1, 1, 1), (2, 3, 2), (4, 1, 1), (4, 2, 2)]


class Crash(Exception):
    """The adapter's process dies (kill -9) here."""


class FakeSlurm:
    """A slurmctld as the adapter sees it: squeue's records, node states, pin and release. A
    released job runs at once on the nodes named (its start time: Slurm's clock); ``tick``
    moves the clock by one second and ends the jobs whose run is over (end time: start + run)."""

    def __init__(self) -> None:
        self.now = T0
        self.records: dict[int, SlurmJob] = {}
        self.runs: dict[int, int] = {}
        self.releases: list[tuple[int, tuple[str, ...]]] = []
        self.crash_at: tuple[str, int] | None = None  # ("before"/"after" release, its number)

    def sbatch(self, nodes: int, runs: int) -> int:
        job = 100 + len(self.records)
        self.runs[job] = runs
        self.records[job] = SlurmJob(
            job, "PENDING", True, "batch", nodes, nodes, 600.0, self.now, 0, 0, (), ""
        )
        return job

    def tick(self) -> None:
        self.now += 1
        for job, s in self.records.items():
            if s.state == "RUNNING" and s.start_time + self.runs[job] <= self.now:
                end = s.start_time + self.runs[job]
                self.records[job] = dataclasses.replace(s, state="COMPLETED", end_time=end)

    def jobs(self) -> list[SlurmJob]:
        return list(self.records.values())

    def nodes(self, partition: str) -> dict[str, str]:
        return dict.fromkeys(NODES, "idle")

    def start(self, job: int, nodes: list[str], comment: str) -> None:
        s = self.records[job]
        if not s.held:
            raise Refused(f"job {job} is not held")
        n = len(self.releases) + 1
        if self.crash_at == ("before", n):
            self.crash_at = None
            raise Crash
        self.releases.append((job, tuple(nodes)))
        self.records[job] = dataclasses.replace(
            s, state="RUNNING", held=False, start_time=self.now, node_list=tuple(nodes)
        )
        if self.crash_at == ("after", n):
            self.crash_at = None
            raise Crash

    def hold(self, job: int, comment: str) -> None:  # the test releases nothing by hand
        raise AssertionError("not reached")

    def comment(self, job: int, comment: str) -> None:
        raise AssertionError("not reached")


def open_adapter(slurm: FakeSlurm, tmp_path) -> Adapter:
    return Adapter(
        spec=parse_spec(SPEC),
        policy="fcfs",
        slurm=slurm,
        partition="batch",
        nodes=NODES,
        log_path=tmp_path / "events.jsonl",
        clock=lambda: slurm.now + 0.5,  # the poll clock runs half a second after Slurm's
    ).open()


def run(tmp_path, crash: tuple[str, int] | None = None, down: int = 0, monkeypatch=None):
    """The jobs of JOBS submitted on time, one poll a second until the adapter is idle; at
    ``crash`` the adapter dies and a new one starts on the same log ``down`` seconds later.
    The fake slurmctl, every start the first adapter decided, and the last adapter."""
    tmp_path.mkdir(exist_ok=True)
    slurm = FakeSlurm()
    if crash is not None and crash[0] in ("before", "after"):
        slurm.crash_at = crash
    elif crash is not None:  # ("cursor", n): dies just after writing cursor n
        advance = Adapter._advance

        def advance_then_die(self, n):
            advance(self, n)
            if n == crash[1]:
                raise Crash

        monkeypatch.setattr(Adapter, "_advance", advance_then_die)
    adapter = open_adapter(slurm, tmp_path)
    decided, crashed = [], False

    def tick() -> None:  # Slurm's clock moves; the jobs due are submitted
        slurm.tick()
        for at, nodes, runs in JOBS:
            if slurm.now - T0 == at:
                slurm.sbatch(nodes, runs)

    slurm.now -= 1
    tick()
    while slurm.now - T0 < 60:
        try:
            adapter.step()
        except Crash:
            assert not crashed
            crashed = True
            decided = list(adapter.starts)
            adapter.close()
            for _ in range(down):
                tick()
            adapter = open_adapter(slurm, tmp_path)
            continue  # the restart polls at once
        if adapter.idle() and all(s.ended for s in slurm.records.values()):
            break
        tick()
    adapter.close()
    assert crashed == (crash is not None)
    return slurm, decided or adapter.starts, adapter


def lines(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("down", [0, 3])
@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("point", ["before", "after", "cursor"])
def test_a_restart_releases_every_job_once_on_the_nodes_first_decided(
    tmp_path, monkeypatch, point, n, down
):
    reference, _, _ = run(tmp_path / "reference")
    slurm, decided, last = run(tmp_path / "crashed", (point, n), down, monkeypatch)
    released = collections.Counter(job for job, _ in slurm.releases)
    assert released == dict.fromkeys(slurm.records, 1)
    first = {}
    for s in decided:  # the nodes of each start the crashed adapter had decided
        first.setdefault(s.job, s.nodes)
    assert {job: first[job] for job, _ in slurm.releases if job in first} == {
        job: nodes for job, nodes in slurm.releases if job in first
    }
    assert set(first) >= {job for job, _ in slurm.releases[: n - (point == "before")]}
    assert {s.job: s.nodes for s in last.starts} == dict(slurm.releases)
    assert last.cursor == len(last.starts) == len(slurm.records) == len(JOBS)
    assert (tmp_path / "crashed" / "events.jsonl.cursor").read_text() == f"{len(JOBS)}\n"
    assert all(s.state == "COMPLETED" for s in slurm.records.values())
    if down == 0:  # Slurm's world did not move: the same log, the same releases, in order
        assert lines(tmp_path / "crashed") == lines(tmp_path / "reference")
        assert slurm.releases == reference.releases


def test_event_times_are_slurm_s_made_monotone_and_keys_name_job_and_event(tmp_path):
    slurm, _, _ = run(tmp_path)
    records = lines(tmp_path)[1:]
    times = [r["at"] for r in records]
    assert times == sorted(times)
    for r in records:  # every job's event at its Slurm time (from the origin, T0 + 0.5)
        for s in r["submit"]:
            assert r["at"] == max(slurm.records[s["id"]].submit_time - T0 - 0.5, 0.0)
        for j in r["complete"]:
            assert r["at"] == slurm.records[j].end_time - T0 - 0.5
        assert sorted(r["keys"]) == sorted(
            [f"slurm-{s['id']}-submit" for s in r["submit"]]
            + [f"slurm-{j}-end" for j in r["complete"]]
        )
    keys = [k for r in records for k in r["keys"]]
    assert len(keys) == len(set(keys)) == 2 * len(JOBS)


def test_slurm_times_behind_the_last_event_are_mapped_to_it(tmp_path):
    """A job whose end Slurm dates before the last event (the adapter saw it late) ends at the
    last event's time: the scheduler never goes backwards."""
    slurm = FakeSlurm()
    a = slurm.sbatch(1, 5)
    adapter = open_adapter(slurm, tmp_path)
    adapter.step()  # a submitted (at 0: Slurm dates it before the origin) and started
    for _ in range(6):
        slurm.tick()  # a ends at T0 + 5
    late = slurm.sbatch(1, 1)  # submitted at T0 + 6
    slurm.records[a] = dataclasses.replace(slurm.records[a], end_time=T0 + 1)  # dated early
    adapter.time = 7.0  # as if an event at 7 had come (a rebuild at the poll clock)
    adapter.step()
    adapter.close()
    last = lines(tmp_path)[-1]
    assert (last["at"], last["complete"], [s["id"] for s in last["submit"]]) == (7.001, [a], [late])


def test_a_job_changed_after_it_was_taken_keeps_its_first_event(tmp_path, caplog):
    """A waiting job's node count changed after the adapter took it: its submit key comes back
    with another request; the first stands (one log line), nothing is fed twice."""
    slurm = FakeSlurm()
    a, b = slurm.sbatch(4, 3), slurm.sbatch(2, 1)
    adapter = open_adapter(slurm, tmp_path)
    adapter.step()  # a runs on the 4 nodes, b waits
    slurm.records[b] = dataclasses.replace(slurm.records[b], nodes=1)
    adapter.close()
    caplog.set_level(logging.WARNING, "schedlab.slurm")
    again = open_adapter(slurm, tmp_path)
    for _ in range(2):
        again.step()
    again.close()
    assert caplog.text.count(f"slurm-{b}-submit: Slurm shows the job changed since") == 1
    assert [s["need"] for r in lines(tmp_path)[1:] for s in r["submit"]] == [4, 2]
    assert again.scheduler.state().queue == (b,)
    assert [job for job, _ in slurm.releases] == [a]


def test_a_cursor_ahead_of_its_log_is_refused_in_one_line(tmp_path):
    from schedlab.errors import SchedlabError

    slurm = FakeSlurm()
    slurm.sbatch(1, 1)
    adapter = open_adapter(slurm, tmp_path)
    adapter.step()
    adapter.close()
    (tmp_path / "events.jsonl.cursor").write_text("9\n")
    with pytest.raises(SchedlabError, match=r"events.jsonl.cursor: start 9 was carried out, "):
        open_adapter(slurm, tmp_path)
