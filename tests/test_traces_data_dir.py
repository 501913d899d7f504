"""Where shared data lives (schedlab.datasets): --data-dir, else $SCHEDLAB_DATA, else shared/data
beside the git checkout of the current directory; missing data is one line naming the path."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.datasets import ENV, DataMissing, data_dir, data_file, default_data_dir

runner = CliRunner()


def test_default_is_beside_the_git_checkout_of_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    checkout = tmp_path / "clone"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "docs" / "deep").mkdir(parents=True)
    monkeypatch.chdir(checkout / "docs" / "deep")
    assert data_dir() == tmp_path / "shared" / "data"
    assert default_data_dir(tmp_path) == tmp_path.parent / "shared" / "data"  # no checkout


def test_environment_variable_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "mine"))
    assert data_dir() == tmp_path / "mine"
    (tmp_path / "mine" / "swf").mkdir(parents=True)
    (tmp_path / "mine" / "swf" / "x.swf").write_text("1\n")
    assert data_file("swf/x.swf", "x") == tmp_path / "mine" / "swf" / "x.swf"
    with pytest.raises(DataMissing, match=rf"looked for {tmp_path}/mine/swf/y.swf .*--data-dir"):
        data_file("swf/y.swf", "the y log")


def test_no_hard_coded_data_path_in_the_sources():
    """Neither the package nor the benchmarks name a machine's folder or compute the shared
    folder from where their source file lies (an absolute literal such as "/x/shared/data" or
    ``Path(__file__).parents[n] / "shared"``)."""
    import re
    from pathlib import Path

    import schedlab

    package = Path(schedlab.__file__).parent
    benchmarks = package.parents[1] / "benchmarks"
    pattern = re.compile(r"""["']/[^"'\s]*shared/|parents\[\d\][^\n]*["']shared["']""")
    offenders = [
        str(p)
        for folder in (package, benchmarks)
        for p in folder.rglob("*.py")
        if pattern.search(p.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize("name", ["swf-logs", "psychas2019-fig5"])
def test_reproduction_without_its_data_is_one_line(tmp_path, monkeypatch, name):
    monkeypatch.setenv(ENV, str(tmp_path / "unused"))  # restored after the test
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(
        app, ["reproduce", name, "--quick", "--data-dir", str(empty), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    error = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(error) == 1, result.output
    assert f"looked for {empty}/" in error[0]
    assert "--data-dir DIR or SCHEDLAB_DATA=DIR" in error[0]
    assert "Traceback" not in result.output


def test_list_says_which_entries_need_data_and_where_they_look(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    result = runner.invoke(app, ["reproduce", "--list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert f"data folder: {tmp_path} (--data-dir or $SCHEDLAB_DATA" in result.output
    listed = runner.invoke(app, ["reproduce", "--list", "--format", "csv"])  # cells unwrapped
    assert "alibaba/batch_task_v2017.csv.gz (MISSING)" in listed.output
    assert "swf/KTH-SP2-1996-2.1-cln.swf.gz" in listed.output
