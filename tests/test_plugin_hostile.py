"""Hostile plugins, outside the service (issue 45, item 6): a plugin's kernels are compiled with
bounds checks (schedlab's own without), so an index out of range is one line naming the plugin's
file and line, not a segfault or a bad read run on silently, and ``boundscheck=False`` opts out;
``SystemExit`` at import and a typing error are one line naming the plugin's file:line (exit 2);
Ctrl-C stops ``schedlab simulate`` even while a plugin's compiled decision loops for ever."""

from __future__ import annotations

import functools
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import PolicyError
from schedlab.policies.user_code import call_policy
from tests.helpers.hostile import HOSTILE, hostile_spec
from tests.helpers.paths import ROOT

runner = CliRunner()


@pytest.fixture(autouse=True, scope="module")
def _registry(registry_restored):
    """The plugins register globally: this module leaves the registry as it was."""


def _spec(tmp_path: Path, policy: str, params: str = "") -> Path:
    path = tmp_path / f"{policy}.toml"
    path.write_text(hostile_spec(policy, params))
    return path


def _line_of(marker: str) -> int:
    return next(i for i, t in enumerate(HOSTILE.read_text().splitlines(), 1) if marker in t)


def _schedlab(*args: str, **popen: object) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    argv = [sys.executable, "-m", "schedlab.cli", *args]
    return subprocess.Popen(argv, env=env, text=True, **popen)  # type: ignore[call-overload]


def test_an_index_out_of_range_in_a_plugin_is_one_line_naming_its_file_and_line(tmp_path):
    """Run in a process of its own: without the bounds check the read lands outside the array
    (a segfault, or garbage run on silently)."""
    spec = _spec(tmp_path, "out-of-range")
    done = _schedlab(
        "simulate",
        str(spec),
        "--plugin",
        str(HOSTILE),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        output, _ = done.communicate(timeout=120)
    finally:
        done.kill()
    lines = [x for x in output.strip().splitlines() if x != "deciding"]  # init's own word
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in output, output
    where = f"{HOSTILE}:{_line_of('# OUT OF RANGE')}"
    assert lines[0].startswith(f"error: policy 'out-of-range' ({where}) raised IndexError")


def test_plugin_kernels_are_bounds_checked_unless_they_opt_out_and_built_ins_are_not():
    from schedlab.plugins import load_plugin
    from schedlab.policies.packing import fifo_ff

    load_plugin(HOSTILE)
    module = sys.modules[next(n for n in sys.modules if n.startswith("schedlab_plugin_hostile"))]
    assert module.out_of_range.targetoptions["boundscheck"] is True
    assert module.fcfs.targetoptions["boundscheck"] is True
    assert module.unchecked.targetoptions["boundscheck"] is False  # the opt-out
    assert not fifo_ff.run.targetoptions.get("boundscheck")


def test_system_exit_at_import_is_one_line_naming_the_plugins_line_exit_2(tmp_path):
    plugin = tmp_path / "leaves.py"
    plugin.write_text('import sys\n\nsys.exit("this plugin wants out")\n')
    spec = _spec(tmp_path, "fcfs")
    result = runner.invoke(app, ["simulate", str(spec), "--plugin", str(plugin)])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {plugin}:3: SystemExit: this plugin wants out"


def test_a_typing_error_at_an_attribute_names_the_plugins_line(tmp_path):
    """A typing error that is no call (an unknown attribute) was named by the file alone."""
    source = HOSTILE.read_text().replace(
        "        nxt = st.q_next[j]\n", "        nxt = st.q_next[j] + st.no_such_field\n"
    )
    plugin = tmp_path / "typo_attribute.py"
    for name in ("spin", "out-of-range", "unchecked"):
        source = source.replace(f'("{name}", run_', f'("typo-{name}", run_')
    plugin.write_text(source)
    line = next(i for i, t in enumerate(source.splitlines(), 1) if "no_such_field" in t)
    spec = _spec(tmp_path, "typo-spin")
    result = runner.invoke(app, ["simulate", str(spec), "--plugin", str(plugin)])
    assert result.exit_code == 2, result.output
    assert f"policy 'typo-spin' ({plugin}:{line}) raised TypingError: Unknown attribute" in (
        result.output
    )


def test_a_place_inside_python_itself_is_never_the_plugins(tmp_path):
    """A plugin's init reading a cached property whose function raises in C code: the innermost
    frame is functools.py's, which used to be reported as the plugin's place."""
    plugin = tmp_path / "cached.py"
    plugin.write_text(
        "import functools\n\n\nclass Broken:\n    value = functools.cached_property(int)\n\n\n"
        "def init(st, context, config):\n    return Broken().value\n"
    )
    loaded = importlib.util.spec_from_file_location("user_cached_plugin", plugin)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    with pytest.raises(PolicyError) as raised:
        call_policy("cached", module.init, None, None, None)
    assert f"({plugin}:9) raised TypeError" in str(raised.value)
    assert functools.__file__ not in str(raised.value)


def test_ctrl_c_stops_simulate_while_a_plugins_compiled_decision_loops(tmp_path):
    """The plugin's kernels are compiled first (a run that does not loop, cached on disk), so
    the looping run is in compiled code within a second of saying "deciding"."""
    warm = _schedlab(
        "simulate",
        str(_spec(tmp_path, "spin")),
        "--plugin",
        str(HOSTILE),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert warm.wait(timeout=300) == 0, warm.stderr.read()
    looping = _schedlab(
        "simulate",
        str(_spec(tmp_path, "spin", "spin = 1")),
        "--plugin",
        str(HOSTILE),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert looping.stderr.readline() == "deciding\n"
        time.sleep(3)  # the cached runner loaded, the decision looping
        assert looping.poll() is None
        looping.send_signal(signal.SIGINT)
        code = looping.wait(timeout=20)
    finally:
        looping.kill()
        looping.wait()
    assert code == -signal.SIGINT
