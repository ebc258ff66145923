"""Chapter 6's memory exercises and chapter 8's cluster exercises name each slip.

For ``scaling.state_bytes_per_device``, ``scaling.step_memory`` and
``scaling.remat_policy`` (chapter 6, memory) and ``multiprocess.epoch_records``,
``multiprocess.seconds_to_end`` and ``multiprocess.job_ending`` (chapter 8, a
real cluster): every known mistake, checked as an answer, fails with its own
message and with no other mistake's, so a learner is told one cause, the
right one. The learners' own wrong answers (``tests/exercise_answers``) are
checked by the contract; here, the tables themselves.
"""

from __future__ import annotations

import pytest

IDS = ("scaling.state_bytes_per_device", "scaling.step_memory",
       "scaling.remat_policy", "multiprocess.epoch_records",
       "multiprocess.seconds_to_end", "multiprocess.job_ending")


def _exercise(exercise_id: str):
    import solutions.multiprocess
    import solutions.scaling  # noqa: F401  both register their exercises
    from jaxcourse.exercises import get

    return get(exercise_id)


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_mistake_gets_its_name_and_only_its_name(exercise_id: str) -> None:
    from jaxcourse.exercises import check

    exercise = _exercise(exercise_id)
    assert len(exercise.mistakes) >= 7
    for mistake in exercise.mistakes:
        report = check(exercise_id, mistake.function).report()
        name = mistake.function.__name__
        # A mistake of technique (running the donating step) fails advice only.
        assert "  ✗ " in report or "(advice)" in report, (name, report)
        assert mistake.message in report, (name, report)
        others = {m.message for m in exercise.mistakes} - {mistake.message}
        said = [m for m in others if m in report]
        assert not said, (name, said)


@pytest.mark.parametrize("exercise_id", IDS)
def test_wrong_answers_hear_only_their_own_name(exercise_id: str) -> None:
    """A learner's wrong answer of the tables is named by its mistake alone.

    The contract test checks that the row's fragment is said; here, that no
    other known mistake is said beside it. Two ways of writing one slip may
    share a message (``CANCELLED AT`` read with or without the preemption).
    """
    from exercise_answers import answer, wrong

    from jaxcourse.exercises import check

    exercise = _exercise(exercise_id)
    rows = [r for r in wrong(exercise_id.partition(".")[0])
            if r.exercise_id == exercise_id]
    assert rows
    for row in rows:
        report = check(exercise_id, answer(exercise_id, row.name)).report()
        said = {m.message for m in exercise.mistakes if m.message in report}
        meant = {m.message for m in exercise.mistakes
                 if any(f in m.message for f in row.fragments)}
        # One name, and the row's (a fragment may be a piece of two messages,
        # or name a case, not a message: then any one name).
        assert len(said) <= 1 and said <= (meant or said), (row.name, report)
        assert said or not meant, (row.name, report)
