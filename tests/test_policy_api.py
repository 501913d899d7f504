"""Policy API v2 (issue 29 item 3): one module a policy imports, a typed context instead of the
compiled model, hooks instead of policy names in the pipeline.

* every built-in policy takes its contract from ``schedlab.policy_api`` only (its algorithms may
  come from its own package and optim/), and no module of simulation/ or experiments/ imports a
  policy module or names a registered policy;
* the context a policy is given holds what the spec says (classes, capacities, trace needs);
* a newcomer's plugin copied from docs/writing-policies.md runs from the CLI with ``--plugin``
  under ``NUMBA_BOUNDSCHECK=1``;
* a plugin written against API v1 (``init(st, model, config)``, ``ranks_by_gittins``) still
  runs (its contract imported from ``schedlab.policy_api``, the one path since decision 0027),
  and one asking the context for the model's spec gets one line naming what to change.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import schedlab
from schedlab.errors import PolicyError
from schedlab.model.compile import compile_model
from schedlab.model.spec import parse_spec
from schedlab.policies.registry import all_policies
from tests.helpers.boundscheck import boundscheck_env
from tests.helpers.docs import ROOT, write_file_blocks

pytestmark = pytest.mark.usefixtures("registry_restored")

SRC = ROOT / "src" / "schedlab"
CONTRACT_MODULES = (
    "schedlab.engine",
    "schedlab.policy_api.",
    "schedlab.errors",
    "schedlab.streams",
)
CONTRACT_MODULES += ("schedlab._jit",)
COMMAND = (sys.executable, "-m", "schedlab.cli")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def policy_modules() -> list[Path]:
    """The modules that implement policies (the families' packages)."""
    return sorted(
        p for d in ("packing", "pooled", "loss") for p in (SRC / "policies" / d).glob("*.py")
    )


@pytest.mark.parametrize("path", policy_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_built_in_policy_takes_its_contract_from_the_policy_api_only(path: Path):
    imported = {m for m in _imports(path) if m.startswith("schedlab")}
    contract = sorted(m for m in imported if m.startswith(CONTRACT_MODULES))
    assert not contract, f"{path.name} imports {contract}: use schedlab.policy_api"
    assert "model: Any" not in path.read_text()


def _strings(path: Path) -> set[str]:
    return {
        n.value
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_the_pipeline_names_no_policy():
    names = {p.name for p in all_policies()}
    for package in ("simulation", "experiments"):
        for path in (SRC / package).rglob("*.py"):
            policies = {m for m in _imports(path) if m.startswith("schedlab.policies.")}
            assert policies <= {
                "schedlab.policies.registry",
                "schedlab.policies.user_code",
            }, f"{path} imports {policies}"
            named = _strings(path) & names
            assert not named, f"{path} names the policies {sorted(named)}"


def _spec(**changes) -> dict:
    spec = {
        "cluster": {"servers": 8},
        "workload": {
            "load": 0.6,
            "classes": [
                {"probability": 0.5, "need": 1, "duration": {"dist": "exponential", "mean": 1}},
                {
                    "probability": 0.5,
                    "need": {"dist": "discrete", "values": [2, 4]},
                    "duration": {"dist": "exponential", "mean": 2},
                },
            ],
        },
        "policy": {"name": "server-filling"},
        "run": {"arrivals": 3000, "seed": 7},
    }
    spec.update(changes)
    return spec


def test_the_context_holds_what_the_spec_says():
    model = compile_model(parse_spec(_spec()))
    context = model.context
    assert context is model.context  # built once
    assert (context.family, context.policy_name, context.pooled_k) == (
        "pooled",
        "server-filling",
        8,
    )
    assert [c.probability for c in context.classes] == [0.5, 0.5]
    assert context.need_values().tolist() == [1.0, 2.0, 4.0]
    assert context.classes_declared and context.trace is None and not context.demands_from_trace
    assert context.load == pytest.approx(0.6) and context.seed == 7
    assert context.rate == pytest.approx(0.6 * 8 / (0.5 * 1 * 1 + 0.5 * 3 * 2))


def test_asking_the_context_for_the_model_says_what_to_change():
    context = compile_model(parse_spec(_spec())).context
    with pytest.raises(AttributeError, match=r"no 'spec': since policy API v2 .* PolicyContext"):
        _ = context.spec


V1_PLUGIN = """
    from schedlab.engine.actions import start
    from schedlab.engine.constants import Q_HEAD
    from schedlab.engine.loop import run_engine
    from schedlab.policy_api import Policy, PolicyState, engine_sizes, first_fit, register
    from numba import njit

    STATE = PolicyState("v1_fifo", [])


    def init(st, model, config, **tables):
        {init_body}
        return STATE.allocate(engine_sizes(st), {{}})


    @njit(cache=True)
    def decide(st, ps):
        j = st.ctr[Q_HEAD]
        while j != -1:
            nxt = st.q_next[j]
            s = first_fit(st, j, 1.0)
            if s >= 0:
                start(st, j, s, 1.0)
            j = nxt


    @njit(cache=True)
    def run(st, ps, max_events):
        return run_engine(st, ps, decide, max_events)


    register(Policy(name="{name}", family="pooled", title="v1", paper="a test", section="",
                    summary="v1 plugin", state=STATE, init=init, runner=run,
                    ranks_by_gittins=lambda config: {gittins}))
"""


def _v1_plugin(tmp_path: Path, name: str, init_body: str, gittins: bool) -> Path:
    path = tmp_path / f"{name.replace('-', '_')}.py"
    text = V1_PLUGIN.format(name=name, init_body=init_body, gittins=gittins)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_plugin_written_against_api_v1_still_runs(tmp_path: Path):
    body = "assert model.pooled_k == 8 and len(model.classes) == 2 and 'gittins' in tables"
    schedlab.load_plugin(str(_v1_plugin(tmp_path, "v1-fifo", body, gittins=True)))
    result = schedlab.simulate(_spec(policy={"name": "v1-fifo"}))
    no_blocking = {"name": "fifo-ff", "blocking": False}
    fcfs = schedlab.simulate(_spec(policy=no_blocking, model={"family": "pooled"}))
    assert result.events == fcfs.events  # the same rule: FCFS without blocking


def test_a_v1_plugin_reading_the_spec_gets_one_line(tmp_path: Path):
    body = "_ = model.spec.run.seed"
    schedlab.load_plugin(str(_v1_plugin(tmp_path, "v1-spec", body, gittins=False)))
    with pytest.raises(PolicyError) as info:
        schedlab.simulate(_spec(policy={"name": "v1-spec"}))
    message = str(info.value)
    assert "\n" not in message
    assert "policy 'v1-spec' (" in message and "v1_spec.py:" in message
    assert "PolicyContext has no 'spec'" in message


def test_the_guide_s_plugin_runs_from_the_cli_under_bounds_checks(tmp_path: Path):
    """docs/writing-policies.md's my_policies.py (imports only schedlab.policy_api) with its
    spec.toml, through ``schedlab simulate --plugin``, compiled with bounds checks."""
    write_file_blocks(ROOT / "docs" / "writing-policies.md", tmp_path)
    imports = _imports(tmp_path / "my_policies.py")
    assert {m for m in imports if m.startswith("schedlab")} == {"schedlab.policy_api"}
    env = boundscheck_env()  # the cache of tests/policies/test_boundscheck.py
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [*COMMAND, "simulate", "spec.toml", "--plugin", "my_policies.py", "--arrivals", "3000"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "my-first-fit" in done.stdout


def test_need_values_list_the_declared_needs_or_every_whole_number():
    spec = _spec()
    spec["workload"]["classes"][1]["need"] = {
        "dist": "uniform",
        "low": 2,
        "high": 8,
        "integer": True,
    }
    context = compile_model(parse_spec({**spec, "policy": {"name": "fcfs"}})).context
    expected = np.arange(1.0, 9.0)  # need 1 and the whole numbers 2..8
    assert np.array_equal(context.need_values(), expected)


def test_the_flat_keywords_of_api_v2_give_the_same_parts_as_the_structured_form():
    """Decision 0021: a plugin's flat ``Policy(title=..., state=..., preemptive=...)`` is sorted
    into About, Kernels, Traits and Hooks as if it had given them; API v1's
    ``ranks_by_gittins`` becomes the tables hook; an unknown keyword names itself."""
    from schedlab.policy_api import About, Hooks, Kernels, Policy, PolicyState, Traits

    state = PolicyState("flat_parts", [])

    def init(*args):
        return None

    def check(context, config):
        return None

    flat = Policy(
        name="flat", family="pooled", families=("pooled", "packing"), title="Flat",
        paper="notes", section="§1", summary="s", paper_label="F", state=state, init=init,
        runner=None, check=check, preemptive=False, size_knowledge="none", migrates=False,
        waiting_list=False, event_cost=2.0, preset={},
    )  # fmt: skip
    parts = Policy(
        name="flat",
        family="pooled",
        families=("pooled", "packing"),
        about=About(title="Flat", paper="notes", section="§1", summary="s", paper_label="F"),
        kernels=Kernels(state=state, init=init, runner=None),
        traits=Traits(preemptive=False, size_knowledge="none", migrates=False),
        hooks=Hooks(check=check, waiting_list=False, event_cost=2.0),
    )
    assert flat == parts
    v1 = Policy(
        name="v1", family="pooled", title="v1", paper="notes", section="", summary="",
        state=state, init=init, runner=None, ranks_by_gittins=lambda config: True,
    )  # fmt: skip
    assert v1.hooks.tables(None) == ("gittins",)
    assert parts.hooks.tables(None) == () and parts.hooks.known_limits(None) == ()
    with pytest.raises(TypeError, match=r"policy 'typo': unknown keyword.*preemptve"):
        Policy(
            name="typo", family="pooled", title="t", paper="notes", section="", summary="",
            state=state, init=init, runner=None, preemptve=True,
        )  # fmt: skip
