"""``schedlab slurm``: a policy deciding the jobs of a running Slurm partition (docs/slurm.md)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Annotated

import typer

from schedlab.cli_support import err, escape, spec_argument, user_errors

cluster_app = typer.Typer(
    name="slurm-cluster",
    help="A Slurm cluster on this host for trials and tests (Debian's slurm-wlm and munge).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.command(name="slurm")(slurm)
    app.add_typer(cluster_app, name="slurm-cluster")


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
    slurm_conf: Annotated[
        Path | None,
        typer.Option(
            "--slurm-conf",
            help="The cluster's slurm.conf (default: Slurm's own lookup, SLURM_CONF).",
            show_default=False,
        ),
    ] = None,
    exit_when_idle: Annotated[
        bool,
        typer.Option("--exit-when-idle", help="Stop once no job of the partition waits or runs."),
    ] = False,
) -> None:
    """Run a policy on a Slurm partition whose jobs arrive held (docs/slurm.md)."""
    from schedlab.errors import SchedlabError
    from schedlab.model.spec import load_spec
    from schedlab.slurm.adapter import Adapter, partition_nodes
    from schedlab.slurm.slurmctl import Slurm

    path = spec_argument(spec_arg, spec_opt)
    spec = load_spec(path)
    name = policy or spec.policy.name
    if slurm_conf is not None and not slurm_conf.is_file():
        raise SchedlabError(f"--slurm-conf: {slurm_conf} is not a file")
    client = Slurm(env={"SLURM_CONF": str(slurm_conf.resolve())} if slurm_conf else None)
    adapter = Adapter(
        spec=spec,
        policy=name,
        slurm=client,
        partition=partition,
        nodes=partition_nodes(client, partition),
        log_path=event_log,
    ).open()
    logger = logging.getLogger("schedlab.slurm")
    logger.setLevel(logging.INFO)
    logger.addHandler(_Line())
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    err.print(
        escape(
            f"schedlab slurm: {name} on partition {partition} ({', '.join(adapter.nodes)}); "
            f"event log {event_log} (starts carried out: {adapter.cursor} of "
            f"{adapter.recall.actions}, {adapter.cursor_path.name})"
        ),
        highlight=False,
        soft_wrap=True,
    )
    try:
        adapter.run(poll, stop=lambda: stopping or (exit_when_idle and adapter.idle()))
    finally:
        adapter.close()


Folder = Annotated[Path, typer.Argument(help="The cluster's folder (configuration, logs, PIDs).")]


@cluster_app.command("up")
@user_errors
def cluster_up(
    root: Folder,
    nodes: Annotated[int, typer.Option("--nodes", min=1, help="slurmd daemons (n1..nN).")] = 4,
    scheduler: Annotated[
        str, typer.Option("--scheduler", help="Slurm's scheduler plugin.")
    ] = "sched/builtin",
    hold: Annotated[
        bool, typer.Option("--hold/--no-hold", help="job_submit.lua holds partition batch.")
    ] = True,
) -> None:
    """Start munged, slurmctld and NODES slurmd on 127.0.0.1; wait until the nodes are idle."""
    from schedlab.cli_support import out
    from schedlab.slurm.local_cluster import LocalCluster

    root.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(
        root.resolve(), nodes=nodes, scheduler=scheduler, hold_partition="batch" if hold else None
    ).start()
    out.print(f"export SLURM_CONF={cluster.conf}", highlight=False, soft_wrap=True)


@cluster_app.command("jobs")
@user_errors
def cluster_jobs(
    root: Folder,
    count: Annotated[int, typer.Option("--count", min=1, help="Jobs to submit.")] = 8,
    seed: Annotated[int, typer.Option("--seed")] = 1,
) -> None:
    """Submit COUNT sleep jobs (1-3 nodes, 1-3 s, time limit 1-5 min) through sbatch."""
    from schedlab.cli_support import out
    from schedlab.slurm.local_cluster import LocalCluster

    ids = LocalCluster(root.resolve()).submit_sleeps(count, seed)
    out.print(f"submitted jobs {ids[0]}-{ids[-1]}", highlight=False)


@cluster_app.command("down")
@user_errors
def cluster_down(root: Folder) -> None:
    """End the cluster's daemons by their process ids."""
    from schedlab.slurm.local_cluster import LocalCluster

    LocalCluster(root.resolve()).stop()
