"""Answers compared in their own domain, and generic hints only where they hold.

A categorical answer (a policy, an ending, a fix, None) is a
:class:`~jaxcourse.exercises.checking.observation.Choice`, compared by its name; a
``PartitionSpec`` is a :class:`~jaxcourse.exercises.checking.observation.Spec`,
compared dimension by dimension by its axes' names. No feedback shows an
internal code, and no pattern of numbers (a factor, an offset) is read into
them. The patterns of numbers keep to their premise: a device's block only
where the exercise has devices; a sum for a mean only for many values; a
single number's factor names a cause only where it has a plain one (bits for
bytes, a percent).
"""

from __future__ import annotations

import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from jaxcourse.exercises import Case, check
from jaxcourse.exercises.checking import judging
from jaxcourse.exercises.checking.comparison import compare
from jaxcourse.exercises.checking.observation import (
    Choice,
    Node,
    Observation,
    choice,
    spec,
)

CASE = Case("a case", lambda: ())


def test_a_choice_is_compared_by_its_name() -> None:
    said = compare(choice("no remat"), choice("full remat"), CASE)
    assert said == "expected 'no remat', got 'full remat'"
    assert compare(choice(None), choice("no remat"), CASE) == \
        "expected None, got 'no remat'"
    assert compare(choice("no remat"), choice("no remat"), CASE) == ""
    # NumPy's numbers read as Python's; a list as the tuple it stands for.
    assert choice(("FSDP", (np.int32(8), 1))) == choice(["FSDP", [8, 1]])
    assert compare(choice(("FSDP", (8, 1))), choice(None), CASE) == \
        "expected ('FSDP', (8, 1)), got None"


def test_none_beside_a_number_reads_as_none() -> None:
    assert compare(choice(None), np.array(1), CASE) == "expected None, got 1"
    assert compare(np.array(4), choice(None), CASE) == "expected 4, got None"
    inside = Node("dict", (np.array(3), choice(None)), ("a", "b"))
    got = Node("dict", (np.array(3), np.array(-1)), ("a", "b"))
    assert compare(inside, got, CASE) == "the returned entry 'b': expected None, got -1"


def test_no_pattern_of_numbers_is_read_into_choices() -> None:
    said = compare(Node("dict", (choice("heartbeat timeout"), choice("fix")),
                        ("ending", "fix")),
                   Node("dict", (choice("shutdown barrier"), choice("fix")),
                        ("ending", "fix")), CASE)
    assert said == ("the returned entry 'ending': expected 'heartbeat timeout', got "
                    "'shutdown barrier'")
    assert "times" not in said and "index" not in said


@pytest.mark.parametrize(("got", "words"), [
    (P(None, "tp"), "dimension 1 is sharded over 'tp', expected 'model'"),
    (P("model"), "dimension 0 is sharded over 'model', expected None (kept whole); "
     "dimension 1 is whole (None), expected 'model' — the mesh axes are on each "
     "other's dimensions: P('model', None) for P(None, 'model')"),
    (P(None, ("model",)), ""),  # one axis in a tuple is that axis
])
def test_a_spec_is_compared_dimension_by_dimension(got: P, words: str) -> None:
    said = compare(spec(P(None, "model"), 2), spec(got, 2), CASE)
    assert said == words.replace("; ", ", ")


def test_choices_and_specs_travel_as_json() -> None:
    value = Node("tuple", (choice("no remat"), spec(P("data", None)), np.arange(3)))
    back = Observation.from_json(Observation("value", value).to_json()).value
    assert back.items[0] == Choice("'no remat'") and back.items[1] == value.items[1]
    np.testing.assert_array_equal(back.items[2], np.arange(3))


def test_a_device_block_is_said_only_where_there_are_devices() -> None:
    expected = np.arange(1.0, 17.0).reshape(8, 2)
    first = np.concatenate([expected[:2], np.zeros_like(expected[2:])])
    assert "device" in judging._pattern(expected, first, CASE, "en", 8)
    assert judging._pattern(expected, first, CASE, "en", 1) == ""
    doubled = judging._pattern(expected, 2 * expected, CASE, "en", 1)
    assert doubled.startswith("every value is 2 times") and "device" not in doubled


@pytest.mark.parametrize(("factor", "cause"), [
    (8, "bits where bytes"), (0.125, "bits where bytes"),
    (100, "a percent where a fraction"), (0.01, "a percent where a fraction"),
    (3, ""), (2, ""),
])
def test_one_number_names_a_cause_only_where_it_has_one(factor: float,
                                                       cause: str) -> None:
    one = np.array(1234.0)
    said = judging._pattern(one, one * factor, CASE, "en", 1)
    assert said.startswith("the value is ")
    assert "a mean" not in said and "device" not in said
    assert (cause in said) if cause else (":" not in said)
    for language in ("zh-Hant", "zh-Hans"):
        assert judging._pattern(one, one * factor, CASE, language, 1)


def test_remat_policy_and_job_ending_speak_names_not_codes() -> None:
    import solutions.multiprocess
    import solutions.scaling  # registers the exercises

    always_full = check("scaling.remat_policy", lambda size, batch, budget:
                        "full remat").report()
    assert "expected 'no remat', got 'full remat'" in always_full
    assert "index" not in always_full and "None as 3" not in always_full
    reference = solutions.multiprocess.job_ending
    swapped = check("multiprocess.job_ending",
                    lambda log, sacct: reference(log, sacct)[::-1]).report()
    assert "entry 'ending'" in swapped and "', got '" in swapped
    assert "difference" not in swapped and "times the expected" not in swapped


def test_a_name_outside_the_answers_is_said_to_be() -> None:
    got = choice("crash", ("heartbeat timeout", "shutdown barrier"), "ENDINGS")
    said = compare(choice("heartbeat timeout"), got, CASE)
    assert said == ("expected 'heartbeat timeout', got 'crash' — 'crash' is not one "
                    "of ENDINGS")
    assert choice("shutdown barrier", ("shutdown barrier",), "ENDINGS").outside == ""
    back = Observation.from_json(Observation("value", got).to_json()).value
    assert back == got
