"""A release holds nothing that answers an exercise without a flag.

For each chapter, in a fresh process with the chapter's devices (one per device
count, shared by the chapters that have it)
(``tests/release_search.py``, whose docstring says what the search covers),
every public function that a class release ships (the chapter tools, and the
content package less the answer functions it withholds) is tried as a
learner's whole answer, alone or through a simple pattern (one entry of the
dictionary it returns, ``jax.value_and_grad`` over its first arguments);
each that the grader's own judge scores 1 on every case is a *hit*. Each hit,
written as a notebook made only of that call, must be flagged as borrowing
by the grader (:mod:`jaxcourse.exercises.checking.library_answers`); and the answer
functions themselves are withheld in a release (``tests/test_release.py``)
and in the copy a submission runs against (``tests/test_grading_borrowed.py``).

Chapter 8 is left out: its cases launch processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from library_wrappers import HONEST, WRAPPERS, cells

from jaxcourse import course
from jaxcourse.exercises import get
from jaxcourse.exercises.checking.library_answers import LIBRARY_ANSWERS, library_answer
from jaxcourse.exercises.checking.registry import _REGISTRY

ROOT = Path(__file__).resolve().parents[1]
KEYS = [t.key for t in course.topics() if t.key != "multiprocess"]


def _cells(exercise_id: str, function: str, pattern: str) -> list[str]:
    """A notebook made only of the call: the import, and the learner's function."""
    module, _, name = function.rpartition(".")
    exercise = get(exercise_id)
    learner = exercise.function_name
    if pattern.startswith("value_and_grad"):
        argnums = pattern.split("=", 1)[1][:-1]  # "(0, 1))" -> "(0, 1)"
        body = f"{learner} = jax.value_and_grad({name}, argnums={argnums})\n"
    else:
        index = "" if pattern == "call" else pattern
        body = (f"def {learner}(*args, **kwargs):\n"
                f"    return {name}(*args, **kwargs){index}\n")
    return ["import jax\n", f"from {module} import {name}\n", body]


@pytest.fixture(scope="module")
def searched() -> Callable[[str], list[list[str]]]:
    """Each chapter's hits, from one fresh process per device count, run once."""
    found: dict[str, list[list[str]]] = {}

    def hits(key: str) -> list[list[str]]:
        if key not in found:
            devices = course.topic(key).devices
            keys = [k for k in KEYS if course.topic(k).devices == devices]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(ROOT), os.environ.get("PYTHONPATH", "")])}
            done = subprocess.run(
                [sys.executable, str(ROOT / "tests" / "release_search.py"), *keys],
                capture_output=True, text=True, env=env, timeout=1500, check=False)
            assert done.returncode == 0, done.stderr[-3000:]
            found.update(json.loads(done.stdout.strip().splitlines()[-1]))
        return found[key]

    return hits


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
def test_no_released_function_answers_an_exercise_unflagged(
        key: str, searched: Callable[[str], list[list[str]]]) -> None:
    hits = searched(key)
    print(f"\n{key}: {len(hits)} released functions answer an exercise: {hits}")
    unflagged = []
    for exercise_id, function, pattern in hits:
        flagged = library_answer(_cells(exercise_id, function, pattern),
                                 exercise_id, get(exercise_id).function_name)
        if flagged is None:
            unflagged.append((exercise_id, function, pattern))
    assert not unflagged, unflagged


def test_the_table_names_real_functions_and_references() -> None:
    from jaxcourse.exercises.checking.library_answers import _resolve

    for key in KEYS:
        course.load(key)
    for exercise_id, functions in LIBRARY_ANSWERS.items():
        assert exercise_id in _REGISTRY, exercise_id
        for function in functions:
            assert _resolve(function) == function, function


@pytest.mark.parametrize(("cells", "found"), [
    # The notebook: the library's own total.
    (["from jaxcourse import transformer\n",
      "def zero_bytes_per_device(cfg, stage, devices, precision):\n"
      "    return transformer.zero_bytes(cfg, stage, devices, precision)['total']\n"],
     "jaxcourse.transformer.memory.zero_bytes"),
    # Through an alias and a helper of the notebook's own.
    (["import jaxcourse.transformer as T\n",
      "def _mine(*a):\n    return T.zero_bytes(*a)\n",
      "def zero_bytes_per_device(cfg, stage, devices, precision):\n"
      "    return _mine(cfg, stage, devices, precision)['total']\n"],
     "jaxcourse.transformer.memory.zero_bytes"),
    # The name built at run time still names it.
    (["import jaxcourse.transformer as T\n",
      "def zero_bytes_per_device(cfg, stage, devices, precision):\n"
      "    f = getattr(T, 'zero_bytes')\n"
      "    return f(cfg, stage, devices, precision)['total']\n"],
     "jaxcourse.transformer.memory.zero_bytes"),
    # An honest answer: a function of its own that happens to be called elbo.
    (["import jax\nfrom jaxcourse.bayes import log_joint\n",
      "def elbo_value_and_grad(loc, log_scale, eps, all_x, y):\n"
      "    def elbo(a, b):\n"
      "        return jax.vmap(log_joint, (0, None, None, None))(\n"
      "            a + jax.numpy.exp(b) * eps, all_x, y, 10.0).mean()\n"
      "    return jax.value_and_grad(elbo, argnums=(0, 1))(loc, log_scale)\n"],
     None),
])
def test_the_grader_reads_a_library_answer_from_the_notebook(cells, found) -> None:
    exercise = {"zero_bytes_per_device": "transformer.zero_bytes_per_device",
                "elbo_value_and_grad": "bayes.elbo_value_and_grad"}
    name = next(n for n in exercise if n in cells[-1])
    assert library_answer(cells, exercise[name], name) == found


@pytest.mark.parametrize(("exercise_id", "source", "found"), [
    *[pytest.param(e, source, target, id=f"wrapper-{e}")
      for e, target, source in WRAPPERS],
    *[pytest.param(e, source, None, id=f"honest-{e}") for e, source in HONEST]])
def test_the_grader_reads_a_thin_wrapper_and_spares_an_honest_answer(
        exercise_id: str, source: str, found: str | None) -> None:
    """Most of an answer under the learner's own few lines is still the library's.

    ``tests/test_library_answers_panel.py`` checks that each wrapper answers
    every case; an honest answer that uses a helper which is no answer
    (``scaling.ring_bytes``) is not flagged.
    """
    course.load(exercise_id.partition(".")[0])  # the topic's key registers it
    assert library_answer(cells(source), exercise_id,
                          get(exercise_id).function_name) == found


def test_the_grader_zeroes_a_library_answer(tmp_path: Path) -> None:
    """From the notebook's file, in the grading process: borrowed, with the reason."""
    import nbformat

    from jaxcourse.exercises.grading.borrowing import verdicts
    from jaxcourse.exercises.grading.local import _add_library_answers

    exercise_id = "bayes.elbo_value_and_grad"
    course.load("bayes")
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import jax\nimport jaxcourse.bayes as b\n"),
        nbformat.v4.new_code_cell(
            "elbo_value_and_grad = jax.value_and_grad(b.elbo, argnums=(0, 1))\n")])
    path = tmp_path / "borrows.ipynb"
    nbformat.write(notebook, path)
    report: dict = {"exercises": {}, "borrowed": {}}
    _add_library_answers(report, path, [exercise_id])
    assert report["borrowed"] == {exercise_id: {"how": "library",
                                                "reference": "jaxcourse.bayes.elbo"}}
    [sentence] = verdicts(report, [exercise_id]).values()
    assert sentence == ("borrowed the reference answer: `elbo_value_and_grad` uses "
                        "the course's `jaxcourse.bayes.elbo`, which returns this "
                        "exercise's answer: zero")
