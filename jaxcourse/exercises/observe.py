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
import io
import os
import signal
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .spec import Case, Exercise

__all__ = [
    "Bad",
    "Node",
    "Observation",
    "TimeLimitError",
    "call_with_time_limit",
    "observe",
    "observe_all",
]

# --------------------------------------------------------------------------
# Time limit
# --------------------------------------------------------------------------


class TimeLimitError(Exception):
    """The learner's code ran past its time limit."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"time limit of {seconds:g} s exceeded")
        self.seconds = seconds


class _TimeUp(BaseException):
    # A BaseException, so a learner's `except Exception` cannot swallow it.
    pass


def call_with_time_limit(function: Callable[[], Any], seconds: float | None) -> Any:
    """Return ``function()``, or raise :class:`TimeLimitError` after ``seconds``.

    In the main thread of a Unix process, a ``SIGALRM`` timer interrupts the
    call at the next Python bytecode: a Python loop stops at once; a long
    compiled JAX call cannot be cut short but is reported as too slow as soon
    as it returns. The timer re-fires every 50 ms, so code that swallows the
    first interrupt still stops, and it is always disarmed afterwards.
    Elsewhere (another thread, Windows) the call runs in a helper thread and
    the check stops waiting after ``seconds``; the runaway code then finishes
    in the background.
    """
    if seconds is None or seconds <= 0:
        return function()
    can_alarm = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if can_alarm:
        return _with_alarm(function, seconds)
    return _with_thread(function, seconds)


def _with_alarm(function: Callable[[], Any], seconds: float) -> Any:
    armed = [True]

    def on_alarm(signum: int, frame: object) -> None:
        if armed[0]:
            raise _TimeUp

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
            return function()
        finally:
            _disarm(armed, previous)
    except _TimeUp:
        raise TimeLimitError(seconds) from None


def _disarm(armed: list[bool], previous: Any) -> None:
    # A last alarm may land while we disarm: retry until it is done.
    while True:
        try:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            return
        except _TimeUp:
            continue


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
        raise TimeLimitError(seconds)
    if "error" in box:
        raise box["error"]
    return box["value"]


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
    return f"{type(err).__name__}: {line}"[:300] if line else type(err).__name__


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
    ``Exercise.compiled_calls``).
    """
    args = case.make_inputs() if case.transform != "vectorized" else ()
    sink = _Sink()
    try:
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
        else:
            category = "exception"
        return Observation(
            "error", error=_first_line(err), category=category, printed=sink.count
        )
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
    return Observation("value", value=value, mutated=mutated, printed=sink.count)


def observe_all(
    exercise: Exercise, function: Any, time_limit: float | None = None
) -> list[Observation]:
    """Observe ``function`` on every case of ``exercise``, in order.

    After a case runs out of time the remaining ones are skipped (so a hanging
    function costs one time limit, not one per case); after the first
    ``NotImplementedError`` every case counts as not attempted.
    """
    limit = exercise.time_limit if time_limit is None else time_limit
    if not callable(function):
        kind = "" if function is None else type(function).__name__
        return [Observation("missing", error=kind)] * len(
            exercise.cases
        )
    observations: list[Observation] = []
    for case in exercise.cases:
        if observations and observations[-1].kind in ("timeout", "skipped"):
            observations.append(Observation("skipped"))
            continue
        outcome = observe(function, case, limit, exercise.compiled_calls)
        if outcome.kind == "not_attempted":
            return [Observation("not_attempted")] * len(exercise.cases)
        observations.append(outcome)
    return observations
