"""A Slurm cluster on this one host, in a folder of its own (issue 46 item 2): munged, slurmctld
and N slurmd daemons (``slurmd -N nI``, each node at 127.0.0.1 on a port of its own), started
from Debian's packages (``slurm-wlm``, ``munge``) and ended by their process ids.

Everything the daemons write is under the folder: ``slurm.conf`` (and ``job_submit.lua`` when
asked), munge's key and socket, the state and spool directories, the logs, and ``pids.json``.
Commands (``sinfo``, ``sbatch``, the adapter's ``squeue``/``scontrol``) reach it through
``SLURM_CONF`` (:meth:`LocalCluster.env`).

Nodes are whole servers (``select/linear``: a job holds whole nodes, as a pooled-family job
holds ``need`` servers). Finished jobs stay in slurmctld's memory for ``MinJobAge`` seconds
(``squeue --json --states=all`` shows them with their start, end and nodes) and are written to
a job completion file (``jobcomp/filetxt``); there is no accounting database.

By hand (docs/slurm.md)::

    schedlab slurm-cluster up DIR --nodes 4     # prints the SLURM_CONF line
    SLURM_CONF=DIR/slurm.conf sinfo
    schedlab slurm-cluster jobs DIR --count 8   # sleep jobs, held until schedlab releases them
    schedlab slurm-cluster down DIR
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from schedlab.errors import SchedlabError

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "squeue", "scontrol", "sbatch", "scancel")
JOB_SUBMIT_LUA = Path(__file__).with_name("job_submit.lua")  # the example that holds jobs


class ClusterError(SchedlabError):
    """The local cluster could not be started (one line naming the daemon and its log)."""


def missing_programs() -> list[str]:
    """The daemons and commands this module needs that are not on PATH (or /usr/sbin)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
    return [p for p in (*DAEMONS, *CLIENTS) if shutil.which(p, path=path) is None]


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 now (bound together, then released)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class LocalCluster:
    """A Slurm cluster of ``nodes`` nodes (``n1``..``nN``, ``cpus`` CPUs each) in ``root``.

    ``scheduler``: Slurm's scheduler plugin (``sched/builtin`` when the adapter decides;
    ``sched/backfill`` as the reference of issue 46 item 4) and its ``scheduler_parameters``;
    ``hold_partition``: a partition
    whose every job the shipped ``job_submit.lua`` holds (None: no job_submit plugin)."""

    root: Path
    nodes: int = 4
    cpus: int = 1
    scheduler: str = "sched/builtin"
    # the main scheduler runs at most every 0.1 s, not 2 s: a released job starts at once
    scheduler_parameters: str = "sched_min_interval=100000"
    hold_partition: str | None = "batch"
    partition: str = "batch"
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def node_names(self) -> list[str]:
        return [f"n{i}" for i in range(1, self.nodes + 1)]

    def env(self) -> dict[str, str]:
        """The environment of a Slurm command that talks to this cluster."""
        path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": path}

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm command against this cluster (its output captured as text)."""
        done = subprocess.run(
            args, env=self.env(), capture_output=True, text=True, timeout=60, check=False
        )
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(args)} failed: {done.stderr.strip() or done.stdout}")
        return done

    # -- configuration ---------------------------------------------------------------------

    def write_config(self) -> None:
        """slurm.conf (and job_submit.lua) for this host, on free loopback ports."""
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for name in self.node_names:
            (self.root / "spool" / name).mkdir(exist_ok=True)
        os.chmod(self.root / "munge", 0o711)  # clients reach the socket
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        ctld, *node_ports = free_ports(1 + self.nodes)
        host = socket.gethostname()
        r = self.root
        s = self.short()  # where the Unix sockets are (munge's, slurmd's)
        lines = [
            "ClusterName=schedlab",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctld}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={s}/munge/munge.socket",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={s}/spool/%n",
            f"SlurmctldPidFile={r}/slurmctld.pid",
            f"SlurmdPidFile={r}/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={r}/jobcomp.txt",
            "MpiDefault=none",
            "SelectType=select/linear",
            f"SchedulerType={self.scheduler}",
            "ReturnToService=2",
            f"SchedulerParameters={self.scheduler_parameters}",
            "MinJobAge=3600",  # finished jobs stay visible to squeue for an hour
            "InactiveLimit=0",
            "KillWait=5",
            "SlurmdTimeout=60",
        ]
        if self.hold_partition is not None:
            lua = JOB_SUBMIT_LUA.read_text().replace('["batch"]', f'["{self.hold_partition}"]')
            (r / "job_submit.lua").write_text(lua)
            lines.append("JobSubmitPlugins=lua")
        for name, port in zip(self.node_names, node_ports, strict=True):
            lines.append(
                f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} "
                f"CPUs={self.cpus} State=UNKNOWN"
            )
        lines.append(
            f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
        )
        self.conf.write_text("\n".join(lines) + "\n")

    # -- daemons ---------------------------------------------------------------------------

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 (the child keeps it)
        with log:
            proc = subprocess.Popen(
                args,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pids[name] = proc.pid
        (self.root / "pids.json").write_text(json.dumps(self.pids))

    def start(self, timeout: float = 60.0) -> LocalCluster:
        """Write the configuration, start the daemons and wait until every node is idle."""
        missing = missing_programs()
        if missing:
            raise ClusterError(
                f"Slurm/munge programs not installed: {', '.join(missing)} "
                "(apt-get install slurm-wlm munge)"
            )
        self.write_config()
        m = self.short() / "munge"
        self._spawn(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={m}/munge.socket",
                f"--key-file={m}/munge.key",
                f"--pid-file={m}/munged.pid",
                f"--log-file={self.root}/log/munged.log",
                f"--seed-file={m}/munged.seed",
                "--num-threads=2",
            ],
        )
        self._wait(lambda: (m / "munge.socket").exists(), 10.0, "munged")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i"])
        self._wait(lambda: self.run("sinfo", "-h", check=False).returncode == 0, 30, "slurmctld")
        for name in self.node_names:
            self._spawn(f"slurmd-{name}", ["slurmd", "-D", "-N", name])
        self._wait(self.idle, timeout, "slurmd")
        return self

    def submit_sleeps(
        self,
        count: int,
        seed: int,
        sleeps: tuple[int, int] = (1, 3),
        nodes: tuple[int, int] = (1, 3),
    ) -> list[int]:
        """``count`` jobs through ``sbatch``: each needs ``nodes`` nodes and sleeps ``sleeps``
        seconds (uniform integers), time limit 1-5 min, and appends its id to ``runs.txt`` when
        it runs; returns their ids."""
        import numpy as np

        rng = np.random.default_rng(seed)
        runs = self.root / "runs.txt"
        ids = []
        for _ in range(count):
            need = int(rng.integers(nodes[0], nodes[1] + 1))
            sleep = int(rng.integers(sleeps[0], sleeps[1] + 1))
            limit = int(rng.integers(1, 6))
            out = self.run(
                "sbatch", "--parsable", "-N", str(need), "-t", str(limit), "-o", "/dev/null",
                "--wrap", f"echo $SLURM_JOB_ID >> {runs}; sleep {sleep}",
            )  # fmt: skip
            ids.append(int(out.stdout.split(";")[0]))
        return ids

    def idle(self) -> bool:
        """Every node is up and idle (``sinfo``)."""
        done = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
        return done.returncode == 0 and all(states.get(n) == "idle" for n in self.node_names)

    def _wait(self, ready, timeout: float, daemon: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ready():
                return
            dead = [n for n, pid in self.pids.items() if not _alive(pid)]
            if dead:
                break
            time.sleep(0.2)
        self.stop()
        raise ClusterError(
            f"{daemon} did not come up within {timeout:g} s; see the logs in {self.root}/log"
        )

    def stop(self) -> None:
        """End the daemons by their process ids (TERM, then KILL after 10 s), slurmd first."""
        self.pids = self.pids or _read_pids(self.root)
        order = sorted(self.pids, key=lambda n: ("slurmd" not in n, n == "munged"))
        for name in order:
            _end(self.pids[name])
        self.pids = {}
        for name in ("pids.json", "short"):
            path = self.root / name
            if name == "short" and path.exists():
                Path(path.read_text()).unlink(missing_ok=True)
            path.unlink(missing_ok=True)

    def short(self) -> Path:
        """The folder by a path short enough for a Unix socket inside (108 bytes): the folder
        itself, or a symbolic link to it in the temporary directory (removed by :meth:`stop`)."""
        if len(str(self.root)) <= 48:
            return self.root
        record = self.root / "short"
        if record.exists():
            return Path(record.read_text())
        import tempfile

        link = Path(tempfile.mkdtemp(prefix="slurm-"))
        link.rmdir()
        link.symlink_to(self.root)
        record.write_text(str(link))
        return link


def _read_pids(root: Path) -> dict[str, int]:
    path = root / "pids.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child (a cluster started by another process)
        try:  # gone, or a zombie its new parent has not reaped
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rpartition(")")[2].split()[0] != "Z"
    return done == 0


def _end(pid: int, grace: float = 10.0) -> None:
    """TERM the process ``pid`` (and its session's group), KILL it if it outlives ``grace``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        end = time.monotonic() + grace
        while time.monotonic() < end:
            if not _alive(pid):
                return
            time.sleep(0.05)
