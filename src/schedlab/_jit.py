"""Numba configuration, applied before numba is first imported.

* ``SCHEDLAB_JIT=0`` runs every engine and policy function as plain Python (for debugging and for
  policies that are not Numba-compatible); it sets ``NUMBA_DISABLE_JIT``.
* Compiled code is cached on disk (``cache=True``) in a directory keyed by a hash of the sources
  that compiled code is built from (the engine, the policies and the job generation's kernels in
  ``simulation``). Numba's cache only checks the
  timestamp of the file that defines a cached function, not of the functions it calls in other
  modules; keying the directory by those sources makes any edit to the engine or a policy
  invalidate every cached runner. See docs/decisions/0001-engine-architecture.md.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
COMPILED_PACKAGES = ("engine", "policies", "simulation")


def _source_hash() -> str:
    digest = hashlib.sha1()
    paths = [p for pkg in COMPILED_PACKAGES for p in (_PACKAGE_DIR / pkg).rglob("*.py")]
    for path in sorted(paths):
        digest.update(str(path.relative_to(_PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def code_hash() -> str:
    """Hash of the engine, policy and simulation sources: identifies the code that produced a
    result."""
    return _source_hash()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "schedlab" / f"numba-{code_hash()}"


def configure() -> None:
    if os.environ.get("SCHEDLAB_JIT", "1").strip().lower() in {"0", "false", "no", "off"}:
        os.environ["NUMBA_DISABLE_JIT"] = "1"
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    directory = str(cache_dir())
    os.environ["NUMBA_CACHE_DIR"] = directory
    if "numba" in sys.modules:  # imported before schedlab: patch the live config instead
        from numba.core import config

        config.CACHE_DIR = directory


def kernel(function=None, /, *, wraparound: bool = True, **options):
    """PLACEHOLDER until the h29jit branch merges: ``numba.njit(cache=True, **options)``."""
    from numba import njit

    options.setdefault("cache", True)
    if function is None:
        return lambda f: njit(**options)(f)
    return njit(**options)(function)
