"""A small experiment file (two loads, ServerFilling against FCFS, on a base spec of two classes)
written into a folder, for the tests of sweeps and of the commands that read their results."""

from __future__ import annotations

from pathlib import Path

BASE = """
[cluster]
servers = 4
[workload]
load = 0.5
[[workload.classes]]
probability = 0.5
need = 1
duration = { dist = "exponential", mean = 1.0 }
[[workload.classes]]
probability = 0.5
need = 2
duration = { dist = "exponential", mean = 0.5 }
[policy]
name = "server-filling"
[run]
arrivals = ARRIVALS
seed = 7
"""


def write_experiment(
    tmp_path: Path, *, loads="[0.3, 0.6]", replications=2, arrivals=4000, extra: str = ""
) -> Path:
    (tmp_path / "base.toml").write_text(BASE.replace("ARRIVALS", str(arrivals)))
    path = tmp_path / "exp.toml"
    path.write_text(f"""
name = "small"
replications = {replications}
base = "base.toml"
[sweep]
"workload.load" = {loads}
[[variants]]
label = "SF"
policy = {{ name = "server-filling" }}
[[variants]]
label = "FCFS"
policy = {{ name = "fcfs" }}
{extra}
""")
    return path
