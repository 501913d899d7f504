"""Fuzz of the CLI's paths (issue 28): random combinations of symbolic links, ``..``, absolute
paths, special files, directories and users' files as the targets and folders of every command
that writes (run, report, plot, results, trace convert, simulate --jobs-out/--timeseries-out).
Each case must succeed or print one error line, and must never change a file outside the output
folder nor create one anywhere but at the target the command was given; an existing target is
replaced only when it is a regular file, and for a Parquet output only when schedlab wrote it
(none of the files here), never a link, a directory or a special file (docs/guarantees.md#files).

A fixed budget of cases; the seed is random (printed on failure), or SCHEDLAB_FUZZ_SEED.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from schedlab.cli import app
from tests.data import HPC2N as SWF
from tests.helpers.outputs import SPEC, make_store

CASES = 30
SEED = int(os.environ.get("SCHEDLAB_FUZZ_SEED", random.SystemRandom().randrange(2**32)))
EXPERIMENT = """name = "f"
[base]
cluster = {{ servers = 1 }}
policy = {{ name = "fcfs" }}
run = {{ arrivals = 300, batches = 4, jobs = {jobs} }}
[base.workload]
load = 0.5
classes = [{{ need = 1, duration = {{ dist = "exponential", mean = 1.0 }} }}]
"""


def world(root: Path, rng: random.Random) -> dict[str, Path]:
    """A result folder ``out`` with random hazards in it, and an ``outside`` folder to protect."""
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    pq.write_table(pa.table({"x": [1]}), outside / "users.parquet")
    os.mkfifo(outside / "fifo")
    out = root / "out"
    make_store(out, "a")
    hazards = {
        "figures": lambda: (out / "figures").symlink_to(outside, target_is_directory=True),
        "report": lambda: (out / "report.html").symlink_to(outside / "secret.txt"),
        "png": lambda: (out / "x.png").symlink_to(outside / "secret.txt"),
        "runs": lambda: (out / "runs" / "b0000.parquet").symlink_to(outside / "users.parquet"),
    }
    for name in rng.sample(sorted(hazards), rng.randint(0, 2)):
        hazards[name]()
    (out / "inner").symlink_to(outside, target_is_directory=True)
    return {"out": out, "outside": outside}


def target(places: dict[str, Path], rng: random.Random, suffix: str) -> Path:
    out, outside = places["out"], places["outside"]
    return rng.choice(
        [
            out / f"new{suffix}",
            out / "sub" / ".." / f"new{suffix}",
            out / "inner" / f"new{suffix}",  # through a link: an explicit target, allowed
            out / ".." / "outside" / f"new{suffix}",
            outside / "secret.txt",
            outside / "users.parquet",
            outside / "fifo",
            outside,
            out,
            outside / "secret.txt" / f"x{suffix}",
            Path("/dev/null"),
        ]
    )


def command(places: dict[str, Path], rng: random.Random, root: Path) -> Case:
    """A random command and the paths it was given as targets."""
    out = places["out"]
    kind = rng.choice(["report", "plot", "results", "convert", "simulate", "run"])
    if kind == "report":
        t = target(places, rng, ".html")
        if rng.random() < 0.5:
            return Case(["report", out], [])
        return Case(["report", out, "--out", t], [t], replaces=True)
    if kind == "plot":
        t = target(places, rng, "")
        if rng.random() < 0.4 or not t.name:
            return Case(["plot", out, "--x", "load"], [])
        made = [t.with_suffix(s) for s in (".png", ".svg", ".csv")]
        return Case(["plot", out, "--x", "load", "--out", t], made, replaces=True)
    if kind == "results":
        t = target(places, rng, ".csv")
        query = rng.choice(
            [
                f"COPY (select 1) TO '{t}'",
                f"select * from read_csv('{places['outside'] / 'secret.txt'}')",
                "select count(*) from runs",
            ]
        )
        return Case(["results", out, "--query", query], [])
    if kind == "convert":
        t = target(places, rng, ".parquet")
        return Case(["trace", "convert", SWF, "-f", "swf", "-o", t, "--window-jobs", "50"], [t])
    if kind == "simulate":
        spec = root / "s.toml"
        spec.write_text(SPEC)
        option = rng.choice(["--jobs-out", "--timeseries-out"])
        t = target(places, rng, rng.choice([".parquet", ".csv"]))
        csv = option == "--timeseries-out" and t.suffix == ".csv"
        return Case(["simulate", spec, option, t, "--format", "json"], [t], replaces=csv)
    jobs = rng.choice(
        [
            f'"{places["outside"] / "secret.txt"}"',
            '"../x.parquet"',
            '"inner/x.parquet"',
            f'"{places["outside"] / "fifo"}"',
            "true",
        ]
    )
    spec = root / "exp.toml"
    spec.write_text(EXPERIMENT.format(jobs=jobs))
    return Case(["run", spec, "--out", out, "--workers", "1", "--format", "csv"], [])


@dataclass
class Case:
    """A command line, the targets it names (it may create them) and whether it may replace a
    target that is a regular file (outputs other than Parquet; a Parquet output replaces only
    files schedlab wrote, and none is here)."""

    args: list
    targets: list[Path]
    replaces: bool = False


def regular(entry: tuple | None) -> bool:
    return entry is not None and stat.S_ISREG(entry[0])


def snapshot(root: Path, skip: Path) -> dict[str, tuple]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        st = path.lstat()
        regular = path.is_file() and not path.is_symlink()
        found[str(path)] = (st.st_mode, path.read_bytes() if regular else b"")
    return found


def test_cli_paths_fuzz(tmp_path):
    rng = random.Random(SEED)
    runner = CliRunner()
    for case in range(CASES):
        root = tmp_path / f"case{case}"
        root.mkdir()
        places = world(root, rng)
        run = command(places, rng, root)
        where = f"seed {SEED} (SCHEDLAB_FUZZ_SEED), case {case}: schedlab " + " ".join(
            map(str, run.args)
        )
        before = snapshot(root, places["out"])
        result = runner.invoke(app, [str(a) for a in run.args])
        lines = [line for line in result.output.splitlines() if line.strip()]
        if result.exit_code != 0:
            assert result.exception is None or isinstance(result.exception, SystemExit), where
            assert lines and lines[-1].startswith("error: "), f"{where}\n{result.output}"
            assert sum(line.startswith("error: ") for line in lines) == 1, where
        after = snapshot(root, places["out"])
        # a target's folder may be reached through a link; the target itself is never followed
        targets = {os.path.join(os.path.realpath(t.parent), t.name) for t in run.targets}
        for path, entry in before.items():
            if after.get(path) != entry:
                replaced = run.replaces and regular(entry) and regular(after.get(path))
                assert path in targets and replaced, f"{where}: changed {path}"
        created = [p for p in after if p not in before and p not in targets]
        assert not created, f"{where}: created {created}"
        shutil.rmtree(root)
