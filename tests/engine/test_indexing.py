"""schedlab's compiled functions index arrays without negative-index wraparound
(engine/indexing.py, docs/decisions/0008); everything else keeps Python's semantics."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba.np import arrayobj

import schedlab.engine  # noqa: F401  (installs the indexing change)
from schedlab.engine.indexing import install


def _probe(module: str, body: str):
    """A function compiled as if defined in ``module``: ``probe(a, i)`` returning ``body``."""
    namespace = {"__name__": module}
    exec(f"def probe(a, i):\n    return {body}\n", namespace)
    return numba.njit(namespace["probe"])


def _wraps(module: str) -> bool:
    """The compiled a[i] tests i < 0 (Python's wraparound)."""
    probe = _probe(module, "a[i]")
    probe(np.arange(3.0), 1)
    return "icmp slt i64 %arg.i, 0" in probe.inspect_llvm(probe.signatures[0])


def test_installed_once_on_import():
    assert getattr(arrayobj.fix_integer_index, "schedlab", False)
    assert install()  # idempotent: not wrapped twice
    assert getattr(arrayobj.fix_integer_index, "schedlab", False)


@pytest.mark.skipif(bool(numba.config.BOUNDSCHECK), reason="bounds checks also test i < 0")
def test_only_schedlab_functions_drop_the_wraparound():
    assert not _wraps("schedlab.engine.probe")
    assert _wraps("elsewhere.policy")  # a user's plugin: Python semantics
    assert _wraps("schedlabx.policy")  # a package whose name merely starts alike


def test_constant_negative_index_keeps_python_semantics():
    last = _probe("schedlab.engine.probe", "a[-1] + a[i]")
    assert last(np.array([1.0, 2.0, 4.0]), 0) == 5.0
    table = np.arange(6.0).reshape(2, 3)  # a -1 inside a tuple of indices (DRA's tables[0, -1])
    in_tuple = _probe("schedlab.engine.probe", "a[0, -1] + 10 * a[i, -1] + 100 * a[-1, i]")
    assert in_tuple(table, 1) == 2.0 + 10 * 5.0 + 100 * 4.0


CHECKED_RUN = """
from schedlab.model.compile import compile_model
from schedlab.reproduce.grosof2023 import spec
from schedlab.simulation.simulate import run_model
for policy in ("server-filling-srpt", "max-weight"):
    run_model(compile_model(spec(policy, 0.9, 3000, "exponential")))
print("ok")
"""


def test_pooled_runs_never_index_negative(tmp_path):
    """With NUMBA_BOUNDSCHECK=1 a negative index raises IndexError (the wraparound is gone):
    two pooled runners, compiled afresh, run cleanly. The whole test suite passed this way when
    the change was made (decision 0008)."""
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHECKED_RUN)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")
