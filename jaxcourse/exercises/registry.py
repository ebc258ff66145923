"""Where exercises are found: registered by their topic's module, by id.

The engine never names the content package. It finds a topic's module through
the course's manifest (:mod:`jaxcourse.course`), imports it on first use, and
that module registers its exercises here.
"""

from __future__ import annotations

from .. import course
from .spec import Exercise

__all__ = [
    "by_chapter",
    "exercise_ids",
    "get",
    "register",
    "unregister",
]

_REGISTRY: dict[str, Exercise] = {}


def register(*exercises: Exercise) -> tuple[Exercise, ...]:
    """Add exercises to the registry (re-registering an id replaces it).

    Re-registration happens when a topic's module is reloaded; ids must
    otherwise be unique across the course, which a test checks.
    """
    for exercise in exercises:
        _REGISTRY[exercise.id] = exercise
    return exercises


def unregister(exercise_id: str) -> None:
    """Remove an exercise from the registry (for tests)."""
    _REGISTRY.pop(exercise_id, None)


def _load_all() -> None:
    for topic in course.topics():
        course.load(topic.key)


def get(exercise_id: str) -> Exercise:
    """Return the registered exercise ``exercise_id``.

    Its topic's module (the manifest's, :func:`jaxcourse.course.load`) is
    imported on first use.
    """
    if exercise_id not in _REGISTRY:
        try:
            course.load(exercise_id.split(".", 1)[0])
        except KeyError:
            pass  # not a topic of the course: said below, with what is known
    try:
        return _REGISTRY[exercise_id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(
            f"no exercise {exercise_id!r}; registered: {known}"
        ) from None


def exercise_ids(chapter: str | None = None) -> list[str]:
    """Every registered exercise id, optionally only one chapter's, in order."""
    _load_all()
    return [
        e.id for e in _REGISTRY.values() if chapter is None or e.chapter == chapter
    ]


def by_chapter() -> dict[str, list[str]]:
    """Map each chapter to its exercise ids, in registration order."""
    _load_all()
    chapters: dict[str, list[str]] = {}
    for exercise in _REGISTRY.values():
        chapters.setdefault(exercise.chapter, []).append(exercise.id)
    return dict(sorted(chapters.items()))
