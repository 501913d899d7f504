"""``schedlab analyze ...``: analytic tools (berg2020: elastic and inelastic jobs).

* ``analyze elastic``: E[T] of Inelastic-First and Elastic-First, exactly (truncated 2D CTMC) and by
  the paper's busy-period / Coxian / matrix-analytic method (§5);
* ``analyze no-arrivals``: Theorem 6's absorbing chain (jobs present at time 0, no arrivals);
* ``analyze srpt-k``: App. A, SRPT-k against the LP lower bound on random instances.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from schedlab.cli_support import (
    FormatOption,
    OutputFormat,
    emit_rows,
    escape,
    fail,
    out,
    print_table,
    user_errors,
)

analyze_app = typer.Typer(
    no_args_is_help=True,
    help=(
        "Analytic tools: exact response times, bounds and capacities "
        "(psychas2019, berg2020, grosof2023)."
    ),
)


def register(app: typer.Typer) -> None:
    app.add_typer(analyze_app, name="analyze")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@analyze_app.command("elastic")
@user_errors
def elastic(
    k: Annotated[int, typer.Option("--k", help="Number of servers k.")],
    mu_i: Annotated[float, typer.Option("--mu-i", help="Inelastic size rate mu_I.")],
    mu_e: Annotated[float, typer.Option("--mu-e", help="Elastic size rate mu_E.")],
    lambda_i: Annotated[
        float | None, typer.Option("--lambda-i", help="Inelastic arrival rate lambda_I.")
    ] = None,
    lambda_e: Annotated[
        float | None, typer.Option("--lambda-e", help="Elastic arrival rate lambda_E.")
    ] = None,
    rho: Annotated[
        float | None,
        typer.Option(
            "--rho", help="Load (eq. 1) instead of the arrival rates; lambda_I = lambda_E."
        ),
    ] = None,
    cap: Annotated[
        float, typer.Option("--cap", help="Servers an inelastic job may use, C (§2).")
    ] = 1.0,
    policy: Annotated[
        str, typer.Option("--policy", help="IF, EF or both.", case_sensitive=False)
    ] = "both",
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="ma (matrix-analytic), exact (truncated CTMC) or both.",
            case_sensitive=False,
        ),
    ] = "both",
    tol: Annotated[
        float, typer.Option("--tol", help="Relative tolerance of the exact CTMC's truncation.")
    ] = 1e-6,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Mean response time of Inelastic-First and Elastic-First (berg2020, §5, App. D)."""
    from schedlab.analysis.elastic import (
        POLICIES,
        ElasticSystem,
        exact_response_time,
        matrix_analytic_response_time,
        policy_name,
    )

    if rho is not None and (lambda_i is not None or lambda_e is not None):
        fail("give either --rho or --lambda-i and --lambda-e, not both")
    if rho is None and (lambda_i is None or lambda_e is None):
        fail("give the arrival rates --lambda-i and --lambda-e (or the load --rho)")
    if rho is not None:
        system = ElasticSystem.from_load(k, rho, mu_i, mu_e, inelastic_cap=cap)
    else:
        system = ElasticSystem(k, lambda_i, lambda_e, mu_i, mu_e, inelastic_cap=cap)  # type: ignore[arg-type]
    policies = POLICIES if policy.lower() == "both" else (policy_name(policy),)
    methods = {"ma": ["ma"], "exact": ["exact"], "both": ["ma", "exact"]}.get(method.lower())
    if methods is None:
        fail(f"unknown method '{method}'; choose ma, exact or both")
    results = []
    for name in policies:
        for m in methods:  # type: ignore[union-attr]
            if m == "ma":
                results.append(matrix_analytic_response_time(system, name))
            else:
                results.append(exact_response_time(system, name, tol=tol))
    if fmt is OutputFormat.csv:
        emit_rows(
            [
                {
                    "policy": r.policy,
                    "method": r.method,
                    "mean_response_time": r.mean_response_time,
                    "mean_response_time_inelastic": r.mean_response_time_inelastic,
                    "mean_response_time_elastic": r.mean_response_time_elastic,
                    "mean_number_inelastic": r.mean_number_inelastic,
                    "mean_number_elastic": r.mean_number_elastic,
                }
                for r in results
            ],
            fmt,
        )
        return
    if as_json or fmt is OutputFormat.json:
        print(
            json.dumps(
                {
                    "system": results[0].to_dict()["system"],
                    "results": [
                        {key: v for key, v in r.to_dict().items() if key != "system"}
                        for r in results
                    ],
                }
            )
        )
        return
    out.print(
        f"k = {system.k}, lambda_I = {_fmt(system.lambda_i)}, lambda_E = {_fmt(system.lambda_e)}, "
        f"mu_I = {_fmt(system.mu_i)}, mu_E = {_fmt(system.mu_e)}, C = {_fmt(system.inelastic_cap)}"
        f"; rho = {_fmt(system.rho)}",
        highlight=False,
        soft_wrap=True,
    )
    from rich.table import Table

    from schedlab.policies.registry import get_policy

    table = Table(show_header=True, header_style="bold")
    for col in ("policy", "method", "E[T]", "E[T_I]", "E[T_E]", "E[N_I]", "E[N_E]"):
        table.add_column(escape(col), justify="left" if col in ("policy", "method") else "right")
    notes = []
    for r in results:
        short = get_policy(r.policy).about.label
        d = r.details
        if r.method == "exact-ctmc":
            notes.append(
                f"{short} exact: truncation i <= {d['truncation'][0]}, j <= {d['truncation'][1]} "
                f"({d['states']} states), last relative change {d['relative_change']:.1e}, "
                f"edge probability {d['edge_probability']:.1e}"
            )
        else:
            notes.append(
                f"{short} matrix-analytic: {d['phases_per_level']} phases per level, "
                f"busy-period Coxian with {len(d['busy_period_coxian']['alpha'])} phases, "
                f"||A0 + R A1 + R^2 A2|| = {d['R_residual']:.1e}"
            )
        table.add_row(
            short,
            "MA" if r.method == "matrix-analytic" else "exact",
            _fmt(r.mean_response_time),
            _fmt(r.mean_response_time_inelastic),
            _fmt(r.mean_response_time_elastic),
            _fmt(r.mean_number_inelastic),
            _fmt(r.mean_number_elastic),
        )
    print_table(table)
    for note in notes:
        out.print(escape(note), highlight=False, soft_wrap=True)


@analyze_app.command("no-arrivals")
@user_errors
def no_arrivals(
    k: Annotated[int, typer.Option("--k", help="Number of servers k.")] = 2,
    mu_i: Annotated[
        str, typer.Option("--mu-i", help="mu_I (integer, fraction a/b or float).")
    ] = "1",
    mu_e: Annotated[
        str, typer.Option("--mu-e", help="mu_E (integer, fraction a/b or float).")
    ] = "2",
    inelastic: Annotated[int, typer.Option("--inelastic", help="Inelastic jobs at time 0.")] = 2,
    elastic_jobs: Annotated[int, typer.Option("--elastic", help="Elastic jobs at time 0.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Theorem 6: expected response times with no arrivals under IF and EF (exact fractions).

    Defaults are the theorem's instance: k = 2, mu_E = 2 mu_I, two inelastic and one elastic job.
    """
    from schedlab.analysis.elastic import POLICIES, no_arrival_response_time

    rates = [_number(mu_i, "--mu-i"), _number(mu_e, "--mu-e")]
    results = [
        no_arrival_response_time(p, k, rates[0], rates[1], inelastic, elastic_jobs)
        for p in POLICIES
    ]
    if fmt is OutputFormat.csv:
        emit_rows([r.to_dict() for r in results], fmt)
        return
    if as_json or fmt is OutputFormat.json:
        print(json.dumps({"results": [r.to_dict() for r in results]}))
        return
    from rich.table import Table

    from schedlab.policies.registry import get_policy

    table = Table(show_header=True, header_style="bold")
    for col in ("policy", "E[sum of T]", "E[T] per job", "inelastic sum", "elastic sum"):
        table.add_column(escape(col), justify="left" if col == "policy" else "right")
    for r in results:
        table.add_row(
            get_policy(r.policy).about.label,
            _exact(r.total),
            _exact(r.mean),
            _exact(r.total_inelastic),
            _exact(r.total_elastic),
        )
    print_table(table)
    out.print(
        "berg2020's E[T] in Theorem 6 (35/12/mu_I, 33/12/mu_I) is the expected sum of the "
        "response times over the jobs.",
        highlight=False,
    )


def _number(text: str, flag: str):  # -> int | Fraction | float
    from fractions import Fraction

    from schedlab.analysis.elastic import ElasticModelError

    try:
        if "/" in text:
            return Fraction(text.strip())
        value = float(text)
        return int(value) if value.is_integer() and "." not in text and "e" not in text else value
    except (ValueError, ZeroDivisionError):
        raise ElasticModelError(f"{flag}: '{text}' is not a number") from None


def _exact(x) -> str:
    from fractions import Fraction

    if isinstance(x, Fraction):
        return str(x) if x.denominator == 1 else f"{x} = {float(x):.6g}"
    return f"{x:.6g}"


@analyze_app.command("srpt-k")
@user_errors
def srpt_k_command(
    k: Annotated[int, typer.Option("--k", help="Number of processors k.")] = 4,
    jobs: Annotated[int, typer.Option("--jobs", help="Jobs per instance.")] = 20,
    instances: Annotated[int, typer.Option("--instances", help="Random instances.")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    slots: Annotated[int, typer.Option("--slots", help="Time slots of the LP.")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """App. A: SRPT-k on random parallelizable jobs (all at time 0) against LP_primal.

    LP_primal lower-bounds the optimum, so max SRPT-k / LP <= 4 shows Theorem 9's 4-approximation
    holds on these instances (usually with a large margin).
    """
    import numpy as np

    from schedlab.optim.parallel_srpt import approximation_ratios

    samples = approximation_ratios(instances, jobs, k, seed=seed, slots=slots)
    ratios = np.array([s.ratio for s in samples])
    summary = {
        "k": k,
        "jobs": jobs,
        "instances": instances,
        "seed": seed,
        "ratio_max": float(ratios.max()),
        "ratio_mean": float(ratios.mean()),
        "ratio_min": float(ratios.min()),
        "within_4": bool(ratios.max() <= 4.0),
        "samples": [{"srpt_k": s.srpt_k, "lp": s.lp, "ratio": s.ratio} for s in samples],
    }
    if fmt is OutputFormat.csv:
        emit_rows(summary["samples"], fmt)
        return
    if as_json or fmt is OutputFormat.json:
        print(json.dumps(summary))
        return
    out.print(
        f"SRPT-k / LP_primal over {instances} instances of {jobs} jobs on k = {k}: "
        f"max {ratios.max():.4f}, mean {ratios.mean():.4f}, min {ratios.min():.4f} "
        f"({'<=' if ratios.max() <= 4 else '>'} 4: Theorem 9's bound "
        f"{'holds' if ratios.max() <= 4 else 'is VIOLATED'})",
        highlight=False,
    )
