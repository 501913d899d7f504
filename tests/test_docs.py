"""The user guide stays in step with the code: every policy and reproduction is documented, and
every document the README points to exists."""

from __future__ import annotations

import re
from pathlib import Path

from schedlab.policies.registry import all_policies, policies_markdown
from schedlab.reproduce.registry import all_reproductions

ROOT = Path(__file__).resolve().parents[1]


def test_policies_page_holds_the_current_table():
    text = (ROOT / "docs" / "policies.md").read_text()
    table = text.split("<!-- policies:begin -->\n", 1)[1].split("<!-- policies:end -->", 1)[0]
    assert table == policies_markdown(), "regenerate with: schedlab policies --markdown"
    assert {p.name for p in all_policies()} <= set(re.findall(r"^\| `([\w-]+)`", table, re.M))


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
