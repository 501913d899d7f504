"""Profile the compiled event loop with `perf`, function by function (how decision 0004 was found).

Numba's JIT code has no symbols, so `perf report` shows bare addresses. This script compiles the
policy afresh in the process (a temporary Numba cache: code loaded from the cache keeps no LLVM
module to list), runs grosof2023's Fig. 2 setting once, and then writes `/tmp/perf-<pid>.map`,
the file `perf` reads for JIT symbols: every compiled function with its address.

    perf record -F 4000 -o /tmp/perf.data \\
        .venv/bin/python benchmarks/profile_loop.py server-filling 0.9 3e6
    perf report -i /tmp/perf.data --no-children --sort sym | grep -E "schedlab|NRT"

The percentages are of the whole process (start-up and compilation included); compare the
compiled functions with each other. `NRT_incref`/`NRT_decref` are Numba's reference counting.
With ``--dump-code`` the process also copies every function's machine code out, and
``benchmarks/annotate_jit.py`` shows one function's instructions with their share of its samples
(how decision 0005 was found).
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="schedlab-profile-"))


def readable(mangled: str) -> str:
    """schedlab.engine.actions.start from the mangled _ZN8schedlab6engine7actions5startB3v86..."""
    rest = mangled[3:] if mangled.startswith("_ZN") else mangled
    parts = []
    while (length := re.match(r"\d+", rest)) is not None:
        n = int(length.group())
        parts.append(rest[length.end() : length.end() + n])
        rest = rest[length.end() + n :]
    return ".".join(parts) or mangled[:80]


def write_perf_map() -> int:
    """Write /tmp/perf-<pid>.map for every function compiled in this process; returns how many."""
    import gc

    from numba.core.codegen import CPUCodeLibrary
    from numba.core.registry import cpu_target

    engine = cpu_target.target_context.codegen()._engine._ee
    names: dict[int, str] = {}
    for library in (o for o in gc.get_objects() if isinstance(o, CPUCodeLibrary)):
        module = getattr(library, "_final_module", None)
        for function in module.functions if module is not None else ():
            if not function.is_declaration:
                address = engine.get_function_address(function.name)
                if address:
                    names[address] = function.name
    addresses = sorted(names)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as out:
        for i, address in enumerate(addresses):
            size = addresses[i + 1] - address if i + 1 < len(addresses) else 4096
            out.write(f"{address:x} {min(size, 1 << 20):x} {readable(names[address])}\n")
    return len(addresses)


def dump_code() -> Path:
    """Copy the machine code of every function of the perf map to /tmp/jit-code-<pid>.bin, with
    an index (address, size, offset in the file, name) in .idx, for annotate_jit.py."""
    import ctypes

    pid = os.getpid()
    code = Path(f"/tmp/jit-code-{pid}.bin")
    with code.open("wb") as out, code.with_suffix(".idx").open("w") as index:
        for line in Path(f"/tmp/perf-{pid}.map").read_text().splitlines():
            address, size, name = line.split(" ", 2)
            start, length = int(address, 16), min(int(size, 16), 1 << 16)
            index.write(f"{start:x} {length:x} {out.tell():x} {name}\n")
            out.write(ctypes.string_at(start, length))
    return code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policy", help="a pooled policy, e.g. server-filling")
    parser.add_argument("load", type=float)
    parser.add_argument("arrivals", type=float)
    parser.add_argument(
        "--dump-code", action="store_true", help="also copy the JIT code out for annotate_jit.py"
    )
    args = parser.parse_args()

    from schedlab.model.compile import compile_model
    from schedlab.reproduce.grosof2023 import spec
    from schedlab.simulation.simulate import run_model

    run_model(compile_model(spec(args.policy, args.load, 10_000, "exponential")))
    start = time.perf_counter()
    model = compile_model(spec(args.policy, args.load, int(args.arrivals), "exponential"))
    result = run_model(model)
    print(
        f"{args.policy}: {result.events / result.loop_s / 1e6:.2f} M events/s "
        f"({time.perf_counter() - start:.2f} s); perf map of {write_perf_map()} functions"
    )
    if args.dump_code:
        print(f"machine code in {dump_code()}")


if __name__ == "__main__":
    main()
