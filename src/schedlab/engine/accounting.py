"""Each job's accounting: its metrics and its output row, recorded when it leaves (completes or is
lost), streamed into per-batch sums as the run goes on.

Nothing per job is kept after its slot is released: each leaving job adds to the sums of its batch
(``jacc``: count, response, waiting, slowdown, bounded slowdown; per class), to its batch's
quantile sketches (response time, waiting time and bounded slowdown, :mod:`schedlab.engine.sketch`;
unless the run opts out with ``run.quantiles = false``, decision 0019)
and, when the run asks for per-job output, one record to the output buffer that Python writes to
Parquet in chunks.

Measured jobs (after the warm-up): arrival sequence number >= floor(warmup * N) for a run of N
arrivals; arrival time >= warmup * H for a run of horizon H. Per-job batch b: consecutive arrival
sequence numbers job_edges[b] <= seq < job_edges[b + 1] (N arrivals), or arrival times in the b-th
time batch (horizon).
"""

from __future__ import annotations

from schedlab._jit import kernel
from schedlab.engine.constants import (
    A_COMPLETIONS,
    ARRIVAL_BATCH,
    BSLD_TAU,
    DONE,
    DONE_BATCH,
    J_ARRIVED,
    J_BSLD,
    J_C_ARRIVED,
    J_C_DONE,
    J_C_LOST,
    J_C_RESPONSE,
    J_DONE,
    J_FIRST_CLASS,
    J_LOST,
    J_PER_CLASS,
    J_RESPONSE,
    J_SLOWDOWN,
    J_WAITING,
    JOB_BATCH_BY_TIME,
    N_LEAVE,
    O_ARRIVAL,
    O_CLASS,
    O_FINISH,
    O_FIRST_DEMAND,
    O_SEQ,
    O_SERVER,
    O_START,
    O_STATUS,
    O_WORK,
    OUT_CHUNK,
    OUT_N,
    OVERFLOW,
    QUANTILES,
    T_END,
    T_WARM,
    WARM_JOBS,
)
from schedlab.engine.sketch import N_BUCKETS, bucket_of


@kernel(wraparound=False, inline="always")
def find_job_batch(st, j):
    """The per-job batch of the job in slot j, which has just arrived, or -1 before the
    measurement window: the last batch whose first edge is <= its key (np.searchsorted's right
    side), found by moving forward from the previous arrival's (keys never decrease)."""
    if st.ctr[JOB_BATCH_BY_TIME] != 0:
        key = st.arrival[j]
        if key < st.clk[T_WARM]:
            return -1
    else:
        if st.seq[j] < st.ctr[WARM_JOBS]:
            return -1
        key = float(st.seq[j])
    edges = st.job_edges
    last = edges.shape[0] - 2
    b = st.ctr[ARRIVAL_BATCH]
    while b < last and edges[b + 1] <= key:
        b += 1
    st.ctr[ARRIVAL_BATCH] = b
    return b


@kernel(wraparound=False, inline="always")
def record_arrival(st, j):
    b = find_job_batch(st, j)
    st.job_batch[j] = b  # found once: job_left reads it
    if b >= 0:
        st.jacc[b, J_ARRIVED] += 1.0
        st.jacc[b, J_FIRST_CLASS + J_PER_CLASS * st.job_class[j] + J_C_ARRIVED] += 1.0


@kernel(wraparound=False, inline="always")
def _sketch_add(st, sk, b, x):
    i = bucket_of(x)
    sk[b, i] += 1
    if i == N_BUCKETS - 1:
        st.ctr[OVERFLOW] += 1


@kernel(wraparound=False, inline="always")
def _record_done(st, j, b):
    acc = st.jacc
    response = st.t_finish[j] - st.arrival[j]
    waiting = st.t_start[j] - st.arrival[j]
    work = st.work[j]
    acc[b, J_DONE] += 1.0
    acc[b, J_RESPONSE] += response
    acc[b, J_WAITING] += waiting
    acc[b, J_SLOWDOWN] += response / work
    bsld = max(response / max(work, st.clk[BSLD_TAU]), 1.0)
    acc[b, J_BSLD] += bsld
    base = J_FIRST_CLASS + J_PER_CLASS * st.job_class[j]
    acc[b, base + J_C_DONE] += 1.0
    acc[b, base + J_C_RESPONSE] += response
    if st.ctr[QUANTILES] != 0:  # three logarithms per job: 12% of ServerFilling's event
        _sketch_add(st, st.sk_response, b, response)
        _sketch_add(st, st.sk_waiting, b, waiting)
        _sketch_add(st, st.sk_bsld, b, bsld)


@kernel(wraparound=False, inline="always")
def _record_completion_time(st, t):
    """Throughput: completions in the time batch holding t (np.histogram's bins: the last one
    closed)."""
    if t < st.clk[T_WARM] or t > st.clk[T_END]:
        return
    edges = st.batch_edges
    last = edges.shape[0] - 2
    b = st.ctr[DONE_BATCH]  # completion times never decrease: move forward from the last one
    while b < last and t >= edges[b + 1]:
        b += 1
    st.ctr[DONE_BATCH] = b
    st.acc[b, A_COMPLETIONS] += 1.0


@kernel(wraparound=False, inline="always")
def write_record(st, j):
    """Append the per-job record of slot j to the output buffer (when per-job output is on)."""
    if st.ctr[OUT_CHUNK] == 0:
        return
    i = st.ctr[OUT_N]
    f = st.out_f
    f[i, O_ARRIVAL] = st.arrival[j]
    f[i, O_WORK] = st.work[j]
    f[i, O_START] = st.t_start[j]
    f[i, O_FINISH] = st.t_finish[j]
    for r in range(st.demand.shape[1]):
        f[i, O_FIRST_DEMAND + r] = st.demand[j, r]
    o = st.out_i
    o[i, O_SEQ] = st.seq[j]
    o[i, O_CLASS] = st.job_class[j]
    o[i, O_SERVER] = st.server[j]
    o[i, O_STATUS] = st.status[j]
    st.ctr[OUT_N] = i + 1


@kernel(wraparound=False, inline="always")
def job_left(st, j):
    """Job j has just completed or been lost (status DONE or LOST set): record it and queue its
    slot for release after the current decision."""
    b = st.job_batch[j]
    if st.status[j] == DONE:
        _record_completion_time(st, st.t_finish[j])
        if b >= 0:
            _record_done(st, j, b)
    elif b >= 0:
        st.jacc[b, J_LOST] += 1.0
        st.jacc[b, J_FIRST_CLASS + J_PER_CLASS * st.job_class[j] + J_C_LOST] += 1.0
    write_record(st, j)
    st.leave_buf[st.ctr[N_LEAVE]] = j
    st.ctr[N_LEAVE] += 1
