"""Behaviour check for refactorings: every registered policy on a short fixed-seed run.

``record OUT.json`` saves, per case (policy, family, parameters), the events, every metric and a
SHA-1 of the per-job finish times and servers; ``check REF.json`` reruns the cases and reports any
difference (bit-for-bit: the same numbers for the same seeds); metrics added since the reference
was recorded are counted, not compared, and a metric that disappeared is a difference. Usage:

    PYTHONPATH=src python benchmarks/check_reference.py record /tmp/ref.json [--arrivals 20000]
    PYTHONPATH=src python benchmarks/check_reference.py check /tmp/ref.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

import numpy as np

import schedlab

POOLED = {
    "cluster": {"servers": 8},
    "workload": {
        "load": 0.85,
        "classes": [
            {"probability": 0.4, "need": 1, "duration": {"dist": "exponential", "mean": 1.0}},
            {"probability": 0.3, "need": 2, "duration": {"dist": "exponential", "mean": 2.0}},
            {"probability": 0.2, "need": 4, "duration": {"dist": "exponential", "mean": 1.0}},
            {"probability": 0.1, "need": 8, "duration": {"dist": "exponential", "mean": 0.5}},
        ],
    },
}
POOLED_HYPER = {
    "cluster": {"servers": 8},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "probability": 0.6,
                "need": 1,
                "duration": {"dist": "hyperexponential", "mean": 1.0, "scv": 8.0},
            },
            {"probability": 0.4, "need": 4, "duration": {"dist": "exponential", "mean": 1.0}},
        ],
    },
}
ELASTIC = {
    "cluster": {"servers": 4},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "name": "i",
                "probability": 0.5,
                "speedup": "inelastic",
                "duration": {"dist": "exponential", "mean": 1.0},
            },
            {
                "name": "e",
                "probability": 0.5,
                "speedup": "elastic",
                "duration": {"dist": "exponential", "mean": 2.0},
            },
        ],
    },
}
PACKING = {
    "cluster": {"servers": 4, "capacity": 1.0},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "probability": 0.7,
                "demand": {"dist": "uniform", "low": 0.05, "high": 0.5},
                "duration": {"dist": "exponential", "mean": 1.0},
            },
            {
                "probability": 0.3,
                "demand": {"dist": "uniform", "low": 0.3, "high": 0.9},
                "duration": {"dist": "exponential", "mean": 1.0},
            },
        ],
    },
}
PACKING_SLOTTED = {
    **PACKING,
    "model": {"time": "slotted"},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "probability": 1.0,
                "demand": {"dist": "uniform", "low": 0.01, "high": 1.0},
                "duration": {"dist": "geometric", "mean": 10.0},
            },
        ],
    },
}
PACKING_2R = {
    "cluster": {"servers": 4, "capacity": {"cpu": 1.0, "mem": 1.0}},
    "workload": {
        "load": 0.7,
        "classes": [
            {
                "probability": 1.0,
                "demand": {
                    "cpu": {"dist": "uniform", "low": 0.05, "high": 0.6},
                    "mem": {"dist": "uniform", "low": 0.05, "high": 0.6},
                },
                "duration": {"dist": "exponential", "mean": 1.0},
            },
        ],
    },
}
LOSS = {**PACKING, "model": {"family": "loss"}, "workload": {**PACKING["workload"], "load": 1.5}}
VM = {  # VM types: fixed resource vectors (psychas2018, psychas2019)
    "cluster": {"servers": 4, "capacity": {"cpu": 1.0, "mem": 1.0}},
    "workload": {
        "load": 0.8,
        "classes": [
            {
                "probability": 0.6,
                "demand": {"cpu": 0.25, "mem": 0.125},
                "duration": {"dist": "exponential", "mean": 1.0},
            },
            {
                "probability": 0.4,
                "demand": {"cpu": 0.5, "mem": 0.5},
                "duration": {"dist": "exponential", "mean": 1.0},
            },
        ],
    },
}
VM_LOSS = {**VM, "model": {"family": "loss"}, "workload": {**VM["workload"], "load": 1.5}}

# (policy, base spec, policy parameters)
CASES: list[tuple[str, dict, dict]] = [
    ("fifo-ff", PACKING, {}),
    ("fifo-ff", PACKING, {"blocking": False}),
    ("fifo-ff", PACKING_SLOTTED, {}),
    ("fifo-ff", PACKING_2R, {}),
    ("fcfs", POOLED, {}),
    ("first-fit", LOSS, {}),
    ("bf-j", PACKING, {}),
    ("bf-s", PACKING, {}),
    ("bf-js", PACKING, {}),
    ("bf-j", PACKING_SLOTTED, {}),
    ("bf-js", PACKING_SLOTTED, {"stalling": True}),
    ("bf-j", PACKING_2R, {}),
    ("vqs", PACKING_SLOTTED, {}),
    ("vqs-bf", PACKING_SLOTTED, {}),
    ("vqs", PACKING, {}),
    ("vqs-bf", PACKING, {"stalling": True}),
    ("server-filling", POOLED, {}),
    ("server-filling-srpt", POOLED, {}),
    ("server-filling-gittins", POOLED_HYPER, {}),
    ("server-filling-gittins", POOLED, {"sizes": "known"}),
    ("divisor-filling", POOLED, {}),
    ("divisor-filling", POOLED, {"fill_idle": False}),
    ("divisor-filling-srpt", POOLED, {}),
    ("divisor-filling-gittins", POOLED_HYPER, {}),
    ("first-fit-srpt", POOLED, {}),
    ("greedy-srpt", POOLED, {}),
    ("max-weight", POOLED, {}),
    ("most-servers-first", POOLED, {}),
    ("least-servers-first", POOLED, {}),
    ("preemptive-first-fit", POOLED, {}),
    ("srpt-1", POOLED, {}),
    ("gittins-1", POOLED_HYPER, {}),
    ("easy-backfill", POOLED, {}),
    ("easy-backfill", POOLED, {"durations": "actual"}),
    ("inelastic-first", ELASTIC, {}),
    ("elastic-first", ELASTIC, {}),
    ("class-priority", ELASTIC, {"order": ["e", "i"], "caps": {"e": 2.0}}),
]

BASE_BY_FAMILY = {"packing": PACKING, "loss": LOSS, "pooled": POOLED}
VM_POLICIES = {"dra": VM_LOSS, "dra-preemption": VM_LOSS, "g16": VM, "m14": VM, "vm-stalling": VM}


def family_of(base: dict) -> str:
    return base.get("model", {}).get("family") or (
        "packing" if "capacity" in base["cluster"] else "pooled"
    )


def registry_cases() -> list[tuple[str, str, dict, dict]]:
    """One case (policy, family, base spec, parameters) per registered policy and each of its
    families: the first of CASES in that family, else the family's (or VM policy's) base spec."""
    from schedlab.policies.registry import all_policies

    cases = []
    for policy in all_policies():
        for family in policy.families:
            base, params = next(
                ((b, p) for name, b, p in CASES if name == policy.name and family_of(b) == family),
                (VM_POLICIES.get(policy.name, BASE_BY_FAMILY[family]), {}),
            )
            model = {**base.get("model", {}), "family": family}
            cases.append((policy.name, family, {**base, "model": model}, params))
    return cases


def case_key(policy: str, base: dict, params: dict) -> str:
    return json.dumps({"policy": policy, "spec": base, "params": params}, sort_keys=True)


def run_case(policy: str, base: dict, params: dict, arrivals: int) -> dict[str, Any]:
    spec = json.loads(json.dumps(base))
    spec["policy"] = {"name": policy, **params}
    spec["run"] = {"arrivals": arrivals, "seed": 7, "jobs": True}
    result = schedlab.simulate(spec)
    jobs = result.jobs
    digest = hashlib.sha1()
    for column in ("start", "finish", "server", "status"):
        values = jobs.column(column).to_numpy(zero_copy_only=False)
        digest.update(
            np.asarray(values).astype(str).tobytes()
            if values.dtype == object
            else np.ascontiguousarray(values).tobytes()
        )
    return {
        "events": result.events,
        "metrics": {k: [v.mean, *v.ci95] for k, v in result.metrics.items()},
        "jobs_sha1": digest.hexdigest(),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["record", "check"])
    parser.add_argument("path")
    parser.add_argument("--arrivals", type=int, default=20_000)
    parser.add_argument("--only", nargs="*", help="check only these policies")
    args = parser.parse_args()
    if args.action == "record":
        out = {"arrivals": args.arrivals, "cases": {}}
        for policy, base, params in CASES:
            out["cases"][case_key(policy, base, params)] = run_case(
                policy, base, params, args.arrivals
            )
            print("recorded", policy, params, flush=True)
        with open(args.path, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
        return 0
    with open(args.path) as f:
        ref = json.load(f)
    bad = 0
    for policy, base, params in CASES:
        if args.only and policy not in args.only:
            continue
        key = case_key(policy, base, params)
        if key not in ref["cases"]:
            print("NEW  ", policy, params)
            continue
        got = json.loads(json.dumps(run_case(policy, base, params, ref["arrivals"])))
        want = ref["cases"][key]
        new = sorted(set(got["metrics"]) - set(want["metrics"]))  # added since the reference
        for name in new:
            del got["metrics"][name]
        same = got == want
        bad += not same
        extra = f" (+{len(new)} metrics new since the reference)" if new and same else ""
        print("SAME " if same else "DIFF ", policy, params, extra, flush=True)
    print(f"{bad} case(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
