"""The ``schedlab`` command.

Errors in the user's input (spec, flags, files) print one line naming the file, line or field and
exit with code 2; they never print a traceback.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from schedlab.cli_support import (
    GLOBAL,
    FormatOption,
    OutputFormat,
    PluginOption,
    ctrl_c_stops,
    emit_object,
    emit_rows,
    err,
    escape,
    load_plugins,
    out,
    output_width,
    print_table,
    spec_argument,
    user_errors,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Simulate and analyse cluster-scheduling policies (packing, loss and pooled models).",
)
PROGRESS_MIN_ARRIVALS = 200_000
# Allocations between two young-generation collections of the cyclic garbage collector (Python's
# default: 700). Starting a run creates some 130,000 objects that live to the end (Numba's
# registries, the pydantic models): scanned every 700 allocations, that is 0.1 s of a short
# simulate, 0.05 s at this threshold (issue 33 item 1). Garbage cycles are still collected.
GC_THRESHOLD = 20_000


def _print_version(value: bool) -> None:
    if value:
        from schedlab._version import __version__

        typer.echo(f"schedlab {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="On an error, print its full traceback (e.g. of a plugin's Numba typing error) "
            "before the one-line message.",
        ),
    ] = False,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide", help="Every table at its natural width (default: fitted to 100 columns)."
        ),
    ] = False,
) -> None:
    """Simulate and analyse cluster-scheduling policies (packing, loss and pooled models)."""
    GLOBAL.debug, GLOBAL.wide = debug, wide


@contextmanager
def arrival_progress(
    total_hint: int | None, enabled: bool
) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar fed with (arrivals processed, total); None when disabled."""
    if not enabled or (total_hint is not None and total_hint < PROGRESS_MIN_ARRIVALS):
        yield None
        return
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} arrivals"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        auto_refresh=False,  # no refresh thread: replications may fork workers (decision 0009)
    ) as bar:
        err.show_cursor(True)  # a Ctrl-C ends the process at once (ctrl_c_stops): none hidden
        task = bar.add_task("simulating", total=total_hint or 1)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, refresh=True)

        yield update


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.6g}"


def shared_reasons(unreliable: dict[str, str]) -> dict[str, int]:
    """The reasons that make more than one metric unreliable, numbered from 1 in order of first
    use: the table says them once, under it, instead of in every row (a run too short for its
    relaxation time makes every metric unreliable for the same reason)."""
    counts = Counter(unreliable.values())
    shared = [reason for reason in dict.fromkeys(unreliable.values()) if counts[reason] > 1]
    return {reason: number for number, reason in enumerate(shared, 1)}


def print_result(result: Any, *, transient: bool = False) -> None:
    from rich.table import Table

    from schedlab.measurement.reliability import EXACT

    head = Table.grid(padding=(0, 2))
    head.add_row("policy", f"{result.policy} ({result.family} family)")
    head.add_row("load", f"{result.load:.4g}  (arrival rate {result.rate:.6g})")
    head.add_row(
        "jobs",
        f"{result.counters['arrivals']:,} arrivals, "
        f"{result.counters['completions']:,} completed, "
        f"{result.counters['lost']:,} lost",
    )
    head.add_row(
        "events",
        f"{result.events:,} in {result.loop_s:.3g} s "
        f"({result.events_per_second / 1e6:.2f} M events/s); "
        f"total {result.wall_s:.3g} s with compiling and setup",
    )
    head.add_row("stable", "yes" if result.stable else f"[bold red]NO[/]: {result.instability}")
    if result.backlog:
        head.add_row("backlog", f"[yellow]{escape(result.backlog)}[/]")
    unit = result.time_unit or "time units"
    tau = result.spec.run.slowdown_threshold
    head.add_row("units", f"times in {unit}; bounded slowdown with tau = {tau:g} {unit}")
    out.print(head)
    if not result.stable and not transient:
        out.print(
            "[yellow]Means of an unstable run estimate nothing; they are not shown "
            "(--allow-unstable shows their transient averages).[/]"
        )
        return
    table = Table(show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("95% CI", justify="right")
    shown = result.metrics if result.stable else result.transient
    notes = shared_reasons(result.unreliable)
    for name, est in shown.items():
        if name in EXACT:
            interval = "one replay's value"
        elif name in result.unreliable:
            reason = result.unreliable[name]
            said = f"see note {notes[reason]}" if reason in notes else escape(reason)
            interval = f"[yellow]unreliable[/]: {said}"
        else:
            interval = escape(f"[{_fmt(est.ci95[0])}, {_fmt(est.ci95[1])}]")
        table.add_row(escape(name), _fmt(est.mean), interval)
    if not result.stable:
        out.print("[yellow]Transient averages over the window (no steady state: not estimates):[/]")
    print_table(table)
    for reason, number in notes.items():
        out.print(f"note {number}: {escape(reason)}", highlight=False, width=output_width())
    for w in result.warnings:
        err.print(f"[yellow]warning:[/] {w}", highlight=False)


def simulation_rows(result: Any) -> list[dict[str, Any]]:
    """One row per metric: ``metric, mean, ci95_lo, ci95_hi``, the numbers of ``--format json``
    (an unstable run's metrics are NaN, so empty, except those meaningful when unstable:
    docs/guarantees.md)."""
    return [
        {"metric": name, "mean": est.mean, "ci95_lo": est.ci95[0], "ci95_hi": est.ci95[1]}
        for name, est in result.metrics.items()
    ]


def write_converted_jobs(result: Any, target: Path, fmt: str) -> None:
    """The per-job table of the run (its first replication) in ``fmt`` at ``target``."""
    from schedlab.report.jobs_formats import servers_of, write_jobs

    unplaced = write_jobs(
        result.jobs,
        target,
        fmt,
        k=servers_of(result.spec),
        note=f"{result.policy} at load {result.load:.4g}",
    )
    if result.spec.run.replications > 1:
        err.print(f"note: {target} holds the first replication's jobs", highlight=False)
    if unplaced:
        err.print(
            f"note: {unplaced:,} jobs found too few free servers at their start (a preemptive "
            "policy): their allocated_resources are empty",
            highlight=False,
        )


@app.command()
@user_errors
def simulate(
    spec_arg: Annotated[
        Path | None, typer.Argument(metavar="SPEC", help="Simulation spec (TOML).")
    ] = None,
    spec_opt: Annotated[
        Path | None, typer.Option("--spec", "-s", help="The same, as an option (alias).")
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    allow_unstable: Annotated[
        bool, typer.Option("--allow-unstable", help="Run even if load >= 1 (no steady state).")
    ] = False,
    arrivals: Annotated[int | None, typer.Option(help="Override run.arrivals.", min=1)] = None,
    seed: Annotated[int | None, typer.Option(help="Override run.seed.", min=0)] = None,
    replications: Annotated[
        int | None, typer.Option(help="Override run.replications.", min=1)
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Run the replications on this many local processes.", min=1),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(help="Run the replications on this Dask scheduler (tcp://host:8786)."),
    ] = None,
    no_check: Annotated[
        bool, typer.Option("--no-check", help="Skip action validation (faster; trusts the policy).")
    ] = False,
    jobs_out: Annotated[
        Path | None, typer.Option(help="Write the per-job records to this file (--jobs-format).")
    ] = None,
    jobs_format: Annotated[
        str,
        typer.Option(
            help="Format of --jobs-out: parquet, evalys (the CSV evalys's JobSet.from_csv reads) "
            "or swf (pooled family)."
        ),
    ] = "parquet",
    timeseries_out: Annotated[
        Path | None, typer.Option(help="Write the sampled time series to this Parquet or CSV file.")
    ] = None,
    plugin: PluginOption = None,
) -> None:
    """Run one simulation spec and print its metrics with 95% confidence intervals.

    With --replications R the R independent replications are combined (Student t over the
    replication means); --workers W or --cluster ADDRESS runs them in parallel.
    """
    from schedlab import outputs
    from schedlab.api import simulate as run_simulation
    from schedlab.errors import SchedlabError
    from schedlab.model.spec import load_spec
    from schedlab.report.jobs_formats import check_format, run_family
    from schedlab.simulation.simulate import with_run

    spec = spec_argument(spec_arg, spec_opt)
    fmt = OutputFormat.json if as_json else fmt
    load_plugins(plugin)
    loaded = load_spec(spec)
    if jobs_out is None and isinstance(loaded.run.jobs, str):  # a path in the spec: beside it
        jobs_out = outputs.inside(spec.parent, loaded.run.jobs)
    check_format(jobs_format)
    if jobs_out is None and jobs_format != "parquet":
        raise SchedlabError(
            f"--jobs-format {jobs_format} needs --jobs-out FILE (or a run.jobs path)"
        )
    if jobs_out is not None and jobs_format != "parquet":
        outputs.check_writable(jobs_out)
        check_format(jobs_format, run_family(loaded))
    for target in (jobs_out if jobs_format == "parquet" else None, timeseries_out):
        if target is not None:  # checked before the run, not after it
            outputs.check_writable(target, parquet=target.suffix != ".csv")
    converted = jobs_out if jobs_format != "parquet" else None
    parsed = with_run(
        loaded,
        arrivals=arrivals,
        seed=seed,
        replications=replications,
        allow_unstable=True if allow_unstable else None,
        check=False if no_check else None,
        jobs=True if converted else str(jobs_out) if jobs_out else None,
    )
    parallel = cluster is not None or (workers or 1) > 1
    total = parsed.run.arrivals and parsed.run.arrivals * parsed.run.replications
    with arrival_progress(total, enabled=fmt is OutputFormat.table) as progress:
        from schedlab.model.spec import errors_located_in

        with errors_located_in(spec), ctrl_c_stops():  # even inside a plugin's endless loop
            result = run_simulation(parsed, workers=workers, client=cluster, progress=progress)
    if parallel and parsed.run.replications == 1:
        err.print("[yellow]note:[/] one replication: --workers/--cluster have nothing to share")
    if timeseries_out is not None:
        if timeseries_out.suffix == ".csv":
            import pyarrow.csv as pacsv

            with outputs.atomic(timeseries_out) as tmp:
                pacsv.write_csv(result.timeseries, tmp)
        else:
            outputs.write_parquet(result.timeseries, timeseries_out)
    if converted is not None:
        write_converted_jobs(result, converted, jobs_format)
    if fmt is OutputFormat.csv:
        emit_rows(simulation_rows(result), fmt)
    else:
        emit_object(
            result.to_dict(transient=allow_unstable),
            fmt,
            lambda: print_result(result, transient=allow_unstable),
        )


@app.command()
@user_errors
def policies(
    fmt: FormatOption = OutputFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a Markdown table (docs/policies.md).")
    ] = False,
    plugin: PluginOption = None,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="Every column (title, families, parameters), full width."),
    ] = False,
) -> None:
    """List every policy with its family, paper and section, and its traits: whether it
    preempts, what it knows of job sizes (none, estimate = the requested time, exact), whether
    it migrates jobs (plugins' policies included)."""
    import sys

    from schedlab.policies.registry import all_policies, policies_markdown, yes_no

    load_plugins(plugin)
    items = all_policies()
    if markdown:
        sys.stdout.write(policies_markdown())
        return
    fmt = OutputFormat.json if as_json else fmt
    traits = {p.name: p.traits_at() for p in items}
    rows = [
        {
            "name": p.name,
            "family": p.family,
            "families": "/".join(p.families) if fmt is OutputFormat.csv else list(p.families),
            "preemptive": traits[p.name].preemptive,
            "size_knowledge": traits[p.name].size_knowledge,
            "migrates": traits[p.name].migrates,
            "title": p.about.title,
            "reference": p.about.reference,
            "summary": p.about.summary,
            "parameters": " ".join(sorted(p.kernels.config.model_fields))
            if fmt is OutputFormat.csv
            else sorted(p.kernels.config.model_fields),
        }
        for p in items
    ]
    if fmt is OutputFormat.table and wide:
        emit_rows(rows, fmt, wide=True)
    elif fmt is OutputFormat.table:  # within 100 columns: the paper's key, the traits
        for row, p in zip(rows, items, strict=True):
            row["paper"] = p.about.paper
            row["preempts"] = yes_no(row["preemptive"])
            row["sizes"] = row["size_knowledge"] or "?"
            row["migrates"] = yes_no(row["migrates"])
        columns = ["name", "family", "preempts", "sizes", "migrates", "paper", "summary"]
        emit_rows(rows, fmt, columns=columns)
    else:
        emit_rows(rows, fmt)


@app.command()
@user_errors
def demo(
    arrivals: Annotated[int, typer.Option(help="Arrivals per point.", min=1000)] = 300_000,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write the figure.")] = Path(
        "out/demo"
    ),
) -> None:
    """ServerFilling vs FCFS on grosof2023's Fig. 2 setting at several loads (`make run`)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from schedlab import outputs
    from schedlab.demo import DEMO_LOADS, DEMO_POLICIES, fcfs_limit, plot_demo, run_demo

    for suffix in (".png", ".svg", ".csv"):  # before minutes of simulation, not after them
        outputs.check_target(outputs.make_dirs(out_dir) / f"demo_response_time{suffix}")
    out.print(
        f"ServerFilling vs FCFS, k = 8 servers, needs uniform on {{1,2,4,8}}, exponential "
        f"sizes; {arrivals:,} arrivals per point, same jobs for both policies."
    )
    out.print(f"FCFS's exact stability limit (saturated-system CTMC): rho* = {fcfs_limit():.4f}")
    table = Table(show_header=True, header_style="bold")
    table.add_column("load", justify="right")
    for policy in DEMO_POLICIES:
        table.add_column(f"{policy}: E[T] (95% CI)", justify="right")
    results: dict[tuple[float, str], Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("simulating", total=len(DEMO_LOADS) * len(DEMO_POLICIES))

        def done(row: Any) -> None:
            results[(row.load, row.policy)] = row.result
            bar.advance(task)

        rows = run_demo(arrivals, on_result=done)
    for load in DEMO_LOADS:
        cells = []
        for policy in DEMO_POLICIES:
            r = results[(load, policy)]
            est = r["mean_response_time"]
            if not r.stable:
                cells.append("[red]unstable[/]")
            elif "mean_response_time" in r.unreliable:
                cells.append(f"[yellow]unreliable[/] ({est.mean:.4g})")
            else:
                cells.append(escape(f"{est.mean:.4g} [{est.ci95[0]:.4g}, {est.ci95[1]:.4g}]"))
        table.add_row(f"{load:g}", *cells)
    print_table(table)
    paths = plot_demo(rows, out_dir)
    out.print(f"figure: {paths[0].resolve()}")
    out.print(f"also:   {paths[1]}, {paths[2]} (the numbers behind the figure)")


@app.command()
def version() -> None:
    """Print the schedlab version."""
    from schedlab._version import __version__

    out.print(__version__)


def _add_command_groups() -> None:
    """Each module of schedlab.commands adds a command group (``NAME``, a typer ``app``)."""
    import importlib
    import pkgutil

    import schedlab.commands as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"schedlab.commands.{info.name}")
        if hasattr(module, "register"):
            module.register(app)


_add_command_groups()


def app_for(argv: list[str]) -> typer.Typer:
    """The app that runs the command line ``argv``: the app of the one command or command group
    it names (with the root's options), else the whole app. Typer builds the Click command of
    every registered command from its signature before it runs one: 47 ms for schedlab's 21
    commands, a sixth of what a short ``simulate`` spends after its imports (issue 33 item 1).
    The whole app's help and an unknown command's error need them all; a command's run and its
    own help need only that command. The root's options are flags, so the first word that is not
    an option is the command's name."""
    import copy

    from typer.main import get_command_name

    name = next((word for word in argv if not word.startswith("-")), None)
    commands = [
        c
        for c in app.registered_commands
        if (c.name or get_command_name(c.callback.__name__)) == name
    ]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    single = copy.copy(app)
    single.registered_commands, single.registered_groups = commands, groups
    return single


_ENDING: list[int] = []  # the status main() ended with, for _end_without_teardown


def main() -> None:
    """The command; an output that cannot be written (stdout to a full disk, a closed pipe) is
    one line on stderr, never a traceback. The process then ends through
    :func:`_end_without_teardown`."""
    import atexit
    import gc
    import os
    import sys

    from schedlab._jit import configure

    configure()  # the entry point's process tuning (decision 0020)
    atexit.register(_end_without_teardown)  # the first handler registered: the last to run
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    status: object = 0
    try:
        try:
            app_for(sys.argv[1:])()
        finally:
            sys.stdout.flush()
    except OSError as exc:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        reason = exc.strerror or str(exc)
        line = (
            f"{exc.filename}: {reason}" if exc.filename else f"cannot write the output ({reason})"
        )
        sys.stderr.write(f"error: {line}\n")
        status = 1
    except SystemExit as done:
        status = done.code
    watched = sys.getprofile() is not None or sys.gettrace() is not None
    if not watched and (status is None or isinstance(status, int)):
        _ENDING.append(status or 0)
    sys.exit(status)


def _end_without_teardown() -> None:
    """The last exit handler of ``schedlab``: ends the process with main()'s status without
    tearing the interpreter down. Python's exit has waited for the threads still running and run
    the other exit handlers (``atexit``, ``weakref.finalize``: temporary files, pools; all
    registered after this one, and so run before it); stdout and stderr are flushed, then
    ``os._exit``. Freeing every module's objects one by one (Numba's typing and lowering
    registries above all) is a fifth of a short simulation's time and does nothing a finished
    command needs (issue 33). Nothing is done (Python's own exit goes on) when main() did not
    finish, ran under a profiler or a debugger (they report after the program ends), or ended
    with a status that is not a number."""
    import contextlib
    import os
    import sys

    if not _ENDING:
        return
    with contextlib.suppress(OSError):  # a closed pipe: nothing more can be said
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(_ENDING[-1])


if __name__ == "__main__":
    main()
