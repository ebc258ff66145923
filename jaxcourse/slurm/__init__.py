"""The course's own Slurm cluster, and running programs and jobs on it.

Slurm is what most university and HPC clusters run. This module starts a
small cluster that belongs to the course, on this one machine, so that the
multi-process chapter and the grader can use real ``sbatch`` and ``srun``:

- :func:`start` and :func:`stop` (``make cluster``, ``make cluster-stop``, or
  ``python -m jaxcourse.slurm start|stop|status``) run ``munged``,
  ``slurmctld`` and one or two ``slurmd`` with a configuration written under
  ``~/.jax-course/slurm/`` (``JAX_COURSE_SLURM_DIR`` moves it): its own
  config, state and spool folders, logs, munge key and socket. It never
  reads or changes a system-wide Slurm or munge installation.
- The nodes listen on loopback addresses. Where this process may create
  namespaces (root), there are two nodes, ``node1`` on 127.0.0.1 and
  ``node2`` on 127.0.0.2: each ``slurmd`` runs in a UTS and mount namespace
  of its own, with its node's name as hostname and an ``/etc/hosts`` that
  names both, so that a job sees two hosts, as on a real cluster. Without
  that, one node, ``localhost``.
- :func:`client_env` is the environment in which ``sbatch``, ``srun``,
  ``squeue`` talk to this cluster (``SLURM_CONF``); :func:`submit`,
  :func:`wait` and :func:`job_state` submit a batch script, wait for it with a
  time limit, and read its state; :func:`launch_srun` runs a program as
  ``srun`` tasks with the interface of :func:`jaxcourse.launch.launch`.

Every wait has a time limit, and a missing Slurm is a one-line
:class:`SlurmUnavailableError`, never a hang or a traceback from here.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from jaxcourse import CourseError

__all__ = [
    "DAEMONS",
    "Cluster",
    "JobState",
    "SlurmError",
    "SlurmTimeoutError",
    "SlurmUnavailableError",
    "cancel",
    "client_env",
    "cluster",
    "command",
    "describe",
    "for_chapter",
    "job_output",
    "job_state",
    "launch_srun",
    "release",
    "running",
    "sacct",
    "srun_errors",
    "start",
    "status",
    "stop",
    "submit",
    "unavailable_reason",
    "wait",
]

DIR_ENV = "JAX_COURSE_SLURM_DIR"
# Every daemon the course starts carries this variable (the cluster's
# folder), and so does everything they start: how :func:`stop` recognizes
# them, and never another Slurm's processes.
MARK_ENV = "JAX_COURSE_SLURM"
CLIENTS = ("sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel", "sacct")
DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "course"
# What a job can end as; any other state means it is not done yet.
FINAL_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT",
})


class SlurmError(CourseError):
    """Something about the course's Slurm cluster or a job on it went wrong."""


class SlurmUnavailableError(SlurmError):
    """Slurm is not installed here, or the course's cluster is not running."""


class SlurmTimeoutError(SlurmError):
    """A job or the cluster did not get where it should in time."""


# --------------------------------------------------------------------------
# Where everything lives
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """The folders and files of the course's cluster."""

    root: Path

    @property
    def conf(self) -> Path:
        """``slurm.conf``; clients find it through ``SLURM_CONF``."""
        return self.root / "etc" / "slurm.conf"

    @property
    def hosts(self) -> Path:
        """The ``/etc/hosts`` the nodes see: both node names, on loopback."""
        return self.root / "etc" / "hosts"

    @property
    def key(self) -> Path:
        """The cluster's own munge key."""
        return self.root / "munge" / "munge.key"

    @property
    def socket(self) -> Path:
        """The socket of the cluster's own ``munged``."""
        return self.root / "run" / "munge.socket"

    @property
    def log_dir(self) -> Path:
        """The daemons' logs."""
        return self.root / "log"

    @property
    def jobs_log(self) -> Path:
        """Slurm's job completion log (``sacct -c`` reads it)."""
        return self.log_dir / "jobs.txt"

    def pid_file(self, daemon: str) -> Path:
        """Return the pid file of ``munged``, ``slurmctld`` or ``slurmd-<node>``."""
        return self.root / "run" / f"{daemon}.pid"

    def log(self, daemon: str) -> Path:
        """Return the log file of ``daemon``."""
        return self.log_dir / f"{daemon}.log"


def cluster() -> Cluster:
    """Return the course's cluster (its folder: ``$JAX_COURSE_SLURM_DIR``)."""
    root = os.environ.get(DIR_ENV) or Path.home() / ".jax-course" / "slurm"
    return Cluster(Path(root).expanduser().resolve())


def unavailable_reason() -> str | None:
    """Say in one line why the course's cluster cannot run here, or ``None``."""
    missing = [c for c in (*CLIENTS, *DAEMONS) if shutil.which(c) is None]
    if missing:
        return (
            f"Slurm is not installed here ({', '.join(missing)} not found); "
            "`make cluster` installs it (Debian's slurmctld, slurmd, "
            "slurm-client and munge)"
        )
    return None


def client_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment whose Slurm commands use the course's cluster.

    ``SLURM_CONF`` points at the course's ``slurm.conf``, and the directory
    of this Python comes first on ``PATH``, so that a job's ``python`` is
    the course's.
    """
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = str(cluster().conf)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    return env


def _run(argv: Sequence[str], timeout: float = 20.0,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a Slurm command against the course's cluster, with a time limit."""
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout,
            env=client_env() if env is None else dict(env), stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise SlurmUnavailableError(unavailable_reason() or
                                    f"{argv[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise SlurmTimeoutError(
            f"`{' '.join(argv[:2])}` did not answer within {timeout:g} s; is the "
            f"cluster up? (its logs: {_tilde(cluster().log_dir)})") from None


def _tilde(path: Path) -> str:
    # Messages (and stored notebook outputs) name the home folder as ~.
    with contextlib.suppress(ValueError):
        return "~/" + str(path.relative_to(Path.home()))
    return str(path)


# --------------------------------------------------------------------------
# The daemons: start, stop, status
# --------------------------------------------------------------------------


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
    cpus = os.cpu_count() or 1
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
# bound to CPUs (the 4-task jobs of chapter 7 share this machine's cores).
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
{node_lines}
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=120 State=UP
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
# Jobs: submit, wait, state
# --------------------------------------------------------------------------


@dataclass
class JobState:
    """A job's state, as ``scontrol show job`` gives it."""

    job_id: str
    state: str
    exit_code: str = ""
    reason: str = ""
    nodes: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """Whether the job has ended, in any way."""
        return self.state in FINAL_STATES


def _require_cluster() -> None:
    if "SLURM_CONF" in os.environ and Path(os.environ["SLURM_CONF"]) != cluster().conf:
        return  # someone else's cluster, chosen on purpose
    now = status()
    if not now.up:
        raise SlurmUnavailableError(now.reason)


def submit(script: str | os.PathLike[str], *, args: Sequence[str] = (),
           cwd: str | os.PathLike[str] | None = None,
           options: Sequence[str] = (), timeout: float = 30.0) -> str:
    """Submit a batch script with ``sbatch``; return the job id.

    Raises
    ------
    SlurmUnavailableError
        If the course's cluster is not running.
    SlurmError
        If ``sbatch`` refused the script; the message is its own.
    """
    _require_cluster()
    result = _run(["sbatch", "--parsable", *options, os.fspath(script), *args],
                  timeout=timeout, env=_job_env(cwd))
    if result.returncode != 0:
        raise SlurmError(f"sbatch refused {os.fspath(script)!r}: "
                         f"{result.stderr.strip()}")
    return result.stdout.strip().split(";")[0]


def _job_env(cwd: str | os.PathLike[str] | None) -> dict[str, str]:
    env = client_env()
    if cwd is not None:
        env["PWD"] = os.fspath(cwd)
    return env


def job_state(job_id: str) -> JobState:
    """Return the state of job ``job_id`` (an array: of its first task)."""
    states = job_states(job_id)
    if not states:
        raise SlurmError(f"Slurm knows no job {job_id}")
    return states[0]


def job_states(job_id: str) -> list[JobState]:
    """Return the state of job ``job_id``, one entry per array task."""
    result = _run(["scontrol", "show", "job", "-o", str(job_id)])
    found = []
    for line in result.stdout.splitlines():
        fields = dict(
            item.split("=", 1) for item in line.split() if "=" in item
        )
        if "JobId" not in fields:
            continue
        task = fields.get("ArrayTaskId")
        found.append(JobState(
            job_id=f"{fields.get('ArrayJobId', fields['JobId'])}_{task}"
            if task else fields["JobId"],
            state=fields.get("JobState", "UNKNOWN"),
            exit_code=fields.get("ExitCode", ""),
            reason=fields.get("Reason", ""),
            nodes=fields.get("NodeList", ""),
            fields=fields,
        ))
    return found


def cancel(job_id: str) -> None:
    """Cancel job ``job_id`` (every task of an array); no error if it ended."""
    with contextlib.suppress(SlurmError):
        _run(["scancel", str(job_id)], timeout=10)


def wait(job_id: str, timeout: float = 120.0, poll: float = 0.5) -> list[JobState]:
    """Wait until every task of job ``job_id`` has ended; return their states.

    Raises
    ------
    SlurmTimeoutError
        After ``timeout`` seconds; the job is cancelled first, so that
        nothing of it keeps running.
    """
    deadline = time.monotonic() + timeout
    while True:
        states = job_states(job_id)
        if states and all(s.done for s in states):
            return states
        if time.monotonic() > deadline:
            cancel(job_id)
            where = ", ".join(f"{s.job_id} {s.state}" for s in states) or "unknown"
            raise SlurmTimeoutError(
                f"job {job_id} was not done after {timeout:g} s ({where}); it was "
                "cancelled")
        time.sleep(poll)


# --------------------------------------------------------------------------
# srun with the launcher's interface
# --------------------------------------------------------------------------

_TASK_FAILED = re.compile(r"srun: error: \S+: tasks? ([\d,-]+): (.*)")


def launch_srun(
    script: str | os.PathLike[str],
    num_processes: int = 4,
    devices_per_process: int = 2,
    *,
    args: Sequence[str] = (),
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    echo: bool = True,
    check: bool = True,
    grace: float = 1.0,
):
    """Run ``script`` as ``num_processes`` Slurm tasks: ``srun -n N python script``.

    The interface and the result are :func:`jaxcourse.launch.launch`'s, so a
    check can launch through Slurm when the course's cluster is up and
    through the course's launcher otherwise. The tasks start on one node,
    with ``--overcommit`` (more tasks than cores) and ``--kill-on-bad-exit``
    (a task that fails ends the others); a bare ``jax.distributed.initialize()``
    reads Slurm's variables. The coordinator gets a free port on 127.0.0.1
    (``JAX_COORDINATOR_PORT``, ``JAX_COORDINATOR_BIND_ADDRESS``), rather than
    the one JAX derives from the job id.

    Raises
    ------
    SlurmUnavailableError
        If the course's cluster is not running.
    RankFailedError, LaunchTimeoutError
        As for :func:`~jaxcourse.launch.launch`; the failed rank is read from
        ``srun``'s report. On a timeout the job is cancelled too.
    """
    from jaxcourse.launch.output import SrunLines, tail
    from jaxcourse.launch.result import LaunchResult, RankFailedError
    from jaxcourse.launch.start import _child_env, _command, free_port
    from jaxcourse.launch.supervise import supervise
    from jaxcourse.launch.worker import (
        COORDINATOR_ENV,
        LOOPBACK,
        NUM_PROCESSES_ENV,
        PROCESS_ID_ENV,
    )

    if num_processes < 1 or devices_per_process < 1:
        raise ValueError("num_processes and devices_per_process must be >= 1")
    _command(script, cwd)  # fail early on a missing script
    _require_cluster()
    port = free_port()
    name = f"jaxcourse-{secrets.token_hex(4)}"
    first_node = _configured_nodes(cluster())[0][0]
    argv = [
        "srun", f"--job-name={name}", "--nodes=1", f"--nodelist={first_node}",
        f"--ntasks={num_processes}", "--overcommit", "--kill-on-bad-exit=1",
        "--label", f"--time={max(1, int(timeout // 60) + 1)}",
        "python", "-u", os.fspath(script), *args,
    ]  # fmt: skip
    child = client_env(_child_env(devices_per_process, env, 0))
    child.update({"JAX_COORDINATOR_PORT": str(port),
                  "JAX_COORDINATOR_BIND_ADDRESS": f"{LOOPBACK}:{port}"})
    for var in (COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV):
        child.pop(var, None)
    result = LaunchResult(command=list(argv), num_processes=num_processes,
                          devices_per_process=devices_per_process,
                          coordinator=f"{first_node}:{port}")
    try:
        result = supervise([(argv, child)], result, timeout, cwd, echo, False, grace,
                           num_processes, lines=SrunLines())
    finally:
        # srun ended by the launcher leaves its allocation to Slurm: release it.
        _run(["scancel", f"--name={name}"], timeout=10)
    if result.error is not None and result.error.startswith("mpirun exited"):
        workdir = Path(cwd) if cwd is not None else Path.cwd()
        code = next((c for c in result.returncodes if c), 1) or 1
        rank, how = _first_failure(result, code)
        lines = result.lines(rank, "stderr") if rank >= 0 else []
        summary = tail(lines, workdir) if lines else ""
        message = how + (f":\n{summary}" if summary else "")
        message += "\nEvery other rank was ended (srun --kill-on-bad-exit)."
        result.error = message
        if check:
            raise RankFailedError(message, result, rank, code)
    elif result.error is not None and check:
        from jaxcourse.launch.result import LaunchTimeoutError

        raise LaunchTimeoutError(result.error, result, list(range(num_processes)))
    return result


# What a rank prints when it fails only because another one did: the
# coordination service reports the lost task, or a collective loses its peer.
_KNOCK_ON = ("coordination", "heartbeat", "UNAVAILABLE", "unhealthy",
             "DEADLINE_EXCEEDED", "Connection reset", "Connection closed",
             "closed by peer", "Broken pipe", "terminated", "Gloo")
_SRUN_OWN = re.compile(r"^(srun: |slurmstepd: |\S*: \*\*\* (STEP|JOB) )")


def _first_failure(result: Any, code: int) -> tuple[int, str]:
    """Return the rank that failed first, from srun's report, and how it ended.

    Every failed task is named on a line of srun's (``task 1: Exited with
    exit code 1``), in the order srun saw them end. When one rank dies its
    partners soon fail too, and on a loaded machine one of them may end
    first: a rank whose last words are a lost peer's is passed over for one
    that failed on its own.
    """
    failed: list[tuple[int, str]] = []
    for line in result.stderr[0].splitlines():
        hit = _TASK_FAILED.search(line)
        if hit:
            for part in hit[1].split(","):
                first, _, last = part.partition("-")
                ranks = range(int(first), int(last or first) + 1)
                failed += [(r, hit[2]) for r in ranks]
    if not failed:
        return -1, f"srun exited with code {code}"

    def knock_on(rank: int) -> bool:
        own = [x for x in result.lines(rank, "stderr") if not _SRUN_OWN.match(x)]
        return any(word in line for line in own[-6:] for word in _KNOCK_ON)

    rank, what = next(((r, w) for r, w in failed if not knock_on(r)), failed[0])
    return rank, f"rank {rank} {what[0].lower()}{what[1:]}"


# --------------------------------------------------------------------------
# For the chapter: bring the cluster up, read a job's output and state
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


def job_output(path: str | os.PathLike[str], num_tasks: int) -> list[list[str]]:
    """Read a job's ``srun --label`` output file: each task's lines, in order.

    Gloo's connection messages are dropped (as the launcher does); lines
    without a label (srun's own, the batch script's) are left out.
    """
    from jaxcourse.launch.output import GlooFilter, SrunLines

    per_task: list[list[str]] = [[] for _ in range(num_tasks)]
    filters = [GlooFilter() for _ in range(num_tasks)]
    splitter = SrunLines()
    for line in Path(path).read_text(errors="replace").splitlines():
        for rank, stream, text in splitter.feed(line):
            if (stream == "stdout" and rank < num_tasks
                    and not filters[rank].is_noise(text)):
                per_task[rank].append(text)
    return per_task


def srun_errors(path: str | os.PathLike[str]) -> list[str]:
    """Return srun's error lines about tasks (``srun: error: NODE: task 2: ...``)."""
    return [line.strip() for line in Path(path).read_text(errors="replace").splitlines()
            if _TASK_FAILED.search(line)]


def describe(state: JobState, keys: Sequence[str] = (
        "JobId", "JobName", "Partition", "JobState", "ExitCode", "NodeList",
        "NumNodes", "NumTasks", "TimeLimit")) -> str:
    """``scontrol show job``'s fields ``keys``, as ``Key=value`` on one line."""
    return " ".join(f"{k}={state.fields.get(k, '')}" for k in keys)


def command(*argv: str, timeout: float = 20.0) -> str:
    """Run a Slurm command (``squeue``, ``sinfo``...) on the course's cluster.

    Returns what it printed (its error output if it failed).
    """
    result = _run(list(argv), timeout=timeout)
    return (result.stdout or result.stderr).rstrip()


def sacct(job_id: str, fmt: str = "JobName,Partition,NNodes,NodeList,State") -> str:
    """Return ``sacct -c`` (the job completion log) for one job, in columns ``fmt``."""
    result = _run(["sacct", "-c", "-j", str(job_id), f"--format={fmt}"])
    return (result.stdout or result.stderr).rstrip()


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxcourse.slurm start|stop|status``."""
    parser = argparse.ArgumentParser(description="The course's own Slurm cluster.")
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for the nodes to be idle")
    parser.add_argument("--started-file", type=Path,
                        help="(start) write 1 there if this call started the "
                             "cluster, 0 if it was up")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            now = start(args.timeout)
            if args.started_file is not None:
                args.started_file.write_text("1\n" if now.started else "0\n")
        elif args.command == "stop":
            stop()
        else:
            now = status()
            print(now)
            return 0 if now.up else 1
    except SlurmError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
