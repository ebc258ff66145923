"""Exercises, checks and results: the part of the system that needs no display.

An :class:`Exercise` pairs a reference implementation (in ``solutions/``) with
:class:`Case` s, each a seeded input and a way to call the function on it
(plainly, under ``jax.jit``, ``jax.grad``, ``jax.vmap``, or traced to count its
operations). :func:`check` runs a learner's function through every case and
returns a :class:`Result`; it never raises because of the learner's code.

A check has two halves, so that grading can run them in different processes:

* :func:`observe_all` calls a function (the learner's, untrusted) on every case
  and records what came back as plain data (:class:`Observation`), under a
  time limit, with its printing hidden and its exceptions caught;
* :func:`judge` compares those observations with the reference's, computed
  separately, and writes the feedback.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import inspect
import io
import os
import pkgutil
import signal
import textwrap
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .messages import explain_error, message, ordinal

__all__ = [
    "GRADING_ENV",
    "Case",
    "Exercise",
    "Feedback",
    "Mistake",
    "Observation",
    "Result",
    "TimeLimitError",
    "by_chapter",
    "call_with_time_limit",
    "check",
    "exercise_ids",
    "get",
    "judge",
    "observe_all",
    "register",
    "unregister",
]

#: Set to ``1`` by the grader: panels and explorers then skip their work.
GRADING_ENV = "JAXCOURSE_GRADING"

TRANSFORMS = ("call", "jit", "grad", "vmap", "vectorized")
DTYPE_POLICIES = ("exact", "kind", "any")


# --------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One test of an exercise: a seeded input and how the function is called.

    Parameters
    ----------
    description : str
        What is tried, in the exercise's language, e.g.
        ``"relu(x) for x = [-2, -0.5, 0, 0.5, 2]"``.
    inputs : callable
        ``inputs(rng)`` returns the positional arguments as a tuple, from a
        ``numpy.random.Generator`` seeded with ``seed``. For the
        ``"vectorized"`` transform it is called as ``inputs(rng, n)`` for each
        batch size ``n`` in ``sizes``. Arguments that are arrays, or pytrees of
        arrays, are traced by the transforms; the others (ints, dtypes, floats)
        stay static.
    transform : {"call", "jit", "grad", "vmap", "vectorized"}
        ``"call"`` calls the function as is (and checks its inputs are left
        unchanged); ``"jit"``, ``"grad"`` (of the sum of the output, with
        respect to the traced argument ``argnums``) and ``"vmap"`` (over
        ``in_axes``) transform it first; ``"vectorized"`` traces it for two
        batch sizes and fails if the program grows with the batch (a Python
        loop over the examples).
    kwargs : dict
        Static keyword arguments.
    seed : int
        Seed of the generator handed to ``inputs``.
    rtol, atol : float
        Tolerances of the value comparison.
    dtype : {"exact", "kind", "any"}
        ``"exact"``: the dtype must equal the reference's; ``"kind"``: only the
        kind (floating, integer, bool) must match; ``"any"``: not checked.
    argnums : int
        For ``"grad"``: which traced argument to differentiate.
    in_axes : int or tuple
        For ``"vmap"``.
    sizes : tuple of int
        For ``"vectorized"``: the two batch sizes.
    extract : callable, optional
        Applied to the output before it is compared, to check a property
        rather than (or besides) the values, e.g. for a sharding exercise
        ``lambda out: (out, np.array(out.sharding.shard_shape(out.shape)))``.
        It runs beside the learner's code; an error in it fails the test.
    runner : callable, optional
        For ``"call"``: ``runner(function, *args, **kwargs)`` makes the call
        instead of ``function(*args, **kwargs)``, e.g. to run the function in
        several launched processes and return what each one returned. An
        exception it raises is reported like one of the function's.
    """

    description: str
    inputs: Callable[..., tuple]
    transform: str = "call"
    kwargs: dict = field(default_factory=dict)
    seed: int = 0
    rtol: float = 1e-5
    atol: float = 1e-6
    dtype: str = "exact"
    argnums: int = 0
    in_axes: Any = 0
    sizes: tuple[int, int] = (4, 32)
    extract: Callable[[Any], Any] | None = None
    runner: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {TRANSFORMS}")
        if self.dtype not in DTYPE_POLICIES:
            raise ValueError(f"dtype must be one of {DTYPE_POLICIES}")

    def make_inputs(self, n: int | None = None) -> tuple:
        """Build this case's arguments afresh (same seed, same values)."""
        rng = np.random.default_rng(self.seed)
        args = self.inputs(rng) if n is None else self.inputs(rng, n)
        return tuple(args)


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer, recognised by its output to name the problem.

    When a learner's output fails a case but equals what ``function`` returns
    on the same input, the feedback adds ``message`` (e.g. "did you take the
    argmax along axis 0?").
    """

    message: str
    function: Callable


@dataclass(frozen=True)
class Exercise:
    """An exercise: its id, title, reference, cases, hints and language.

    Parameters
    ----------
    id : str
        Stable id ``"<topic>.<name>"``; the exercise is defined in
        ``solutions/<topic>.py``, which registers it on import.
    title : str
        Short title, in the exercise's language.
    reference : callable
        The reference implementation; its source is the shown solution.
    cases : sequence of Case
        The tests, in order.
    chapter : str
        The chapter it belongs to (the notebook stem, e.g. ``"01_mlp_tfds"``).
    hints : sequence of str
        Revealed one at a time, in order.
    mistakes : sequence of Mistake
        Known wrong answers, to name a learner's mistake.
    language : {"en", "zh-Hant"}
        Language of every message, button and summary.
    time_limit : float
        Seconds one case may run before it counts as hanging.
    function_name : str, optional
        The learner's function name; by default the reference's.
    devices : int
        How many JAX devices its cases need (e.g. 8 for a 4x2 mesh). The
        grader gives its processes that many simulated CPU devices, with
        :func:`jaxcourse.devices.use_cpu_devices`, before JAX starts.
    """

    id: str
    title: str
    reference: Callable
    cases: Sequence[Case]
    chapter: str = ""
    hints: Sequence[str] = ()
    mistakes: Sequence[Mistake] = ()
    language: str = "en"
    time_limit: float = 5.0
    function_name: str | None = None
    devices: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "cases", tuple(self.cases))
        object.__setattr__(self, "hints", tuple(self.hints))
        object.__setattr__(self, "mistakes", tuple(self.mistakes))
        if self.function_name is None:
            object.__setattr__(self, "function_name", self.reference.__name__)
        if "." not in self.id:
            raise ValueError(f"exercise id {self.id!r} must read '<topic>.<name>'")
        message("check", self.language)  # validates the language

    @property
    def topic(self) -> str:
        """The part of the id before the dot: the ``solutions`` module."""
        return self.id.split(".", 1)[0]

    def solution_source(self) -> str:
        """Return the reference implementation's source code."""
        try:
            return textwrap.dedent(inspect.getsource(self.reference)).rstrip() + "\n"
        except (OSError, TypeError):
            return ""


# --------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------

_REGISTRY: dict[str, Exercise] = {}


def register(*exercises: Exercise) -> tuple[Exercise, ...]:
    """Add exercises to the registry (re-registering an id replaces it).

    Re-registration happens when a ``solutions`` module is reloaded; ids must
    otherwise be unique across the course, which a test checks.
    """
    for exercise in exercises:
        _REGISTRY[exercise.id] = exercise
    return exercises


def unregister(exercise_id: str) -> None:
    """Remove an exercise from the registry (for tests)."""
    _REGISTRY.pop(exercise_id, None)


def _solutions_modules() -> list[str]:
    import solutions

    return [
        f"solutions.{m.name}"
        for m in pkgutil.iter_modules(solutions.__path__)
        if not m.name.startswith("_")
    ]


def _load_all() -> None:
    for name in _solutions_modules():
        importlib.import_module(name)


def get(exercise_id: str) -> Exercise:
    """Return the registered exercise ``exercise_id``.

    Its module ``solutions.<topic>`` is imported on first use.
    """
    if exercise_id not in _REGISTRY:
        topic = exercise_id.split(".", 1)[0]
        try:
            importlib.import_module(f"solutions.{topic}")
        except ModuleNotFoundError:
            pass
    try:
        return _REGISTRY[exercise_id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(
            f"no exercise {exercise_id!r}; registered: {known}"
        ) from None


def exercise_ids(chapter: str | None = None) -> list[str]:
    """Every registered exercise id, optionally only one chapter's, in order."""
    _load_all()
    return [
        e.id for e in _REGISTRY.values() if chapter is None or e.chapter == chapter
    ]


def by_chapter() -> dict[str, list[str]]:
    """Map each chapter to its exercise ids, in registration order."""
    _load_all()
    chapters: dict[str, list[str]] = {}
    for exercise in _REGISTRY.values():
        chapters.setdefault(exercise.chapter, []).append(exercise.id)
    return dict(sorted(chapters.items()))


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


def _prepared_call(function: Callable, case: Case, args: tuple) -> Callable[[], Any]:
    """Return a thunk that applies ``case.transform`` to ``function`` on ``args``."""
    kwargs = dict(case.kwargs)
    if case.transform == "call":
        if case.runner is not None:
            return lambda: case.runner(function, *args, **kwargs)
        return lambda: function(*args, **kwargs)

    def closed(full_args: tuple) -> Callable:
        positions, _ = _split(full_args)

        def on_traced(*traced: Any) -> Any:
            merged = list(full_args)
            for i, value in zip(positions, traced, strict=True):
                merged[i] = value
            return function(*merged, **kwargs)

        return on_traced

    positions, traced = _split(args)
    if case.transform == "jit":
        return lambda: jax.jit(closed(args))(*traced)
    if case.transform == "grad":
        def summed(*t: Any) -> Any:
            return jnp.sum(closed(args)(*t))

        return lambda: jax.grad(summed, argnums=case.argnums)(*traced)
    if case.transform == "vmap":
        return lambda: jax.vmap(closed(args), in_axes=case.in_axes)(*traced)

    def vectorized() -> np.ndarray:
        counts = []
        for n in case.sizes:
            sized = case.make_inputs(n)
            jaxpr = jax.make_jaxpr(closed(sized))(*_split(sized)[1])
            counts.append(_count_eqns(jaxpr.jaxpr))
        return np.array(counts)

    return vectorized


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


def observe(function: Callable, case: Case, time_limit: float | None) -> Observation:
    """Call ``function`` on ``case`` and record the outcome; never raises.

    Only ``KeyboardInterrupt`` (the learner pressing stop) goes through.
    """
    args = case.make_inputs() if case.transform != "vectorized" else ()
    sink = _Sink()
    try:
        thunk = _prepared_call(function, case, args)
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
        outcome = observe(function, case, limit)
        if outcome.kind == "not_attempted":
            return [Observation("not_attempted")] * len(exercise.cases)
        observations.append(outcome)
    return observations


# --------------------------------------------------------------------------
# Judging: observations against the reference, and the feedback
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """The verdict on one case: what was tried, and what went wrong if anything."""

    test: str
    passed: bool
    message: str
    problem: str = ""


@dataclass(frozen=True)
class Result:
    """The outcome of checking one answer to one exercise.

    ``passed`` is true when every test passed; ``score`` is the fraction of
    tests passed; ``feedback`` holds one :class:`Feedback` per test.
    ``status`` is "passed", "failed" or "not_attempted".
    """

    exercise_id: str
    status: str
    feedback: tuple[Feedback, ...]
    language: str = "en"

    @property
    def passed(self) -> bool:
        """Whether every test passed."""
        return self.status == "passed"

    @property
    def n_passed(self) -> int:
        """How many tests passed."""
        return sum(f.passed for f in self.feedback)

    @property
    def n_tests(self) -> int:
        """How many tests there are."""
        return len(self.feedback)

    @property
    def score(self) -> float:
        """Tests passed over tests run, between 0 and 1."""
        return self.n_passed / self.n_tests if self.feedback else 0.0

    @property
    def messages(self) -> list[str]:
        """One feedback message per test."""
        return [f.message for f in self.feedback]

    def summary(self) -> str:
        """One deterministic line, e.g. ``"mlp.relu: 5/5 tests passed"``."""
        if self.status == "not_attempted":
            return message(
                "summary_not_attempted", self.language, id=self.exercise_id,
                total=self.n_tests,
            )
        return message(
            "summary", self.language, id=self.exercise_id, passed=self.n_passed,
            total=self.n_tests,
        )

    def report(self) -> str:
        """Return the summary followed by one line per test."""
        lines = [self.summary()]
        lines += [("  ✓ " if f.passed else "  ✗ ") + f.message for f in self.feedback]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    def to_dict(self) -> dict:
        """Return a JSON-compatible summary."""
        return {
            "exercise": self.exercise_id,
            "status": self.status,
            "score": self.score,
            "passed": self.passed,
            "feedback": [
                {"test": f.test, "passed": f.passed, "message": f.message}
                for f in self.feedback
            ],
        }


def _fmt(array: np.ndarray) -> str:
    if array.size > 12 or array.ndim > 2:
        return f"an array of shape {array.shape}"
    text = np.array2string(
        array, precision=4, separator=", ", suppress_small=True,
        max_line_width=10_000,
    )
    return " ".join(text.split())


def _structure(value: Any, language: str = "en") -> str:
    if isinstance(value, np.ndarray):
        return message("structure_array", language)
    if isinstance(value, Bad):
        return value.type
    inner = ", ".join(_structure(v, language) for v in value.items)
    if value.kind == "list":
        return f"[{inner}]"
    if value.kind == "tuple":
        return f"({inner}{',' if len(value.items) == 1 else ''})"
    return "{" + ", ".join(
        f"{k!r}: {_structure(v, language)}"
        for k, v in zip(value.keys, value.items, strict=True)
    ) + "}"


_SEQUENCES = frozenset({"list", "tuple"})


def _same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    if isinstance(a, Bad) or isinstance(b, Bad):
        return False
    # A list where the reference returns a tuple (or the reverse) is not what
    # an exercise teaches: compare sequences by their items, not their type.
    # An exercise that does ask for one type checks it with ``extract``.
    same_kind = a.kind == b.kind or {a.kind, b.kind} <= _SEQUENCES
    return (
        same_kind and a.keys == b.keys and len(a.items) == len(b.items)
        and all(_same_structure(x, y) for x, y in zip(a.items, b.items, strict=True))
    )


def _leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every array of ``value`` with its path: a tuple of indices and dict keys."""
    if isinstance(value, Node):
        out = []
        labels = value.keys or range(len(value.items))
        for label, item in zip(labels, value.items, strict=True):
            out += _leaves(item, (*path, label))
        return out
    return [(path, value)]


def where(path: tuple, language: str = "en") -> str:
    """Say in words which part of a returned value ``path`` points to.

    ``(0,)`` is "the first returned value" (「第 1 個回傳值」); ``(1, "w")`` is
    "entry 'w' of the second returned value": a learner reads words, not
    ``[1]['w']``.
    """
    text = ""
    for depth, label in enumerate(path):
        if isinstance(label, str):
            key = "path_first_key" if depth == 0 else "path_key"
            text = message(key, language, key=repr(label), whole=text)
        else:
            key = "path_first_item" if depth == 0 else "path_item"
            text = message(key, language, n=label + 1, ordinal=ordinal(label + 1),
                           whole=text)
    return text


def _kind(dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "int_kind"
    if dtype.kind in "fc" or dtype.name == "bfloat16":
        return "float_kind"
    return dtype.name


def compare(expected: Any, got: Any, case: Case, language: str = "en") -> str:
    """Return what is wrong with ``got`` against ``expected`` ("" if nothing)."""
    if isinstance(got, Bad):
        if got.type == "NoneType":
            return message("returned_none", language)
        if got.type == "tracer":
            return message("returned_tracer", language)
        return message(
            "returned_type", language, type=got.type,
            expected=message("array", language),
        )
    if not _same_structure(expected, got):
        bad = next((leaf for _, leaf in _leaves(got) if isinstance(leaf, Bad)), None)
        if isinstance(expected, np.ndarray) and isinstance(got, Node) or bad is None:
            return message(
                "wrong_structure", language, expected=_structure(expected, language),
                got=_structure(got, language),
            )
        return message("returned_type", language, type=bad.type,
                       expected=message("array", language))
    for (path, exp), (_, out) in zip(_leaves(expected), _leaves(got), strict=True):
        problem = _compare_arrays(exp, out, case, language)
        if problem:
            return message("at_path", language, where=where(path, language),
                           problem=problem) if path else problem
    return ""


def _compare_arrays(
    exp: np.ndarray, got: np.ndarray, case: Case, language: str
) -> str:
    if exp.shape != got.shape:
        text = message("wrong_shape", language, expected=exp.shape, got=got.shape)
        if exp.ndim >= 2 and got.shape == exp.shape[::-1]:
            text += " (" + message("transposed", language) + ")"
        return text
    if case.dtype == "exact" and exp.dtype != got.dtype:
        return message("wrong_dtype", language, expected=exp.dtype.name,
                       got=got.dtype.name)
    if case.dtype == "kind" and _kind(exp.dtype) != _kind(got.dtype):
        return message("wrong_kind", language,
                       expected=message(_kind(exp.dtype), language)
                       if _kind(exp.dtype).endswith("_kind") else _kind(exp.dtype),
                       got=got.dtype.name)
    e = exp.astype(np.float64) if exp.dtype.kind == "b" else exp
    g = got.astype(np.float64) if got.dtype.kind in "biu" or got.dtype.name == \
        "bfloat16" else got
    e = e.astype(np.float64) if e.dtype.kind in "iu" or e.dtype.name == "bfloat16" \
        else e
    if g.dtype.kind in "fc":
        nans = np.isnan(g) & ~np.isnan(e)
        if nans.any():
            return message("has_nan", language, count=int(nans.sum()), size=g.size)
    if not np.allclose(g, e, rtol=case.rtol, atol=case.atol, equal_nan=True):
        diff = np.abs(np.asarray(g, np.complex128) - np.asarray(e, np.complex128))
        diff = np.where(np.isnan(diff), np.inf, diff)
        where = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        index = tuple(int(i) for i in where)
        if exp.size > 12 or exp.ndim > 2:
            wrong = ~np.isclose(g, e, rtol=case.rtol, atol=case.atol, equal_nan=True)
            return message(
                "wrong_values_large", language, count=int(wrong.sum()), size=exp.size,
                diff=float(diff.max()), index=index, expected=float(np.real(e[where])),
                got=float(np.real(g[where])),
            )
        return message(
            "wrong_values", language, expected=_fmt(exp), got=_fmt(got),
            diff=float(diff.max()), index=index,
        )
    return ""


_REFERENCE_CACHE: dict[tuple[str, int], list[Observation]] = {}
_MISTAKE_CACHE: dict[tuple[str, int, int], Observation] = {}


def reference_observations(exercise: Exercise) -> list[Observation]:
    """Return the reference's observations on every case (cached; never fails)."""
    key = (exercise.id, id(exercise))
    if key not in _REFERENCE_CACHE:
        observed = [observe(exercise.reference, c, None) for c in exercise.cases]
        for case, obs in zip(exercise.cases, observed, strict=True):
            if obs.kind != "value":
                raise RuntimeError(
                    f"the reference of {exercise.id} fails on "
                    f"{case.description!r}: {obs.kind} {obs.error}"
                )
        _REFERENCE_CACHE[key] = observed
    return _REFERENCE_CACHE[key]


def _diagnose(exercise: Exercise, index: int, got: Observation) -> str:
    case = exercise.cases[index]
    if case.transform in ("grad", "vectorized"):
        return ""
    for number, mistake in enumerate(exercise.mistakes):
        key = (exercise.id, index, number)
        if key not in _MISTAKE_CACHE:
            _MISTAKE_CACHE[key] = observe(mistake.function, case, None)
        wrong = _MISTAKE_CACHE[key]
        if wrong.kind == "value" and not compare(wrong.value, got.value, case):
            return mistake.message
    return ""


def _verdict(
    exercise: Exercise, index: int, expected: Observation, got: Observation
) -> Feedback:
    case, lang = exercise.cases[index], exercise.language
    name = "trace" if case.transform == "vectorized" else case.transform
    transform = message(f"under_{name}", lang) if name != "call" else ""
    problem = ""
    if got.kind == "not_attempted":
        problem = message("not_attempted", lang)
    elif got.kind == "missing" and got.error:
        problem = message("not_callable", lang, name=exercise.function_name,
                          type=got.error)
    elif got.kind == "missing":
        problem = message("missing_function", lang, name=exercise.function_name)
    elif got.kind == "timeout":
        problem = message("timeout", lang, seconds=got.seconds)
    elif got.kind == "skipped":
        problem = message("skipped_after_timeout", lang)
    elif got.kind == "error":
        if transform:
            problem = message("raised_under", lang,
                              error=explain_error(got.error, lang), transform=transform)
        else:
            problem = message("raised", lang, error=explain_error(got.error, lang))
        if got.category == "concretization":
            problem += ": " + message("jit_advice", lang)
        elif got.category == "tracer_leak":
            problem += ": " + message("tracer_leak", lang)
    elif case.transform == "vectorized":
        counts = got.value if isinstance(got.value, np.ndarray) else np.zeros(0)
        small, large = (int(c) for c in counts.ravel()[:2]) if counts.size >= 2 \
            else (0, 1)
        if small != large:
            problem = message(
                "not_vectorized", lang, small=small, large=large,
                n_small=case.sizes[0], n_large=case.sizes[1],
            )
    else:
        problem = compare(expected.value, got.value, case, lang)
        if problem:
            mistake = _diagnose(exercise, index, got)
            if mistake:
                problem += " — " + mistake
        elif got.mutated:
            problem = message("mutated_input", lang, arg=got.mutated)
    if problem:
        text = message("failed", lang, test=case.description, problem=problem)
        return Feedback(case.description, False, text, problem)
    return Feedback(case.description, True, message("ok", lang, test=case.description))


def judge(
    exercise: Exercise,
    observations: Sequence[Observation],
    expected: Sequence[Observation] | None = None,
) -> Result:
    """Compare a function's observations with the reference's; write feedback.

    ``expected`` defaults to the reference's observations, computed here.
    """
    if expected is None:
        expected = reference_observations(exercise)
    if len(observations) != len(exercise.cases):
        raise ValueError(
            f"{exercise.id} has {len(exercise.cases)} cases, "
            f"got {len(observations)} observations"
        )
    feedback = tuple(
        _verdict(exercise, i, e, o)
        for i, (e, o) in enumerate(zip(expected, observations, strict=True))
    )
    if observations and all(o.kind == "not_attempted" for o in observations):
        status = "not_attempted"
    elif all(f.passed for f in feedback):
        status = "passed"
    else:
        status = "failed"
    return Result(exercise.id, status, feedback, exercise.language)


def check(
    exercise_id: str, answer: Any, *, time_limit: float | None = None
) -> Result:
    """Check ``answer`` against exercise ``exercise_id``; never raises for it.

    Parameters
    ----------
    exercise_id : str
        A registered id, e.g. ``"mlp.relu"``.
    answer : callable
        The learner's function.
    time_limit : float, optional
        Seconds per test; by default the exercise's own limit.

    Returns
    -------
    Result
        ``passed``, ``score`` and one feedback message per test.
    """
    exercise = get(exercise_id)
    return judge(exercise, observe_all(exercise, answer, time_limit))


def grading_mode() -> bool:
    """Whether the classroom grader is running this process."""
    return os.environ.get(GRADING_ENV) == "1"
