"""What a class release changes in a running course: answers withheld, solutions shut.

A class release (:mod:`jaxcourse.exercises.release` writes one) is the course
as students get it for an assignment: the engine, the checks' helpers and the
student notebooks, but no reference answer. Its copy of this package holds a
settings file, :data:`SETTINGS_NAME`, beside this module; the course itself
never has one, so self-study (``make lab``, the book, Colab) is unchanged.

In a release:

- each reference function's body is replaced by ``raise withheld(...)``
  (:func:`withheld`): a Check judges from the reference outputs stored beside
  the exercises' module (:mod:`jaxcourse.exercises.checking.references`), and only
  reaches the reference where those do not apply (another JAX, a GPU), which
  the error says;
- the panel's Show-solution button is off (:func:`solution_state`), or, when
  the teacher set a date, on from that date, showing the solutions that the
  teacher published into the release (``--publish-solutions``, a
  ``<module>_solutions.json`` beside the exercises' module); until they are
  published, it says so.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import CourseError
from ...messages import message

__all__ = [
    "REACHED",
    "SETTINGS_NAME",
    "SOLUTIONS_SUFFIX",
    "ReferenceWithheldError",
    "ReleaseSettings",
    "published_solution",
    "release_settings",
    "settings_path",
    "solution_state",
    "solutions_path",
    "withheld",
]

#: The release's settings, beside this module in a release's copy of the
#: package (JSON: ``chapters``, ``solutions_after``, ``created``, ``excluded``).
SETTINGS_NAME = "class_release.json"
#: The published solutions, beside the module that defines the exercises
#: (``solutions/bayes.py`` -> ``solutions/bayes_solutions.json``).
SOLUTIONS_SUFFIX = "_solutions.json"


class ReferenceWithheldError(CourseError):
    """A class release was asked to run a reference answer it does not hold."""


#: Every withheld answer function reached in this process, as
#: ``"<module>.<name>"``, in order: the grader's sandbox names a borrowed
#: answer by it. Only the reason shown depends on it: what was withheld
#: computes nothing, whoever clears this list.
REACHED: list[str] = []


@dataclass(frozen=True)
class ReleaseSettings:
    """A class release's settings, as :func:`release_settings` reads them.

    Parameters
    ----------
    chapters : tuple of str
        The released chapters (notebook stems, e.g. ``"03_bayes"``).
    solutions_after : datetime.date, optional
        From this day on, Show solution shows the published solutions; None:
        never.
    created : str
        When the release was written (ISO 8601).
    excluded : dict of str to str
        Chapters asked for but left out, and why.
    """

    chapters: tuple[str, ...] = ()
    solutions_after: dt.date | None = None
    created: str = ""
    excluded: dict[str, str] | None = None


def settings_path() -> Path:
    """Return where a release's settings live: in ``jaxcourse/exercises``."""
    return Path(__file__).parents[1] / SETTINGS_NAME


def release_settings() -> ReleaseSettings | None:
    """Return this release's settings, or None when this is the course itself.

    Read at each call (a small file), so that a teacher who changes the date
    in a running hub needs no restart. A settings file that does not parse
    counts as a release with solutions off: a damaged release must not open
    them.
    """
    path = settings_path()
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        after = data.get("solutions_after")
        return ReleaseSettings(
            chapters=tuple(data.get("chapters", ())),
            solutions_after=dt.date.fromisoformat(after) if after else None,
            created=str(data.get("created", "")),
            excluded=dict(data.get("excluded") or {}),
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return ReleaseSettings()


def solutions_path(module_file: str | Path) -> Path:
    """Where the solutions of the exercises defined in ``module_file`` are published."""
    path = Path(module_file)
    return path.with_name(path.stem + SOLUTIONS_SUFFIX)


def published_solution(exercise: Any) -> str:
    """Return ``exercise``'s published solution in its language ("" if none).

    The table maps ``"<id>|<language>"`` to the solution's text, as the course
    shows it in that language (an edition's comments translated).
    """
    module = sys.modules.get(getattr(exercise.reference, "__module__", ""), None)
    module_file = getattr(module, "__file__", None)
    if not module_file:
        return ""
    path = solutions_path(module_file)
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    text = table.get(f"{exercise.id}|{exercise.language}", "") \
        if isinstance(table, dict) else ""
    return text if isinstance(text, str) else ""


def solution_state(exercise: Any, today: dt.date | None = None) -> tuple[bool, str]:
    """Say whether the Show-solution button may show ``exercise``'s solution.

    Parameters
    ----------
    exercise : Exercise
        The panel's exercise.
    today : datetime.date, optional
        The day to judge by; by default this machine's date.

    Returns
    -------
    tuple of (bool, str)
        ``(True, "")`` in the course itself, and in a release from its date on
        once the solutions are published; otherwise ``(False, why)``, in the
        exercise's language.
    """
    settings = release_settings()
    if settings is None:
        return True, ""
    lang = exercise.language
    after = settings.solutions_after
    if after is None:
        return False, message("solution_withheld", lang)
    if (today or dt.date.today()) < after:
        return False, message("solution_from", lang, date=after.isoformat())
    if not published_solution(exercise):
        return False, message("solution_unpublished", lang, date=after.isoformat())
    return True, ""


def withheld(module: str, name: str) -> ReferenceWithheldError:
    """Return the error a withheld reference raises, saying why it was reached.

    A release's reference runs only where its stored outputs do not apply:
    the error names what differs (:func:`jaxcourse.exercises.checking.references.
    stale_reasons`), in the reading language where it is known.

    Parameters
    ----------
    module : str
        The module that defines the exercises (the stub's ``__name__``).
    name : str
        The reference function's name.
    """
    from .references import stale_reasons
    from .registry import reading_language

    REACHED.append(f"{module}.{name}")

    why = "; ".join(stale_reasons(sys.modules.get(module))) or \
        f"{name} has no stored output for this call"
    return ReferenceWithheldError(
        message("reference_withheld", reading_language() or "en", why=why))
