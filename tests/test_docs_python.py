"""Every Python block of README.md and docs/*.md runs as written (issue 32 item 1).

The Python blocks of one document run in order, in one fresh interpreter (one namespace, as a
reader pasting them into a REPL would), with the current directory a scratch copy of the
repository (tests/helpers/docs.py) so that relative paths such as
``src/schedlab/examples/quickstart.toml`` and ``../shared/data/...`` resolve as in a clone. A
block of ``>>>`` lines is a doctest: its printed results are checked as shown. A block marked
``<!-- file: NAME -->`` is written to NAME first (a plugin the next block loads); one marked
``<!-- illustrative: why -->`` is shown, not run (docs/testing.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.docs import DATA, DOCS, ROOT, Block, blocks, scratch_repo, write_file_blocks

TIMEOUT = 600  # seconds per document
RUNNER = """
import doctest, sys
namespace = {"__name__": "__main__"}
for kind, where, code in BLOCKS:
    if kind == "doctest":
        test = doctest.DocTestParser().get_doctest(code, namespace, where, where, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test, clear_globs=False)
        namespace.update(test.globs)  # later blocks use what this one defined (DocTest copies)
        if runner.failures:
            sys.exit(f"{where}: a doctest example printed something else than the doc shows")
    else:
        exec(compile(code, where, "exec"), namespace)
"""


def _is_python(block: Block) -> bool:
    first = next((line for line in block.lines if line.strip()), "")
    return block.lang in ("python", "py", "pycon") or first.lstrip().startswith(">>>")


def python_blocks(doc: Path) -> list[Block]:
    """The doc's Python blocks (fenced as Python, or doctests in any fence)."""
    return [b for b in blocks(doc.read_text(encoding="utf-8")) if _is_python(b) and not b.file]


def _program(doc: Path, runnable: list[Block]) -> str:
    parts = []
    for b in runnable:
        code = "\n".join(b.lines)
        kind = "doctest" if code.lstrip().startswith(">>>") else "exec"
        where = f"{doc.name}:{b.first}"
        padded = "\n" * (b.first - 1) + code  # tracebacks name the doc's own line numbers
        parts.append(f"({kind!r}, {where!r}, {padded!r})")
    return f"BLOCKS = [{', '.join(parts)}]\n" + RUNNER


DOCS_WITH_PYTHON = [d for d in DOCS if python_blocks(d)]
assert DOCS_WITH_PYTHON, "no Python block found: the discovery is broken"


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS_WITH_PYTHON, ids=lambda p: p.name)
def test_every_python_block_in_the_doc_runs(doc: Path, tmp_path: Path):
    scratch = scratch_repo(tmp_path)
    write_file_blocks(doc, scratch)
    runnable = [b for b in python_blocks(doc) if not b.skip]
    if not runnable:
        pytest.skip(f"{doc.name}: every Python block is illustrative or a file")
    program = scratch / f"_doc_{doc.stem}.py"
    program.write_text(_program(doc, runnable), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCHEDLAB_DATA": str(DATA)}
    done = subprocess.run(
        [sys.executable, program.name],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, f"{doc.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_the_runner_checks_doctest_output_and_names_the_doc_line(tmp_path: Path):
    """A doctest whose shown result is wrong fails, and an error names the doc's own line."""
    doc = tmp_path / "x.md"
    doc.write_text(
        textwrap.dedent(
            """\
            text
            ```python
            >>> 1 + 1
            3
            ```
            <!-- file: helper.py -->
            ```python
            VALUE = 2
            ```
            ```python
            raise ValueError("line 11")
            ```
            """
        )
    )
    found = python_blocks(doc)
    assert len(found) == 2  # the file block is not code to run
    write_file_blocks(doc, tmp_path)
    assert (tmp_path / "helper.py").read_text() == "VALUE = 2\n"
    wrong = tmp_path / "wrong.py"
    wrong.write_text(_program(doc, found[:1]))
    done = subprocess.run([sys.executable, str(wrong)], capture_output=True, text=True)
    assert done.returncode != 0 and "x.md:3: a doctest example printed something else" in (
        done.stderr
    )
    error = tmp_path / "error.py"
    error.write_text(_program(doc, found[1:]))
    done = subprocess.run([sys.executable, str(error)], capture_output=True, text=True)
    assert 'File "x.md:11", line 11' in done.stderr
