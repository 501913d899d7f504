"""A kernel's disk cache is made when the kernel is first compiled or loaded, not when it is
declared (schedlab._jit, issue 33 item 1: a run declares some 300 kernels and calls a few);
the cache still saves the compiled code and a later process loads it, without loading Numba's
compiling registries (only a compile needs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT

MODULE = """
import numpy as np

from schedlab._jit import kernel


@kernel
def add_one(x):
    return x + 1


@kernel
def filled(n, value):
    return np.full(n, value)


@kernel
def text_hash(text):
    return hash(text)
"""
PROGRAM = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import kernels_for_the_cache_test as m
cache = Path(sys.argv[2])
declared = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
value = m.add_one(41)
array = m.filled(3, 2.5).tolist()  # allocated through Numba's runtime (NRT)
# a string's hash reads the process's hash secret, a symbol Numba registers at an import
hashed = m.text_hash("schedlab") == hash("schedlab")
# imported only when Numba loads every typing and lowering registry (what compiling needs)
REGISTRIES = "numba.np.polynomial.polynomial_functions"
registries = REGISTRIES in sys.modules
print(json.dumps({
    "declared": declared,
    "value": value,
    "array": array,
    "hashed": hashed,
    "registries": registries,
    "hits": sum(sum(f.stats.cache_hits.values()) for f in (m.add_one, m.filled, m.text_hash)),
    "index": len(list(cache.rglob("*.nbi"))),
}))
if sys.argv[3] == "then-compile":  # a signature the cache does not hold, after the loads
    value = m.add_one(0.5)
    misses = sum(m.add_one.stats.cache_misses.values())
    print(json.dumps({"value": value, "misses": misses, "registries": REGISTRIES in sys.modules}))
"""


def run(module_dir: Path, cache: Path, then: str = "") -> list[dict]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-c", PROGRAM, str(module_dir), str(cache), then]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_the_cache_is_made_on_first_use_and_loaded_by_the_next_process(tmp_path: Path) -> None:
    module_dir, cache = tmp_path / "modules", tmp_path / "cache"
    module_dir.mkdir()
    (module_dir / "kernels_for_the_cache_test.py").write_text(MODULE)
    (first,) = run(module_dir, cache)
    assert first["declared"] == []  # declaring touched no file
    assert (first["value"], first["array"], first["hits"]) == (42, [2.5, 2.5, 2.5], 0)
    assert first["hashed"]
    assert first["registries"]  # compiled: Numba loaded its registries
    assert first["index"] == 3  # compiled, then saved
    second, compiled = run(module_dir, cache, "then-compile")
    assert (second["value"], second["array"], second["hits"]) == (42, [2.5, 2.5, 2.5], 3)
    assert second["hashed"]  # loaded and run: its hash secret's symbols were there
    assert not second["registries"]  # loaded from the disk cache: no compiling registries
    assert compiled == {"value": 1.5, "misses": 1, "registries": True}  # a compile loads them
