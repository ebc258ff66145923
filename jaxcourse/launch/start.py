"""Starting a launch: the ranks' command lines, environments and coordinator port.

:func:`launch` starts ``N`` local processes itself; :func:`launch_mpirun`
has Open MPI's ``mpirun`` start them, as clusters do. Both check the
coordinator port before anything starts, give every rank its simulated
device count (:func:`jaxcourse.devices.xla_flags`, the same flag
:func:`jaxcourse.devices.use_cpu_devices` writes) and hand the processes to
:func:`jaxcourse.launch.supervise.supervise`.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from jaxcourse.devices import xla_flags
from jaxcourse.launch.result import LaunchResult, MpirunNotFoundError, PortInUseError
from jaxcourse.launch.supervise import supervise
from jaxcourse.launch.worker import (
    COORDINATOR_ENV,
    DEVICES_ENV,
    LOOPBACK,
    NUM_PROCESSES_ENV,
    PROCESS_ID_ENV,
)

__all__ = ["EnvSpec", "free_port", "launch", "launch_mpirun"]

EnvSpec = Mapping[str, str] | Callable[[int], Mapping[str, str]] | None


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _check_port(port: int) -> None:
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, not {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Like the coordinator's own socket: a port that only lingers from a
        # closed connection (TIME_WAIT) is free; one that something listens on
        # is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise PortInUseError(
                f"port {port} on {LOOPBACK} is already in use, so the coordinator "
                "could not listen there; nothing was started. Pass port=None to "
                "let the launcher pick a free port, or end whatever holds it "
                "(often a launch that is still running)."
            ) from None


def launch(
    script: str | os.PathLike[str] | Sequence[str],
    num_processes: int = 4,
    devices_per_process: int = 2,
    *,
    args: Sequence[str] = (),
    timeout: float = 60.0,
    port: int | None = None,
    env: EnvSpec = None,
    cwd: str | os.PathLike[str] | None = None,
    echo: bool = True,
    check: bool = True,
    grace: float = 1.0,
) -> LaunchResult:
    """Run ``script`` in ``num_processes`` local processes and wait for all.

    Each process gets its rank, the process count, the coordinator address
    and its device count in the ``JAX_COURSE_*`` environment variables (see
    :mod:`jaxcourse.launch`). Output is streamed live, each line prefixed by
    ``[rank R]``. If a rank exits with a non-zero code, or the ranks are not
    all done after ``timeout`` seconds, every process (and its children) is
    ended: SIGTERM, then SIGKILL after ``grace`` seconds.

    Parameters
    ----------
    script : path-like or sequence of str
        A Python file, run as ``python -u script *args``, or a full command
        line (then ``args`` is appended to it).
    num_processes : int
        How many processes (ranks) to start.
    devices_per_process : int
        Simulated CPU devices in each process.
    args : sequence of str
        Command-line arguments for the script, the same for every rank.
    timeout : float
        Seconds before the launch is declared hung and ended.
    port : int, optional
        Coordinator port on 127.0.0.1; by default a free one is picked.
    env : mapping or callable, optional
        Extra environment variables for every rank, or a function of the
        rank that returns them.
    cwd : path-like, optional
        Working directory of the ranks; by default the current one.
    echo : bool
        Print the ranks' output live. The result holds it either way.
    check : bool
        Raise on failure (the default); with ``False``, return the result
        with its ``error`` set instead.
    grace : float
        Seconds between SIGTERM and SIGKILL when ending processes.

    Returns
    -------
    LaunchResult
        Exit codes, output and process ids of every rank.

    Raises
    ------
    PortInUseError
        If ``port`` is taken (before anything starts).
    RankFailedError
        If a rank exited with a non-zero code.
    LaunchTimeoutError
        If the ranks were still running after ``timeout`` seconds.
    FileNotFoundError
        If ``script`` is a path and no such file exists.
    """
    if num_processes < 1 or devices_per_process < 1:
        raise ValueError("num_processes and devices_per_process must be >= 1")
    command = [*_command(script, cwd), *args]
    if port is None:
        port = free_port()
    else:
        _check_port(port)
    coordinator = f"{LOOPBACK}:{port}"
    result = LaunchResult(
        command=_printable(command),
        num_processes=num_processes,
        devices_per_process=devices_per_process,
        coordinator=coordinator,
    )
    envs = []
    for rank in range(num_processes):
        child = _child_env(devices_per_process, env, rank)
        child.update(
            {
                COORDINATOR_ENV: coordinator,
                NUM_PROCESSES_ENV: str(num_processes),
                PROCESS_ID_ENV: str(rank),
            }
        )
        envs.append(child)
    return supervise(
        [(command, e) for e in envs], result, timeout, cwd, echo, check, grace, None
    )


def launch_mpirun(
    script: str | os.PathLike[str],
    num_processes: int = 4,
    devices_per_process: int = 2,
    *,
    args: Sequence[str] = (),
    timeout: float = 60.0,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    echo: bool = True,
    check: bool = True,
    grace: float = 1.0,
) -> LaunchResult:
    """Run ``script`` under Open MPI: ``mpirun -n num_processes python script``.

    This is how clusters start JAX: ``mpirun`` starts the ranks and gives
    them ``OMPI_*`` variables, from which a bare
    ``jax.distributed.initialize()`` works out the coordinator, the process
    count and the rank. None of the ``JAX_COURSE_*`` rank variables is set
    (only ``JAX_COURSE_DEVICES_PER_PROCESS``). To stay on this machine's
    loopback, Open MPI is told to use the ``lo`` interface only, and JAX to
    serve its coordinator on 127.0.0.1 at a free port (``JAX_COORDINATOR_PORT``,
    ``JAX_COORDINATOR_BIND_ADDRESS``). Adds ``--allow-run-as-root`` when run
    as root and ``--oversubscribe`` (more ranks than CPU cores is fine here).

    Parameters and result are those of :func:`launch`; the result's ``pids``
    holds the single ``mpirun`` and ``descendants`` the ranks it started.

    Raises
    ------
    MpirunNotFoundError
        If ``mpirun`` is not on the ``PATH``.
    PortInUseError, RankFailedError, LaunchTimeoutError
        As for :func:`launch`; a rank's failure is reported through mpirun's
        exit code.
    """
    if num_processes < 1 or devices_per_process < 1:
        raise ValueError("num_processes and devices_per_process must be >= 1")
    _command(script, cwd)  # fail early on a missing script
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise MpirunNotFoundError(
            "Open MPI's `mpirun` is not installed here. On Debian or Ubuntu: "
            "`sudo apt-get install openmpi-bin` (`make setup` does it)."
        )
    if port is None:
        port = free_port()
    else:
        _check_port(port)
    coordinator = f"{LOOPBACK}:{port}"
    argv = ["mpirun"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    argv += [
        "--oversubscribe",
        "--tag-output",
        "--mca", "oob_tcp_if_include", "lo",
        "--mca", "btl_tcp_if_include", "lo",
        "-n", str(num_processes),
        "python", "-u", os.fspath(script), *args,
    ]  # fmt: skip
    child = _child_env(devices_per_process, env, 0)
    child.update(
        {
            "JAX_COORDINATOR_PORT": str(port),
            "JAX_COORDINATOR_BIND_ADDRESS": coordinator,
        }
    )
    # Ranks are started as `python`: put this interpreter first on the PATH.
    child["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), child.get("PATH", "")]
    )
    for name in (COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV):
        child.pop(name, None)
    result = LaunchResult(
        command=list(argv),
        num_processes=num_processes,
        devices_per_process=devices_per_process,
        coordinator=coordinator,
    )
    argv[0] = mpirun
    return supervise(
        [(argv, child)], result, timeout, cwd, echo, check, grace, num_processes
    )


def _command(
    script: str | os.PathLike[str] | Sequence[str],
    cwd: str | os.PathLike[str] | None,
) -> list[str]:
    if isinstance(script, (str, os.PathLike)):
        path = Path(cwd or ".") / script
        if not path.is_file():
            raise FileNotFoundError(f"no script {os.fspath(script)!r} to launch")
        return [sys.executable, "-u", os.fspath(script)]
    command = [os.fspath(a) for a in script]
    if not command:
        raise ValueError("the command line is empty")
    return command


def _printable(command: list[str]) -> list[str]:
    # The interpreter's absolute path says nothing and differs per machine.
    return ["python" if a == sys.executable else a for a in command]


def _child_env(devices: int, env: EnvSpec, rank: int) -> dict[str, str]:
    child = dict(os.environ)
    # Inherited XLA_FLAGS may carry the notebook's own device count.
    child["XLA_FLAGS"] = xla_flags(devices, child.get("XLA_FLAGS", ""))
    child[DEVICES_ENV] = str(devices)
    child.setdefault("JAX_PLATFORMS", "cpu")
    # Flush every print at once, so output streams live and in order.
    child["PYTHONUNBUFFERED"] = "1"
    extra = env(rank) if callable(env) else env
    child.update(extra or {})
    return child


