"""Small spec builders: a pooled cluster of ``k`` servers, paper 004's Fig. 2 setting (grosof2023:
k = 8, needs uniform on {1, 2, 4, 8}, exponential sizes), and the two size laws by their means."""

from __future__ import annotations

import copy
from typing import Any

from schedlab.model.distributions import Exponential, HyperExponential

PAPER004_CLASSES = [
    {"probability": 0.25, "need": n, "duration": {"dist": "exponential", "mean": 1.0 / n}}
    for n in (1, 2, 4, 8)
]


def pooled_spec(
    k: int,
    load: float,
    *,
    policy: str = "fcfs",
    arrivals: int = 20_000,
    classes: list[dict[str, Any]] | None = None,
    seed: int = 1,
    **run: Any,
) -> dict[str, Any]:
    return {
        "cluster": {"servers": k},
        "workload": {
            "load": load,
            "classes": copy.deepcopy(classes)
            if classes is not None
            else [{"need": 1, "duration": {"dist": "exponential", "mean": 1.0}}],
        },
        "policy": {"name": policy},
        "run": {"arrivals": arrivals, "seed": seed, **run},
    }


def paper004_spec(
    load: float, policy: str, arrivals: int, seed: int = 1, **run: Any
) -> dict[str, Any]:
    return pooled_spec(
        8, load, policy=policy, arrivals=arrivals, classes=PAPER004_CLASSES, seed=seed, **run
    )


def exp(mean: float) -> Exponential:
    return Exponential(dist="exponential", mean=mean)


def hyperexp(mean: float, scv: float) -> HyperExponential:
    return HyperExponential(dist="hyperexponential", mean=mean, scv=scv)
