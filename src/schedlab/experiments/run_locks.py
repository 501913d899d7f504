"""Per-run locks, so two sweeps on one result directory never compute a run twice, and the
process hygiene that keeps a killed sweep from leaving workers behind (issue 15 item 2).

Locks: before computing a run, a process creates ``DIR/locks/<spec_hash>`` with
``O_CREAT | O_EXCL`` (atomic on local file systems) holding its host name and pid; the lock is
removed once the run is stored. A lock whose process is gone (same host, pid not running or a
zombie) is stale and is taken over. A lock from another host is trusted until it is released.

Orphans: every local worker (a) asks the kernel to SIGKILL it when its parent (the fork server)
dies (``prctl(PR_SET_PDEATHSIG)``, Linux), and (b) runs a watchdog thread that exits the worker
as soon as the sweep's main process is no longer running (kill -9 of ``schedlab run``). The fork
server exits by itself when the main process dies (it watches a pipe to it), and the
multiprocessing resource tracker exits when the last process holding its pipe has gone.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import threading
import time
from pathlib import Path

from schedlab import outputs

LOCKS = "locks"
WATCHDOG_PERIOD_S = 0.2
PR_SET_PDEATHSIG = 1


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process on this host (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill(0)
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def holder_name(pid: int) -> str:
    """How a lock names the process ``pid`` of this host (``"host pid"``)."""
    return f"{socket.gethostname()} {pid}"


class RunLocks:
    """Lock files under ``root/locks``."""

    def __init__(self, root: str | Path) -> None:
        self.dir = Path(root) / LOCKS
        self.me = holder_name(os.getpid())

    def _path(self, spec_hash: str) -> Path:
        return self.dir / spec_hash

    def take(self, spec_hash: str) -> bool:
        """Lock a run; False when a live process holds it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self._path(spec_hash)
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self.holder(spec_hash)
                if holder is None or self.alive(holder):
                    return False
                self._drop_if(path, holder)  # stale: its process is gone
                continue
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(self.me)
            except OSError as exc:  # a full disk: no half-written lock is left behind
                path.unlink(missing_ok=True)
                raise outputs.failed(path, exc) from None
            return True
        return False

    def holder(self, spec_hash: str) -> str | None:
        try:
            return self._path(spec_hash).read_text()
        except FileNotFoundError:
            return None

    def alive(self, holder: str) -> bool:
        host, _, pid = holder.partition(" ")
        if host != socket.gethostname() or not pid.isdigit():
            return True  # another host, or a lock still being written: trust it
        return running(int(pid))

    def busy(self, spec_hash: str) -> bool:
        """Whether a live process other than this one holds the run."""
        holder = self.holder(spec_hash)
        return holder is not None and holder != self.me and self.alive(holder)

    def release(self, spec_hash: str) -> None:
        self._drop_if(self._path(spec_hash), self.me)

    @staticmethod
    def _drop_if(path: Path, holder: str) -> None:
        """Remove a lock only if it still names ``holder`` (never another process's new lock)."""
        try:
            if path.read_text() == holder:
                path.unlink()
        except FileNotFoundError:
            pass


def die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (no-op elsewhere)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def watch_main_process(pid: int) -> None:
    """Exit this process as soon as ``pid`` (the sweep's main process) is gone."""

    def watch() -> None:
        while running(pid):
            time.sleep(WATCHDOG_PERIOD_S)
        os._exit(1)

    threading.Thread(target=watch, name="schedlab-watchdog", daemon=True).start()


def worker_init(main_pid: int) -> None:
    """Initializer of local sweep workers: Ctrl-C is the parent's; SIGTERM ends the worker at
    once (a worker forked from the sweep inherits its handler, which would raise
    KeyboardInterrupt there: decision 0009); die with the sweep; the entry points' process
    tuning (``schedlab.configure``, decision 0020)."""
    from schedlab._jit import configure

    configure()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    watch_main_process(main_pid)
