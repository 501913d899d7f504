"""``schedlab slurm``: a policy deciding the jobs of a running Slurm partition (docs/slurm.md)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Annotated

import typer

from schedlab.cli_support import err, escape, spec_argument, user_errors


def register(app: typer.Typer) -> None:
    app.command(name="slurm")(slurm)


class _Line(logging.Handler):
    """The adapter's log records, one line each on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(escape(f"schedlab slurm: {record.getMessage()}"), highlight=False, soft_wrap=True)


@user_errors
def slurm(
    spec_arg: Annotated[
        Path | None,
        typer.Argument(metavar="SPEC", help="The cluster spec: servers = the partition's nodes."),
    ] = None,
    spec_opt: Annotated[
        Path | None, typer.Option("--spec", "-s", help="The same, as an option (alias).")
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option("--policy", help="The policy (default: the spec's).", show_default=False),
    ] = None,
    partition: Annotated[
        str, typer.Option("--partition", "-p", help="The Slurm partition it decides.")
    ] = "batch",
    event_log: Annotated[
        Path,
        typer.Option("--event-log", help="The durable event log (created, or replayed)."),
    ] = Path("schedlab-slurm.jsonl"),
    poll: Annotated[
        float, typer.Option("--poll", min=0.01, help="Seconds between two reads of Slurm.")
    ] = 0.25,
    exit_when_idle: Annotated[
        bool,
        typer.Option("--exit-when-idle", help="Stop once no job of the partition waits or runs."),
    ] = False,
) -> None:
    """Run a policy on a Slurm partition whose jobs arrive held (docs/slurm.md)."""
    from schedlab.model.spec import load_spec
    from schedlab.slurm.adapter import Adapter, partition_nodes
    from schedlab.slurm.slurmctl import Slurm

    path = spec_argument(spec_arg, spec_opt)
    spec = load_spec(path)
    name = policy or spec.policy.name
    logger = logging.getLogger("schedlab.slurm")
    logger.setLevel(logging.INFO)
    logger.addHandler(_Line())
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    client = Slurm()
    adapter = Adapter(
        spec=spec,
        policy=name,
        slurm=client,
        partition=partition,
        nodes=partition_nodes(client, partition),
        log_path=event_log,
    ).open()
    err.print(
        escape(
            f"schedlab slurm: {name} on partition {partition} ({', '.join(adapter.nodes)}); "
            f"event log {event_log}"
        ),
        highlight=False,
        soft_wrap=True,
    )
    try:
        adapter.run(poll, stop=lambda: stopping or (exit_when_idle and adapter.idle()))
    finally:
        adapter.close()
