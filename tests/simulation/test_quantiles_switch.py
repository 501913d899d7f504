"""``run.quantiles = false`` (decision 0019): the quantile sketches are skipped, nothing else.

The sketches cost three logarithms per measured job (12% of ServerFilling's time per event,
bench: benchmarks/README.md); a run that reads only means (grosof2023's figures, the comparison
with the C reference) may leave them out. Off, the p50_/p90_/p95_/p99_ metrics are absent and every
other metric and counter is the same to the last bit as with them on; on is the default.
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlab
from schedlab.engine import constants as K
from schedlab.model.compile import compile_model
from schedlab.simulation.simulate import as_spec, prepare, run_loop

SPEC = {
    "cluster": {"servers": 4},
    "workload": {
        "load": 0.8,
        "classes": [
            {"probability": 0.5, "need": 1, "duration": {"dist": "exponential", "mean": 1.0}},
            {
                "probability": 0.5,
                "need": 2,
                "duration": {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0},
            },
        ],
    },
    "run": {"arrivals": 4000, "seed": 3},
}
QUANTILE_METRICS = {
    f"p{q}_{name}"
    for q in (50, 90, 95, 99)
    for name in ("response_time", "waiting_time", "bounded_slowdown")
}


@pytest.mark.parametrize("policy", ["server-filling", "fcfs"])
def test_without_quantiles_only_the_quantile_metrics_are_gone(policy):
    on = schedlab.simulate({**SPEC, "policy": {"name": policy}})
    off = schedlab.simulate(
        {**SPEC, "policy": {"name": policy}, "run": {**SPEC["run"], "quantiles": False}}
    )
    assert set(on.metrics) >= QUANTILE_METRICS
    assert set(off.metrics) == set(on.metrics) - QUANTILE_METRICS
    for name, estimate in off.metrics.items():  # bit for bit (NaN as NaN)
        np.testing.assert_array_equal(
            (estimate.mean, *estimate.ci95), (on.metrics[name].mean, *on.metrics[name].ci95), name
        )
    assert off.counters == on.counters and off.events == on.events


def test_the_sketches_stay_empty_without_quantiles():
    spec = as_spec({**SPEC, "policy": {"name": "fcfs"}, "run": {**SPEC["run"], "quantiles": False}})
    run = prepare(compile_model(spec))
    run_loop(run)
    st = run.st
    assert st.ctr[K.N_DONE] > 3000 and st.jacc[:, K.J_DONE].sum() > 3000  # jobs were measured
    assert st.sk_response.sum() == st.sk_waiting.sum() == st.sk_bsld.sum() == 0
