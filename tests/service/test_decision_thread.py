"""A decision never blocks the service (issue 45, items 6 and 8; decision 0026): events are decided
on the service's one decision thread, so GET /healthz is answered while a decision runs (a
10,000-event batch; a plugin that loops for ever in compiled code), 503 naming how long it has run
once it is past ``--decision-deadline``; SIGTERM and SIGINT stop ``schedlab serve`` within 10 s
even then (exit 3, one line; the unanswered event is not in the log, the log's lock is released),
and a clean stop is exit 0 with one line."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from schedlab.service.app import create_app
from schedlab.service.server import start
from tests.helpers.hostile import HOSTILE, hostile_spec
from tests.helpers.network import free_port
from tests.helpers.paths import ROOT

STARTUP_S = 300  # a cold Numba cache compiles the runner first
STOP_S = 10  # issue 45, item 6: SIGTERM stops serve within 10 s


def test_healthz_answers_while_a_10000_event_batch_is_decided(fcfs_spec, tmp_path):
    """With a deadline of 0 s every running decision is overdue: a 503 naming it can only come
    from /healthz answered while the batch was being decided (the event loop decided it itself,
    before: /healthz waited, and answered 200 after)."""
    started = start(fcfs_spec, None, tmp_path / "events.jsonl", decision_deadline=0.0)
    batch = {
        "at": 1.0,
        "events": [
            {"kind": "submit", "job": {"id": f"j{i}", "need": 1 + i % 2}} for i in range(10_000)
        ],
    }

    async def scenario() -> tuple[list[httpx.Response], httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=create_app(started.service, None))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as api:
            posted = asyncio.create_task(api.post("/events", json=batch))
            during = []
            while not posted.done():
                await asyncio.sleep(0)  # the transport calls the app without yielding: yield here
                answer = await api.get("/healthz")
                if not posted.done():
                    during.append(answer)
            return during, await posted, await api.get("/healthz")

    during, posted, after = asyncio.run(scenario())
    started.service.close(grace=10)
    assert posted.status_code == 200, posted.text
    assert len(posted.json()["actions"]) == 3  # FCFS on 4 servers: j0 (1), j1 (2), j2 (1)
    overdue = [r for r in during if r.status_code == 503]
    assert overdue, [r.status_code for r in during]
    message = overdue[0].json()["error"]
    assert message.startswith("a decision of policy fcfs has run for ")
    assert "past --decision-deadline 0 s" in message and "\n" not in message
    assert after.status_code == 200 and after.json() == {"status": "ok"}


def _serve(spec: Path, log: Path, port: int, *options: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    argv = [sys.executable, "-m", "schedlab.cli", "serve", str(spec), "--insecure-local"]
    argv += ["--plugin", str(HOSTILE), "--event-log", str(log), "--port", str(port), *options]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _wait_ready(url: str, server: subprocess.Popen) -> None:
    with httpx.Client(base_url=url, timeout=5) as api:
        for _ in range(STARTUP_S * 10):
            assert server.poll() is None, server.stderr.read()
            try:
                if api.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            threading.Event().wait(0.1)
    raise AssertionError("the server did not start")


def _stopped(server: subprocess.Popen) -> tuple[int, list[str]]:
    """The exit code within STOP_S seconds, and stderr's lines after the start's."""
    try:
        code = server.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        raise AssertionError(f"not stopped within {STOP_S} s: {server.stderr.read()}") from None
    lines = server.stderr.read().splitlines()
    start = ("deciding", "schedlab serve: spin on")
    return code, [line for line in lines if not line.startswith(start)]


def _killed(server: subprocess.Popen) -> None:
    if server.poll() is None:  # the test failed before it stopped the server
        server.kill()
        server.wait()


@pytest.fixture(scope="module")
def spin_specs(tmp_path_factory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("spin")
    specs = {n: folder / f"spin{n}.toml" for n in (0, 1)}
    for n, path in specs.items():
        path.write_text(hostile_spec("spin", f"spin = {n}", arrivals=1000))
    return specs


def test_sigterm_stops_serve_cleanly_with_exit_0(spin_specs, tmp_path):
    """Nothing running: the answered event is in the log, one line, exit 0 (also the runs after
    find the plugin's online kernels compiled, in Numba's cache on disk)."""
    log, port = tmp_path / "events.jsonl", free_port()
    server = _serve(spin_specs[0], log, port)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, server)
        answer = httpx.post(f"{url}/jobs", json={"id": "a", "need": 1, "at": 1.0}, timeout=60)
        assert answer.status_code == 200 and answer.json()["actions"][0]["kind"] == "start"
        server.send_signal(signal.SIGTERM)
        code, lines = _stopped(server)
    finally:
        _killed(server)
    assert code == 0, lines
    assert lines == ["schedlab serve: stopped on SIGTERM"]
    assert len(log.read_text().splitlines()) == 2  # the header and the answered event


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_plugin_looping_for_ever_leaves_healthz_answering_and_stop_within_10s(
    spin_specs, tmp_path, stop
):
    log, port = tmp_path / "events.jsonl", free_port()
    server = _serve(spin_specs[1], log, port, "--decision-deadline", "5")
    url = f"http://127.0.0.1:{port}"
    posted: list[object] = []

    def post() -> None:  # never answered: the decision loops
        try:
            job = {"id": "a", "need": 1, "at": 1.0}
            posted.append(httpx.post(f"{url}/jobs", json=job, timeout=STARTUP_S))
        except httpx.HTTPError as exc:
            posted.append(exc)

    try:
        _wait_ready(url, server)
        client = threading.Thread(target=post, daemon=True)
        client.start()
        with httpx.Client(base_url=url, timeout=5) as api:
            first = api.get("/healthz")
            assert first.status_code == 200, first.text  # within the deadline
            for _ in range(600):
                health = api.get("/healthz")  # answered: the event loop is not blocked
                if health.status_code != 200:
                    break
                threading.Event().wait(0.1)
            assert health.status_code == 503
            message = health.json()["error"]
            assert message.startswith("a decision of policy spin has run for ")
            assert "past --decision-deadline 5 s" in message
            assert client.is_alive() and not posted  # the event waits, unanswered
        server.send_signal(stop)
        code, lines = _stopped(server)
    finally:
        _killed(server)
    client.join(STOP_S)
    assert not client.is_alive()
    assert posted[0].status_code == 503, posted  # past the grace: one line, not an answer
    assert posted[0].json() == {"error": "the server is stopping: the event was not answered"}
    assert code == 3, lines
    assert len(lines) == 1 and lines[0].startswith(
        f"schedlab serve: stopped on {stop.name} with a decision of policy spin still running"
    ), lines
    assert lines[0].endswith("its event was neither logged nor answered")
    assert [json.loads(line)["format"] for line in log.read_text().splitlines()] == [
        "schedlab-event-log"
    ]  # the header only: the unanswered event was never appended
    with log.open("rb") as held:  # the kernel released the lock with the process
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
