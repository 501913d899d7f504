"""`schedlab compare`: every applicable policy on a workload, the bounds that apply, ranked."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from schedlab.analysis.saturated import fcfs_saturated
from schedlab.cli import app
from schedlab.errors import SchedlabError
from schedlab.experiments.compare import default_family, parse_loads, plan, workload_base
from tests.helpers.paths import ROOT
from tests.helpers.paths import SHARED_DATA as DATA

runner = CliRunner()
QUICKSTART = ROOT / "src" / "schedlab" / "examples" / "quickstart.toml"
KTH = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def test_load_ranges_and_lists():
    assert parse_loads("0.5:0.95:0.05") == [round(0.5 + 0.05 * i, 10) for i in range(10)]
    assert parse_loads("0.9,0.5") == [0.5, 0.9]
    for bad in ("0.5:0.9", "a,b", "0.9:0.5:0.1", "0,0.5"):
        with pytest.raises(SchedlabError, match="--loads"):
            parse_loads(bad)


def test_plan_takes_the_familys_policies_that_accept_the_model_and_the_bounds_that_apply():
    base, stem, named = workload_base(QUICKSTART, servers=None, arrivals=1000, seed=1)
    assert named == "server-filling" and default_family(base, named) == "pooled"
    p = plan(f"compare-{stem}", base, "pooled", [0.5, 0.8])
    assert {"fcfs", "server-filling-srpt", "srpt-1", "max-weight"} <= set(p.policies)
    refused = {s.policy: s.reason for s in p.skipped}
    assert "elastic-first" in refused and "elastic" in refused["elastic-first"]
    names = {b.name for b in p.bounds}
    assert names == {"SRPT-1, M/G/1-SRPT formula", "Theorem 4.1 bound on ServerFilling-SRPT"}
    srpt1 = next(b for b in p.bounds if b.name.startswith("SRPT-1")).values
    upper = next(b for b in p.bounds if b.name.startswith("Theorem")).values
    assert all(0 < srpt1[x] < upper[x] for x in (0.5, 0.8)) and srpt1[0.5] < srpt1[0.8]
    (limit,) = p.limits
    exact = fcfs_saturated(8, [1, 2, 4, 8], [0.25] * 4, [1.0, 2.0, 4.0, 8.0]).load_limit
    assert limit.name == "FCFS" and limit.load == pytest.approx(exact)


def test_compare_ranks_policies_and_marks_fcfs_unstable_above_its_limit(tmp_path):
    out = tmp_path / "cmp"
    args = ["compare", str(QUICKSTART), "--loads", "0.3,0.7", "--arrivals", "6000"]
    args += ["--replications", "2", "--workers", "1", "--out", str(out), "--format", "json"]
    for policy in ("fcfs", "server-filling-srpt", "srpt-1"):
        args += ["--policy", policy]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    at = {(r["load"], r["policy"]): r for r in rows}
    # FCFS's exact limit here is 0.4596 (saturated system): stable at 0.3, not at 0.7
    assert at[(0.3, "fcfs")]["stable"] and not at[(0.7, "fcfs")]["stable"]
    assert at[(0.7, "fcfs")]["mean_response_time"] is None  # an unstable point has no mean
    assert at[(0.7, "server-filling-srpt")]["rank"] == 1
    assert at[(0.3, "srpt-1")]["bound"] and at[(0.3, "srpt-1")]["rank"] == 0
    record = json.loads((out / "experiment.json").read_text())
    assert record["kind"] == "compare" and record["axes"] == ["policy", "workload.load"]
    assert any(
        s.startswith("FCFS: stable up to load 0.3, unstable from load 0.7")
        for s in record["summary"]
    )
    assert any("least E[T]" in s for s in record["summary"])
    for figure in record["figures"]:
        assert (out / figure).exists() and (out / figure).with_suffix(".svg").exists()
    page = (out / "report.html").read_text()
    assert "ServerFilling-SRPT" in page and str(out) not in page.split("<body>")[1][:300]


def test_compare_refuses_a_family_without_applicable_policies(tmp_path):
    result = runner.invoke(
        app, ["compare", str(QUICKSTART), "--family", "packing", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert "accepts this workload" in result.output or "family" in result.output


@pytest.mark.skipif(
    not KTH.exists(), reason="the shared data folder is not available (SCHEDLAB_DATA)"
)
def test_compare_on_a_canonical_trace_table(tmp_path):
    from schedlab.workloads.traces import Transforms, convert

    table = tmp_path / "kth.parquet"
    convert(KTH, "swf", table, transforms=Transforms(window_jobs=(0, 1500)))
    out = tmp_path / "cmp"
    args = ["compare", str(table), "--loads", "0.5", "--replications", "1", "--workers", "1"]
    args += ["--policy", "fcfs", "--policy", "easy-backfill", "--policy", "first-fit-srpt"]
    args += ["--out", str(out), "--format", "csv"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    header = lines.index(next(x for x in lines if x.startswith("load,rank,policy")))
    rows = list(csv.DictReader(lines[header:]))
    log = "the log itself"  # an SWF log: its own row, never ranked
    assert {r["policy"] for r in rows} == {"fcfs", "easy-backfill", "first-fit-srpt", log}
    assert next(r for r in rows if r["policy"] == log)["rank"] == ""
    rows = [r for r in rows if r["policy"] != log]
    # a trace: FirstFitSRPT preempts and needs exact sizes, so it is ranked apart
    group = {r["policy"]: r["group"] for r in rows}
    assert group == {
        "fcfs": "",
        "easy-backfill": "",
        "first-fit-srpt": "bounds and idealized policies",
    }
    assert next(r for r in rows if r["rank"] == "1" and not r["group"])["policy"] != "fcfs"
    sizes = {r["policy"]: (r["preemptive"], r["size_knowledge"]) for r in rows}
    assert sizes["easy-backfill"] == ("False", "estimate")
    assert sizes["first-fit-srpt"] == ("True", "exact")
    record = json.loads((out / "experiment.json").read_text())
    assert any("no analytic bound" in n for n in record["notes"])
    assert any("ranked apart as bounds and idealized policies" in n for n in record["notes"])


PACKING = """
[cluster]
servers = 3
[workload]
load = 0.5
[[workload.classes]]
demand = 0.6
duration = {{ dist = "exponential", mean = 1.0 }}
[policy]
name = "{policy}"
[run]
arrivals = 1000
"""


def test_packing_load_limit_is_the_capacity_lp(tmp_path):
    """Jobs of size 0.6 on unit servers: one fits per server, so no policy is stable above the
    engine's load 0.6 (rho* = L jobs in service at most; load = rho* E[R] / L)."""
    spec = tmp_path / "packing.toml"
    spec.write_text(PACKING.format(policy="bf-js"))
    base, stem, named = workload_base(spec, servers=None, arrivals=None, seed=1)
    family = default_family(base, named)
    assert family == "packing"
    p = plan(stem, base, family, [0.5])
    assert "bf-js" in p.policies and "fcfs" in p.policies
    (limit,) = p.limits
    assert limit.name == "capacity LP" and limit.load == pytest.approx(0.6)
