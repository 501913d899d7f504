"""schedlab._jit is the one door to Numba (docs/decisions/0010): every compiled function of
schedlab is declared with ``kernel``, and no other module imports a private Numba name."""

from __future__ import annotations

import ast
import functools
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
    included (its source is a string in policies/contract.py)."""
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
