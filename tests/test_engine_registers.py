"""Only engine/ writes the engine's state (issue 44 item 1, decision 0019).

Simulation and the online scheduler drive the engine through its session (engine/session.py):
it fills the block, reads and empties the action log, grows the slots, restores snapshots.
Outside engine/, no module assigns into an engine register (the counters ``ctr``, the clock
``clk``, the block and the action log, the completions requested ``done_req``: names no policy
state uses) through any expression, nor into any field of the engine state through a name ``st``
(the engine state's name everywhere); reading them is fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

from schedlab.engine.state import ENGINE_STATE

SRC = Path(__file__).resolve().parents[1] / "src" / "schedlab"
ENGINE = SRC / "engine"
REGISTERS = {"ctr", "clk", "done_req"} | {f.name for f in ENGINE_STATE if f.role == "buffer"}
FIELDS = {f.name for f in ENGINE_STATE}
IN_PLACE = {"fill", "put", "itemset", "sort", "resize", "partition"}  # ndarray methods that write


def _receiver(node: ast.expr) -> str:
    """The last name of an attribute's owner: ``st`` for ``self.run.st``."""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _writes_engine(target: ast.expr) -> bool:
    """``target`` (of an assignment, or an array written in place) is an engine register, or an
    engine field reached through ``st``: ``x.ctr[...]``, ``st.arrival[...]``, ``x.clk``."""
    while isinstance(target, ast.Subscript):
        target = target.value
    if not isinstance(target, ast.Attribute) or target.attr not in FIELDS:
        return False
    return target.attr in REGISTERS or _receiver(target.value) == "st"


def _targets(node: ast.AST) -> list[ast.expr]:
    """The arrays ``node`` writes into: its assignment targets that are subscripts (tuples
    unpacked), the array of an in-place ndarray method call (``st.ctr.fill(0)``), the first
    argument of ``np.copyto``."""
    if isinstance(node, ast.Assign):
        pending = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        pending = [node.target]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in IN_PLACE:
            return [node.func.value]
        return node.args[:1] if node.func.attr == "copyto" else []
    else:
        return []
    subscripts = []
    while pending:
        t = pending.pop()
        if isinstance(t, ast.Tuple | ast.List):
            pending += t.elts
        elif isinstance(t, ast.Subscript):
            subscripts.append(t)
    return subscripts


def engine_writes(root: Path) -> list[str]:
    """Every write into the engine state by a module of ``root`` outside its engine/, as
    "path:line: target", in source order."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(root / "engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            found += [
                (str(path.relative_to(root)), t.lineno, t.col_offset, ast.unparse(t))
                for t in _targets(node)
                if _writes_engine(t)
            ]
    return [f"{path}:{line}: {target}" for path, line, _, target in sorted(found)]


def test_no_module_outside_engine_writes_an_engine_register():
    assert engine_writes(SRC) == []


def test_the_check_finds_register_writes(tmp_path):
    """The check is not vacuous: each form of write it forbids is found, reads are not."""
    module = tmp_path / "online" / "driver.py"
    module.parent.mkdir()
    module.write_text(
        "def f(st, run, ps, np):\n"
        "    st.ctr[3] = 1\n"
        "    run.st.clk[0] += 2.0\n"
        "    self.session.st.nx_arrival[:4], x = (1.0, 2)\n"
        "    st.arrival[0] = 5.0\n"
        "    run.st.ctr.fill(0)\n"
        "    np.copyto(st.clk, 0.0)\n"
        "    ps.heap[0] = 1\n"  # a policy's own state
        "    n = st.ctr[3] + run.st.clk[0]\n"  # reads
    )
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "loop.py").write_text("def g(st):\n    st.ctr[0] = 1\n")
    assert [w.split(": ", 1)[1] for w in engine_writes(tmp_path)] == [
        "st.ctr[3]",
        "run.st.clk[0]",
        "self.session.st.nx_arrival[:4]",
        "st.arrival[0]",
        "run.st.ctr",
        "st.clk",
    ]
