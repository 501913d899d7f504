"""The incremental BF-J, BF-S, BF-J/S and VQS-BF equal the paper's literal full-scan definitions.

paper 000 §IV-A runs BF-J over all waiting jobs and BF-S over all servers in every slot; §VI runs
steps (i)-(iii) on every server in every slot. The compiled policies touch only servers with
departures and new arrivals (see best_fit.py and vqs.py). Here a plain-Python event loop that
mirrors the engine's decision epochs runs the literal definitions on the same jobs, and every job
must get the same start time and server. Random instances from hypothesis: one or two resources,
homogeneous or heterogeneous servers, slotted or continuous time (with or without a decision grid),
geometric/fixed/exponential durations, discrete or uniform sizes, with and without stalling.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.optim.configurations import reduced_compact, universal_partition
from schedlab.policies.packing.vqs import j_for_min_size

ENGINE_EPS = 1e-9


class Reference:
    """Engine-equivalent event loop; ``decide(self)`` is the literal policy definition."""

    def __init__(self, arrival, demand, work, capacity, delta, decide):
        self.arrival = arrival
        self.demand = demand  # (N, R)
        self.work = work
        self.capacity = capacity  # (L, R)
        self.delta = delta
        self.decide = decide
        n, (n_srv, n_res) = len(arrival), capacity.shape
        self.eps = ENGINE_EPS * max(1.0, float(capacity.max()))
        self.used = np.zeros((n_srv, n_res))
        self.n_on = np.zeros(n_srv, dtype=int)
        self.stalled = np.zeros(n_srv, dtype=bool)
        self.start = np.full(n, np.nan)
        self.server = np.full(n, -1)
        self.finish = np.full(n, np.inf)
        self.queue: list[int] = []
        self.new: list[int] = []
        self.dirty: set[int] = set()
        self.state: dict = {}

    def fits(self, j, s):
        if self.stalled[s]:
            return False
        return all(
            self.used[s, r] + self.demand[j, r] <= self.capacity[s, r] + self.eps
            for r in range(self.capacity.shape[1])
        )

    def place(self, j, s, now):
        for r in range(self.capacity.shape[1]):
            self.used[s, r] += 1.0 * self.demand[j, r]
        self.n_on[s] += 1
        self.start[j] = now
        self.server[j] = s
        self.finish[j] = now + self.work[j] / 1.0
        self.queue.remove(j)

    def run(self):
        n = len(self.arrival)
        a = 0
        now = 0.0
        next_decision = math.inf
        while True:
            running = [
                j
                for j in range(n)
                if not math.isnan(self.start[j])
                and self.finish[j] < math.inf
                and self.finish[j] > -1
            ]
            t_dep = min((self.finish[j] for j in running if not self.done(j)), default=math.inf)
            t_arr = self.arrival[a] if a < n else math.inf
            t = min(t_arr, t_dep, next_decision)
            if t == math.inf:
                break
            now = t
            event = False
            for j in sorted(
                (j for j in running if not self.done(j) and self.finish[j] <= t),
                key=lambda j: (self.finish[j], j),
            ):
                s = self.server[j]
                for r in range(self.capacity.shape[1]):
                    self.used[s, r] += -1.0 * self.demand[j, r]
                self.n_on[s] -= 1
                if self.n_on[s] == 0:
                    self.used[s, :] = 0.0
                self.state.setdefault("done", set()).add(j)
                self.dirty.add(s)
                self.on_complete(j, s)
                event = True
            while a < n and self.arrival[a] <= t:
                self.queue.append(a)
                self.new.append(a)
                a += 1
                event = True
            if event:
                if self.delta <= 0:
                    td = t
                else:
                    td = math.ceil(t / self.delta) * self.delta
                    if td < t:
                        td += self.delta
                next_decision = min(next_decision, td)
            if next_decision <= t:
                next_decision = math.inf
                self.decide(self, now)
                self.new = []
                self.dirty = set()
        return self

    def done(self, j):
        return j in self.state.get("done", set())

    def on_complete(self, j, s):
        hook = self.state.get("on_complete")
        if hook:
            hook(self, j, s)


# ------------------------------------------------------------------------------ best fit


def scalar(ref, mapped):
    """Scalar sizes/capacities as best_fit.scalar_sizes, and the policy's fit tolerance."""
    if ref.capacity.shape[1] == 1:
        return ref.demand[:, 0], ref.capacity[:, 0], 0.5 * ref.eps
    top = ref.capacity.max(axis=0)
    return (ref.demand / top).max(axis=1), (ref.capacity / top).min(axis=1), 0.25e-9


def bf_decide(mode, dot, stalling, max_stalled):
    def decide(ref, now):
        L = ref.capacity.shape[0]
        if "u" not in ref.state:
            ref.state["u"] = np.zeros(L)
            ref.state["n_stalled"] = 0
        x, cap, eps = scalar(ref, not dot)
        u = ref.state["u"]

        def fits(j, s):
            if dot:
                return ref.fits(j, s)
            return not ref.stalled[s] and x[j] <= max(cap[s] - u[s], 0.0) + eps

        def score(j, s):
            sc = 0.0
            for r in range(ref.capacity.shape[1]):
                c, d = ref.capacity[s, r], ref.demand[j, r]
                sc += (d / c) * ((ref.used[s, r] + d) / c)
            return sc

        def put(j, s):
            ref.place(j, s, now)
            u[s] += x[j]

        def bf_s(s):
            while True:
                cands = [j for j in ref.queue if fits(j, s)]
                if not cands:
                    return
                if dot:
                    j = max(cands, key=lambda j: (score(j, s), -j))
                else:
                    j = max(cands, key=lambda j: (x[j], -j))
                put(j, s)

        def bf_j(j):
            cands = [s for s in range(L) if fits(j, s)]
            if cands:
                if dot:
                    s = max(cands, key=lambda s: (score(j, s), -s))
                else:
                    s = min(cands, key=lambda s: (max(cap[s] - u[s], 0.0), s))
                put(j, s)

        for s in sorted(ref.dirty):
            if ref.stalled[s] and ref.n_on[s] == 0:
                ref.stalled[s] = False
                ref.state["n_stalled"] -= 1
        if mode == "bf-js":
            for s in sorted(ref.dirty):
                bf_s(s)
            for j in list(ref.new):
                if j in ref.queue:
                    bf_j(j)
        elif mode == "bf-j":
            for j in list(ref.queue):
                bf_j(j)
        else:
            for s in range(L):
                bf_s(s)
        if stalling:
            for s in sorted(ref.dirty):
                if ref.stalled[s] or ref.n_on[s] == 0:
                    continue
                if ref.state["n_stalled"] + 1 > max_stalled:
                    break
                if dot:
                    half = all(
                        ref.used[s, r] < 0.5 * ref.capacity[s, r]
                        for r in range(ref.capacity.shape[1])
                    )
                    waiting = any(
                        all(ref.demand[j] <= ref.capacity[s] + ref.eps) for j in ref.queue
                    )
                else:
                    half = u[s] < 0.5 * cap[s]
                    waiting = any(x[j] <= cap[s] + eps for j in ref.queue)
                if half and waiting:
                    ref.stalled[s] = True
                    ref.state["n_stalled"] += 1

    def on_complete(ref, j, s):
        if "u" in ref.state and not dot:
            x, _, _ = scalar(ref, True)
            ref.state["u"][s] -= x[j]
            if ref.n_on[s] == 0:
                ref.state["u"][s] = 0.0

    return decide, on_complete


# ---------------------------------------------------------------------------------- VQS-BF


def vqs_bf_decide(J, stalling, beta, max_stalled):
    def decide(ref, now):
        L = ref.capacity.shape[0]
        x, cap, eps = scalar(ref, True)
        top = cap.max()
        if "conf" not in ref.state:
            ref.state.update(conf=[None] * L, u=np.zeros(L), n_stalled=0)
        u = ref.state["u"]
        part = universal_partition(J)
        lo = top * part.lower
        lo[-1] = 0.0
        typ = np.full(len(x), 2 * J - 1)
        assigned = np.zeros(len(x), dtype=bool)
        for t in range(2 * J - 1):
            hit = ~assigned & (x > lo[t])
            typ[hit] = t
            assigned |= hit
        cls = np.rint(np.log2(top / cap)).astype(int)

        def configs(a):
            return [(k.k1, 2 * a + 1, k.main + 2 * a, k.count) for k in reduced_compact(J - a)]

        def q():
            out = np.zeros(2 * J, dtype=int)
            for j in ref.queue:
                out[typ[j]] += 1
            return out

        def weight(c, qq):
            return c[0] * qq[c[1]] + c[3] * qq[c[2]]

        def fits(j, s):
            return not ref.stalled[s] and x[j] <= max(cap[s] - u[s], 0.0) + eps

        def put(j, s):
            ref.place(j, s, now)
            u[s] += x[j]

        def count(s, t):
            return sum(
                1 for j in range(len(x)) if ref.server[j] == s and not ref.done(j) and typ[j] == t
            )

        for s in sorted(ref.dirty):
            if ref.stalled[s] and ref.n_on[s] == 0:
                ref.stalled[s] = False
                ref.state["n_stalled"] -= 1
        for s in range(L):
            if ref.stalled[s]:
                continue
            qq = q()
            if ref.n_on[s] > 0 and s in ref.dirty and stalling:
                best = max(weight(c, qq) for c in configs(cls[s]))
                if (
                    ref.state["n_stalled"] + 1 <= max_stalled
                    and weight(ref.state["conf"][s], qq) < beta * best
                ):
                    ref.stalled[s] = True
                    ref.state["n_stalled"] += 1
                    continue
            if ref.n_on[s] == 0:
                cs = configs(cls[s])
                ws = [weight(c, qq) for c in cs]
                ref.state["conf"][s] = cs[int(np.argmax(ws))]
            k1, t1, jm, km = ref.state["conf"][s]
            if k1 == 1 and count(s, t1) < 1:
                cands = [j for j in ref.queue if typ[j] == t1 and fits(j, s)]
                if cands:
                    put(max(cands, key=lambda j: (x[j], -j)), s)
            while count(s, jm) < km:
                cands = [j for j in ref.queue if typ[j] == jm and fits(j, s)]
                if not cands:
                    break
                put(max(cands, key=lambda j: (x[j], -j)), s)
            while True:
                cands = [j for j in ref.queue if fits(j, s)]
                if not cands:
                    break
                put(max(cands, key=lambda j: (x[j], -j)), s)

    def on_complete(ref, j, s):
        x, _, _ = scalar(ref, True)
        ref.state["u"][s] -= x[j]
        if ref.n_on[s] == 0:
            ref.state["u"][s] = 0.0

    return decide, on_complete


# ------------------------------------------------------------------------------ instances


@st.composite
def instances(draw, heterogeneous_pow2: bool = False):
    slotted = draw(st.booleans())
    named = draw(st.booleans())
    n_pools = draw(st.integers(1, 2))
    pools = []
    for i in range(n_pools):
        count = draw(st.integers(1, 3))
        scale = (
            1.0
            if i == 0
            else draw(st.sampled_from([0.5, 2.0] if heterogeneous_pow2 else [0.5, 0.75, 2.0]))
        )
        pools.append({"count": count, "capacity": {"cpu": scale, "mem": scale} if named else scale})
    small = min(p["capacity"]["cpu"] if named else p["capacity"] for p in pools)
    if draw(st.booleans()):
        values = draw(
            st.lists(
                st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6]),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        size = {"dist": "discrete", "values": [v * small for v in values]}
    else:
        lo = draw(st.floats(0.01, 0.5))
        size = {"dist": "uniform", "low": lo * small, "high": draw(st.floats(lo, 1.0)) * small}
    demand = (
        {
            "cpu": size,
            "mem": {
                "dist": "uniform",
                "low": 0.01 * small,
                "high": draw(st.floats(0.02, 1.0)) * small,
            },
        }
        if named
        else size
    )
    if slotted:
        duration = draw(
            st.sampled_from(
                [
                    {"dist": "geometric", "mean": 4},
                    {"dist": "fixed", "value": 3},
                    {"dist": "geometric", "mean": 10},
                ]
            )
        )
        model = {"time": "slotted"}
    else:
        duration = {"dist": "exponential", "mean": draw(st.floats(0.5, 3.0))}
        model = {"decision_interval": draw(st.sampled_from([0.0, 0.5]))}
    return {
        "cluster": {"pools": pools},
        "workload": {
            "load": draw(st.floats(0.3, 0.97)),
            "classes": [{"demand": demand, "duration": duration}],
        },
        "model": model,
        "run": {
            "arrivals": draw(st.integers(5, 120)),
            "seed": draw(st.integers(0, 10**6)),
            "jobs": True,
            "batches": 4,
            "timeseries": 4,
        },
    }


def jobs_arrays(result):
    jobs = result.jobs.to_pydict()
    demand = np.column_stack([np.array(jobs[c]) for c in jobs if c.startswith("demand[")])
    return (
        np.array(jobs["arrival"]),
        demand,
        np.array(jobs["work"]),
        np.array(jobs["start"], dtype=float),
        np.array(jobs["server"]),
    )


def capacity_matrix(spec, n_res):
    rows = []
    for p in spec["cluster"]["pools"]:
        cap = p["capacity"]
        row = [cap["cpu"], cap["mem"]] if isinstance(cap, dict) else [cap]
        rows += [row] * p["count"]
    return np.array(rows, dtype=float).reshape(-1, n_res)


def compare(spec, decide_and_hook):
    result = schedlab.simulate(spec)
    arrival, demand, work, start, server = jobs_arrays(result)
    capacity = capacity_matrix(spec, demand.shape[1])
    delta = 1.0 if spec["model"].get("time") == "slotted" else spec["model"]["decision_interval"]
    decide, hook = decide_and_hook
    ref = Reference(arrival, demand, work, capacity, delta, decide)
    ref.state["on_complete"] = hook
    ref.run()
    np.testing.assert_array_equal(ref.start, start)
    np.testing.assert_array_equal(ref.server, server)
    return result


REF = settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)


@REF
@given(
    instances(),
    st.sampled_from(["bf-js", "bf-j", "bf-s"]),
    st.sampled_from(["dot", "max"]),
    st.booleans(),
    st.sampled_from([1.0, 0.5]),
)
def test_best_fit_equals_full_scan_definition(spec, mode, multi, stalling, frac):
    spec["policy"] = {
        "name": mode,
        "multi_resource": multi,
        "stalling": stalling,
        "max_stalled_fraction": frac,
    }
    n_srv = sum(p["count"] for p in spec["cluster"]["pools"])
    named = isinstance(spec["cluster"]["pools"][0]["capacity"], dict)
    compare(
        spec, bf_decide(mode, named and multi == "dot", stalling, math.floor(frac * n_srv + 1e-9))
    )


@REF
@given(instances(heterogeneous_pow2=True), st.booleans(), st.sampled_from([1.0, 0.5]))
def test_vqs_bf_equals_full_sweep_definition(spec, stalling, frac):
    spec["policy"] = {
        "name": "vqs-bf",
        "J": 4,
        "stalling": stalling,
        "stall_beta": 0.8,
        "max_stalled_fraction": frac,
    }
    n_srv = sum(p["count"] for p in spec["cluster"]["pools"])
    compare(spec, vqs_bf_decide(4, stalling, 0.8, math.floor(frac * n_srv + 1e-9)))


def test_reference_detects_a_wrong_rule():
    """The comparison can fail: BF-S placements differ from BF-J's full scan on a crowded run."""
    spec = {
        "cluster": {"pools": [{"count": 3, "capacity": 1.0}]},
        "workload": {
            "load": 0.95,
            "classes": [
                {
                    "demand": {"dist": "uniform", "low": 0.05, "high": 0.7},
                    "duration": {"dist": "geometric", "mean": 5},
                }
            ],
        },
        "model": {"time": "slotted"},
        "policy": {"name": "bf-s"},
        "run": {"arrivals": 200, "seed": 3, "jobs": True, "batches": 4},
    }
    try:
        compare(spec, bf_decide("bf-j", False, False, 3))
    except AssertionError:
        return
    raise AssertionError("BF-S and BF-J gave identical placements; the reference test is too weak")


def test_j_for_min_size_covers_the_smallest_size():
    assert j_for_min_size(0.2, 1.0) == 3  # 1/8 <= 0.2 < 1/4
    assert j_for_min_size(0.01, 1.0) == 7
    assert j_for_min_size(2.0, 10.0) == 3
    assert j_for_min_size(0.5, 1.0) == 2
