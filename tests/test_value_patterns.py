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

from jaxcourse.exercises import Case, Exercise, Mistake, judging, register, unregister
from jaxcourse.exercises.observe import Observation

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
