"""Start several JAX processes on one machine, the way a cluster would.

JAX's multi-process model runs one Python program per host; each calls
:func:`jax.distributed.initialize` and they meet at a coordinator. On one
laptop we can play every host: :func:`launch` starts ``N`` local processes
with ``M`` simulated CPU devices each, streams their output prefixed by rank,
and makes sure that a crash or a hang ends *every* process with a message
that says which rank failed and why. :func:`launch_mpirun` starts the same
script through Open MPI's ``mpirun``, as clusters do.

Each process started by :func:`launch` finds its place in these environment
variables (the worker reads them itself, or calls :func:`initialize_from_env`):

``JAX_COURSE_COORDINATOR``
    ``"127.0.0.1:PORT"``: where process 0 serves the coordinator.
``JAX_COURSE_NUM_PROCESSES``
    The number of processes, ``N``.
``JAX_COURSE_PROCESS_ID``
    This process's rank, ``0 .. N-1``.
``JAX_COURSE_DEVICES_PER_PROCESS``
    The number of simulated CPU devices each process should create, ``M``
    (``XLA_FLAGS`` carries the same number, for scripts that do nothing).

The launcher keeps all its traffic on the loopback address 127.0.0.1: the
coordinator, Open MPI's own connections under :func:`launch_mpirun`, and the
Gloo connections of workers that call :func:`initialize_from_env`. (A worker
that calls ``jax.distributed.initialize`` itself leaves Gloo at its default:
the address this machine's hostname resolves to.)

Failures never leave a process behind: each rank runs in its own process
group, and on a crash, a timeout or an interrupt (the notebook's stop button)
every group is sent SIGTERM, then SIGKILL. The SIGKILL matters: JAX catches
SIGTERM (to prepare for preemption) and may carry on. Every process of a
launch carries a tag in its environment, so that a child that left its group
(a new session, a double fork, ``nohup``) is found and ended too; the
teardown is :func:`jaxcourse.processes.end_tree`, the grader's as well.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

import psutil

from jaxcourse import CourseError
from jaxcourse.processes import TAG_ENV, end_tree, new_tag

__all__ = [
    "COORDINATOR_ENV",
    "DEVICES_ENV",
    "NUM_PROCESSES_ENV",
    "PROCESS_ID_ENV",
    "LaunchError",
    "LaunchResult",
    "LaunchTimeoutError",
    "MpirunNotFoundError",
    "PortInUseError",
    "RankFailedError",
    "free_port",
    "initialize_from_env",
    "launch",
    "launch_mpirun",
]

COORDINATOR_ENV = "JAX_COURSE_COORDINATOR"
NUM_PROCESSES_ENV = "JAX_COURSE_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_COURSE_PROCESS_ID"
DEVICES_ENV = "JAX_COURSE_DEVICES_PER_PROCESS"

LOOPBACK = "127.0.0.1"
_DEVICE_FLAG = "--xla_force_host_platform_device_count"
# Gloo announces every connection it makes on stdout ("[Gloo] Rank 3 is
# connected to 7 peer ranks. Expected number of connected peer ranks is : 7"),
# one message per device, from several threads at once: the messages arrive
# cut into their pieces and shuffled, one line per message, some lines holding
# only a number. They say nothing to a learner and are dropped (see
# _GlooFilter).
_GLOO_OPENER = "[Gloo] Rank "
_GLOO_WORDS = re.compile(
    r"\[Gloo\] Rank | is connected to | peer ranks\. "
    r"|Expected number of connected peer ranks is : "
)
_GLOO_PIECES = re.compile(rf"(?:{_GLOO_WORDS.pattern}|\d+)*")


class _MpiLines:
    """Reassemble each rank's lines from mpirun's tagged output chunks.

    Every chunk that ``mpirun`` relays starts with its rank's tag; only the
    last chunk of one of mpirun's output lines ends with a newline. So in a
    line ``[1,1]<stdout>:process 1[1,2]<stdout>:process 2``, rank 2's line is
    complete while rank 1's continues in a later chunk.
    """

    def __init__(self) -> None:
        self.partial: dict[tuple[int, str], str] = {}

    def feed(self, line: str) -> list[tuple[int, str, str]]:
        """Return the ``(rank, stream, line)`` that ``line`` completes."""
        tags = list(_MPI_TAG.finditer(line))
        first = tags[0].start() if tags else len(line)
        done = []
        if first > 0 or not tags:  # mpirun's own words, shown as rank 0's
            done.append((0, "stderr", line[:first]))
        for tag, after in zip(tags, [*tags[1:], None], strict=True):
            key = (int(tag[1]), tag[2])
            text = line[tag.end() : after.start() if after else len(line)]
            self.partial[key] = self.partial.get(key, "") + text
            if after is None:
                done.append((*key, self.partial.pop(key)))
        return done

    def flush(self) -> list[tuple[int, str, str]]:
        """Return the unfinished lines, once mpirun has exited."""
        done = [(*key, text) for key, text in sorted(self.partial.items())]
        self.partial.clear()
        return done


class _GlooFilter:
    """Recognize the lines of Gloo's connection messages in one stream.

    A message is written piece by piece (words and numbers) and ends with a
    newline, so ``k`` messages written at once give ``k`` lines made only of
    those pieces. A line is dropped if it is made only of such pieces and
    either holds one of Gloo's words or completes a message opened earlier.
    A line of the program's own (even just a number) is kept.
    """

    def __init__(self) -> None:
        self.open = 0  # messages begun ("[Gloo] Rank ") but not yet ended

    def is_noise(self, line: str) -> bool:
        """Return whether ``line`` belongs to Gloo's connection messages."""
        if not _GLOO_PIECES.fullmatch(line):
            return False
        if not _GLOO_WORDS.search(line) and self.open == 0:
            return False
        self.open = max(0, self.open + line.count(_GLOO_OPENER) - 1)
        return True


# mpirun --tag-output writes "[jobid,rank]<stdout>:text". It tags every
# chunk it reads from a rank, not every line: a line that a rank wrote in two
# pieces comes out with a second tag inside it, or split around another
# rank's output (see _MpiLines).
_MPI_TAG = re.compile(r"\[\d+,(\d+)\]<(stdout|stderr)>:")

EnvSpec = Mapping[str, str] | Callable[[int], Mapping[str, str]] | None


class LaunchError(CourseError):
    """A launch that did not end well; ``result`` holds what each rank did.

    In a notebook the error shows as its message alone (no traceback through
    the launcher's internals): the message already says which rank failed,
    why, and what the ranks printed last.
    """

    def __init__(self, message: str, result: LaunchResult | None = None) -> None:
        super().__init__(message)
        self.result = result

    @property
    def pids(self) -> list[int]:
        """Process ids of every process the launch started (possibly empty)."""
        return self.result.all_pids if self.result is not None else []


class PortInUseError(LaunchError):
    """The coordinator port asked for is taken; nothing was started."""


class RankFailedError(LaunchError):
    """A rank exited with a non-zero code; every other rank was ended."""

    def __init__(
        self, message: str, result: LaunchResult, rank: int, returncode: int
    ) -> None:
        super().__init__(message, result)
        self.rank = rank
        self.returncode = returncode


class LaunchTimeoutError(LaunchError):
    """The ranks did not all finish in time; every rank was ended."""

    def __init__(self, message: str, result: LaunchResult, running: list[int]) -> None:
        super().__init__(message, result)
        self.running = running


class MpirunNotFoundError(LaunchError):
    """Open MPI's ``mpirun`` is not installed."""


@dataclass
class LaunchResult:
    """What every rank of a launch did.

    Attributes
    ----------
    command : list of str
        The command each rank ran (for :func:`launch_mpirun`, the ``mpirun``
        command line), with the interpreter written as ``python``.
    num_processes, devices_per_process : int
        The shape of the launch.
    coordinator : str
        ``"127.0.0.1:PORT"``.
    pids : list of int
        Process id of each process started directly (one per rank, or the
        single ``mpirun``).
    returncodes : list of int or None
        Exit code of each rank; ``None`` where the launcher had to end it,
        negative where a signal ended it.
    stdout, stderr : list of str
        Everything each rank printed, in the order it printed it.
    elapsed : float
        Seconds from the first start to the last exit.
    error : str or None
        The failure's message, or ``None`` if every rank exited with code 0.
    """

    command: list[str]
    num_processes: int
    devices_per_process: int
    coordinator: str
    pids: list[int] = field(default_factory=list)
    returncodes: list[int | None] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    error: str | None = None
    descendants: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every rank exited with code 0."""
        return self.error is None

    @property
    def all_pids(self) -> list[int]:
        """The started processes and every descendant seen while they ran."""
        return sorted({*self.pids, *self.descendants})

    def lines(self, rank: int, stream: str = "stdout") -> list[str]:
        """Return the lines that ``rank`` printed on ``stream``."""
        return getattr(self, stream)[rank].splitlines()

    def show(self, stream: str = "stdout") -> None:
        """Print every rank's output, rank 0 first, each line tagged by rank.

        Unlike the live stream, this order does not depend on timing, so a
        notebook can store it and re-check it.
        """
        for rank in range(self.num_processes):
            for line in self.lines(rank, stream):
                print(f"[rank {rank}] {line}")


# --------------------------------------------------------------------------
# Inside a worker


def initialize_from_env(*, fail_fast: bool = True) -> None:
    """Join the launch this process belongs to; call it before any JAX work.

    Started by :func:`launch`, it does what a worker would otherwise write
    out by hand: Gloo for cross-process collectives on CPU, the simulated
    device count, and :func:`jax.distributed.initialize` with the address,
    process count and rank from the environment (coordinator bound to
    127.0.0.1 only). Started by ``mpirun``, ``srun`` or on a Cloud TPU VM
    (no ``JAX_COURSE_PROCESS_ID``), it calls ``jax.distributed.initialize()``
    with no arguments and lets JAX read the cluster's own variables.

    Parameters
    ----------
    fail_fast : bool
        End the process with exit code 1 as soon as an exception escapes the
        script. By default JAX's exit handler first waits (up to five
        minutes) at a shutdown barrier for the other ranks, so a crashed rank
        would look like a hang to the launcher.
    """
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    devices = os.environ.get(DEVICES_ENV)
    if devices:
        jax.config.update("jax_num_cpu_devices", int(devices))
    if fail_fast:
        sys.excepthook = _exit_after_traceback
    if PROCESS_ID_ENV not in os.environ:
        try:
            jax.distributed.initialize()
        except ValueError as exc:
            if "coordinator_address" not in str(exc):
                raise
            raise LaunchError(
                "this script is one rank of a multi-process run, but no launcher "
                "started it. Start it with jaxcourse.launch.launch(...) or under "
                "`mpirun`/`srun`."
            ) from None
        return
    _pin_gloo_to_loopback()
    address = os.environ[COORDINATOR_ENV]
    jax.distributed.initialize(
        coordinator_address=address,
        num_processes=int(os.environ[NUM_PROCESSES_ENV]),
        process_id=int(os.environ[PROCESS_ID_ENV]),
        # By default the coordinator listens on every interface.
        coordinator_bind_address=address,
    )


def _exit_after_traceback(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    sys.__excepthook__(exc_type, exc, tb)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def _pin_gloo_to_loopback() -> None:
    """Make Gloo listen on 127.0.0.1 rather than where the hostname resolves.

    JAX 0.10 builds its Gloo collectives without an address, and Gloo then
    binds to whatever this machine's hostname resolves to: a LAN address on
    many machines, nothing at all on some laptops. All our processes share
    one machine, so loopback is right. This reaches into JAX internals; if
    they move, Gloo keeps its default.
    """
    try:
        from functools import partial

        from jax._src.lib import _jax
    except ImportError:
        return
    make = getattr(_jax, "make_gloo_tcp_collectives", None)
    if make is None or isinstance(make, partial):
        return
    _jax.make_gloo_tcp_collectives = partial(make, hostname=LOOPBACK)


# --------------------------------------------------------------------------
# Ports


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


# --------------------------------------------------------------------------
# Launching


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
    the module's docstring). Output is streamed live, each line prefixed by
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
    return _supervise(
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
    return _supervise(
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
    flags = [
        f for f in child.get("XLA_FLAGS", "").split() if not f.startswith(_DEVICE_FLAG)
    ]
    child["XLA_FLAGS"] = " ".join([*flags, f"{_DEVICE_FLAG}={devices}"])
    child[DEVICES_ENV] = str(devices)
    child.setdefault("JAX_PLATFORMS", "cpu")
    # Flush every print at once, so output streams live and in order.
    child["PYTHONUNBUFFERED"] = "1"
    extra = env(rank) if callable(env) else env
    child.update(extra or {})
    return child


def _read_lines(pipe: IO[bytes], rank: int, stream: str, out: queue.Queue) -> None:
    with contextlib.suppress(ValueError, OSError):
        for raw in iter(pipe.readline, b""):
            out.put((rank, stream, raw.decode("utf-8", "replace").rstrip("\r\n")))
    with contextlib.suppress(OSError):
        pipe.close()
    # Wake the supervisor at once: the process has most likely just ended.
    out.put(None)


def _wait_for(
    proc: subprocess.Popen, index: int, exits: list[int], wake: queue.Queue
) -> None:
    """Record the moment ``proc`` ends, in order with the other processes."""
    proc.wait()
    exits.append(index)
    wake.put(None)


def _supervise(
    jobs: list[tuple[list[str], dict[str, str]]],
    result: LaunchResult,
    timeout: float,
    cwd: str | os.PathLike[str] | None,
    echo: bool,
    check: bool,
    grace: float,
    mpi_ranks: int | None,
) -> LaunchResult:
    """Start ``jobs``, stream their output, and end them all on any failure."""
    # Under mpirun one process carries every rank's output, tagged by rank.
    n_streams = mpi_ranks or len(jobs)
    out_lines: list[list[str]] = [[] for _ in range(n_streams)]
    err_lines: list[list[str]] = [[] for _ in range(n_streams)]
    lines: queue.Queue = queue.Queue()
    procs: list[subprocess.Popen] = []
    readers: list[threading.Thread] = []
    # Descendants of the ranks (children they started, or mpirun's ranks),
    # kept as psutil handles, which notice if a pid is reused.
    seen: dict[int, psutil.Process] = {}
    workdir = Path(cwd) if cwd is not None else Path.cwd()
    started = time.monotonic()
    deadline = started + timeout
    failure: LaunchError | None = None
    ending = False
    gloo = {
        stream: [_GlooFilter() for _ in range(n_streams)]
        for stream in ("stdout", "stderr")
    }

    mpi_lines = _MpiLines()
    exits: list[int] = []  # indices of the processes, in the order they ended

    def take(rank: int, stream: str, line: str) -> None:
        if mpi_ranks is None:
            keep(rank, stream, line)
        else:
            for rank_line in mpi_lines.feed(line):
                keep(*rank_line)

    def flush_mpi() -> None:
        for rank_line in mpi_lines.flush():
            keep(*rank_line)

    def keep(rank: int, stream: str, line: str) -> None:
        if rank >= n_streams or gloo[stream][rank].is_noise(line):
            return
        (out_lines if stream == "stdout" else err_lines)[rank].append(line)
        # Once the launcher is ending the ranks, what they say (JAX logs the
        # SIGTERM) is kept in the result but not shown.
        if echo and not ending:
            target = sys.stdout if stream == "stdout" else sys.stderr
            print(f"[rank {rank}] {_shorten(line, workdir)}", file=target, flush=True)

    def drain(wait: float) -> None:
        with contextlib.suppress(queue.Empty):
            item = lines.get(timeout=wait)
            while True:
                if item is not None:
                    take(*item)
                item = lines.get_nowait()

    # Every process of this launch, and all they start, carry this tag.
    tag = new_tag()
    try:
        for index, (argv, env) in enumerate(jobs):
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env={**env, TAG_ENV: tag},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Its own process group: ending the group ends its children.
                start_new_session=True,
            )
            procs.append(proc)
            result.pids.append(proc.pid)
            for stream, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                reader = threading.Thread(
                    target=_read_lines, args=(pipe, index, stream, lines), daemon=True
                )
                reader.start()
                readers.append(reader)
            threading.Thread(
                target=_wait_for, args=(proc, index, exits, lines), daemon=True
            ).start()
        polls = 0
        while True:
            drain(0.05)
            polls += 1
            if polls % 10 == 1:
                seen.update(_descendants(procs))
            codes = [p.returncode for p in procs]  # set by the _wait_for threads
            # When one rank dies, its partners soon fail too ("connection
            # closed by peer"): the first to exit is the one to report.
            failed = [(i, codes[i]) for i in list(exits) if codes[i] != 0]
            timed_out = time.monotonic() > deadline
            if not failed and not timed_out and any(c is None for c in codes):
                continue
            running = [i for i, c in enumerate(codes) if c is None]
            ending = True
            _end_all(procs, seen, grace, tag)
            _finish(readers, drain, flush_mpi)
            _record(result, procs, out_lines, err_lines, seen, started)
            if mpi_ranks is not None and (failed or timed_out):
                running = list(range(mpi_ranks))
            for rank in running:  # ended by the launcher, no exit code of its own
                result.returncodes[rank] = None
            if failed:
                rank, code = failed[0]
                if mpi_ranks is not None:
                    message = _mpi_failure(code, err_lines, workdir)
                    rank = -1
                else:
                    message = _rank_failure(rank, code, err_lines, out_lines, workdir)
                failure = RankFailedError(message, result, rank, code)
            elif timed_out:
                message = _timeout_message(timeout, running, out_lines)
                failure = LaunchTimeoutError(message, result, running)
            break
    finally:
        # Whatever happened (including a KeyboardInterrupt from the notebook's
        # stop button), no process of this launch, nor any child of one,
        # outlives it. Harmless when everything has exited already.
        _end_all(procs, seen, grace, tag)
        for p in procs:
            for pipe in (p.stdout, p.stderr):
                with contextlib.suppress(OSError):
                    pipe.close()
    if failure is not None:
        result.error = str(failure)
        if check:
            raise failure from None
    return result


def _descendants(procs: list[subprocess.Popen]) -> dict[int, psutil.Process]:
    found: dict[int, psutil.Process] = {}
    for p in procs:
        if p.poll() is not None:
            continue  # its pid may already belong to someone else
        with contextlib.suppress(psutil.Error):
            found.update(
                (c.pid, c) for c in psutil.Process(p.pid).children(recursive=True)
            )
    return found


def _end_all(
    procs: list[subprocess.Popen],
    seen: dict[int, psutil.Process],
    grace: float,
    tag: str | None = None,
) -> None:
    """SIGTERM every rank and all it started, SIGKILL what is left after ``grace`` s.

    The teardown is :func:`jaxcourse.processes.end_tree`, shared with the
    grader: process groups, descendants seen while the ranks ran, and every
    process carrying this launch's tag (a child in a new session or handed to
    ``init`` by a double fork still carries it).
    """
    end_tree(procs, seen, tag=tag, grace=grace)


def _finish(
    readers: list[threading.Thread],
    drain: Callable[[float], None],
    leftovers: Callable[[], None],
) -> None:
    """Collect the output still in the pipes once the processes are gone."""
    end = time.monotonic() + 5.0
    for reader in readers:
        reader.join(timeout=max(0.0, end - time.monotonic()))
    drain(0.0)
    leftovers()


def _record(
    result: LaunchResult,
    procs: list[subprocess.Popen],
    out_lines: list[list[str]],
    err_lines: list[list[str]],
    seen: dict[int, psutil.Process],
    started: float,
) -> None:
    result.elapsed = time.monotonic() - started
    if len(procs) == len(out_lines):
        result.returncodes = [p.returncode for p in procs]
    else:  # mpirun: one exit code stands for all ranks
        result.returncodes = [procs[0].returncode] * len(out_lines)
    result.stdout = ["".join(f"{line}\n" for line in ls) for ls in out_lines]
    result.stderr = ["".join(f"{line}\n" for line in ls) for ls in err_lines]
    result.descendants = sorted(seen)


_SITE_PACKAGES = re.compile(r"[^\s\"']*[/\\]site-packages[/\\]")


def _shorten(line: str, workdir: Path) -> str:
    """Drop the folders of this machine from paths in ``line``.

    Tracebacks name files by absolute path; the launch folder and the
    virtual environment's location say nothing to the reader (and must not
    end up in a stored notebook).
    """
    line = line.replace(f"{workdir}{os.sep}", "")
    return _SITE_PACKAGES.sub("site-packages/", line)


_CARETS = re.compile(r"^\s*[~^]+\s*$")


def _tail(lines: list[str], workdir: Path, n: int = 4) -> str:
    """Summarize what a rank printed last, for an error message.

    A Python traceback is cut down to the last frame in the user's own code
    (not in an installed package) and the exception; anything else to its
    last ``n`` lines.
    """
    lines = [
        _shorten(line, workdir)
        for line in lines
        if line.strip() and not _CARETS.match(line)
    ]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (")]
    if starts:
        block = lines[starts[-1] + 1 :]
        frames = [i for i, line in enumerate(block) if line.startswith("  File ")]
        if frames:
            # The exception starts at the first unindented line after the frames.
            end = next(
                (i for i in range(frames[-1] + 1, len(block)) if block[i][:1] != " "),
                len(block),
            )
            own = [i for i in frames if "site-packages/" not in block[i]]
            kept = []
            if own:
                kept += block[own[-1] : own[-1] + 2]
            kept += block[end : end + n]
            return "\n".join(f"    {line}" for line in kept)
    return "\n".join(f"    {line}" for line in lines[-n:])


def _rank_failure(
    rank: int,
    code: int,
    err_lines: list[list[str]],
    out_lines: list[list[str]],
    workdir: Path,
) -> str:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    lines = err_lines[rank] or out_lines[rank]
    tail = _tail(lines, workdir)
    message = f"rank {rank} {how}"
    message += f":\n{tail}" if tail else " and printed nothing."
    return message + "\nEvery other rank was ended."


def _mpi_failure(code: int, err_lines: list[list[str]], workdir: Path) -> str:
    ranks = [r for r, lines in enumerate(err_lines) if lines]
    message = f"mpirun exited with code {code}"
    if ranks:
        message += f"; last lines on stderr of rank {ranks[-1]}:\n"
        message += _tail(err_lines[ranks[-1]], workdir)
    return message + "\nEvery rank was ended."


def _timeout_message(
    timeout: float, running: list[int], out_lines: list[list[str]]
) -> str:
    names = ", ".join(str(r) for r in running)
    which = f"rank {names} is" if len(running) == 1 else f"ranks {names} are"
    lines = [
        f"timed out after {timeout:g} s; {which} still running (a collective "
        "waiting for a rank that never joins?). Every rank was ended.",
        "Last line each rank printed:",
    ]
    for rank in range(len(out_lines)):
        last = out_lines[rank][-1] if out_lines[rank] else "(nothing)"
        lines.append(f"    [rank {rank}] {last}")
    return "\n".join(lines)
