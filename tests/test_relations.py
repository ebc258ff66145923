"""A wrong number named by its relation to the right one, not by a list of answers.

Issue #65's seven mistakes that no named-mistake table foresaw, each written
here as a learner would and checked as a learner's answer is: the check
names the slip from the reference's own computation
(:mod:`jaxcourse.exercises.checking.relations`). None of these answers is in
an exercise's table of known mistakes, and the names say the kind of slip,
not the answer. Then what must not happen: a relation said by coincidence
on one test, a variant that never ends holding the check up, a reference
with no readable source.
"""

from __future__ import annotations

import time

import pytest

# The exercises here are formulas: they need no device, and this process
# keeps JAX's default (a test that set devices here would leave XLA_FLAGS
# set for every process the other tests of its worker start).
from jaxcourse.exercises import check, get
from jaxcourse.exercises.checking import relations
from jaxcourse.exercises.checking.judging import reference_observations
from jaxcourse.exercises.checking.observe import observe_all


def _right(stages, percent):
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m


def _stages_for_stages_minus_one(stages, percent):
    """Counts p idle ticks a stage where it idles p - 1."""
    m = 1
    while 100 * stages > percent * (m + stages - 1):
        m += 1
    return m


def _strict_at_most(stages, percent):
    """Reads "at most" as "less than": stops only below the target."""
    m = 1
    while 100 * (stages - 1) >= percent * (m + stages - 1):
        m += 1
    return m


def _ticks(stages, percent):
    """Returns the pipeline's ticks, m + p - 1, for its micro-batches m."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m + stages - 1


def _round_for_ceil(stages, percent):
    """Solves m >= 100 (p - 1) / percent - (p - 1) and rounds to the nearest."""
    return max(1, round(100 * (stages - 1) / percent - (stages - 1)))


def _layout_bytes(share, scatter_times: int = 1, combine=lambda a, b: a + b):
    """A learner's layout_bytes, priced with ``share(bytes, n)`` for one ring."""
    def layout_bytes(size, layout, batch, data, model, regather=False):
        def ring(kind, nbytes, n):
            piece = share(nbytes, n)
            return 2 * piece if kind == "all-reduce" else piece
        weight = size.width * size.hidden * 4
        weights = 2 * size.layers
        sent = ring("all-reduce", 4, data)
        if layout == "data parallel":
            sent += weights * ring("all-reduce", weight, data)
        fsdp = tp = 0.0
        if layout in ("FSDP", "FSDP + TP"):
            piece = weight / (model if layout == "FSDP + TP" else 1)
            gathers = 2 if regather else 1
            fsdp = weights * (gathers * ring("all-gather", piece, data)
                              + scatter_times * ring("reduce-scatter", piece, data))
        if layout in ("tensor parallel", "FSDP + TP"):
            activation = batch / data * size.width * 4
            tp = (2 * size.layers - 1) * ring("all-reduce", activation, model)
            if layout == "tensor parallel":
                tp += weights * ring("all-reduce", weight / model, data)
        return sent + combine(fsdp, tp)
    return layout_bytes


def _ring(nbytes, n):
    return nbytes * (n - 1) / n


# (issue #65's words, exercise, answer, what the check must say)
SEVEN = [
    ("the ring's (n - 1)/n dropped", "scaling.layout_bytes",
     _layout_bytes(lambda nbytes, n: nbytes), "the ring's share is left out"),
    ('"<=" read as "<"', "transformer.pipeline_micro_batches", _strict_at_most,
     "a boundary read the other way: >= where > is meant"),
    ("round where ceil is meant", "transformer.pipeline_micro_batches",
     _round_for_ceil, "it is one less than the expected value"),
    ("p stages where p - 1 was meant", "transformer.pipeline_micro_batches",
     _stages_for_stages_minus_one,
     "it is off by one: stages where stages - 1 is meant"),
    ("the ticks returned instead of the micro-batches",
     "transformer.pipeline_micro_batches", _ticks,
     "it is the expected value plus stages - 1"),
    ("FSDP's gradients all-reduced (2x) instead of reduce-scattered",
     "scaling.layout_bytes", _layout_bytes(_ring, scatter_times=2),
     "one part of the sum is counted twice"),
    ("the two axes' bytes overlapped (max) instead of added", "scaling.layout_bytes",
     _layout_bytes(_ring, combine=max),
     "it is the value of the larger of two where their sum is meant"),
]


@pytest.mark.parametrize("mistake, exercise_id, answer, said", SEVEN,
                         ids=[row[0] for row in SEVEN])
def test_each_of_the_seven_mistakes_is_named_by_its_relation(
        mistake, exercise_id, answer, said):
    result = check(exercise_id, answer)
    assert not result.passed
    failed = [f.problem for f in result.feedback if not f.passed]
    named = [problem for problem in failed if said in problem]
    assert named, (mistake, failed)
    # Not a known mistake of the exercise's table: the relation said it.
    known = [m.message for m in get(exercise_id).mistakes if m.message]
    assert not any(k in problem for k in known for problem in named), mistake


def test_the_variants_are_the_references_one_slip_each():
    reference = get("transformer.pipeline_micro_batches").reference
    found = relations.variants(reference)
    keys = [v.key for v in found]
    # `stages - 1` twice, `> ` once, and the sums of the bound.
    assert keys.count("off_by_one_named") == 1 and "boundary" in keys
    assert {v.fields.get("got") for v in found if v.key == "off_by_one_named"} == \
        {"stages"}
    # Tried most common slip first, the ones that may never end last.
    order = [relations._ORDER.index(k) for k in keys]
    assert order == sorted(order)
    # The variant runs as the reference does, with that one change: a stage
    # idle for p ticks of 4 needs 37 micro-batches at 10 %, not 27.
    [numerator] = [v for v in found if v.key == "off_by_one_named"]
    assert reference(4, 10) == 27 and numerator.function(4, 10) == 37


def test_a_relation_through_an_input_must_hold_on_every_wrong_test():
    # 4 stages at 10 %: 37 is 27 + 10, and 10 is the percent given: on that
    # test alone "plus percent" fits. On the others it does not, so the
    # check does not say it.
    exercise = get("transformer.pipeline_micro_batches")

    def plus_ten(stages, percent):
        return _right(stages, percent) + 10

    observed = observe_all(exercise, plus_ten, None)
    expected = reference_observations(exercise)
    said = relations.relate(exercise, 0, expected, observed)
    assert "percent" not in said


def test_a_random_wrong_value_is_related_to_nothing():
    exercise = get("scaling.layout_bytes")

    def noise(size, layout, batch, data, model, regather=False):
        return 12345.678 * (1 + data) + model

    observed = observe_all(exercise, noise, None)
    expected = reference_observations(exercise)
    assert all(relations.relate(exercise, i, expected, observed) == ""
               for i in range(len(exercise.cases)))


def test_variants_that_never_end_do_not_hold_the_check_up():
    # Several of pipeline_micro_batches' variants loop forever (a bound
    # summed away); the relation is given up within its budget.
    exercise = get("transformer.pipeline_micro_batches")

    def nowhere(stages, percent):
        return 3 * stages + 7 * percent

    observed = observe_all(exercise, nowhere, None)
    expected = reference_observations(exercise)
    started = time.perf_counter()
    relations.relate(exercise, 0, expected, observed)
    assert time.perf_counter() - started < relations.BUDGET + 2.0


def test_a_reference_without_source_has_no_variants():
    assert relations.variants(len) == []          # a builtin: no source to read
