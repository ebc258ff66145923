"""Chapter 10's exercises beyond the contract.

Every exercise's contract (the reference passes its check, the wrong answers
of ``tests/exercise_answers/fast_step.py`` are named, the alternatives
accepted, the student notebook) is checked by
``tests/test_exercise_contract.py``. Here: each exercise is complete, every
named mistake is caught and named by its own message, no constant passes,
each rule meets 24 random calls that cover its every boundary and keep away
from near-ties, and the references agree with :mod:`jaxcourse.fast_step`,
the library the chapter uses (MaxText's MFU).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from exercise_answers import answer, constant_verdicts, right, wrong

from jaxcourse import fast_step
from jaxcourse.exercises import check, get
from jaxcourse.exercises.checking.observation import Choice
from jaxcourse.fast_step import Recipe
from jaxcourse.scaling import HARDWARE
from jaxcourse.step_profile import PARTS

#: The chapter's exercises, in its order (``get`` imports their module, by
#: the manifest, on first use).
IDS = ["fast_step.bottleneck", "fast_step.mfu", "fast_step.roofline_saving"]


def _said(exercise_id: str, function) -> tuple[str, set[str], str]:
    """Check ``function``: its status, the known mistakes it names, its report."""
    result = check(exercise_id, function)
    report = result.report()
    return result.status, {m.message for m in get(exercise_id).mistakes
                           if m.message in report}, report


def test_the_chapter_has_its_three_exercises_and_their_answers() -> None:
    from jaxcourse.exercises import by_chapter

    assert by_chapter()["10_fast_step"] == IDS
    rows = Counter((r.exercise_id, kind) for kind, table in (("wrong", wrong),
                                                            ("right", right))
                   for r in table("fast_step"))
    for exercise_id in IDS:
        exercise = get(exercise_id)
        assert exercise.devices == 1 and exercise.language == "en"
        assert len(exercise.hints) == 3 and len(exercise.mistakes) >= 5
        assert rows[exercise_id, "wrong"] >= 4 and rows[exercise_id, "right"] >= 2
        assert exercise.cases[-1].description.startswith("24 random")


def test_every_mistake_is_written_from_the_inputs() -> None:
    """A named mistake computes its answer from its arguments: no table of answers.

    Each is called on random calls it was never shown (another seed) and
    must still give an answer of the exercise's kind there, differing from
    the reference's on some of them.
    """
    for exercise_id in IDS:
        exercise = get(exercise_id)
        (calls,) = exercise.cases[-1].inputs(np.random.default_rng(99))
        reference = [exercise.reference(*args) for _, args in calls]
        for mistake in exercise.mistakes:
            outputs = [mistake.function(*args) for _, args in calls]
            assert outputs != reference, mistake.function.__name__


# Each known slip, and each wrong answer of the tables with the messages that
# hold all its fragments: checked, it fails and hears those messages alone.
# Two ways of writing one slip (the bytes saved at the bandwidth, and a
# roofline that adds the two times) share a message.
SLIPS = [pytest.param(e, m.function, {m.message}, (m.message,),
                      id=m.function.__name__)
         for e in IDS for m in get(e).mistakes]
ROWS = [pytest.param(r.exercise_id, answer(r.exercise_id, r.name),
                     {m.message for m in get(r.exercise_id).mistakes
                      if all(f in m.message for f in r.fragments)}, r.fragments,
                     id=r.name)
        for r in wrong("fast_step")]


@pytest.mark.parametrize(("exercise_id", "function", "messages", "fragments"),
                         SLIPS + ROWS)
def test_a_wrong_answer_fails_and_hears_only_its_own_name(
        exercise_id, function, messages, fragments) -> None:
    status, said, report = _said(exercise_id, function)
    assert status == "failed" and said == messages, (function.__name__, report)
    assert all(fragment in report for fragment in fragments), report


@pytest.mark.parametrize(("exercise_id", "function"), [
    pytest.param(e, get(e).reference, id=e) for e in IDS] + [
    pytest.param(r.exercise_id, answer(r.exercise_id, r.name), id=r.name)
    for r in right("fast_step")])
def test_references_and_alternatives_pass(exercise_id: str, function) -> None:
    status, said, report = _said(exercise_id, function)
    assert status == "passed" and not said, report


def test_no_constant_passes() -> None:
    """A function that returns the first case's answer, whatever it is given, fails."""
    verdicts = constant_verdicts(IDS)
    for exercise_id, verdict in verdicts.items():
        assert verdict["distinct"], exercise_id
        assert verdict["constants"] and all(verdict["constants"]), \
            (exercise_id, verdict)


def _random_calls(exercise_id: str, seed: int = 0) -> list[tuple]:
    exercise = get(exercise_id)
    (calls,) = exercise.cases[-1].inputs(np.random.default_rng(seed))
    return [args for _, args in calls]


def _key(value) -> object:
    return value.name if isinstance(value, Choice) else round(float(value), 15)


@pytest.mark.parametrize("exercise_id", IDS)
def test_rules_meet_many_random_cases(exercise_id: str) -> None:
    """Each exercise tries 24 random calls, and not one answer for all."""
    exercise = get(exercise_id)
    case = exercise.cases[-1]
    outputs = [_key(v) for v in case.runner(exercise.reference,
                                            *case.make_inputs()).values()]
    assert len(outputs) >= 24
    # A part is one of six; MFUs and savings vary (every saving of an
    # operation compute-bound throughout is 0).
    least = {"bottleneck": 5, "mfu": 24, "roofline_saving": 16}
    assert len(set(outputs)) >= least[exercise_id.split(".")[1]], Counter(outputs)


def _readings(parts, flops, moved, peak, bandwidth) -> dict[str, dict]:
    compute = {p: flops[p] / peak for p in parts}
    memory = {p: moved[p] / bandwidth for p in parts}
    return {"right": {p: parts[p] - max(compute[p], memory[p]) for p in parts},
            "longest": dict(parts),
            "compute only": {p: parts[p] - compute[p] for p in parts},
            "bandwidth only": {p: parts[p] - memory[p] for p in parts},
            "highest roofline": {p: max(compute[p], memory[p]) for p in parts}}


def _lead(values: dict[str, float]) -> float:
    first, second = sorted(values.values(), reverse=True)[:2]
    return first - second


@pytest.mark.parametrize("seed", range(4))
def test_random_profiles_meet_every_boundary_without_near_ties(seed: int) -> None:
    """Every slip is caught on some call, on any seed; no answer is a near-tie.

    Some part is compute-bound and some memory-bound; some profile has a part
    measured under its roofline, and copies without FLOPs; and each way of
    misreading the profile names another part than the right one somewhere.
    """
    from exercise_kit import fast_step_mistakes as slips
    from solutions.fast_step import bottleneck

    calls = _random_calls("fast_step.bottleneck", seed)
    bound = set()
    for parts, flops, moved, peak, bandwidth in calls:
        assert list(parts) == list(flops) == list(moved) == list(PARTS)
        right = _readings(parts, flops, moved, peak, bandwidth)["right"]
        assert _lead(right) >= sum(parts.values()) / 20, parts
        bound |= {"memory" if moved[p] / bandwidth > flops[p] / peak else "compute"
                  for p in parts}
    assert bound == {"memory", "compute"}
    assert any(min(_readings(*c)["right"].values()) < 0 for c in calls)
    assert any(c[1]["copies"] == 0 for c in calls)
    for name in ("bottleneck_longest", "bottleneck_most_flops",
                 "bottleneck_compute_only", "bottleneck_bandwidth_only",
                 "bottleneck_shortest", "bottleneck_sum_roofline",
                 "bottleneck_largest_floor", "bottleneck_nearest_floor"):
        slip = getattr(slips, name)
        assert sum(slip(*c) != bottleneck(*c) for c in calls) >= 2, name


def test_bottleneck_ties_go_to_the_part_listed_first() -> None:
    from solutions.fast_step import bottleneck

    parts = dict.fromkeys(PARTS, 1.0)
    zero = dict.fromkeys(PARTS, 0.0)
    assert bottleneck(parts, zero, zero, 1e12, 1e9) == PARTS[0]
    reordered = {p: parts[p] for p in reversed(PARTS)}
    assert bottleneck(reordered, zero, zero, 1e12, 1e9) == PARTS[-1]


def test_the_shown_profiles_are_the_stored_ladders() -> None:
    """The shown cases read the stored runs; part_costs adds up to MaxText's FLOPs."""
    from exercise_kit.fast_step_checks import V5E, measured_profile, part_costs
    from solutions.fast_step import bottleneck

    runs = fast_step.load_ladder()["runs"]
    for key in ("today", "wide-full"):
        parts, flops, moved, peak, bandwidth = measured_profile(key)
        assert parts == runs[key]["parts"] and (peak, bandwidth) == (
            V5E.flops, V5E.hbm_bandwidth)
        recipe = Recipe.from_dict(runs[key]["recipe"])
        assert sum(flops.values()) == pytest.approx(
            fast_step.model_flops(recipe)["total"], rel=1e-12)
    # The chapter's reading: chapter 7's step loses most in attention; at the
    # wide size with full remat, the MLP is the longest part, yet the
    # vocabulary has more to save.
    assert bottleneck(*measured_profile("today")) == "attention"
    wide = measured_profile("wide-full")
    assert max(wide[0], key=wide[0].get) == "mlp"
    assert bottleneck(*wide) == "vocab"
    # Smaller dtypes move fewer bytes, never more FLOPs.
    slow, fast = part_costs(fast_step.TODAY), part_costs(
        replace(fast_step.TODAY, logits="bfloat16", grads="bfloat16",
                moments="bfloat16"))
    assert slow[0] == fast[0]
    assert all(fast[1][p] <= slow[1][p] for p in PARTS)
    assert fast[1]["vocab"] < slow[1]["vocab"] and \
        fast[1]["optimizer"] < slow[1]["optimizer"]


def _random_recipe(rng: np.random.Generator) -> Recipe:
    heads = int(rng.choice((4, 8, 16, 32)))
    kv_heads = int(rng.choice([n for n in (1, 2, 4, 8) if heads % n == 0]))
    d_model = heads * int(rng.choice((32, 64, 128)))
    return Recipe(d_model=d_model, layers=int(rng.integers(1, 49)), heads=heads,
                  kv_heads=kv_heads, hidden=int(rng.integers(2, 9)) * d_model // 2,
                  vocab=int(rng.integers(1_000, 200_000)),
                  batch=int(rng.integers(1, 17)), seq=int(2 ** rng.integers(7, 15)))


def test_mfu_is_the_librarys_maxtext_mfu_on_random_recipes() -> None:
    from solutions.fast_step import mfu

    rng = np.random.default_rng(10)
    for _ in range(50):
        recipe = _random_recipe(rng)
        seconds = float(rng.uniform(0.01, 5.0))
        peak = HARDWARE[str(rng.choice(list(HARDWARE)))].flops
        ours = mfu(recipe.d_model, recipe.layers, recipe.heads, recipe.kv_heads,
                   recipe.config().head_dim, recipe.hidden, recipe.vocab, recipe.seq,
                   recipe.tokens, seconds, peak)
        assert ours == pytest.approx(fast_step.mfu(recipe, seconds, peak), rel=1e-12)
        assert ours == pytest.approx(
            fast_step.model_flops(recipe)["total"] / seconds / peak, rel=1e-12)


def test_mfu_of_the_stored_ladder_is_the_chapters() -> None:
    from exercise_kit.fast_step_checks import measured_mfu
    from solutions.fast_step import mfu

    runs = fast_step.load_ladder()["runs"]
    for key in ("today", "wide"):
        recipe = Recipe.from_dict(runs[key]["recipe"])
        assert mfu(*measured_mfu(key)) == pytest.approx(fast_step.mfu(
            recipe, runs[key]["step_seconds"], HARDWARE["TPU v5e"].flops), rel=1e-12)
    assert mfu(*measured_mfu("today")) < 0.25 <= 0.5 <= mfu(*measured_mfu("wide"))


def _regime(flops, before, after, peak, bandwidth) -> str:
    def bound(moved: float) -> str:
        return "memory" if moved / bandwidth > flops / peak else "compute"

    return f"{bound(before)} then {bound(after)}"


@pytest.mark.parametrize("seed", range(4))
def test_random_operations_meet_every_regime(seed: int) -> None:
    """Memory-bound throughout, memory then compute, compute throughout: each
    a tenth away from the boundary, and the saving 0 exactly where it must be."""
    from solutions.fast_step import roofline_saving

    calls = _random_calls("fast_step.roofline_saving", seed)
    regimes = Counter(_regime(*c) for c in calls)
    assert set(regimes) == {"memory then memory", "memory then compute",
                            "compute then compute"}, regimes
    assert min(regimes.values()) >= 6
    for flops, before, after, peak, bandwidth in calls:
        floor = flops / peak
        assert after < before
        for moved in (before, after):
            assert abs(moved / bandwidth - floor) > 0.05 * floor
        saving = roofline_saving(flops, before, after, peak, bandwidth)
        assert (saving == 0) == (before / bandwidth < floor)


def test_the_shown_savings_are_one_of_each_regime() -> None:
    from exercise_kit.fast_step_checks import SAVINGS
    from solutions.fast_step import roofline_saving

    regimes = [_regime(*args) for _, args in SAVINGS]
    assert regimes == ["memory then memory", "compute then compute",
                       "memory then compute"]
    softmax = SAVINGS[0][1]
    # Half the bytes of a memory-bound operation: half its time.
    assert roofline_saving(*softmax) == pytest.approx(
        softmax[1] / 2 / softmax[4], rel=1e-12)
