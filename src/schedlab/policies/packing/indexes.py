"""Compiled search structures for the best-fit and virtual-queue policies (psychas2019 §IV-A, §VI).

BF-J/S needs, at every decision, "the largest waiting job that fits in server s" (BF-S) and "the
server with the least residual capacity that fits job j" (BF-J). Both are threshold searches in a
set of keyed items that changes by single insertions and removals:

* a **bucket index**: items (jobs keyed by size, or servers keyed by residual capacity) in NB
  buckets, each bucket a doubly linked list kept sorted (by key, ties by arrival number or
  index), plus a segment tree over bucket counts to jump to the nearest non-empty bucket.
  Queries and updates cost O(log NB) plus a scan of one bucket. Buckets are either of equal key
  width (servers, and jobs of a synthetic workload) or given by boundaries (jobs of a trace:
  :func:`population_bounds` splits the trace's job sizes into buckets that each receive at most
  a few dozen jobs over the whole run, or hold a single size value, so a bucket scan is short
  whatever the size distribution — a trace's sizes crowd into a narrow range);
* a **max segment tree** over item ids, for "the first item (in index or arrival order) whose key
  reaches a threshold" (servers in index order for BF-S; waiting jobs in arrival order, keyed by
  minus their size, for BF-J: a ring over arrival numbers, :func:`ring_first_ge`).

An index is a nested policy state (:func:`bucket_index`) with named arrays ``nxt``, ``prv``,
``bucket`` (per item), ``head``, ``tail`` (per bucket), ``counts`` (segment tree of bucket counts)
and ``bounds`` (empty for equal-width buckets); keys live in a separate array owned by the caller.
``descending`` orders a bucket by decreasing key (jobs: the largest first), otherwise by
increasing key (servers: the tightest first); ties by an order array the caller gives (jobs: their
arrival numbers, the oldest first, whatever slot they occupy; servers: their index).

Buckets only decide where a search starts: the item a query returns is the same for any
non-decreasing bucketing, so the job boundaries are a matter of speed, never of results.
"""

from __future__ import annotations

import numpy as np

from schedlab.policy_api import (
    PolicyState,
    StateField,
    kernel,
    list_insert_after,
    list_remove,
)

NEG_INF = -np.inf


def next_pow2(n: int) -> int:
    p = 2
    while p < n:
        p *= 2
    return p


def new_tree(n: int) -> tuple[np.ndarray, int]:
    """A max segment tree over n leaves (all -inf) and its leaf offset P."""
    p = next_pow2(max(n, 1))
    return np.full(2 * p, NEG_INF), p


def bucket_index(items: str) -> PolicyState:
    """The layout of a bucket index over ``items`` ("jobs": grown with the engine's job slots, or
    "servers")."""
    return PolicyState(
        "bucket_index",
        [
            StateField("nxt", "i4", items, fill=-1),
            StateField("prv", "i4", items, fill=-1),
            StateField("bucket", "i4", items, fill=-1),
            StateField("head", "i4", "buckets", fill=-1),
            StateField("tail", "i4", "buckets", fill=-1),
            StateField("counts", "f8", "count_tree"),
            StateField("bounds", "f8", "bounds"),
        ],
    )


JOB_INDEX = bucket_index("jobs")
SERVER_INDEX = bucket_index("servers")


def new_index(
    layout: PolicyState, n_items: int, n_buckets: int, bounds: np.ndarray | None = None
) -> object:
    """An empty bucket index over item ids 0..n_items-1: ``n_buckets`` of equal key width, or one
    bucket per entry of ``bounds`` (bucket b holds keys in (bounds[b-1], bounds[b]])."""
    if bounds is None:
        bounds = np.zeros(0)
    else:
        n_buckets = bounds.shape[0]
    items = layout.fields[0].size
    sizes = {
        items: n_items,
        "buckets": n_buckets,
        "count_tree": 2 * next_pow2(max(n_buckets, 1)),
        "bounds": bounds.shape[0],
    }
    return layout.allocate(sizes, {"bounds": bounds})


def population_bounds(
    keys: np.ndarray, per_bucket: int = 32, max_buckets: int = 1 << 17
) -> np.ndarray:
    """Bucket boundaries for the keys an index will ever hold: runs of consecutive distinct values
    holding at most about 2 x ``per_bucket`` items (``per_bucket`` raised if needed to stay within
    ``max_buckets``); a value occurring more than that gets a bucket of its own."""
    values, counts = np.unique(np.asarray(keys, dtype=float), return_counts=True)
    if values.size == 0:
        return np.array([np.inf])
    cap = max(per_bucket, int(np.ceil(2 * counts.sum() / max_buckets)))
    heavy = counts > cap
    group = (np.cumsum(counts) - counts) // cap
    brk = np.ones(values.size, dtype=bool)
    brk[1:] = (group[1:] != group[:-1]) | heavy[1:] | heavy[:-1]
    gid = np.cumsum(brk)
    last = np.flatnonzero(np.r_[gid[1:] != gid[:-1], True])
    bounds = values[last].astype(float)
    bounds[-1] = np.inf  # every larger key (e.g. a query threshold) maps to the last bucket
    return bounds


# --------------------------------------------------------------------------- segment trees


@kernel(wraparound=False)
def seg_set(tree, i, v):
    """Set leaf i to v and update its ancestors (max)."""
    p = tree.shape[0] >> 1
    k = i + p
    tree[k] = v
    k >>= 1
    while k >= 1:
        a = tree[2 * k]
        b = tree[2 * k + 1]
        tree[k] = a if a >= b else b
        k >>= 1


@kernel(wraparound=False)
def seg_add(tree, i, dv):
    """Add dv to leaf i (a count tree) and update its ancestors (max)."""
    p = tree.shape[0] >> 1
    seg_set(tree, i, tree[i + p] + dv)


@kernel(wraparound=False)
def seg_first_ge(tree, lo, thr):
    """The smallest leaf index >= lo whose value is >= thr, or -1."""
    p = tree.shape[0] >> 1
    if lo >= p:
        return -1
    if lo < 0:
        lo = 0
    k = lo + p
    while True:
        if tree[k] >= thr:
            while k < p:
                k = 2 * k if tree[2 * k] >= thr else 2 * k + 1
            return k - p
        while k & 1:
            k >>= 1
        if k == 0:
            return -1
        k += 1


@kernel(wraparound=False)
def seg_last_ge(tree, hi, thr):
    """The largest leaf index <= hi whose value is >= thr, or -1."""
    p = tree.shape[0] >> 1
    if hi < 0:
        return -1
    if hi >= p:
        hi = p - 1
    k = hi + p
    while True:
        if tree[k] >= thr:
            while k < p:
                k = 2 * k + 1 if tree[2 * k + 1] >= thr else 2 * k
            return k - p
        while (k & 1) == 0 and k > 1:
            k >>= 1
        if k == 1:
            return -1
        k -= 1


@kernel(wraparound=False)
def ring_first_ge(tree, lo, start, thr):
    """A segment tree used as a ring over arrival numbers (leaf = number mod P) whose items all
    have numbers in [lo, lo + P): the leaf of the first item in arrival order with number >=
    ``start`` (lo <= start) whose value is >= thr, or -1. The search wraps at leaf P - 1."""
    p = tree.shape[0] >> 1
    length = lo + p - start  # numbers start .. lo + P - 1
    if length <= 0:
        return -1
    a = start & (p - 1)
    k = seg_first_ge(tree, a, thr)
    if k < 0 and a > 0:
        k = seg_first_ge(tree, 0, thr)
    if k < 0 or ((k - a) & (p - 1)) >= length:
        return -1
    return k


# --------------------------------------------------------------------------- bucket index


@kernel(wraparound=False)
def bucket_of(bounds, key, scale, n_buckets):
    """The bucket of a key: by boundaries when given, else of width 1/scale. Non-decreasing."""
    if bounds.shape[0] > 0:
        b = np.searchsorted(bounds, key)
        return b if b < n_buckets else n_buckets - 1
    if key <= 0.0:
        return 0
    b = int(key * scale)
    return b if b < n_buckets else n_buckets - 1


@kernel(wraparound=False)
def _before(keys, order, a, b, descending):
    ka = keys[a]
    kb = keys[b]
    if ka == kb:
        return order[a] < order[b]
    return ka > kb if descending else ka < kb


@kernel(wraparound=False)
def ix_insert(ix, keys, order, scale, i, descending):
    """Insert item i with key keys[i]; equal keys in increasing ``order`` (jobs: the engine's
    arrival numbers ``st.seq``, so that reused slots keep arrival order; servers: their index)."""
    nxt, prv, bk, head, tail, counts = ix.nxt, ix.prv, ix.bucket, ix.head, ix.tail, ix.counts
    bounds = ix.bounds
    nb = head.shape[0]
    b = bucket_of(bounds, keys[i], scale, nb)
    p = tail[b]
    while p != -1 and not _before(keys, order, p, i, descending):
        p = prv[p]
    list_insert_after(nxt, prv, head, tail, b, b, p, i)
    bk[i] = b
    seg_add(counts, b, 1.0)


@kernel(wraparound=False)
def ix_remove(ix, i):
    """Remove item i (no-op when absent)."""
    nxt, prv, bk, head, tail, counts = ix.nxt, ix.prv, ix.bucket, ix.head, ix.tail, ix.counts
    b = bk[i]
    if b < 0:
        return
    list_remove(nxt, prv, head, tail, b, b, i)
    bk[i] = -1
    seg_add(counts, b, -1.0)


@kernel(wraparound=False)
def ix_largest_le(ix, keys, scale, thr):
    """Descending index: the item with the largest key <= thr (ties: smallest order), or -1."""
    nxt, head, tail, counts, bounds = ix.nxt, ix.head, ix.tail, ix.counts, ix.bounds
    nb = head.shape[0]
    b = bucket_of(bounds, thr, scale, nb)
    h = head[b]
    if h != -1 and keys[tail[b]] <= thr:
        if keys[h] <= thr:
            return h
        p = h
        while keys[p] > thr:
            p = nxt[p]
        return p
    b2 = seg_last_ge(counts, b - 1, 0.5)
    if b2 < 0:
        return -1
    return head[b2]


@kernel(wraparound=False)
def ix_smallest_ge(ix, keys, scale, thr):
    """Ascending index: the item with the smallest key >= thr (ties: smallest order), or -1."""
    nxt, head, tail, counts, bounds = ix.nxt, ix.head, ix.tail, ix.counts, ix.bounds
    nb = head.shape[0]
    b = bucket_of(bounds, thr, scale, nb)
    h = head[b]
    if h != -1 and keys[tail[b]] >= thr:
        if keys[h] >= thr:
            return h
        p = h
        while keys[p] < thr:
            p = nxt[p]
        return p
    b2 = seg_first_ge(counts, b + 1, 0.5)
    if b2 < 0:
        return -1
    return head[b2]


@kernel(wraparound=False)
def ix_max_item(ix):
    """Ascending index: the item with the largest key (the last of the top bucket), or -1."""
    head, tail, counts = ix.head, ix.tail, ix.counts
    b = seg_last_ge(counts, head.shape[0] - 1, 0.5)
    if b < 0:
        return -1
    return tail[b]
