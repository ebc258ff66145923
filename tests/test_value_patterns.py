"""What a wrong value has in common with the expected one, named (judging._pattern).

A Check that finds wrong values says how they relate to the expected ones
where they do: scaled by one factor (a sum for a mean, a factor of the device
count), negated, off by one constant or by the same values along an axis (a
bias or a location left out), or moved along an axis (a ring shifted the wrong
way). A random difference is not named, and a known mistake's message, which
says more, replaces the pattern.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxcourse.exercises import Case, Exercise, Mistake, register, unregister
from jaxcourse.exercises.checking import judging
from jaxcourse.exercises.checking.observe import Observation

CASE = Case("a case", lambda: ())
RNG = np.random.default_rng(0)
EXPECTED = RNG.normal(size=(8, 5)).astype(np.float32)


def pattern(got: np.ndarray, expected: np.ndarray = EXPECTED, language: str = "en"
            ) -> str:
    return judging._pattern(expected, np.asarray(got, expected.dtype), CASE, language)


@pytest.mark.parametrize(("factor", "words"), [
    (8, "8 times"), (0.125, "1/8 of"), (256, "256 times"), (1.5, "1.5 times"),
])
def test_a_constant_factor_is_named(factor: float, words: str) -> None:
    text = pattern(EXPECTED * factor)
    assert text.startswith(f"every value is {words} the expected one")


def test_the_wrong_sign_is_named() -> None:
    assert "wrong sign" in pattern(-EXPECTED)


def test_an_offset_is_named() -> None:
    assert "off by the same amount (0.5)" in pattern(EXPECTED + 0.5)
    # A location vector left out: every row (a slice along axis 0) is off by it.
    assert "every slice along axis 0" in pattern(EXPECTED - np.arange(5.0))


@pytest.mark.parametrize("shift", [1, 7])
def test_a_shift_round_the_ring_is_named(shift: int) -> None:
    text = pattern(np.roll(EXPECTED, shift, axis=0))
    assert f"moved by {shift} along axis 0 (or by {8 - shift} the other way)" in text


def test_random_and_right_values_are_not_named() -> None:
    assert pattern(RNG.normal(size=EXPECTED.shape)) == ""
    assert pattern(EXPECTED) == ""
    assert pattern(np.zeros_like(EXPECTED)) == ""
    # One number is a multiple of any other: only a whole factor is named.
    one = np.array(2.0, np.float32)
    assert pattern(np.array(2.7), one) == ""
    assert "8 times" in pattern(np.array(16.0), one)


def test_patterns_speak_each_language() -> None:
    hant, hans = (pattern(EXPECTED * 8, language=language)
                  for language in ("zh-Hant", "zh-Hans"))
    assert hant.startswith("每個值都是預期值的 8 倍")
    assert hans.startswith("每个值都是预期值的 8 倍")


def test_a_check_names_the_pattern_and_a_known_mistake_replaces_it() -> None:
    def mean(x):
        return x.mean(axis=0)

    exercise = Exercise(
        id="patterns_demo.mean", title="a mean", chapter="patterns", reference=mean,
        cases=[Case("8 rows", lambda rng: (rng.normal(size=(8, 3)),))],
        mistakes=[Mistake("summed instead of averaged: divide by the row count",
                          lambda x: x.sum(axis=0) / 2)],
    )
    register(exercise)
    try:
        expected = judging.reference_observations(exercise)
        summed = expected[0].value * 8
        (feedback,) = judging.judge(exercise, [Observation("value", summed)]).feedback
        assert "— every value is 8 times the expected one" in feedback.problem
        known = expected[0].value * 4  # what the known mistake returns
        (feedback,) = judging.judge(exercise, [Observation("value", known)]).feedback
        assert feedback.problem.endswith("— summed instead of averaged: divide by "
                                         "the row count")
        assert feedback.problem.count(" — ") == 1
    finally:
        unregister(exercise.id)


def test_a_missing_relu_and_a_lone_right_block_are_named() -> None:
    positive = np.abs(EXPECTED) * (RNG.random(EXPECTED.shape) > 0.5)
    assert "relu" in pattern(positive - (positive == 0) * 0.5, positive)
    # Only the first device's 2 rows (of 8) right: the others left at zero.
    first = np.concatenate([EXPECTED[:2], np.zeros_like(EXPECTED[2:])])
    assert "the first 2 of 8 entries along axis 0 are right" in pattern(first)
    # Right rows here and there are no block.
    scattered = EXPECTED.copy()
    scattered[[1, 4, 6]] += 1.0
    assert "first" not in pattern(scattered)


@pytest.mark.parametrize(("key", "expected", "got", "words"), [
    ("collectives", [0, 0, 0, 0, 0], [1, 2, 0, 0, 0],
     "the compiled program holds 1 all-reduce, 2 all-gather, where no collective "
     "would do"),
    ("bytes_sent", 7168.0, 229376.0,
     "each device sends 229,376 bytes, 32 times the 7,168 that suffice"),
    ("work_share", 0.125, 1.0, "one device does all of the work, where 1/8 is "
     "possible"),
])
def test_measurements_of_the_compiled_program_are_said_in_words(
        key: str, expected: list, got: list, words: str) -> None:
    exp, out = (np.asarray(v) for v in (expected, got))
    assert words in judging._measured(key, exp, out, "en")
    assert judging._measured(key, exp, out, "zh-Hant") != judging._measured(
        key, exp, out, "zh-Hans")


def _layout(pieces: tuple[int, int], devices: int = 8, size: int = 8) -> np.ndarray:
    """The (devices, 2, 2) layout of a size x size array cut into pieces."""
    rows, cols = pieces
    spans = []
    for d in range(devices):
        r, c = (d // cols) % rows, d % cols
        spans.append([[r * size // rows, (r + 1) * size // rows],
                      [c * size // cols, (c + 1) * size // cols]])
    return np.array(spans, np.int32)


def test_a_layout_is_said_in_pieces() -> None:
    said = judging._measured("layout", _layout((2, 4)), _layout((4, 2)), "en")
    assert said == ("the array is split into 4 pieces along dimension 0, 2 pieces "
                    "along dimension 1, where 2 pieces along dimension 0, 4 pieces "
                    "along dimension 1 was expected")
    whole = judging._measured("layout", _layout((2, 4)), _layout((1, 1)), "en")
    assert "one piece (every device holds all of it)" in whole
    # The same pieces on other devices: the device order differs.
    reordered = _layout((2, 4))[::-1].copy()
    assert "on other devices" in judging._measured(
        "layout", _layout((2, 4)), reordered, "en")


def test_a_number_expected_gets_a_hint_for_an_array_or_a_bool() -> None:
    case = Case("a count", lambda: (), dtype="exact")
    one = np.array(3.0, np.float32)
    assert "a sum, a mean or .item() left out" in judging.compare(
        one, np.ones(3, np.float32), case)
    assert "a comparison instead of a count" in judging.compare(
        one, np.array(True), case)


def test_an_input_returned_or_reduced_along_the_other_axis_is_named() -> None:
    def column_sums(x):
        return x.sum(axis=0)

    exercise = Exercise(
        id="patterns_demo.sums", title="column sums", chapter="patterns",
        reference=column_sums,
        cases=[Case("a (6, 4) array", lambda rng: (rng.normal(size=(6, 4)),))])
    register(exercise)
    try:
        from jaxcourse.exercises import check

        echoed = check("patterns_demo.sums", lambda x: x)
        assert "it returns its argument 1 unchanged" in echoed.feedback[0].problem
        rows = check("patterns_demo.sums", lambda x: x.sum(axis=1))
        assert ("reduced along axis 1, where axis 0 was expected"
                in rows.feedback[0].problem)
    finally:
        unregister(exercise.id)


def test_a_block_that_misses_the_global_shape_gets_advice() -> None:
    from jaxcourse.exercises.checking.observe import observe

    def misfit():
        raise ValueError("When calling `make_array_from_process_local_data` on a "
                         "single process, global_shape should be None or equal to "
                         "local_data.shape.Got global_shape=(4, 10)")

    got = observe(misfit, Case("a block", lambda rng: ()), None)
    assert got.category == "global_shape"
    exercise = Exercise(id="patterns_demo.block", title="a block", chapter="patterns",
                        reference=lambda: np.zeros(2),
                        cases=[Case("a block", lambda rng: ())])
    (feedback,) = judging.judge(exercise, [got], [Observation("value", np.zeros(2))]
                                ).feedback
    assert "which axis did you pad" in feedback.problem
