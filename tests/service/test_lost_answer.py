"""A lost answer is recovered (issue 45, item 2): ``schedlab serve`` is killed (SIGKILL) after an
event carrying an Idempotency-Key is in its log but before its client read the answer (the client
sent the request and never read); restarted on the log, the retry with the same key answers the
start actions the library object takes for the same events, changes nothing, and
``GET /actions?after=`` numbers them too."""

from __future__ import annotations

import json
import signal
import socket
import time

import httpx

from schedlab.online import Job, Scheduler
from schedlab.service.app import plain
from tests.helpers.network import free_port
from tests.service.conftest import TOKEN
from tests.service.test_kill_restart import STARTUP_S, serve

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOST = {"at": 2}  # POST /jobs/a/complete: b and c start


def send_without_reading(port: int, path: str, body: dict, key: str) -> socket.socket:
    """A client that sends its request and never reads the answer (the socket is returned, left
    open and unread, as a client that crashed)."""
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Idempotency-Key: {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(head.encode() + payload)
    return sock


def wait_ready(url: str) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(url)


def test_a_retry_after_a_kill_between_the_log_and_the_answer_gets_the_same_starts(
    fcfs_spec, tmp_path
):
    library = Scheduler.from_spec(fcfs_spec)
    library.submit(Job("a", 4), 0)
    library.submit(Job("b", 2), 1)
    library.submit(Job("c", 2), 1.5)
    truth = [plain(a) for a in library.complete("a", 2)]  # as JSON: servers a list
    assert [(a["kind"], a["job"]) for a in truth] == [("start", "b"), ("start", "c")]

    log, stderr, port = tmp_path / "events.jsonl", tmp_path / "serve.err", free_port()
    url = f"http://127.0.0.1:{port}"
    server = serve(fcfs_spec, log, port, stderr)
    try:
        wait_ready(url)
        with httpx.Client(base_url=url, headers=AUTH) as api:
            for n, job in enumerate(
                (
                    {"id": "a", "need": 4, "at": 0},
                    {"id": "b", "need": 2, "at": 1},
                    {"id": "c", "need": 2, "at": 1.5},
                )
            ):
                answer = api.post("/jobs", json=job, headers={"Idempotency-Key": f"k{n}"})
                assert answer.status_code == 200, answer.text
        lost = send_without_reading(port, "/jobs/a/complete", LOST, "k-lost")
        deadline = time.monotonic() + 60
        while b'"key":"k-lost"' not in log.read_bytes():  # logged (the answer not read)
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.001)
        server.send_signal(signal.SIGKILL)
        server.wait()
        lost.close()
        logged = log.read_bytes()
        server = serve(fcfs_spec, log, port, stderr)
        wait_ready(url)
        with httpx.Client(base_url=url, headers=AUTH) as api:
            retry = api.post("/jobs/a/complete", json=LOST, headers={"Idempotency-Key": "k-lost"})
            assert retry.status_code == 200, retry.text
            assert retry.json()["actions"] == truth
            assert retry.json()["event"] == 4 and retry.json()["first_action"] == 2
            numbered = api.get("/actions", params={"after": 1}).json()["actions"]
            state = api.get("/state").json()
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    assert [{k: a[k] for k in truth[0]} for a in numbered] == truth
    assert [(a["seq"], a["event"], a["at"]) for a in numbered] == [(2, 4, 2), (3, 4, 2)]
    assert [r["id"] for r in state["running"]] == ["b", "c"] and state["queue"] == []
    assert log.read_bytes() == logged  # the retry changed nothing
    assert "4 events replayed" in stderr.read_text()
