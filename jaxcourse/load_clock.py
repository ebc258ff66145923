"""A clock that other processes cannot speed up: time a piece of work had.

A time limit counted on the wall clock calls a right answer endless on a
busy machine: while other processes hold the cores, the answer waits for
one, and its seconds run on. :class:`LoadClock` counts only what a quiet
machine would have counted too: the wall time since it started, less the
time the watched threads were *kept waiting for a core* (runnable, but
another process's thread was running), less the time JAX spent compiling
with XLA (which the course's time limits never meant to count: a first
compile with the compilation cache off takes seconds, and many more under
load).

Why this measure, and not another:

- *CPU time* (of the thread or the process) would not count a learner's
  ``time.sleep`` or a thread blocked on a lock, so an answer that waits for
  ever would never be stopped; and a process's CPU time adds up its threads,
  so a compiled call on every core would run out of time faster.
- *Scaling by a measured unit* (a benchmark run now and then) misjudges a
  load that changes from one second to the next, as other people's jobs do.
- *Re-running once alone* is impossible on a shared machine, where nobody
  can make the others stop, and doubles the wait for a real endless loop.

The time a thread waited for a core is the kernel's own count (``run_delay``
in ``/proc/<pid>/task/<tid>/schedstat``, Linux's scheduler statistics; the
field before it is the thread's time on a core): on a quiet machine it stays
near zero, so a real endless loop is stopped exactly at its limit, as
before; on a machine shared with eight busy loops it grows by about eight
seconds in nine, and the limit stretches with it. The work's own time is

    work = max(wall - sum of the threads' waits, longest time one thread ran)

The sum is exact when the work passes from thread to thread (JAX's calling
thread waits while a pool thread computes, then the other way round); when
threads work side by side they wait side by side, and the sum would stop the
clock, so it never reads less than the time the busiest thread has run,
which is what one endless loop (one thread) counts on a quiet machine. A
thread that has ended keeps the counts last read. Compiling is counted the
same way: of the wall time JAX reports for its compilations, the share
``work / wall`` was the work's own (the rest, waiting), and that much
:meth:`LoadClock.elapsed` may leave out.

Work done in other processes counts too while they are being watched
(:func:`watch`): the course's launcher watches the processes it launched,
so a Check's time limit and the launch's own timeout both count the time the
ranks had (and keep it once the launch is over). However the clock reads,
whoever waits on it stops at :data:`WALL_CAP` times the limit on the wall
clock, so that nothing waits for ever (a launch of ranks that keep
compiling, say).

Where the kernel does not report it (macOS, Windows, a Linux without
scheduler statistics) the wait counts as zero: the clock is the wall clock,
less compile time, as the time limits counted before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable

__all__ = [
    "WALL_CAP",
    "LoadClock",
    "compile_seconds",
    "waits_are_measured",
    "watch",
]

#: However loaded the machine, whoever waits on a clock stops once the wall
#: clock reaches this many times the limit. On two cores shared with eight
#: busy loops a process gets about a fifth of a core, so an endless loop is
#: stopped after about five times its limit (ten, if it compiles all the
#: while), and a right answer that compiles for its whole limit still ends.
WALL_CAP = 20.0

#: JAX's event for one XLA compilation, with its duration in seconds.
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
# Total seconds of XLA compilation seen in this process (from any thread).
_compiled = [0.0]
_lock = threading.Lock()
_listening = [False]
# Sources of more pids whose threads every clock watches (see watch()).
_watched: list[Callable[[], Iterable[int]]] = []
# The clocks still in use, told when a watched process is no longer watched.
_clocks: weakref.WeakSet[LoadClock] = weakref.WeakSet()


def watch(pids: Callable[[], Iterable[int]]) -> Callable[[], None]:
    """Count the threads of the processes ``pids()`` names in every clock, until told.

    The launcher calls it for a launch's processes: the ranks' work is the
    launch's, and the work of the Check that launched them. Returns the
    function that stops watching them (call it in a ``finally``).
    """
    _watched.append(pids)

    def stop() -> None:
        # Every clock reads the processes' counts a last time, and keeps them.
        for clock in list(_clocks):
            with contextlib.suppress(Exception):
                clock.waited()
        with contextlib.suppress(ValueError):
            _watched.remove(pids)

    return stop


def _on_duration(event: str, duration: float, **kwargs: object) -> None:
    if event == _COMPILE_EVENT:
        with _lock:
            _compiled[0] += float(duration)


def _listen_to_compiles() -> None:
    """Register :func:`_on_duration` with JAX, once (again if JAX dropped it)."""
    if "jax" not in sys.modules:  # nothing can compile before JAX is imported
        return
    with contextlib.suppress(Exception):  # an older or newer JAX: no compile time
        from jax import monitoring

        try:  # what jax.monitoring.clear_event_listeners empties
            from jax._src.monitoring import get_event_duration_listeners

            listening = _on_duration in get_event_duration_listeners()
        except ImportError:
            listening = _listening[0]
        if not listening:
            monitoring.register_event_duration_secs_listener(_on_duration)
            _listening[0] = True


def compile_seconds() -> float:
    """Return the seconds this process has spent in XLA compilations so far.

    Counted from the first :class:`LoadClock` started after JAX was imported.
    """
    _listen_to_compiles()
    return _compiled[0]


_Counts = dict[tuple[int | str, int], tuple[int, int]]


def _thread_counts(pid: int | str) -> _Counts:
    """Nanoseconds each thread of ``pid`` has run and waited, by (pid, tid)."""
    counts: _Counts = {}
    folder = f"/proc/{pid}/task"
    try:
        tids = os.listdir(folder)
    except OSError:  # no /proc, or the process has ended
        return counts
    for tid in tids:
        try:
            with open(f"{folder}/{tid}/schedstat", "rb") as stats:
                fields = stats.read().split()
            counts[(pid, int(tid))] = (int(fields[0]), int(fields[1]))
        except (OSError, ValueError, IndexError):  # the thread has just ended
            continue
    return counts


def waits_are_measured() -> bool:
    """Whether this system reports the time threads waited for a core."""
    return bool(_thread_counts("self"))


class LoadClock:
    """Seconds a piece of work had, since the clock started.

    Parameters
    ----------
    others : callable, optional
        Returns the pids of more processes whose threads do the work (a
        launch's ranks, say); asked at each reading. This process is always
        watched.
    compiles : bool
        Leave out the time JAX spent compiling (with XLA) meanwhile.
    """

    def __init__(self, others: Callable[[], Iterable[int]] | None = None,
                 compiles: bool = True) -> None:
        self._others = others
        self._compiles = compiles
        self._started = time.monotonic()
        self._compiled = compile_seconds() if compiles else 0.0
        # Each thread's counts at the start (or when first seen: zero), and
        # as last read: a thread that has ended, or a process no longer
        # watched, keeps what it had counted.
        self._counts = self._read()
        self._last = dict(self._counts)
        self._retired = (0, 0)  # (longest run, waits) of thread ids reused since
        _clocks.add(self)

    def _read(self) -> _Counts:
        counts = _thread_counts("self")
        sources = [*_watched, *([self._others] if self._others is not None else [])]
        pids: set[int] = set()
        for source in sources:
            try:
                pids.update(source())
            except Exception:  # the processes are changing: count the others
                continue
        pids.discard(os.getpid())
        for pid in pids:
            counts.update(_thread_counts(pid))
        return counts

    def _since_start(self) -> tuple[float, float]:
        """Seconds: the threads' waits added up, and the longest one thread ran."""
        for key, (run, wait) in self._read().items():
            last = self._last.get(key)
            if last is not None and (run < last[0] or wait < last[1]):
                # A thread id reused by a new thread: the old one's counts are
                # kept aside, and the new one counts from zero.
                run0, wait0 = self._counts.pop(key, (0, 0))
                ran, waited = self._retired
                self._retired = (max(ran, last[0] - run0), waited + last[1] - wait0)
            self._last[key] = (run, wait)
        ran, waited = self._retired
        # A copy, taken at once: a time limit's handler may read this clock
        # in the middle of this loop.
        for key, (run, wait) in tuple(self._last.items()):
            run0, wait0 = self._counts.get(key, (0, 0))
            waited += wait - wait0
            ran = max(ran, run - run0)
        return waited / 1e9, ran / 1e9

    def wall(self) -> float:
        """Seconds since the clock started, on the wall clock."""
        return time.monotonic() - self._started

    def waited(self) -> float:
        """Seconds the watched threads have waited for a core, added up."""
        return self._since_start()[0]

    def compiled(self) -> float:
        """Seconds (wall clock) JAX spent compiling since the clock started."""
        return compile_seconds() - self._compiled if self._compiles else 0.0

    def reading(self) -> tuple[float, float]:
        """Seconds of the work's own since the clock started, and of them compiling.

        The work's own: the wall time less :meth:`waited`, but never less
        than the longest time one watched thread ran (nor more than the wall
        time). Compiling: :meth:`compiled`, of which only the work's share of
        the wall time counts (the rest was waiting).
        """
        wall = self.wall()
        waited, ran = self._since_start()
        work = min(wall, max(wall - waited, ran))
        share = work / wall if wall > 0 else 1.0
        return work, min(work, self.compiled() * share)

    def overdue(self, seconds: float, compiling: float = float("inf")) -> bool:
        """Whether the work has had ``seconds`` (or the wall clock reached the cap).

        ``compiling`` as for :meth:`elapsed`; the cap is :data:`WALL_CAP`
        times ``seconds``. Only reads the threads once the wall clock has
        passed ``seconds``.
        """
        wall = self.wall()
        return wall >= seconds and (wall >= WALL_CAP * seconds
                                    or self.elapsed(compiling) >= seconds)

    def elapsed(self, compiling: float = float("inf")) -> float:
        """Seconds of the work's own since the clock started, compiling aside.

        Parameters
        ----------
        compiling : float
            At most this many seconds of compiling are left out (the rest
            counts as work): a loop that compiles a new function at each
            step must still run out of time.
        """
        work, compiled = self.reading()
        return max(0.0, work - min(compiled, compiling))
