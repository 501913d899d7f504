"""Nothing accepted is lost (issue 34, item 4): ``schedlab serve`` killed with SIGKILL in the
middle of a replay, restarted on its event log (with a torn last line, as a crash mid-write
leaves), ends with the schedule of an uninterrupted run of the library object. A second server
on the same log meanwhile refuses to start, naming the first one's PID (issue 45, item 1); the
killed server's lock is gone with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from schedlab.online import Complete, Job, Scheduler, Submit
from schedlab.service.app import plain
from schedlab.service.replay import HttpTarget, Replay, drive, read_trace
from tests.helpers.network import free_port
from tests.service.conftest import TOKEN

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 300  # a cold Numba cache compiles the runner first


def serve(spec: Path, log: Path, port: int, stderr: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    env["SCHEDLAB_TOKEN"] = TOKEN
    argv = [sys.executable, "-m", "schedlab.cli", "serve", "--spec", str(spec)]
    argv += ["--event-log", str(log), "--port", str(port)]
    with stderr.open("a") as sink:
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink)


def library_run(spec: Path, jobs) -> list[dict]:
    """The uninterrupted run: the library object fed the replay's events in-process."""
    scheduler = Scheduler.from_spec(spec)

    def send(at, events):
        batch = [
            Submit(Job(j["id"], j["need"], j.get("size"), j.get("requested")))
            if e["kind"] == "submit" and (j := e["job"])
            else Complete(e["id"])
            for e in events
        ]
        return [plain(a) for a in scheduler.events(batch, at)]  # as JSON: servers a list

    return drive(Replay(jobs), send)[1]


def test_a_server_killed_mid_replay_and_restarted_ends_with_the_uninterrupted_schedule(
    kth_spec, kth_table, tmp_path
):
    jobs = read_trace(kth_table, "pooled")
    log, stderr, port = tmp_path / "events.jsonl", tmp_path / "serve.err", free_port()
    replay, actions = Replay(jobs), []
    server = serve(kth_spec, log, port, stderr)
    target = HttpTarget(f"http://127.0.0.1:{port}", TOKEN)
    try:
        target.wait_ready(STARTUP_S)
        second_err = tmp_path / "second.err"
        second = serve(kth_spec, log, free_port(), second_err)  # one writer per log (issue 45)
        assert second.wait(timeout=STARTUP_S) == 2
        refusal = " ".join(second_err.read_text().split())
        assert f"the event log is in use by another server (PID {server.pid})" in refusal
        assert refusal.count("error:") == 1 and "Traceback" not in refusal
        summary, before = drive(replay, target.send, stop_after=250)
        assert summary.requests == 250 and not replay.done()
        server.send_signal(signal.SIGKILL)
        server.wait()
        with log.open("ab") as torn:  # the crash also tore the line of an unanswered event
            torn.write(b'{"op":"submit","at":1')
        server = serve(kth_spec, log, port, stderr)
        target.wait_ready(STARTUP_S)
        rest, after = drive(replay, target.send)
        actions = before + after
        state = target.get("/state")
    finally:
        target.close()
        server.terminate()
        server.wait(timeout=30)
    said = stderr.read_text()
    assert "250 events replayed" in said and "line 252 was torn" in said, said
    assert replay.done() and [a["kind"] for a in actions] == ["start"] * 300
    assert actions == library_run(kth_spec, jobs)
    assert state["queue"] == [] and state["running"] == []
    assert len(log.read_text().splitlines()) == 1 + summary.requests + rest.requests
