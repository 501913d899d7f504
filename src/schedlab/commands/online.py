"""``schedlab serve`` (the online scheduler over HTTP) and ``schedlab replay`` (its client, driven
by a converted log). See docs/online.md."""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from schedlab.cli_support import PluginOption, err, escape, out, spec_argument, user_errors
from schedlab.errors import SchedlabError

DEFAULT_PORT = 8787
# seconds a thread waiting for the interpreter lock may wait: the event log's thread needs it a few
# times per group (Python's default, 5 ms, held each group's answers back that long while the loop
# was busy; the interval costs nothing while no other thread waits), and the event loop waits no
# longer than this for it while the decision thread runs Python (decision 0026: its kernels
# release the lock), so /healthz is answered within a few intervals of any decision
SWITCH_INTERVAL = 1e-4
SERVICE_STACK = ("fastapi", "uvicorn", "prometheus_client", "httpx")  # the 'serve' extra
# On SIGTERM or SIGINT: seconds the requests in flight have to be answered (uvicorn's graceful
# shutdown), then seconds a decision still running has to return; past both the process exits
# without it (EXIT_DECISION_RUNNING), within 10 s of the signal (issue 45, item 6).
SHUTDOWN_GRACE = 3.0
DECISION_GRACE = 1.0
EXIT_DECISION_RUNNING = 3  # stopped by a signal while a decision was still running


def require_service_stack(command: str) -> None:
    """One line naming the extra when the web stack is not installed (it is optional)."""
    missing = [m for m in SERVICE_STACK if importlib.util.find_spec(m) is None]
    if missing:
        raise SchedlabError(
            f"schedlab {command} needs the 'serve' extra ({', '.join(missing)} not installed): "
            "pip install 'schedlab[serve]'"
        )


def register(app: typer.Typer) -> None:
    app.command(name="serve")(serve)
    app.command(name="replay")(replay)


TokenFileOption = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        help="A file holding the API token (default: the SCHEDLAB_TOKEN environment variable).",
        show_default=False,
    ),
]


@user_errors
def serve(
    spec_arg: Annotated[
        Path | None,
        typer.Argument(metavar="SPEC", help="The cluster spec (a simulation spec's TOML)."),
    ] = None,
    spec_opt: Annotated[
        Path | None, typer.Option("--spec", "-s", help="The same, as an option (alias).")
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option("--policy", help="The policy (default: the spec's).", show_default=False),
    ] = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = DEFAULT_PORT,
    host: Annotated[str, typer.Option("--host", help="The address to bind.")] = "127.0.0.1",
    event_log: Annotated[
        Path | None,
        typer.Option(
            "--event-log",
            help="The durable event log (JSON Lines; created, or replayed on start).",
            show_default=False,
        ),
    ] = None,
    token_file: TokenFileOption = None,
    insecure_local: Annotated[
        bool,
        typer.Option(
            "--insecure-local", help="No token; only with the loopback address 127.0.0.1."
        ),
    ] = False,
    plugin: PluginOption = None,
    max_time_step: Annotated[
        float,
        typer.Option(
            "--max-time-step",
            min=0,
            help="The largest step an event's time may take past the last event's, in the "
            "spec's time unit (default: one year, 31,536,000 s); a larger one is refused (422).",
        ),
    ] = 31_536_000.0,
    max_batch: Annotated[
        int,
        typer.Option(
            "--max-batch", min=1, max=100_000, help="The most events of one POST /events (413)."
        ),
    ] = 10_000,
    decision_deadline: Annotated[
        float,
        typer.Option(
            "--decision-deadline",
            min=0,
            help="Seconds a decision may run before GET /healthz answers 503 naming it (the "
            "service still answers meanwhile; events wait behind the decision).",
        ),
    ] = 10.0,
) -> None:
    """Serve a policy as an online scheduler over HTTP/JSON (docs/online.md)."""
    spec = spec_argument(spec_arg, spec_opt)
    require_service_stack("serve")
    import uvicorn

    from schedlab.service.app import create_app
    from schedlab.service.server import ignored_token, read_token, start

    token = read_token(token_file, insecure_local, host)
    unused = ignored_token(token_file, insecure_local)
    if unused:
        err.print(f"[yellow]warning:[/] {escape(unused)}", highlight=False, soft_wrap=True)
    started = start(
        spec,
        policy,
        event_log,
        plugins=plugin or (),
        max_time_step=max_time_step,
        max_batch=max_batch,
        decision_deadline=decision_deadline,
    )
    for warning in started.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    service = started.service
    logged = f"; event log {event_log} ({started.replayed} events replayed)" if event_log else ""
    err.print(
        escape(f"schedlab serve: {service.policy} on http://{host}:{port}{logged}"),
        highlight=False,
        soft_wrap=True,
    )
    app = create_app(service, token)
    # The process is the server's: its tuning (decision 0020). What exists now (the imports,
    # Numba's compiler, the state rebuilt from the log: about 155,000 objects) lives as long as the
    # server: out of the collector's way, a full collection takes under a millisecond instead of
    # about 47 ms (a pause every answer in flight would wait).
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL)
    stopped_by = stop_signals()
    logging.getLogger("uvicorn.error").addFilter(not_cancelled_requests)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            workers=1,
            log_level="warning",
            access_log=False,
            loop="uvloop",
            http="httptools",
            proxy_headers=False,  # the client's address is not used
            server_header=False,  # no "server: uvicorn" and no "date" header on each answer
            date_header=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
        )
    finally:
        stopped = service.close(grace=DECISION_GRACE)
    why = f" on {signal.Signals(stopped_by[0]).name}" if stopped_by else ""
    if not stopped:
        running = service.decider.running_for() or 0.0
        err.print(
            escape(
                f"schedlab serve: stopped{why} with a decision of policy {service.policy} still "
                f"running after {running:.1f} s; its event was neither logged nor answered"
            ),
            highlight=False,
            soft_wrap=True,
        )
        sys.stderr.flush()
        os._exit(EXIT_DECISION_RUNNING)  # the decision thread cannot be stopped: end without it
    err.print(escape(f"schedlab serve: stopped{why}"), highlight=False, soft_wrap=True)


def not_cancelled_requests(record: logging.LogRecord) -> bool:
    """uvicorn's line for the requests its graceful shutdown cancelled left out: ``serve`` says
    what it stopped with in its own line."""
    return "timeout graceful shutdown exceeded" not in record.getMessage()


def stop_signals() -> list[int]:
    """SIGTERM and SIGINT noted (uvicorn's handlers stop the server, then call these): the
    command then ends with exit code 0, or EXIT_DECISION_RUNNING, rather than by the signal."""
    received: list[int] = []
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda sig, frame: received.append(sig))
    return received


@user_errors
def replay(
    log: Annotated[Path, typer.Argument(help="A converted log (schedlab trace convert).")],
    to: Annotated[
        str, typer.Option("--to", help="The service's URL.")
    ] = f"http://127.0.0.1:{DEFAULT_PORT}",
    speed: Annotated[
        str,
        typer.Option("--speed", help="Trace seconds per wall second (1000x), or max."),
    ] = "max",
    token_file: TokenFileOption = None,
    wait: Annotated[
        float,
        typer.Option("--wait", help="Seconds to wait for the service to answer /healthz."),
    ] = 30.0,
) -> None:
    """Drive a running `schedlab serve` from a converted log; print a summary."""
    require_service_stack("replay")
    from schedlab.service.replay import HttpTarget, Replay, drive, parse_speed, read_trace
    from schedlab.service.server import given_token

    pace = parse_speed(speed)
    token, _ = given_token(token_file)
    target = HttpTarget(to, token or None)
    try:
        target.wait_ready(wait)
        family = target.get("/state")["family"]
        summary, _ = drive(Replay(read_trace(log, family)), target.send, pace)
    finally:
        target.close()
    out.print(summary.line(), highlight=False, soft_wrap=True)
