"""The servers a job holds in the service's answers (issue 46): each start names them (pooled:
lowest free first, worked by hand), GET /state's running jobs hold them, GET /actions numbers
them, the OpenAPI document publishes the field, and a restart rebuilt from the event log names
the same ones."""

from __future__ import annotations

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


def client_of(spec: Path, log: Path) -> TestClient:
    return TestClient(create_app(start(spec, None, log).service, TOKEN))


def named(response) -> list[tuple]:
    assert response.status_code == 200, response.text
    return [(a["kind"], a["job"], a["servers"]) for a in response.json()["actions"]]


def test_starts_state_and_numbered_actions_name_the_servers_also_after_a_restart(
    fcfs_spec, tmp_path
):
    """FCFS, k = 4: a (2) and b (1) take 0-1 and 2; a ends, c (3) takes 0, 1 and 3 at once, d
    (1) waits; b ends: d takes 2."""
    log = tmp_path / "events.jsonl"
    api = client_of(fcfs_spec, log)

    def post(path, body, key):
        return named(api.post(path, json=body, headers={**AUTH, "Idempotency-Key": key}))

    submit = {"kind": "submit"}
    two = {"at": 0, "events": [{**submit, "job": {"id": "a", "need": 2}}]}
    assert post("/events", two, "s-a") == [("start", "a", [0, 1])]
    assert post("/jobs", {"id": "b", "need": 1, "at": 0.5}, "s-b") == [("start", "b", [2])]
    both = {
        "at": 1,
        "events": [
            {"kind": "complete", "id": "a"},
            {**submit, "job": {"id": "c", "need": 3}},
            {**submit, "job": {"id": "d", "need": 1}},
        ],
    }
    assert post("/events", both, "e-1") == [("start", "c", [0, 1, 3])]
    state = api.get("/state", headers=AUTH).json()
    assert {r["id"]: r["servers"] for r in state["running"]} == {"b": [2], "c": [0, 1, 3]}
    assert post("/jobs/b/complete", {"at": 2}, "c-b") == [("start", "d", [2])]
    numbered = api.get("/actions?after=0", headers=AUTH).json()
    assert [(a["job"], a["servers"]) for a in numbered["actions"]] == [
        ("a", [0, 1]),
        ("b", [2]),
        ("c", [0, 1, 3]),
        ("d", [2]),
    ]
    schema = api.get("/openapi.json").json()["components"]["schemas"]["ActionOut"]
    assert "servers" in schema["required"] and schema["properties"]["servers"]["type"] == "array"
    state = api.get("/state", headers=AUTH).json()
    api.close()

    copy = tmp_path / "restarted.jsonl"  # (the live service holds the log's lock)
    shutil.copyfile(log, copy)
    restarted = client_of(fcfs_spec, copy)
    assert restarted.get("/actions?after=0", headers=AUTH).json() == numbered
    assert restarted.get("/state", headers=AUTH).json() == state
    retried = restarted.post(
        "/events", json=both, headers={**AUTH, "Idempotency-Key": "e-1"}
    )  # the first answer, servers included
    assert named(retried) == [("start", "c", [0, 1, 3])]
