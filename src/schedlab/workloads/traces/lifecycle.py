"""Task lifecycles from Google/Borg event logs: which tasks ran once, cleanly, to FINISH.

Both Google traces (clusterdata-2011 ``task_events`` and the 2019 Borg ``instance_events``) log
one row per state transition of a task: it is submitted, (queued, enabled,) scheduled on a
machine, and then finishes, or is evicted, fails, is killed or is lost — after which it may be
resubmitted. The papers kept the tasks that completed without interruption (psychas2019 §VII-B:
"tasks that were completed without interruptions/errors"; psychas2018 §7.3; psychas2022 §7.2:
"tasks which were completed within the time window of the trace"), with arrival = SUBMIT time,
service time = FINISH - SCHEDULE, and the resource request as demand. This module replays the
events in file order through a per-task state machine and emits exactly those tasks.

Event codes are the 2019 numbering (:data:`SUBMIT` ... :data:`UPDATE_RUNNING`); the 2011 reader
maps its codes onto them. The state lives in an open-addressing hash table keyed by (job id,
task index) in NumPy arrays, and one compiled loop processes a block of events (Numba; the same
source runs as Python with ``SCHEDLAB_JIT=0``). Memory is one slot per task that is pending,
running (a 64-byte record), plus a 64-bit fingerprint per task that was interrupted (remembered so
that a later resubmission is not mistaken for a clean run), never per event.

Special times (both traces): 0 means "before the trace window" and 2**63 - 1 "after it"; a task
submitted at 0 or finishing at 2**63 - 1 has no usable arrival or duration and is dropped.
"""

from __future__ import annotations

import numpy as np

from schedlab._jit import kernel

# Event codes (Google 2019 numbering, clusterdata_trace_format_v3.proto EventType).
SUBMIT, QUEUE, ENABLE, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST = range(9)
UPDATE_PENDING, UPDATE_RUNNING = 9, 10
N_CODES = 11
AFTER_TRACE = np.iinfo(np.int64).max

# Slot states of the live table (interrupted tasks move to the compact set instead).
EMPTY, PENDING, RUNNING, PARTIAL = range(4)

# Bad-row codes returned by the loop: code -> (kind, field, message).
(
    BAD_TIME_BACK,
    BAD_SEQUENCE,
    BAD_FINISH,
    BAD_NEGATIVE,
    BAD_CODE,
    BAD_ID,
    BAD_REQUEST,
    BAD_TIME,
) = range(1, 9)
BAD_ROWS: dict[int, tuple[str, str, str]] = {
    BAD_TIME_BACK: ("out_of_order", "time", "earlier than the row before (events out of order)"),
    BAD_SEQUENCE: (
        "out_of_order",
        "event type",
        "event out of order for this task (SUBMIT or SCHEDULE while it is already scheduled, or "
        "a second SUBMIT while pending); the task is dropped",
    ),
    BAD_FINISH: (
        "finish_without_schedule",
        "event type",
        "FINISH of a task that was never SCHEDULEd in this input; the task is dropped",
    ),
    BAD_NEGATIVE: (
        "negative_duration",
        "time",
        "FINISH earlier than SCHEDULE; the task is dropped",
    ),
    BAD_CODE: ("bad_value", "event type", "unknown event type"),
    BAD_ID: ("bad_value", "job ID", "negative job ID or task index"),
    BAD_REQUEST: ("bad_value", "resource request", "negative or non-finite resource request"),
    BAD_TIME: ("bad_value", "time", "negative time stamp (the row is skipped)"),
}

# Drop counters (tasks, not rows): index -> reason.
DROP_REASONS = (
    "interrupted",  # evicted, failed, killed or lost at least once
    "inconsistent",  # a bad row (FINISH without SCHEDULE, out-of-order event...) broke its history
    "before_trace",  # submitted before the trace window (time 0)
    "after_trace",  # finished after the trace window (time 2**63 - 1)
    "history_before_input",  # its first event in the input was not SUBMIT
    "zero_duration",  # FINISH at the SCHEDULE time
    "missing_request",  # no CPU or memory request
)
(
    DROP_INTERRUPTED,
    DROP_INCONSISTENT,
    DROP_BEFORE,
    DROP_AFTER,
    DROP_PARTIAL,
    DROP_ZERO,
    DROP_MISSING,
) = range(len(DROP_REASONS))

# Columns of a live-table record (one 64-byte row per slot: probing touches one cache line).
R_A, R_B, R_STATE, R_SUB, R_SCH, R_PRIO, R_CLS = range(7)
RECORD = 8
# meta array slots
M_USED, M_LAST_TIME, M_OUT, M_BAD, M_DEAD = range(5)
MAX_LOAD = 0.6
IDENTITY_CODES = np.arange(N_CODES, dtype=np.int64)  # 2019 codes map to themselves
NEED_LIVE, NEED_DEAD = -1, -2


@kernel(nogil=True)
def _mix(a: int, b: int) -> np.uint64:
    h = np.uint64(a) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(29)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(32)
    return h


@kernel(nogil=True)
def _home(a, b, bits):
    return np.int64(_mix(a, b) >> np.uint64(64 - bits))


@kernel(nogil=True)
def _find(rec, a, b, bits):
    """Slot of (a, b) in the live table, or -(empty slot ending its probe path) - 1."""
    mask = np.int64((1 << bits) - 1)
    i = _home(a, b, bits)
    while True:
        if rec[i, R_STATE] == EMPTY:
            return -i - 1
        if rec[i, R_A] == a and rec[i, R_B] == b:
            return i
        i = (i + 1) & mask


@kernel(nogil=True)
def _delete(rec, req, slot, bits, meta):
    """Remove a live record by backward-shift deletion (linear probing stays tombstone-free)."""
    mask = np.int64((1 << bits) - 1)
    i = slot
    j = slot
    while True:
        j = (j + 1) & mask
        if rec[j, R_STATE] == EMPTY:
            break
        home = _home(rec[j, R_A], rec[j, R_B], bits)
        if (i < home <= j) if i <= j else (home > i or home <= j):
            continue  # its probe path does not cross the hole
        for r in range(RECORD):
            rec[i, r] = rec[j, r]
        req[i, 0] = req[j, 0]
        req[i, 1] = req[j, 1]
        i = j
    rec[i, R_STATE] = EMPTY
    meta[M_USED] -= 1


@kernel(nogil=True)
def _dead_slot(dead, fp):
    """Slot of fingerprint ``fp`` in the interrupted-task set, or of the empty slot ending its
    probe path (fingerprints are never 0, the empty marker)."""
    mask = np.int64(dead.shape[0] - 1)
    i = np.int64(fp) & mask
    while True:
        v = dead[i]
        if v == 0 or v == fp:
            return i
        i = (i + 1) & mask


@kernel(nogil=True)
def _fingerprint(a, b):
    return np.int64(_mix(b, a) | np.uint64(1))


@kernel(nogil=True)
def _kill(rec, req, slot, bits, dead, meta, a, b):
    """Move a live task to the interrupted set."""
    _delete(rec, req, slot, bits, meta)
    fp = _fingerprint(a, b)
    j = _dead_slot(dead, fp)
    if dead[j] == 0:
        dead[j] = fp
        meta[M_DEAD] += 1


@kernel(nogil=True)
def process_events(
    t,
    job,
    idx,
    code,
    cpu,
    mem,
    prio,
    cls,
    code_map,
    start,
    rec,
    req,
    bits,
    dead,
    meta,
    drops,
    out_i,
    out_f,
    bad_row,
    bad_code,
):
    """Apply events ``start..`` in order (event codes translated through ``code_map``). Returns
    (index of the first event not applied, what to grow: 0 = nothing, NEED_LIVE or
    NEED_DEAD)."""
    n = t.shape[0]
    live_limit = int((1 << bits) * MAX_LOAD)
    dead_limit = int(dead.shape[0] * MAX_LOAD)
    for i in range(start, n):
        if meta[M_USED] >= live_limit:
            return i, NEED_LIVE
        if meta[M_DEAD] >= dead_limit:
            return i, NEED_DEAD
        ti = t[i]
        if ti < 0:  # no event precedes the trace's time 0: a bad row, never an arrival
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_TIME
            meta[M_BAD] += 1
            continue
        if ti < meta[M_LAST_TIME]:
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_TIME_BACK
            meta[M_BAD] += 1
        meta[M_LAST_TIME] = ti
        raw = code[i]
        c = code_map[raw] if 0 <= raw < code_map.shape[0] else -1
        a = job[i]
        b = idx[i]
        if c < 0 or c >= N_CODES:
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_CODE
            meta[M_BAD] += 1
            continue
        if a < 0 or b < 0:
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_ID
            meta[M_BAD] += 1
            continue
        ci = cpu[i]
        mi = mem[i]
        if ci < 0 or mi < 0 or ci == np.inf or mi == np.inf:
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_REQUEST
            meta[M_BAD] += 1
            continue
        interrupt = EVICT <= c <= FAIL or KILL <= c <= LOST  # EVICT, FAIL, KILL, LOST
        slot = _find(rec, a, b, bits)
        if slot < 0:
            fp = _fingerprint(a, b)
            j = _dead_slot(dead, fp)
            if dead[j] == fp:
                continue  # interrupted before: never a clean run
            if c == FINISH:
                bad_row[meta[M_BAD]] = i
                bad_code[meta[M_BAD]] = BAD_FINISH
                meta[M_BAD] += 1
                drops[DROP_INCONSISTENT] += 1
                continue
            if interrupt:
                dead[j] = fp
                meta[M_DEAD] += 1
                drops[DROP_INTERRUPTED] += 1
                continue
            slot = -slot - 1
            meta[M_USED] += 1
            rec[slot, R_A] = a
            rec[slot, R_B] = b
            rec[slot, R_STATE] = PENDING if c == SUBMIT else PARTIAL
            rec[slot, R_SUB] = ti
            rec[slot, R_SCH] = -1
            rec[slot, R_PRIO] = prio[i]
            rec[slot, R_CLS] = cls[i]
            req[slot, 0] = ci
            req[slot, 1] = mi
            continue
        s = rec[slot, R_STATE]
        if interrupt:
            _kill(rec, req, slot, bits, dead, meta, a, b)
            drops[DROP_INTERRUPTED] += 1
            continue
        if s == PARTIAL:
            if c == SUBMIT:
                drops[DROP_PARTIAL] += 1
                rec[slot, R_STATE] = PENDING
                rec[slot, R_SUB] = ti
                rec[slot, R_SCH] = -1
                rec[slot, R_PRIO] = prio[i]
                rec[slot, R_CLS] = cls[i]
                req[slot, 0] = ci
                req[slot, 1] = mi
            elif c == FINISH:
                drops[DROP_PARTIAL] += 1
                _delete(rec, req, slot, bits, meta)
            continue
        if c == SUBMIT or (c == SCHEDULE and s == RUNNING):
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_SEQUENCE
            meta[M_BAD] += 1
            _kill(rec, req, slot, bits, dead, meta, a, b)
            drops[DROP_INCONSISTENT] += 1
            continue
        if c == SCHEDULE or (c == UPDATE_PENDING and s == PENDING):
            if c == SCHEDULE:
                rec[slot, R_STATE] = RUNNING
                rec[slot, R_SCH] = ti
            if ci == ci:  # not NaN: the request in force when it was placed
                req[slot, 0] = ci
            if mi == mi:
                req[slot, 1] = mi
            if prio[i] >= 0:
                rec[slot, R_PRIO] = prio[i]
            if cls[i] >= 0:
                rec[slot, R_CLS] = cls[i]
            continue
        if c != FINISH:  # QUEUE, ENABLE, UPDATE_RUNNING, UPDATE_PENDING while running
            continue
        # FINISH of a pending or running task: the end of this lifecycle either way.
        t_sub = rec[slot, R_SUB]
        t_sch = rec[slot, R_SCH]
        p = rec[slot, R_PRIO]
        q = rec[slot, R_CLS]
        rc = req[slot, 0]
        rm = req[slot, 1]
        _delete(rec, req, slot, bits, meta)
        if s == PENDING:
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_FINISH
            meta[M_BAD] += 1
            drops[DROP_INCONSISTENT] += 1
            continue
        if ti < t_sch:
            bad_row[meta[M_BAD]] = i
            bad_code[meta[M_BAD]] = BAD_NEGATIVE
            meta[M_BAD] += 1
            drops[DROP_INCONSISTENT] += 1
            continue
        if t_sub == 0:
            drops[DROP_BEFORE] += 1
            continue
        if ti == AFTER_TRACE:
            drops[DROP_AFTER] += 1
            continue
        if ti == t_sch:
            drops[DROP_ZERO] += 1
            continue
        if not (rc == rc and rm == rm):
            drops[DROP_MISSING] += 1
            continue
        k = meta[M_OUT]
        out_i[0, k] = t_sub
        out_i[1, k] = t_sch
        out_i[2, k] = ti
        out_i[3, k] = p
        out_i[4, k] = q
        out_i[5, k] = a
        out_i[6, k] = b
        out_f[0, k] = rc
        out_f[1, k] = rm
        meta[M_OUT] = k + 1
    return n, 0


@kernel(nogil=True)
def _rehash_live(rec, req, new_bits):
    """The live records in a table of 2**new_bits slots."""
    size = 1 << new_bits
    nrec = np.zeros((size, RECORD), np.int64)
    nreq = np.empty((size, 2), np.float64)
    for i in range(rec.shape[0]):
        if rec[i, R_STATE] == EMPTY:
            continue
        free = -_find(nrec, rec[i, R_A], rec[i, R_B], new_bits) - 1
        for r in range(RECORD):
            nrec[free, r] = rec[i, r]
        nreq[free, 0] = req[i, 0]
        nreq[free, 1] = req[i, 1]
    return nrec, nreq


@kernel(nogil=True)
def _rehash_dead(dead, size):
    new = np.zeros(size, np.int64)
    for v in dead:
        if v != 0:
            new[_dead_slot(new, v)] = v
    return new


def _one_kind_per_row(rows: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A row that went back in time *and* broke its task's history (a FINISH before its
    SCHEDULE is both) is counted once, under the more specific kind."""
    back = codes == BAD_TIME_BACK
    if not back.any() or back.all():
        return rows, codes
    other = np.isin(rows, rows[~back])
    keep = ~(back & other)
    return rows[keep], codes[keep]


def _writable(a: np.ndarray, dtype: type) -> np.ndarray:
    """A C-contiguous writable array of ``dtype`` (one compiled signature for every block:
    Arrow hands out read-only arrays when a column has no nulls)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


OUT_INT = ("submit", "schedule", "finish", "priority", "job_class", "job", "index")
OUT_FLOAT = ("cpu", "memory")


class TaskTable:
    """The per-task state carried across blocks and files (see module docstring).

    Live tasks (pending, running, or seen without their SUBMIT) have a 64-byte record in an
    open-addressing table; interrupted tasks are only remembered as a 64-bit fingerprint of
    their (job, index) key in a compact set (16 bytes per task at most), so that a resubmission
    is recognized. Memory is therefore bounded by the live tasks plus 16 bytes per interrupted
    task, whatever the number of events.
    """

    def __init__(self, bits: int = 16) -> None:
        self.bits = bits
        self.rec = np.zeros((1 << bits, RECORD), np.int64)
        self.req = np.empty((1 << bits, 2), np.float64)
        self.dead = np.zeros(1 << 16, np.int64)
        self.meta = np.zeros(5, np.int64)
        self.meta[M_LAST_TIME] = np.iinfo(np.int64).min
        self.drops = np.zeros(len(DROP_REASONS), np.int64)

    def _grow_live(self) -> None:
        self.rec, self.req = _rehash_live(self.rec, self.req, self.bits + 1)
        self.bits += 1

    def _grow_dead(self) -> None:
        self.dead = _rehash_dead(self.dead, 2 * self.dead.shape[0])

    def apply(
        self,
        t: np.ndarray,
        job: np.ndarray,
        idx: np.ndarray,
        code: np.ndarray,
        cpu: np.ndarray,
        mem: np.ndarray,
        prio: np.ndarray,
        cls: np.ndarray,
        code_map: np.ndarray,
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """Apply one block of events (arrays of equal length, in file order; raw event codes
        are translated through ``code_map``, a code outside it is a bad row). Returns the tasks
        that finished cleanly (submit, schedule, finish times in the input's unit; cpu, memory,
        priority, job_class, job, index) and the bad rows (row indices in the block, bad
        codes)."""
        t, job, idx, code, cpu, mem, prio, cls = (
            _writable(a, dt)
            for a, dt in zip(
                (t, job, idx, code, cpu, mem, prio, cls),
                (np.int64,) * 4 + (np.float64,) * 2 + (np.int64,) * 2,
                strict=True,
            )
        )
        n = t.shape[0]
        out_i = np.empty((len(OUT_INT), n), np.int64)
        out_f = np.empty((len(OUT_FLOAT), n), np.float64)
        bad_row = np.empty(2 * n, np.int64)
        bad_code = np.empty(2 * n, np.int64)
        self.meta[M_OUT] = 0
        self.meta[M_BAD] = 0
        start = 0
        while True:
            with np.errstate(over="ignore"):  # uncompiled (SCHEDLAB_JIT=0): hashing wraps
                start, need = process_events(
                    t,
                    job,
                    idx,
                    code,
                    cpu,
                    mem,
                    prio,
                    cls,
                    _writable(code_map, np.int64),
                    start,
                    self.rec,
                    self.req,
                    self.bits,
                    self.dead,
                    self.meta,
                    self.drops,
                    out_i,
                    out_f,
                    bad_row,
                    bad_code,
                )
            if need == NEED_LIVE:
                with np.errstate(over="ignore"):
                    self._grow_live()
            elif need == NEED_DEAD:
                self._grow_dead()
            else:
                break
        k = int(self.meta[M_OUT])
        nb = int(self.meta[M_BAD])
        bad_row, bad_code = _one_kind_per_row(bad_row[:nb], bad_code[:nb])
        nb = bad_row.size
        # copies: views would keep the whole block-sized output buffers alive downstream
        done = {name: out_i[j, :k].copy() for j, name in enumerate(OUT_INT)}
        done.update({name: out_f[j, :k].copy() for j, name in enumerate(OUT_FLOAT)})
        return done, bad_row[:nb], bad_code[:nb]

    def leftovers(self) -> dict[str, int]:
        """Tasks still open at the end of the input: pending or running (``unfinished``) and
        those whose history began before the input (``history_before_input``)."""
        st = self.rec[:, R_STATE]
        return {
            "unfinished": int(np.count_nonzero((st == PENDING) | (st == RUNNING))),
            "history_before_input": int(np.count_nonzero(st == PARTIAL)),
        }

    def drop_counts(self) -> dict[str, int]:
        counts = {name: int(self.drops[i]) for i, name in enumerate(DROP_REASONS)}
        for name, n in self.leftovers().items():
            counts[name] = counts.get(name, 0) + n
        return counts

    @property
    def nbytes(self) -> int:
        return self.rec.nbytes + self.req.nbytes + self.dead.nbytes
