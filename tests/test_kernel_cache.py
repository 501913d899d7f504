"""A kernel's disk cache is made when the kernel is first compiled or loaded, not when it is
declared (schedlab._jit, issue 33 item 1: a run declares some 300 kernels and calls a few);
the cache still saves the compiled code and a later process loads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT

MODULE = """
from schedlab._jit import kernel


@kernel
def add_one(x):
    return x + 1
"""
PROGRAM = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import kernels_for_the_cache_test as m
cache = Path(sys.argv[2])
declared = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
value = m.add_one(41)
print(json.dumps({
    "declared": declared,
    "value": value,
    "hits": sum(m.add_one.stats.cache_hits.values()),
    "index": len(list(cache.rglob("*.nbi"))),
}))
"""


def run(module_dir: Path, cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-c", PROGRAM, str(module_dir), str(cache)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_cache_is_made_on_first_use_and_loaded_by_the_next_process(tmp_path: Path) -> None:
    module_dir, cache = tmp_path / "modules", tmp_path / "cache"
    module_dir.mkdir()
    (module_dir / "kernels_for_the_cache_test.py").write_text(MODULE)
    first = run(module_dir, cache)
    assert first["declared"] == []  # declaring touched no file
    assert (first["value"], first["hits"]) == (42, 0)
    assert first["index"] == 1  # compiled, then saved
    second = run(module_dir, cache)
    assert (second["value"], second["hits"]) == (42, 1)  # loaded from the disk cache
