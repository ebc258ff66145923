"""Time limits: stopping a call that runs too long, and leaving nothing armed.

:func:`call_with_time_limit` runs a function (a learner's, untrusted) and
raises :class:`TimeLimitError` once it has run past its limit: with a
``SIGALRM`` interval timer in the main thread of a Unix process, in a helper
thread elsewhere. Whatever happens, the timer and the signal handler are the
ones found on entry when it returns. :func:`time_left` tells code that waits
on its own (a launch of processes) how long the limit in force still allows.
How long each case of an exercise may run is decided in
:mod:`jaxcourse.exercises.checking.case_limits`.

**Verdicts do not depend on the machine's load.** A limit is not counted on
the wall clock but on a :class:`jaxcourse.load_clock.LoadClock`: the wall
time less the time the call's threads were kept waiting for a core by other
processes (the kernel's own count) and less the time JAX spent compiling
with XLA (up to :data:`COMPILE_ALLOWANCE` times the limit). When the
wall-clock timer fires at the limit, the handler reads that clock; if the
call has not yet *had* its seconds, the timer is set again for what is
left, and only once it has does the interrupt come. So on a quiet machine
an endless loop is stopped at its limit exactly as before (a learner waits
at most the limit, 5 s for most exercises), while on a machine whose cores
other processes hold, a right answer is given the time it would have had on
a quiet one, and a first compile (the compilation cache
off, as the grader runs) does not count as a loop. Why this clock and not
CPU time, a measured unit of speed or a second run alone: see
:mod:`jaxcourse.load_clock`. So that nothing waits for ever, a call is
stopped anyway once the wall clock reaches :data:`WALL_CAP` times its limit.
"""

from __future__ import annotations

import contextlib
import dis
import gc
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from jaxcourse.load_clock import WALL_CAP, LoadClock

__all__ = [
    "COMPILE_ALLOWANCE",
    "WALL_CAP",
    "TimeLimitError",
    "call_with_time_limit",
    "time_left",
]

#: Compiling is not counted, up to this many times the limit (as if on a
#: quiet machine): more, and it counts, so that a loop that compiles a new
#: function at each step still runs out of time (after twice its limit).
COMPILE_ALLOWANCE = 1.0

# Once the limit is reached, the interrupt is repeated this often, so code
# that swallows the first one still stops.
_REPEAT = 0.05
# While an interrupt we raised is still being handled (the ``finally`` and
# ``__exit__`` blocks it runs through), the next one waits this long: cleanup
# code cut short would leave JAX's trace state, a launch's processes or an
# iterator's threads behind.
_CLEANUP_GRACE = 2.0


class TimeLimitError(Exception):
    """The learner's code ran past its time limit."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"time limit of {seconds:g} s exceeded")
        self.seconds = seconds


class _TimeUp(BaseException):
    # A BaseException, so a learner's `except Exception` cannot swallow it.
    pass


# The clock and the limit in force, if any: code that waits on its own (a
# launch of processes) can stop in time to say why.
_in_force: list[tuple[LoadClock, float] | None] = [None]


def time_left() -> float | None:
    """Return the seconds left under the time limit in force, or ``None``.

    Counted as the limit counts them (:class:`jaxcourse.load_clock.LoadClock`:
    time spent waiting for a core or compiling is not used up). A case's
    runner that waits for something it can end itself (launched processes,
    say) uses it to give up before the limit, and so report what it saw
    rather than a bare time-out.
    """
    limit = _in_force[0]
    if limit is None:
        return None
    clock, seconds = limit
    return _time_left(clock, seconds)


def call_with_time_limit(function: Callable[[], Any], seconds: float | None) -> Any:
    """Return ``function()``, or raise :class:`TimeLimitError` after ``seconds``.

    In the main thread of a Unix process, a ``SIGALRM`` timer interrupts the
    call at the next Python bytecode: a Python loop stops at once; a long
    compiled JAX call cannot be cut short but is reported as too slow as soon
    as it returns. The interrupt is repeated every 50 ms, so code that
    swallows it still stops, but never while the previous one is still
    unwinding through cleanup code (for up to 2 s), nor inside this module's
    own cleanup, a garbage collection or a finalizer. While TensorFlow's or
    PyTorch's Python code runs, it waits (up to 5 s) for the moment the
    learner's code calls into them again: interrupted anywhere else, a
    ``tf.data`` iterator corrupts memory and the kernel dies.

    Whatever happens (a result, an error, the time-out, the learner's
    ``KeyboardInterrupt`` or ``SystemExit``), when this returns or raises the
    timer and the ``SIGALRM`` handler are the ones found on entry, and an
    interrupt delivered late finds a handler that ignores it: nothing of the
    limit stays armed in the learner's kernel.

    Elsewhere (another thread, Windows) the call runs in a helper thread and
    the check stops waiting after ``seconds``; the runaway code is then
    interrupted in its thread at its next Python bytecode (code blocked in C
    finishes in the background).

    Either way ``seconds`` are counted on a :class:`~jaxcourse.load_clock.LoadClock`
    (time the call waited for a core, or JAX compiled, is not counted), and
    never past :data:`WALL_CAP` times ``seconds`` on the wall clock.
    """
    if seconds is None or seconds <= 0:
        return function()
    can_alarm = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    outer = _in_force[0]
    clock = LoadClock()
    _in_force[0] = (clock, seconds)
    try:
        if can_alarm:
            return _with_alarm(function, seconds, clock)
        return _with_thread(function, seconds, clock)
    finally:
        _in_force[0] = outer


def _time_left(clock: LoadClock, seconds: float) -> float:
    """Seconds the call may still run (0: stop it now)."""
    if clock.wall() >= WALL_CAP * seconds:
        return 0.0
    return max(0.0, seconds - clock.elapsed(compiling=COMPILE_ALLOWANCE * seconds))


class _Alarm:
    """One time limit's ``SIGALRM`` handler: it interrupts only while armed.

    Never inside a garbage collection either: an exception raised in a gc
    callback or a finalizer is only printed ("Exception ignored"), and the
    callback (JAX frees device buffers in one) is cut short for nothing.
    """

    def __init__(self, seconds: float, clock: LoadClock) -> None:
        self.seconds = seconds
        self.clock = clock
        self.measuring = False  # reading the clock: a tick meanwhile waits
        self.armed = True
        self.collecting = False
        self.raised: list[_TimeUp] = []
        self.due = 0.0  # time.monotonic() when the limit was reached
        self.last = 0.0  # time.monotonic() of the last interrupt raised

    def gc_starts(self, phase: str, info: dict) -> None:
        # First of gc.callbacks: before any other callback runs.
        if phase == "start":
            self.collecting = True

    def gc_ends(self, phase: str, info: dict) -> None:
        # Last of gc.callbacks: after every other one has run.
        if phase == "stop":
            self.collecting = False

    def __call__(self, signum: int, frame: Any) -> None:
        if not self.armed or self.collecting or self.measuring or frame is None \
                or frame.f_code in _PROTECTED:
            return
        if not self.due:
            # The wall clock says the limit is reached; the load clock says
            # whether the call has had its seconds (other processes may have
            # held the cores, or JAX compiled). If not, ask again when what
            # is left has passed.
            self.measuring = True
            try:
                left = _time_left(self.clock, self.seconds)
            finally:
                self.measuring = False
            if left > 0:
                signal.setitimer(signal.ITIMER_REAL, max(left, _REPEAT), _REPEAT)
                return
        now = time.monotonic()
        self.due = self.due or now
        if now - self.due < _UNSAFE_AFTER and not _safe_to_interrupt(frame):
            # Not now: ask again in half a millisecond rather than at the next
            # alarm. Until a signal lands just as the learner's code calls
            # into the library again, it is handled where the library's C++
            # code returns, which is not safe.
            signal.setitimer(signal.ITIMER_REAL, _RETRY, _REPEAT)
            return
        handling = sys.exc_info()[1]
        if any(handling is err for err in self.raised) and \
                time.monotonic() - self.last < _CLEANUP_GRACE:
            return  # our interrupt is still unwinding: let its cleanup finish
        err = _TimeUp()
        self.raised.append(err)
        self.last = time.monotonic()
        raise err


def _with_alarm(function: Callable[[], Any], seconds: float, clock: LoadClock) -> Any:
    alarm = _Alarm(seconds, clock)
    gc.callbacks.insert(0, alarm.gc_starts)
    gc.callbacks.append(alarm.gc_ends)
    previous = signal.signal(signal.SIGALRM, alarm)
    timed_out = False
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT)
        return function()
    except _TimeUp:
        timed_out = True  # no call here: nothing can interrupt it
    except Exception:
        if not alarm.raised:
            raise
        # Our interrupt, turned into an error of its own by a library (one
        # that calls back into Python from C, say): still the time limit.
        timed_out = True
    finally:
        # The handler ignores interrupts in this frame (_PROTECTED), so a last
        # alarm cannot cut this cleanup short; a KeyboardInterrupt that lands
        # in it is held until the cleanup is done, then raised.
        held: BaseException | None = None
        for _ in range(10):
            try:
                alarm.armed = False  # first: a late interrupt now does nothing
                left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
                if alarm.raised or left < 2 * _REPEAT:
                    # An alarm that has already fired may still be on its
                    # way: it must reach the disarmed handler, not the
                    # previous one (SIG_DFL would end the process).
                    time.sleep(0.002)
                # signal.signal runs pending handlers before it swaps them.
                signal.signal(signal.SIGALRM, previous)
                for callback in (alarm.gc_starts, alarm.gc_ends):
                    with contextlib.suppress(ValueError):
                        gc.callbacks.remove(callback)
                break
            except BaseException as err:  # the learner's interrupt, say
                held = err
        if held is not None:
            raise held
    # Raised once the timer and the handler are restored, never before.
    if timed_out:
        raise TimeLimitError(seconds)


#: Top-level packages whose Python code keeps C++ state that an exception
#: at an arbitrary moment corrupts: TensorFlow's iterators, interrupted in
#: the ``finally`` of their executor's context manager, free an executor
#: still in use ("free(): invalid pointer", the kernel dies). While their
#: code runs, the interrupt waits for the moment a learner's code calls into
#: them again: between two calls they are in a consistent state.
_FRAGILE = frozenset({"tensorflow", "tensorflow_datasets", "keras", "torch"})
_RESUME = dis.opmap.get("RESUME")
#: Seconds past the limit after which the interrupt no longer waits for a
#: safe moment (an endless loop inside such a library's callbacks).
_UNSAFE_AFTER = 5.0
#: Seconds until the next try, while the interrupt waits for a safe moment.
_RETRY = 0.0005


def _safe_to_interrupt(frame: Any) -> bool:
    """Whether an exception raised in ``frame`` now leaves every library sound.

    Yes when no frame on the stack runs the code of a :data:`_FRAGILE`
    package. When one does, only if it is the innermost frame, it was called
    from other code (the learner's loop over a pipeline, say), and it is at
    its very start, before it has done anything: the exception is then one
    its caller gets from the call, as from any function. Neither inside a
    finalizer (``__del__``): there the exception is only printed, and the
    resource it frees leaks.
    """
    if frame.f_code.co_name == "__del__":
        return False
    outer = frame.f_back
    while outer is not None:
        if _fragile(outer):
            return False
        outer = outer.f_back
    if not _fragile(frame):
        return True
    if _RESUME is None:  # before Python 3.11: no marker of a function's start
        return False
    offset, code = frame.f_lasti, frame.f_code.co_code
    return offset < 0 or (offset < len(code) and code[offset] == _RESUME)


def _fragile(frame: Any) -> bool:
    name = frame.f_globals.get("__name__") or ""
    return name.split(".", 1)[0] in _FRAGILE


# Code the handler never interrupts: the time limit's own cleanup, the gc
# callbacks that tell it a collection runs, and the handler itself.
_PROTECTED = frozenset({_with_alarm.__code__, _Alarm.gc_starts.__code__,
                        _Alarm.gc_ends.__code__, _Alarm.__call__.__code__})


def _with_thread(function: Callable[[], Any], seconds: float, clock: LoadClock) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as err:  # handed back to the caller below
            box["error"] = err

    worker = threading.Thread(target=target, daemon=True, name="exercise-check")
    worker.start()
    worker.join(seconds)
    while worker.is_alive():
        left = _time_left(clock, seconds)
        if left <= 0:
            _interrupt(worker)
            raise TimeLimitError(seconds)
        worker.join(max(left, _REPEAT))
    if "error" in box:
        raise box["error"]
    return box["value"]


def _interrupt(worker: threading.Thread, patience: float = 0.5) -> None:
    """Raise ``_TimeUp`` in ``worker`` until it ends or ``patience`` runs out.

    CPython delivers it at the thread's next bytecode; a thread blocked in C
    (a sleep, a compiled call) ends when that call returns.
    """
    try:
        import ctypes

        set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):  # not CPython: it finishes on its own
        return
    end = time.monotonic() + patience
    while worker.is_alive() and worker.ident is not None and time.monotonic() < end:
        set_async(ctypes.c_ulong(worker.ident), ctypes.py_object(_TimeUp))
        worker.join(_REPEAT)
    if worker.ident is not None:
        # Whatever happens next, no interrupt stays queued for that thread.
        set_async(ctypes.c_ulong(worker.ident), None)
        _clear_async_signal(set_async)


class _Unsignal(BaseException):
    pass


def _clear_async_signal(set_async: Any) -> None:
    """Lower the interpreter's "asynchronous exception pending" flag again.

    ``PyThreadState_SetAsyncExc`` raises that flag for the whole interpreter,
    even to clear a thread's exception, and CPython 3.11 lowers it only when
    some thread takes an exception from it. Left raised, it costs every
    thread a check at each call, and a profile or trace hook (a debugger, the
    grader's :mod:`jaxcourse.exercises.grading.borrowing`) then spins forever on the
    next call. Taking one exception here, at once, lowers it.
    """
    import ctypes

    me = ctypes.c_ulong(threading.get_ident())
    try:
        set_async(me, ctypes.py_object(_Unsignal))
        for _ in range(1000):  # taken at the first check, which comes at once
            pass
    except _Unsignal:
        return
    set_async(me, None)  # never delivered: at least it is not left queued
