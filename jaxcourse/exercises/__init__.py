"""The course's exercise system: checks, feedback, widgets and grading.

A chapter's exercises are defined by its topic's module, which the course's
manifest names (:mod:`jaxcourse.course`): reference functions plus checker
specs (:mod:`~jaxcourse.exercises.checking.spec`), registered with :func:`register`.
Learners call :func:`check_panel` in a notebook, or :func:`check` anywhere::

    from jaxcourse.exercises import check, check_panel
    check_panel("mlp.relu", relu)      # a widget: Check, Hint, Show solution
    check("mlp.relu", relu).passed     # no display needed

Student notebooks are generated from the solution notebooks by
``python -m jaxcourse.exercises.authoring``; a class's submissions are graded
by ``python -m jaxcourse.exercises.grading``.
"""

from __future__ import annotations

from .. import compile_cache
from ..messages import message
from .checking.judging import check, judge
from .checking.observation import Observation
from .checking.observe import observe_all
from .checking.registry import by_chapter, exercise_ids, get, register, unregister
from .checking.result import Feedback, Result
from .checking.spec import Case, Exercise, Mistake
from .checking.sweeps import each_call, random_calls
from .checking.time_limit import TimeLimitError, call_with_time_limit
from .checking.warming import warm_up

# A Check compiles the learner's function anew in every kernel: JAX's
# persistent cache keeps what it compiled (and what `make setup` compiled for
# the reference answers) for the next time. Not in the grader's sandbox.
compile_cache.enable_by_default()

__all__ = [
    "Case",
    "CheckPanel",
    "Exercise",
    "Feedback",
    "Mistake",
    "Observation",
    "Result",
    "TimeLimitError",
    "autograde",
    "by_chapter",
    "call_with_time_limit",
    "check",
    "check_panel",
    "each_call",
    "exercise_ids",
    "get",
    "judge",
    "message",
    "observe_all",
    "random_calls",
    "register",
    "unregister",
    "warm_up",
]


def __getattr__(name: str) -> object:
    # The widgets import ipywidgets; load them only when a notebook asks.
    if name in ("CheckPanel", "check_panel"):
        from .widgets import panel as widgets

        return getattr(widgets, name)
    if name == "autograde":  # shows a check panel too
        from .nbgrader import autograde as nbgrader

        return nbgrader.autograde
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
