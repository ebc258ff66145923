"""The safety boundary: the one module that calls a learner's code.

:func:`observe_all` calls a function (the learner's, untrusted) on every case
of an exercise and records what came back as plain data
(:class:`Observation`): under a time limit (:func:`call_with_time_limit`), with
its printing hidden, its exceptions caught and its inputs watched for
mutation. Observations can be sent between processes (``to_json``), so the
classroom grader observes in a submission's process and judges in its own.
Nothing here decides whether an answer is right: see
:mod:`jaxcourse.exercises.judging`.
"""

from __future__ import annotations

import base64
import contextlib
import dis
import gc
import io
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .spec import Case, Exercise

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "WARM_UP_ENV",
    "Bad",
    "Node",
    "Observation",
    "TimeLimitError",
    "call_with_time_limit",
    "case_time_limits",
    "limit_from_reference",
    "observe",
    "observe_all",
    "time_left",
    "warm_up",
]

# --------------------------------------------------------------------------
# Time limit
# --------------------------------------------------------------------------

#: Seconds a case may run when neither the exercise nor the stored reference
#: outputs say otherwise (see :func:`case_time_limits`): a learner waits at
#: most this long for an answer that never ends.
DEFAULT_TIME_LIMIT = 10.0
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


# The deadline (time.monotonic()) of the time limit in force, if any: code
# that waits on its own (a launch of processes) can stop in time to say why.
_deadline: list[float | None] = [None]


def time_left() -> float | None:
    """Return the seconds left under the time limit in force, or ``None``.

    A case's runner that waits for something it can end itself (launched
    processes, say) uses it to give up before the limit, and so report what
    it saw rather than a bare time-out.
    """
    deadline = _deadline[0]
    return None if deadline is None else max(0.0, deadline - time.monotonic())


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
    """
    if seconds is None or seconds <= 0:
        return function()
    can_alarm = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    outer = _deadline[0]
    _deadline[0] = time.monotonic() + seconds
    try:
        if can_alarm:
            return _with_alarm(function, seconds)
        return _with_thread(function, seconds)
    finally:
        _deadline[0] = outer


class _Alarm:
    """One time limit's ``SIGALRM`` handler: it interrupts only while armed.

    Never inside a garbage collection either: an exception raised in a gc
    callback or a finalizer is only printed ("Exception ignored"), and the
    callback (JAX frees device buffers in one) is cut short for nothing.
    """

    def __init__(self) -> None:
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
        if not self.armed or self.collecting or frame is None or \
                frame.f_code in _PROTECTED:
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


def _with_alarm(function: Callable[[], Any], seconds: float) -> Any:
    alarm = _Alarm()
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


def _with_thread(function: Callable[[], Any], seconds: float) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as err:  # handed back to the caller below
            box["error"] = err

    worker = threading.Thread(target=target, daemon=True, name="exercise-check")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        _interrupt(worker)
        raise TimeLimitError(seconds)
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


# --------------------------------------------------------------------------
# Observations: what a function did on one case, as plain data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """A returned leaf that is not an array (None, a string, a tracer...)."""

    type: str


@dataclass(frozen=True)
class Node:
    """A returned container: ``kind`` is "list", "tuple" or "dict"."""

    kind: str
    items: tuple
    keys: tuple = ()


@dataclass(frozen=True)
class Observation:
    """What one call did: a value, an error, a timeout, or nothing.

    ``kind`` is one of "value", "error", "not_attempted", "timeout", "skipped"
    and "missing". A value is a tree of :class:`Node`, NumPy arrays and
    :class:`Bad` leaves, so it can be compared and sent between processes.
    """

    kind: str
    value: Any = None
    error: str = ""
    category: str = ""
    mutated: int = 0
    printed: int = 0
    seconds: float = 0.0
    echoed: int = 0
    inputs: tuple = ()

    def to_json(self) -> dict:
        """Encode as JSON-compatible data (arrays as base64)."""
        return {
            "kind": self.kind,
            "value": _encode(self.value) if self.kind == "value" else None,
            "error": self.error,
            "category": self.category,
            "mutated": self.mutated,
            "printed": self.printed,
            "seconds": self.seconds,
            "echoed": self.echoed,
            "inputs": [list(shape) for shape in self.inputs],
        }

    @classmethod
    def from_json(cls, data: dict) -> Observation:
        """Decode :meth:`to_json`'s output, strictly (it may come from a learner)."""
        kind = data["kind"]
        if kind not in ("value", "error", "not_attempted", "timeout", "skipped",
                        "missing"):
            raise ValueError(f"unknown observation kind {kind!r}")
        return cls(
            kind=kind,
            value=_decode(data["value"]) if kind == "value" else None,
            error=str(data["error"])[:500],
            category=str(data["category"])[:40],
            mutated=int(data["mutated"]),
            printed=int(data["printed"]),
            seconds=float(data["seconds"]),
            echoed=int(data.get("echoed", 0)),
            inputs=tuple(tuple(int(n) for n in shape)
                         for shape in data.get("inputs", ())[:16]),
        )


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {
            "t": "a",
            "dtype": value.dtype.name,
            "shape": list(value.shape),
            "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
        }
    if isinstance(value, Node):
        return {"t": value.kind, "items": [_encode(v) for v in value.items],
                "keys": list(value.keys)}
    return {"t": "bad", "type": value.type}


def _decode(data: Any) -> Any:
    t = data["t"]
    if t == "a":
        dtype = np.dtype(data["dtype"])
        if dtype.kind not in "biufc" and dtype.name != "bfloat16":
            raise ValueError(f"unexpected dtype {dtype}")
        shape = tuple(int(s) for s in data["shape"])
        raw = base64.b64decode(data["data"])
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if t in ("list", "tuple", "dict"):
        return Node(t, tuple(_decode(v) for v in data["items"]),
                    tuple(str(k) for k in data["keys"]))
    if t == "bad":
        return Bad(str(data["type"])[:60])
    raise ValueError(f"unexpected value tag {t!r}")


def _to_value(out: Any) -> Any:
    """Turn a returned object into a tree of Node, np.ndarray and Bad."""
    if isinstance(out, jax.core.Tracer):
        return Bad("tracer")
    if isinstance(out, (jax.Array, np.ndarray, np.generic)):
        return np.array(out)
    if isinstance(out, (bool, int, float, complex)):
        return np.array(out)
    if isinstance(out, list):
        return Node("list", tuple(_to_value(v) for v in out))
    if isinstance(out, tuple):
        return Node("tuple", tuple(_to_value(v) for v in out))
    if isinstance(out, dict):
        keys = tuple(sorted(out, key=str))
        return Node("dict", tuple(_to_value(out[k]) for k in keys),
                    tuple(str(k) for k in keys))
    return Bad(type(out).__name__)


class _Sink(io.TextIOBase):
    """Swallows what the learner's code prints, counting the characters."""

    def __init__(self) -> None:
        self.count = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.count += len(text)
        return len(text)


def _is_traced(arg: Any) -> bool:
    leaves = jax.tree_util.tree_leaves(arg)
    return bool(leaves) and all(
        isinstance(leaf, (np.ndarray, jax.Array)) for leaf in leaves
    )


def _split(args: tuple) -> tuple[list[int], list[Any]]:
    positions = [i for i, a in enumerate(args) if _is_traced(a)]
    return positions, [args[i] for i in positions]


def _count_eqns(jaxpr: Any) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    total += _count_eqns(inner)
    return total


def _compilable(args: tuple) -> bool:
    """Whether every traced argument holds JAX arrays only (no NumPy array).

    Under ``jax.jit`` a NumPy input becomes a tracer, so writing into it in
    place would go unnoticed; a JAX array cannot be written into at all.
    """
    _, traced = _split(args)
    return all(isinstance(leaf, jax.Array) for leaf in jax.tree.leaves(traced))


class _ChangedInputError(Exception):
    """The function changed a container it was given (seen while tracing)."""


def _prepared_call(
    function: Callable, case: Case, args: tuple, compiled: bool = False
) -> Callable[[], Any]:
    """Return a thunk that applies ``case.transform`` to ``function`` on ``args``.

    With ``compiled``, a ``"call"`` case whose traced arguments are JAX arrays
    runs the function under ``jax.jit`` first (see ``Exercise.compiled_calls``).
    """
    kwargs = dict(case.kwargs)
    if case.transform == "call":
        if case.runner is not None:
            return lambda: case.runner(function, *args, **kwargs)
        if compiled and _compilable(args):
            return _compiled_first(_closed(function, args, kwargs, guard=True),
                                   _split(args)[1], lambda: function(*args, **kwargs))
        return lambda: function(*args, **kwargs)

    positions, traced = _split(args)
    if case.transform == "jit":
        return lambda: jax.jit(_closed(function, args, kwargs))(*traced)
    if case.transform == "grad":
        def summed(*t: Any) -> Any:
            return jnp.sum(_closed(function, args, kwargs)(*t))

        return lambda: jax.grad(summed, argnums=case.argnums)(*traced)
    if case.transform == "vmap":
        return lambda: jax.vmap(_closed(function, args, kwargs),
                                in_axes=case.in_axes)(*traced)

    def vectorized() -> np.ndarray:
        counts = []
        for n in case.sizes:
            sized = case.make_inputs(n)
            jaxpr = jax.make_jaxpr(_closed(function, sized, kwargs))(*_split(sized)[1])
            counts.append(_count_eqns(jaxpr.jaxpr))
        return np.array(counts)

    return vectorized


def _compiled_first(
    compiled: Callable, traced: list[Any], plain: Callable[[], Any]
) -> Callable[[], Any]:
    def call() -> Any:
        try:
            return jax.block_until_ready(jax.jit(compiled)(*traced))
        except Exception:
            # It does not trace, or it fails: a plain call is what the learner
            # would see, so that is what is judged. A time limit or the
            # learner's interrupt (BaseException) goes straight through.
            return plain()

    return call


def _closed(
    function: Callable, full_args: tuple, kwargs: dict, guard: bool = False
) -> Callable:
    """Return ``function`` of the traced arguments only, the others fixed.

    ``guard``: raise :class:`_ChangedInputError` if the function changed a
    container of traced arguments (a dict entry set, a list appended to):
    traced, it gets a copy, so the change would not be seen otherwise.
    """
    positions, _ = _split(full_args)

    def on_traced(*traced: Any) -> Any:
        merged = list(full_args)
        for i, value in zip(positions, traced, strict=True):
            merged[i] = value
        if not guard:
            return function(*merged, **kwargs)
        leaves, tree = jax.tree.flatten(traced)
        out = function(*merged, **kwargs)
        now, now_tree = jax.tree.flatten(traced)
        if now_tree != tree or any(
                a is not b for a, b in zip(now, leaves, strict=True)):
            raise _ChangedInputError
        return out

    return on_traced


_JIT_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    line = text[0] if text else ""
    # Keep feedback short and free of this machine's paths.
    line = line.replace(os.path.expanduser("~"), "~")
    return f"{type(err).__name__}: {line}"[:400] if line else type(err).__name__


def _same_inputs(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(
            _same_inputs(x, y) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_inputs(a[k], b[k]) for k in a)
    arrays = (np.ndarray, jax.Array)
    if isinstance(a, arrays) and isinstance(b, arrays):
        x, y = np.asarray(a), np.asarray(b)
        return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
            x, y, equal_nan=x.dtype.kind in "fc"
        )
    return a is b or a == b


def _extract(case: Case, out: Any) -> Any:
    return out if case.extract is None or case.transform == "vectorized" \
        else case.extract(out)


def observe(
    function: Callable, case: Case, time_limit: float | None, compiled: bool = False
) -> Observation:
    """Call ``function`` on ``case`` and record the outcome; never raises.

    Only ``KeyboardInterrupt`` (the learner pressing stop) goes through.
    ``compiled``: try a ``"call"`` case under ``jax.jit`` first (see
    ``Exercise.compiled_calls``). The case's ``prepare`` runs first, outside
    the time limit. Afterwards JAX's trace state is what it was before: code
    stopped in the middle of tracing leaves no trace behind.
    """
    args = case.make_inputs() if case.transform != "vectorized" else ()
    sink = _Sink()
    clean = _trace_state_clean()
    try:
        if case.prepare is not None:
            case.prepare()
        thunk = _prepared_call(function, case, args, compiled)
        with (
            contextlib.redirect_stdout(sink),
            contextlib.redirect_stderr(sink),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            value = call_with_time_limit(
                lambda: _to_value(_extract(case, jax.block_until_ready(thunk()))),
                time_limit,
            )
    except TimeLimitError as err:
        return Observation("timeout", seconds=err.seconds, printed=sink.count)
    except KeyboardInterrupt:
        raise
    except NotImplementedError:
        return Observation("not_attempted", printed=sink.count)
    except BaseException as err:  # the learner's code may raise anything
        if isinstance(err, jax.errors.UnexpectedTracerError):
            category = "tracer_leak"
        elif isinstance(err, _JIT_ERRORS):
            category = "concretization"
        elif "make_array_from_process_local_data" in str(err) and "shape" in str(err):
            # A process's block that does not fit the global shape it states.
            category = "global_shape"
        else:
            category = "exception"
        return Observation(
            "error", error=_first_line(err), category=category, printed=sink.count
        )
    finally:
        if clean and not _trace_state_clean():
            _reset_trace_state()
    mutated = 0
    if case.transform == "call":
        try:
            fresh = case.make_inputs()
            mutated = next(
                (i + 1 for i, (a, b) in enumerate(zip(args, fresh, strict=True))
                 if not _same_inputs(a, b)),
                0,
            )
        except Exception:  # a mutated input that no longer compares
            mutated = 1
    echoed, inputs = _echo(case, args, value)
    return Observation("value", value=value, mutated=mutated, printed=sink.count,
                       echoed=echoed, inputs=inputs)


def _echo(case: Case, args: tuple, value: Any) -> tuple[int, tuple]:
    """Return which argument a single-array output equals, and the arguments' shapes.

    The argument is 1-based (0 if none). Judging needs both to say "returned
    its input unchanged" or "reduced along the other axis".
    """
    if case.extract is not None or case.runner is not None or not isinstance(
            value, np.ndarray) or value.dtype.kind not in "biuf":
        return 0, ()
    arrays = [(i, a) for i, a in enumerate(args)
              if isinstance(a, (np.ndarray, jax.Array)) and np.ndim(a) > 0]
    # Only an argument of the output's shape is fetched to the host and compared.
    echoed = next((i + 1 for i, a in arrays if a.shape == value.shape
                   and np.dtype(a.dtype).kind in "biuf"
                   and np.array_equal(np.asarray(a), value)), 0)
    return echoed, tuple(tuple(a.shape) for _, a in arrays)


def _trace_state_clean() -> bool:
    try:
        from jax._src import core

        return bool(core.trace_state_clean())
    except (ImportError, AttributeError):  # another JAX: nothing to look at
        return True


def _reset_trace_state() -> None:
    # Only reached if a trace was left open (JAX's own cleanup cut short):
    # the learner's next cell must not run inside it.
    with contextlib.suppress(ImportError, AttributeError):
        from jax._src import core

        core.reset_trace_state()


# --------------------------------------------------------------------------
# Each case's time limit
# --------------------------------------------------------------------------

#: A case may run this many times the reference's measured time...
LIMIT_MARGIN = 4.0
#: ...plus this many seconds (start-up, a slower or busier machine).
LIMIT_BASE = 4.0


def limit_from_reference(seconds: float) -> float:
    """Return a case's time limit from the reference's measured time on it.

    ``LIMIT_BASE + LIMIT_MARGIN * seconds``, rounded up to whole seconds: 5 s
    for a reference that takes a tenth of a second, 10 s for one that takes
    1.5 s (a first call that compiles a model, say). Only a reference that
    itself takes longer (launching processes) gets more, so a learner waits
    about 10 s at most for an answer that never ends.
    """
    return float(math.ceil(LIMIT_BASE + LIMIT_MARGIN * max(0.0, seconds)))


def case_time_limits(exercise: Exercise) -> list[float]:
    """Return the time limit of each case of ``exercise``, in seconds.

    The exercise's own ``time_limit`` if it sets one; else each case's limit
    stored with the reference outputs
    (:mod:`jaxcourse.exercises.references`, computed by
    :func:`limit_from_reference` from the reference's measured time when the
    outputs were written); where none is stored (no fresh store), the case's
    ``time_limit`` or :data:`DEFAULT_TIME_LIMIT`.
    """
    if exercise.time_limit is not None:
        return [float(exercise.time_limit)] * len(exercise.cases)
    fallback = [DEFAULT_TIME_LIMIT if c.time_limit is None else float(c.time_limit)
                for c in exercise.cases]
    try:
        from .references import stored_outputs

        stored = stored_outputs(exercise)
    except Exception:  # a store must never stop a Check
        stored = None
    limits = getattr(stored, "limits", None)
    if not limits or len(limits) != len(fallback):
        return fallback
    return [float(s) if s else f for s, f in zip(limits, fallback, strict=True)]


def observe_all(
    exercise: Exercise, function: Any, time_limit: float | None = None
) -> list[Observation]:
    """Observe ``function`` on every case of ``exercise``, in order.

    Each case runs under its own limit (:func:`case_time_limits`), or under
    ``time_limit`` if given. After a case runs out of time the remaining ones
    are skipped (so a hanging function costs one time limit, not one per
    case); after the first ``NotImplementedError`` every case counts as not
    attempted.
    """
    if not callable(function):
        kind = "" if function is None else type(function).__name__
        return [Observation("missing", error=kind)] * len(
            exercise.cases
        )
    limits = case_time_limits(exercise) if time_limit is None else \
        [time_limit] * len(exercise.cases)
    observations: list[Observation] = []
    for case, limit in zip(exercise.cases, limits, strict=True):
        if observations and observations[-1].kind in ("timeout", "skipped"):
            observations.append(Observation("skipped"))
            continue
        outcome = observe(function, case, limit, exercise.compiled_calls)
        if outcome.kind == "not_attempted":
            return [Observation("not_attempted")] * len(exercise.cases)
        observations.append(outcome)
    return observations


# --------------------------------------------------------------------------
# Work started ahead of a Check
# --------------------------------------------------------------------------

#: Set it to ``0`` to start nothing ahead of a Check (:func:`warm_up`).
WARM_UP_ENV = "JAX_COURSE_WARM_UP"


def warm_up(exercise: Exercise) -> list[Any]:
    """Do now, while the learner reads, what the next Check of ``exercise`` waits for.

    JAX pays once per process for much of what a first Check does besides
    compiling the learner's own function: importing the parts of itself a
    function uses, tracing the library functions it calls (``jnp.sum``,
    ``jax.nn.softplus``: JAX keeps their traces, per shape) and loading their
    lowering rules. So each case runs the reference once, unjudged, with the
    case's own inputs, shapes and transform; a learner's answer that calls the
    same library functions then finds them traced. A case with a ``warm_up``
    of its own calls that instead (chapter 7's launched cases start their
    processes, which then wait for the learner's function).

    The exercise's panel calls it when it is shown and after each Check.
    Never raises (but for the learner's interrupt): whatever fails here, the
    Check does itself. Nothing runs under the grader, or with
    :data:`WARM_UP_ENV` set to ``0``.

    Returns
    -------
    list
        What the cases' own ``warm_up`` returned (``None`` where it failed).
    """
    from .judging import grading_mode

    if grading_mode() or os.environ.get(WARM_UP_ENV, "1").strip() == "0":
        return []
    started = []
    limits = case_time_limits(exercise)
    for case, limit in zip(exercise.cases, limits, strict=True):
        if case.warm_up is None:
            observe(exercise.reference, case, limit, exercise.compiled_calls)
            continue
        try:
            started.append(case.warm_up(*case.make_inputs(), **case.kwargs))
        except Exception:  # only the next Check's speed is at stake
            started.append(None)
    return started
