"""Shared helpers: small spec builders for the three model families."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import settings

from schedlab.model.distributions import Exponential, HyperExponential

settings.register_profile("ci", deadline=None, print_blob=True)
settings.load_profile("ci")

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


@pytest.fixture
def tmp_toml(tmp_path):
    def write(text: str, name: str = "spec.toml"):
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def exp(mean: float) -> Exponential:
    return Exponential(dist="exponential", mean=mean)


def hyperexp(mean: float, scv: float) -> HyperExponential:
    return HyperExponential(dist="hyperexponential", mean=mean, scv=scv)


# Block sizes and initial slot counts that must all give the same run (decision 0003).
BLOCKS_AND_SLOTS = ((1 << 16, 1 << 10), (7, 2), (1000, 5))


def same_run_for_any_block(model):
    """Run ``model`` with each of BLOCKS_AND_SLOTS; assert identical metrics and per-job tables
    (every column, demands included) and return the first run's per-job table."""
    import json

    from schedlab.simulation.simulate import run_model

    metrics, tables = [], []
    for block, slots in BLOCKS_AND_SLOTS:
        result = run_model(model, block=block, slots=slots)
        metrics.append(json.dumps(result.to_dict()["metrics"], sort_keys=True))
        tables.append(result.jobs)
    assert len(set(metrics)) == 1
    for other in tables[1:]:
        assert other.column_names == tables[0].column_names
        for column in tables[0].column_names:
            assert tables[0].column(column).equals(other.column(column)), column
    return tables[0]


@pytest.fixture(scope="module")
def registry_restored():
    """Plugins register globally: a module that loads one leaves the registry (and the list of
    loaded plugin files) as it was for the other test modules of its process."""
    from schedlab import plugins
    from schedlab.policies import registry

    registry.all_policies()
    saved, files = dict(registry._REGISTRY), dict(plugins._FILES)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
    plugins._FILES.clear()
    plugins._FILES.update(files)
