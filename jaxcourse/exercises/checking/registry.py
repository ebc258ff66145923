"""Where exercises are found: registered by their topic's module, by id.

The engine never names the content package. It finds a topic's module through
the course's manifest (:mod:`jaxcourse.course`), imports it on first use, and
that module registers its exercises here.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path, PurePath

from ... import course
from .spec import Exercise

__all__ = [
    "READING_LANGUAGE_ENV",
    "by_chapter",
    "exercise_ids",
    "get",
    "reading_language",
    "register",
    "unregister",
]

#: Set it (``zh-Hans``, ``zh-Hant``, ``en``) to choose the language of the
#: English chapters' exercise panels, where the notebook's folder does not say.
READING_LANGUAGE_ENV = "JAX_COURSE_LANGUAGE"
#: The folders of the Chinese editions (:mod:`jaxcourse.i18n`) and their language.
EDITION_FOLDERS = {"zh_hans": "zh-Hans", "zh_hant": "zh-Hant"}

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
        exercise = _REGISTRY[exercise_id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(
            f"no exercise {exercise_id!r}; registered: {known}"
        ) from None
    language = reading_language()
    if language is None or exercise.language != "en" or language == "en":
        return exercise
    return _edition(exercise, language)


def reading_language() -> str | None:
    """Return the language the learner reads the course in, where it is known.

    :data:`READING_LANGUAGE_ENV` when set; otherwise what the notebook this
    kernel runs says (JupyterLab and Notebook tell a kernel its notebook's
    path in ``JPY_SESSION_NAME``): first its own metadata (an edition's
    ``jaxcourse.language``, :mod:`jaxcourse.i18n`), which travels with a copy
    saved anywhere, then its folder (an edition under ``zh_hans/`` or
    ``zh_hant/``). None elsewhere (Colab, a script, the grader): each
    exercise then speaks its chapter's language.
    """
    from ...messages import LANGUAGES

    explicit = os.environ.get(READING_LANGUAGE_ENV)
    if explicit:
        if explicit not in LANGUAGES:
            raise ValueError(f"{READING_LANGUAGE_ENV} must be one of {LANGUAGES}, "
                             f"not {explicit!r}")
        return explicit
    session = os.environ.get("JPY_SESSION_NAME", "")
    if not session:
        return None
    own = _notebook_language(_notebook_file(session))
    if own in LANGUAGES:
        return own
    for part in PurePath(session).parts:
        if part in EDITION_FOLDERS:
            return EDITION_FOLDERS[part]
    return None


def _notebook_file(session: str) -> Path:
    """Return the notebook file that ``JPY_SESSION_NAME`` names.

    Jupyter Server gives the file's absolute path; an older server gives its
    path from the server's root, and starts the kernel in the notebook's
    folder, where its bare name is then found.
    """
    path = Path(session)
    return path if path.is_absolute() else Path.cwd() / path.name


def _notebook_language(path: Path) -> str | None:
    """Return the ``jaxcourse.language`` of the notebook at ``path``, or None.

    Read again only when the file changes (a Check asks at every call, and a
    stored notebook is megabytes of outputs). A file that is missing, renamed
    since the kernel started, or not a notebook gives None: never an error.
    """
    try:
        stat = path.stat()
    except OSError:
        return None
    return _metadata_language(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _metadata_language(path: str, mtime_ns: int, size: int) -> str | None:
    del mtime_ns, size  # part of the cache's key only: a saved change is read again
    try:
        with open(path, encoding="utf-8") as file:
            metadata = json.load(file).get("metadata", {})
        language = metadata.get("jaxcourse", {}).get("language")
    except (OSError, ValueError, AttributeError):
        return None
    return language if isinstance(language, str) else None


def _edition(exercise: Exercise, language: str) -> Exercise:
    """Return ``exercise`` in ``language``: the same checks, translated texts.

    The texts come from its topic's table (``<key>_<folder>_texts.json``
    beside the topic's module, written by ``python -m jaxcourse.i18n``); a
    text the table lacks stays English.
    """
    from .editions import edition

    cached = _EDITIONS.get((exercise.id, language))
    if cached is not None and cached[0] is exercise:  # re-registered: rebuild
        return cached[1]
    key = exercise.id.split(".", 1)[0]
    twin = edition([exercise], _texts(key, language), key=key,
                   chapter=exercise.chapter, language=language)[0]
    _EDITIONS[(exercise.id, language)] = (exercise, twin)
    return twin


_EDITIONS: dict[tuple[str, str], tuple[Exercise, Exercise]] = {}


@functools.cache
def _texts(key: str, language: str) -> dict[str, str]:
    from .editions import read_texts

    folder = {v: k for k, v in EDITION_FOLDERS.items()}[language]
    module = course.load(key)
    return read_texts(Path(module.__file__).with_name(f"{key}_{folder}_texts.json"))


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
