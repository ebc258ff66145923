"""The check panel names an answer that is the course's own function (issue #51).

The grader flags such an answer as borrowed
(:mod:`jaxcourse.exercises.checking.library_answers`, ``tests/test_release_search.py``);
here the panel says it at once, under the result: "this is
``transformer.param_count``: write the reasoning yourself", for every exercise
of :data:`~jaxcourse.exercises.checking.library_answers.LIBRARY_ANSWERS`, through an
alias or a helper of the learner's, or under a thin wrapper of the learner's
that gives the exercise's answer (``tests/library_wrappers.py``), and never
for an answer of the learner's own, even one that uses a helper that is no
answer (``scaling.ring_bytes``).

The learner's cells are written to a module file, as Jupyter keeps a cell's
source where :func:`inspect.getsource` finds it.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest
from library_wrappers import HONEST, WRAPPERS

from jaxcourse import course
from jaxcourse.exercises import get
from jaxcourse.exercises.checking.judging import judge, reference_observations
from jaxcourse.exercises.checking.library_answers import (
    LIBRARY_ANSWERS,
    function_library_answer,
    shown_name,
)
from jaxcourse.exercises.checking.observe import observe_all
from jaxcourse.exercises.checking.registry import _REGISTRY
from jaxcourse.exercises.widgets.panel import CheckPanel, library_note_html

_COUNT = itertools.count()


def _load_all() -> None:
    for topic in course.topics():
        if topic.key != "multiprocess":
            course.load(topic.key)


def _cell_module(tmp_path: Path, source: str):
    """Run ``source`` as a module of its own file (a notebook's cells)."""
    name = f"_learner_cells_{next(_COUNT)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _one_call(exercise_id: str, target: str) -> str:
    """A learner's answer that is one call of ``target``, imported by its package."""
    learner = get(exercise_id).function_name
    package, _, name = shown_name(target).partition(".")
    if exercise_id == "bayes.elbo_value_and_grad":
        return (f"import jax\nfrom jaxcourse import {package}\n"
                f"{learner} = jax.value_and_grad({package}.{name}, argnums=(0, 1))\n")
    return (f"from jaxcourse import {package}\n"
            f"def {learner}(*args, **kwargs):\n"
            f"    return {package}.{name}(*args, **kwargs)\n")


@pytest.mark.parametrize(("exercise_id", "target"), [
    (exercise_id, target) for exercise_id, targets in LIBRARY_ANSWERS.items()
    for target in targets])
def test_every_library_answer_is_named_in_the_panel(tmp_path: Path, exercise_id: str,
                                                    target: str) -> None:
    _load_all()
    module = _cell_module(tmp_path, _one_call(exercise_id, target))
    answer = getattr(module, get(exercise_id).function_name)
    assert function_library_answer(exercise_id, answer) == target
    note = library_note_html(get(exercise_id), answer)
    assert f"<code>{shown_name(target)}</code>" in note
    assert "write the reasoning yourself" in note


def test_an_alias_and_a_helper_still_name_it(tmp_path: Path) -> None:
    _load_all()
    module = _cell_module(tmp_path, (
        "import jaxcourse.transformer as T\n"
        "from jaxcourse.transformer import param_count as count\n"
        "def _mine(*a):\n    return T.zero_bytes(*a)\n"
        "def zero_bytes_per_device(cfg, stage, devices, precision):\n"
        "    return _mine(cfg, stage, devices, precision)['total']\n"
        "def count_params(cfg, tied=False):\n"
        "    n = count(cfg)\n"
        "    return n - (cfg.vocab * cfg.d_model if tied else 0)\n"))
    assert function_library_answer("transformer.zero_bytes_per_device",
                                   module.zero_bytes_per_device) == \
        "jaxcourse.transformer.memory.zero_bytes"
    assert function_library_answer("transformer.count_params", module.count_params) \
        == "jaxcourse.transformer.config.param_count"


def test_an_answer_of_ones_own_is_not_named(tmp_path: Path) -> None:
    """The references, a look-alike name, and code with no source say nothing."""
    _load_all()
    for exercise_id in LIBRARY_ANSWERS:
        exercise = get(exercise_id)
        assert library_note_html(exercise, exercise.reference) == "", exercise_id
    module = _cell_module(tmp_path, (
        "from jaxcourse import transformer\n"
        "def param_count(cfg):  # the learner's own, with the library's name\n"
        "    return cfg.layers\n"
        "def count_params(cfg, tied=False):\n"
        "    cfg = transformer.Config(**vars(cfg)) if False else cfg\n"
        "    return param_count(cfg)\n"))
    assert function_library_answer("transformer.count_params",
                                   module.count_params) is None
    namespace: dict = {}
    exec("from jaxcourse import transformer\n"  # no source to read
         "def count_params(cfg, tied=False):\n"
         "    return transformer.param_count(cfg)\n", namespace)
    assert function_library_answer("transformer.count_params",
                                   namespace["count_params"]) is None
    # An exercise the table does not list, and something not callable.
    other = next(e for e in _REGISTRY if e not in LIBRARY_ANSWERS)
    assert function_library_answer(other, module.count_params) is None
    assert function_library_answer("transformer.count_params", None) is None


def test_the_panel_says_it_under_a_passing_result(tmp_path: Path) -> None:
    import solutions.transformer  # noqa: F401  registers the exercises

    module = _cell_module(tmp_path, (
        "from jaxcourse import transformer\n"
        "def flops_per_token(cfg, seq):\n"
        "    return transformer.flops_per_token(cfg, seq)['total']\n"))
    panel = CheckPanel("transformer.flops_per_token", module.flops_per_token)
    assert panel.result is not None and panel.result.passed
    assert "<code>transformer.flops_per_token</code>" in panel.summary.value
    assert "write the reasoning yourself" in panel.summary.value
    honest = CheckPanel("transformer.flops_per_token",
                        get("transformer.flops_per_token").reference)
    assert "write the reasoning yourself" not in honest.summary.value


def _learner(tmp_path: Path, exercise_id: str, source: str):
    _load_all()
    module = _cell_module(tmp_path, source)
    return getattr(module, get(exercise_id).function_name)


@pytest.mark.parametrize(("exercise_id", "target", "source"), WRAPPERS,
                         ids=[w[0] for w in WRAPPERS])
def test_a_thin_wrapper_is_named_in_the_panel(tmp_path: Path, exercise_id: str,
                                              target: str, source: str) -> None:
    answer = _learner(tmp_path, exercise_id, source)
    assert function_library_answer(exercise_id, answer) == target
    note = library_note_html(get(exercise_id), answer)
    assert f"<code>{shown_name(target)}</code>" in note


@pytest.mark.parametrize(("exercise_id", "source"), HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_answer_beside_a_listed_function_is_not_named(
        tmp_path: Path, exercise_id: str, source: str) -> None:
    answer = _learner(tmp_path, exercise_id, source)
    assert function_library_answer(exercise_id, answer) is None
    assert library_note_html(get(exercise_id), answer) == ""


@pytest.mark.parametrize(("exercise_id", "source"), [
    pytest.param(w[0], w[2], id=f"wrapper-{w[0]}",
                 # Traces the gradient for every case and policy: about 30 s.
                 marks=[pytest.mark.slow] if w[0] == "scaling.remat_policy" else [])
    for w in WRAPPERS] + [pytest.param(*h, id=f"honest-{h[0]}") for h in HONEST])
def test_the_wrappers_and_the_honest_answers_are_right(
        tmp_path: Path, exercise_id: str, source: str) -> None:
    """A listed function is one whose wrapper answers every case, as the table says."""
    answer = _learner(tmp_path, exercise_id, source)
    exercise = get(exercise_id)
    verdict = judge(exercise, observe_all(exercise, answer, 120.0),
                    reference_observations(exercise))
    assert verdict.score == 1.0


def test_the_printed_check_says_it_under_its_summary(tmp_path: Path) -> None:
    """``check(id, fn)`` printed outside a widget names the call as the panel does."""
    from jaxcourse.exercises import check

    [wrapper] = [s for e, _, s in WRAPPERS if e == "transformer.tp_specs"]
    [own] = [s for e, s in HONEST if e == "transformer.tp_specs"]
    answer = _learner(tmp_path, "transformer.tp_specs", wrapper)
    result = check("transformer.tp_specs", answer)
    assert result.passed
    summary, note, *tests = str(result).splitlines()
    assert summary == result.summary()
    assert note == ("  ⚠ this is `transformer.param_specs`, the course's own function: "
                    "write the reasoning yourself (a class's grading counts it as "
                    "borrowed)")
    assert len(tests) == result.n_tests and all(t.startswith("  ✓ ") for t in tests)
    honest = check("transformer.tp_specs",
                   _learner(tmp_path, "transformer.tp_specs", own))
    assert honest.passed and honest.note == ""
    assert "⚠" not in str(honest)
