"""The fenced blocks of the user guide, and a scratch copy of the repository to run them in.

Used by tests/test_docs_commands.py (shell commands) and tests/test_docs_python.py (Python
blocks). Markers, on the line right before a block (docs/testing.md, "Commands in the docs"):

* ``<!-- illustrative: why -->`` — the block is shown, not run;
* ``<!-- file: NAME -->`` — the block is the content of the file NAME (written into the scratch
  copy before the document's blocks run), not code to run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import ROOT
from tests.helpers.paths import SHARED_DATA as DATA

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP_BLOCK = re.compile(r"<!--\s*illustrative:?\s*(.*?)\s*-->\s*$")
FILE_BLOCK = re.compile(r"<!--\s*file:\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^\s*```\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    first: int  # line number of the block's first line (1-based)
    lines: list[str]
    lang: str  # the fence's info string ("python", "sh", "" ...)
    skip: str = ""  # why it is not run ("" to run it)
    file: str = ""  # the file this block is the content of ("" if none)


def blocks(text: str) -> Iterator[Block]:
    """Every fenced block of a Markdown text, with the marker on the line before it."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        before = lines[i - 1] if i else ""
        skip, file = SKIP_BLOCK.search(before), FILE_BLOCK.search(before)
        j = i + 1
        while j < len(lines) and not FENCE.match(lines[j]):
            j += 1
        yield Block(
            first=i + 2,
            lines=lines[i + 1 : j],
            lang=fence.group(1).lower(),
            skip=(skip.group(1) or "marked illustrative") if skip else "",
            file=file.group(1) if file else "",
        )
        i = j + 1


def scratch_repo(tmp: Path) -> Path:
    """A copy of the repository made of links (outputs land in the copy), ../shared/data beside
    it."""
    repo = tmp / "repo"
    repo.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {"out", ".git", ".venv"}:
            (repo / entry.name).symlink_to(entry)
    if DATA.is_dir():
        (tmp / "shared").mkdir()
        (tmp / "shared" / "data").symlink_to(DATA)
    return repo


def write_file_blocks(doc: Path, folder: Path) -> None:
    """Write the doc's ``<!-- file: NAME -->`` blocks (any language) into ``folder``."""
    for b in blocks(doc.read_text(encoding="utf-8")):
        if b.file:
            (folder / b.file).write_text("\n".join(b.lines) + "\n", encoding="utf-8")
