"""The user guide stays in step with the code: every policy and reproduction is documented, and
every document the README points to exists."""

from __future__ import annotations

import re
from pathlib import Path

from schedlab.policies.registry import all_policies, built_in_index, policies_markdown
from schedlab.reproduce.registry import all_reproductions

ROOT = Path(__file__).resolve().parents[1]


def test_policies_page_holds_the_current_table():
    text = (ROOT / "docs" / "policies.md").read_text()
    table = text.split("<!-- policies:begin -->\n", 1)[1].split("<!-- policies:end -->", 1)[0]
    assert table == policies_markdown(built_in_only=True), (
        "regenerate with: schedlab policies --markdown"
    )
    assert {p.name for p in all_policies() if p.name in built_in_index()} <= set(
        re.findall(r"^\| `([\w-]+)`", table, re.M)
    )


def test_every_reproduction_is_in_the_papers_page():
    text = (ROOT / "docs" / "papers.md").read_text()
    missing = [r.name for r in all_reproductions() if f"schedlab reproduce {r.name}" not in text]
    assert not missing


def test_documents_named_in_the_readme_exist():
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`(docs/[\w./-]+\.md)`", readme))
    assert named and all((ROOT / doc).exists() for doc in named), named
    for doc in (ROOT / "docs").glob("*.md"):
        for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", doc.read_text()):
            assert (doc.parent / image).exists(), (doc.name, image)


def test_the_readme_says_how_long_the_first_make_run_takes():
    """A newcomer's first command installs and compiles for minutes: the README says how long
    before the first section (issue 43 item 6)."""
    head = (ROOT / "README.md").read_text().split("\n## ", 1)[0]
    assert re.search(r"first\s+`make run`\s+takes[\s\S]{0,200}?\(\d+(\.\d+)? min", head)
    assert re.search(r"next\s+`make run`\s+took \d+ s", head)


def test_tests_named_in_the_docs_exist():
    """Every test module that the docs, docstrings and comments name by its path from the checkout
    (``tests/``, its folders, the file; then ``::`` and a test's name where given, or ``::`` and a
    name alone after a path on the same line) exists and defines that test. A module named
    without its folders is reported: it says nothing about where the module is."""
    sources = [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "docs").rglob("*.ipynb"),
        *[p for d in ("src", "benchmarks", "tests") for p in (ROOT / d).rglob("*.py")],
    ]
    named = re.compile(r"(?<![\w/.])(tests/[\w/]+\.py)?::(\w+)|(?<![\w/.])(tests/[\w/]+\.py)")
    bare = re.compile(r"(?<![\w/.])test_\w+\.py")
    wrong = []
    for source in sources:
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{source.relative_to(ROOT)}:{number}"
            wrong += [f"{where}: {m} without its folders" for m in bare.findall(line)]
            module = None
            for match in named.finditer(line):
                module = match[1] or match[3] or module
                if module is None:
                    continue
                path = ROOT / module
                if not path.is_file():
                    wrong.append(f"{where}: {module} does not exist")
                elif match[2] and not re.search(rf"^\s*def {match[2]}\(", path.read_text(), re.M):
                    wrong.append(f"{where}: {module} has no {match[2]}")
    assert not wrong, "\n".join(wrong)
