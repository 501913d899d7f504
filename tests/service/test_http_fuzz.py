"""A fuzz of the HTTP API of ``schedlab serve`` (issue 45, "Done when"): hypothesis draws requests
on every route and method (and unknown ones) with hostile bodies (arbitrary bytes, arbitrary JSON,
the request schemas with mutated fields, other encodings) and headers (Content-Type and charset,
Idempotency-Key, Authorization, Content-Length), sent straight to the ASGI application; then
raw HTTP requests (malformed request lines, header bytes, lengths, chunking, oversized headers) to
a real ``schedlab serve``, which must keep answering /healthz and never print a traceback.

Each answer is a 200, or a 4xx whose body is one line of JSON ``{"error": "..."}``, or a 500 of a
policy's invalid action (FCFS takes none); the application never raises and logs nothing. A
refusal changes nothing (GET /state, GET /actions?after=0 and the event log's bytes as before); an
accepted event adds exactly its line to the log (a retry of its Idempotency-Key adds none), and a
restart from the log gives the same state and actions."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from schedlab.service.app import create_app
from schedlab.service.replay import HttpTarget
from schedlab.service.server import start
from tests.helpers.network import free_port
from tests.helpers.paths import SRC
from tests.service.conftest import TOKEN

MAX_BATCH = 8  # the fuzzed service's --max-batch: batches up to and past it are cheap
AUTH = b"Bearer " + TOKEN.encode()
OPEN_PATHS = {"/healthz", "/openapi.json"}
EVENT_PATHS = {"/jobs": "submit", "/advance": "advance", "/events": "events"}


# -- the requests -----------------------------------------------------------------------------


def mostly(usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` nine times in ten, else ``odd`` (requests the service may accept stay common,
    so the accepted events and the refusals after them are fuzzed too)."""
    return st.integers(0, 9).flatmap(lambda i: odd if i == 0 else usual)


class Raw(str):
    """JSON text written as it is: literals json.dumps does not write (NaN, 1e400, "\\ud800")."""


class Pairs(list):
    """A JSON object as (name, value) pairs: a name may repeat."""


def encoded(value: Any) -> str:
    """The JSON text of a drawn value (Raw as is, Pairs with their repeated names)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        value = Pairs(value.items())
    if isinstance(value, Pairs):
        return "{" + ",".join(f"{json.dumps(k)}:{encoded(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encoded(v) for v in value) + "]"
    return json.dumps(value)


HUGE_INT = Raw("1" + "0" * 400)
NUMBERS = [
    Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e308"), Raw("1e309"), Raw("-1e308"),
    Raw("1e-400"), Raw("-0"), HUGE_INT, Raw("-" + HUGE_INT), 0, -1, 2**63, 2**64, -(2**63),
    5e-324, 1.7976931348623157e308, 31_536_002.0, 1e9, 0.5, 1, 1.0, 2, 3, 4, 5,
]  # fmt: skip
OTHERS = [
    "4", "", "NaN", "1e3", True, False, None, Raw("[]"), Raw("[1]"), Raw("{}"), Raw('{"x":1}'),
    "\u2028", "a\nb",
    Raw('"\\ud800"'), Raw('"\\udc00x"'), Raw('"\\u0000"'), "é", "😀", "x" * 201, "a", "b",
    "class0", "class1", "gpu",
]  # fmt: skip
HOSTILE = st.sampled_from(NUMBERS + OTHERS)
NAMES = ["id", "need", "demand", "size", "requested", "job_class", "at", "events", "kind", "job"]

TIMES = st.sampled_from([1, 1, 1.5, 2, 3, 5, 0.5, 0, 1e308, 31_536_002.0])
IDS = st.sampled_from(["c", "d", "e", "a", "b", 7, "7"]) | st.text(min_size=1, max_size=3)
NEED = st.sampled_from([1, 1, 2, 3, 4, 5])


@st.composite
def jobs(draw) -> dict[str, Any]:
    job: dict[str, Any] = {"id": draw(IDS)}
    how = draw(st.sampled_from(["need", "need", "demand", "none"]))
    if how == "need":
        job["need"] = draw(NEED)
    elif how == "demand":
        job["demand"] = draw(st.sampled_from([1, 2.5, [1], [1, 2], {"servers": 2}, {"gpu": 1}]))
    for name, values in (
        ("size", [1.5, 0.001, 1e300]),
        ("requested", [2, 1e-9]),
        ("job_class", ["class0", "class1", "gpu"]),
    ):
        if draw(st.integers(0, 3)) == 0:
            job[name] = draw(st.sampled_from(values))
    return job


@st.composite
def event_lists(draw) -> list[Any]:
    submit = st.builds(lambda j: {"kind": "submit", "job": j}, jobs())
    complete = st.builds(lambda i: {"kind": "complete", "id": i}, IDS)
    kinds = mostly(submit | complete, st.builds(dict, kind=st.sampled_from(["kill", 1, None])))
    return draw(st.lists(kinds, max_size=MAX_BATCH + 3))


def schema_body(op: str) -> st.SearchStrategy[Any]:
    """A body of the schema of ``op`` (valid or not, as drawn)."""
    if op == "submit":
        return st.builds(lambda job, at: {**job, "at": at}, jobs(), TIMES)
    if op == "events":
        return st.builds(lambda events, at: {"at": at, "events": events}, event_lists(), TIMES)
    return st.builds(lambda at: {"at": at}, TIMES)


def deep(levels: int) -> Raw:
    return Raw("[" * levels + "]" * levels)


@st.composite
def mutated(draw, body: Any) -> Any:
    """``body`` with 0 to 3 of its fields (or its events' jobs' fields) changed: another type or
    an absurd number, missing, an unknown field, a name given twice, nested deep."""
    for _ in range(draw(st.sampled_from([0, 0, 1, 2, 3]))):
        target = body
        events = body.get("events") if isinstance(body, dict) else None
        if isinstance(events, list) and events and draw(st.booleans()):
            one = draw(st.sampled_from(events))
            target = one.get("job", one) if isinstance(one, dict) else body
        if not isinstance(target, dict):
            break
        name = draw(st.sampled_from(sorted({*target, *NAMES})))
        how = draw(st.sampled_from(["value", "value", "missing", "extra", "twice", "deep"]))
        if how == "value":
            target[name] = draw(HOSTILE)
        elif how == "missing":
            target.pop(name, None)
        elif how == "extra":
            target[name + draw(st.sampled_from(["x", "_", " ", "\u00e9"]))] = 1
        elif how == "deep":
            target[name] = deep(draw(st.sampled_from([10, 300, 3000])))
        else:
            pairs = Pairs(target.items())
            pairs.insert(draw(st.integers(0, len(pairs))), (name, draw(HOSTILE)))
            return pairs if target is body else body_with(body, target, pairs)
    return body


def body_with(body: dict, old: dict, new: Pairs) -> dict:
    """``body`` with its event (or event's job) ``old`` replaced by ``new``."""
    events = []
    for one in body["events"]:
        if one is old:
            one = new
        elif isinstance(one, dict) and one.get("job") is old:
            one = {**one, "job": new}
        events.append(one)
    return {**body, "events": events}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=10,
)
ENCODINGS = mostly(
    st.just("utf-8"), st.sampled_from(["utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1"])
)


def text_bytes(text: str, encoding: str) -> bytes:
    return text.encode(
        encoding, errors="surrogatepass" if encoding.startswith("utf") else "replace"
    )


@st.composite
def bodies(draw, op: str | None) -> bytes:
    """A request body: the schema of ``op`` mutated, any JSON, any bytes, or a corner case."""
    kind = draw(mostly(st.just("schema"), st.sampled_from(["json", "bytes", "corner"])))
    if kind == "schema" and op is not None:
        text = encoded(draw(mutated(draw(schema_body(op)))))
    elif kind in ("json", "schema"):
        text = encoded(draw(JSON_VALUES))
    elif kind == "bytes":
        return draw(st.binary(max_size=40))
    else:
        events = ",".join(['{"kind":"complete","id":"a"}'] * draw(st.sampled_from([8, 9, 300])))
        return draw(
            st.sampled_from(
                [
                    b"",
                    b"{",
                    b"null",
                    b'{"at": 2}\x00',
                    b'{"at": 2} {"at": 3}',
                    b"\xff\xfe{}",
                    b'{"at": 2, "at": 3, "at": 1}',
                    b'{"id": "c\xff", "need": 1, "at": 2}',
                    b'{"id": "\xed\xa0\x80", "need": 1, "at": 2}',
                    b'{"at": 2, "events": [' + events.encode() + b"]}",
                    deep(100_000).encode(),
                ]
            )
        )
    return text_bytes(text, draw(ENCODINGS))


CONTENT_TYPES = [
    None, b"application/json", b"application/json; charset=utf-8", b"application/json;charset=UTF8",
    b'application/json; charset="utf-8"', b"application/json; charset=utf-16",
    b"application/json; charset=latin-1", b"application/json; charset=", b"application/json;;;",
    b"APPLICATION/JSON", b"text/plain", b"application/x-www-form-urlencoded",
    b"multipart/form-data; boundary=x", b"application/json\xff", b"", b";", b"application/jsonx",
]  # fmt: skip
HEADER_BYTES = st.binary(max_size=30).map(lambda b: bytes(c for c in b if c >= 0x20))
# Authorization values, each with whether it is the token (when the server has one)
AUTHORIZATIONS = mostly(
    st.just((AUTH, True)),
    st.sampled_from(
        [
            (b"bearer " + TOKEN.encode(), True),
            (AUTH + b"  ", True),
            (None, False),
            (b"", False),
            (b"Bearer", False),
            (b"Bearer ", False),
            (b"Bearer wrong", False),
            (TOKEN.encode(), False),
            (b"Basic " + TOKEN.encode(), False),
            (AUTH + b"x", False),
            (AUTH[:-1], False),
            (b"Bearer \xff" + TOKEN.encode(), False),
        ]
    )
    | HEADER_BYTES.map(lambda b: (b, False)),
)
KEYS = mostly(
    st.sampled_from([None, None, "k1", "k2", "k-a"]),
    st.sampled_from(["", " ", "x" * 200, "x" * 201])
    | st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), min_size=1, max_size=210),
)


@dataclass
class Request:
    method: str
    path: str
    query: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=lambda: [b""])
    authorized: bool = True
    cut: bool = False  # the client disconnects before the body's end


PATHS = mostly(
    st.sampled_from(
        ["/jobs", "/jobs", "/jobs/a/complete", "/jobs/b/complete", "/jobs/c/complete", "/advance",
         "/events", "/events", "/state", "/actions"]
    ),
    st.sampled_from(
        ["/jobs/zz/complete", "/jobs/%ED%A0%80/complete", "/jobs/%0A/complete", "/jobs//complete",
         "/metrics", "/healthz", "/openapi.json", "/", "/jobs/", "/JOBS", "/jobs/a/complete/x",
         "//jobs", "/docs", "/jobs/a", "/state%0A", "/x%0Ay"]
    )
    | st.text(min_size=1, max_size=8).map(lambda t: "/" + t),
)  # fmt: skip
QUERIES = st.sampled_from(
    [b"", b"after=0", b"after=1", b"after=-1", b"after=1e3", b"after=abc", b"after=",
     b"after=" + b"9" * 30, b"after=0&limit=1", b"limit=0", b"limit=10001", b"after=0&after=2",
     b"after=%00", b"\xff=\xfe"]
)  # fmt: skip


def op_of(path: str) -> str | None:
    if path in EVENT_PATHS:
        return EVENT_PATHS[path]
    return "complete" if path.startswith("/jobs/") and path.endswith("/complete") else None


@st.composite
def requests(draw) -> Request:
    path = draw(PATHS)
    op = op_of(path)
    method = draw(
        mostly(st.just("POST" if op else "GET"), st.sampled_from(["GET", "POST", "PUT", "HEAD"]))
    )
    request = Request(method, path, draw(QUERIES) if draw(st.booleans()) else b"")
    body = draw(bodies(op)) if method != "GET" or draw(st.integers(0, 9)) == 0 else b""
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=2)))
    request.chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    request.cut = draw(st.integers(0, 19)) == 0
    headers = request.headers
    content_type = draw(
        mostly(
            st.sampled_from(CONTENT_TYPES[:3]), st.sampled_from(CONTENT_TYPES[3:]) | HEADER_BYTES
        )
    )
    if content_type is not None:
        headers.append((b"content-type", content_type))
        if draw(st.integers(0, 9)) == 0:  # given twice
            headers.append((b"content-type", draw(st.sampled_from(CONTENT_TYPES[1:]))))
    authorization, request.authorized = draw(AUTHORIZATIONS)
    if authorization is not None:
        headers.append((b"authorization", authorization))
    key = draw(KEYS)
    if key is not None:
        headers.append((b"idempotency-key", key.encode("latin-1")))
    length = draw(
        mostly(st.sampled_from([None, len(body)]), st.sampled_from([len(body) + 1, 0, -1, b"abc"]))
    )
    if length is not None:
        headers.append(
            (b"content-length", str(length).encode() if isinstance(length, int) else length)
        )
    if draw(st.integers(0, 9)) == 0:
        headers.append(
            (draw(st.sampled_from([b"accept", b"x-a", b"transfer-encoding"])), draw(HEADER_BYTES))
        )
    return request


# -- the application, called as an ASGI server calls it ----------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes


async def call(app: Any, request: Request) -> Answer:
    """``request`` through ``app``: its body in the drawn chunks; what the app sent back. An
    exception raised by the app propagates (a server would print its traceback)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": unquote_to_bytes(request.path).decode("utf-8", "replace"),
        "raw_path": request.path.encode("utf-8", "surrogatepass"),
        "root_path": "",
        "query_string": request.query,
        "headers": request.headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8787),
        "state": {},
    }
    chunks = list(request.chunks)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if chunks:
            more = bool(chunks[1:]) or request.cut
            return {"type": "http.request", "body": chunks.pop(0), "more_body": more}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start_message = next(m for m in sent if m["type"] == "http.response.start")
    return Answer(
        start_message["status"],
        {k.lower(): v for k, v in start_message.get("headers", [])},
        b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
    )


def get(path: str, query: bytes = b"") -> Request:
    return Request("GET", path, query, [(b"authorization", AUTH)])


@dataclass(frozen=True)
class Snapshot:
    state: bytes
    actions: bytes
    log: bytes


async def snapshot(app: Any, log: Path) -> Snapshot:
    state = await call(app, get("/state"))
    actions = await call(app, get("/actions", b"after=0"))
    assert state.status == 200 and actions.status == 200, (state, actions)
    return Snapshot(state.body, actions.body, log.read_bytes())


def check_refusal(answer: Answer) -> str:
    """The one-line JSON error of a refusal (a 4xx, or the 500 of a policy's invalid action)."""
    assert 400 <= answer.status < 500 or answer.status == 500, answer
    assert answer.headers.get(b"content-type") == b"application/json", answer
    assert b"\n" not in answer.body and b"Traceback" not in answer.body, answer
    said = json.loads(answer.body)
    assert list(said) == ["error"] and isinstance(said["error"], str), answer
    assert said["error"] and "\n" not in said["error"], answer
    if answer.status == 500:
        assert said["error"].startswith("policy '"), answer  # never a bug's "internal error"
    return said["error"]


def check_accepted(request: Request, answer: Answer, before: Snapshot, after: Snapshot) -> None:
    """A 200: an event adds its line to the log (a retry none); anything else changes nothing."""
    op = op_of(request.path) if request.method == "POST" else None
    if op is None:
        assert after == before, request
        return
    said = json.loads(answer.body)
    assert set(said) == {"actions", "event", "first_action"}, answer
    events = before.log.count(b"\n") - 1  # the header is line 1
    if said["event"] <= events:  # a retry of an Idempotency-Key: the first answer
        assert after == before, request
        return
    assert said["event"] == events + 1, (answer, events)
    assert after.log.startswith(before.log), request
    added = after.log[len(before.log) :]
    assert added.count(b"\n") == 1 and added.endswith(b"\n"), added
    line = json.loads(added)
    assert line["seq"] == said["event"] and line["op"] == op, line
    key = dict(request.headers).get(b"idempotency-key")
    assert line.get("key") == (None if key is None else key.decode("latin-1")), line


class Records(logging.Handler):
    """Every record of WARNING or above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def nothing_logged():
    """Fails if anything logs a warning or an error, or writes to sys.stderr, meanwhile."""
    records, root, stderr = Records(), logging.getLogger(), io.StringIO()
    root.addHandler(records)
    try:
        with contextlib.redirect_stderr(stderr):
            yield
    finally:
        root.removeHandler(records)
    assert not records.records, [r.getMessage() for r in records.records]
    assert stderr.getvalue() == "", stderr.getvalue()


SEED = [  # the state before the drawn requests: FCFS on k = 4, a (need 2) runs, b (need 3) waits
    Request("POST", "/jobs", b"", [(b"authorization", AUTH), (b"idempotency-key", b"k-a")],
            [b'{"id": "a", "need": 2, "at": 1}']),
    Request("POST", "/jobs", b"", [(b"authorization", AUTH)], [b'{"id": "b", "need": 3, "at": 1}']),
]  # fmt: skip


def restarted(spec: Path, log: Path) -> Snapshot:
    """GET /state and /actions?after=0 of a service started on a copy of ``log``."""
    copy = log.with_name("restarted.jsonl")
    shutil.copyfile(log, copy)
    service = start(spec, None, copy, max_batch=MAX_BATCH).service
    app = create_app(service, None)

    async def read() -> Snapshot:
        return await snapshot(app, copy)

    try:
        return asyncio.run(read())
    finally:
        service.log.close()


@settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    secured=st.booleans(),
    seeded=st.booleans(),
    sent=st.lists(requests(), min_size=1, max_size=6),
)
@example(  # the client gone before the body's end
    secured=False,
    seeded=True,
    sent=[Request("POST", "/advance", b"", [(b"content-length", b"20")], [b'{"at": 2'], cut=True)],
)
@example(  # the pooled need of a job given as a 400-digit integer
    secured=True,
    seeded=True,
    sent=[Request("POST", "/jobs", b"", [(b"authorization", AUTH)],
                  [b'{"id": "c", "need": %s, "at": 2}' % HUGE_INT.encode()])],
)  # fmt: skip
def test_every_request_is_answered_or_refused_in_one_line_and_a_refusal_changes_nothing(
    fcfs_spec, tmp_path_factory, secured, seeded, sent
):
    spec = fcfs_spec
    with tempfile.TemporaryDirectory(dir=tmp_path_factory.getbasetemp()) as folder:
        log = Path(folder) / "events.jsonl"
        service = start(spec, None, log, max_batch=MAX_BATCH).service
        app = create_app(service, TOKEN if secured else None)

        async def scenario() -> Snapshot:
            for request in SEED if seeded else []:
                assert (await call(app, request)).status == 200
            for request in sent:
                before = await snapshot(app, log)
                answer = await call(app, request)
                after = await snapshot(app, log)
                refused_token = secured and not request.authorized
                if refused_token and request.path not in OPEN_PATHS:
                    assert answer.status == 401, answer
                event(f"{op_of(request.path) or 'other'} {answer.status}")
                if answer.status == 200:
                    check_accepted(request, answer, before, after)
                else:
                    check_refusal(answer)
                    assert after == before, (request, answer)
            return await snapshot(app, log)

        try:
            with nothing_logged():
                live = asyncio.run(scenario())
        finally:
            if service.commit is not None:
                service.commit.stop()
            service.log.close()
        from_log = restarted(spec, log)
        assert from_log.state == live.state and from_log.actions == live.actions


# -- the HTTP layer of a real `schedlab serve` ----------------------------------------------------

STARTUP_S = 300  # a cold Numba cache compiles the runner first


@dataclass
class Served:
    port: int
    log: Path
    stderr: Path


@pytest.fixture(scope="module")
def served(fcfs_spec, tmp_path_factory):
    """``schedlab serve`` on FCFS k = 4 with a token and an event log, on a free port."""
    folder = tmp_path_factory.mktemp("served")
    server = Served(free_port(), folder / "events.jsonl", folder / "serve.err")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *sys.path])}
    env["SCHEDLAB_TOKEN"] = TOKEN
    argv = [
        sys.executable,
        "-m",
        "schedlab.cli",
        "serve",
        str(fcfs_spec),
        "--port",
        str(server.port),
    ]
    argv += ["--event-log", str(server.log), "--max-batch", str(MAX_BATCH)]
    with server.stderr.open("w") as sink:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    target = HttpTarget(f"http://127.0.0.1:{server.port}", TOKEN)
    try:
        target.wait_ready(STARTUP_S)
        yield server
    finally:
        target.close()
        process.terminate()
        process.wait(timeout=60)


def exchange(port: int, raw: bytes) -> bytes:
    """``raw`` sent on a new connection; what came back until the server closed it. A server
    still silent after 2 s waits for more of the request: the sending side is then closed (which
    uvicorn takes for a client gone: a whole request may then be decided, its answer lost), and
    a silence of 10 s more ends the exchange."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as connection:
        with contextlib.suppress(OSError):  # the server may close first (an oversized request)
            connection.sendall(raw)
        while True:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                if answer or connection.gettimeout() != 2:
                    break
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_WR)
                connection.settimeout(10)
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
    return answer


def healthy(port: int) -> bool:
    answer = exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    return answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'{"status":"ok"}')


LINE_ENDS = mostly(st.just(b"\r\n"), st.sampled_from([b"\n", b"\r", b"\r\r\n"]))
TARGETS = mostly(
    st.sampled_from([b"/jobs", b"/advance", b"/events", b"/jobs/a/complete", b"/state"]),
    st.sampled_from(
        [b"*", b"http://x/jobs", b"/jobs?\xff", b"/%", b"/%zz", b"jobs", b"/a b", b"/\x00",
         b"/jobs\x7f", b"/" + b"a" * 70_000, b""]
    ),
)  # fmt: skip
BAD_HEADERS = st.sampled_from(
    [b"X\x00A: y", b"Bad Header: x", b": no-name", b"no-colon", b"X-A: \xff\xfe", b" folded: x",
     b"X-Long: " + b"a" * 100_000, b"Content-Length: 5", b"Content-Length: -1",
     b"Content-Length: 99999999999999999999", b"Content-Length: 1, 2",
     b"Transfer-Encoding: gzip", b"Transfer-Encoding: chunked", b"Host: a\x01b",
     b"Authorization: Bearer \xff", b"Expect: 100-continue"]
)  # fmt: skip


@st.composite
def raw_requests(draw) -> bytes:
    """An HTTP/1.1 request as bytes: a request line, headers and a body, each mostly valid,
    sometimes malformed (line, header bytes, lengths, chunking, sizes)."""
    end = draw(LINE_ENDS)
    method = draw(
        mostly(
            st.sampled_from([b"POST", b"GET"]),
            st.sampled_from([b"P\x00ST", b"", b"POST POST", b"\xff"]),
        )
    )
    version = draw(
        mostly(st.just(b"HTTP/1.1"), st.sampled_from([b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1x", b""]))
    )
    body = draw(
        mostly(
            st.builds(
                lambda i: b'{"id": "%s", "need": 1, "at": 1}' % i.encode(),
                st.text("xyz", max_size=3),
            ),
            st.binary(max_size=30),
        )
    )
    headers = [b"Host: 127.0.0.1", b"Authorization: Bearer " + TOKEN.encode()]
    headers += [b"Content-Type: application/json", b"Connection: close"]
    framing = draw(
        mostly(
            st.sampled_from(["length", "length", "chunked"]),
            st.sampled_from(["bad chunks", "none"]),
        )
    )
    if framing == "length":
        headers.append(b"Content-Length: %d" % len(body))
    elif framing != "none":
        headers.append(b"Transfer-Encoding: chunked")
        half = len(body) // 2
        if framing == "chunked":
            body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:]) if p)
            body += b"0\r\n\r\n"
        else:
            body = (
                draw(st.sampled_from([b"zz\r\n", b"5\r\nab", b"%x\r\n" % (len(body) + 9)])) + body
            )
    headers += draw(mostly(st.just([]), st.lists(BAD_HEADERS, min_size=1, max_size=2)))
    head = b" ".join(part for part in (method, draw(TARGETS), version) if part)
    return end.join([head, *headers, b"", body])


@settings(
    max_examples=100, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(raw=raw_requests())
def test_the_http_layer_of_serve_answers_or_closes_and_keeps_answering_healthz(served, raw):
    before = served.log.read_bytes()
    answer = exchange(served.port, raw)
    status = answer[9:12] if answer.startswith(b"HTTP/1.1 ") else b""
    event(f"status {status.decode() or 'none'}")
    head, _, body = answer.partition(b"\r\n\r\n")
    after = served.log.read_bytes()
    if status != b"200":  # a refusal, or no answer (a client gone: the event may be decided)
        assert after == before or (not answer and after.count(b"\n") == before.count(b"\n") + 1)
    if b"content-type: application/json" in head.lower() and status[:1] == b"4":
        said = json.loads(body)
        assert list(said) == ["error"] and b"\n" not in body, answer
    assert healthy(served.port)
    said = served.stderr.read_text(errors="replace")
    assert "Traceback" not in said and "Exception" not in said, said
