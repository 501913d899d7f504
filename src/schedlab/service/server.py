"""Starting ``schedlab serve``: the scheduler from the spec, its state rebuilt from the event log,
the token, and uvicorn on one worker."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from schedlab.errors import SchedlabError, SpecError
from schedlab.experiments.run_rows import canonical_json
from schedlab.model.spec import SimulationSpec, load_spec
from schedlab.online import Scheduler
from schedlab.service.app import DECISION_DEADLINE, MAX_BATCH, MAX_TIME_STEP, Service
from schedlab.service.eventlog import EventLog, LogHeader

TOKEN_ENV = "SCHEDLAB_TOKEN"
LOCALHOST = "127.0.0.1"


@dataclass(frozen=True)
class Started:
    """A service ready to serve, and what its start had to say (a torn log line)."""

    service: Service
    warnings: list[str]
    replayed: int


def log_header(spec: SimulationSpec, policy: str) -> LogHeader:
    digest = hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:20]
    options = spec.policy.params if spec.policy.name == policy else {}
    return LogHeader(spec_hash=digest, policy=policy, options=options)


def start(
    spec_path: str | Path,
    policy: str | None,
    event_log: str | Path | None,
    plugins: Sequence[str | Path] = (),
    max_time_step: float = MAX_TIME_STEP,
    max_batch: int = MAX_BATCH,
    decision_deadline: float = DECISION_DEADLINE,
) -> Started:
    """The service of ``schedlab serve``: a fresh scheduler, then every event of the log (if any)
    replayed through it in order."""
    spec = load_spec(spec_path)
    name = policy or spec.policy.name
    limits = {
        "max_time_step": max_time_step,
        "max_batch": max_batch,
        "decision_deadline": decision_deadline,
    }
    if event_log is None:
        scheduler = Scheduler.from_spec(spec, name, plugins=plugins)
        service = Service(scheduler, None, name, scheduler.model.family, **limits)
        return Started(service, [], 0)
    opened = EventLog.open(event_log, log_header(spec, name))  # locked: a second server stops here
    try:
        scheduler = Scheduler.from_spec(spec, name, plugins=plugins)
    except BaseException:
        opened.log.close()
        raise
    service = Service(scheduler, opened.log, name, scheduler.model.family, **limits)
    for number, line in enumerate(opened.events, 2):
        try:
            service.replay(line)
        except (ValidationError, ValueError, TypeError, SchedlabError) as exc:
            service.close(grace=10)
            reason = " ".join(str(exc).split())
            raise SpecError(f"{event_log}:{number}: cannot replay this event: {reason}") from None
    return Started(service, opened.warnings, len(opened.events))


def given_token(token_file: Path | None) -> tuple[str, str]:
    """(the token of ``token_file``, else of $SCHEDLAB_TOKEN, and where it came from)."""
    if token_file is None:
        return os.environ.get(TOKEN_ENV, "").strip(), f"${TOKEN_ENV}"
    try:
        return token_file.read_text(encoding="utf-8").strip(), str(token_file)
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{token_file}: cannot read the token: {exc}") from None


def ignored_token(token_file: Path | None, insecure_local: bool) -> str | None:
    """The one-line warning when --insecure-local leaves a given token unused."""
    if not insecure_local:
        return None
    if token_file is not None:
        given = f"--token-file {token_file}"
    elif os.environ.get(TOKEN_ENV, "").strip():
        given = f"${TOKEN_ENV}"
    else:
        return None
    return f"--insecure-local serves without authentication: {given} is set but not used"


def read_token(token_file: Path | None, insecure_local: bool, host: str) -> str | None:
    """The API token of ``schedlab serve``; None only with --insecure-local, which binds the
    loopback address only."""
    if insecure_local:
        if host != LOCALHOST:
            raise SpecError(f"--insecure-local serves {LOCALHOST} only, not --host {host}")
        return None
    token, where = given_token(token_file)
    if not token:
        raise SpecError(
            f"no API token: give --token-file FILE or set {TOKEN_ENV} (or --insecure-local "
            f"for a loopback-only server without one); {where} is empty"
        )
    if len(token) < 16:
        raise SpecError(f"{where}: the token is shorter than 16 characters")
    return token
