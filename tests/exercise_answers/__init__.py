"""Answers to every exercise, as learners write them: the contract's tables.

Per topic (the part of an exercise id before the dot), ``<topic>.py`` holds
the answers, as functions, and ``<topic>.toml`` the table of what checking
them must give: ``[wrong."<exercise id>"]`` maps an answer's name to a
fragment of the report (or a list of fragments, all of which must be there),
``[right]`` maps an exercise id to its alternative answers' names, and
``[submissions.<name>]`` holds notebooks for the grader (function ``bodies``
filled into the student notebook, or ``master = true``), with the ``scores``
and ``feedback`` they must get.

Chapter 9's Simplified-Chinese edition (topic ``dp_zh_hans``) is a generated
twin of ``dp_zh``: it is checked with ``dp_zh``'s answers (:data:`TWINS`), and
the tests convert their fragments as the edition's texts are converted.

:func:`judge_all` checks some exercises (each reference and every answer) and
returns plain data, so that ``tests/test_exercise_contract.py`` can run it in
a process with as many devices as those exercises need.
"""

from __future__ import annotations

import functools
import importlib
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import numpy as np

from jaxcourse.exercises import check, get

#: A topic checked with another topic's answers: the generated edition.
TWINS = {"dp_zh_hans": "dp_zh"}


class Row(NamedTuple):
    """One answer of a table: to which exercise, its name, what must be said."""

    exercise_id: str
    name: str
    fragments: tuple[str, ...] = ()


class Submission(NamedTuple):
    """A notebook for the grader: bodies by function name, what it must get.

    ``bodies`` of None is the solution notebook itself.
    """

    bodies: dict[str, str] | None
    scores: dict[str, float]
    feedback: dict[str, str]


def topic_of(exercise_id: str) -> str:
    """The part of ``exercise_id`` before the dot."""
    return exercise_id.split(".", 1)[0]


def answers_module(topic: str) -> ModuleType | None:
    """The module of ``topic``'s answers (its twin's), or None if there is none."""
    name = f"{__name__}.{TWINS.get(topic, topic)}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:
            raise  # the module exists but needs something missing: say so
        return None


@functools.cache
def table(topic: str) -> dict:
    """``topic``'s table (its twin's), or an empty one if there is none."""
    path = Path(__file__).with_name(f"{TWINS.get(topic, topic)}.toml")
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _own(topic: str, exercise_id: str) -> str:
    # A twin's table names the twin's exercises: rename them to this topic's.
    return f"{topic}.{exercise_id.split('.', 1)[1]}" if topic in TWINS else exercise_id


def wrong(topic: str) -> list[Row]:
    """The wrong answers to ``topic``'s exercises."""
    return [Row(_own(topic, exercise_id), name,
                tuple(said) if isinstance(said, list) else (said,))
            for exercise_id, answers in table(topic).get("wrong", {}).items()
            for name, said in answers.items()]


def right(topic: str) -> list[Row]:
    """The alternative correct answers to ``topic``'s exercises."""
    return [Row(_own(topic, exercise_id), name)
            for exercise_id, names in table(topic).get("right", {}).items()
            for name in names]


def submissions(topic: str) -> dict[str, Submission]:
    """The grader's submissions for ``topic``'s chapter (not its twin's)."""
    found = {} if topic in TWINS else table(topic).get("submissions", {})
    return {name: Submission(None if s.get("master") else s["bodies"], s["scores"],
                             s.get("feedback", {}))
            for name, s in found.items()}


def answer(exercise_id: str, name: str) -> Callable:
    """The answer called ``name`` to ``exercise_id``."""
    return getattr(answers_module(topic_of(exercise_id)), name)


def judge(exercise_id: str, function: Callable) -> dict:
    """Check ``function`` as ``exercise_id``; the result as plain data."""
    state = np.random.get_state()  # an answer may seed NumPy's global generator
    result = check(exercise_id, function)
    np.random.set_state(state)
    return {"status": result.status, "score": result.score,
            "summary": result.summary(), "report": result.report()}


def judge_all(exercise_ids: Iterable[str]) -> dict[str, dict]:
    """Judge each exercise's reference and every answer, keyed ``id:name``."""
    verdicts = {}
    for exercise_id in exercise_ids:
        topic = topic_of(exercise_id)
        verdicts[f"{exercise_id}:reference"] = judge(exercise_id,
                                                      get(exercise_id).reference)
        for row in wrong(topic) + right(topic):
            if row.exercise_id == exercise_id:
                verdicts[f"{exercise_id}:{row.name}"] = judge(
                    exercise_id, answer(exercise_id, row.name))
    return verdicts


# ---- constants: no case's answer may be one a constant function gives ---------------


def _first_outputs(exercise_id: str) -> list:
    """What the reference returned on the first case, call by call.

    A runner may call the function several times (once per simulated
    process, say): each return is a constant a learner might write in. An
    iterator is turned into a list, which can be returned again and again.
    """
    exercise = get(exercise_id)
    case = exercise.cases[0]
    returned = []

    def recording(*args, **kwargs):
        out = exercise.reference(*args, **kwargs)
        if hasattr(out, "__next__"):
            out = list(out)
        returned.append(out)
        return out

    if case.prepare is not None:
        case.prepare()
    args = case.make_inputs()
    if case.runner is not None:
        case.runner(recording, *args, **case.kwargs)
    else:
        recording(*args, **case.kwargs)
    return returned


def constant_verdicts(exercise_ids: Iterable[str]) -> dict[str, dict]:
    """Check, per exercise, the constants its first case suggests.

    For each output of :func:`_first_outputs`, a function that returns it
    whatever its arguments is tried on the cases that run in this process (a
    launched case is left out), in order, until one fails. Also says whether
    two cases' expected outputs differ.

    Returns
    -------
    dict
        Exercise id -> ``{"distinct": bool, "constants": [str, ...]}``, one
        item per constant: how the first case it fails tells it apart, or ""
        if it passes them all.
    """
    from processes import starts_a_process

    from jaxcourse.exercises.checking.judging import compare, reference_observations
    from jaxcourse.exercises.checking.observe import case_time_limits, observe

    verdicts = {}
    for exercise_id in exercise_ids:
        exercise = get(exercise_id)
        cases = exercise.cases
        assert not starts_a_process(cases[0].runner), \
            f"{exercise_id}: its first case launches processes"
        expected = reference_observations(exercise)
        compared = [i for i, c in enumerate(cases)
                    if c.transform not in ("grad", "vectorized")]
        distinct = any(compare(expected[i].value, expected[j].value, cases[j])
                       for i in compared for j in compared if i < j)
        tried = [(case, limit, reference) for case, limit, reference
                 in zip(cases, case_time_limits(exercise), expected, strict=True)
                 if not starts_a_process(case.runner)]
        constants = []
        for out in _first_outputs(exercise_id):
            def constant(*args, _out=out, **kwargs):
                return _out

            constant.__name__ = exercise.function_name
            told = ""
            for case, limit, reference in tried:
                got = observe(constant, case, limit, exercise.compiled_calls)
                told = _tells_apart(case, reference, got, compare)
                if told:
                    break
            constants.append(told)
        verdicts[exercise_id] = {"distinct": distinct, "constants": constants}
    return verdicts


def _tells_apart(case, expected, got, compare) -> str:
    """Say how ``got`` fails ``case`` ("" if it passes), as judging would."""
    if got.kind != "value":
        return f"{case.description}: {got.kind} {got.error}"
    if case.transform == "vectorized":
        counts = [int(c) for c in np.ravel(got.value)[:2]]
        return "" if len(set(counts)) == 1 else f"{case.description}: {counts}"
    problem = compare(expected.value, got.value, case)
    return f"{case.description}: {problem}" if problem else ""
