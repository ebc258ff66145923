"""What a launch returns, and what it raises when it does not end well.

:class:`LaunchResult` records every rank's exit code and output; each
:class:`LaunchError` carries the result of the launch that failed, so a
caller can still read what the ranks printed and which pids it started.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxcourse import CourseError

__all__ = [
    "LaunchError",
    "LaunchResult",
    "LaunchTimeoutError",
    "MpirunNotFoundError",
    "PortInUseError",
    "RankFailedError",
]


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
        The command each rank ran (for :func:`~jaxcourse.launch.launch_mpirun`,
        the ``mpirun`` command line), with the interpreter written as ``python``.
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
    descendants : list of int
        Pids of the processes the ranks started, seen while they ran.
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
