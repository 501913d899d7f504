"""Policy traits (preemptive, size_knowledge, migrates): declared by every built-in policy, shown
by `schedlab policies`, and used by `schedlab compare` on a trace to rank only what a batch
cluster can run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.experiments.compare import plan, workload_base
from schedlab.policies.registry import all_policies, get_policy, needs, policies_markdown
from schedlab.policy_api import About, Kernels, Policy, PolicyConfig, PolicyState, Traits
from schedlab.report.ranking import IDEALIZED, rank, summary
from tests.helpers.paths import ROOT

runner = CliRunner()
QUICKSTART = ROOT / "src/schedlab/examples/quickstart.toml"


def built_in() -> list[Policy]:
    return [
        p for p in all_policies() if p.kernels.runner.__module__.startswith("schedlab.policies.")
    ]


def test_every_built_in_policy_declares_its_traits():
    for p in built_in():
        traits = p.traits_at()
        assert None not in (traits.preemptive, traits.size_knowledge, traits.migrates), p.name


@pytest.mark.parametrize(
    ("name", "settings", "preemptive", "knowledge", "runnable"),
    [
        ("easy-backfill", {}, False, "estimate", True),
        ("easy-backfill", {"durations": "actual"}, False, "exact", False),
        ("easy-backfill-exact", {}, False, "exact", False),
        ("conservative-backfill", {}, False, "estimate", True),
        ("sjbf", {}, False, "estimate", True),
        ("fcfs", {}, False, "none", True),
        ("first-fit-srpt", {}, True, "exact", False),
        ("max-weight", {}, True, "none", False),
        ("server-filling-gittins", {}, True, "none", False),
        ("server-filling-gittins", {"sizes": "known"}, True, "exact", False),
        ("srpt-1", {}, True, "exact", False),
        ("dra", {}, False, "none", True),
        ("dra", {"preemption": True}, True, "none", False),
        ("bf-js", {}, False, "none", True),
    ],
)
def test_traits_follow_the_paper_and_the_settings(name, settings, preemptive, knowledge, runnable):
    p = get_policy(name)
    traits = p.traits_at(p.kernels.config(**{**p.preset, **settings}))
    assert (traits.preemptive, traits.size_knowledge) == (preemptive, knowledge)
    assert traits.batch_runnable is runnable


def test_what_a_cluster_needs_in_words():
    words = {name: needs(get_policy(name).traits_at()) for name in ("fcfs", "easy-backfill", "dra")}
    assert words == {"fcfs": "-", "easy-backfill": "requested times", "dra": "migration"}
    assert needs(get_policy("first-fit-srpt").traits_at()) == "preemption, exact sizes"


def test_migration_only_where_a_policy_moves_running_jobs():
    moving = {p.name for p in built_in() if p.traits_at().migrates}
    assert moving == {"dra", "dra-preemption"}  # psychas2022 §4: Reject-Group jobs migrate


def test_a_policy_that_does_not_say_is_unknown_and_never_batch_runnable():
    p = Policy(
        name="x",
        family="pooled",
        about=About(title="x", paper="notes", section="", summary=""),
        kernels=Kernels(state=PolicyState("x_traits", []), init=lambda *a: None, runner=None),
    )
    traits = p.traits_at()
    assert (traits.preemptive, traits.size_knowledge, traits.migrates) == (None, None, None)
    assert not traits.batch_runnable
    with pytest.raises(ValueError, match="size_knowledge"):
        Traits(size_knowledge="some")
    with pytest.raises(ValueError, match="policy 'y': size_knowledge"):  # the flat keywords
        Policy(
            name="y",
            family="pooled",
            title="y",
            paper="notes",
            section="",
            summary="",
            state=PolicyState("y_traits", []),
            init=lambda *a: None,
            runner=None,
            size_knowledge="some",
        )


def test_a_trait_of_settings_without_a_default_is_unknown():
    class Required(PolicyConfig):
        level: int

    p = Policy(
        name="z",
        family="pooled",
        about=About(title="z", paper="notes", section="", summary=""),
        kernels=Kernels(
            state=PolicyState("z_traits", []), init=lambda *a: None, runner=None, config=Required
        ),
        traits=Traits(preemptive=False, size_knowledge=lambda c: "exact" if c.level else "none"),
    )
    assert p.traits_at().size_knowledge is None and p.traits_at().preemptive is False
    assert p.traits_at(Required(level=1)).size_knowledge == "exact"


def test_schedlab_policies_shows_the_traits():
    rows = json.loads(runner.invoke(app, ["policies", "--format", "json"]).stdout)
    at = {r["name"]: r for r in rows}
    assert at["sjbf"]["preemptive"] is False and at["sjbf"]["size_knowledge"] == "estimate"
    assert at["srpt-1"]["preemptive"] is True and at["srpt-1"]["size_knowledge"] == "exact"
    assert at["dra"]["migrates"] is True
    table = runner.invoke(app, ["policies"], env={"COLUMNS": "100"}).stdout
    assert "preempts" in table and "sizes" in table and "migrates" in table
    header = policies_markdown().splitlines()[0]
    assert "| preempts | sizes | migrates |" in header


def _rows(means: dict[str, float]) -> list[dict]:
    return [
        {"workload.load": 0.7, "policy": p, "mean_response_time": m * (1 + e), "stable": True}
        for p, m in means.items()
        for e in (-0.01, 0.01)
    ]


def test_ranking_puts_idealized_policies_apart():
    rows = _rows({"fcfs": 30.0, "easy-backfill": 20.0, "first-fit-srpt": 10.0, "srpt-1": 5.0})
    ranked = rank(rows, idealized=frozenset({"first-fit-srpt", "srpt-1"}))
    assert [(r.policy, r.rank, r.group) for r in ranked] == [
        ("easy-backfill", 1, ""),
        ("fcfs", 2, ""),
        ("first-fit-srpt", 1, IDEALIZED),
        ("srpt-1", 0, IDEALIZED),  # a resource-pooled bound is never ranked
    ]
    ideal = next(r for r in ranked if r.policy == "first-fit-srpt")
    assert ideal.ratio_to_best == pytest.approx(0.5)  # against the best choice, EASY
    lines = summary(ranked, [], "fcfs")
    assert lines[0].startswith("at load 0.7, EASY backfilling has the least E[T]")
    assert IDEALIZED in lines[1] and "0.5x the best choice" in lines[1]
    together = rank(rows)
    assert next(r for r in together if r.rank == 1).policy == "first-fit-srpt"
    assert all(not r.group for r in together)


def test_plan_on_a_trace_marks_what_a_batch_cluster_cannot_run(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,duration,need,estimate\n0,5,1,6\n1,3,2,4\n2,4,1,\n3,1,2,2\n")
    base = {
        "cluster": {"servers": 4},
        "workload": {"arrivals": {"process": "trace", "path": str(trace)}},
        "run": {"allow_unstable": True, "warmup": 0.0},
    }
    only = ["fcfs", "easy-backfill", "sjbf", "first-fit-srpt", "easy-backfill-exact", "srpt-1"]
    p = plan("t", base, "pooled", [0.5], only)
    assert sorted(p.idealized) == ["easy-backfill-exact", "first-fit-srpt", "srpt-1"]
    # said once: one job of four has no requested time
    (note,) = p.warnings
    assert note.startswith("1 of the trace's 4 jobs have no requested time: easy-backfill, sjbf")
    assert plan("t", base, "pooled", [0.5], only, all_policies=True).idealized == []
    synthetic, _, _ = workload_base(QUICKSTART, servers=None, arrivals=100, seed=1)
    assert plan("s", synthetic, "pooled", [0.5], only).idealized == []
