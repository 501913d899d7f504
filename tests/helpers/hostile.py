"""The hostile plugins of tests/fixtures/plugins/hostile.py and a spec that runs one of them."""

from __future__ import annotations

from tests.helpers.paths import ROOT

HOSTILE = ROOT / "tests" / "fixtures" / "plugins" / "hostile.py"  # e.g. "spin" loops in a kernel
SPEC = """
[cluster]
servers = 4
[workload]
load = 0.7
[[workload.classes]]
need = 1
duration = { dist = "exponential", mean = 1.0 }
[policy]
name = "%s"
%s
[run]
arrivals = %d
"""


def hostile_spec(policy: str, params: str = "", arrivals: int = 3000) -> str:
    """A spec of 4 servers at load 0.7 run by the plugin policy ``policy`` with ``params`` (TOML
    lines of its [policy] table)."""
    return SPEC % (policy, params, arrivals)
