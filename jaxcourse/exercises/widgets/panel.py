"""The check panel: Check, Hint and Show-solution buttons over :func:`check`.

The panel is a :class:`~jaxcourse.exercises.widgets.explorer_base.Display`, like
every explorer: grading-mode deferral, the button wiring, the text form and
the kernel-gone notice live there. It only wires buttons to plain functions
(:func:`result_html`, :func:`hints_html`, :func:`solution_html` and the
panel's ``run_check``, ``show_next_hint`` and ``toggle_solution`` methods),
which the tests call directly or through ``button.click()`` with no browser.

In a notebook's stored outputs the panel's ``text/plain`` form is its summary
line (e.g. ``mlp.relu: 5/5 tests passed``): deterministic, so nbval can
compare it, while the widget itself renders live in Jupyter and in the book.
"""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from ...messages import message
from ..checking.class_release import (
    published_solution,
    release_settings,
    solution_state,
)
from ..checking.judging import check
from ..checking.library_answers import function_library_answer, shown_name
from ..checking.registry import get
from ..checking.result import Feedback, Result
from ..checking.spec import Exercise
from ..checking.warming import warm_up
from .explorer_base import Display

__all__ = ["CheckPanel", "check_panel", "checking_html", "hints_html",
           "library_note_html", "result_html", "solution_html"]

_PASS, _FAIL, _IDLE = "#1a7f37", "#cf222e", "#57606a"
# Show solution's code, highlighted with inline styles: a widget's HTML has no
# stylesheet of its own, in JupyterLab, Colab or the book.
_CODE = HtmlFormatter(noclasses=True, nobackground=True, style="default",
                      cssstyles="background:#f6f8fa;padding:0.5em",
                      prestyles="margin:0")


def _marked(text: str) -> str:
    """Escape ``text`` for HTML, and show its `code` spans as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _feedback_line(feedback: Feedback, language: str) -> str:
    """One test's line; advice is marked apart, since the count leaves it out."""
    if feedback.advice:
        return (f"<li style='color:{_IDLE}'>ⓘ {_marked(feedback.message)} "
                f"<i>({html.escape(message('advice_not_counted', language))})</i></li>")
    return (f"<li style='color:{_PASS if feedback.passed else _FAIL}'>"
            f"{'✓' if feedback.passed else '✗'} {_marked(feedback.message)}</li>")


def result_html(result: Result, attempt: int | None = None) -> str:
    """Render a result: a coloured summary line and one line per test.

    ``attempt`` (the how-many-th Check of this panel) is shown beside the
    summary, so pressing Check again visibly answers even when the result is
    the same as before.
    """
    colour = _PASS if result.passed else _IDLE if result.status == "not_attempted" \
        else _FAIL
    lines = "".join(_feedback_line(f, result.language) for f in result.feedback)
    note = "" if attempt is None else (
        f" <span style='color:{_IDLE};font-weight:normal;font-size:90%'>"
        f"({html.escape(message('attempt', result.language, n=attempt))})</span>")
    return (
        f"<b style='color:{colour}'>{html.escape(result.summary())}</b>{note}"
        f"<ul style='margin:0.2em 0;padding-left:1.2em'>{lines}</ul>"
    )


def library_note_html(exercise: Exercise, answer: Any) -> str:
    """Say that ``answer`` is the course's own function for ``exercise``, if it is.

    An answer that calls the library function computing the exercise's
    result (:data:`~jaxcourse.exercises.checking.library_answers.LIBRARY_ANSWERS`)
    passes the check but skips the reasoning the exercise asks for, and a
    class's grading scores it as borrowed: the panel says so under the
    result. Empty for any other answer.
    """
    found = function_library_answer(exercise.id, answer)
    if found is None:
        return ""
    text = message("check_library_answer", exercise.language, name=shown_name(found))
    return f"<div style='color:{_FAIL}'>⚠ {_marked(text)}</div>"


def checking_html(language: str) -> str:
    """Render the panel's state while a Check runs."""
    return f"<i style='color:{_IDLE}'>{html.escape(message('checking', language))}</i>"


def hints_html(exercise: Exercise, shown: int) -> str:
    """Render the first ``shown`` hints (or a note when there are none left)."""
    lang = exercise.language
    if not exercise.hints:
        return f"<i>{html.escape(message('no_hints', lang))}</i>" if shown else ""
    total = len(exercise.hints)
    parts = [
        f"<p><b>{html.escape(message('hint_n', lang, n=i + 1, total=total))}"
        f"</b>{html.escape(message('label_sep', lang))}{_marked(hint)}</p>"
        for i, hint in enumerate(exercise.hints[:shown])
    ]
    if shown > len(exercise.hints):
        parts.append(f"<i>{html.escape(message('no_more_hints', lang))}</i>")
    return "".join(parts)


def solution_html(exercise: Exercise) -> str:
    """Render the reference implementation's source as a highlighted code block.

    In a class release (:mod:`jaxcourse.exercises.checking.class_release`) the
    reference's source is a stub: the solution shown is the published one, and
    before it may be shown, the reason why not.
    """
    lang = exercise.language
    if release_settings() is not None:
        shown, why = solution_state(exercise)
        if not shown:
            return f"<i>{html.escape(why)}</i>"
        source = published_solution(exercise)
    else:
        source = exercise.solution_source()
    if not source:
        return f"<i>{html.escape(message('solution_unavailable', lang))}</i>"
    return (f"<b>{html.escape(message('solution_heading', lang))}</b>"
            + highlight(source, PythonLexer(), _CODE))


class CheckPanel(Display):
    """A widget that checks one exercise and offers hints and the solution.

    Parameters
    ----------
    exercise_id : str
        The exercise, e.g. ``"mlp.relu"``.
    answer : callable, optional
        The learner's function. If it carries the exercise's function name
        (or is omitted), every Check looks the name up again in
        ``namespace``, so editing and re-running the function's cell and
        pressing Check tests the new version.
    namespace : mapping, optional
        Where to look the function up (the notebook's globals).
    run : bool
        Check once right away (the panel then opens with a result).
    """

    def __init__(
        self,
        exercise_id: str,
        answer: Callable | None = None,
        *,
        namespace: Mapping[str, Any] | None = None,
        run: bool = True,
    ) -> None:
        self.exercise = get(exercise_id)
        super().__init__(self.exercise.language)
        self.answer = answer
        self.namespace = namespace
        self.result: Result | None = None
        self.attempts = 0
        self.hints_shown = 0
        self.solution_visible = False
        self.check_button = widgets.Button(
            description=self.label("check"), button_style="primary", icon="check"
        )
        self.hint_button = widgets.Button(
            description=self.label("hint"), icon="lightbulb-o",
            disabled=not self.exercise.hints,
        )
        # Off in a class release until its date and its published solutions
        # (class_release.solution_state); the tooltip says which.
        shown, why = solution_state(self.exercise)
        self.solution_button = widgets.Button(
            description=self.label("show_solution"), icon="eye",
            disabled=not shown, tooltip=why,
        )
        self.title = widgets.HTML(f"<b>{html.escape(self.exercise.title)}</b> "
                                  f"<code>{html.escape(self.exercise.id)}</code>")
        self.summary = widgets.HTML()
        self.hints = widgets.HTML()
        self.solution = widgets.HTML()
        self._on_change(self.run_check, self.check_button)
        self._on_change(self.show_next_hint, self.hint_button)
        self._on_change(self.toggle_solution, self.solution_button)
        self._assemble(
            [self.title,
             widgets.HBox([self.check_button, self.hint_button, self.solution_button])],
            [self.summary, self.hints, self.solution],
        )
        if self.deferred:
            self.summary.value = html.escape(self.text())
        self._start(run, self.run_check)
        if not run:
            warm_up(self.exercise)

    def current_answer(self) -> Any:
        """Return the function to check now: the latest definition of its name."""
        name = self.exercise.function_name
        named = self.answer is None or getattr(self.answer, "__name__", None) == name
        if self.namespace is not None and named and name in self.namespace:
            return self.namespace[name]
        return self.answer

    def run_check(self) -> Result:
        """Check the current answer and show the result (the Check button).

        The panel says "checking" at once (the front end receives it before
        the check starts), keeps the button disabled while the check runs, and
        numbers each result, so every click is visibly answered.
        """
        self.check_button.disabled = True
        self.summary.value = checking_html(self.language)
        answer = self.current_answer()
        try:
            self.result = check(self.exercise.id, answer)
        finally:
            self.check_button.disabled = False
        self.attempts += 1
        self.summary.value = result_html(self.result, self.attempts) + \
            library_note_html(self.exercise, answer)
        # The next Check's launched processes start while this result is read.
        warm_up(self.exercise)
        return self.result

    def show_next_hint(self) -> int:
        """Reveal one more hint (the Hint button); return how many are shown."""
        self.hints_shown = min(self.hints_shown + 1, len(self.exercise.hints) + 1)
        self.hints.value = hints_html(self.exercise, self.hints_shown)
        return self.hints_shown

    def toggle_solution(self) -> bool:
        """Show or hide the reference source (the Show-solution button)."""
        self.solution_visible = not self.solution_visible
        self.solution.value = solution_html(self.exercise) if self.solution_visible \
            else ""
        self.solution_button.description = self.label(
            "hide_solution" if self.solution_visible else "show_solution")
        return self.solution_visible

    def deferred_id(self) -> str:
        """Name the panel by its exercise while grading defers it."""
        return self.exercise.id

    def live_text(self) -> str:
        """Return the panel's plain-text form: the result's summary line."""
        if self.result is None:
            return f"{self.exercise.id}: {self.exercise.title}"
        return self.result.summary()


def check_panel(
    exercise_id: str, answer: Callable | None = None, *, run: bool = True
) -> CheckPanel:
    """Build a :class:`CheckPanel` for ``exercise_id``; display it in a notebook.

    Parameters
    ----------
    exercise_id : str
        The exercise, e.g. ``"mlp.relu"``.
    answer : callable, optional
        The learner's function; by default the caller's global of the
        exercise's function name, looked up again at every Check.
    run : bool
        Check right away.

    Returns
    -------
    CheckPanel
        Shown as the widget in Jupyter, and as its summary line in plain text.
    """
    return CheckPanel(exercise_id, answer, namespace=caller_namespace(), run=run)


def caller_namespace(depth: int = 2) -> dict[str, Any] | None:
    """Return the globals of the code ``depth`` frames up (a notebook's).

    ``check_panel`` and ``autograde`` look the learner's function up there
    again at every Check, so a re-run cell is what gets checked.
    """
    frame = inspect.currentframe()
    try:
        for _ in range(depth):
            frame = frame.f_back if frame is not None else None
        return frame.f_globals if frame is not None else None
    finally:
        del frame
