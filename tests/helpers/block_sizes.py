"""The same run for any block size and initial slot count (decision 0003)."""

from __future__ import annotations

import json

from schedlab.simulation.simulate import run_model

# Block sizes and initial slot counts that must all give the same run.
BLOCKS_AND_SLOTS = ((1 << 16, 1 << 10), (7, 2), (1000, 5))


def same_run_for_any_block(model):
    """Run ``model`` with each of BLOCKS_AND_SLOTS; assert identical metrics and per-job tables
    (every column, demands included) and return the first run's per-job table."""
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
