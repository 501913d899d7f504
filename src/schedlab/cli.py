"""The ``schedlab`` command.

Errors in the user's input (spec, flags, files) print one line naming the file, line or field and
exit with code 2; they never print a traceback.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from schedlab.cli_support import err, fail, out, user_errors

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Simulate and analyse cluster-scheduling policies (packing, loss and pooled models).",
)
PROGRESS_MIN_ARRIVALS = 200_000


@contextmanager
def arrival_progress(
    total_hint: int | None, enabled: bool
) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar fed with (arrivals processed, total); None when disabled."""
    if not enabled or (total_hint is not None and total_hint < PROGRESS_MIN_ARRIVALS):
        yield None
        return
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} arrivals"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("simulating", total=total_hint or 1)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.6g}"


def print_result(result: Any) -> None:
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
        f"total {result.wall_s:.3g} s",
    )
    head.add_row("stable", "yes" if result.stable else f"[bold red]NO[/]: {result.instability}")
    out.print(head)
    if not result.stable:
        out.print("[yellow]Means of an unstable run estimate nothing; they are not shown.[/]")
        return
    table = Table(show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("95% CI", justify="right")
    for name, est in result.metrics.items():
        table.add_row(
            escape(name), _fmt(est.mean), escape(f"[{_fmt(est.ci95[0])}, {_fmt(est.ci95[1])}]")
        )
    out.print(table)
    for w in result.warnings:
        err.print(f"[yellow]warning:[/] {w}", highlight=False)


@app.command()
@user_errors
def simulate(
    spec: Annotated[Path, typer.Option("--spec", "-s", help="Simulation spec (TOML).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    allow_unstable: Annotated[
        bool, typer.Option("--allow-unstable", help="Run even if load >= 1 (no steady state).")
    ] = False,
    arrivals: Annotated[int | None, typer.Option(help="Override run.arrivals.", min=1)] = None,
    seed: Annotated[int | None, typer.Option(help="Override run.seed.", min=0)] = None,
    replications: Annotated[
        int | None, typer.Option(help="Override run.replications.", min=1)
    ] = None,
    no_check: Annotated[
        bool, typer.Option("--no-check", help="Skip action validation (faster; trusts the policy).")
    ] = False,
    jobs_out: Annotated[
        Path | None, typer.Option(help="Write the per-job records to this Parquet file.")
    ] = None,
    timeseries_out: Annotated[
        Path | None, typer.Option(help="Write the sampled time series to this Parquet or CSV file.")
    ] = None,
) -> None:
    """Run one simulation spec and print its metrics with 95% confidence intervals."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from schedlab.engine.simulate import simulate_model, with_run
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import errors_located_in, load_spec

    parsed = with_run(
        load_spec(spec),
        arrivals=arrivals,
        seed=seed,
        replications=replications,
        allow_unstable=True if allow_unstable else None,
        check=False if no_check else None,
        jobs=str(jobs_out) if jobs_out else None,
    )
    for target in (jobs_out, timeseries_out):
        if target is not None and not target.parent.exists():
            fail(f"{target}: directory {target.parent} does not exist")
    with errors_located_in(spec):
        model = compile_model(parsed)
    with arrival_progress(parsed.run.arrivals, enabled=not as_json) as progress:
        result = simulate_model(model, progress=progress)
    if timeseries_out is not None:
        if timeseries_out.suffix == ".csv":
            pacsv.write_csv(result.timeseries, timeseries_out)
        else:
            pq.write_table(result.timeseries, timeseries_out)
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    else:
        print_result(result)


@app.command()
@user_errors
def policies(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a Markdown table (docs/policies.md).")
    ] = False,
) -> None:
    """List every policy with its family, paper and section."""
    from schedlab.policies.registry import all_policies, policies_markdown

    items = all_policies()
    if markdown:
        sys.stdout.write(policies_markdown())
        return
    if as_json:
        rows = [
            {
                "name": p.name,
                "family": p.family,
                "families": list(p.families),
                "title": p.title,
                "reference": p.reference,
                "summary": p.summary,
                "parameters": sorted(p.config.model_fields),
            }
            for p in items
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(show_header=True, header_style="bold")
    for col in ("name", "family", "reference", "summary"):
        table.add_column(col, overflow="fold")
    for p in items:
        table.add_row(p.name, p.family, p.reference, p.summary)
    out.print(table)


@app.command()
@user_errors
def demo(
    arrivals: Annotated[int, typer.Option(help="Arrivals per point.", min=1000)] = 300_000,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write the figure.")] = Path(
        "out/demo"
    ),
) -> None:
    """ServerFilling vs FCFS on paper 004's Fig. 2 setting at several loads (`make run`)."""
    from schedlab.demo import DEMO_LOADS, DEMO_POLICIES, fcfs_limit, plot_demo, run_demo

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
            cells.append(
                escape(f"{est.mean:.4g} [{est.ci95[0]:.4g}, {est.ci95[1]:.4g}]")
                if r.stable
                else "[red]unstable[/]"
            )
        table.add_row(f"{load:g}", *cells)
    out.print(table)
    paths = plot_demo(rows, out_dir)
    out.print(f"figure: {paths[0].resolve()}")
    out.print(f"also:   {paths[1]}, {paths[2]} (the numbers behind the figure)")


@app.command()
def version() -> None:
    """Print the schedlab version."""
    from schedlab import __version__

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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
