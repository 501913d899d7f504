"""``schedlab analyze multiserver`` and ``schedlab analyze capacity``: theory for a workload.

* ``multiserver --spec FILE``: for a pooled spec with rigid jobs, the resource-pooled lower bounds
  of grosof2023 (SRPT-1 §4.1, Gittins-1 §5.3: M/G/1 formulas), the blind M/G/1 baselines and
  Theorem 4.1's (5.1's) upper bound on ServerFilling-SRPT's (-Gittins') mean response time;
* ``capacity``: psychas2019's maximum supportable workload rho* (eq. (4), Theorem 1) for job sizes
  given as finite types, a uniform law or a trace's demand column.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from schedlab.cli_support import (
    FormatOption,
    OutputFormat,
    PluginOption,
    emit_object,
    escape,
    fail,
    load_plugins,
    out,
    print_table,
    spec_argument,
    user_errors,
)
from schedlab.commands.analyze import analyze_app


def _fmt(x: float) -> str:
    return f"{x:.6g}" if math.isfinite(x) else str(x)


def _table(rows: list[tuple[str, str, str]], headers: tuple[str, str, str]) -> None:
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    for i, col in enumerate(headers):
        table.add_column(escape(col), justify="right" if i == 1 else "left")
    for row in rows:
        table.add_row(*(escape(c) for c in row))
    print_table(table)


@analyze_app.command("multiserver")
@user_errors
def multiserver(
    spec_arg: Annotated[
        Path | None, typer.Argument(metavar="SPEC", help="Pooled simulation spec (TOML).")
    ] = None,
    spec_opt: Annotated[
        Path | None, typer.Option("--spec", "-s", help="The same, as an option (alias).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: FormatOption = OutputFormat.table,
    plugin: PluginOption = None,
) -> None:
    """grosof2023 bounds for a pooled spec: SRPT-1, Gittins-1 and Theorem 4.1 (§4.1, §5)."""
    from schedlab.analysis.sizes import SizeLaw
    from schedlab.analysis.srpt import (
        fb1_mean_response_time,
        fcfs1_mean_response_time,
        ps1_mean_response_time,
        srpt1_mean_response_time_by_need,
    )
    from schedlab.analysis.theorem41 import theorem41_bounds
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import errors_located_in, load_spec

    spec = spec_argument(spec_arg, spec_opt)
    load_plugins(plugin)
    parsed = load_spec(spec)
    with errors_located_in(spec):
        model = compile_model(parsed)
    try:
        law = SizeLaw.from_model(model)
        srpt = theorem41_bounds(model, order="srpt")
        gittins = theorem41_bounds(model, order="gittins")
        lam = float(model.rate)
        baselines = {
            "FCFS-1": fcfs1_mean_response_time(law, lam),
            "PS-1": ps1_mean_response_time(law, lam),
            "FB-1": fb1_mean_response_time(law, lam),
        }
        by_need = srpt1_mean_response_time_by_need(law, lam)
    except ValueError as exc:
        fail(f"{spec}: {escape(str(exc))}")
    covered = srpt.covered
    data: dict[str, Any] = {
        "k": srpt.k,
        "arrival_rate": lam,
        "load": srpt.load,
        "needs": srpt.setting,
        "srpt1": srpt.lower,
        "gittins1": gittins.lower,
        "srpt1_by_need": {str(n): v for n, v in by_need.items()},
        **{name.lower().replace("-", ""): v for name, v in baselines.items()},
        "theorem41_gap": srpt.gap,
        "theorem41_upper": srpt.upper if covered else None,
        "theorem51_upper": gittins.upper if covered else None,
    }
    if as_json or fmt is not OutputFormat.table:
        emit_object(data, OutputFormat.json if as_json else fmt, lambda: None)
        return
    out.print(
        f"k = {srpt.k}, arrival rate {_fmt(lam)}, load {_fmt(srpt.load)}, needs: {srpt.setting}",
        highlight=False,
    )
    rows = [
        ("SRPT-1", _fmt(srpt.lower), "lower bound for every policy, sizes known (§4.1)"),
        ("Gittins-1", _fmt(gittins.lower), "lower bound for every blind policy (§5.3)"),
        *((name, _fmt(v), "M/G/1 on one server of speed k") for name, v in baselines.items()),
    ]
    if covered:
        rows += [
            ("Theorem 4.1", _fmt(srpt.upper), "ServerFilling-SRPT's E[T] is at most this"),
            ("Theorem 5.1", _fmt(gittins.upper), "ServerFilling-Gittins' E[T] is at most this"),
        ]
    _table(rows, ("quantity", "E[T]", "meaning"))
    if not covered:
        out.print(
            "Theorem 4.1 does not cover these needs (they neither nest nor divide k).",
            highlight=False,
        )
    out.print(
        "SRPT-1 by need: "
        + ", ".join(f"need {n:g}: {_fmt(v)}" for n, v in sorted(by_need.items())),
        highlight=False,
    )


@analyze_app.command("capacity")
@user_errors
def capacity(
    spec_arg: Annotated[
        Path | None,
        typer.Argument(
            metavar="[SPEC]",
            help="A spec: the capacity region of its VM and server types (psychas2018 eq. (2)).",
        ),
    ] = None,
    sizes: Annotated[
        str | None, typer.Option("--sizes", help="Finite job types: comma-separated sizes.")
    ] = None,
    probs: Annotated[
        str | None, typer.Option("--probs", help="Their probabilities (default: uniform).")
    ] = None,
    uniform: Annotated[
        tuple[float, float] | None,
        typer.Option("--uniform", help="Sizes uniform on [LOW, HIGH] (rounded bounds)."),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option("--trace", help="Canonical job table: its demand column (rounded bounds)."),
    ] = None,
    servers: Annotated[int, typer.Option("--servers", min=1, help="Identical servers L.")] = 1,
    server_capacity: Annotated[
        float, typer.Option("--capacity", help="Capacity of each server.")
    ] = 1.0,
    tol: Annotated[float, typer.Option("--tol", help="Relative gap to stop refining at.")] = 0.01,
    max_level: Annotated[
        int, typer.Option("--max-level", min=1, help="Finest partition level 2^level.")
    ] = 7,
    mean_service: Annotated[
        float | None, typer.Option("--mean-service", help="E[S]: also print lambda* = rho*/E[S].")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: FormatOption = OutputFormat.table,
    spec_opt: Annotated[
        Path | None, typer.Option("--spec", help="The spec, as an option (alias of SPEC).")
    ] = None,
) -> None:
    """psychas2019's maximum supportable workload rho* (eq. (4), Theorem 1), or with --spec the
    capacity region of psychas2018 (eq. (2)) for the spec's VM and server types.

    Exact for finite types (LP on HiGHS); bracketed by upper- and lower-rounded LPs otherwise."""
    from schedlab.optim.capacity_lp import max_workload
    from schedlab.optim.rounded_bounds import SizeLaw, rounded_bounds

    spec = spec_argument(spec_arg, spec_opt) if spec_arg or spec_opt else None
    given = [x is not None for x in (sizes, uniform, trace, spec)]
    if sum(given) != 1:
        fail("give exactly one of SPEC (or --spec), --sizes, --uniform and --trace")
    if spec is not None:
        _vm_capacity(spec, as_json or fmt is OutputFormat.json)
        return
    if probs is not None and sizes is None:
        fail("--probs goes with --sizes")
    if server_capacity <= 0 or not 0 < tol < 1:
        fail("--capacity must be > 0 and --tol in (0, 1)")
    try:
        if sizes is not None:
            values = _numbers(sizes, "--sizes")
            weights = _numbers(probs, "--probs") if probs is not None else None
            exact = max_workload(values, weights, servers=servers, capacity=server_capacity)
            lower = upper = exact.rho_star
            alpha = (exact.traffic_intensity,) * 2
            state = f"exact ({exact.method})"
        else:
            law = SizeLaw.uniform(*uniform) if uniform is not None else _trace_law(trace)
            res = rounded_bounds(
                law,
                servers=servers,
                capacity=server_capacity,
                tol=tol,
                max_level=max_level,
                progress=_show_level if fmt is OutputFormat.table and not as_json else None,
            )
            lower, upper = res.lower, res.upper
            alpha = res.traffic_intensity()
            state = "exact" if res.exact else ("converged" if res.converged else "not converged")
    except ValueError as exc:
        fail(escape(str(exc)))
    data: dict[str, Any] = {
        "rho_star": [lower, upper],
        "load": list(alpha),
        "status": state,
    }
    if mean_service is not None:
        data["arrival_rate"] = [lower / mean_service, upper / mean_service]
    if as_json or fmt is not OutputFormat.table:
        emit_object(data, OutputFormat.json if as_json else fmt, lambda: None)
        return
    out.print(f"rho* = {_bracket(lower, upper)} ({state})", highlight=False)
    out.print(
        f"as the engine's load (rho* E[R] / total capacity): {_bracket(*alpha)}", highlight=False
    )
    if mean_service is not None:
        rate = _bracket(lower / mean_service, upper / mean_service)
        out.print(f"arrival rate lambda* = {rate} per time unit", highlight=False)


def _vm_capacity(path: Path, as_json: bool) -> None:
    """psychas2018 eq. (2): the largest s such that s times the spec's workload rho (rho_j =
    lambda p_j E[S_j]) stays in the capacity region C; its traffic intensity zeta = 1 / s (§7)."""
    import numpy as np

    from schedlab.model.compile import compile_model
    from schedlab.model.spec import errors_located_in, load_spec
    from schedlab.optim.vm_capacity import ServerType, max_scaling
    from schedlab.policies.packing.vm_stalling import server_types, vm_types

    with errors_located_in(path):
        model = compile_model(load_spec(path))
    if model.trace is not None:
        fail(f"{path}: --spec needs VM types (job classes), not a trace")
    rho = np.array([model.rate * c.probability * c.duration.mean for c in model.classes])
    caps, index = server_types(model.capacity)
    counts = np.bincount(index, minlength=len(caps))
    try:
        res = max_scaling(
            vm_types(model.context),
            [ServerType(int(n), tuple(c)) for n, c in zip(counts, caps, strict=True)],
            rho,
        )
    except ValueError as exc:
        fail(f"{path}: {escape(str(exc))}")
    data = {
        "max_scaling": res.max_scaling,
        "zeta": 1.0 / res.max_scaling,
        "workload": rho.tolist(),
        "boundary_rate": model.rate * res.max_scaling,
    }
    if as_json:
        emit_object(data, OutputFormat.json, lambda: None)
        return
    out.print(
        f"largest scaling of the workload inside C: {res.max_scaling:.6g} (traffic intensity "
        f"zeta = {1 / res.max_scaling:.6g}; arrival rate on the boundary of C: "
        f"{data['boundary_rate']:.6g})",
        highlight=False,
    )


def _show_level(level: Any) -> None:
    out.print(
        f"level {level.level}: {level.types:5d} types, grid {level.grid:6d}: "
        f"{_fmt(level.lower)} <= rho* <= {_fmt(level.upper)}   ({level.seconds:.2f} s)",
        highlight=False,
    )


def _bracket(lo: float, hi: float) -> str:
    return _fmt(lo) if lo == hi else f"[{_fmt(lo)}, {_fmt(hi)}]"


def _numbers(text: str, flag: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        fail(f"{flag}: expected comma-separated numbers, got {text!r}")
        raise


def _trace_law(path: Path):
    """Demands of a canonical table, weighted by duration (psychas2019's share of work)."""
    import pyarrow.parquet as pq

    from schedlab.optim.rounded_bounds import SizeLaw

    if not path.exists():
        fail(f"{path}: no such file")
    table = pq.read_table(path)
    if "demand" not in table.column_names:
        fail(f"{path}: no 'demand' column (convert with --max-resource for one resource)")
    return SizeLaw.from_samples(
        table.column("demand").to_numpy().astype(float),
        weights=table.column("duration").to_numpy().astype(float),
    )
