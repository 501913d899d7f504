"""The CLI scripts well (issue 17 item 3): formats, errors with suggestions, no truncation, one
spec convention, the kind of spec recognized, --version, a fast --help."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedlab
from schedlab.cli import app
from schedlab.errors import SpecError
from schedlab.experiments.store import ResultStore
from tests.data import KTH
from tests.helpers.experiment_files import write_experiment

QUICKSTART = resources.files("schedlab") / "examples" / "quickstart.toml"
SWEEP = resources.files("schedlab") / "examples" / "sf-vs-fcfs.toml"
runner = CliRunner()
SRC = str(Path(schedlab.__file__).resolve().parents[1])


def cli(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def shell(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real command, its stdout a pipe (not a terminal)."""
    environ = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "80", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "schedlab.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )


@pytest.fixture(scope="module")
def result_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("sweep")
    out = tmp / "res"
    done = cli("run", write_experiment(tmp), "--out", out, "--workers", "1")
    assert done.exit_code == 0, done.output
    return out


def test_import_of_the_cli_loads_no_heavy_library():
    code = (
        "import sys, schedlab.cli; "
        "print(sorted(m for m in ('numba', 'scipy', 'pyarrow', 'duckdb', 'matplotlib', "
        "'numpy', 'pandas', 'dask') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_version():
    result = cli("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"schedlab {schedlab.__version__}"


def test_results_summary_in_every_format(result_dir):
    as_json = json.loads(cli("results", result_dir, "--format", "json").stdout)
    assert len(as_json) == 4  # 2 variants x 2 loads
    assert {r["variant"] for r in as_json} == {"SF", "FCFS"}
    assert all(r["runs"] == 2 for r in as_json)
    for r in as_json:
        assert r["mean_response_time_lo"] < r["mean_response_time"] < r["mean_response_time_hi"]
    text = cli("results", result_dir, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["variant"] for r in rows] == [r["variant"] for r in as_json]
    assert float(rows[0]["mean_response_time"]) == pytest.approx(as_json[0]["mean_response_time"])
    assert "┃" not in text and "\x1b" not in text


def test_unknown_metric_and_column_are_errors_with_a_suggestion(result_dir):
    bad = cli("results", result_dir, "--metric", "p99")
    assert bad.exit_code == 2
    assert "unknown metric 'p99'" in bad.output
    # p99_response_time and (engine v2) p99_waiting_time both contain 'p99': either is suggested
    assert "did you mean 'p99_" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
    plot = cli("plot", result_dir, "--x", "workload.lod")
    assert plot.exit_code == 2
    assert "did you mean 'workload.load'" in plot.output


def _header_cells(table: str) -> list[str]:
    """The header cells of a rich table, each column's lines joined, spaces removed."""
    rows = [line.split("┃")[1:-1] for line in table.splitlines() if line.startswith("┃")]
    return ["".join(parts).replace(" ", "") for parts in zip(*rows, strict=True)]


def test_piped_tables_are_never_cut(result_dir):
    metrics = ["mean_response_time", "mean_number_in_system", "p99_response_time"]
    args = [a for m in metrics for a in ("--metric", m)]
    done = shell("results", result_dir, *args)
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    headers = _header_cells(done.stdout)  # a long header wraps within its column, whole
    for m in metrics:
        assert f"{m}(95%CI)" in headers
    # the numbers in the piped table are the stored ones, not cut to fit 80 columns
    stored = json.loads(
        cli("results", result_dir, "--metric", metrics[2], "--format", "json").stdout
    )
    assert f"{stored[0][metrics[2]]:.5g}" in done.stdout


def test_query_output_formats(result_dir):
    q = "select variant, count(*) as n from runs group by variant order by variant"
    text = cli("results", result_dir, "--query", q, "--format", "csv").stdout
    assert text.splitlines() == ["variant,n", "FCFS,4", "SF,4"]
    bad = cli("results", result_dir, "--format", "xml")
    assert bad.exit_code == 2


def test_simulate_takes_the_spec_as_argument_or_option(tmp_path):
    positional = cli("simulate", QUICKSTART, "--arrivals", "3000", "--format", "json")
    option = cli("simulate", "--spec", QUICKSTART, "--arrivals", "3000", "--json")
    assert positional.exit_code == 0, positional.output
    a, b = json.loads(positional.stdout), json.loads(option.stdout)
    assert a["metrics"] == b["metrics"]
    rows = list(
        csv.DictReader(
            io.StringIO(cli("simulate", QUICKSTART, "--arrivals", "3000", "--format", "csv").stdout)
        )
    )
    by_name = {r["metric"]: r for r in rows}
    assert float(by_name["mean_response_time"]["mean"]) == pytest.approx(
        a["metrics"]["mean_response_time"]["mean"]
    )
    none = cli("simulate")
    assert none.exit_code == 2
    assert "missing the simulation spec" in none.output


def test_each_kind_of_spec_names_the_command_that_takes_it(tmp_path):
    sweep_to_simulate = cli("simulate", SWEEP)
    assert sweep_to_simulate.exit_code == 2
    assert "experiment spec" in sweep_to_simulate.output
    assert "schedlab run" in sweep_to_simulate.output
    sim_to_run = cli("run", QUICKSTART, "--out", tmp_path / "x")
    assert sim_to_run.exit_code == 2
    assert "simulation spec" in sim_to_run.output
    assert "schedlab simulate" in sim_to_run.output
    with pytest.raises(SpecError, match="schedlab run"):
        schedlab.simulate(SWEEP)
    with pytest.raises(SpecError, match="schedlab simulate"):
        schedlab.sweep(QUICKSTART)


def test_policies_and_reproductions_in_every_format():
    names = [r["name"] for r in json.loads(cli("policies", "--format", "json").stdout)]
    assert "server-filling" in names
    rows = list(csv.DictReader(io.StringIO(cli("policies", "--format", "csv").stdout)))
    assert [r["name"] for r in rows] == names
    listed = json.loads(cli("reproduce", "--list", "--format", "json").stdout)
    assert listed and {"name", "paper", "figure", "title"} <= set(listed[0])


def test_stored_runs_read_back_unchanged(result_dir):
    rows = ResultStore(result_dir).read()
    data = json.loads(
        cli(
            "results", result_dir, "--query", "select spec_hash from runs", "--format", "json"
        ).stdout
    )
    assert sorted(r["spec_hash"] for r in data) == sorted(r["spec_hash"] for r in rows)


def test_analyze_commands_print_csv_and_take_the_spec_positionally():
    rows = list(
        csv.DictReader(io.StringIO(cli("analyze", "no-arrivals", "--format", "csv").stdout))
    )
    # Theorem 6 of paper 003: E[sum of T] = 35/12 under IF, 33/12 = 11/4 under EF (mu_I = 1)
    assert {r["policy"]: r["total_response_time.exact"] for r in rows} == {
        "inelastic-first": "35/12",
        "elastic-first": "11/4",
    }
    positional = cli("analyze", "multiserver", QUICKSTART, "--format", "json")
    option = cli("analyze", "multiserver", "--spec", QUICKSTART, "--json")
    assert positional.exit_code == 0, positional.output
    assert json.loads(positional.stdout) == json.loads(option.stdout)


def test_simulate_runs_replications_on_workers_with_the_serial_numbers():
    args = ["simulate", QUICKSTART, "--arrivals", "4000", "--replications", "3", "--format", "json"]
    serial = json.loads(cli(*args).stdout)
    parallel = cli(*args, "--workers", "2")
    assert parallel.exit_code == 0, parallel.output
    data = json.loads(parallel.stdout)
    assert data["replications"] == 3
    assert data["metrics"] == serial["metrics"]


def test_trace_info_in_every_format_and_raw_traces_by_trace_format(tmp_path):
    """`trace info --format` is the output format; a raw trace's format is --trace-format."""
    swf = KTH
    runner = CliRunner()
    as_csv = runner.invoke(
        app, ["trace", "info", str(swf), "--trace-format", "swf", "--format", "csv"]
    )
    assert as_csv.exit_code == 0, as_csv.output
    fields = dict(csv.reader(io.StringIO(as_csv.stdout)))
    assert fields["field"] == "value" and fields["jobs"] == "300"
    as_json = runner.invoke(app, ["trace", "info", str(swf), "-t", "swf", "--format", "json"])
    assert json.loads(as_json.stdout)["jobs"] == 300
    wrong = runner.invoke(app, ["trace", "info", str(swf), "--format", "swf"])
    assert wrong.exit_code == 2
    assert "--trace-format swf" in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1


def _commands(command, path=()):
    """(path of words, click command) of every leaf command of the CLI (duck-typed: typer may
    bring its own copy of click)."""
    import click

    if hasattr(command, "list_commands"):
        context = click.Context(command)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), (*path, name))
    else:
        yield path, command


def test_every_command_that_takes_a_spec_takes_it_positionally():
    """Specs are positional everywhere (docs/guide.md §8): a command with a ``--spec`` option
    also has a SPEC argument, and the two give the same output."""
    import typer.main

    with_spec = []
    for path, command in _commands(typer.main.get_command(app)):
        options = {o for p in command.params for o in getattr(p, "opts", [])}
        if "--spec" in options:
            arguments = [p for p in command.params if p.param_type_name == "argument"]
            assert arguments, f"schedlab {' '.join(path)} takes its spec only as --spec"
            with_spec.append(path)
    assert {("analyze", "capacity"), ("analyze", "reward"), ("simulate",)} <= set(with_spec)
    examples = resources.files("schedlab") / "examples"
    for path, example in [
        (("analyze", "capacity"), "vm-table1.toml"),
        (("analyze", "reward"), "dra-worst-case.toml"),
        (("analyze", "multiserver"), "quickstart.toml"),
    ]:
        positional = cli(*path, examples / example, "--json")
        option = cli(*path, "--spec", examples / example, "--json")
        assert positional.exit_code == 0, positional.output
        assert json.loads(positional.output) == json.loads(option.output)


@pytest.mark.parametrize(
    "args",
    [
        ["policies"],
        ["reproduce", "--list"],
        ["trace", "formats"],
        ["analyze", "multiserver", QUICKSTART],
        ["simulate", QUICKSTART, "--arrivals", "2000"],
    ],
    ids=lambda a: " ".join(map(str, a[:2])),
)
def test_piped_tables_fit_100_columns(args):
    """Every table fits 100 columns when piped (issue 32 item 7): cells wrap, nothing is cut."""
    done = shell(*args, env={"COLUMNS": ""})
    assert done.returncode == 0, done.stderr
    widths = [len(line) for line in done.stdout.splitlines()]
    assert widths and max(widths) <= 100, max(widths)
    assert "…" not in done.stdout


def test_policies_wide_shows_every_column():
    narrow, wide = shell("policies"), shell("policies", "--wide")
    for column in ("title", "families", "parameters"):
        assert column in wide.stdout and column not in narrow.stdout.split("\n", 3)[1]
    assert "Psychas & Ghaderi 2022 (psychas2022), §4, Algorithm 2" in " ".join(wide.stdout.split())


def test_compare_table_fits_100_columns_and_wide_shows_every_metric(tmp_path):
    """compare's ranked table fits 100 columns when piped: the other metrics' columns are left
    out with a note naming them; ``schedlab --wide compare`` shows them (issue 32 item 7)."""
    args = ["compare", QUICKSTART, "--loads", "0.5", "--policy", "fcfs", "--policy"]
    args += ["server-filling", "--replications", "1", "--arrivals", "2000"]
    narrow = shell(*args, "--out", tmp_path / "a", env={"COLUMNS": ""})
    assert narrow.returncode == 0, narrow.stderr
    table = [line for line in narrow.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 100
    assert "p99 wait" not in narrow.stdout and "…" not in narrow.stdout
    assert "more metric columns (mean_waiting_time" in narrow.stderr
    assert "schedlab --wide compare" in narrow.stderr
    wide = cli("--wide", *args, "--out", tmp_path / "a")  # the stored runs, read back
    assert wide.exit_code == 0, wide.output
    assert "p99 wait" in wide.output and "more metric columns" not in wide.output
