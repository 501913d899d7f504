"""The engine's departure order (structures.py): the completion heap, or a scan of the running
jobs when few can run at once. Truth: both must pick the same job at every step, so a run is the
same, per job, in either mode; and the mode is chosen only where few jobs can run."""

from __future__ import annotations

import functools
import json

import pytest

from schedlab.analysis.elastic import ElasticSystem
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.reproduce.berg2020 import simulation_spec
from schedlab.simulation import simulate
from tests.helpers.specs import paper004_spec, pooled_spec


def _run(model, scan: bool, monkeypatch):
    monkeypatch.setattr(simulate, "few_running", lambda model: scan)
    return simulate.run_model(model)


def _with_jobs(spec: dict) -> dict:
    return {**spec, "run": {**spec["run"], "jobs": True}}


def _pooled(policy: str):
    return compile_model(parse_spec(_with_jobs(paper004_spec(0.9, policy, 3000, seed=4))))


def _elastic_model():
    system = ElasticSystem(k=4, lambda_i=1.0, lambda_e=1.2, mu_i=1.0, mu_e=1.0)
    spec = simulation_spec(system, "inelastic-first", 3000, seed=3).model_dump(by_alias=True)
    return compile_model(parse_spec(_with_jobs(spec)))


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(functools.partial(_pooled, p), id=p)
        for p in ("server-filling", "server-filling-srpt", "first-fit-srpt", "max-weight", "fcfs")
    ]
    + [pytest.param(_elastic_model, id="inelastic-first (reallocations)")],
)
def test_scan_and_heap_give_the_same_run(model, monkeypatch):
    """Forcing either mode changes nothing: same metrics, same per-job table, every column. The
    elastic model reallocates running jobs, which moves their completion times."""
    model = model()
    heap = _run(model, False, monkeypatch)
    scan = _run(model, True, monkeypatch)
    assert heap.jobs.num_rows == model.spec.run.arrivals
    if any(c.elastic for c in model.classes):
        assert heap.counters["reallocations"] > 0
    metrics = [json.dumps(r.to_dict()["metrics"], sort_keys=True) for r in (heap, scan)]
    assert metrics[0] == metrics[1]
    assert scan.jobs.column_names == heap.jobs.column_names
    for column in heap.jobs.column_names:
        assert scan.jobs.column(column).equals(heap.jobs.column(column)), column


def test_scan_only_where_few_jobs_can_run():
    """k / smallest need <= 16 rigid pooled jobs: paper 004's k = 8 with needs 1-8 scans; k = 32
    with need-1 jobs, elastic classes and other families keep the heap."""
    fig2 = compile_model(parse_spec(paper004_spec(0.9, "server-filling", 100)))
    assert simulate.few_running(fig2)
    wide = pooled_spec(32, 0.9, policy="fcfs", arrivals=100)
    assert not simulate.few_running(compile_model(parse_spec(wide)))
    assert not simulate.few_running(_elastic_model())
