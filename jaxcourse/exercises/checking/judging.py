"""Judging: a function's observations against the reference's, and feedback.

:func:`judge` compares what a learner's function did on each case with what
the reference did (stored ahead of time, :mod:`jaxcourse.exercises.checking.references`,
or computed here), names a known mistake when a wrong answer matches one (by
its output, or by the error it raises), and returns a
:class:`~jaxcourse.exercises.checking.result.Result` with one message per test, in the
exercise's language. :func:`check` is observe-then-judge in one
call; it never raises because of the learner's code. What differs between two
values is said by :mod:`~jaxcourse.exercises.checking.comparison`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...messages import explain_error, message
from . import references
from .comparison import compare, where
from .errors import read_error
from .library_answers import function_library_answer, shown_name
from .measures import _measured as _measured
from .mode import GRADING_ENV, grading_mode
from .observation import Observation
from .observe import observe, observe_all
from .patterns import _from_inputs
from .patterns import _pattern as _pattern
from .registry import get
from .relations import relate
from .result import Feedback, Result
from .spec import Exercise

# Feedback, Result, compare, where, grading_mode, GRADING_ENV, _pattern and
# _measured moved to the modules above; they stay importable from here for
# the tests, which import them by this module's name.
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


_REFERENCE_CACHE: dict[tuple[str, int], list[Observation]] = {}
_MISTAKE_CACHE: dict[tuple[str, int, int, int], Observation] = {}


def _stored(exercise: Exercise) -> Any:
    # The outputs stored ahead of time, when fresh (None: compute them live).
    # Looked up on the package at each call, so a replaced reader (the
    # first-Check benchmark's live mode) takes effect here too.
    return references.stored_outputs(exercise)


def reference_observations(exercise: Exercise) -> list[Observation]:
    """Return the reference's observations on every case (cached; never fails).

    They come from the store written ahead of time
    (:mod:`jaxcourse.exercises.checking.references`) while it is fresh, else (and for
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
        if not mistake.applies_to(index, len(exercise.cases)):
            continue
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


def _named_error(exercise: Exercise, error: str) -> str:
    """Return the message of the first mistake that raises ``error``, or "".

    ``error`` is an observation's first line ("ValueError: ..."); a mistake
    names it when the line holds the mistake's ``raises``.
    """
    return next((m.message for m in exercise.mistakes
                 if m.raises and m.raises in error), "")


def _verdict(
    exercise: Exercise, index: int, expected: Observation, got: Observation,
    every: tuple[Sequence[Observation], Sequence[Observation]] | None = None,
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
        # Past a fifth over the limit, the learner waited visibly longer than
        # the limit says: both are said. A graded row stays the same on any
        # machine, so the grader says the limit alone.
        busy = got.wall > 1.2 * got.seconds and not grading_mode()
        problem = message("timeout_busy" if busy else "timeout", lang,
                          seconds=got.seconds, wall=got.wall,
                          likely=message(f"endless_{case.endless}", lang))
    elif got.kind == "skipped":
        problem = message("skipped_after_timeout", lang)
    elif got.kind == "error":
        named = _named_error(exercise, got.error)
        # A named error keeps only its type: the mistake's message says the rest.
        error = explain_error(got.error.partition(":")[0] if named else got.error, lang)
        if transform:
            problem = message("raised_under", lang, error=error, transform=transform)
        else:
            problem = message("raised", lang, error=error)
        if named:
            problem += " — " + named
        elif got.category == "concretization":
            problem += ": " + message("jit_advice", lang)
        elif got.category == "tracer_leak":
            problem += ": " + message("tracer_leak", lang)
        elif got.category == "global_shape":
            problem += ": " + message("global_shape_advice", lang)
        else:
            # The slip the error's own words show (a mesh axis written in, an
            # argument mapped that every item shares...), where a rule reads it.
            slip = read_error(got.error, exercise.devices, lang)
            problem += f" — {slip}" if slip else ""
    elif case.transform == "vectorized":
        counts = got.value if isinstance(got.value, np.ndarray) else np.zeros(0)
        small, large = (int(c) for c in counts.ravel()[:2]) if counts.size >= 2 \
            else (0, 1)
        if small != large:
            problem = message(
                "not_vectorized", lang, small=small, large=large,
                n_small=case.sizes[0], n_large=case.sizes[1],
            )
        elif counts.size >= 3 and counts.ravel()[2] and not (
                isinstance(expected.value, np.ndarray) and expected.value.size >= 3
                and expected.value.ravel()[2]):
            # A scan as long as the batch: the examples computed one by one.
            problem = message("scanned_examples", lang, n=case.sizes[-1])
    else:
        problem = compare(expected.value, got.value, case, lang,
                          devices=exercise.devices)
        if problem:
            mistake = _diagnose(exercise, index, got)
            if mistake:
                # A known mistake says more than a pattern: it alone follows.
                problem = compare(expected.value, got.value, case, lang,
                                  patterns=False,
                                  devices=exercise.devices) + " — " + mistake
            elif got.echoed:
                # An argument returned unchanged says more than how it
                # relates to the right value.
                problem = compare(expected.value, got.value, case, lang,
                                  patterns=False, devices=exercise.devices) + \
                    " — " + _from_inputs(expected.value, got, lang)
            elif " — " not in problem:
                # How the wrong value relates to the right one: the slip in
                # the reference's own reasoning that gives it, a unit, an
                # input, another test; or to the function's inputs.
                relation = relate(exercise, index, *every) if every else ""
                relation = relation or _from_inputs(expected.value, got, lang)
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
    every = (list(expected), list(observations))
    feedback = tuple(
        _verdict(exercise, i, e, o, every)
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
        ``passed``, ``score`` and one feedback message per test, and a
        ``note`` when the answer is a library function that computes the
        exercise's result (the check panel's "this is
        ``transformer.param_count``: write the reasoning yourself",
        :mod:`jaxcourse.exercises.checking.library_answers`), which the printed
        report shows under its summary. In the grader's process
        (:func:`grading_mode`) a notebook's own Check runs nothing and
        returns ``"not_attempted"``: the course copy there holds no answer
        to compare with, and the grader judges the notebook's functions
        itself, outside.
    """
    exercise = get(exercise_id)
    if grading_mode():
        return Result(exercise.id, "not_attempted", (), exercise.language)
    result = judge(exercise, observe_all(exercise, answer, time_limit))
    found = function_library_answer(exercise.id, answer)
    if found is None:
        return result
    note = message("check_library_answer", exercise.language, name=shown_name(found))
    return dataclasses.replace(result, note=note)
