"""The class's "pasted" flag: a teacher can act on it.

Measured on the honest answers of the course's blind benchmark
(``benchmarks/blind_answers``: written from the exercise texts alone, by
authors who had read no reference): fewer than 5 % of them may be flagged.
And the cases the flag is for: a short answer that any learner writes is not
flagged for its code alone, but is when it carries the shown solution's
prose; a long solution pasted is flagged with its comments stripped too.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from jaxcourse.exercises import exercise_ids, get
from jaxcourse.exercises.checking.answers import (
    answer_digests,
    answer_marks,
    reference_size,
)
from jaxcourse.exercises.grading.rows import SubmissionResult
from jaxcourse.exercises.grading.tables import (
    PASTED_MIN_NODES,
    Flag,
    _reference,
    class_flags,
    pasted,
)

ROOT = Path(__file__).resolve().parents[1]
BLIND = ROOT / "benchmarks" / "blind_answers"


def _blind_answers() -> list[tuple[str, str]]:
    """Every blind answer as a learner's cell: (exercise id, source).

    Its function ``<name>__<slip>`` is renamed ``<name>``, the learner's
    function, and checked against the first exercise of that name (the
    editions share the references).
    """
    by_name: dict[str, str] = {}
    for exercise_id in exercise_ids():
        by_name.setdefault(get(exercise_id).function_name, exercise_id)
    found = []
    for path in sorted(BLIND.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if not isinstance(node, ast.FunctionDef) or "__" not in node.name:
                continue
            name = node.name.split("__", 1)[0]
            if name not in by_name:
                continue
            text = ast.get_source_segment(source, node) or ""
            found.append((by_name[name],
                          text.replace(f"def {node.name}(", f"def {name}(", 1)))
    return found


def _flagged(exercise_id: str, source: str) -> bool:
    name = get(exercise_id).function_name
    answer = answer_digests([source], {exercise_id: name})[exercise_id]
    return pasted(answer, _reference(exercise_id))


def test_fewer_than_one_honest_answer_in_twenty_is_flagged_pasted() -> None:
    answers = _blind_answers()
    assert len(answers) > 300  # the benchmark, not a handful
    flagged = [s.splitlines()[0] for i, s in answers if _flagged(i, s)]
    print(f"\n{len(flagged)} of {len(answers)} honest answers flagged pasted")
    assert len(flagged) < 0.05 * len(answers), flagged


# sample_betas: the reference is two lines that most learners write alike.
SAMPLE = "bayes.sample_betas"
HONEST_SAMPLE = """\
def sample_betas(key, beta_loc, beta_log_scale, num_samples):
    eps = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale) * eps
"""


def test_a_short_answer_is_not_flagged_for_its_code_alone() -> None:
    assert reference_size(get(SAMPLE).solution_source()) < PASTED_MIN_NODES
    code, _ = answer_marks(answer_digests([HONEST_SAMPLE], {SAMPLE: "sample_betas"})[
        SAMPLE])
    assert code == _reference(SAMPLE)[0]  # the very code of the solution
    assert not _flagged(SAMPLE, HONEST_SAMPLE)


def test_a_short_answer_with_the_solutions_docstring_is_flagged() -> None:
    assert _flagged(SAMPLE, get(SAMPLE).solution_source())


@pytest.mark.parametrize("exercise_id", ["bayes.elbo_value_and_grad",
                                         "transformer.count_params"])
def test_a_long_solution_is_flagged_without_its_comments(exercise_id: str) -> None:
    solution = get(exercise_id).solution_source()
    assert reference_size(solution) >= PASTED_MIN_NODES
    tree = ast.parse(textwrap.dedent(solution))
    function = tree.body[0]
    function.body = function.body[1:]  # the docstring gone; unparse drops comments
    bare = ast.unparse(tree)
    assert _flagged(exercise_id, bare)
    assert not answer_marks(answer_digests([bare], {
        exercise_id: get(exercise_id).function_name})[exercise_id])[1]


def test_the_class_flags_say_the_same() -> None:
    ids = {SAMPLE: "sample_betas"}
    rows = [SubmissionResult(name, {SAMPLE: 1.0}, "graded",
                             answers=answer_digests([source], ids))
            for name, source in [("honest_1", HONEST_SAMPLE),
                                 ("honest_2", HONEST_SAMPLE.replace("eps", "e")),
                                 ("pasted", get(SAMPLE).solution_source())]]
    # Neither the short honest answers (the solution's code, written alike)
    # nor their sameness is a flag; the pasted one, with its prose, is.
    assert class_flags(rows) == [Flag(SAMPLE, "pasted", "pasted")]
