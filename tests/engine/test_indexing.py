"""Negative indices in schedlab's compiled code (schedlab._jit.kernel, docs/decisions/0010): only
functions declared with ``kernel(wraparound=False)`` index without wraparound; every other
function, in schedlab or not, keeps Python's ``a[-1]``, whatever was imported first and whichever
process filled the on-disk cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba.np import arrayobj

from schedlab._jit import _indexing_without_wraparound, kernel

# Python's wraparound of a run-time index: Numba compares it with 0 (``i < 0 ? i + n : i``).
WRAPS = re.compile(r"icmp slt i\d+ %(arg\.i|\.\d+), 0")
NO_BOUNDSCHECK = pytest.mark.skipif(
    bool(numba.config.BOUNDSCHECK), reason="bounds checks also test i < 0"
)


def _define(module: str, qualname: str, body: str):
    """A plain function ``(a, i) -> body`` defined as if in ``module`` under ``qualname``."""
    namespace = {"__name__": module}
    exec(f"def probe(a, i):\n    return {body}\n", namespace)
    func = namespace["probe"]
    func.__qualname__ = qualname
    return func


def _wraps(dispatcher, *args) -> bool:
    dispatcher(*args)
    return bool(WRAPS.search(dispatcher.inspect_llvm(dispatcher.signatures[-1])))


def _compiled(module: str, qualname: str, body: str = "a[i]", **options):
    """Without bounds checks (a plugin's are on by default): they also test ``i < 0``."""
    return kernel(_define(module, qualname, body), cache=False, boundscheck=False, **options)


@NO_BOUNDSCHECK
def test_only_opted_in_functions_drop_the_wraparound():
    a = np.arange(3.0)
    assert not _wraps(_compiled("elsewhere.plugin", "fast", wraparound=False), a, 1)
    assert _wraps(_compiled("schedlab.optim.probe", "plain"), a, 1)  # schedlab, not opted in
    assert _wraps(_compiled("schedlab.engine.probe", "plain"), a, 1)
    # the name identifies the function exactly: not its enclosing function, not a longer name
    assert not _wraps(_compiled("m", "outer.<locals>.inner", wraparound=False), a, 1)
    assert _wraps(_compiled("m", "outer"), a, 1)
    assert _wraps(_compiled("m", "outer.<locals>.inner2"), a, 1)


@NO_BOUNDSCHECK
def test_every_specialisation_of_an_opted_in_function_drops_it():
    fast = _compiled("schedlab.engine.probe", "specialised", wraparound=False)
    for a, i in [(np.arange(3.0), 1), (np.arange(3, dtype=np.int32), np.int32(1))]:
        assert not _wraps(fast, a, i)
    assert len(fast.signatures) == 2


def test_constant_negative_index_keeps_python_semantics():
    last = _compiled("schedlab.engine.probe", "last", "a[-1] + a[i]", wraparound=False)
    assert last(np.array([1.0, 2.0, 4.0]), 0) == 5.0
    table = np.arange(6.0).reshape(2, 3)  # a -1 inside a tuple of indices (DRA's tables[0, -1])
    body = "a[0, -1] + 10 * a[i, -1] + 100 * a[-1, i]"
    in_tuple = _compiled("schedlab.engine.probe", "in_tuple", body, wraparound=False)
    assert in_tuple(table, 1) == 2.0 + 10 * 5.0 + 100 * 4.0


def test_the_hook_is_in_place_only_while_an_opted_in_kernel_compiles():
    """Decision 0020: Numba's ``fix_integer_index`` is wrapped once while an opted-in kernel
    compiles (nested compiles included), and Numba's own is back after, also when the compile
    fails."""
    numbas = arrayobj.fix_integer_index
    assert not getattr(numbas, "schedlab", False)
    with _indexing_without_wraparound():
        hook = arrayobj.fix_integer_index
        with _indexing_without_wraparound():
            assert arrayobj.fix_integer_index is hook  # a nested compile: the same hook
        assert arrayobj.fix_integer_index is hook and hook.schedlab
    assert arrayobj.fix_integer_index is numbas
    broken = _compiled("schedlab.engine.probe", "broken", "a[i] + undefined_name", wraparound=False)
    with pytest.raises(numba.core.errors.TypingError):
        broken(np.arange(3.0), 1)
    assert arrayobj.fix_integer_index is numbas
    assert _compiled("schedlab.engine.probe", "scoped", wraparound=False)(np.arange(3.0), 1) == 1
    assert arrayobj.fix_integer_index is numbas


PROBE_MODULE = """
from schedlab._jit import kernel


@kernel
def plain(a, i):
    return a[i]


@kernel(wraparound=False)
def fast(a, i):
    return a[i]
"""

# argv: probe file, order ("engine-first" or "engine-never"). Prints what the probe saw as JSON.
PROBE_RUN = """
import importlib.util, json, re, sys
import numpy as np
if sys.argv[2] == "engine-first":
    import schedlab.engine.loop  # the engine's opted-in kernels are declared before the probe
spec = importlib.util.spec_from_file_location("schedlab.optim.probe", sys.argv[1])
probe = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = probe
spec.loader.exec_module(probe)
a = np.array([1.0, 2.0, 4.0])
out = {"last": probe.plain(a, -1), "second": probe.fast(a, 1)}
kernels = {"plain": probe.plain, "fast": probe.fast}
out["cached"] = sum(sum(k.stats.cache_hits.values()) for k in kernels.values())
if not out["cached"]:
    wraps = re.compile(r"icmp slt i64 %arg[.]i, 0")
    ir = {f: k.inspect_llvm(k.signatures[0]) for f, k in kernels.items()}
    out["wraps"] = {f: bool(wraps.search(text)) for f, text in ir.items()}
print(json.dumps(out))
"""


def _probe(tmp_path, cache: str, order: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / cache)}
    env.pop("NUMBA_BOUNDSCHECK", None)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROBE_RUN), str(tmp_path / "probe.py"), order],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "orders", [("engine-first", "engine-never"), ("engine-never", "engine-first")]
)
def test_import_order_and_cache_keep_python_semantics(tmp_path, orders):
    """The issue's probe: a schedlab.optim function reads a[-1] as the last element whether the
    engine was imported first or never, compiled afresh or loaded from a cache another import
    order filled; the opted-in function is compiled without the ``i < 0`` test."""
    (tmp_path / "probe.py").write_text(PROBE_MODULE)
    fresh, cached = (_probe(tmp_path, "cache", order) for order in orders)
    assert fresh["cached"] == 0 and fresh["wraps"] == {"plain": True, "fast": False}
    assert cached["cached"] == 2
    for seen in (fresh, cached):
        assert seen["last"] == 4.0 and seen["second"] == 2.0
