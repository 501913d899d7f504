"""The HTTP application of ``schedlab serve`` over one :class:`schedlab.online.Scheduler`: one
endpoint function per route. The event endpoints (POST /jobs, /jobs/{job_id}/complete, /advance,
/events) are Starlette routes in front (:class:`Served`: pydantic-core validates the body's bytes
with the endpoint's body model; the answer is bytes encoded once); every other request goes to
FastAPI (/state, /metrics, /healthz, /openapi.json, the one-line 404). FastAPI's per-request
machinery (its middleware, dependency solving, routing) cost 54 µs per request here, more than
the decision; the routes in front, 15 µs (decision 0020). The OpenAPI document is FastAPI's,
the event endpoints' entries generated from the same endpoint functions (:func:`documented`).

Events are applied one at a time, in the order the event loop (uvicorn's one worker) received
them, on the service's one decision thread (:class:`~schedlab.service.decider.Decider`, decision
0026): the event log's order is the decision order, and the loop, which only parses, hands over and
awaits, answers /healthz while a decision runs (503 once one has run past ``--decision-deadline``).
An accepted event is applied and appended to the event log, and answered once an
fsync covering its line has completed (group commit, schedlab.service.eventlog.GroupCommit:
concurrent requests share fsyncs). Bad input is a 4xx with one line
(``{"error": "..."}``) and changes nothing; a policy's invalid action is a 500 naming the policy,
the scheduler's state left as before the event.
"""

from __future__ import annotations

import asyncio
import hmac
import math
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Annotated, Any, get_type_hints

import numpy as np
from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Mount, Route, Router

from schedlab.errors import PolicyError, SchedlabError
from schedlab.online import Complete, Job, Scheduler, Submit
from schedlab.service.decider import Decider, Outcome
from schedlab.service.eventlog import NEWLINE, EventLog, GroupCommit, Pending
from schedlab.service.recall import KEY_LENGTH, Forgotten, Recall, digest
from schedlab.service.schemas import (
    ActionsAfterOut,
    ActionsOut,
    AtRequest,
    ErrorOut,
    EventsRequest,
    JobIn,
    SubmitRequest,
)


class Unavailable(SchedlabError):
    """The event log could not be written: the service refuses events until restarted."""


MAX_TIME_STEP = 31_536_000.0  # one year in seconds: the default of --max-time-step
MAX_BATCH = 10_000  # events of one POST /events at most: the default of --max-batch
MAX_TIME = float(2**53)  # beyond it a float no longer tells two times one unit apart
DECISION_DEADLINE = 10.0  # seconds a decision may run before /healthz says 503: --decision-deadline


@dataclass(slots=True)
class Answer:
    """An event's answer: its actions (their JSON array), the event's number and its first
    action's number."""

    actions: bytes
    event: int
    first_action: int

    def body(self) -> bytes:
        """The answer's JSON (the actions' array encoded once, when they were decided)."""
        return b'{"actions":%s,"event":%d,"first_action":%d}' % (
            self.actions,
            self.event,
            self.first_action,
        )


@dataclass(slots=True)
class Decided:
    """An event decided: its answer and its event log line (``b""``: none to write)."""

    answer: Answer
    line: bytes


def plain(value: Any) -> Any:
    """A JSON-able copy: dataclasses as objects, arrays as lists, non-finite floats as null."""
    if is_dataclass(value) and not isinstance(value, type):
        return {k: plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_job(job: JobIn) -> Job:
    """The library's job from a request's (``need`` is the pooled family's demand)."""
    return Job(
        id=job.id,
        demand=job.need if job.need is not None else job.demand,
        size=job.size,
        requested=job.requested,
        job_class=job.job_class,
    )


def apply(scheduler: Scheduler, op: str, request: Any, job_id: str | None = None) -> list[Any]:
    """One accepted event through the scheduler (the service and the rebuild from the log)."""
    if op == "submit":
        return scheduler.submit(to_job(request), request.at)
    if op == "complete":
        return scheduler.complete(job_id, request.at)
    if op == "advance":
        return scheduler.advance(request.at)
    batch = [
        Submit(to_job(e.job)) if e.kind == "submit" else Complete(e.id) for e in request.events
    ]
    return scheduler.events(batch, request.at)


def record(op: str, request: Any, job_id: str | None = None) -> bytes:
    """The event log line of an accepted event (see schedlab.service.eventlog), encoded by
    pydantic-core from the validated request (its fields set, in the model's order)."""
    if op == "submit":
        line = {"op": op, "at": request.at, "job": request}
        return to_json(line, exclude_none=True, exclude={"job": {"at"}}) + NEWLINE
    line = {"op": op, "at": request.at}
    if op == "events":
        line["events"] = request.events
    if job_id is not None:
        line["id"] = job_id
    return to_json(line, exclude_none=True) + NEWLINE


def keyed(line: bytes, key: str) -> bytes:
    """The event log line with the request's Idempotency-Key (a last member ``"key"``)."""
    return line[:-2] + b',"key":' + to_json(key) + b"}" + NEWLINE


def parse(line: dict[str, Any]) -> tuple[str, Any, str | None]:
    """(op, request, job id) of an event log line (validated like a request; its ``key`` not
    read)."""
    fields = {k: v for k, v in line.items() if k not in ("op", "id", "job", "key")}
    op = line.get("op")
    if op == "submit":
        return op, SubmitRequest(**line.get("job", {}), **fields), None
    if op in ("complete", "advance"):
        return op, AtRequest(**fields), line.get("id") if op == "complete" else None
    if op == "events":
        return op, EventsRequest(**fields), None
    raise ValueError(f"unknown op {op!r}")


@dataclass
class Service:
    """The scheduler behind the API and its event log (None: no log); the keys and actions a
    client can recover (:class:`~schedlab.service.recall.Recall`); the largest step of time an
    event may take past the one before (``--max-time-step``); the seconds a decision may run
    before the service reports itself unhealthy (``--decision-deadline``). The scheduler is
    touched on the decision thread only (``decider``)."""

    scheduler: Scheduler
    log: EventLog | None
    policy: str
    family: str
    max_time_step: float = MAX_TIME_STEP
    max_batch: int = MAX_BATCH
    decision_deadline: float = DECISION_DEADLINE
    failed: str = ""
    recall: Recall = field(default_factory=Recall)
    last_at: float | None = None
    decider: Decider = field(init=False)
    commit: GroupCommit | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.log is not None:
            self.commit = GroupCommit(self.log)
        self.decider = Decider(hand_over=self._to_log if self.commit is not None else None)

    async def handle(
        self, op: str, request: Any, job_id: str | None = None, key: str | None = None
    ) -> Answer:
        """Apply and log the event (on the decision thread), wait until its line is fsync'd,
        and return the answer; a retry of a key answers as the first time and changes nothing;
        raises on refusal. The decision thread hands the event's line and this wait to the group
        commit itself, which answers it after the fsync (decision 0036)."""
        try:
            decided = await self.decider.run(
                lambda: self._decide(op, request, job_id, key), handed=True
            )
        except OSError as exc:  # (the group commit's: the write or fsync failed)
            raise self._unavailable(exc) from None
        return decided.answer

    async def read(self, view: Callable[[], Any]) -> Any:
        """``view()`` on the decision thread: a read of the state between two events."""
        return await self.decider.run(view)

    def _decide(self, op: str, request: Any, job_id: str | None, key: str | None) -> Decided:
        """The decision thread's part of :meth:`handle`: the event applied, its answer and its
        event log line (or the first answer of its key, and no line)."""
        if self.failed:
            raise Unavailable(self.failed)
        logged = self.commit is not None or key is not None
        line = record(op, request, job_id) if logged else b""
        line_digest = digest(line) if key is not None else None
        first = self.recall.seen(key, line_digest) if key is not None else None
        if first is not None:
            return Decided(Answer(self.recall.answered(first), first.event, first.first), b"")
        self._check_step(request.at)
        actions = apply(self.scheduler, op, request, job_id)
        self.last_at = request.at
        encoded = json_bytes(actions)
        numbers = self.recall.record(request.at, encoded, len(actions), key, line_digest)
        if self.commit is None:
            return Decided(Answer(encoded, *numbers), b"")
        return Decided(Answer(encoded, *numbers), line if key is None else keyed(line, key))

    def _to_log(self, decided: list[Outcome]) -> None:
        """The decision thread's hand-over of a batch's events (in the decision order) to the
        group commit: their lines, and their requests' futures to answer after the fsync."""
        assert self.commit is not None
        self.commit.hand_over([Pending(o.result.line, o.done, o.result) for o in decided])

    def replay(self, line: dict[str, Any]) -> None:
        """An event of the log applied on start, on the decision thread (its key and actions
        recalled, no check of the time step: the log holds what was accepted)."""
        self.decider.call(lambda: self._replayed(line))

    def _replayed(self, line: dict[str, Any]) -> None:
        key = line.get("key")
        op, request, job_id = parse(line)
        actions = apply(self.scheduler, op, request, job_id)
        self.last_at = request.at
        line_digest = digest(record(op, request, job_id)) if key is not None else None
        self.recall.record(request.at, json_bytes(actions), len(actions), key, line_digest)

    def overdue(self) -> str | None:
        """Why the service is unhealthy because of a decision: the one running has taken longer
        than ``decision_deadline`` (one line), else None."""
        running = self.decider.running_for()
        if running is None or running <= self.decision_deadline:
            return None
        return (
            f"a decision of policy {self.policy} has run for {running:.1f} s, past "
            f"--decision-deadline {self.decision_deadline:g} s; events wait behind it"
        )

    def close(self, grace: float) -> bool:
        """Stop the decision thread (what it was handed done first), then the event log's thread
        and the log; False (the log left open, for the process to end) if a decision is still
        running after ``grace`` seconds."""
        if not self.decider.stop(grace):
            if self.commit is not None:
                self.commit.stop()
            return False
        if self.commit is not None:
            self.commit.stop()
        if self.log is not None:
            self.log.close()
        return True

    def _check_step(self, at: float) -> None:
        """A one-line refusal of an event more than ``max_time_step`` after the one before, or
        (the first event has none before it) of a time beyond :data:`MAX_TIME`."""
        if self.last_at is not None and at - self.last_at > self.max_time_step:
            raise SchedlabError(
                f"at: {at:g} is {at - self.last_at:g} after the last event's time "
                f"{self.last_at:g}, more than --max-time-step {self.max_time_step:g} (a time in "
                "another unit?); the event was not applied"
            )
        if at > MAX_TIME:
            raise SchedlabError(
                f"at: {at:g} is beyond 2**53 = {MAX_TIME:g}, where two times one unit apart are "
                "the same number (a time in another unit?); the event was not applied"
            )

    def _unavailable(self, exc: OSError) -> Unavailable:
        """The log failed: every later event is refused until a restart rebuilds the state."""
        assert self.log is not None
        self.failed = self.failed or (
            f"the event log {self.log.path} could not be written ({exc}); the "
            "service refuses events: restart it to rebuild the state from the log"
        )
        return Unavailable(self.failed)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def refusal(exc: Exception) -> tuple[int, str]:
    """(status, message) of an event refused by the service: bad input 422, the event log
    failed 503, a policy's invalid action or a bug 500."""
    if isinstance(exc, PolicyError):
        return 500, str(exc)
    if isinstance(exc, Forgotten):
        return 410, str(exc)
    if isinstance(exc, SchedlabError):
        return (503 if isinstance(exc, Unavailable) else 422), str(exc)
    return 500, f"internal error ({type(exc).__name__}: {exc})"


def json_bytes(content: Any) -> bytes:
    """The body of an answer: ``content`` (actions as objects of their fields; non-finite numbers
    as null) as compact JSON, encoded by pydantic-core."""
    return to_json(content, inf_nan_mode="null")


# the refusals every endpoint may answer, in the OpenAPI document (one line: ErrorOut)
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 410, 413, 415, 422, 500, 503)
}


class Served:
    """The ASGI application of an event endpoint ``(body: Model[, job_id: str]) -> Response``:
    the request's body read as JSON with the model of ``body`` (:func:`read_event`; a bad body
    is one line), then the endpoint called with it and the path's parameters; a method but POST
    is a one-line 405. It reads the ASGI scope and messages itself: Starlette's ``Request``, its
    header objects and its per-request exception wrapper cost more than the route's own work
    (decision 0036); the route's matching and path parameters are Starlette's."""

    def __init__(self, endpoint: Callable[..., Awaitable[Response]]) -> None:
        self.endpoint = endpoint
        self.model = get_type_hints(endpoint)["body"]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        response = await self.answer(scope, receive)
        await response(scope, receive, send)

    async def answer(self, scope: Any, receive: Any) -> Response:
        if scope["method"] != "POST":
            return error(
                405,
                f"{scope['method']} {scope['path']}: the event endpoints take POST only",
                {"Allow": "POST"},
            )
        key = header(scope, b"idempotency-key")
        if key is not None and not 0 < len(key) <= KEY_LENGTH:
            return error(400, f"Idempotency-Key: give 1 to {KEY_LENGTH} characters")
        try:
            body = await read_event(scope, receive, self.model)
        except RequestValidationError as exc:
            return error(*validation_line(exc))
        except ClientDisconnect:  # (an answer no one reads; the event is not decided)
            return error(400, "the client closed the connection before the body's end")
        return await self.endpoint(body=body, idempotency_key=key, **scope["path_params"])


def documented(endpoint: Callable[..., Awaitable[Response]], path: str) -> APIRoute:
    """The OpenAPI entry of an event endpoint, as FastAPI generates it from the function (its
    body model, path parameter, docstring): a route for :func:`fastapi.openapi.utils.get_openapi`
    only; requests reach the endpoint through :class:`Served`."""
    return APIRoute(path, endpoint, methods=["POST"], response_model=ActionsOut, responses=ERRORS)


def header(scope: Any, name: bytes) -> str | None:
    """The first value of the request's header ``name`` (lower case, as ASGI gives the names),
    None if it has none."""
    for given, value in scope["headers"]:
        if given == name:
            return value.decode("latin-1")
    return None


async def body_of(receive: Any) -> bytes:
    """The request's body, from its ASGI messages (ClientDisconnect if the client left first)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def read_event(scope: Any, receive: Any, model: type[BaseModel]) -> Any:
    """The request's body validated by ``model`` (pydantic-core parsing the bytes) when it is JSON
    (no content type, or application/json with parameters); else a RequestValidationError, as
    FastAPI raises for a body it validates (its ``loc`` starting with "body")."""
    given = header(scope, b"content-type")
    content_type = "application/json" if given is None else given
    media, _, parameters = content_type.partition(";")
    if media.strip().lower() != "application/json":
        problem = f"a JSON body is needed (Content-Type: application/json), not {content_type}"
        raise RequestValidationError([{"type": "content_type", "loc": ("body",), "msg": problem}])
    charset = charset_of(parameters)
    if charset not in (None, "utf-8", "utf8"):
        problem = f"the body must be UTF-8 JSON, not charset={charset}"
        raise RequestValidationError([{"type": "charset", "loc": ("body",), "msg": problem}])
    try:
        return model.model_validate_json(await body_of(receive))
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None


def charset_of(parameters: str) -> str | None:
    """The ``charset`` of a Content-Type's parameters (lower case, unquoted), None if none."""
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


async def decided(
    service: Service, op: str, body: Any, job_id: str | None = None, key: str | None = None
) -> Response:
    """An event's answer: the actions the policy took (as objects of their fields), the event's
    number and its first action's, encoded once; a refusal is one line, never a crash."""
    try:
        answer = await service.handle(op, body, job_id, key)
    except asyncio.CancelledError:  # the server stops past its grace: no traceback, one line
        return error(503, "the server is stopping: the event was not answered")
    except Exception as exc:
        return error(*refusal(exc))
    return Response(answer.body(), media_type="application/json")


def validation_line(exc: RequestValidationError) -> tuple[int, str]:
    """The first validation error as (status, one line naming the field)."""
    errors = list(exc.errors())
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())[1:])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first.get("type") == "json_invalid":
        return 400, f"malformed JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
    if first.get("type") == "charset":
        return 415, first["msg"]
    if first.get("type") == "extra_forbidden":
        return 422, f"unknown field '{where}'{more}"
    return 422, f"{where or 'body'}: {first.get('msg', 'invalid')}{more}"


# An Idempotency-Key header (the OpenAPI document's; :class:`Served` reads it)
Key = Annotated[
    str | None,
    Header(max_length=KEY_LENGTH, description="the same key on a retry: the first answer again"),
]
ACTIONS_PAGE = 10_000  # actions of one GET /actions at most

OPEN_PATHS = frozenset({"/healthz", "/openapi.json"})


class TokenGate:
    """ASGI middleware: every path but OPEN_PATHS needs ``Authorization: Bearer TOKEN`` (compared
    in constant time), checked before anything else reads the request."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            header = dict(scope["headers"]).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            refusal = ""
            if scheme.lower() != b"bearer" or not given.strip():
                refusal = "missing token: send the header 'Authorization: Bearer TOKEN'"
            elif not hmac.compare_digest(given.strip(), self.token):
                refusal = "wrong token"
            if refusal:
                response = error(401, refusal, {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(service: Service, token: str | None) -> Any:
    """The API (an ASGI application: the token gate, the event endpoints' routes, FastAPI);
    ``token`` None only with --insecure-local."""
    from schedlab._version import __version__
    from schedlab.service.prometheus import exposition

    app = FastAPI(
        title="schedlab online scheduler",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        responses=ERRORS,
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error(*validation_line(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error(exc.status_code, str(exc.detail), exc.headers)

    @app.exception_handler(SchedlabError)
    @app.exception_handler(Exception)
    async def _refused(request: Request, exc: Exception) -> JSONResponse:
        return error(*refusal(exc))

    async def submit(body: SubmitRequest, idempotency_key: Key = None) -> Response:
        """A job arrives at ``at``; the actions the policy took."""
        return await decided(service, "submit", body, None, idempotency_key)

    async def complete(job_id: str, body: AtRequest, idempotency_key: Key = None) -> Response:
        """A running job finished at ``at``."""
        return await decided(service, "complete", body, job_id, idempotency_key)

    async def advance(body: AtRequest, idempotency_key: Key = None) -> Response:
        """Time passes to ``at`` (timers and the decision grid of slotted policies)."""
        return await decided(service, "advance", body, None, idempotency_key)

    async def events(body: EventsRequest, idempotency_key: Key = None) -> Response:
        """Events of one instant, applied in order, then one decision (as the simulation); at
        most ``--max-batch`` of them (413 beyond)."""
        if len(body.events) > service.max_batch:
            return error(
                413,
                f"events: {len(body.events)} events in one request, more than --max-batch "
                f"{service.max_batch}; send fewer (each request is decided once)",
            )
        return await decided(service, "events", body, None, idempotency_key)

    event_endpoints = {
        "/jobs": submit,
        "/jobs/{job_id}/complete": complete,
        "/advance": advance,
        "/events": events,
    }

    @app.get("/state")
    async def state() -> dict[str, Any]:
        """Time (the last event's; 0 before the first), queue, running jobs, free capacity (and
        configuration) per server."""

        def view() -> dict[str, Any]:
            current = plain(service.scheduler.state())
            if service.last_at is None:
                current["time"] = 0.0  # no event yet (the scheduler's is -inf)
            return current

        current = await service.read(view)
        return {"policy": service.policy, "family": service.family, **current}

    @app.get("/actions", response_model=ActionsAfterOut)
    async def actions(
        after: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=ACTIONS_PAGE)] = ACTIONS_PAGE,
    ) -> Response:
        """The actions numbered after ``after`` (at most ``limit``), each with its number and
        its event's number and time; ``last``: the last action's number."""
        found, last = await service.read(
            lambda: (service.recall.after(after, limit), service.recall.actions)
        )
        return Response(json_bytes({"actions": found, "last": last}), media_type="application/json")

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        """Prometheus text format."""
        now = await service.read(service.scheduler.metrics)
        body, content_type = exposition(now)
        return Response(body, media_type=content_type)

    @app.get("/healthz")
    async def healthz() -> Response:
        """200 ``ok`` while events are accepted; 503 with the reason once the log failed, or
        while a decision runs past ``--decision-deadline`` (answered by the event loop, never
        behind a decision)."""
        if service.failed:
            return error(503, service.failed)
        overdue = service.overdue()
        if overdue is not None:
            return error(503, overdue)
        return JSONResponse({"status": "ok"})

    def openapi() -> dict[str, Any]:
        """FastAPI's document of its routes and of the event endpoints."""
        if app.openapi_schema is None:
            routes = [documented(f, path) for path, f in event_endpoints.items()]
            app.openapi_schema = get_openapi(
                title=app.title, version=app.version, routes=[*routes, *app.routes]
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    # Every request reaches an endpoint that answers in one line of JSON: an event path in any
    # method (methods=(): Served answers 405 but to POST), FastAPI for the other paths (the
    # default: a path the mount's pattern misses, one with a line break, is FastAPI's 404), never
    # the Router's plain-text 404 or 405.
    front = Router(
        routes=[
            *(Route(path, Served(f), methods=()) for path, f in event_endpoints.items()),
            Mount("", app=app),
        ],
        default=app,
    )
    return front if token is None else TokenGate(front, token)
