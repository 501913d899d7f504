"""The decision thread hands each event's log line and its request's wait straight to the group
commit, which answers the request once an fsync covering the line has completed (decision 0036):
several requests decided together are each answered with their own answer, none before its
fsync; a crash between the decision and the fsync loses no event that was answered; a retry of a
key whose first line is not yet on disk waits for it."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from pathlib import Path

from schedlab.service.decider import Decider, Outcome
from schedlab.service.eventlog import GroupCommit, Pending
from schedlab.service.schemas import AtRequest, SubmitRequest
from schedlab.service.server import start
from tests.service.test_eventlog import CountingLog

WAIT_S = 10.0


def test_a_batch_handed_over_together_gets_one_fsync_and_each_request_its_own_answer():
    """Five events of one decision batch: one write, one fsync, and each future is given its
    own event's answer (its line number here), only once that fsync has completed."""

    async def scenario() -> tuple[list[int], list[int], list[int]]:
        log = CountingLog()
        commit = GroupCommit(log)  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        batch = [Pending(b"{}\n", loop.create_future(), line) for line in range(1, 6)]
        durable_when_answered: list[int] = []
        for event in batch:
            event.done.add_done_callback(lambda _: durable_when_answered.append(log.covered[-1]))
        commit.hand_over(batch)
        answers = await asyncio.gather(*(event.done for event in batch))
        commit.stop()
        return answers, durable_when_answered, log.covered

    answers, durable_when_answered, covered = asyncio.run(scenario())
    assert answers == [1, 2, 3, 4, 5]
    assert covered == [5]
    assert durable_when_answered == [5] * 5


def test_the_requests_of_one_loop_pass_are_decided_in_one_batch_and_handed_over_in_order():
    """Twelve tasks started in one pass of the loop reach the decision thread together: they are
    decided in the order they were started, in one batch, and handed over in one call (the group
    commit's side here: a recorder that answers them); a refusal among them comes back without
    the hand-over; a task started in a later pass is a batch of its own."""
    batches: list[list[int]] = []
    decided: list[int] = []

    def recorder(outcomes: list[Outcome]) -> None:
        batches.append([outcome.result for outcome in outcomes])
        for outcome in outcomes:
            loop = outcome.done.get_loop()
            loop.call_soon_threadsafe(outcome.done.set_result, outcome.result)

    def decide(number: int) -> int:
        decided.append(number)
        if number == 5:
            raise ValueError("refused")
        return number

    decider = Decider(hand_over=recorder)

    async def scenario() -> list[int | BaseException]:
        together = [decider.run(lambda n=n: decide(n), handed=True) for n in range(12)]
        first = await asyncio.gather(*together, return_exceptions=True)
        later = await decider.run(lambda: decide(12), handed=True)
        return [*first, later]

    answers = asyncio.run(scenario())
    assert decider.stop(WAIT_S)
    assert decided == list(range(13))
    assert batches == [[n for n in range(12) if n != 5], [12]]
    assert [a if isinstance(a, int) else "refused" for a in answers] == [
        *range(5),
        "refused",
        *range(6, 13),
    ]


class HeldFsync:
    """``os.fsync`` of one descriptor held until :meth:`release` (the fsyncs of other files go
    through): the moment between a decision and its line's fsync, made to last."""

    def __init__(self, monkeypatch, fd: int) -> None:
        self.fd = fd
        self.entered = threading.Event()
        self.released = threading.Event()
        self._real = os.fsync
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd: int) -> None:
        if fd == self.fd and not self.released.is_set():
            self.entered.set()
            self.released.wait(WAIT_S)
        self._real(fd)

    def release(self) -> None:
        self.released.set()


def _submit(job: str, at: float) -> SubmitRequest:
    return SubmitRequest.model_validate({"id": job, "need": 1, "at": at})


def _jobs_of(spec: Path, log_bytes: bytes, path: Path) -> set[str]:
    """The jobs (running or waiting) of a server started on a log holding ``log_bytes``."""
    path.write_bytes(log_bytes)
    service = start(spec, None, path).service
    state = service.scheduler.state()
    service.close(grace=10)
    return {str(r.id) for r in state.running} | {str(j) for j in state.queue}


def test_a_crash_between_the_decision_and_the_fsync_loses_no_answered_event(
    fcfs_spec, tmp_path, monkeypatch
):
    """``a`` is answered. ``b`` and ``c`` are decided (the state holds them) while their fsync
    lasts: neither is answered. A crash then leaves the log's acknowledged bytes, or those and
    the lines written since: a restart on either holds every answered event. Once the fsync
    completes, ``b`` and ``c`` are answered, each with its own event number."""
    log = tmp_path / "events.jsonl"
    service = start(fcfs_spec, None, log).service

    async def scenario() -> tuple[dict[str, int], bytes, bytes, set[str], dict[str, int]]:
        first = await service.handle("submit", _submit("a", 1.0))
        acknowledged = log.read_bytes()
        held = HeldFsync(monkeypatch, service.log._fd)
        waiting = {
            job: asyncio.create_task(service.handle("submit", _submit(job, at)))
            for job, at in (("b", 2.0), ("c", 3.0))
        }
        while not held.entered.is_set():  # the line of b (and of c, maybe) is being fsync'd
            await asyncio.sleep(0.001)

        def running() -> set[str]:
            return {str(r.id) for r in service.scheduler.state().running}

        decided = await service.read(running)
        while len(decided) < 3:  # c decided too (in b's group, or after it)
            await asyncio.sleep(0.001)
            decided = await service.read(running)
        await asyncio.sleep(0.05)  # time enough for an answer given too early to arrive
        answered_early = {job for job, task in waiting.items() if task.done()}
        written = log.read_bytes()
        held.release()
        later = {job: (await task).event for job, task in waiting.items()}
        assert not answered_early, answered_early
        return {"a": first.event}, acknowledged, written, decided, later

    answered, acknowledged, written, decided, later = asyncio.run(scenario())
    service.close(grace=10)
    monkeypatch.undo()
    assert decided == {"a", "b", "c"}
    assert answered == {"a": 1} and later == {"b": 2, "c": 3}
    assert _jobs_of(fcfs_spec, acknowledged, tmp_path / "crash1.jsonl") == {"a"}
    assert {"a", "b"} <= _jobs_of(fcfs_spec, written, tmp_path / "crash2.jsonl") <= decided
    assert _jobs_of(fcfs_spec, log.read_bytes(), tmp_path / "after.jsonl") == {"a", "b", "c"}


def test_a_retry_whose_first_line_is_not_yet_durable_waits_for_its_fsync(
    fcfs_spec, tmp_path, monkeypatch
):
    """The retry of ``b``'s key while ``b``'s line is being fsync'd is answered from the first
    answer, after that fsync, never before (its own hand-over carries no line)."""
    log = tmp_path / "events.jsonl"
    service = start(fcfs_spec, None, log).service

    async def scenario() -> tuple[bool, bool, int, int]:
        held = HeldFsync(monkeypatch, service.log._fd)
        first = asyncio.create_task(service.handle("submit", _submit("b", 1.0), key="k-b"))
        while not held.entered.is_set():
            await asyncio.sleep(0.001)
        retry = asyncio.create_task(service.handle("submit", _submit("b", 1.0), key="k-b"))
        await asyncio.sleep(0.05)
        early = first.done() or retry.done()
        held.release()
        answers = await asyncio.gather(first, retry)
        return early, answers[0] == answers[1], answers[1].event, answers[1].first_action

    early, same, event, first_action = asyncio.run(scenario())
    service.close(grace=10)
    monkeypatch.undo()
    assert not early and same
    assert (event, first_action) == (1, 1)
    assert log.read_bytes().count(b"\n") == 2  # the header and b's one line


def test_a_refused_event_is_answered_at_once_and_writes_nothing(fcfs_spec, tmp_path, monkeypatch):
    """A refusal is no decision to make durable: it comes back from the decision thread without
    waiting for the group commit, even while an fsync lasts."""
    log = tmp_path / "events.jsonl"
    service = start(fcfs_spec, None, log).service

    async def scenario() -> str:
        held = HeldFsync(monkeypatch, service.log._fd)
        first = asyncio.create_task(service.handle("submit", _submit("a", 1.0)))
        while not held.entered.is_set():
            await asyncio.sleep(0.001)
        try:
            await asyncio.wait_for(service.handle("complete", AtRequest(at=2.0), "x"), WAIT_S)
        except Exception as exc:  # the refusal itself is the outcome
            refusal = str(exc)
        else:
            refusal = ""
        still_waiting = not first.done()
        held.release()
        await first
        assert still_waiting
        return refusal

    refusal = asyncio.run(scenario())
    service.close(grace=10)
    monkeypatch.undo()
    assert "x" in refusal
    assert log.read_bytes().count(b"\n") == 2  # the header and a's line


def test_the_restart_of_a_log_copied_after_the_answers_holds_them(fcfs_spec, tmp_path):
    """Many requests in flight at once (one decision batch or several): each is answered with
    its own event number, and the log copied right after the last answer replays them all."""
    log = tmp_path / "events.jsonl"
    service = start(fcfs_spec, None, log).service
    jobs = [f"j{n}" for n in range(40)]

    async def scenario() -> list[int]:
        answers = await asyncio.gather(
            *(service.handle("submit", _submit(job, 1.0)) for job in jobs)
        )
        return [answer.event for answer in answers]

    events = asyncio.run(scenario())
    shutil.copyfile(log, tmp_path / "copy.jsonl")
    service.close(grace=10)
    assert sorted(events) == list(range(1, 41))
    assert _jobs_of(fcfs_spec, (tmp_path / "copy.jsonl").read_bytes(), tmp_path / "r.jsonl") == set(
        jobs
    )
