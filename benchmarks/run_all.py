"""Run the benchmarks (`make bench`): every bench_*.py module, or those named as arguments."""

from __future__ import annotations

import datetime
import importlib
import json
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def main(names: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    from schedlab._jit import code_hash
    from schedlab._version import __version__

    modules = names or sorted(p.stem for p in HERE.glob("bench_*.py"))
    RESULTS.mkdir(exist_ok=True)
    for name in modules:
        module = importlib.import_module(name)
        print(f"== {name}: {(module.__doc__ or '').strip().splitlines()[0]}", flush=True)
        records = module.run()
        for r in records:
            rate = f"  {r['events_per_s'] / 1e6:8.2f} M events/s" if "events_per_s" in r else ""
            if not rate and "decisions_per_s" in r:  # the online service (bench_serve)
                rate = f"  {r['decisions_per_s']:8.0f} decisions/s"
            wall = f"{r['wall_s']:9.3f} s" if "wall_s" in r else ""  # a fitted model has none
            print(f"   {r['name']:<55} {wall}{rate}", flush=True)
        payload = {
            "module": name,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {
                "python": platform.python_version(),
                "processor": platform.processor(),
                "machine": platform.machine(),
                "system": platform.platform(),
            },
            "schedlab_version": __version__,
            "code_hash": code_hash(),
            "records": records,
        }
        (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
