"""The cluster spec of the Slurm adapter's tests (tests/slurm): k whole nodes, one class
("batch", the partition's jobs) and a policy."""

SPEC = """
[cluster]
servers = {k}
[workload]
load = 0.5
[[workload.classes]]
name = "batch"
probability = 1.0
need = 1
duration = {{ dist = "exponential", mean = 1.0 }}
[policy]
name = "{policy}"
[run]
arrivals = 10
"""


def spec_text(k: int, policy: str = "fcfs") -> str:
    """The spec's TOML for ``k`` nodes and ``policy``."""
    return SPEC.format(k=k, policy=policy)
