"""``schedlab trace convert|info|formats``: real traces -> the canonical job table (and
``calibrate``: :mod:`.trace_calibrate`).

See docs/traces.md. Bad input (a missing file, an unknown format, a malformed option, and with
``--strict`` any bad row) prints one line naming the file, line and field and exits with code 2.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from schedlab.cli_support import (
    OutputFormat,
    emit_object,
    err,
    escape,
    fail,
    out,
    print_table,
    user_errors,
)

trace_app = typer.Typer(
    no_args_is_help=True,
    help="Real workload traces (Google 2011/2019, SWF, Alibaba) -> canonical job tables.",
)


def register(app: typer.Typer) -> None:
    from schedlab.commands.trace_calibrate import add_command

    add_command(trace_app)
    app.add_typer(trace_app, name="trace")


_UNITS = {"": 1.0, "s": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_seconds(text: str, option: str) -> float:
    """``90``, ``90s``, ``36h``, ``1.5d``, ``20min`` -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*", text)
    if not m or m.group(2) not in _UNITS:
        fail(f"{option}: '{escape(text)}' is not a time (e.g. 3600, 90s, 20min, 36h, 1.5d)")
    return float(m.group(1)) * _UNITS[m.group(2)]  # type: ignore[union-attr]


def parse_window_jobs(text: str) -> tuple[int, int]:
    """``COUNT`` or ``START:COUNT`` -> (start, count)."""
    parts = text.split(":")
    try:
        nums = [int(p.replace("_", "").replace(",", "")) for p in parts]
    except ValueError:
        nums = []
    if len(nums) not in (1, 2) or min(nums, default=-1) < 0:
        fail(f"--window-jobs: '{escape(text)}' is not COUNT or START:COUNT (whole numbers >= 0)")
    return (0, nums[0]) if len(nums) == 1 else (nums[0], nums[1])


def parse_window_time(text: str) -> tuple[float, float]:
    """``END`` or ``START:END`` (seconds from the first arrival, units allowed)."""
    parts = text.split(":")
    if len(parts) not in (1, 2):
        fail(f"--window-time: '{escape(text)}' is not END or START:END")
    values = [parse_seconds(p, "--window-time") for p in parts]
    start, end = (0.0, values[0]) if len(values) == 1 else (values[0], values[1])
    if not end > start:
        fail(f"--window-time: the end ({end:g} s) must be after the start ({start:g} s)")
    return start, end


def parse_capacity(text: str) -> dict[str, float]:
    """``cpu=64,memory=0.69`` -> {'cpu': 64.0, 'memory': 0.69}."""
    result: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not name.strip() or not (number > 0 and math.isfinite(number)):
            fail(
                f"--normalize: '{escape(item)}' is not RESOURCE=CAPACITY with a positive number "
                "(e.g. cpu=64,memory=0.69)"
            )
        result[name.strip()] = number
    return result


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


@trace_app.command("convert")
@user_errors
def convert_cmd(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Trace file(s): files, a directory of parts, or a quoted glob.", show_default=False
        ),
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format", "-f", help="google2011, borg2019, swf, alibaba2017 or alibaba2018."
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Output Parquet file.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop at the first bad row (file, line, field).")
    ] = False,
    normalize: Annotated[
        str | None,
        typer.Option(
            help="Server capacity in the trace's units, e.g. cpu=64,memory=0.69 (default: the "
            "format's server; SWF: MaxProcs, else the largest allocation seen).",
            metavar="R=CAP,...",
        ),
    ] = None,
    need_from: Annotated[
        str | None,
        typer.Option(
            help="Pooled server need from: procs (SWF default), requested, nodes, or demand "
            "(ceil(units x max demand)).",
            metavar="SOURCE",
        ),
    ] = None,
    need_units: Annotated[
        float, typer.Option(help="Unit servers per normalized server for --need-from demand.")
    ] = 1.0,
    max_resource: Annotated[
        bool,
        typer.Option(
            "--max-resource",
            help="Add 'demand' = max of the normalized resources (psychas2019 §VII-B).",
        ),
    ] = False,
    round_pow2: Annotated[
        bool,
        typer.Option(
            "--round-pow2", help="Round demands up to powers of 1/2 (types; psychas2022 §7.2)."
        ),
    ] = False,
    pow2_floor: Annotated[
        int | None,
        typer.Option(help="With --round-pow2: smallest type 1/2^J (psychas2019 §V).", metavar="J"),
    ] = None,
    window_jobs: Annotated[
        str | None,
        typer.Option(
            help="Keep jobs START..START+COUNT-1 in arrival order.", metavar="[START:]COUNT"
        ),
    ] = None,
    window_time: Annotated[
        str | None,
        typer.Option(
            help="Keep arrivals in [START, END) after the first one (e.g. 0:1.5d).",
            metavar="[START:]END",
        ),
    ] = None,
    time_scale: Annotated[
        float,
        typer.Option(
            help="Multiply arrival times by BETA; traffic scaling = 1/BETA (psychas2019 §VII-B).",
            metavar="BETA",
        ),
    ] = 1.0,
    completed_only: Annotated[
        bool, typer.Option("--completed-only", help="SWF: keep status 1 (completed) jobs only.")
    ] = False,
    machines: Annotated[
        Path | None,
        typer.Option(help="machine_events file(s) (google2011, borg2019): record capacities."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Convert a trace to the canonical job table (Parquet), counting every dropped or bad row."""
    from schedlab.workloads.traces import Transforms, convert

    if window_jobs is not None and window_time is not None:
        fail("give --window-jobs or --window-time, not both")
    if pow2_floor is not None and not round_pow2:
        fail("--pow2-floor needs --round-pow2")
    transforms = Transforms(
        normalize=parse_capacity(normalize) if normalize else None,
        need_from=need_from,
        need_units=need_units,
        max_resource=max_resource,
        round_pow2=round_pow2,
        pow2_floor=pow2_floor,
        window_jobs=parse_window_jobs(window_jobs) if window_jobs else None,
        window_time=parse_window_time(window_time) if window_time else None,
        time_scale=time_scale,
    )
    options: dict[str, Any] = {"completed_only": True} if completed_only else {}
    result = convert(
        inputs,
        format,
        out_path,
        strict=strict,
        transforms=transforms,
        machines=machines,
        **options,
    )
    report = result.report
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "out": str(out_path),
                    "rows_written": result.rows,
                    "seconds": result.seconds,
                    **result.meta,
                }
            )
            + "\n"
        )
        return
    out.print(
        f"{escape(format)}: read {_plural(report.rows, 'row')} from "
        f"{_plural(len(result.meta['sources']), 'file')} in {result.seconds:.2f} s; "
        f"kept {_plural(report.jobs, 'job')}",
        highlight=False,
    )
    for line in report.summary_lines():
        out.print(escape(line), highlight=False, soft_wrap=True)
    names = [t["name"] for t in result.meta.get("transforms", [])]
    cap = ", ".join(f"{r}={v:g}" for r, v in result.meta["capacity"].items())
    out.print(f"demands normalized to a server of {escape(cap)}; transforms: {', '.join(names)}")
    size = out_path.stat().st_size / 2**20
    out.print(f"wrote {escape(str(out_path))}: {_plural(result.rows, 'job')}, {size:.1f} MB")
    if report.n_bad:
        err.print(
            f"[yellow]warning:[/] {_plural(report.n_bad, 'bad row')} counted and skipped "
            "(--strict makes them errors)",
            highlight=False,
        )


def _seconds(x: float) -> str:
    """Times: whole seconds with separators when large (``109,584,000``)."""
    return f"{x:,.0f}" if math.isfinite(x) and abs(x) >= 1000 else _fmt(x)


def _fmt(x: float | None) -> str:
    """4 significant digits, fixed notation between 0.001 and 10^7 (``17,030``, ``0.0265``)."""
    if x is None or not math.isfinite(x):
        return "-"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return f"{float(f'{x:.4g}'):,.10g}"
    return f"{x:.3e}"


@trace_app.command("info")
@user_errors
def info_cmd(
    path: Annotated[
        Path, typer.Argument(help="A canonical job table (or a raw trace with --trace-format).")
    ],
    trace_format: Annotated[
        str | None,
        typer.Option("--trace-format", "-t", help="Read a raw trace of this format instead."),
    ] = None,
    servers: Annotated[
        int | None,
        typer.Option(help="Offered load on this many unit servers (demand columns).", min=1),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k", help="Pooled servers for the load of 'need' (default: the trace's k).", min=1
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="table (for people), csv or json (for scripts: written without any styling).",
        ),
    ] = OutputFormat.table,
) -> None:
    """Jobs, time span, arrival rate, duration/demand statistics and offered load of a table."""
    from schedlab.workloads.traces import formats, read, read_table, summarize
    from schedlab.workloads.traces.info import human_time

    if fmt.lower() not in OutputFormat.__members__:
        raw = fmt in formats()
        hint = f"; read a raw '{fmt}' trace with --trace-format {fmt}" if raw else ""
        fail(f"--format: '{escape(fmt)}' is not one of table, csv, json{hint}")
    output = OutputFormat.json if as_json else OutputFormat(fmt.lower())
    if trace_format:
        table = read(path, trace_format)
        if table.num_rows == 0:
            from schedlab.workloads.traces import get_meta
            from schedlab.workloads.traces.report import NoJobs, ReadReport

            report = ReadReport.from_dict(get_meta(table)["report"])
            raise NoJobs(get_meta(table)["sources"], report)
    else:
        import pyarrow.parquet as pq

        from schedlab.workloads.traces.info import info_columns

        names = (
            pq.read_schema(path).names
            if path.suffix in (".parquet", ".pq") and path.exists()
            else None
        )
        table = read_table(path, columns=info_columns(names) if names else None)
    for required in ("arrival", "duration"):
        if required not in table.column_names:
            fail(f"{escape(str(path))}: not a job table (no '{required}' column)")
    info = summarize(table, servers=servers, k=k)
    if output is not OutputFormat.table:
        data = json.loads(json.dumps(info.to_dict(), default=_json_default))
        emit_object(data, output, show_table=lambda: None)
        return
    meta = info.meta
    head = Table.grid(padding=(0, 2))
    head.add_row("table", escape(str(path)))
    if meta.get("format"):
        sources = ", ".join(Path(s).name for s in meta.get("sources", []))
        head.add_row("source", escape(f"{meta['format']}: {sources}"))
    head.add_row("jobs", f"{info.jobs:,}")
    head.add_row(
        "time span",
        f"{_seconds(info.span)} s ({human_time(info.span)}), arrivals from "
        f"{_seconds(info.first_arrival)} to {_seconds(info.last_arrival)} s",
    )
    if info.interarrival is not None:
        ia = info.interarrival
        head.add_row(
            "arrival rate",
            f"{_fmt(info.rate)} jobs/s; inter-arrival mean {_fmt(ia.mean)} s, CV {_fmt(ia.cv)}; "
            f"{info.arrival_instants:,} distinct arrival times",
        )
    if meta.get("capacity"):
        cap = ", ".join(f"{r}={v:g}" for r, v in meta["capacity"].items())
        head.add_row("normalized to", escape(f"one server of {cap} (source units)"))
    if info.k:
        head.add_row(
            "pooled k",
            f"{info.k:,} servers"
            + (
                " (MaxProcs)"
                if meta.get("header", {}).get("MaxProcs")
                else " (the largest allocation seen)"
                if meta.get("capacity_inferred")
                else ""
            ),
        )
    out.print(head)
    stats = Table(show_header=True, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    stats.add_column("")
    for name in info.columns:
        stats.add_column(name, justify="right", no_wrap=True)
    for stat in ("mean", "cv", "min", "p50", "p90", "p99", "max", "missing"):
        values = [getattr(s, stat) for s in info.columns.values()]
        if stat == "missing":
            if not any(values):
                continue
            stats.add_row("null", *(f"{v:,}" for v in values))
        else:
            stats.add_row("CV" if stat == "cv" else stat, *(_fmt(v) for v in values))
    print_table(stats)
    for name, w in info.work_rate.items():
        if name == "need":
            line = f"offered work ({name}): {_fmt(w)} servers busy on average"
            if info.pooled_load is not None:
                line += f"; load on k = {info.k:,}: {info.pooled_load:.4g}"
        else:
            line = f"offered work ({name}): {_fmt(w)} unit servers' worth"
            if name in info.load:
                line += f"; load on {info.servers:,} servers: {info.load[name]:.4g}"
        out.print(escape(line), highlight=False)
    if info.servers is None and any(c.startswith("demand") for c in info.work_rate):
        out.print("[dim](give --servers L for the load on L unit servers)[/]")
    for m in meta.get("machines", [])[:8]:
        out.print(
            f"machines: {m['machines']:,} with cpu={_fmt(m['cpu'])}, memory={_fmt(m['memory'])}",
            highlight=False,
        )
    if meta.get("report"):
        from schedlab.workloads.traces.report import ReadReport

        report = ReadReport.from_dict(meta["report"])
        out.print(f"read: {report.rows:,} rows -> {report.jobs:,} jobs", highlight=False)
        for line in report.summary_lines():
            out.print(escape(line), highlight=False, soft_wrap=True)
    transforms = meta.get("transforms", [])
    if transforms:
        parts = [
            t["name"] + "(" + ", ".join(f"{k}={v}" for k, v in t.items() if k != "name") + ")"
            for t in transforms
        ]
        out.print(escape("transforms: " + "; ".join(parts)), highlight=False, soft_wrap=True)


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


@trace_app.command("formats")
def formats_cmd() -> None:
    """List the trace formats, their units and default server capacity."""
    from schedlab.workloads.traces import formats

    table = Table(show_header=True, header_style="bold")
    for col in ("format", "what", "demand units", "default server"):
        table.add_column(col, overflow="fold")
    for name, reader in formats().items():
        units = ", ".join(f"{r}: {u}" for r, u in reader.units.items())
        cap = ", ".join(
            f"{r}={'MaxProcs (else the widest job)' if math.isnan(v) else f'{v:g}'}"
            for r, v in reader.default_capacity.items()
        )
        table.add_row(name, reader.title, units, cap)
    print_table(table)
