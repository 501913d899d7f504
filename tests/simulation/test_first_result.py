"""A first result imports only what the run needs (issue 33 item 1): simulating the quickstart
loads neither the statistics, optimisation, integration and special-function parts of SciPy, nor
pyarrow (the time series table is built when read), pandas, DuckDB, matplotlib or Dask, nor the
modules of other policies. (The time itself is measured by
benchmarks/bench_first_result.py, not asserted.)"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers.paths import ROOT

PROGRAM = """
import json, sys
import schedlab
schedlab.configure()  # the entry points' process tuning (decision 0020), as the CLI applies it
spec = schedlab.load_spec(sys.argv[1])
run = spec.run.model_copy(update={"arrivals": 500})
schedlab.simulate(spec.model_copy(update={"run": run}))
print(json.dumps(sorted(sys.modules)))
"""
NOT_NEEDED = (
    "scipy.linalg",  # Numba's BLAS check imports scipy.linalg.cython_blas: loaded alone (_jit.py)
    "scipy.stats",
    "scipy.optimize",
    "scipy.integrate",
    "scipy.sparse",
    "scipy.special",  # the intervals' t quantiles: a table (measurement/metrics.py T975)
    "pyarrow",
    "pandas",
    "duckdb",
    "matplotlib",
    "dask",
    "distributed",
    "schedlab.policies.loss.dra",
    "schedlab.policies.packing.vqs",
    "schedlab.policies.pooled.max_weight",
)


def test_simulating_the_quickstart_imports_only_what_the_run_needs():
    quickstart = ROOT / "src" / "schedlab" / "examples" / "quickstart.toml"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(quickstart)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    loaded = sorted(m for m in NOT_NEEDED if m in modules)
    assert not loaded, f"imported without need: {loaded}"


BLAS_PROGRAM = """
import sys
import numpy as np
from schedlab._jit import configure, kernel
configure()

@kernel(cache=False)
def dot(a, b):
    return np.dot(a, b)

print(dot(np.arange(3.0), np.arange(1.0, 4.0)), "scipy.linalg" in sys.modules)
import scipy.linalg.cython_blas
print(scipy.linalg.cython_blas is sys.modules["scipy.linalg.cython_blas"])
print(scipy.linalg.solve(np.eye(2) * 2.0, np.ones(2)).tolist() == [0.5, 0.5])
"""


def test_blas_works_in_compiled_code_without_importing_scipy_linalg(tmp_path):
    """Numba's BLAS module is loaded without its package (schedlab._jit): ``np.dot`` in compiled
    code still calls BLAS and gives 0*1 + 1*2 + 2*3 = 8; a later import of scipy.linalg works and
    has the same module as its ``cython_blas``."""
    script = tmp_path / "blas_dot.py"
    script.write_text(BLAS_PROGRAM)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["8.0", "False", "True", "True"]
