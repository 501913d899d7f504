"""The HTTP API of ``schedlab serve`` (issue 34, items 3 and "Bad input"): the actions as records,
bad input refused with one line and nothing changed (state, event log), a policy's invalid action
a 500 naming the policy, the token, the Prometheus text, the OpenAPI document, and a fuzz of the
request bodies that never brings the server down."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from schedlab.errors import SpecError
from schedlab.service.app import create_app
from schedlab.service.server import start
from tests.service.conftest import TOKEN

with warnings.catch_warnings():  # starlette's TestClient warns about httpx 0.28
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PLUGIN = Path(__file__).parents[1] / "fixtures" / "plugins" / "fuzz_actions.py"


def client_of(spec: Path, log: Path, plugins=()) -> TestClient:
    started = start(spec, None, log, plugins=plugins)
    return TestClient(create_app(started.service, TOKEN), raise_server_exceptions=False)


@pytest.fixture
def client(fcfs_spec, tmp_path):
    """FCFS on k = 4: job a (need 2) runs, job b (need 3) waits, both from t = 1."""
    api = client_of(fcfs_spec, tmp_path / "events.jsonl")
    for job in ({"id": "a", "need": 2, "at": 1}, {"id": "b", "need": 3, "at": 1}):
        assert api.post("/jobs", json=job, headers=AUTH).status_code == 200
    return api


def snapshot(api: TestClient, log: Path) -> tuple[dict, str]:
    state = api.get("/state", headers=AUTH).json()
    return state, hashlib.sha256(log.read_bytes()).hexdigest()


def test_fcfs_by_hand_the_actions_come_back_as_records(fcfs_spec, tmp_path):
    api = client_of(fcfs_spec, tmp_path / "events.jsonl")

    def post(path, body):
        response = api.post(path, json=body, headers=AUTH)
        assert response.status_code == 200, response.text
        return [(a["time"], a["kind"], a["job"], a["server"]) for a in response.json()["actions"]]

    assert post("/jobs", {"id": "a", "need": 2, "at": 0}) == [(0, "start", "a", 0)]
    assert post("/jobs", {"id": "b", "need": 3, "at": 1}) == []  # 2 servers free: b waits
    assert post("/jobs", {"id": 7, "need": 1, "at": 1.5}) == []  # FCFS: behind b
    assert post("/jobs/a/complete", {"at": 2}) == [(2, "start", "b", 0), (2, "start", "7", 0)]
    state = api.get("/state", headers=AUTH).json()
    assert state["queue"] == [] and [r["id"] for r in state["running"]] == ["b", "7"]
    assert state["free"] == [[0.0]] and state["time"] == 2 and state["policy"] == "fcfs"
    assert post("/events", {"at": 3, "events": [{"kind": "complete", "id": "b"}]}) == []
    assert post("/advance", {"at": 4}) == []


BAD = [  # (what, method, path, body, status, the line says)
    ("malformed JSON", "post", "/jobs", b'{"id": "x", ', 400, "malformed JSON"),
    ("not an object", "post", "/jobs", b"[1, 2]", 422, "body: "),
    (
        "unknown field",
        "post",
        "/jobs",
        {"id": "x", "need": 1, "at": 2, "prio": 1},
        422,
        "unknown field 'prio'",
    ),
    (
        "need and demand",
        "post",
        "/jobs",
        {"id": "x", "need": 1, "demand": 1, "at": 2},
        422,
        "need or its demand, not both",
    ),
    ("wrong type", "post", "/jobs", {"id": "x", "need": "two", "at": 2}, 422, "need"),
    (
        "need above the cluster",
        "post",
        "/jobs",
        {"id": "x", "need": 5, "at": 2},
        422,
        "fits no server",
    ),
    (
        "unknown class",
        "post",
        "/jobs",
        {"id": "x", "need": 1, "at": 2, "job_class": "gpu"},
        422,
        "unknown class 'gpu'",
    ),
    ("reused id", "post", "/jobs", {"id": "a", "need": 1, "at": 2}, 422, "'a' is already used"),
    (
        "time backwards",
        "post",
        "/jobs",
        {"id": "x", "need": 1, "at": 0.5},
        422,
        "time goes backwards",
    ),
    ("negative time", "post", "/advance", {"at": -1}, 422, "at: "),
    ("no time", "post", "/advance", {}, 422, "at: "),
    ("unknown job", "post", "/jobs/zz/complete", {"at": 2}, 422, "unknown job 'zz'"),
    ("waiting job completes", "post", "/jobs/b/complete", {"at": 2}, 422, "not running"),
    ("empty batch", "post", "/events", {"at": 2, "events": []}, 422, "events"),
    (
        "unknown event kind",
        "post",
        "/events",
        {"at": 2, "events": [{"kind": "kill", "id": "a"}]},
        422,
        "events",
    ),
    (
        "a bad event in a batch",
        "post",
        "/events",
        {"at": 2, "events": [{"kind": "complete", "id": "a"}, {"kind": "complete", "id": "b"}]},
        422,
        "not running",
    ),
    ("unknown path", "post", "/jobz", {"at": 2}, 404, "Not Found"),
    ("a path with a line break", "get", "/x%0Ay", None, 404, "Not Found"),
    ("an event path in another method", "put", "/jobs/%0A/complete", {"at": 2}, 405, "POST only"),
]


@pytest.mark.parametrize(
    ("what", "method", "path", "body", "status", "says"), BAD, ids=[b[0] for b in BAD]
)
def test_bad_input_is_a_4xx_with_one_line_and_changes_nothing(
    client, tmp_path, what, method, path, body, status, says
):
    log = tmp_path / "events.jsonl"
    before = snapshot(client, log)
    if isinstance(body, bytes):
        headers = {**AUTH, "Content-Type": "application/json"}
        response = client.request(method, path, content=body, headers=headers)
    else:
        response = client.request(method, path, json=body, headers=AUTH)
    assert response.status_code == status, response.text
    line = response.json()["error"]
    assert says in line and "\n" not in line
    assert snapshot(client, log) == before


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer not-the-token"}, {"Authorization": TOKEN}]
)
def test_a_missing_or_wrong_token_is_a_401_and_changes_nothing(client, tmp_path, headers):
    log = tmp_path / "events.jsonl"
    before = snapshot(client, log)
    for path, body in (("/jobs", {"id": "x", "need": 1, "at": 5}), ("/advance", b"{bad json")):
        response = client.post(
            path, content=json.dumps(body) if isinstance(body, dict) else body, headers=headers
        )
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert "token" in response.json()["error"]
    for path in ("/state", "/metrics"):
        assert client.get(path, headers=headers).status_code == 401
    assert client.get("/healthz").json() == {"status": "ok"}  # open: a liveness probe
    assert snapshot(client, log) == before


def test_a_policy_error_is_a_500_naming_the_policy_and_changes_nothing(registry_restored, tmp_path):
    spec = tmp_path / "fuzz.toml"
    spec.write_text(
        "[cluster]\nservers = 2\n[workload]\nload = 0.5\n[[workload.classes]]\nneed = 1\n"
        'duration = { dist = "exponential", mean = 1.0 }\n'
        '[policy]\nname = "fuzz-actions"\np_bad = 1.0\np_out = 1.0\nkind = 0\n'
        "[run]\narrivals = 100\n"
    )
    log = tmp_path / "events.jsonl"
    api = client_of(spec, log, plugins=[PLUGIN])
    before = snapshot(api, log)
    response = api.post("/jobs", json={"id": "x", "need": 1, "at": 0}, headers=AUTH)
    assert response.status_code == 500
    line = response.json()["error"]
    assert line.startswith("policy 'fuzz-actions' took an invalid action") and "\n" not in line
    assert snapshot(api, log) == before


def test_metrics_are_prometheus_text(client):
    client.post("/jobs", json={"id": "c", "need": 1, "at": 2}, headers=AUTH)
    text = client.get("/metrics", headers=AUTH).text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("schedlab_queue_length", ())] == 2  # b (need 3) and c behind it
    assert samples[("schedlab_running_jobs", ())] == 1
    assert samples[("schedlab_utilization", (("resource", "servers"),))] == 0.5
    assert samples[("schedlab_events_total", ())] == 3
    assert samples[("schedlab_decision_latency_seconds_count", ())] == 3
    assert samples[("schedlab_decision_latency_seconds_bucket", (("le", "+Inf"),))] == 3
    assert samples[("schedlab_decisions_total", ())] >= 3


def test_the_openapi_document_publishes_the_strict_schemas(client):
    doc = client.get("/openapi.json").json()  # open, like /healthz
    assert {
        "/jobs",
        "/jobs/{job_id}/complete",
        "/advance",
        "/events",
        "/state",
        "/metrics",
        "/healthz",
    } <= set(doc["paths"])
    schemas = doc["components"]["schemas"]
    for name in ("SubmitRequest", "AtRequest", "EventsRequest", "JobIn"):
        assert schemas[name]["additionalProperties"] is False, name


def restarted(spec: Path, log: Path, policy: str | None = None):
    """The service a restart on ``log`` gives (a copy of it: the live server holds the log's
    lock)."""
    copy = log.with_name("restarted-" + log.name)
    shutil.copyfile(log, copy)
    return start(spec, policy, copy).service


def test_a_log_written_for_another_policy_is_refused_in_one_line(client, fcfs_spec, tmp_path):
    with pytest.raises(SpecError) as refused:
        restarted(fcfs_spec, tmp_path / "events.jsonl", "most-servers-first")
    assert "events.jsonl:1: the log was written with policy 'fcfs'" in str(refused.value)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "need", "demand", "at", "events", "kind", "job", "size", "x"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
PATHS = st.sampled_from(["/jobs", "/jobs/a/complete", "/jobs/b/complete", "/advance", "/events"])


@settings(
    max_examples=150, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(requests=st.lists(st.tuples(PATHS, JSON | st.binary(max_size=20)), min_size=1, max_size=4))
def test_the_server_never_dies_on_input_and_logs_only_what_it_accepted(
    client, fcfs_spec, tmp_path, requests
):
    log = tmp_path / "events.jsonl"
    for path, body in requests:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = client.post(
            path, content=content, headers={**AUTH, "Content-Type": "application/json"}
        )
        assert response.status_code in (200, 400, 422), response.text
        if response.status_code != 200:
            assert "\n" not in response.json()["error"]
    live = client.get("/state", headers=AUTH).json()
    rebuilt = restarted(fcfs_spec, log)  # the log alone gives the same state
    assert live == {"policy": "fcfs", "family": "pooled", **_plain_state(rebuilt)}
    rebuilt.log.close()


def _plain_state(service) -> dict:
    from schedlab.service.app import plain

    return plain(service.scheduler.state())


def test_a_log_that_cannot_be_written_stops_the_events_until_a_restart(
    client, fcfs_spec, tmp_path, monkeypatch
):
    """A full disk: the event is answered 503 (it is not durable), so is every later one, and
    /healthz turns 503; a restart rebuilds the state from the log, without that event."""
    log = tmp_path / "events.jsonl"
    durable = log.read_bytes()

    def full(self, record):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("schedlab.service.eventlog.EventLog.append", full)
    response = client.post("/jobs", json={"id": "c", "need": 1, "at": 2}, headers=AUTH)
    assert response.status_code == 503 and "could not be written" in response.json()["error"]
    monkeypatch.undo()
    again = client.post("/advance", json={"at": 3}, headers=AUTH)
    assert again.status_code == 503 and "restart it" in again.json()["error"]
    assert client.get("/healthz").status_code == 503
    assert log.read_bytes() == durable
    rebuilt = restarted(fcfs_spec, log)
    assert [r.id for r in rebuilt.scheduler.state().running] == ["a"]
    assert rebuilt.scheduler.state().queue == ("b",)
    rebuilt.log.close()


def test_a_json_body_with_a_charset_is_decided_and_another_content_type_is_refused(client):
    """The event endpoints read a body as JSON when FastAPI would (no content type, or
    application/json with parameters): anything else is refused in one line, nothing changed."""
    body = json.dumps({"id": "c", "need": 1, "at": 2}).encode()
    plain_text = client.post("/jobs", content=body, headers={**AUTH, "Content-Type": "text/plain"})
    assert plain_text.status_code == 422 and "\n" not in plain_text.json()["error"]
    assert "c" not in client.get("/state", headers=AUTH).json()["queue"]
    typed = {**AUTH, "Content-Type": "application/json; charset=utf-8"}
    assert client.post("/jobs", content=body, headers=typed).json()["actions"] == []
    assert client.get("/state", headers=AUTH).json()["queue"] == ["b", "c"]
    done = client.post("/jobs/a/complete", content=b'{"at": 3}', headers=AUTH)
    assert [(a["kind"], a["job"]) for a in done.json()["actions"]] == [
        ("start", "b"),
        ("start", "c"),
    ]
