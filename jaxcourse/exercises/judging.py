"""Judging: a function's observations against the reference's, and feedback.

:func:`judge` compares what a learner's function did on each case with what
the reference did (stored ahead of time, :mod:`jaxcourse.exercises.references`,
or computed here), names a known mistake when a wrong answer matches one, and
returns a :class:`Result` with one message per test, in the exercise's
language. :func:`check` is observe-then-judge in one call; it never raises
because of the learner's code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..messages import explain_error, message, ordinal
from .observe import Bad, Node, Observation, observe, observe_all
from .registry import get
from .spec import Case, Exercise

__all__ = [
    "GRADING_ENV",
    "Feedback",
    "Result",
    "check",
    "compare",
    "grading_mode",
    "judge",
    "reference_observations",
    "where",
]

#: Set to ``1`` by the grader: panels and explorers then skip their work.
GRADING_ENV = "JAXCOURSE_GRADING"

# --------------------------------------------------------------------------
# Judging: observations against the reference, and the feedback
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """The verdict on one case: what was tried, and what went wrong if anything.

    ``advice``: the case checks a technique the text only recommends
    (``Case.advice``); it is reported but not counted in the score.
    """

    test: str
    passed: bool
    message: str
    problem: str = ""
    advice: bool = False


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
        """How many tests passed (advice not counted)."""
        return sum(f.passed for f in self.feedback if not f.advice)

    @property
    def n_tests(self) -> int:
        """How many tests there are (advice not counted)."""
        return sum(not f.advice for f in self.feedback)

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


def compare(expected: Any, got: Any, case: Case, language: str = "en",
            patterns: bool = True) -> str:
    """Return what is wrong with ``got`` against ``expected`` ("" if nothing).

    With ``patterns``, a difference of values is followed by what the wrong
    value has in common with the expected one, where it has something
    (:func:`_pattern`: a constant factor, an offset, a shift).
    """
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
        measure = next((label for label in path if label in MEASURES), None)
        if problem and measure and exp.shape == out.shape and (
                measure != "layout" or exp.ndim == 3):
            # A measurement (of the compiled program, of where the pieces of
            # an array live), not a value the learner returned: say in words
            # what was measured.
            rest = tuple(label for label in path if label != measure)
            said = _measured(measure, exp, out, language)
            return message("at_path", language, where=where(rest, language),
                           problem=said) if rest else said
        if problem and patterns:
            pattern = _pattern(exp, out, case, language)
            problem += f" — {pattern}" if pattern else ""
        if problem:
            return message("at_path", language, where=where(path, language),
                           problem=problem) if path else problem
    return ""


#: Keys of an extracted dict that hold measurements rather than returned
#: values (see :func:`_measured`): of the learner's compiled program,
#: ``collectives`` (counts in the order of ``explorers_sharding.COLLECTIVES``),
#: ``bytes_sent`` (per device) and ``work_share`` (one device's share of the
#: operations), ``shard_map`` (1 if the program has a ``jax.shard_map``) and
#: ``jitted`` (1 if a returned function is compiled with ``jax.jit``);
#: of a placed array, ``layout`` (for every device in id order, the start and
#: stop of its slice in each dimension: ``(devices, ndim, 2)``).
MEASURES = ("collectives", "bytes_sent", "work_share", "shard_map", "jitted",
            "layout")
_COLLECTIVE_NAMES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                     "collective-permute")


def _counted(counts: np.ndarray, language: str) -> str:
    parts = [message("count_of", language, n=int(n), name=name)
             for n, name in zip(counts.ravel(), _COLLECTIVE_NAMES, strict=False) if n]
    return message("list_joiner", language).join(parts) if parts else message(
        "no_collective", language)


def _share(value: float, language: str) -> str:
    inverse = 1 / value if value > 0 else 0
    if value > 0 and abs(inverse - round(inverse)) <= 0.02 * inverse:
        return f"1/{round(inverse)}" if round(inverse) > 1 else message(
            "share_all", language)
    return f"{value:.3g}"


def _pieces(layout: np.ndarray, language: str) -> str:
    """Say how many pieces each dimension of a layout is cut into."""
    counts = [len({tuple(span) for span in layout[:, dim]})
              for dim in range(layout.shape[1])]
    if all(n == 1 for n in counts):
        return message("layout_whole", language)
    return message("list_joiner", language).join(
        message("layout_pieces", language, n=n, dim=dim)
        for dim, n in enumerate(counts) if n > 1)


def _measured(key: str, exp: np.ndarray, got: np.ndarray, language: str) -> str:
    """Say how a measurement differs from the reference's, in words."""
    if key == "layout":
        said, wanted = _pieces(got, language), _pieces(exp, language)
        if said == wanted:
            return message("layout_elsewhere", language, pieces=said)
        return message("layout_split", language, got=said, expected=wanted)
    if key == "shard_map":
        return message("no_shard_map" if int(exp) else "shard_map_not_needed",
                       language)
    if key == "jitted":
        return message("not_jitted" if int(exp) else "jitted_not_needed", language)
    if key == "collectives":
        return message("measured_collectives", language,
                       got=_counted(got, language), expected=_counted(exp, language))
    if key == "bytes_sent":
        return message("measured_bytes", language, got=f"{float(got):,.0f}",
                       expected=f"{float(exp):,.0f}",
                       ratio=f"{float(got) / float(exp):.3g}" if float(exp) else "∞")
    return message("measured_share", language, got=_share(float(got), language),
                   expected=_share(float(exp), language))


def _compare_arrays(
    exp: np.ndarray, got: np.ndarray, case: Case, language: str
) -> str:
    if exp.shape != got.shape:
        text = message("wrong_shape", language, expected=exp.shape, got=got.shape)
        if exp.ndim >= 2 and got.shape == exp.shape[::-1]:
            text += " (" + message("transposed", language) + ")"
        elif exp.ndim == 0:
            text += " (" + message("array_for_number", language) + ")"
        return text
    # True/False where a number was expected: a comparison, not a count.
    bool_for_number = got.dtype.kind == "b" and exp.dtype.kind != "b"
    if case.dtype == "exact" and exp.dtype != got.dtype:
        return message("wrong_dtype", language, expected=exp.dtype.name,
                       got=got.dtype.name) + (
            " (" + message("bool_for_number", language) + ")"
            if bool_for_number else "")
    if case.dtype == "kind" and _kind(exp.dtype) != _kind(got.dtype):
        return message("wrong_kind", language,
                       expected=message(_kind(exp.dtype), language)
                       if _kind(exp.dtype).endswith("_kind") else _kind(exp.dtype),
                       got=got.dtype.name) + (
            " (" + message("bool_for_number", language) + ")"
            if bool_for_number else "")
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


def _factor(k: float, language: str) -> tuple[str, bool]:
    """Return ``k`` in words, and whether it is a whole number or its inverse."""
    n = round(k)
    if n >= 2 and abs(k - n) <= 1e-3 * n:
        return message("factor_times", language, n=n), True
    m = round(1 / k)
    if m >= 2 and abs(1 / k - m) <= 1e-3 * m:
        return message("factor_part", language, n=m), True
    return message("factor_other", language, k=k), False


def _pattern(exp: np.ndarray, got: np.ndarray, case: Case, language: str) -> str:
    """Name what a wrong value has in common with the expected one ("" if nothing).

    Only for real numbers of the same shape that differ: every value scaled by
    one factor (a sum for a mean, a factor of the device count), with the wrong
    sign, off by one constant or by the same values along an axis (a bias or a
    location left out), or moved along an axis (a ring shifted the wrong way).
    Random differences match none of these, so nothing is named for them.
    """
    if exp.shape != got.shape or exp.size < 1 or exp.dtype.kind not in "fiu" \
            or got.dtype.kind not in "fiu":
        return ""
    e, g = exp.astype(np.float64), got.astype(np.float64)
    if not (np.isfinite(e).all() and np.isfinite(g).all()):
        return ""

    def close(a: np.ndarray, b: np.ndarray) -> bool:
        return bool(np.allclose(a, b, rtol=max(case.rtol, 1e-6), atol=case.atol))

    if close(g, e):
        return ""
    norm = float(np.vdot(e, e))
    if norm > 0:
        k = float(np.vdot(e, g)) / norm
        if abs(k) > 1e-9 and close(g, k * e):
            if abs(k + 1) <= 1e-3:
                return message("pattern_negated", language)
            factor, whole = _factor(k, language)
            # One number is always some multiple of another: only a whole
            # factor (or its inverse) says something there.
            if e.size > 1 or whole:
                return message("pattern_factor", language, factor=factor)
    if e.size == 1:
        return ""
    if (e >= 0).all() and (g < 0).any() and close(np.maximum(g, 0), e):
        return message("pattern_negatives", language)
    if e.ndim >= 1 and e.shape[0] >= 2:
        rows = np.array([close(g[i], e[i]) for i in range(e.shape[0])])
        k = int(np.argmin(rows)) if not rows.all() else 0
        # Right up to row k, wrong from there on, in equal blocks: one
        # device's block (or a few) computed, the others' not.
        if k and not rows[k:].any() and e.shape[0] % k == 0:
            return message("pattern_first_block", language, k=k, n=e.shape[0])
    diff = g - e
    if close(diff, np.full_like(diff, diff.mean())):
        return message("pattern_offset", language, offset=float(diff.mean()))
    for axis in range(e.ndim):
        if e.shape[axis] > 1 and close(diff, diff.mean(axis=axis, keepdims=True)):
            return message("pattern_offset_axis", language, axis=axis)
    for axis in range(e.ndim):
        n = e.shape[axis]
        # Two entries moved by one are just swapped: no ring to speak of.
        if 3 <= n <= 64:
            for shift in range(1, n):
                if close(g, np.roll(e, shift, axis=axis)):
                    return message("pattern_rolled", language, shift=shift,
                                   axis=axis, back=n - shift)
    return ""


_REFERENCE_CACHE: dict[tuple[str, int], list[Observation]] = {}
_MISTAKE_CACHE: dict[tuple[str, int, int, int], Observation] = {}


def _stored(exercise: Exercise) -> Any:
    # The outputs stored ahead of time, when fresh (None: compute them live).
    from .references import stored_outputs

    return stored_outputs(exercise)


def reference_observations(exercise: Exercise) -> list[Observation]:
    """Return the reference's observations on every case (cached; never fails).

    They come from the store written ahead of time
    (:mod:`jaxcourse.exercises.references`) while it is fresh, else (and for
    outputs too large to store) from running the reference here.
    """
    key = (exercise.id, id(exercise))
    if key not in _REFERENCE_CACHE:
        stored = _stored(exercise)
        known = stored.reference if stored is not None else [None] * len(
            exercise.cases)
        observed = [k if k is not None else observe(exercise.reference, c, None)
                    for k, c in zip(known, exercise.cases, strict=True)]
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
    stored: Any = False  # looked up once, when a mistake is first needed
    for number, mistake in enumerate(exercise.mistakes):
        key = (exercise.id, id(exercise), index, number)
        if key not in _MISTAKE_CACHE:
            if stored is False:
                stored = _stored(exercise)
            known = stored.mistake(index, number) if stored is not None else None
            _MISTAKE_CACHE[key] = known if known is not None else observe(
                mistake.function, case, None)
        wrong = _MISTAKE_CACHE[key]
        if wrong.kind == "value" and not compare(wrong.value, got.value, case):
            return mistake.message
    return ""


def _from_inputs(expected: Any, got: Observation, language: str) -> str:
    """Say how a wrong output relates to the function's inputs ("" if it does not).

    The output is one of the arguments, unchanged; or its shape is an
    argument's with another axis reduced than the expected output's.
    """
    if got.echoed:
        return message("echoed_input", language, arg=got.echoed)
    value = got.value
    if not (isinstance(expected, np.ndarray) and isinstance(value, np.ndarray)) \
            or expected.shape == value.shape:
        return ""
    for shape in got.inputs:
        dropped = {axis: shape[:axis] + shape[axis + 1:] for axis in range(len(shape))}
        wanted = [a for a, rest in dropped.items() if rest == expected.shape]
        done = [a for a, rest in dropped.items() if rest == value.shape]
        if wanted and done and not set(wanted) & set(done):
            return message("reduced_axis", language, got=done[0], expected=wanted[0])
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
        problem = message("timeout", lang, seconds=got.seconds,
                          likely=message(f"endless_{case.endless}", lang))
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
        elif got.category == "global_shape":
            problem += ": " + message("global_shape_advice", lang)
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
                # A known mistake says more than a pattern: it alone follows.
                problem = compare(expected.value, got.value, case, lang,
                                  patterns=False) + " — " + mistake
            elif " — " not in problem:
                relation = _from_inputs(expected.value, got, lang)
                problem += f" — {relation}" if relation else ""
        elif got.mutated:
            problem = message("mutated_input", lang, arg=got.mutated)
    if problem and case.advice and got.kind == "value":
        # Advice, not a requirement: the answer passes, and hears what was found.
        return Feedback(case.description, True, message(
            "advice", lang, test=case.description, problem=problem), advice=True)
    if problem:
        text = message("failed", lang, test=case.description, problem=problem)
        return Feedback(case.description, False, text, problem, advice=case.advice)
    return Feedback(case.description, True, message("ok", lang, test=case.description),
                    advice=case.advice)


def judge(
    exercise: Exercise,
    observations: Sequence[Observation],
    expected: Sequence[Observation] | None = None,
) -> Result:
    """Compare a function's observations with the reference's; write feedback.

    ``expected`` defaults to the reference's observations, computed here.
    """
    if expected is None and any(o.kind == "value" for o in observations):
        expected = reference_observations(exercise)
    elif expected is None:
        # Nothing to compare (not attempted, missing, errors): the reference
        # is not needed, so a panel shown with the starter code costs nothing.
        expected = [None] * len(exercise.cases)
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
