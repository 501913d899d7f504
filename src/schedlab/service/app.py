"""The HTTP application of ``schedlab serve``: FastAPI over one :class:`schedlab.online.Scheduler`,
with :class:`EventPath` in front deciding the event endpoints' valid requests.

Events are applied one at a time (the handlers run on the one event loop of uvicorn's one worker,
and apply and append an event without yielding to the loop), so the event log's order is the
decision order. An accepted event is applied and appended to the event log, and answered once an
fsync covering its line has completed (group commit, schedlab.service.eventlog.GroupCommit:
concurrent requests share fsyncs). Bad input is a 4xx with one line
(``{"error": "..."}``) and changes nothing; a policy's invalid action is a 500 naming the policy,
the scheduler's state left as before the event.
"""

from __future__ import annotations

import hmac
import math
import re
import threading
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException

from schedlab.errors import PolicyError, SchedlabError
from schedlab.online import Action, Complete, Job, Scheduler, Submit
from schedlab.service.eventlog import NEWLINE, EventLog, GroupCommit
from schedlab.service.schemas import (
    ActionsOut,
    AtRequest,
    ErrorOut,
    EventsRequest,
    JobIn,
    SubmitRequest,
)


class Unavailable(SchedlabError):
    """The event log could not be written: the service refuses events until restarted."""


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


def actions_answer(actions: list[Action]) -> Response:
    """An accepted event's answer through FastAPI: the same bytes as :class:`EventPath` sends."""
    return Response(json_bytes({"actions": actions}), media_type="application/json")


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


def parse(line: dict[str, Any]) -> tuple[str, Any, str | None]:
    """(op, request, job id) of an event log line (validated like a request)."""
    fields = {k: v for k, v in line.items() if k not in ("op", "id", "job")}
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
    """The scheduler behind the API and its event log (None: no log)."""

    scheduler: Scheduler
    log: EventLog | None
    policy: str
    family: str
    failed: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    commit: GroupCommit | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.log is not None:
            self.commit = GroupCommit(self.log)

    async def handle(self, op: str, request: Any, job_id: str | None = None) -> list[Action]:
        """Apply and log the event, wait until its line is fsync'd, and return the actions;
        raises on refusal."""
        with self.lock:
            if self.failed:
                raise Unavailable(self.failed)
            actions = apply(self.scheduler, op, request, job_id)
            if self.commit is not None:
                self.commit.append(record(op, request, job_id))
        if self.commit is not None:
            try:
                await self.commit.durable()
            except OSError as exc:
                raise self._unavailable(exc) from None
        return actions

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
    if isinstance(exc, SchedlabError):
        return (503 if isinstance(exc, Unavailable) else 422), str(exc)
    return 500, f"internal error ({type(exc).__name__}: {exc})"


def json_bytes(content: Any) -> bytes:
    """The body of an answer: ``content`` (actions as objects of their fields; non-finite numbers
    as null) as compact JSON, encoded by pydantic-core."""
    return to_json(content, inf_nan_mode="null")


# The event endpoints: path -> (operation, request model); and /jobs/{job_id}/complete.
HOT_ROUTES: dict[str, tuple[str, type[BaseModel]]] = {
    "/jobs": ("submit", SubmitRequest),
    "/advance": ("advance", AtRequest),
    "/events": ("events", EventsRequest),
}
COMPLETE = re.compile("/jobs/([^/]+)/complete")
JSON_TYPE = b"application/json"


class EventPath:
    """ASGI, in front of FastAPI: a valid request to an event endpoint (POST /jobs,
    /jobs/{id}/complete, /advance, /events; a JSON body that validates with the route's model,
    pydantic-core parsing the bytes) is decided and answered here, without FastAPI's
    per-request machinery (dependency solving, validation of a parsed copy, encoding,
    exception middleware), which cost several times the decision. Any other request, and a
    body that does not validate, goes to FastAPI (its body passed on): the same routes, the
    same one-line errors, the same OpenAPI document."""

    def __init__(self, app: Any, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        route = _hot_route(scope)
        if route is None:
            await self.app(scope, receive, send)
            return
        op, model, job_id = route
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            request = model.model_validate_json(body)
        except ValidationError:
            await self.app(scope, _replayed(body, receive), send)
            return
        try:
            status, content = 200, {"actions": await self.service.handle(op, request, job_id)}
        except Exception as exc:  # every refusal is one line, never a crash
            status, message = refusal(exc)
            content = {"error": " ".join(message.split())}
        data = json_bytes(content)
        headers = [(b"content-length", str(len(data)).encode()), (b"content-type", JSON_TYPE)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})


def _hot_route(scope: Any) -> tuple[str, type[BaseModel], str | None] | None:
    """(operation, request model, job id) of a POST to an event endpoint with a JSON body (the
    content type FastAPI reads as JSON: none, or application/json), else None."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    path = scope["path"]
    job_id = None
    if path in HOT_ROUTES:
        op, model = HOT_ROUTES[path]
    elif matched := COMPLETE.fullmatch(path):
        op, model, job_id = "complete", AtRequest, matched.group(1)
    else:
        return None
    for name, value in scope["headers"]:
        if name == b"content-type" and value.partition(b";")[0].strip().lower() != JSON_TYPE:
            return None
    return op, model, job_id


def _replayed(body: bytes, receive: Any) -> Any:
    """``receive`` with the body already read given again first."""
    sent = False

    async def again() -> Any:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def validation_line(exc: RequestValidationError) -> tuple[int, str]:
    """The first validation error as (status, one line naming the field)."""
    errors = list(exc.errors())
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())[1:])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first.get("type") == "json_invalid":
        return 400, f"malformed JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
    if first.get("type") == "extra_forbidden":
        return 422, f"unknown field '{where}'{more}"
    return 422, f"{where or 'body'}: {first.get('msg', 'invalid')}{more}"


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
    """The API (an ASGI application: the token gate, the event endpoints' fast path, FastAPI);
    ``token`` None only with --insecure-local."""
    from schedlab._version import __version__
    from schedlab.service.prometheus import exposition

    errors = {code: {"model": ErrorOut} for code in (400, 401, 422, 500, 503)}
    app = FastAPI(
        title="schedlab online scheduler",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        responses=errors,
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

    @app.post("/jobs", response_model=ActionsOut)
    async def submit(body: SubmitRequest) -> Response:
        """A job arrives at ``at``; the actions the policy took."""
        return actions_answer(await service.handle("submit", body))

    @app.post("/jobs/{job_id}/complete", response_model=ActionsOut)
    async def complete(job_id: str, body: AtRequest) -> Response:
        """A running job finished at ``at``."""
        return actions_answer(await service.handle("complete", body, job_id))

    @app.post("/advance", response_model=ActionsOut)
    async def advance(body: AtRequest) -> Response:
        """Time passes to ``at`` (timers and the decision grid of slotted policies)."""
        return actions_answer(await service.handle("advance", body))

    @app.post("/events", response_model=ActionsOut)
    async def events(body: EventsRequest) -> Response:
        """Events of one instant, applied in order, then one decision (as the simulation)."""
        return actions_answer(await service.handle("events", body))

    @app.get("/state")
    async def state() -> dict[str, Any]:
        """Time, queue, running jobs, free capacity (and configuration) per server."""
        with service.lock:
            current = plain(service.scheduler.state())
        return {"policy": service.policy, "family": service.family, **current}

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        """Prometheus text format."""
        with service.lock:
            now = service.scheduler.metrics()
        body, content_type = exposition(now)
        return Response(body, media_type=content_type)

    @app.get("/healthz")
    async def healthz() -> Response:
        """200 ``ok`` while events are accepted; 503 with the reason once the log failed."""
        if service.failed:
            return error(503, service.failed)
        return JSONResponse({"status": "ok"})

    fast = EventPath(app, service)
    return fast if token is None else TokenGate(fast, token)
