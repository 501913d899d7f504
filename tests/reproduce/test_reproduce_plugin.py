"""Issue 32 item 6: ``schedlab reproduce NAME --plugin FILE`` runs the plugin's policies as extra
series of the reproduction's policy sweeps of a family they run in (the guide's my-first-fit, a
pooled/packing policy, on grosof2023's pooled Fig. 2), labelled as the plugin's; the claims are
those of the built-in policies, and a note says where the plugin was added and where it did not
apply (psychas2022 Fig. 3 sweeps the loss family)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.reproduce import grosof2023 as G
from tests.helpers.docs import ROOT, write_file_blocks

runner = CliRunner()
PLUGIN_SERIES = "My first fit (plugin)"


@pytest.fixture(autouse=True, scope="module")
def _registry(registry_restored):
    """The plugin registers globally: this module leaves the registry as it was."""


@pytest.fixture(scope="module")
def guide_plugin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("guide")
    write_file_blocks(ROOT / "docs" / "writing-policies.md", folder)
    return folder / "my_policies.py"


def reproduce(name: str, out: Path, plugin: Path, monkeypatch, **tiny) -> dict:
    """Run ``name`` --quick at a tiny scale (its figure spec's fields ``tiny``) with the plugin;
    the experiment record it wrote."""
    from schedlab.reproduce import registry
    from schedlab.reproduce.driver import resized

    entry = registry.get_reproduction(name)
    monkeypatch.setitem(registry._REGISTRY, name, resized(entry, **tiny))
    args = ["reproduce", name, "--quick", "--out", str(out), "--workers", "1"]
    result = runner.invoke(app, [*args, "--plugin", str(plugin)])
    assert result.exit_code in (0, 1), result.output  # 1: a claim failed at this tiny scale
    return json.loads((out / "experiment.json").read_text())


def test_the_plugin_is_an_extra_series_and_the_claims_stay_the_built_ins(
    guide_plugin, tmp_path, monkeypatch
):
    record = reproduce(
        "grosof2023-fig2",
        tmp_path,
        guide_plugin,
        monkeypatch,
        loads=(0.5, 0.8),
        limits=G.Limits(G.LIMIT_POLICIES, (0.9,)),
        quick_arrivals=4000,
    )
    with (tmp_path / "grosof2023-fig2.csv").open() as fh:
        series = {row["policy"] for row in csv.DictReader(fh)}
    assert PLUGIN_SERIES in series and "ServerFilling-SRPT" in series
    claims = record["claims"]
    assert len(claims) == 4 and not any("first fit" in c["text"] for c in claims)
    assert not any("My first fit" in c["evidence"] for c in claims)
    note = next(n for n in record["notes"] if n.startswith("--plugin"))
    assert "My first fit (plugin) added as extra series to the pooled policy sweeps" in note
    report = (tmp_path / "report.html").read_text()
    assert PLUGIN_SERIES in report  # a column of the figure's table


def test_a_plugin_whose_family_has_no_sweep_is_said_not_applicable(
    guide_plugin, tmp_path, monkeypatch
):
    record = reproduce(
        "psychas2022-fig3",
        tmp_path,
        guide_plugin,
        monkeypatch,
        quick_sizes=(10,),
        quick_horizon=12.0,
        quick_bound_samples=2,
    )
    note = next(n for n in record["notes"] if n.startswith("--plugin"))
    assert "not applicable here: my-first-fit (pooled/packing)" in note
    with (tmp_path / "psychas2022_fig3.csv").open() as fh:
        assert PLUGIN_SERIES not in {row["series"] for row in csv.DictReader(fh)}
