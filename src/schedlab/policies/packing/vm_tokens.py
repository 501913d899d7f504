"""G16: randomized sampling with tokens (Ghaderi, "Randomized algorithms for scheduling VMs in the
cloud", INFOCOM 2016), the baseline of psychas2018 §1.1 and §7.

As psychas2018 §1.1 describes it: "each queue samples the servers at random and places a token in
the server if it can fit a job in the sampled server. Token acts as place holder for a future job
arrival and reserves resources for future job of that type for some time duration. When a job
arrives, it is placed in a token of that type, if there is any, otherwise it is queued. The
sampling rate used by a queue depends on its size, i.e, as a queue builds up, it samples the
servers faster."

The INFOCOM 2016 text itself could not be retrieved in this environment (only its abstract), so
the quantities it defines are parameters with choices marked CHOSEN:

* sampling: queue j samples one server uniformly at random at the events of a Poisson process of
  rate ``alpha * (1 + Q_j)`` per unit of time (CHOSEN: alpha = 1, i.e. one sample per mean
  service time per waiting VM in §7's specs, whose mean service time is 1 — a trace in seconds
  passes alpha = 1 / its mean duration, see psychas2018-fig8). ``alpha (1 + Q_j)`` is
  ``alpha e^{f(Q_j)}`` with f(x) = log(1 + x) (``f="log"``, the default); the abstract asks only
  that the sampling rate grow with the queue, and the Glauber-dynamics proofs of such randomized
  schedulers take a slower f, so ``f="loglog"`` gives f(x) = log log(e + x), a rate
  ``alpha log(e + Q_j)`` (docs/vm-scheduling.md compares the two on psychas2018 Fig. 4);
* token placement: if a type-j VM fits in the sampled server's capacity left by its VMs and
  tokens, the head of queue j starts there when Q_j > 0, else a type-j token is placed there;
* token expiry: an unused token is removed after an exponential time of mean ``token_life``
  times the mean service time of its type (CHOSEN: token_life = 1, i.e. the token lives as long
  as the VM it stands for would);
* an arriving type-j job takes a type-j token if one exists (the server with the lowest index
  holding one; CHOSEN), else it waits.

Sampling and expiry events form a continuous-time Markov chain whose rates change only at events;
the policy draws the time of its next event from the total rate at every decision epoch (exact by
memorylessness) and asks the engine for a wake-up then (``wake_at``). The draws come from the
policy's own random stream (schedlab.streams, stream "policy"), seeded once per replication.
``samples`` counts sampling events (psychas2018 §7.2 counts them among G16's events).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from schedlab.policies.packing.type_queues import QUEUE_FIELDS, queue_pop, queue_push
from schedlab.policies.packing.vm_stalling import check_vm_model, vm_types
from schedlab.policy_api import (
    About,
    Hooks,
    Kernels,
    Policy,
    PolicyConfig,
    PolicyContext,
    PolicyState,
    StateField,
    Traits,
    engine_sizes,
    kernel,
    n_arrived_new,
    now,
    register,
    run_engine,
    start,
    wake_at,
)


class TokensConfig(PolicyConfig):
    """G16 settings (psychas2018 §1.1 [11]); both values CHOSEN (see the module docstring)."""

    alpha: Annotated[float, Field(gt=0)] = 1.0
    token_life: Annotated[float, Field(gt=0)] = 1.0
    f: Literal["log", "loglog"] = "log"  # sampling rate alpha e^{f(Q)}: 1 + Q or log(e + Q)


STATE = PolicyState(
    "vm_tokens",
    [
        StateField("alpha", "f8"),
        StateField("loglog", "b1"),
        StateField("seed", "i8"),
        StateField("started", "b1"),
        StateField("t_next", "f8"),
        StateField("samples", "i8"),
        StateField("tokens_placed", "i8"),
        StateField("tokens_used", "i8"),
        StateField("w", "f8", ("classes", "resources")),
        StateField("expiry_rate", "f8", "classes"),
        StateField("tokens", "i8", ("servers", "classes")),
        StateField("token_used", "f8", ("servers", "resources")),
        StateField("n_tokens", "i8", "classes"),
        *QUEUE_FIELDS,
    ],
)


def init(st, context: PolicyContext, config: TokensConfig):
    means = np.array([c.duration.mean for c in context.classes], dtype=float)
    seed = int(context.random_stream().integers(0, 2**62))
    return STATE.allocate(
        engine_sizes(st),
        {
            "alpha": config.alpha,
            "loglog": config.f == "loglog",
            "seed": seed,
            "t_next": np.inf,
            "w": vm_types(context),
            "expiry_rate": 1.0 / (config.token_life * means),
        },
    )


@kernel(wraparound=False)
def _fits(st, ps, s, c):
    for r in range(ps.w.shape[1]):
        left = st.capacity[s, r] - st.used[s, r] - ps.token_used[s, r]
        if ps.w[c, r] > left + 1e-9 * st.capacity[s, r]:
            return False
    return True


@kernel(wraparound=False)
def _remove_token(ps, s, c):
    ps.tokens[s, c] -= 1
    ps.n_tokens[c] -= 1
    for r in range(ps.w.shape[1]):
        ps.token_used[s, r] -= ps.w[c, r]


@kernel(wraparound=False)
def _sample_rate(ps, q):
    """Queue q's sampling rate alpha e^{f(q)}: alpha (1 + q), or alpha log(e + q) (f = loglog)."""
    return ps.alpha * (np.log(np.e + q) if ps.loglog else 1.0 + q)


@kernel(wraparound=False)
def _rates(st, ps):
    sample = 0.0
    expire = 0.0
    for c in range(ps.w.shape[0]):
        sample += _sample_rate(ps, st.class_in_queue[c])
        expire += ps.n_tokens[c] * ps.expiry_rate[c]
    return sample, expire


@kernel(wraparound=False)
def _random_event(st, ps):
    """One sampling or token-expiry event, chosen in proportion to the current rates."""
    sample, expire = _rates(st, ps)
    u = np.random.random() * (sample + expire)
    L = st.capacity.shape[0]
    if u < sample:
        ps.samples += 1
        c = 0
        acc = _sample_rate(ps, st.class_in_queue[0])
        while acc < u and c < ps.w.shape[0] - 1:
            c += 1
            acc += _sample_rate(ps, st.class_in_queue[c])
        s = np.random.randint(0, L)
        if _fits(st, ps, s, c):
            if ps.q_head[c] != -1:
                start(st, queue_pop(ps.q_head, ps.q_tail, ps.q_next, c), s, 1.0)
            else:
                ps.tokens[s, c] += 1
                ps.n_tokens[c] += 1
                ps.tokens_placed += 1
                for r in range(ps.w.shape[1]):
                    ps.token_used[s, r] += ps.w[c, r]
        return
    u -= sample
    c = 0
    acc = ps.n_tokens[0] * ps.expiry_rate[0]
    while acc < u and c < ps.w.shape[0] - 1:
        c += 1
        acc += ps.n_tokens[c] * ps.expiry_rate[c]
    if ps.n_tokens[c] == 0:
        return
    k = np.random.randint(0, ps.n_tokens[c])  # a token of type c, uniformly
    for s in range(L):
        if k < ps.tokens[s, c]:
            _remove_token(ps, s, c)
            return
        k -= ps.tokens[s, c]


@kernel(wraparound=False)
def decide(st, ps):
    t_now = now(st)
    if not ps.started:
        ps.started = True
        np.random.seed(ps.seed)
    for i in range(n_arrived_new(st)):
        j = st.arrived_buf[i]
        queue_push(ps.q_head, ps.q_tail, ps.q_next, st.job_class[j], j)
    for c in range(ps.w.shape[0]):  # arrivals take tokens of their type
        s = 0
        while ps.n_tokens[c] > 0 and ps.q_head[c] != -1:
            while ps.tokens[s, c] == 0:
                s += 1
            _remove_token(ps, s, c)
            ps.tokens_used += 1
            start(st, queue_pop(ps.q_head, ps.q_tail, ps.q_next, c), s, 1.0)
    if t_now >= ps.t_next:
        _random_event(st, ps)
    sample, expire = _rates(st, ps)
    ps.t_next = t_now + np.random.exponential(1.0 / (sample + expire))
    wake_at(st, ps.t_next)


@kernel(wraparound=False)
def run(st, ps, max_events):
    return run_engine(st, ps, decide, max_events)


def report(ps, st) -> dict[str, float]:
    """G16's own counters: sampling events, tokens placed and tokens taken by arrivals."""
    return {
        "samples": int(ps.samples),
        "tokens_placed": int(ps.tokens_placed),
        "tokens_used": int(ps.tokens_used),
    }


register(
    Policy(
        name="g16",
        family="packing",
        about=About(
            title="G16 (randomized sampling with tokens)",
            paper_label="G16",
            paper="psychas2018",
            section="§1.1, §7 (baseline [11], Ghaderi INFOCOM 2016)",
            summary="queues sample random servers at a queue-dependent rate and place tokens",
        ),
        kernels=Kernels(state=STATE, init=init, runner=run, config=TokensConfig),
        traits=Traits(preemptive=False, size_knowledge="none", migrates=False),
        hooks=Hooks(
            check=lambda context, _config: check_vm_model(context),
            report=report,
            replayable=False,  # draws from Numba's global generator, seeded at its first decision
        ),
    )
)
