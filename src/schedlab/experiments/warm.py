"""Load the compiled policies of a sweep, and what storing a run loads, before its workers start,
so that every worker starts with them in memory (decision 0009).

Without this, each worker process loads each policy's compiled runner from Numba's disk cache on
its first run of that policy (about a second per policy and process on the 2-core machine, more
than a 10^5-arrival run takes), which is most of the per-run overhead of a sweep of short runs
(benchmarks/bench_scaling.py); the store's table is built without ``pa.array``, which imports
pandas (0.35 s; issue 33 item 2). :func:`warm` runs one tiny spec per policy of the sweep for a few
hundred arrivals, as a worker runs it (the run and its record, as ``runner.execute``), and
builds the record's table as the store does: in the sweep's own process when its workers are
forked from it, or in the fork server, which imports this module at start-up
(:data:`schedlab.experiments.runner.PRELOAD`) and reads the specs from the environment variable
``SCHEDLAB_WARM_SPECS`` (a JSON list) that the parent sets before the server starts. A failure
here only costs time: the real run reports its own errors.
"""

from __future__ import annotations

import json
import os

WARM_ENV = "SCHEDLAB_WARM_SPECS"
WARM_ARRIVALS = 200


def warm_specs(spec_jsons: list[str]) -> str:
    """The environment value: one tiny copy of the first spec of each policy (and plugins)."""
    seen: dict[str, dict] = {}
    for text in spec_jsons:
        data = json.loads(text)
        name = data.get("policy", {}).get("name", "")
        if name in seen:
            continue
        run = {k: v for k, v in data.get("run", {}).items() if k not in ("horizon", "replications")}
        run.update(arrivals=WARM_ARRIVALS, jobs=False)
        seen[name] = {**data, "run": run}
    return json.dumps(list(seen.values()))


def warm(specs: str) -> None:
    """Run each spec of :func:`warm_specs`' value for a few hundred arrivals, build its record and
    the record's table, as a sweep's worker does (``runner.execute``; nothing is stored)."""
    from schedlab.experiments.run_rows import run_row
    from schedlab.experiments.store import record_table
    from schedlab.model.compile import compile_model
    from schedlab.model.spec import parse_spec
    from schedlab.simulation.simulate import run_model

    for data in json.loads(specs):
        try:
            record_table(run_row(run_model(compile_model(parse_spec(data)))))
        except Exception:
            continue


if os.environ.get(WARM_ENV):  # imported by a fork server (runner.PRELOAD): a process of its own
    from schedlab._jit import configure

    configure()
    warm(os.environ[WARM_ENV])
