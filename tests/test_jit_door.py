"""schedlab._jit is the one door to Numba (docs/decisions/0010): every compiled function of
schedlab is declared with ``kernel``, and no other module imports a private Numba name."""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import schedlab

PACKAGE = Path(schedlab.__file__).resolve().parent
DOOR = PACKAGE / "_jit.py"
# What Numba documents as its API; anything else (numba.np.*, numba.core.cgutils, ...) is private.
PUBLIC_MODULES = {
    "numba",
    "numba.extending",
    "numba.core.extending",
    "numba.types",
    "numba.core.types",
    "numba.core.errors",
    "numba.core.config",
    "numba.experimental.structref",
    "numba.typed",
}


@functools.cache
def _modules() -> list[tuple[Path, ast.Module]]:
    paths = [p for p in sorted(PACKAGE.rglob("*.py")) if p != DOOR]
    return [(p.relative_to(PACKAGE), ast.parse(p.read_text())) for p in paths]


def _private_uses(tree: ast.Module) -> list[str]:
    found, numba_names = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numba":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                public = submodule in PUBLIC_MODULES or (
                    node.module in PUBLIC_MODULES and not alias.name.startswith("_")
                )
                if not public:
                    found.append(f"from {node.module} import {alias.name}")
                numba_names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "numba":
                    if alias.name not in PUBLIC_MODULES:
                        found.append(f"import {alias.name}")
                    numba_names.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in numba_names
            and node.attr.startswith("_")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_private_numba_names_only_in_the_door():
    private = {str(path): uses for path, tree in _modules() if (uses := _private_uses(tree))}
    assert not private


def _calls_numba_jit(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in {"njit", "jit"}:
            return True
        if isinstance(node, ast.alias) and node.name in {"njit", "jit"}:
            return True
        if isinstance(node, ast.Attribute) and node.attr in {"njit", "jit"}:
            return True
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and ("import njit" in node.value or "@njit" in node.value)
        ):
            return True
    return False


def test_every_compiled_function_is_a_kernel():
    """No module but the door calls numba.njit / numba.jit, a generated policy-state module
    included (its source is a string in policy_api/contract.py)."""
    assert not [str(path) for path, tree in _modules() if _calls_numba_jit(tree)]


def test_without_dispatch_calls_the_same_compiled_code_and_leaves_the_rest_alone():
    """The door's ``without_dispatch``: the one compiled signature's entry point gives what the
    dispatcher gives; a function not yet compiled, or plain Python, is returned as it is."""
    import numpy as np

    from schedlab._jit import kernel, without_dispatch

    @kernel(cache=False)
    def scaled(a, k):
        return a * k

    assert without_dispatch(scaled) is scaled  # not compiled yet: no signature
    a = np.arange(4.0)
    expected = scaled(a, 3.0)
    direct = without_dispatch(scaled)
    assert direct is not scaled
    np.testing.assert_array_equal(direct(a, 3.0), expected)
    plain = scaled.py_func
    assert without_dispatch(plain) is plain


# A process with Numba set up its own way: its cache directory, its import hooks, its indexing.
OWN_SETUP = """
import json, os, sys
import numpy as np
import numba
from numba.core import config
from numba.np import arrayobj

config.CACHE_DIR = sys.argv[1]
before = {
    "cache_dir": config.CACHE_DIR,
    "meta_path": [repr(f) for f in sys.meta_path],
    "numba_env": {k: v for k, v in os.environ.items() if k.startswith("NUMBA_")},
}
fix_integer_index = arrayobj.fix_integer_index
import schedlab
import schedlab.engine.loop  # the engine: its opted-in kernels are declared
from schedlab._jit import kernel

@kernel(wraparound=False, cache=False, boundscheck=False)  # bounds checks test i < 0 too
def fast(a, i):
    return a[i]

fast(np.arange(3.0), 1)  # compiled here: within the door's scoped indexing
after = {
    "cache_dir": config.CACHE_DIR,
    "meta_path": [repr(f) for f in sys.meta_path],
    "numba_env": {k: v for k, v in os.environ.items() if k.startswith("NUMBA_")},
}
print(json.dumps({
    "before": before,
    "after": after,
    "same_fix_integer_index": arrayobj.fix_integer_index is fix_integer_index,
    "blas_loaded_alone": "scipy.linalg" not in sys.modules
    and "scipy.linalg.cython_blas" in sys.modules,
    "wraps": "icmp slt i64 %arg.i, 0" in fast.inspect_llvm(fast.signatures[0]),
}))
"""


def test_importing_schedlab_changes_nothing_in_a_process_that_set_numba_up(tmp_path):
    """Issue 44 item 4 (decision 0020): a process that imported Numba first and set its cache
    directory keeps it, its import hooks (``sys.meta_path``), its ``NUMBA_*`` environment and
    Numba's ``fix_integer_index`` after importing schedlab and its engine and compiling an
    opted-in kernel, which is compiled without the ``i < 0`` test all the same (the door puts
    its indexing in place only while the kernel compiles)."""
    env = {**os.environ}
    for name in ("NUMBA_CACHE_DIR", "NUMBA_BOUNDSCHECK", "NUMBA_DISABLE_JIT", "SCHEDLAB_JIT"):
        env.pop(name, None)
    own = tmp_path / "own-cache"
    done = subprocess.run(
        [sys.executable, "-c", OWN_SETUP, str(own)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["after"] == seen["before"]
    assert seen["before"]["cache_dir"] == str(own)
    assert seen["same_fix_integer_index"]
    assert not seen["blas_loaded_alone"]
    assert not seen["wraps"]


KEYED_CACHE = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import kernels_of_the_keyed_cache as m
from numba.core import config
from schedlab._jit import cache_dir
value = m.twice(21)
print(json.dumps({
    "value": value,
    "numba_cache_dir": config.CACHE_DIR,
    "index_files": [str(p.relative_to(cache_dir())) for p in cache_dir().rglob("*.nbi")],
}))
"""


def test_a_kernel_is_cached_in_the_keyed_directory_without_setting_numba_cache_dir(tmp_path):
    """Without ``NUMBA_CACHE_DIR``, schedlab's kernels cache in the directory keyed by the
    versions and the code hash (``_jit.cache_dir``, under ``$XDG_CACHE_HOME``), and Numba's
    ``CACHE_DIR`` stays unset for the rest of the process."""
    (tmp_path / "kernels_of_the_keyed_cache.py").write_text(
        "from schedlab._jit import kernel\n\n\n@kernel\ndef twice(x):\n    return 2 * x\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", KEYED_CACHE, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["value"] == 42 and seen["numba_cache_dir"] == ""
    assert len(seen["index_files"]) == 1
    assert ".twice-" in seen["index_files"][0]
