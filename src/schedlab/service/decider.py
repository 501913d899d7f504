"""The one thread of ``schedlab serve`` that touches the scheduler (issue 45, item 6; decision
0026): every event is applied, and every read of the state made, on it, in the order the event
loop handed them over, so the event log's order is the decision order. The event loop only parses
requests, hands them over and awaits their outcome: a decision that takes long (a 10,000-event
batch, a plugin that loops) never stops it from answering /healthz.

The loop hands the tasks of each of its passes over together (one wake-up of the thread for the
requests read together); the thread takes every task queued when it wakes (a batch) and passes
their outcomes back in one callback on each waiting loop: one wake-up of the loop per batch, not
per request. A task run with
``handed=True`` (an event with the event log on) is not passed back: its result goes, with the
batch's other such results in one call, to the Decider's ``hand_over`` (the group commit, which
answers it once its line is on disk: the loop wakes once for the event, decision 0036). It is a
daemon thread: a decision that never returns cannot keep the process alive (``schedlab serve``
exits past its grace, :meth:`Decider.stop`). Schedlab's kernels release the interpreter lock
while they run (``schedlab._jit.kernel``), so the loop runs while the thread is in compiled code.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Task:
    """A function to call on the thread, and where its outcome goes: a future of ``loop`` (an
    asyncio one), or of no loop (a ``concurrent.futures`` one, for a caller off any loop)."""

    call: Callable[[], Any]
    done: Any
    loop: asyncio.AbstractEventLoop | None
    handed: bool = False


@dataclass(slots=True)
class Outcome:
    """A task's result or exception, for the future ``done``."""

    done: Any
    result: Any = None
    error: BaseException | None = None


class Decider:
    """The thread applying the service's events in order (module docstring)."""

    def __init__(
        self, name: str = "decisions", hand_over: Callable[[list[Outcome]], None] | None = None
    ) -> None:
        self._hand_over = hand_over  # where the results of tasks run with handed=True go
        self._tasks: queue.SimpleQueue[list[Task | None]] = queue.SimpleQueue()  # None: stop
        # per loop, the tasks of its current pass, handed over together at the pass's end
        self._passes: dict[asyncio.AbstractEventLoop, list[Task | None]] = {}
        self._since: float | None = None  # time.monotonic() when the running task began
        self._thread = threading.Thread(target=self._deciding, name=name, daemon=True)
        self._thread.start()

    async def run(self, call: Callable[[], Any], handed: bool = False) -> Any:
        """``call()`` on the thread, after every task handed over before; its result (or its
        exception). ``handed``: a result goes to ``hand_over`` with the future, which answers it
        (an exception comes back as without). Cancelling the wait does not stop a call that has
        begun. The tasks of one pass of the loop are handed over together once its ready
        callbacks have run: one wake-up of the thread for the requests read together, not one
        each (the thread would otherwise wake at the first and fight the loop, still reading the
        others, for the interpreter lock)."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        task = Task(call, done, loop, handed and self._hand_over is not None)
        tasks = self._passes.get(loop)
        if tasks is None:
            self._passes[loop] = [task]
            loop.call_soon(self._end_of_pass, loop)
        else:
            tasks.append(task)
        return await done

    def _end_of_pass(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop's side: the tasks of its pass to the thread, in the order they came."""
        self._tasks.put(self._passes.pop(loop))

    def call(self, call: Callable[[], Any]) -> Any:
        """The same, waiting on this thread (the start's replay, before any event loop)."""
        done: Future[Any] = Future()
        self._tasks.put([Task(call, done, None)])
        return done.result()

    def running_for(self) -> float | None:
        """Seconds the running task has taken so far; None when the thread waits for work."""
        since = self._since
        return None if since is None else time.monotonic() - since

    def stop(self, timeout: float) -> bool:
        """Let the thread finish what it was handed, then end; False if it is still busy after
        ``timeout`` seconds (a call that does not return: the process must end without it)."""
        self._tasks.put([None])
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _deciding(self) -> None:
        """The thread: each wake-up, every queued task in order, then the handed tasks' results
        to ``hand_over`` in one call, and the other outcomes passed back together (one callback
        per loop waiting)."""
        tasks = self._tasks
        while True:
            batch = tasks.get()
            while True:
                try:
                    batch += tasks.get_nowait()
                except queue.Empty:
                    break
            outcomes: dict[asyncio.AbstractEventLoop | None, list[Outcome]] = {}
            handed: list[Outcome] = []
            stopping = False
            for task in batch:
                if task is None:
                    stopping = True
                    continue
                outcome = Outcome(task.done)
                self._since = time.monotonic()
                try:
                    outcome.result = task.call()
                except BaseException as exc:  # the caller's to handle (a refusal, a bug)
                    outcome.error = exc
                self._since = None
                if task.handed and outcome.error is None:
                    handed.append(outcome)
                else:
                    outcomes.setdefault(task.loop, []).append(outcome)
            if handed:
                self._hand_over(handed)  # type: ignore[misc]  (handed only with one)
            for loop, settled in outcomes.items():
                if loop is None:
                    _settle(settled)
                    continue
                with contextlib.suppress(RuntimeError):  # that loop was closed: nobody waits
                    loop.call_soon_threadsafe(_settle, settled)
            if stopping:
                return


def _settle(outcomes: list[Outcome]) -> None:
    """The waiters' side: each future given its result or exception (a wait cancelled meanwhile
    is skipped)."""
    for outcome in outcomes:
        if outcome.done.done():
            continue
        if outcome.error is None:
            outcome.done.set_result(outcome.result)
        else:
            outcome.done.set_exception(outcome.error)
