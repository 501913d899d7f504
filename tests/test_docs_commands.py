"""Every command in README.md and docs/*.md runs (quick variants), so a newcomer never meets a
command that fails. The conventions (which commands run, how they are shortened, how a command is
marked illustrative) are in docs/testing.md, "Commands in the docs".

Commands are discovered when the test runs: every line of a fenced code block that starts with
``schedlab``, ``.venv/bin/schedlab`` or ``make`` (after an optional ``$ `` prompt; in a block with
prompts only the prompted lines are commands). The commands of one document run in order, in a
scratch copy of the repository (symbolic links to its files, ``../shared`` beside it), so that one
command may use what an earlier one wrote (``schedlab run ... --out out/x`` then
``schedlab report out/x``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.docs import DATA, DOCS, ROOT, blocks, scratch_repo, write_file_blocks
from tests.helpers.network import free_port

FULL = os.environ.get("SCHEDLAB_DOCS_FULL", "") not in ("", "0")
TIMEOUT = 300  # seconds per command
QUICK_ARRIVALS = "4000"
ILLUSTRATIVE = "illustrative"  # a command whose comment holds this word is shown, not run
PROMPT = re.compile(r"^\s*\$ ")
COMMAND = re.compile(r"^\s*(\$ )?(\.venv/bin/)?(schedlab|make|curl)(\s|$)")
BACKGROUND = "&"  # a command ending in `&` runs in the background until the doc's last command
DOC_PORT = "8787"  # the port the docs show; the test serves on a free port instead
PLACEHOLDER = re.compile(r"\.\.\.|^\[.*\]$|^[A-Z][A-Z_]+(\.\w+)?$")
FILE_ARG = re.compile(r"\.(toml|parquet|csv|gz|swf|json|py)$|/$")
OUTPUT_OPTIONS = {"--out", "-o", "--jobs-out", "--timeseries-out"}


@dataclass(frozen=True)
class DocCommand:
    doc: str
    line: int
    text: str  # as written (continuations joined, comment kept)
    skip: str = ""  # why it is not run ("" to run it)
    error: str = ""  # the "error: ..." line a transcript shows right after it (exit code 2)


def _balanced(text: str) -> bool:
    try:
        _words(text)
    except ValueError:
        return False
    return True


def discover(doc: Path) -> list[DocCommand]:
    found = []
    for block in blocks(doc.read_text(encoding="utf-8")):
        first, lines, block_skip = block.first, block.lines, block.skip
        prompted = any(PROMPT.match(x) for x in lines)
        k = 0
        while k < len(lines):
            line = lines[k]
            if not COMMAND.match(line) or (prompted and not PROMPT.match(line)):
                k += 1
                continue
            text, number = PROMPT.sub("", line).strip(), first + k
            while (text.endswith("\\") or not _balanced(text)) and k + 1 < len(lines):
                k += 1
                text = text.rstrip("\\").rstrip() + " " + lines[k].strip()
            shown = lines[k + 1].strip() if prompted and k + 1 < len(lines) else ""
            error = shown if shown.startswith("error:") else ""
            found.append(DocCommand(doc.name, number, text, block_skip, error))
            k += 1
    return found


def _words(text: str) -> tuple[list[str], str]:
    """The command's words and its comment (what follows an unquoted ``#``)."""
    quote = ""
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            return shlex.split(text[:i]), text[i + 1 :].strip()
    return shlex.split(text), ""


def _set_option(words: list[str], option: str, value: str) -> list[str]:
    if option in words:
        at = words.index(option)
        return [*words[: at + 1], value, *words[at + 2 :]]
    return [*words, option, value]


def _quick_experiment(path: Path, scratch: Path) -> Path:
    """A copy of an experiment spec with one replication and QUICK_ARRIVALS arrivals per run."""
    text = path.read_text(encoding="utf-8")
    spec = tomllib.loads(text)
    text = re.sub(r"(?m)^replications\s*=.*$", "replications = 1", text)
    if "run.arrivals" in spec.get("sweep", {}):
        text = re.sub(r'(?m)^"run\.arrivals"\s*=.*$', f'"run.arrivals" = [{QUICK_ARRIVALS}]', text)
    elif "[sweep]" in text:
        text = text.replace("[sweep]", f'[sweep]\n"run.arrivals" = [{QUICK_ARRIVALS}]', 1)
    target = scratch / "quick-experiments" / path.name
    target.parent.mkdir(exist_ok=True)
    target.write_text(text, encoding="utf-8")
    base = spec.get("base")
    if isinstance(base, str):
        (target.parent / base).write_text((path.parent / base).read_text(), encoding="utf-8")
    return target


def outputs(command: DocCommand) -> set[str]:
    """What the command writes (the values of its output options)."""
    words, _ = _words(command.text)
    return {words[i + 1] for i, w in enumerate(words[:-1]) if w in OUTPUT_OPTIONS}


def plan(
    command: DocCommand, scratch: Path, unmade: set[str] = frozenset(), port: str = DOC_PORT
) -> tuple[list[str] | None, str]:
    """The argv to run (the venv's CLI, quick options; a last word ``&``: in the background), or
    None and the reason it is not run. ``unmade``: what skipped commands before this one would
    have written; ``port`` replaces the docs' port 8787."""
    if command.skip:
        return None, command.skip
    words, comment = _words(command.text)
    needed = sorted(unmade & set(words))
    if needed:
        return None, f"uses {', '.join(needed)}, written by a command that is not run"
    if ILLUSTRATIVE in comment:
        return None, f"marked illustrative: {comment}"
    words = [w.replace(f":{DOC_PORT}", f":{port}") if w != DOC_PORT else port for w in words]
    if words[0] == "curl":
        return [words[0], "--fail", "--show-error", *words[1:]], ""
    if words[0] == "make":
        if words[1:] == ["run"]:
            return [*_cli(), "demo", "--arrivals", QUICK_ARRIVALS], ""
        return None, f"`{' '.join(words)}`: make targets run in CI (.ci/run runs make test)"
    words = words[1:]
    holders = [w for w in words if PLACEHOLDER.search(w)]
    if holders:
        return None, f"a synopsis with placeholders ({', '.join(holders)})"
    if "--cluster" in words:
        return None, "needs a Dask cluster"
    for i, word in enumerate(words):
        output = i > 0 and words[i - 1] in OUTPUT_OPTIONS
        if FILE_ARG.search(word) and not output and not (scratch / word).exists():
            return None, f"needs {word}, which the docs do not create here"
    verb = words[0]
    if verb in ("slurm", "slurm-cluster"):
        from schedlab.slurm.local_cluster import missing_programs

        if missing_programs():
            return None, "Slurm is not installed here (.ci/run installs slurm-wlm and munge)"
    if verb == "reproduce" and "--list" not in words:
        from schedlab.reproduce.registry import get_reproduction

        get_reproduction(words[1])  # the name must exist even when the run is skipped
        if not FULL:
            return None, "a reproduction: name checked; set SCHEDLAB_DOCS_FULL=1 to run --quick"
        words = [*[w for w in words if w != "--quick"], "--quick", "--workers", "1"]
    if verb == "simulate":
        words = _set_option(words, "--arrivals", QUICK_ARRIVALS)
    if verb == "compare":
        words = _set_option(words, "--arrivals", QUICK_ARRIVALS)
        words = _set_option(_set_option(words, "--replications", "1"), "--workers", "1")
    if verb == "run":
        quick = _quick_experiment(scratch / words[1], scratch)
        words = _set_option([verb, str(quick), *words[2:]], "--workers", "1")
    return [*_cli(), *words], ""


def _cli() -> list[str]:
    return [sys.executable, "-m", "schedlab.cli"]


def _stop(background: list[tuple[subprocess.Popen, Path]]) -> str:
    """Stop the background commands; what they printed on stderr."""
    said = []
    for process, stderr in background:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        said.append(stderr.read_text(errors="replace")[-2000:])
    return "\n".join(said)


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_in_the_doc_runs(doc, tmp_path):
    commands = discover(doc)
    if not commands:
        pytest.skip(f"{doc.name} shows no command")
    scratch = scratch_repo(tmp_path)
    write_file_blocks(doc, scratch)  # files the doc shows (a plugin, its spec)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    env["SCHEDLAB_DATA"] = str(DATA)
    ran, skipped, unmade = [], [], set()
    port, background = str(free_port()), []
    try:
        for command in commands:
            argv, reason = plan(command, scratch, unmade, port)
            if argv is None:
                skipped.append(f"{doc.name}:{command.line}: {reason}")
                unmade |= outputs(command)
                continue
            if argv[-1] == BACKGROUND:
                stderr = tmp_path / f"background-{command.line}.err"
                with stderr.open("w") as sink:
                    process = subprocess.Popen(
                        argv[:-1], cwd=scratch, env=env, stdout=subprocess.DEVNULL, stderr=sink
                    )
                background.append((process, stderr))
                ran.append(f"{command.line} (in the background)")
                continue
            start = time.perf_counter()
            done = subprocess.run(
                argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=TIMEOUT
            )
            where = f"{doc.name}:{command.line}: `{command.text}`"
            if command.error:  # the doc shows this error: the command must print it, exit 2
                assert done.returncode == 2, (
                    f"{where} exited {done.returncode}, the doc shows an error"
                )
                assert " ".join(command.error.split()) in " ".join(done.stderr.split()), (
                    f"{where}: the doc shows {command.error!r}, the command printed {done.stderr!r}"
                )
            else:
                assert done.returncode == 0, (
                    f"{where} exited {done.returncode}\n{done.stderr[-2000:]}"
                    + (f"\nbackground: {_stop(background)}" if background else "")
                )
            ran.append(f"{command.line} ({time.perf_counter() - start:.1f} s)")
    finally:
        _stop(background)
    print(f"{doc.name}: ran {', '.join(ran) or 'none'}; skipped: " + "; ".join(skipped))


def test_discovery_joins_continuations_and_honours_the_markers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "```sh\n"
        "schedlab trace convert a.csv.gz --format f \\\n    --out b.parquet\n"
        'schedlab results out/x --query "select a,\n    b from runs"\n'
        "schedlab run x.toml --cluster tcp://h:1   # illustrative: needs Dask\n"
        "```\n"
        "<!-- illustrative: a user's own trace -->\n"
        "```\nschedlab trace info mine.parquet\n```\n"
        "```console\n$ schedlab trace formats\nswf  ...\nschedlab is great\n```\n"
    )
    found = discover(doc)
    assert [c.text for c in found][:2] == [
        "schedlab trace convert a.csv.gz --format f --out b.parquet",
        'schedlab results out/x --query "select a, b from runs"',
    ]
    assert [c.line for c in found] == [2, 4, 6, 10, 13]
    assert found[3].skip == "a user's own trace" and len(found) == 5
    assert plan(found[2], tmp_path)[0] is None  # illustrative
    argv, _ = plan(found[4], tmp_path)
    assert argv[-2:] == ["trace", "formats"]
    assert plan(found[0], tmp_path) == (None, "needs a.csv.gz, which the docs do not create here")
