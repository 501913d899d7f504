"""Every registered policy, in each of its families, runs cleanly with ``NUMBA_BOUNDSCHECK=1``:
an index out of range, negative ones included (the opted-in kernels have no wraparound,
docs/decisions/0010), raises IndexError instead of reading outside an array.

One subprocess runs every case (benchmarks/check_reference.py's, one per policy and family) so
that Numba is imported once; bounds checks change the compiled code, so it compiles into its own
cache directory beside schedlab's (``<cache dir>-boundscheck``, tests/helpers/boundscheck.py),
once per machine and source: ``make test`` compiles it before the tests, split across both cores
(tests/helpers/warm_kernels.py). Under xdist the first worker to need the outcomes runs the
subprocess and leaves them in the session's shared temporary folder; the other reads them there
(xdist deals neighbouring tests to both workers, and both ran the subprocess before: two sweeps
of 41 bounds-checked compiles on a cold cache)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.boundscheck import boundscheck_env
from tests.helpers.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from check_reference import registry_cases  # noqa: E402

sys.path.remove(str(BENCHMARKS))

ARRIVALS = 2000
pytestmark = pytest.mark.slow  # every runner compiled with bounds checks when the cache is cold

CHECKED_RUNS = f"""
import json, sys
sys.path.insert(0, {str(BENCHMARKS)!r})
import numba
from check_reference import registry_cases, run_case
assert numba.config.BOUNDSCHECK
outcome = {{}}
for policy, family, base, params in registry_cases():
    try:
        run_case(policy, base, params, {ARRIVALS})
        outcome[policy + "/" + family] = "ok"
    except Exception as error:
        outcome[policy + "/" + family] = f"{{type(error).__name__}}: {{error}}"
print(json.dumps(outcome))
"""


def checked_runs() -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHECKED_RUNS)],
        env=boundscheck_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str]:
    if "PYTEST_XDIST_WORKER" not in os.environ:  # not under xdist
        return checked_runs()
    shared = tmp_path_factory.getbasetemp().parent / "boundscheck-outcomes.json"  # this session's
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for the first one's sweep
        if not shared.exists():
            shared.write_text(json.dumps(checked_runs()))
    return json.loads(shared.read_text())


@pytest.mark.parametrize(
    ("policy", "family"), [(policy, family) for policy, family, _, _ in registry_cases()]
)
def test_policy_runs_with_bounds_checks(outcomes, policy, family):
    assert outcomes[f"{policy}/{family}"] == "ok"
