"""Human labels for what a person reads: one table from a machine name to its label.

Stored rows, CSVs and SQL keep the machine names (``mean_response_time``, ``workload.load``); every
figure axis, table header and report heading goes through :func:`label`, which uses the papers'
symbols: E[T] for the mean response time (grosof2023 §2), rho for the load, k for the number of
servers, lambda for the arrival rate. Per-class metrics (``mean_response_time[need4]``) take the
label of their base metric with the class appended; policies are labelled by the title they are
registered with (e.g. ``server-filling-srpt`` -> ServerFilling-SRPT).
"""

from __future__ import annotations

import re
from functools import cache

LABELS: dict[str, str] = {
    # metrics (engine/metrics.py)
    "mean_response_time": "mean response time E[T]",
    "mean_waiting_time": "mean waiting time E[T_Q]",
    "p50_response_time": "median response time",
    "p90_response_time": "90th percentile of T",
    "p95_response_time": "95th percentile of T",
    "p99_response_time": "99th percentile of T",
    "mean_number_in_system": "mean number in system E[N]",
    "mean_number_in_queue": "mean number in queue E[N_Q]",
    "utilization": "utilization",
    "reward_rate": "reward rate",
    "throughput": "throughput",
    "loss_probability": "loss probability",
    # axes and run columns (experiments/records.py, spec paths)
    "load": "load ρ",
    "workload.load": "load ρ",
    "arrival_rate": "arrival rate λ",
    "workload.rate": "arrival rate λ",
    "cluster.servers": "servers k",
    "servers": "servers k",
    "policy": "policy",
    "policy.name": "policy",
    "variant": "variant",
    "family": "family",
    "arrivals": "arrivals per run",
    "run.arrivals": "arrivals per run",
    "run.horizon": "horizon",
    "workload.arrivals.path": "trace",
    "run.warmup": "warm-up fraction",
    "run.seed": "seed",
    "seed": "seed",
    "replication": "replication",
    "wall_s": "wall time (s)",
    "events": "events",
}

_CLASS = re.compile(r"^(?P<base>[\w.]+)\[(?P<cls>[^\]]+)\]$")
_RATIO = re.compile(r"^(?P<y>[\w.\[\]]+) / (?P=y)\[(?P<hue>[\w.]+)=(?P<ref>.+)\]$")


def label(name: str) -> str:
    """The human label of a metric, column or spec path (the name itself when unknown)."""
    if name in LABELS:
        return LABELS[name]
    m = _CLASS.match(name)
    if m and m["base"] in LABELS:
        return f"{LABELS[m['base']]}, {m['cls']}"
    m = _RATIO.match(name)
    if m:
        return f"{short(m['y'])} / {short(m['y'])} of {policy_label(m['ref'])}"
    return name


def short(name: str) -> str:
    """The symbol alone where the label has one (``E[T]`` for the mean response time)."""
    text = label(name)
    tail = text.rsplit(" ", 1)[-1]
    return tail if any(c in tail for c in "[ρλ") else text


@cache
def _policy_titles() -> dict[str, str]:
    from schedlab.policies.registry import all_policies

    return {p.name: p.title for p in all_policies()}


def policy_label(name: str) -> str:
    """A registered policy's title (``server-filling-srpt`` -> ServerFilling-SRPT) or the name."""
    return _policy_titles().get(name, name)
