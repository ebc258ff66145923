"""Supervision: run a launch's processes, stream their output, end them all.

:func:`supervise` starts each process in its own session with this launch's
tag (:data:`jaxcourse.processes.TAG_ENV`) in its environment, streams every
line through :mod:`jaxcourse.launch.output`, and watches for the first rank
to fail and for the deadline. On a failure, a timeout, an interrupt (the
notebook's stop button) or a normal end alike, the whole tree goes through
:func:`jaxcourse.processes.end_tree`, the grader's teardown too: process
groups, every descendant seen while the ranks ran, and every process that
carries the tag (one in a new session, or handed to ``init`` by a double fork
or ``nohup``, still does). SIGTERM comes first, then SIGKILL: JAX catches
SIGTERM (to prepare for preemption) and may carry on.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from jaxcourse import load_clock
from jaxcourse.launch.output import (
    GlooFilter,
    MpiLines,
    SrunLines,
    lost_a_peer,
    mpi_failure_message,
    rank_failure_message,
    read_lines,
    shorten,
    timeout_message,
)
from jaxcourse.launch.result import (
    LaunchError,
    LaunchResult,
    LaunchTimeoutError,
    RankFailedError,
)
from jaxcourse.processes import TAG_ENV, descendants, end_tree, new_tag

__all__ = ["supervise"]

# Seconds the other ranks get, after the first failure, to end on their own,
# so that the exit of the rank that caused it is recorded too (its waiting
# thread has to run). A machine loaded past that falls back to the first
# exit seen.
SETTLE = 1.0


def supervise(
    jobs: list[tuple[list[str], dict[str, str]]],
    result: LaunchResult,
    timeout: float,
    cwd: str | os.PathLike[str] | None,
    echo: bool,
    check: bool,
    grace: float,
    mpi_ranks: int | None,
    lines: MpiLines | SrunLines | None = None,
) -> LaunchResult:
    """Start ``jobs``, stream their output, and end them all on any failure.

    Parameters
    ----------
    jobs : list of (argv, env)
        One command line and environment per process to start.
    result : LaunchResult
        Filled in with pids, exit codes and output.
    timeout, cwd, echo, check, grace
        As for :func:`jaxcourse.launch.launch`.
    mpi_ranks : int or None
        The rank count when the single job is ``mpirun`` (or ``srun``), whose
        one output stream carries every rank's lines, tagged; ``None`` for one
        job a rank.
    lines : MpiLines or SrunLines, optional
        What splits that stream by rank: mpirun's tags by default, or srun's
        labels.

    Returns
    -------
    LaunchResult
        ``result``, with ``error`` set on failure when ``check`` is false.

    Raises
    ------
    RankFailedError, LaunchTimeoutError
        On failure, when ``check`` is true.
    """
    # Under mpirun one process carries every rank's output, tagged by rank.
    n_streams = mpi_ranks or len(jobs)
    out_lines: list[list[str]] = [[] for _ in range(n_streams)]
    err_lines: list[list[str]] = [[] for _ in range(n_streams)]
    queued: queue.Queue = queue.Queue()
    procs: list[subprocess.Popen] = []
    readers: list[threading.Thread] = []
    reading: dict[int, threading.Thread] = {}  # id of each pipe: its reader
    # Descendants of the ranks (children they started, or mpirun's ranks),
    # kept as psutil handles, which notice if a pid is reused.
    seen: dict[int, psutil.Process] = {}
    workdir = Path(cwd) if cwd is not None else Path.cwd()
    started = time.monotonic()
    # The timeout counts the time the processes had, as a Check's time limit
    # does (jaxcourse.load_clock): on a machine whose cores other work holds,
    # ranks that are slow to start are not called hung. The Check's own
    # clock watches them too, while the launch runs.
    clock = load_clock.LoadClock(compiles=False)
    failure: LaunchError | None = None
    ending = False
    gloo = {
        stream: [GlooFilter() for _ in range(n_streams)]
        for stream in ("stdout", "stderr")
    }

    mpi_lines = lines if lines is not None else MpiLines()
    exits: list[int] = []  # indices of the processes, in the order they ended
    settled = 0.0  # once a rank has failed: when the others are ended

    def take(rank: int, stream: str, line: str) -> None:
        if mpi_ranks is None:
            keep(rank, stream, line)
        else:
            for rank_line in mpi_lines.feed(line, stream):
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
            print(f"[rank {rank}] {shorten(line, workdir)}", file=target, flush=True)

    def drain(wait: float) -> None:
        with contextlib.suppress(queue.Empty):
            item = queued.get(timeout=wait)
            while True:
                if item is not None:
                    take(*item)
                item = queued.get_nowait()

    # Every process of this launch, and all they start, carry this tag.
    tag = new_tag()
    unwatch = load_clock.watch(
        lambda: [*(p.pid for p in procs if p.returncode is None), *seen])
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
                    target=read_lines, args=(pipe, index, stream, queued), daemon=True
                )
                reader.start()
                readers.append(reader)
                reading[id(pipe)] = reader
            threading.Thread(
                target=_wait_for, args=(proc, index, exits, queued), daemon=True
            ).start()
        polls = 0
        while True:
            drain(0.05)
            polls += 1
            if polls % 10 == 1:
                seen.update(descendants(procs))
            codes = [p.returncode for p in procs]  # set by the _wait_for threads
            # When one rank dies, its partners soon fail too ("connection
            # closed by peer"), and a loaded machine may record a partner's
            # exit before the cause's: the ranks left are given a moment to
            # end on their own before they are ended, and the rank reported
            # is the first whose last words are its own (below).
            failed = [(i, codes[i]) for i in list(exits) if codes[i] != 0]
            timed_out = clock.overdue(timeout)
            running = [i for i, c in enumerate(codes) if c is None]
            if not failed and not timed_out and running:
                continue
            if failed and not timed_out and running:
                settled = settled or time.monotonic() + SETTLE
                if time.monotonic() < settled:
                    continue
            # Only ranks the launcher ends say things not shown; the last lines
            # of ranks that all ended on their own are shown, however late
            # their reader delivers them (a loaded machine lost "done").
            ending = bool(running)
            end_tree(procs, seen, tag=tag, grace=grace)
            _finish(readers, drain, flush_mpi)
            _record(result, procs, out_lines, err_lines, seen, started)
            if mpi_ranks is not None and (failed or timed_out):
                running = list(range(mpi_ranks))
            for rank in running:  # ended by the launcher, no exit code of its own
                result.returncodes[rank] = None
            if failed:
                rank, code = next(
                    ((r, c) for r, c in failed
                     if not lost_a_peer(err_lines[r] or out_lines[r])), failed[0])
                if mpi_ranks is not None:
                    message = mpi_failure_message(code, err_lines, workdir)
                    rank = -1
                else:
                    message = rank_failure_message(
                        rank, code, err_lines, out_lines, workdir
                    )
                failure = RankFailedError(message, result, rank, code)
            elif timed_out:
                message = timeout_message(timeout, running, out_lines)
                failure = LaunchTimeoutError(message, result, running)
            break
    finally:
        # Whatever happened (including a KeyboardInterrupt from the notebook's
        # stop button), no process of this launch, nor any child of one,
        # outlives it. Harmless when everything has exited already.
        unwatch()
        _end_all(procs, seen, tag, grace)
        for p in procs:
            for pipe in (p.stdout, p.stderr):
                reader = reading.get(id(pipe))
                # A reader still waiting in readline() holds the pipe's lock,
                # so closing it would wait for whatever still holds the other
                # end (a process no teardown may end: another user's, say).
                # That daemon thread closes the pipe itself once it is freed.
                if reader is None or not reader.is_alive():
                    with contextlib.suppress(OSError):
                        pipe.close()
    if failure is not None:
        result.error = str(failure)
        if check:
            raise failure from None
    return result


def _end_all(procs: list[subprocess.Popen], seen: dict[int, psutil.Process],
             tag: str, grace: float) -> None:
    """End every process of the launch, even if an interrupt comes meanwhile.

    A Check's time limit repeats its interrupt while the first one unwinds
    for longer than its grace (a loaded machine slows the ending): cut short,
    ``end_tree`` would leave ranks running. It is run again until it
    completes, and the first interrupt is raised afterwards.
    """
    pending: BaseException | None = None
    while True:
        try:
            end_tree(procs, seen, tag=tag, grace=grace)
            break
        except Exception:
            raise  # a real failure of the ending: not retried
        except BaseException as exc:  # an interrupt (time limit, stop button)
            pending = pending or exc
    if pending is not None:
        raise pending


def _wait_for(
    proc: subprocess.Popen, index: int, exits: list[int], wake: queue.Queue
) -> None:
    """Record the moment ``proc`` ends, in order with the other processes."""
    proc.wait()
    exits.append(index)
    wake.put(None)


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
    """Fill in ``result`` once every process has ended."""
    result.elapsed = time.monotonic() - started
    if len(procs) == len(out_lines):
        result.returncodes = [p.returncode for p in procs]
    else:  # mpirun: one exit code stands for all ranks
        result.returncodes = [procs[0].returncode] * len(out_lines)
    result.stdout = ["".join(f"{line}\n" for line in ls) for ls in out_lines]
    result.stderr = ["".join(f"{line}\n" for line in ls) for ls in err_lines]
    result.descendants = sorted(seen)
