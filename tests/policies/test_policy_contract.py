"""The policy state of the contract (policy_api/contract.py): allocation, growth, named access,
the same with and without the JIT (a compiled rule reads and writes the fields by name)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from schedlab.engine.borrowed_structs import borrow
from schedlab.policy_api.contract import PolicyConfig, PolicyState, StateField, engine_sizes

STATE = PolicyState(
    "contract_test",
    [
        StateField("key", "f8", "jobs", fill=-1.0),
        StateField("seen", "i1", ("jobs", "resources")),
        StateField("count", "i8", "classes"),
        StateField("table", "i4", ("servers", 3), fill=7),
        StateField("cand", "i4", "candidates", fill=-1),
        StateField("beta", "f8"),
        StateField("n_decisions", "i8"),
        StateField("blocking", "b1"),
        StateField("boundary", "i4", fill=-1),
    ],
)
SIZES = {"jobs": 3, "resources": 2, "classes": 2, "servers": 4, "candidates": 5}


@njit(cache=True)
def touch(ps):
    ps.n_decisions += 1
    ps.key[0] = ps.beta
    ps.count[1] = 9
    ps.boundary = 4
    return ps.blocking


def test_allocate_fills_then_copies_the_given_values():
    ps = STATE.allocate(SIZES, {"key": [1.0, 2.0, 3.0], "beta": 0.5, "blocking": True})
    assert ps.key.tolist() == [1.0, 2.0, 3.0]
    assert ps.seen.shape == (3, 2) and ps.seen.dtype == np.int8 and not ps.seen.any()
    assert ps.table.shape == (4, 3) and (ps.table == 7).all() and ps.table.dtype == np.int32
    assert ps.cand.tolist() == [-1] * 5
    assert ps.beta == 0.5 and ps.n_decisions == 0 and ps.blocking and ps.boundary == -1


def test_compiled_code_reads_and_writes_fields_by_name_and_python_sees_it():
    ps = STATE.allocate(SIZES, {"beta": 2.5, "blocking": True})
    assert touch(ps)
    assert touch(ps)
    assert ps.n_decisions == 2 and ps.key[0] == 2.5 and ps.count.tolist() == [0, 9]
    assert ps.boundary == 4


def test_grow_keeps_contents_fills_new_job_slots_and_keeps_the_rest():
    ps = STATE.allocate(SIZES, {"key": [1.0, 2.0, 3.0], "beta": 0.25})
    ps.seen[2, 1] = 1
    touch(ps)
    grown = STATE.grow(ps, 6)
    assert grown.key.tolist() == [0.25, 2.0, 3.0, -1.0, -1.0, -1.0]
    assert grown.seen.shape == (6, 2) and grown.seen[2, 1] == 1 and grown.seen[3:].sum() == 0
    assert grown.count.tolist() == [0, 9] and grown.n_decisions == 1 and grown.beta == 0.25
    assert grown.table.shape == (4, 3) and grown.boundary == 4
    assert STATE.grow(grown, 4).key.shape == (6,)  # never shrinks


def test_allocate_refuses_wrong_shapes_unknown_fields_and_missing_sizes():
    with pytest.raises(ValueError, match="shape"):
        STATE.allocate(SIZES, {"key": [1.0, 2.0]})
    with pytest.raises(ValueError, match="no field"):
        STATE.allocate(SIZES, {"nope": 1})
    with pytest.raises(ValueError, match="candidates"):
        STATE.allocate({k: v for k, v in SIZES.items() if k != "candidates"})


def test_field_declarations_are_checked():
    with pytest.raises(ValueError, match="dtype"):
        StateField("x", "f4")
    with pytest.raises(ValueError, match="first dimension"):
        StateField("x", "f8", ("servers", "jobs"))


def test_engine_sizes_and_config_refuse_unknown_keys():
    class St:
        status = np.zeros(10)
        class_elastic = np.zeros(3)
        capacity = np.zeros((4, 2))

    assert engine_sizes(St(), extra=5) == {
        "jobs": 10,
        "classes": 3,
        "servers": 4,
        "resources": 2,
        "extra": 5,
    }

    class Config(PolicyConfig):
        blocking: bool = True

    with pytest.raises(ValueError):
        Config.model_validate({"blockng": False})


def test_every_builtin_policy_names_its_paper_by_key():
    from schedlab.papers import PAPERS
    from schedlab.policies.registry import all_policies, built_in_index

    unknown = [
        p.name for p in all_policies() if p.name in built_in_index() and p.about.paper not in PAPERS
    ]
    assert not unknown, f"built-in policies with an unknown paper key: {unknown}"


def test_a_policy_is_labelled_by_its_papers_name_else_its_title():
    """One name per thing: reproductions take ``About.label`` from the registration."""
    from schedlab.policies.registry import all_policies, get_policy

    assert get_policy("vm-stalling").about.label == "Algorithm 1"  # psychas2018's figures
    assert get_policy("inelastic-first").about.label == "IF"  # berg2020's figures
    assert get_policy("server-filling-srpt").about.label == "ServerFilling-SRPT"  # the title
    redundant = [p.name for p in all_policies() if p.about.paper_label == p.about.title]
    assert not redundant, f"paper_label equal to the title: {redundant}"


@njit(cache=True)
def touch_borrowed(ps):
    b = borrow(ps)
    b.n_decisions += 1
    b.key[1] = b.beta
    return b.count.sum()


def test_a_borrowed_state_reads_and_writes_the_same_fields():
    """engine.borrowed_structs.borrow (decision 0004): a pointer to the fields, no reference
    counting."""
    ps = STATE.allocate(SIZES, {"beta": 1.5, "count": [2, 3]})
    assert touch_borrowed(ps) == 5
    assert ps.n_decisions == 1 and ps.key.tolist() == [-1.0, 1.5, -1.0]


def test_the_event_loop_may_not_replace_an_array_field():
    """Views read from a field stay valid only if nothing replaces the field's array."""

    @njit
    def replace(ps):
        b = borrow(ps)
        b.key = np.zeros(3)

    with pytest.raises(TypingError, match="may change its contents, not replace it"):
        replace(STATE.allocate(SIZES))


def test_field_reads_and_borrowed_calls_count_no_references():
    """The point of decision 0004: no NRT_incref/NRT_decref left in a function that reads array
    fields of a borrowed state and passes it on."""

    @njit
    def inner(b, j):
        if b.count[1] < 0:
            raise ValueError("negative count")
        return b.key[j] + b.count[0]

    @njit
    def outer(ps):
        b = borrow(ps)
        key = b.key  # lives across calls that may raise: Numba could not pair its count
        total = 0.0
        for j in range(key.shape[0]):
            total += inner(b, j) + key[j]
        return total

    ps = STATE.allocate(SIZES, {"key": [1.0, 2.0, 3.0], "count": [10, 0]})
    assert outer(ps) == 42.0
    bodies = []
    for function, name in ((outer, "5outer"), (inner, "5inner")):
        ir = function.inspect_llvm(function.signatures[0])
        for definition in re.split(r"\n(?=define )", ir):
            header = definition.split("{", 1)[0]
            if header.startswith("define") and name in header and "cpython" not in header:
                bodies.append(definition)
    assert len(bodies) >= 2
    assert not any("@NRT_incref" in body or "@NRT_decref" in body for body in bodies)


INDEX_CHECK = """
import importlib, json, sys
from schedlab.policies import registry
from schedlab.policy_api.contract import _REGISTRY
index = registry.built_in_index()
registry.all_policies()
built_in = sorted(
    p.name for p in _REGISTRY.values()
    if registry.source_file(p).startswith("schedlab/policies/")
)
found = {}
for module in sorted(set(index.values())):
    for loaded in [m for m in sys.modules if m.startswith(("schedlab.policies.packing",
            "schedlab.policies.pooled", "schedlab.policies.loss"))]:
        del sys.modules[loaded]
    _REGISTRY.clear()
    importlib.import_module(module)
    found[module] = sorted(_REGISTRY)
print(json.dumps({"index": index, "built_in": built_in, "found": found}))
"""

ONE_LOOKUP = """
import json, sys
from schedlab.policies import registry
registry.get_policy("fcfs")
policy_modules = set(registry.built_in_index().values())  # read from the cache: no import
print(json.dumps(sorted(m for m in sys.modules if m in policy_modules)))
"""


def test_the_index_of_built_in_policies_is_derived_from_the_policy_modules(tmp_path):
    """The index of built-in names (a run imports only its policy's module) is derived in a
    process with an empty cache: it names every built-in policy, importing the module it gives,
    alone, registers the name, and it is kept in the cache directory; a later process reads it
    and a lookup imports only that policy's module."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)

    def run(code: str) -> object:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        return json.loads(done.stdout)

    result = run(INDEX_CHECK)
    assert sorted(result["index"]) == result["built_in"]
    missing = [n for n, m in result["index"].items() if n not in result["found"][m]]
    assert not missing
    (kept,) = tmp_path.glob("schedlab/*/built_in_policies.json")
    assert json.loads(kept.read_text()) == result["index"]
    assert run(ONE_LOOKUP) == ["schedlab.policies.packing.fifo_ff"]
