"""Issue 32 item 6: a Numba typing error in a plugin's kernel is one line naming the plugin's file
and line (the innermost place of the user's code in Numba's message) and the reason; with
``schedlab --debug`` the full traceback comes first."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from tests.helpers.docs import ROOT, write_file_blocks

runner = CliRunner()
BAD_CALL = 's = first_fit(st, j, "one")'


@pytest.fixture(autouse=True, scope="module")
def _registry(registry_restored):
    """The plugin registers globally: this module leaves the registry as it was."""


@pytest.fixture(scope="module")
def bad_plugin(tmp_path_factory) -> tuple[Path, int]:
    """The guide's my_policies.py under another name, calling first_fit with a string: the
    plugin file and the line of that call."""
    folder = tmp_path_factory.mktemp("typing")
    write_file_blocks(ROOT / "docs" / "writing-policies.md", folder)
    source = (folder / "my_policies.py").read_text()
    source = source.replace("s = first_fit(st, j, 1.0)", BAD_CALL)
    source = source.replace("my-first-fit", "typo-first-fit").replace("my_first_fit", "typo_ff")
    plugin = folder / "typo_policy.py"
    plugin.write_text(source)
    spec = folder / "spec.toml"
    spec.write_text(
        (folder / "spec.toml").read_text().replace('"my-first-fit"', '"typo-first-fit"')
    )
    line = next(i for i, text in enumerate(source.splitlines(), 1) if BAD_CALL in text)
    return plugin, line


def test_a_typing_error_is_one_line_at_the_plugins_line(bad_plugin):
    plugin, line = bad_plugin
    args = ["simulate", str(plugin.parent / "spec.toml"), "--plugin", str(plugin)]
    result = runner.invoke(app, [*args, "--arrivals", "500"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert f"policy 'typo-first-fit' ({plugin}:{line}) raised TypingError: " in lines[0]
    assert "No implementation of function" in lines[0]  # the reason, not Numba's header
    debug = runner.invoke(app, ["--debug", *args, "--arrivals", "500"])
    assert debug.exit_code == 2
    assert "Traceback (most recent call last)" in debug.output
    assert debug.output.strip().splitlines()[-1] == lines[0]
