"""Closed-form queueing results used as independent truth for the simulator.

Erlang B and C are computed with the numerically stable recursions
B(0, a) = 1, B(c, a) = a B(c-1, a) / (c + a B(c-1, a)) and C = c B / (c - a (1 - B)).
"""

from __future__ import annotations

import math


def _check(c: int, offered: float) -> None:
    if c < 1 or int(c) != c:
        raise ValueError(f"the number of servers must be a positive integer, got {c}")
    if not offered > 0 or not math.isfinite(offered):
        raise ValueError(f"the offered load must be a finite positive number, got {offered}")


def erlang_b(c: int, offered: float) -> float:
    """Blocking probability of the M/G/c/c loss system with offered load a = lambda/mu."""
    _check(c, offered)
    b = 1.0
    for n in range(1, int(c) + 1):
        b = offered * b / (n + offered * b)
    return b


def erlang_c(c: int, offered: float) -> float:
    """Probability that an arrival waits in the M/M/c queue (offered load a = lambda/mu < c)."""
    _check(c, offered)
    if offered >= c:
        raise ValueError(f"offered load {offered} >= {c} servers: the M/M/c queue is unstable")
    b = erlang_b(c, offered)
    return c * b / (c - offered * (1.0 - b))


def mmc_mean_response_time(c: int, arrival_rate: float, service_rate: float) -> float:
    """E[T] of the M/M/c FCFS queue: C(c, a) / (c mu - lambda) + 1/mu."""
    offered = arrival_rate / service_rate
    wait = erlang_c(c, offered) / (c * service_rate - arrival_rate)
    return wait + 1.0 / service_rate


def mmc_mean_number_in_system(c: int, arrival_rate: float, service_rate: float) -> float:
    """E[N] of the M/M/c queue, by Little's law."""
    return arrival_rate * mmc_mean_response_time(c, arrival_rate, service_rate)
