"""One FIFO queue of waiting jobs per VM type, as singly linked lists over the job slots
(``head[c]``, ``tail[c]``: first and last job of type c, -1 when empty; ``nxt[j]``: the job after
j). Used by the VM-stalling policies (vm_stalling.py) and the token policy (vm_tokens.py)."""

from __future__ import annotations

from schedlab.policy_api import (
    StateField,
    kernel,
)

QUEUE_FIELDS = (  # the queues' fields, spliced into a policy's state: *QUEUE_FIELDS
    StateField("q_head", "i8", "classes", fill=-1),
    StateField("q_tail", "i8", "classes", fill=-1),
    StateField("q_next", "i8", "jobs", fill=-1),
)


@kernel(wraparound=False, inline="always")
def queue_push(head, tail, nxt, c, j):
    """Append job j to the queue of type c."""
    nxt[j] = -1
    if tail[c] == -1:
        head[c] = j
    else:
        nxt[tail[c]] = j
    tail[c] = j


@kernel(wraparound=False, inline="always")
def queue_pop(head, tail, nxt, c):
    """Remove and return the first job of the (non-empty) queue of type c."""
    j = head[c]
    head[c] = nxt[j]
    if head[c] == -1:
        tail[c] = -1
    return j
