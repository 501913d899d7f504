"""One JIT function's instructions with their share of its perf samples (decision 0005).

Record with ``profile_loop.py --dump-code`` under ``perf record``; it prints where it copied the
machine code (``/tmp/jit-code-<pid>.bin``). Then:

    .venv/bin/python benchmarks/annotate_jit.py /tmp/perf.data /tmp/jit-code-<pid>.bin \\
        schedlab.policies.pooled.ordered_policy.draw_prefix --min 1.0

Needs ``perf`` and ``objdump`` (binutils). A sample is charged to the instruction after the one
that stalled (a load's latency shows on the instruction that uses it).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import tempfile
from pathlib import Path


def samples(perf_data: str, name: str) -> collections.Counter[int]:
    """Sample counts per instruction address of the function ``name``."""
    script = subprocess.run(
        ["perf", "script", "-i", perf_data, "-F", "ip,sym"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts: collections.Counter[int] = collections.Counter()
    for line in script.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip() == name:
            counts[int(parts[0], 16)] += 1
    return counts


def disassemble(code: Path, name: str) -> list[tuple[int, str]]:
    """(address, instruction) of the function ``name`` in a dump of profile_loop.py."""
    for line in code.with_suffix(".idx").read_text().splitlines():
        address, size, offset, function = line.split(" ", 3)
        if function == name:
            break
    else:
        raise SystemExit(f"{name} is not in {code.with_suffix('.idx')}")
    start, length, at = int(address, 16), int(size, 16), int(offset, 16)
    with tempfile.NamedTemporaryFile(suffix=".bin") as raw:
        raw.write(code.read_bytes()[at : at + length])
        raw.flush()
        listing = subprocess.run(
            [
                "objdump",
                "-D",
                "-b",
                "binary",
                "-m",
                "i386:x86-64",
                f"--adjust-vma={start:#x}",
                raw.name,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    out = []
    for line in listing.splitlines():
        head, _, rest = line.partition(":")
        try:
            out.append((int(head.strip(), 16), rest.strip()))
        except ValueError:
            continue
    return [(a, text) for a, text in out if start <= a < start + length]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("perf_data")
    parser.add_argument("code", type=Path, help="the .bin written by profile_loop.py --dump-code")
    parser.add_argument("function", help="its name as perf report shows it")
    parser.add_argument("--min", type=float, default=0.0, help="hide lines below this percent")
    args = parser.parse_args()
    counts = samples(args.perf_data, args.function)
    total = max(sum(counts.values()), 1)
    print(f"{args.function}: {sum(counts.values())} samples")
    for address, text in disassemble(args.code, args.function):
        share = 100.0 * counts.get(address, 0) / total
        if share >= args.min:
            print(f"{share:5.1f}  {address:x}  {text}")


if __name__ == "__main__":
    main()
