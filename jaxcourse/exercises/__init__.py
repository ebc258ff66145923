"""The course's exercise system: checks, feedback, widgets and grading.

A chapter's exercises are defined in ``solutions/<topic>.py`` (a reference
function plus a checker spec, registered with :func:`register`). Learners call
:func:`check_panel` in a notebook, or :func:`check` anywhere::

    from jaxcourse.exercises import check, check_panel
    check_panel("mlp.relu", relu)      # a widget: Check, Hint, Show solution
    check("mlp.relu", relu).passed     # no display needed

Student notebooks are generated from the solution notebooks by
``python -m jaxcourse.exercises.authoring``; a class's submissions are graded
by ``python -m jaxcourse.exercises.grading``.
"""

from __future__ import annotations

from .core import (
    Case,
    Exercise,
    Feedback,
    Mistake,
    Observation,
    Result,
    TimeLimitError,
    by_chapter,
    call_with_time_limit,
    check,
    exercise_ids,
    get,
    judge,
    observe_all,
    register,
    unregister,
)
from .messages import message

__all__ = [
    "Case",
    "CheckPanel",
    "Exercise",
    "Feedback",
    "Mistake",
    "Observation",
    "Result",
    "TimeLimitError",
    "by_chapter",
    "call_with_time_limit",
    "check",
    "check_panel",
    "exercise_ids",
    "get",
    "judge",
    "message",
    "observe_all",
    "register",
    "unregister",
]


def __getattr__(name: str) -> object:
    # The widgets import ipywidgets; load them only when a notebook asks.
    if name in ("CheckPanel", "check_panel"):
        from . import widgets

        return getattr(widgets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
