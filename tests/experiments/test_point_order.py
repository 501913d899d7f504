"""Points are listed in the order of their axis values (issue 43 item 6): `schedlab run` printed
a swept number as 1, 16, 4 (ordered by its text)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.experiments.stats import point_order
from tests.helpers.experiment_files import BASE


def test_run_lists_a_swept_number_by_value(tmp_path):
    (tmp_path / "base.toml").write_text(BASE.replace("ARRIVALS", "2000"))
    path = tmp_path / "exp.toml"
    path.write_text(
        'name = "order"\nreplications = 1\nbase = "base.toml"\n'
        '[sweep]\n"cluster.servers" = [2, 16, 4]\n'
    )
    res = CliRunner().invoke(
        app,
        ["run", str(path), "--out", str(tmp_path / "res"), "--workers", "1", "--format", "json"],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["cluster.servers"] for r in rows] == [2, 4, 16]


def test_numbers_by_value_before_other_values_by_text():
    keys = [("b", 16), ("a", 4), ("a", 16), ("a", 1.5), ("a", None), ("b", "x")]
    assert sorted(keys, key=point_order) == [
        ("a", 1.5),
        ("a", 4),
        ("a", 16),
        ("a", None),
        ("b", 16),
        ("b", "x"),
    ]
