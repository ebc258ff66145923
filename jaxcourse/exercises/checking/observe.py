"""The safety boundary: the one module that calls a learner's code on a case.

:func:`observe_all` calls a function (the learner's, untrusted) on every case
of an exercise and records what came back as plain data
(:class:`~jaxcourse.exercises.checking.observation.Observation`): under each case's
time limit (:mod:`~jaxcourse.exercises.checking.case_limits`, enforced by
:func:`~jaxcourse.exercises.checking.time_limit.call_with_time_limit`), with its
printing hidden, its exceptions caught and its inputs watched for mutation,
under the case's transform (a plain call, ``jax.jit``, ``jax.grad``,
``jax.vmap`` or a count of traced operations). Observations can be sent
between processes (``to_json``), so the classroom grader observes in a
submission's process and judges in its own. Nothing here decides whether an
answer is right: see :mod:`jaxcourse.exercises.checking.judging`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .case_limits import case_time_limits
from .mode import WARM_UP_ENV
from .observation import Bad, Choice, Node, Observation, Spec
from .spec import Case, Exercise
from .time_limit import TimeLimitError, call_with_time_limit, time_left
from .time_limit import _TimeUp as _TimeUp

# Observation, Node, TimeLimitError, call_with_time_limit, time_left,
# case_time_limits, _TimeUp and WARM_UP_ENV moved to the modules above; they
# stay importable from here for the tests, the benchmarks and chapter 8's
# harness, which import them by this module's name.
__all__ = [
    "WARM_UP_ENV",
    "Node",
    "Observation",
    "TimeLimitError",
    "call_with_time_limit",
    "case_time_limits",
    "observe",
    "observe_all",
    "time_left",
]

# --------------------------------------------------------------------------
# A returned object, as plain data
# --------------------------------------------------------------------------


def _to_value(out: Any) -> Any:
    """Turn a returned object into a tree of Node, np.ndarray and Bad."""
    if isinstance(out, jax.core.Tracer):
        return Bad("tracer")
    if isinstance(out, (Choice, Spec)):  # made by an exercise's extract
        return out
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


# --------------------------------------------------------------------------
# A call as the case asks: plain, jitted, differentiated, vmapped or traced
# --------------------------------------------------------------------------


def _is_traced(arg: Any) -> bool:
    leaves = jax.tree_util.tree_leaves(arg)
    return bool(leaves) and all(
        isinstance(leaf, (np.ndarray, jax.Array)) for leaf in leaves
    )


def _split(args: tuple) -> tuple[list[int], list[Any]]:
    positions = [i for i, a in enumerate(args) if _is_traced(a)]
    return positions, [args[i] for i in positions]


def _scan_lengths(jaxpr: Any) -> set[int]:
    """Return the length of every scan in ``jaxpr``, nested ones too (``lax.map``'s)."""
    lengths = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "scan":
            lengths.add(int(eqn.params.get("length", -1)))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    lengths |= _scan_lengths(inner)
    return lengths


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
        # Operations at each size, then whether the largest size's program
        # scans over its examples one at a time (a lax.map or a scan as long
        # as the batch: a loop that a count of operations cannot see).
        counts = []
        for n in case.sizes:
            sized = case.make_inputs(n)
            jaxpr = jax.make_jaxpr(_closed(function, sized, kwargs))(*_split(sized)[1])
            counts.append(_count_eqns(jaxpr.jaxpr))
        counts.append(int(case.sizes[-1] in _scan_lengths(jaxpr.jaxpr)))
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


# --------------------------------------------------------------------------
# Observing one case, then every case
# --------------------------------------------------------------------------


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
    started = time.monotonic()
    for case, limit in zip(exercise.cases, limits, strict=True):
        if observations and observations[-1].kind in ("timeout", "skipped"):
            observations.append(Observation("skipped"))
            continue
        outcome = observe(function, case, limit, exercise.compiled_calls)
        if outcome.kind == "timeout":
            # What the learner waited, said beside the limit: on a busy
            # machine the limit counts the call's own time, and the clock
            # runs on while other programs hold the cores.
            outcome = dataclasses.replace(outcome, wall=time.monotonic() - started)
        if outcome.kind == "not_attempted":
            return [Observation("not_attempted")] * len(exercise.cases)
        observations.append(outcome)
    return observations
