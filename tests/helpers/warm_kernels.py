"""The suite's warm-up (``pytest --warm-kernels``, what ``make test`` runs): every registered
policy's compiled runner is compiled once, split across the suite's worker count, before the
workers start, into the disk cache the workers and their subprocesses load from.

Without it, a cold cache is filled by the tests themselves: the two xdist workers start on
neighbouring tests, need the same runners at the same moment, and each compiles them (Numba
saves what it compiled but does not wait for another process compiling the same function), and
tests/policies/test_boundscheck.py compiles all 41 runners again with bounds checks in one
process while the other core does the same or waits. Here each slot compiles its share of
``benchmarks/check_reference.py``'s cases (one per policy and family), first as the tests run
them, then with ``NUMBA_BOUNDSCHECK=1`` into ``<cache dir>-boundscheck``
(tests/helpers/boundscheck.py). A slot leaves a stamp in the cache directory naming the cases
it compiled; with the stamp there it does nothing, so a warm cache costs a process start per
slot and build. A case that fails here is only skipped: the tests report it.

Run as a module: ``python -m tests.helpers.warm_kernels SHARD SHARDS`` (in the environment of the
cache to fill)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers.boundscheck import boundscheck_env
from tests.helpers.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
WARM_ARRIVALS = 200  # the compiled code does not depend on the run's length


def warm(slots: int) -> float:
    """Fill the kernel caches with ``slots`` processes at a time; the wall time in seconds."""
    import schedlab

    start = time.perf_counter()
    package_root = str(Path(schedlab.__file__).resolve().parents[1])  # the tests' own schedlab
    path = os.pathsep.join([package_root, str(ROOT), os.environ.get("PYTHONPATH", "")])

    def slot(shard: int) -> None:
        for env in ({**os.environ}, boundscheck_env()):
            command = [sys.executable, "-m", "tests.helpers.warm_kernels", str(shard), str(slots)]
            subprocess.run(command, cwd=ROOT, env={**env, "PYTHONPATH": path}, check=False)

    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(slot, range(slots)))
    return time.perf_counter() - start


def _share(cases: list, shard: int, shards: int) -> list:
    """This slot's cases: the policies sharing a compiled runner (EASY and conservative
    backfilling, DRA and its preemptive variant, one policy in several families) go to one slot,
    so that two slots never compile one runner at the same time; runners are dealt in turn."""
    from schedlab.policies.registry import all_policies

    runners = {p.name: p.kernels.runner.py_func for p in all_policies()}
    runner = {name: f"{f.__module__}.{f.__qualname__}" for name, f in runners.items()}
    order: dict[str, int] = {}
    for policy, *_ in cases:
        order.setdefault(runner[policy], len(order))
    return [case for case in cases if order[runner[case[0]]] % shards == shard]


def _compile_share(shard: int, shards: int) -> None:
    """Run this slot's cases unless its stamp says they were run."""
    from schedlab._jit import kernel_cache_dir

    sys.path.insert(0, str(BENCHMARKS))
    from check_reference import registry_cases, run_case

    cases = _share(registry_cases(), shard, shards)
    names = sorted(f"{policy}/{family}" for policy, family, _, _ in cases)
    stamp = Path(kernel_cache_dir()) / f"suite-warm-{shard}-of-{shards}.json"
    if stamp.exists() and json.loads(stamp.read_text()) == names:
        return
    for policy, _, base, params in cases:
        try:
            run_case(policy, base, params, WARM_ARRIVALS)
        except Exception:  # the tests report it
            continue
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(names))


if __name__ == "__main__":
    _compile_share(int(sys.argv[1]), int(sys.argv[2]))
