"""The course's Slurm cluster's daemons: configure, start, stop, and say how they are.

:func:`start` writes ``slurm.conf`` and runs ``munged``, ``slurmctld`` and one
``slurmd`` per node (two nodes, each in namespaces of its own, where this
process is root), then waits until the nodes are idle; :func:`stop` ends
exactly the processes that carry the cluster's mark; :func:`status` and
:func:`running` say what is up. :func:`for_chapter` and :func:`release` bring
the cluster up for a notebook and stop it again if the notebook started it.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from jaxcourse.slurm.base import (
    MARK_ENV,
    PARTITION,
    URGENT,
    Cluster,
    SlurmError,
    SlurmTimeoutError,
    SlurmUnavailableError,
    _run,
    _tilde,
    cluster,
    unavailable_reason,
)

__all__ = ["Status", "for_chapter", "release", "running", "start", "status", "stop"]


def _free_port(avoid: set[int]) -> int:
    import socket

    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in avoid and port + 1 not in avoid:
            return port


def _can_use_namespaces() -> bool:
    """Whether slurmd can get a UTS and mount namespace of its own (root)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "-u", "true"], capture_output=True, timeout=10
    )
    return probe.returncode == 0


def _nodes(two: bool) -> list[tuple[str, str]]:
    if two:
        return [("node1", "127.0.0.1"), ("node2", "127.0.0.2")]
    return [("localhost", "127.0.0.1")]


def _config(c: Cluster, nodes: list[tuple[str, str]], ports: tuple[int, int]) -> str:
    user = getpass.getuser()
    # At least 4 CPUs per node, whatever this machine has (config_overrides,
    # below, makes slurmd take them as configured): with --overcommit each job
    # holds one, and chapter 8 keeps one job running beside the others on
    # node1 while tests may add theirs. On 2 cores, node1 would otherwise be
    # full, and a job sent to node2 instead could not start its srun steps.
    cpus = max(os.cpu_count() or 1, 4)
    node_lines = "\n".join(
        f"NodeName={name} NodeAddr={addr} CPUs={cpus} State=UNKNOWN"
        for name, addr in nodes
    )
    return f"""\
# The course's own Slurm cluster, written by `python -m jaxcourse.slurm start`.
# Everything it uses lives in this folder; nothing is shared with a system Slurm.
ClusterName=jaxcourse
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={c.socket}
StateSaveLocation={c.root / 'state'}
SlurmdSpoolDir={c.root / 'spool'}/%n
SlurmctldPidFile={c.pid_file('slurmctld')}
SlurmdPidFile={c.root / 'run'}/slurmd-%n.pid
SlurmctldLogFile={c.log('slurmctld')}
SlurmdLogFile={c.log_dir}/slurmd-%n.log
PlugStackConfig={c.root / 'etc' / 'plugstack.conf'}
# No cgroups here: processes are tracked by their parents, and tasks are not
# bound to CPUs (the 4-task jobs of chapter 8 share this machine's cores).
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SchedulerType=sched/builtin
ReturnToService=2
# slurmd binds to its node's address, not to every interface.
CommunicationParameters=NoInAddrAny
# No database: `sacct -c` reads this job completion log, and `scontrol show
# job` keeps a finished job for ten minutes.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={c.jobs_log}
MinJobAge=600
# A cancelled task gets SIGTERM, then SIGKILL 5 s later (default 30 s).
KillWait=5
# A job of the partition `urgent` preempts the jobs of `course` it needs the
# nodes of: they get SIGTERM (JAX's preemption notice), SIGKILL KillWait
# later, and go back to the queue. (A GraceTime would give them longer, but
# slurmctld checks it only every 30 s or so.)
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
{node_lines}
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=120 State=UP PriorityTier=1
PartitionName={URGENT} Nodes=ALL MaxTime=120 State=UP PriorityTier=2 PreemptMode=OFF
"""


def _configured_nodes(c: Cluster) -> list[tuple[str, str]]:
    if not c.conf.is_file():
        return []
    return re.findall(r"^NodeName=(\S+) NodeAddr=(\S+)", c.conf.read_text(), re.M)


def _daemon_names(c: Cluster) -> list[str]:
    return ["munged", "slurmctld", *(f"slurmd-{n}" for n, _ in _configured_nodes(c))]


def _ours(pid: int, c: Cluster) -> psutil.Process | None:
    """Return the living process ``pid`` if the course's cluster started it."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if proc.environ().get(MARK_ENV) == str(c.root):
            return proc
    except (psutil.Error, OSError):
        pass
    return None


def _pid(c: Cluster, daemon: str) -> int | None:
    try:
        return int(c.pid_file(daemon).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def running(c: Cluster | None = None) -> dict[str, int]:
    """Return the course's daemons that are alive: name to pid."""
    c = c or cluster()
    alive = {}
    for name in _daemon_names(c):
        pid = _pid(c, name)
        if pid is not None and _ours(pid, c) is not None:
            alive[name] = pid
    return alive


def _node_states(timeout: float = 10.0) -> dict[str, str]:
    result = _run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=timeout)
    if result.returncode != 0:
        return {}
    return dict(line.split()[:2] for line in result.stdout.splitlines()
                if len(line.split()) >= 2)


@dataclass
class Status:
    """What :func:`status` and :func:`start` found."""

    up: bool
    nodes: dict[str, str] = field(default_factory=dict)
    daemons: dict[str, int] = field(default_factory=dict)
    started: bool = False
    reason: str = ""

    def __str__(self) -> str:
        if not self.up:
            return f"the course's Slurm cluster is not running: {self.reason}"
        nodes = ", ".join(f"{n} ({s})" for n, s in self.nodes.items())
        return (f"the course's Slurm cluster is up: partition {PARTITION!r}, "
                f"nodes {nodes}")


def status() -> Status:
    """Say whether the course's cluster is up, and its nodes' states."""
    reason = unavailable_reason()
    if reason is not None:
        return Status(False, reason=reason)
    c = cluster()
    daemons = running(c)
    expected = _daemon_names(c)
    if not c.conf.is_file() or set(daemons) != set(expected):
        down = [d for d in expected if d not in daemons] or ["all"]
        return Status(False, daemons=daemons,
                      reason=f"not started ({', '.join(down)} down); "
                             "`make cluster` starts it")
    nodes = _node_states()
    if not nodes or any(s.rstrip("*~#") not in {"idle", "mixed", "allocated",
                                                "completing"}
                        for s in nodes.values()):
        return Status(False, nodes, daemons,
                      reason=f"nodes not ready ({nodes or 'no answer'})")
    return Status(True, nodes, daemons)


def _spawn(argv: list[str], c: Cluster, env: dict[str, str]) -> None:
    """Start a daemon that forks into the background; wait for its parent."""
    result = subprocess.run(argv, env=env, capture_output=True, text=True,
                            timeout=30, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise SlurmError(
            f"`{' '.join(argv)}` failed (exit {result.returncode}): "
            f"{(result.stderr or result.stdout).strip()[-300:]}; see its log in "
            f"{_tilde(c.log_dir)}")


def start(timeout: float = 60.0, quiet: bool = False) -> Status:
    """Start the course's cluster, or do nothing if it is up; wait until idle.

    Parameters
    ----------
    timeout : float
        Seconds to wait for every node to show ``idle`` in ``sinfo``.
    quiet : bool
        Print nothing.

    Returns
    -------
    Status
        With ``started`` true if this call started the daemons.

    Raises
    ------
    SlurmUnavailableError
        If Slurm or munge is not installed.
    SlurmTimeoutError
        If the nodes are not idle in time; the message names the logs.
    """
    reason = unavailable_reason()
    if reason is not None:
        raise SlurmUnavailableError(reason)
    c = cluster()
    now = status()
    if now.up:
        if not quiet:
            print(f"{now} (already running; nothing changed)")
        return now
    # Half up (a daemon died, or a machine restarted): start from clean.
    stop(quiet=True)
    for sub in ("etc", "state", "spool", "log", "run", "munge"):
        (c.root / sub).mkdir(parents=True, exist_ok=True)
    # munged wants its key private and its socket's folder reachable.
    (c.root / "munge").chmod(0o700)
    (c.root / "run").chmod(0o755)
    if not c.key.is_file():
        c.key.write_bytes(secrets.token_bytes(1024))
        c.key.chmod(0o400)
    two = _can_use_namespaces()
    nodes = _nodes(two)
    old = c.conf.read_text() if c.conf.is_file() else ""
    ports = tuple(int(p) for p in re.findall(r"^Slurm(?:ctld|d)Port=(\d+)", old, re.M))
    if len(ports) != 2 or not all(_port_free(p) for p in ports):
        first = _free_port(set())
        ports = (first, _free_port({first}))
    text = _config(c, nodes, ports)  # type: ignore[arg-type]
    if text != old:
        c.conf.write_text(text)
    (c.root / "etc" / "plugstack.conf").touch()
    etc_hosts = Path("/etc/hosts")
    system_hosts = etc_hosts.read_text() if etc_hosts.is_file() else ""
    c.hosts.write_text(system_hosts.rstrip("\n") + "\n# the course's Slurm nodes\n"
                       + "".join(f"{addr} {name}\n" for name, addr in nodes))
    env = {**os.environ, "SLURM_CONF": str(c.conf), MARK_ENV: str(c.root)}
    # --force: munged otherwise refuses a socket in a folder that other
    # users cannot enter (a home folder); only this user needs it.
    _spawn(["munged", "--force", f"--socket={c.socket}", f"--key-file={c.key}",
            f"--log-file={c.log('munged')}", f"--pid-file={c.pid_file('munged')}",
            f"--seed-file={c.root / 'munge' / 'munged.seed'}"], c, env)
    # -c: a fresh queue each time (no job of an earlier run comes back).
    _spawn(["slurmctld", "-c"], c, env)
    for name, _ in nodes:
        argv = ["slurmd", "-N", name]
        if two:
            # Its own hostname and /etc/hosts: slurmd binds to the address its
            # hostname resolves to (NoInAddrAny), and jobs see their node.
            argv = ["unshare", "-m", "-u", "sh", "-c",
                    f'hostname {name} && mount --bind "$0" /etc/hosts && exec "$@"',
                    str(c.hosts), *argv]
        _spawn(argv, c, env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = status()
        if now.up and all(s.rstrip("*~#") == "idle" for s in now.nodes.values()):
            now.started = True
            if not quiet:
                print(f"{now} (started; logs in {_tilde(c.log_dir)})")
            return now
        time.sleep(0.5)
    logs = ", ".join(_tilde(c.log(d)) for d in ("slurmctld", "munged"))
    raise SlurmTimeoutError(
        f"the course's Slurm cluster did not come up within {timeout:g} s "
        f"({now.reason}); see {logs} and {_tilde(c.log_dir)}/slurmd-*.log")


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _marked(c: Cluster) -> list[psutil.Process]:
    """Every living process that carries this cluster's mark (daemons, steps)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if proc.pid != os.getpid() and proc.environ().get(MARK_ENV) == str(c.root):
                found.append(proc)
    return found


def stop(timeout: float = 20.0, quiet: bool = False) -> list[int]:
    """Stop the course's cluster: cancel its jobs, end its daemons by pid.

    Only processes that carry the course's mark are signalled: those named
    in the pid files, then any job step left from them. A system-wide Slurm
    is never touched.

    Returns
    -------
    list of int
        The pids that were ended.
    """
    c = cluster()
    daemons = running(c)
    if "slurmctld" in daemons:
        with contextlib.suppress(SlurmError):
            _run(["scancel", f"--partition={PARTITION}"], timeout=10)
            end = time.monotonic() + 10
            while time.monotonic() < end:
                queue = _run(["squeue", "-h", "-o", "%i"], timeout=10)
                if queue.returncode != 0 or not queue.stdout.strip():
                    break
                time.sleep(0.3)
    ended = []
    # Nodes first, then the controller, then munge, which they talk to.
    order = sorted(daemons, key=lambda d: (not d.startswith("slurmd-"),
                                           d == "munged"))
    procs = [p for p in (_ours(daemons[d], c) for d in order) if p is not None]
    procs += [p for p in _marked(c) if p.pid not in {q.pid for q in procs}]
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGTERM)
            ended.append(proc.pid)
    _, left = psutil.wait_procs(procs, timeout=timeout)
    for proc in left + _marked(c):
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL)
            ended.append(proc.pid)
    psutil.wait_procs(left, timeout=5)
    for name in _daemon_names(c):
        c.pid_file(name).unlink(missing_ok=True)
    if not quiet:
        print(f"stopped the course's Slurm cluster ({len(set(ended))} processes)"
              if ended else "the course's Slurm cluster was not running")
    return sorted(set(ended))


# --------------------------------------------------------------------------
# For the chapter: bring the cluster up, stop it if it was started here
# --------------------------------------------------------------------------

_STARTED_HERE: list[bool] = []


def for_chapter(timeout: float = 60.0) -> Status | None:
    """Bring the course's cluster up for a notebook; ``None`` if it cannot run.

    Prints one line either way: the cluster's partition and nodes, or why
    the Slurm cells are skipped. :func:`release` stops the cluster again if
    this call started it.
    """
    try:
        now = start(timeout, quiet=True)
    except SlurmError as err:
        print(f"Slurm cells skipped: {err}")
        return None
    _STARTED_HERE.append(now.started)
    print(now)
    return now


def release() -> None:
    """Stop the cluster if :func:`for_chapter` started it; leave it up otherwise."""
    if any(_STARTED_HERE):
        stop(quiet=True)
    _STARTED_HERE.clear()
