"""What a client can recover after a lost answer (issue 45, item 2; decision 0025).

Every accepted event has a sequence number (its event log line's ``seq``, counted from 1 since the
log began) and every action it answered has one too (counted from 1 over the actions of all
events, in the decision order). :class:`Recall` keeps

* every ``Idempotency-Key`` of the service's life (also those rebuilt from the log on start): its
  event's body digest, event number and the numbers of its actions (:class:`Keyed`, about 200
  bytes a key, as the scheduler keeps every job id ever submitted);
* the actions of the last ``window`` events that took any (:class:`Decided`: as the JSON the
  answer sent, bytes no collector scans, encoded once for the answer), for a retry's answer and
  ``GET /actions?after=SEQ``; older ones are re-derivable by a replay of the log, and
  asking for them is a one-line 410.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schedlab.errors import SchedlabError

WINDOW = 1_000_000  # events whose actions are held (decision 0025)
KEY_LENGTH = 200  # characters of an Idempotency-Key at most


class KeyConflict(SchedlabError):
    """An Idempotency-Key sent again with another request (422)."""


class Forgotten(SchedlabError):
    """Actions older than the ones held (410)."""


@dataclass(frozen=True)
class Keyed:
    """What an Idempotency-Key's first request was and answered."""

    digest: bytes
    event: int
    first: int  # the number of its first action (the one after the last before it)
    count: int


@dataclass(slots=True)
class Decided:
    """The actions of one event (their JSON array, as answered), numbered from ``first``."""

    event: int
    at: float
    first: int
    actions: bytes


def digest(line: bytes) -> bytes:
    """The identity of a request: BLAKE2b-128 of its event log line (without key or seq)."""
    return hashlib.blake2b(line, digest_size=16).digest()


class Recall:
    """The keys and recent actions of a service (module docstring)."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self.events = 0  # the last event's number
        self.actions = 0  # the last action's number
        self.keys: dict[str, Keyed] = {}
        self._held: list[Decided] = []  # in order; trimmed by half once twice the window
        self._firsts: list[int] = []  # the held entries' ``first``, for bisection

    def seen(self, key: str, line_digest: bytes) -> Keyed | None:
        """The first answer of ``key`` if it was used with this request; None for a new key;
        a one-line KeyConflict if it was used with another request."""
        keyed = self.keys.get(key)
        if keyed is not None and keyed.digest != line_digest:
            raise KeyConflict(
                f"Idempotency-Key {key!r} was used for another request (event {keyed.event}); "
                "a retry must send the same request, a new request a new key"
            )
        return keyed

    def record(
        self,
        at: float,
        actions: bytes,
        count: int,
        key: str | None,
        line_digest: bytes | None,
        keys: Mapping[str, bytes] | None = None,
    ) -> tuple[int, int]:
        """An accepted event and its ``count`` actions (their JSON array): (its event number,
        its first action's number). ``keys``: more keys answered by this one event, each with its
        request's digest (the Slurm adapter feeds several jobs' events in one call)."""
        self.events += 1
        first = self.actions + 1
        if count:
            self.actions += count
            self._held.append(Decided(self.events, at, first, actions))
            self._firsts.append(first)
            if len(self._held) > 2 * self.window:
                del self._held[: self.window], self._firsts[: self.window]
        if key is not None:
            assert line_digest is not None
            self.keys[key] = Keyed(line_digest, self.events, first, count)
        for other, other_digest in (keys or {}).items():
            self.keys[other] = Keyed(other_digest, self.events, first, count)
        return self.events, first

    def answered(self, keyed: Keyed) -> bytes:
        """The actions a key's first request answered (their JSON array)."""
        if keyed.count == 0:
            return b"[]"
        i = bisect.bisect_left(self._firsts, keyed.first)
        if i == len(self._firsts) or self._firsts[i] != keyed.first:
            raise Forgotten(
                f"the actions of event {keyed.event} (actions {keyed.first} to "
                f"{keyed.first + keyed.count - 1}) are no longer held: the service keeps the "
                f"last {self.window} events' actions; replay the event log for older ones"
            )
        return self._held[i].actions

    def after(self, seq: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` actions numbered after ``seq``, each with its number and its event's
        number and time; a one-line Forgotten if some after ``seq`` are no longer held."""
        if seq >= self.actions:
            return []
        if not self._firsts or seq + 1 < self._firsts[0]:
            oldest = self._firsts[0] if self._firsts else self.actions + 1
            raise Forgotten(
                f"after={seq}: the actions from {oldest} on are held (the service keeps the last "
                f"{self.window} events' actions); replay the event log for older ones"
            )
        out: list[dict[str, Any]] = []
        i = max(bisect.bisect_right(self._firsts, seq + 1) - 1, 0)
        for decided in self._held[i:]:
            for n, action in enumerate(json.loads(decided.actions), decided.first):
                if n > seq:
                    out.append({"seq": n, "event": decided.event, "at": decided.at, **action})
                    if len(out) == limit:
                        return out
        return out
