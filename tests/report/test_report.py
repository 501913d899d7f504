"""Reports that follow the experiment: a reproduction's page shows its figure and claims, and no
table pools runs across a swept axis (checked in headless Chromium where it is installed)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.report.figures import Point, line_plot, policy_colors
from schedlab.report.labels import label
from schedlab.report.sweep import swept_axes
from tests.helpers import paths
from tests.helpers.chromium import chromium_flags

runner = CliRunner()


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM after Chromium loaded it and ran its script."""
    return subprocess.run(
        [*chromium_flags(profile), "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout


@pytest.fixture(scope="module")
def tiny_fig2(tmp_path_factory) -> Path:
    """`schedlab reproduce grosof2023-fig2 --quick` at a tiny scale: two loads, 4,000 arrivals,
    and the stability-limit grid cut to one load."""
    from schedlab.reproduce import grosof2023, registry
    from schedlab.reproduce.driver import resized

    fig2 = registry.get_reproduction("grosof2023-fig2")
    tiny = resized(
        fig2,
        loads=(0.5, 0.8),
        limits=grosof2023.Limits(grosof2023.LIMIT_POLICIES, (0.9,)),
        quick_arrivals=4000,
    )
    patch = pytest.MonkeyPatch()
    patch.setitem(registry._REGISTRY, fig2.name, tiny)
    out = tmp_path_factory.mktemp("fig2")
    try:
        result = runner.invoke(
            app, ["reproduce", "grosof2023-fig2", "--quick", "--out", str(out), "--workers", "1"]
        )
    finally:
        patch.undo()
    assert result.exit_code in (0, 1), result.output  # 1: a claim failed at this tiny scale
    assert re.search(r"(PASS|FAIL|NOT RESOLVED) ServerFilling-SRPT has the least", result.output)
    return out


def test_reproduction_stores_axes_claims_and_figures(tiny_fig2):
    record = json.loads((tiny_fig2 / "experiment.json").read_text())
    assert record["name"] == "grosof2023-fig2" and record["kind"] == "reproduction"
    assert record["axes"] == ["policy", "load"]
    assert len(record["claims"]) == 4 and all(c["evidence"] for c in record["claims"])
    assert record["figures"] == ["grosof2023-fig2.png"]  # relative, never an absolute path
    assert record["provenance"]["code_hash"] and record["provenance"]["wall_s"] > 0
    assert not any(str(tiny_fig2) in note for note in record["notes"])
    assert (tiny_fig2 / "report.html").is_file()  # written by reproduce, as compare does


def test_reproduction_report_shows_figure_and_claims_and_never_pools(tiny_fig2, tmp_path):
    result = runner.invoke(app, ["report", str(tiny_fig2)])
    assert result.exit_code == 0, result.output
    page = tiny_fig2 / "report.html"
    text = page.read_text()
    assert "<title>grosof2023-fig2" in text and str(tiny_fig2) not in text.split("<body>")[1][:400]
    record = json.loads((tiny_fig2 / "experiment.json").read_text())
    for claim in record["claims"]:
        assert html.escape(claim["text"]) in text
    # figures come first, then tables, then claims, then provenance
    order = [text.index(f'id="{s}"') for s in ("figures", "tables", "claims", "provenance")]
    assert order == sorted(order)
    dom = rendered_dom(page, tmp_path / "chrome")
    assert 'data-images-ok="yes"' in dom
    assert re.search(r'<img alt="grosof2023-fig2" src="data:image/png;base64,', dom)
    assert len(re.findall(r'class="(pass|fail)"', dom)) == 4
    cells = re.findall(r'data-runs="(\d+)" data-specs="(\d+)"', dom)
    assert cells and all(specs == "1" for _, specs in cells)  # each cell: one spec, no pooling
    header = re.search(r"<tr><th class=\"key\">([^<]+)</th>", dom)
    assert header and header.group(1) == label("load")  # one row per load
    shot = tmp_path / "page.png"
    subprocess.run(
        [
            *chromium_flags(tmp_path / "chrome2"),
            "--window-size=1200,1600",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    import matplotlib.image

    assert matplotlib.image.imread(shot).std() > 0.05  # a rendered page, not a blank one


def test_quick_run_says_quick_variant_in_every_title(tiny_fig2, tmp_path):
    """issue 31 item 6: a --quick reproduction's record title, report header and figure titles
    say "quick variant" (figures: every figure saved inside variant_titles)."""
    import matplotlib.pyplot as plt

    from schedlab.report.figures import save_figure, variant_titles

    record = json.loads((tiny_fig2 / "experiment.json").read_text())
    assert record["title"].endswith("(quick variant)")
    result = runner.invoke(app, ["report", str(tiny_fig2)])
    assert result.exit_code == 0, result.output
    assert "<h1>grosof2023-fig2 (quick variant)</h1>" in (tiny_fig2 / "report.html").read_text()
    fig, (a, b) = plt.subplots(1, 2)
    a.set_title("left")
    with variant_titles("quick variant"):
        save_figure(fig, tmp_path / "two")
    assert a.get_title() == "left [quick variant]" and b.get_title() == ""
    fig = plt.figure()
    fig.suptitle("panels")
    fig.add_subplot().set_title("panel 1")
    with variant_titles("quick variant"):
        save_figure(fig, tmp_path / "sup")
    assert fig._suptitle.get_text() == "panels [quick variant]"
    assert fig.axes[0].get_title() == "panel 1"  # the suptitle says it once
    fig, ax = plt.subplots()
    ax.set_title("paper scale")
    save_figure(fig, tmp_path / "paper")
    assert ax.get_title() == "paper scale"


def test_index_links_several_result_directories(tiny_fig2, tmp_path):
    other = tmp_path / "copy"
    shutil.copytree(tiny_fig2, other)
    index = tmp_path / "index.html"
    result = runner.invoke(
        app, ["report", str(tiny_fig2), str(other), "--index", "--out", str(index)]
    )
    assert result.exit_code == 0, result.output
    text = index.read_text()
    links = re.findall(r'<a href="([^"]+)">', text)
    assert len(links) == 2 and all((tmp_path / link).resolve().exists() for link in links)
    assert text.count("4 of 4 pass") + text.count(" pass<") >= 1


def _rows(spec_loads: list[tuple[str, float]]) -> list[dict]:
    rows = []
    for policy, load in spec_loads:
        spec = {"policy": {"name": policy}, "workload": {"load": load}, "run": {"seed": 1}}
        rows.append({"policy": policy, "load": load, "axes": "[]", "spec_json": json.dumps(spec)})
    return rows


def test_swept_axes_come_from_the_specs_and_drop_determined_columns():
    rows = _rows([("a", 0.5), ("b", 0.5), ("a", 0.8), ("b", 0.8)])
    assert swept_axes(rows) == ["policy", "load"]
    # a declared variant determines the policy: the policy column adds nothing
    for r in rows:
        r["variant"] = r["policy"].upper()
        r["axes"] = '["variant", "workload.load"]'
        r["workload.load"] = r["load"]
    assert swept_axes(rows) == ["variant", "workload.load"]
    # runs at one load only: the load is no axis
    assert swept_axes(_rows([("a", 0.5), ("b", 0.5)])) == ["policy"]


def test_policy_colours_are_fixed_by_the_experiments_set():
    everyone = ["max-weight", "fcfs", "server-filling"]
    colors = policy_colors(everyone)
    assert colors == policy_colors(reversed(everyone))
    assert len(set(colors.values())) == 3


def test_unstable_and_analytic_series_are_drawn_apart(tmp_path):
    points = [
        Point("a", 0.5, 2.0, 1.8, 2.2),
        Point("a", 0.9, float("nan"), float("nan"), float("nan"), stable=False),
        Point("b", 0.5, 3.0, 2.5, 3.5, reliable=False),
        Point("b", 0.9, float("nan"), float("nan"), float("nan"), stable=False),
        Point("bound", 0.5, 1.0, 1.0, 1.0, analytic=True),
        Point("bound", 0.9, 1.5, 1.5, 1.5, analytic=True),
    ]
    png, svg, csv = line_plot(
        points, tmp_path / "f", x="load", y="mean_response_time", hue="policy", title="t"
    )
    assert png.exists() and svg.exists()
    assert csv.read_text().splitlines()[0] == (
        "policy,load,mean_response_time,mean_response_time_ci95_lo,mean_response_time_ci95_hi,"
        "stable,reliable,analytic"
    )
    text = svg.read_text()  # labels with their units; rho is math text, drawn apart
    assert "mean response time E[T] (time units)" in text and "load" in text


def test_report_and_experiments_never_import_the_cli_layers():
    """Layers import downward only: commands import report/, never the reverse (issue 11)."""
    import ast

    src = paths.SRC / "schedlab"
    upward = ("schedlab.commands", "schedlab.cli", "schedlab.reproduce")
    offenders = []
    for path in [*(src / "report").glob("*.py"), *(src / "experiments").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.startswith(upward)]
    assert not offenders


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fcfs", "server-filling", "max-weight"]),
            st.sampled_from([0.5, 0.7, 0.9]),
            st.sampled_from([1000, 5000]),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=30,
        unique=True,
    )
)
def test_tables_never_pool_runs_of_different_specs(runs):
    """Whatever varies between the runs (policy, load, run length), each table cell holds the
    replications of exactly one spec, and every spec has its cell."""
    from schedlab.report.sweep import hue_of, with_spec_columns
    from schedlab.report.tables import wide_table

    rows = []
    for policy, load, arrivals, rep in runs:
        spec = {
            "policy": {"name": policy},
            "workload": {"load": load},
            "run": {"arrivals": arrivals},
        }
        rows.append(
            {
                "policy": policy,
                "load": load,
                "axes": "[]",
                "replication": rep,
                "stable": True,
                "mean_response_time": 1.0 + load,
                "mean_response_time_lo": 0.5,
                "mean_response_time_hi": 2.5,
                "spec_json": json.dumps(spec, sort_keys=True),
            }
        )
    rows = with_spec_columns(rows)
    axes = swept_axes(rows)
    table = wide_table(rows, axes, hue_of(axes), "mean_response_time")
    cells = [c for _, row in table.rows for c in row.values()]
    assert all(c.specs == 1 for c in cells)
    assert len(cells) == len({r["spec_json"] for r in rows})
    assert sum(c.runs for c in cells) == len(rows)


def test_a_zero_mean_stays_visible_on_a_log_axis(tmp_path, monkeypatch):
    """An empty queue (mean 0) is drawn on a symmetric log axis, not silently dropped."""
    import schedlab.report.figures as figures

    closed = []
    real_close = figures.plt.close
    monkeypatch.setattr(figures.plt, "close", lambda fig=None: closed.append(fig))
    points = [Point("a", 1.0, 2.0e4, 1.9e4, 2.1e4), Point("a", 2.0, 0.0, 0.0, 0.0)]
    points += [Point("b", 1.0, 50.0, 40.0, 60.0), Point("b", 2.0, 40.0, 30.0, 50.0)]
    line_plot(
        points, tmp_path / "z", x="load", y="mean_number_in_queue", hue="p", title="t", logy=True
    )
    [fig] = [f for f in closed if f is not None]
    ax = fig.axes[0]
    assert ax.get_yscale() == "symlog"
    drawn = [y for line in ax.get_lines() for y in line.get_ydata()]
    assert 0.0 in drawn and 2.0e4 in drawn
    real_close(fig)
    line_plot(
        points[2:],
        tmp_path / "p",
        x="load",
        y="mean_number_in_queue",
        hue="p",
        title="t",
        logy=True,
    )
    assert closed[-1].axes[0].get_yscale() == "log"  # all positive: a plain log axis
    real_close(closed[-1])
