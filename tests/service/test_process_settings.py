"""Process tuning belongs to the ``serve`` command (issue 44 item 3, decision 0020): no module of
schedlab imports uvicorn's internals (only ``uvicorn`` itself, in the command), and only the
command sets the interpreter's switch interval or freezes the collector."""

from __future__ import annotations

import ast
from pathlib import Path

import schedlab

PACKAGE = Path(schedlab.__file__).resolve().parent
COMMAND = Path("commands") / "online.py"


def _uses() -> dict[str, list[str]]:
    """Per module (relative path): its imports of uvicorn submodules and its calls of
    ``sys.setswitchinterval`` / ``gc.freeze``."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("uvicorn.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("uvicorn."):
                names = [node.module or ""]
            elif isinstance(node, ast.Attribute) and node.attr in {"setswitchinterval", "freeze"}:
                names = [node.attr]
            if names:
                found.setdefault(str(path.relative_to(PACKAGE)), []).extend(names)
    return found


def test_only_the_serve_command_tunes_the_process_and_no_module_imports_uvicorn_internals():
    uses = _uses()
    assert uses == {str(COMMAND): ["freeze", "setswitchinterval"]}
