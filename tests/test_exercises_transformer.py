"""The transformer chapter's exercises beyond the contract.

Every exercise's contract (the reference passes its check, the wrong answers
of ``tests/exercise_answers/transformer.py`` are named, the alternatives
accepted, the student notebook) is checked by
``tests/test_exercise_contract.py``. Here: each exercise is complete, every
named mistake is caught and named by its own message, each rule meets at
least 24 random calls whose answers vary, and the references agree with
:mod:`jaxcourse.transformer`, the library the chapter uses (the activations
with JAX's own list of saved residuals, measured by
:func:`jaxcourse.transformer.activation_bytes`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from exercise_answers import right, wrong

from jaxcourse import transformer
from jaxcourse.exercises.checking.observation import Choice, choice

NAMES = ("count_params", "bytes_per_param", "activation_bytes_per_token",
         "flops_per_token", "micro_batches", "tp_specs", "pipeline_micro_batches",
         "zero_bytes_per_device", "pick_mesh")
IDS = [f"transformer.{name}" for name in NAMES]


def _exercise(exercise_id: str):
    import solutions.transformer  # noqa: F401  registers the exercises
    from jaxcourse.exercises import get

    return get(exercise_id)


def test_every_exercise_is_complete() -> None:
    wrong_ones = Counter(r.exercise_id for r in wrong("transformer"))
    right_ones = Counter(r.exercise_id for r in right("transformer"))
    for exercise_id in IDS:
        exercise = _exercise(exercise_id)
        assert exercise.chapter == "07_transformer" and exercise.devices == 1
        assert len(exercise.mistakes) >= 4 and len(exercise.hints) == 3
        assert wrong_ones[exercise_id] >= 3 and right_ones[exercise_id] >= 2
        random = exercise.cases[-1]
        assert "random" in random.description or "all 27" in random.description
        # Hints lead; the Show-solution button gives the solution.
        source = exercise.solution_source()
        body = [line.strip() for line in source.splitlines()[1:] if line.strip()]
        for hint in exercise.hints:
            assert not any(len(line) > 30 and line in hint for line in body), hint


def _named(exercise, report: str) -> set[str]:
    """The known mistakes' messages that ``report`` says.

    Two ways of writing one slip (a loop and its closed form) share a message.
    Two slips made together are named by one message that holds both of
    theirs: the longest message said stands for the ones inside it.
    """
    said = {m.message for m in exercise.mistakes if m.message in report}
    return {m for m in said if not any(m != other and m in other for other in said)}


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_mistake_is_caught_and_named_alone(exercise_id: str) -> None:
    """Each slip hears its own name, and no other slip's (on any case)."""
    from jaxcourse.exercises import check

    exercise = _exercise(exercise_id)
    for mistake in exercise.mistakes:
        result = check(exercise_id, mistake.function)
        assert result.status == "failed", mistake.function.__name__
        assert _named(exercise, result.report()) == {mistake.message}, \
            (mistake.function.__name__, result.report())


@pytest.mark.parametrize("exercise_id", IDS)
def test_wrong_answers_hear_only_their_own_name(exercise_id: str) -> None:
    """A learner's wrong answer of the tables is named by its mistake alone.

    The contract test checks that the row's fragment is said; here, that no
    other known mistake is said beside it (a slip that gives the same number
    as another on a shown case must not be named as that other).
    """
    from exercise_answers import answer

    from jaxcourse.exercises import check

    exercise = _exercise(exercise_id)
    for row in wrong("transformer"):
        if row.exercise_id != exercise_id:
            continue
        report = check(exercise_id, answer(exercise_id, row.name)).report()
        # The messages that say every fragment of the row; of those, the
        # shortest (a slip alone is not named by the message of two slips).
        meant = {m.message for m in exercise.mistakes
                 if all(f in m.message for f in row.fragments)}
        meant = {m for m in meant if not any(o != m and o in m for o in meant)}
        assert _named(exercise, report) == meant, (row.name, report)


def _hashable(value):
    """A random call's extracted output, as a key: numbers, a choice or specs."""
    if isinstance(value, dict):  # a table of specs, by weight
        return tuple(sorted(value.items()))
    if isinstance(value, Choice):
        return value
    return tuple(np.ravel(np.asarray(value)))


def _random_outputs(exercise) -> list:
    """The reference's outputs on the random case, one per call."""
    case = exercise.cases[-1]
    out = case.runner(exercise.reference, *case.make_inputs())
    return [_hashable(v) for v in out.values()]


@pytest.mark.parametrize("exercise_id", IDS)
def test_rules_meet_many_random_cases(exercise_id: str) -> None:
    """Each exercise tries at least 24 random calls, and not one answer for all."""
    outputs = _random_outputs(_exercise(exercise_id))
    assert len(outputs) >= 24
    # Choices repeat (a spec table, a count of micro-batches), and so do the
    # 27 schemes' bytes (bfloat16 and float16 are both 2 bytes); numbers vary.
    least = {"micro_batches": 4, "tp_specs": 4, "bytes_per_param": 8, "pick_mesh": 8}
    assert len(set(outputs)) >= least.get(exercise_id.split(".")[1], 12), \
        Counter(outputs)


def test_micro_batches_meets_every_outcome() -> None:
    """Some random budgets fit at once, some need many micro-batches, some none."""
    outputs = _random_outputs(_exercise("transformer.micro_batches"))
    answers = [None if v == choice(None) else int(v[0]) for v in outputs]
    assert None in answers and 1 in answers and any(a and a > 1 for a in answers)


def test_counts_match_the_library_and_the_published_totals() -> None:
    from exercise_kit.transformer_checks import random_config
    from solutions.transformer import LLAMA32_1B, count_params, flops_per_token

    for cfg in (transformer.LLAMA3_8B, transformer.LLAMA3_70B):
        assert count_params(cfg) == transformer.PUBLISHED_PARAMS[cfg.name]
    assert count_params(LLAMA32_1B, tied=True) == 1_235_814_400  # by hand
    rng = np.random.default_rng(7)
    for _ in range(20):
        cfg = random_config(rng)
        assert count_params(cfg) == transformer.param_count(cfg)
        assert count_params(cfg, tied=True) == \
            transformer.param_count(cfg) - cfg.vocab * cfg.d_model
        seq = int(rng.integers(1, 9000))
        assert flops_per_token(cfg, seq) == pytest.approx(
            transformer.flops_per_token(cfg, seq)["total"], rel=1e-12)


def test_bytes_and_zero_match_the_library() -> None:
    from exercise_kit.transformer_checks import random_config
    from solutions.transformer import bytes_per_param, zero_bytes_per_device

    # Exercise 2 is ZeRO's accounting (gradients in the compute dtype); the
    # library's is the course's step (gradients of the stored weights).
    for name, scheme in transformer.PRECISIONS.items():
        step = transformer.bytes_per_param(name)
        compute = np.dtype(scheme.compute).itemsize
        assert bytes_per_param(scheme) == step | {
            "grads": compute, "total": step["total"] - step["grads"] + compute}
    rng = np.random.default_rng(8)
    for stage in (1, 2, 3):
        for name in transformer.PRECISIONS:
            cfg, devices = random_config(rng), int(rng.choice((2, 8, 64)))
            assert zero_bytes_per_device(cfg, stage, devices, name) == pytest.approx(
                transformer.zero_bytes(cfg, stage, devices, name)["total"], rel=1e-12)


def test_tp_specs_are_the_chapters_where_everything_splits() -> None:
    from exercise_kit.transformer_checks import WEIGHTS, spec_table
    from solutions.transformer import tp_specs

    chapter = transformer.param_specs("TP")
    for cfg, model in ((transformer.LLAMA3_8B, 8), (transformer.LLAMA3_70B, 8)):
        assert spec_table(tp_specs(cfg, model)) == \
            spec_table({n: chapter[n] for n in WEIGHTS})


def test_the_bubble_is_the_chapters_formula() -> None:
    from solutions.transformer import pipeline_micro_batches

    for stages in (2, 4, 8, 16):
        for percent in (1, 5, 10, 20, 25, 50, 75):
            m = pipeline_micro_batches(stages, percent)
            assert transformer.bubble_fraction(stages, m) <= percent / 100
            assert m == 1 or transformer.bubble_fraction(stages, m - 1) > percent / 100


def test_activations_match_jaxs_saved_residuals() -> None:
    """The formula equals what the library measures the blocks keep, per token.

    :func:`jaxcourse.transformer.activation_bytes` lists the residuals that
    grow with the tokens; those the blocks' ``scan`` keeps have the layers
    axis first. Three small random configs, one per policy, in both
    precisions in turn (each measurement traces the gradient twice).
    """
    from exercise_kit.transformer_checks import POLICIES, random_config
    from jaxcourse.scaling import residual_bytes
    from solutions.transformer import activation_bytes_per_token

    rng = np.random.default_rng(3)
    batch, seq = 5, 8  # twice the batch (10) is never a layer count (1 to 3)
    for k, remat in enumerate(POLICIES):
        cfg, precision = random_config(rng, small=True), ("mixed", "float32")[k % 2]
        measured = transformer.activation_bytes(cfg, remat, batch, seq, precision,
                                                measure_compiled=False)
        stacked = f"[{cfg.layers},{2 * batch},{seq},"
        blocks = [r for r in measured["names"] if stacked in r[0] and "scan" in r[1]]
        per_token = residual_bytes(blocks) / (2 * batch * seq)
        assert activation_bytes_per_token(cfg, remat, precision) == per_token, (
            cfg, remat, precision, blocks)


def test_every_mesh_case_is_a_real_batch() -> None:
    """Each random batch of pick_mesh is whole sequences, as many per data group."""
    from exercise_kit.transformer_checks import mesh_calls
    from solutions.transformer import pick_mesh

    for seed in range(3):
        (calls,) = mesh_calls()(np.random.default_rng(seed))
        for label, (cfg, hw, chips, tokens, seq) in calls:
            sequences = tokens / seq
            assert sequences == int(sequences) >= 1, label
            mesh = pick_mesh(cfg, hw, chips, tokens, seq)
            if mesh is not None:
                assert int(sequences) % mesh[0] == 0, (label, mesh)
