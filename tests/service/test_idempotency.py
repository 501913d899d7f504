"""Decisions a client can always recover (issue 45, item 2; decision 0025): a retry with the same
Idempotency-Key answers the first actions and changes nothing, also after a restart rebuilt from
the log; the same key with another request is a one-line 422; ``GET /actions?after=SEQ`` numbers
every action. And the time guard (item 5): an event too far ahead of the last is a one-line 422,
nothing logged or changed. FCFS on k = 4 pooled servers, worked by hand."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

from schedlab.service.app import create_app
from schedlab.service.server import start
from tests.service.conftest import TOKEN

with warnings.catch_warnings():  # starlette's TestClient warns about httpx 0.28
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def client_of(spec: Path, log: Path, **options) -> TestClient:
    service = start(spec, None, log, **options).service
    return TestClient(create_app(service, TOKEN), raise_server_exceptions=False)


def post(api: TestClient, path: str, body: dict, key: str | None = None):
    headers = AUTH if key is None else {**AUTH, "Idempotency-Key": key}
    return api.post(path, json=body, headers=headers)


def starts(response) -> list[tuple]:
    assert response.status_code == 200, response.text
    return [(a["kind"], a["job"], a["server"]) for a in response.json()["actions"]]


def test_a_retry_with_the_same_key_answers_the_first_actions_also_after_a_restart(
    fcfs_spec, tmp_path
):
    log = tmp_path / "events.jsonl"
    api = client_of(fcfs_spec, log)
    first = post(api, "/jobs", {"id": "a", "need": 2, "at": 0}, key="k-a")
    assert starts(first) == [("start", "a", 0)]
    assert first.json()["event"] == 1 and first.json()["first_action"] == 1
    assert starts(post(api, "/jobs", {"id": "b", "need": 3, "at": 1}, key="k-b")) == []
    done = post(api, "/jobs/a/complete", {"at": 2}, key="k-done")
    assert starts(done) == [("start", "b", 0)]
    state, logged = api.get("/state", headers=AUTH).json(), log.read_bytes()

    again = post(api, "/jobs/a/complete", {"at": 2}, key="k-done")  # without the key: 422
    assert again.json() == done.json()
    assert post(api, "/jobs", {"id": "a", "need": 2, "at": 0}, key="k-a").json() == first.json()
    assert api.get("/state", headers=AUTH).json() == state and log.read_bytes() == logged

    other = post(api, "/jobs", {"id": "c", "need": 1, "at": 3}, key="k-a")
    assert other.status_code == 422 and list(other.json()) == ["error"]
    assert "Idempotency-Key 'k-a' was used for another request (event 1)" in other.json()["error"]
    assert "\n" not in other.json()["error"]
    assert api.get("/state", headers=AUTH).json() == state and log.read_bytes() == logged

    numbered = api.get("/actions?after=0", headers=AUTH).json()
    assert [(a["seq"], a["event"], a["at"], a["job"]) for a in numbered["actions"]] == [
        (1, 1, 0, "a"),
        (2, 3, 2, "b"),
    ]
    assert numbered["last"] == 2
    assert api.get("/actions?after=1", headers=AUTH).json()["actions"] == numbered["actions"][1:]

    api.close()
    copy = tmp_path / "restarted.jsonl"  # (the live service holds the log's lock)
    shutil.copyfile(log, copy)
    restarted = client_of(fcfs_spec, copy)
    assert post(restarted, "/jobs/a/complete", {"at": 2}, key="k-done").json() == done.json()
    assert post(restarted, "/jobs", {"id": "b", "need": 3, "at": 1}, key="k-b").json()["event"] == 2
    assert restarted.get("/actions?after=0", headers=AUTH).json() == numbered
    assert post(restarted, "/jobs", {"id": "a", "need": 1, "at": 5}, key="k-b").status_code == 422
    assert copy.read_bytes() == logged
    # a new key goes on numbering after the log's events and actions
    new = post(restarted, "/jobs", {"id": "c", "need": 1, "at": 5}, key="k-c").json()
    assert new["event"] == 4 and new["first_action"] == 3 and new["actions"][0]["job"] == "c"


def test_actions_no_longer_held_are_a_one_line_410(fcfs_spec, tmp_path):
    service = start(fcfs_spec, None, tmp_path / "events.jsonl").service
    service.recall.window = 1  # hold the last event's actions (up to 2 x window)
    api = TestClient(create_app(service, TOKEN), raise_server_exceptions=False)
    for n in range(4):  # each starts its job at once, then completes
        assert starts(post(api, "/jobs", {"id": f"j{n}", "need": 4, "at": 2 * n}, f"k{n}"))
        assert post(api, f"/jobs/j{n}/complete", {"at": 2 * n + 1}).status_code == 200
    gone = api.get("/actions?after=0", headers=AUTH)
    assert gone.status_code == 410 and "replay the event log" in gone.json()["error"]
    assert post(api, "/jobs", {"id": "j0", "need": 4, "at": 0}, "k0").status_code == 410
    assert [a["job"] for a in api.get("/actions?after=3", headers=AUTH).json()["actions"]] == ["j3"]


def test_a_bad_key_is_a_one_line_400(fcfs_spec, tmp_path):
    api = client_of(fcfs_spec, tmp_path / "events.jsonl")
    refused = post(api, "/jobs", {"id": "a", "need": 1, "at": 0}, key="x" * 201)
    assert refused.status_code == 400 and "Idempotency-Key" in refused.json()["error"]
    assert api.get("/state", headers=AUTH).json()["queue"] == []


def test_an_event_too_far_ahead_is_a_422_naming_the_jump_and_changes_nothing(fcfs_spec, tmp_path):
    log = tmp_path / "events.jsonl"
    api = client_of(fcfs_spec, log)
    assert starts(post(api, "/jobs", {"id": "a", "need": 1, "at": 10})) == [("start", "a", 0)]
    state, digest = api.get("/state", headers=AUTH).json(), hashlib.sha256(log.read_bytes())
    for path, body in (("/advance", {"at": 1e308}), ("/jobs", {"id": "b", "need": 1, "at": 3.2e7})):
        refused = post(api, path, body)
        assert refused.status_code == 422, refused.text
        line = refused.json()["error"]
        assert "after the last event's time 10, more than --max-time-step 3.1536e+07" in line
        assert api.get("/state", headers=AUTH).json() == state
        assert hashlib.sha256(log.read_bytes()).digest() == digest.digest()
    assert starts(post(api, "/advance", {"at": 10 + 31_536_000})) == []  # exactly one year


def test_a_first_event_beyond_2_to_the_53_is_refused_and_changes_nothing(fcfs_spec, tmp_path):
    log = tmp_path / "events.jsonl"
    api = client_of(fcfs_spec, log)
    state, logged = api.get("/state", headers=AUTH).json(), log.read_bytes()
    refused = post(api, "/advance", {"at": 1e308})
    assert refused.status_code == 422 and "beyond 2**53" in refused.json()["error"], refused.text
    assert api.get("/state", headers=AUTH).json() == state and log.read_bytes() == logged
    assert post(api, "/advance", {"at": 1.7e12}).status_code == 200  # epoch milliseconds pass


def test_max_time_step_is_an_option(fcfs_spec, tmp_path):
    api = client_of(fcfs_spec, tmp_path / "events.jsonl", max_time_step=5)
    assert post(api, "/advance", {"at": 100}).status_code == 200  # the first event: any time
    assert post(api, "/advance", {"at": 105}).status_code == 200
    refused = post(api, "/advance", {"at": 110.5})
    assert refused.status_code == 422 and "110.5 is 5.5 after" in refused.json()["error"]


# ---------------------------------------------------------------- strict HTTP input (item 8)


def test_a_number_must_be_a_json_number_and_the_body_utf_8(fcfs_spec, tmp_path):
    log = tmp_path / "events.jsonl"
    api = client_of(fcfs_spec, log)
    logged = log.read_bytes()
    for body in (
        {"id": "a", "need": "4", "at": 0},
        {"id": "a", "need": True, "at": 0},
        {"id": "a", "need": 1, "at": "0"},
        {"at": 0, "events": [{"kind": "submit", "job": {"id": "a", "need": "1"}}]},
    ):
        path = "/events" if "events" in body else "/jobs"
        refused = post(api, path, body)
        assert refused.status_code == 422 and "valid" in refused.json()["error"], body
    utf16 = '{"id": "a", "need": 1, "at": 0}'.encode("utf-16")
    for charset, status in (("utf-16", 415), ("latin-1", 415), (None, 400)):
        kind = "application/json" + (f"; charset={charset}" if charset else "")
        refused = api.post("/jobs", content=utf16, headers={**AUTH, "Content-Type": kind})
        assert refused.status_code == status and "\n" not in refused.json()["error"], charset
    assert log.read_bytes() == logged
    assert api.get("/state", headers=AUTH).json()["queue"] == []
    assert post(api, "/jobs", {"id": 7, "need": 1, "at": 0.5}).status_code == 200  # int id, time


def test_a_fresh_server_s_time_is_0_then_the_last_event_s(fcfs_spec, tmp_path):
    api = client_of(fcfs_spec, tmp_path / "events.jsonl")
    assert api.get("/state", headers=AUTH).json()["time"] == 0
    assert post(api, "/advance", {"at": 12.5}).status_code == 200
    assert api.get("/state", headers=AUTH).json()["time"] == 12.5


def test_a_batch_beyond_max_batch_is_a_413_and_changes_nothing(fcfs_spec, tmp_path):
    log = tmp_path / "events.jsonl"
    api = client_of(fcfs_spec, log, max_batch=3)
    logged = log.read_bytes()
    submits = [{"kind": "submit", "job": {"id": f"j{n}", "need": 1}} for n in range(4)]
    refused = post(api, "/events", {"at": 0, "events": submits})
    assert (
        refused.status_code == 413
        and "4 events in one request, more than --max-batch 3" in (refused.json()["error"])
    )
    assert log.read_bytes() == logged and api.get("/state", headers=AUTH).json()["running"] == []
    assert len(starts(post(api, "/events", {"at": 0, "events": submits[:3]}))) == 3
