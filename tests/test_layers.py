"""The import graph of src/schedlab runs downward only, without cycles (issue 11, item 5).

Layers, lowest first (a module may import its own layer or lower ones):
base (errors, _jit, _version, papers, outputs) < engine (the compiled core) < optim, measurement
(what a run measured, read from the engine's state), policy_api (the policy author's API)
< policies (the built-in policies) < workloads (traces) < model (specs, compile) < the package root
(the public API, by name) < simulation, online, analysis, experiments, report < reproduce, service,
slurm, api < commands, demo, cli_support < cli.
Every import counts, also those inside functions (a hidden cycle is still a cycle), and an import of
the package root counts as one of the modules its public names come from (``_PUBLIC``: the root
imports them on first use). There are no exceptions: e.g. the Gittins rank tables a policy needs
are built from the size laws of analysis/ by the pipeline (simulation/) and handed to the policy's
init, never imported by policies/.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
LAYER = {
    "errors": 0,
    "_jit": 0,
    "_version": 0,
    "papers": 0,
    "outputs": 0,
    "engine": 1,
    "optim": 2,
    "measurement": 2,  # metrics, intervals, stability, reliability, capacity, the jobs table
    "policies": 3,
    "workloads": 4,
    "model": 5,
    "simulation": 7,  # the pipeline: a peer of analysis (known stability limits)
    "online": 7,  # the online scheduler: the pipeline's runner driven by a caller's events
    "analysis": 7,
    "experiments": 7,
    "report": 7,
    "reproduce": 8,
    "commands": 9,
    "demo": 9,
    "cli_support": 9,
    "api": 8,
    "service": 8,  # schedlab serve/replay: above the online scheduler, below commands
    "slurm": 8,  # schedlab slurm: the online scheduler driving a Slurm cluster
    "plugins": 4,
    "policy_api": 2,  # the policy author's API (contract, context, placement): below every policy
    "spec_kind": 1,
    "datasets": 1,
    "streams": 1,
    "cli": 10,
    "": 6,  # schedlab/__init__.py: the public API (simulate, Result, load_spec)
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def public_names() -> dict[str, str]:
    """The package root's public names and the modules it imports them from on first use."""
    root = ast.parse((SRC / "schedlab" / "__init__.py").read_text())
    for node in root.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["_PUBLIC"]:
            return ast.literal_eval(node.value)
    raise AssertionError("schedlab/__init__.py has no _PUBLIC")


def imports() -> dict[str, set[str]]:
    """Every schedlab module and the schedlab modules it imports (anywhere in its body); an import
    of the root ``schedlab`` from a module also imports what the root's public names come from
    (all of them for ``import schedlab``, the names taken for ``from schedlab import name``)."""
    known = {module_name(p) for p in (SRC / "schedlab").rglob("*.py")}
    public = public_names()
    graph: dict[str, set[str]] = {}
    for path in (SRC / "schedlab").rglob("*.py"):
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
                if any(a.name == "schedlab" for a in node.names):
                    targets.update(public.values())
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:  # `from schedlab import _jit` imports schedlab._jit
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in known else node.module)
                    if node.module == "schedlab" and alias.name in public:
                        targets.add(public[alias.name])
        graph[module_name(path)] = {t for t in targets if t in known}
    return graph


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else ""]


def test_every_package_has_a_layer():
    assert {m.split(".")[1] for m in imports() if "." in m} <= set(LAYER)


def test_imports_run_downward_only():
    graph = imports()
    upward = {
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if layer(b) > layer(a) and not b.startswith(a + ".")
    }
    assert upward == set(), "imports from a lower layer to a higher one"


def test_no_import_cycles():
    graph = imports()
    # Tarjan-free check: depth-first search for a back edge, packages importing their own
    # __init__ excepted (a package's __init__ importing its submodules is not a cycle).
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph.get(m, ())):
            if m.startswith(t + ".") or t.startswith(m + "."):
                continue
            if state.get(t) == 1:
                cycles.append([*stack[stack.index(t) :], t] if t in stack else [m, t])
            elif t not in state:
                visit(t, [*stack, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles
