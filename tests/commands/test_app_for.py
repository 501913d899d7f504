"""`schedlab` builds the Click command of the one command a command line names (issue 33 item 1):
that command's help and run are those of the whole app; anything else runs the whole app."""

from __future__ import annotations

import pytest
from typer.main import get_command_name
from typer.testing import CliRunner

from schedlab.cli import app, app_for

NAMES = [c.name or get_command_name(c.callback.__name__) for c in app.registered_commands]
NAMES += [g.name for g in app.registered_groups]


@pytest.mark.parametrize("name", NAMES)
def test_a_command_s_help_is_the_same_from_its_own_app(name):
    single = app_for(["--wide", name, "--help"])
    assert single is not app
    runner = CliRunner()
    alone = runner.invoke(single, [name, "--help"], terminal_width=100)
    whole = runner.invoke(app, [name, "--help"], terminal_width=100)
    assert alone.exit_code == whole.exit_code == 0
    assert alone.output == whole.output


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"], ["no-such-command"]])
def test_a_line_naming_no_command_runs_the_whole_app(argv):
    assert app_for(argv) is app


def test_an_unknown_command_is_refused_in_one_line_by_the_whole_app():
    result = CliRunner().invoke(app_for(["simulat"]), ["simulat"])
    assert result.exit_code == 2 and "No such command" in result.output
