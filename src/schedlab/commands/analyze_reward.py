"""``schedlab analyze reward --spec FILE``: psychas2022's static reward problem for a loss spec.

Prints F*(rho) (LP (3) on HiGHS), F^g(rho) (the global greedy assignment, Definition 3.2), their
ratio, and the configurations of each, for the VM types and workload of a loss-family spec
(psychas2022, §3; rho_j = lambda_j / mu_j per server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from schedlab.cli_support import (
    escape,
    fail,
    out,
    print_table,
    spec_argument,
    user_errors,
)
from schedlab.commands.analyze import analyze_app


def _config_text(k: Any, names: tuple[str, ...]) -> str:
    return " + ".join(f"{int(n)} {names[j]}" for j, n in enumerate(k) if n) or "empty"


@analyze_app.command("reward")
@user_errors
def reward(
    spec_arg: Annotated[
        Path | None, typer.Argument(metavar="SPEC", help="Loss-family simulation spec (TOML).")
    ] = None,
    spec_opt: Annotated[
        Path | None, typer.Option("--spec", "-s", help="The same, as an option (alias).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """F*, F^g and F^g/F* of psychas2022 (§3) for the VM types and workload of a loss spec."""
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import errors_located_in, load_spec
    from schedlab.optim.reward import workload_of_model

    spec = spec_argument(spec_arg, spec_opt)
    with errors_located_in(spec):
        model = compile_model(load_spec(spec))
    if model.family != "loss":
        fail(f"{spec}: analyze reward needs a loss-family spec (model.family = 'loss')")
    try:
        wl = workload_of_model(model.context)
        opt = wl.problem.optimum(wl.rho)
        greedy = wl.problem.global_greedy(wl.rho)
    except ValueError as exc:
        fail(escape(f"{spec}: {exc}"))
    ratio = greedy.reward / opt.value if opt.value > 0 else 1.0
    data = {
        "types": list(wl.type_names),
        "rho": wl.rho.tolist(),
        "servers": wl.servers,
        "F_star": opt.value,
        "F_greedy": greedy.reward,
        "ratio": ratio,
        "optimum": [
            {"configuration": k.tolist(), "fraction": float(x)}
            for k, x in zip(opt.configurations, opt.fractions, strict=True)
        ],
        "global_greedy": [
            {"configuration": k.tolist(), "fraction": float(x)}
            for k, x in zip(greedy.configurations, greedy.fractions, strict=True)
        ],
        "reward_rate_bound": opt.value * wl.servers,
    }
    if as_json:
        print(json.dumps(data))
        return
    out.print(
        f"F* = {opt.value:.6g}   F^g = {greedy.reward:.6g}   F^g/F* = {ratio:.4f}   "
        f"(per server; x L = {wl.servers}: reward-rate bound {opt.value * wl.servers:.6g})",
        highlight=False,
    )
    for title, confs, fracs in (
        ("LP (3) optimum", opt.configurations, opt.fractions),
        ("global greedy x^g", greedy.configurations, greedy.fractions),
    ):
        table = Table(title=title, show_header=True, header_style="bold")
        table.add_column("configuration")
        table.add_column("fraction of servers", justify="right")
        for k, x in zip(confs, fracs, strict=True):
            table.add_row(escape(_config_text(k, wl.type_names)), f"{x:.6g}")
        print_table(table)
