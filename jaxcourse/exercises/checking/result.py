"""The outcome of checking one answer: a :class:`Feedback` per test, a :class:`Result`.

:func:`jaxcourse.exercises.checking.judging.judge` returns a :class:`Result`; the
check panel (:mod:`jaxcourse.exercises.widgets.panel`), the nbgrader cells and the
classroom grader read it: its status and score, its summary line and its
report, one line per test, in the exercise's language.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...messages import message

__all__ = ["Feedback", "Result"]


@dataclass(frozen=True)
class Feedback:
    """The verdict on one case: what was tried, and what went wrong if anything.

    ``advice``: the case checks a technique the text only recommends
    (``Case.advice``); it is reported but not counted in the score.
    """

    test: str
    passed: bool
    message: str
    problem: str = ""
    advice: bool = False


@dataclass(frozen=True)
class Result:
    """The outcome of checking one answer to one exercise.

    ``passed`` is true when every test passed; ``score`` is the fraction of
    tests passed; ``feedback`` holds one :class:`Feedback` per test.
    ``status`` is "passed", "failed" or "not_attempted". ``note``: what
    :func:`~jaxcourse.exercises.checking.judging.check` says of the answer itself,
    whatever its verdict, such as "this is ``transformer.param_count``: write
    the reasoning yourself" (:mod:`jaxcourse.exercises.checking.library_answers`), or
    empty.
    """

    exercise_id: str
    status: str
    feedback: tuple[Feedback, ...]
    language: str = "en"
    note: str = ""

    @property
    def passed(self) -> bool:
        """Whether every test passed."""
        return self.status == "passed"

    @property
    def n_passed(self) -> int:
        """How many tests passed (advice not counted)."""
        return sum(f.passed for f in self.feedback if not f.advice)

    @property
    def n_tests(self) -> int:
        """How many tests there are (advice not counted)."""
        return sum(not f.advice for f in self.feedback)

    @property
    def score(self) -> float:
        """Tests passed over tests run, between 0 and 1."""
        return self.n_passed / self.n_tests if self.feedback else 0.0

    @property
    def messages(self) -> list[str]:
        """One feedback message per test."""
        return [f.message for f in self.feedback]

    def summary(self) -> str:
        """One deterministic line, e.g. ``"mlp.relu: 5/5 tests passed"``."""
        if self.status == "not_attempted":
            return message(
                "summary_not_attempted", self.language, id=self.exercise_id,
                total=self.n_tests,
            )
        return message(
            "summary", self.language, id=self.exercise_id, passed=self.n_passed,
            total=self.n_tests,
        )

    def report(self) -> str:
        """Return the summary, the note if any, then one line per test.

        The note stands where the check panel shows it, under the summary.
        """
        lines = [self.summary()]
        if self.note:
            lines.append(f"  ⚠ {self.note}")
        lines += [("  ✓ " if f.passed else "  ✗ ") + f.message for f in self.feedback]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    def to_dict(self) -> dict:
        """Return a JSON-compatible summary."""
        return {
            "exercise": self.exercise_id,
            "status": self.status,
            "score": self.score,
            "passed": self.passed,
            "feedback": [
                {"test": f.test, "passed": f.passed, "message": f.message}
                for f in self.feedback
            ],
        }
