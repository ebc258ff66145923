"""The course's table of contents for the engine: one :class:`Topic` per chapter.

The helper package is an engine: it checks, grades, explores and generates, but
it holds no exercise. The content (reference solutions, exercise specs, the
solution notebooks) lives in a separate package that imports ``jaxcourse``,
never the reverse. The engine finds the content through one manifest, a tuple
of :class:`Topic`, that the content package declares as a Python entry point
in the group :data:`ENTRY_POINT_GROUP`::

    [project.entry-points."jaxcourse.course"]
    course = "<content package>:TOPICS"

so a fork can swap in its own content without touching the engine. The
content package may name, in :data:`HELPERS_ATTRIBUTE`, the packages beside
it that its exercises import (their checks, named mistakes, cases): content
too, which the grader copies, a release ships and the stored outputs'
fingerprints cover. One key
names a chapter everywhere: its exercise ids (``"<key>.<name>"``), the module
that defines them, its explorer module and its test file.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from . import CourseError

__all__ = [
    "ENTRY_POINT_GROUP",
    "HELPERS_ATTRIBUTE",
    "NoCourseError",
    "Topic",
    "content_folders",
    "content_packages",
    "load",
    "topic",
    "topics",
]

#: The entry-point group in which a content package declares its manifest.
ENTRY_POINT_GROUP = "jaxcourse.course"

#: The attribute of a topics' package that names its helper packages (a tuple
#: of top-level package names, installed beside it).
HELPERS_ATTRIBUTE = "HELPER_PACKAGES"


class NoCourseError(CourseError):
    """No installed package declares the course's manifest."""


@dataclass(frozen=True)
class Topic:
    """One chapter of the course, as the engine sees it.

    Parameters
    ----------
    key : str
        The chapter's one name: exercise ids start with ``"<key>."``.
    module : str
        The module that defines the chapter's exercises and registers them
        with :func:`jaxcourse.exercises.register` when imported.
    chapter : str
        The chapter notebook, relative to the repository root.
    exercises : str
        The solution notebook (the master of the student notebook), relative
        to the repository root.
    language : str
        The language of the chapter and its exercises' feedback.
    devices : int
        The most JAX devices any of its exercises needs.
    """

    key: str
    module: str
    chapter: str
    exercises: str
    language: str = "en"
    devices: int = 1

    @property
    def student(self) -> str:
        """The generated student notebook, relative to the repository root."""
        return f"exercises/{Path(self.exercises).name}"


@functools.cache
def topics() -> tuple[Topic, ...]:
    """Return the course's topics, in chapter order, from the installed manifest.

    Raises
    ------
    NoCourseError
        When no installed package declares a manifest (the course package is
        not installed: ``pip install -e .`` in a checkout).
    """
    points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    if not points:
        raise NoCourseError(
            f"no course is installed (no entry point in {ENTRY_POINT_GROUP!r}); "
            "install the course with `pip install -e .` in its checkout"
        )
    found: list[Topic] = []
    for point in sorted(points, key=lambda p: p.name):
        found.extend(point.load())
    keys = [t.key for t in found]
    if len(set(keys)) != len(keys):
        raise NoCourseError(f"topic keys are not unique: {keys}")
    return tuple(found)


def topic(key: str) -> Topic:
    """Return the topic ``key`` (the part of an exercise id before the dot)."""
    for candidate in topics():
        if candidate.key == key:
            return candidate
    known = ", ".join(t.key for t in topics())
    raise KeyError(f"no topic {key!r}; the course has: {known}")


def load(key: str) -> ModuleType:
    """Import topic ``key``'s module, which registers its exercises."""
    return importlib.import_module(topic(key).module)


def content_packages() -> tuple[str, ...]:
    """Return the names of the content's packages: the topics', then their helpers'.

    A topics' package names its helper packages in :data:`HELPERS_ATTRIBUTE`.
    """
    names: list[str] = []
    for item in topics():
        name = item.module.split(".", 1)[0]
        if name not in names:
            names.append(name)
    for name in list(names):
        for helper in getattr(importlib.import_module(name), HELPERS_ATTRIBUTE, ()):
            if helper not in names:
                names.append(helper)
    return tuple(names)


def content_folders() -> list[Path]:
    """Return the folders of the engine and of every topic's package.

    The classroom grader gives each submission a read-only copy of them.
    """
    folders = [Path(__file__).resolve().parent]
    for name in content_packages():
        package = importlib.import_module(name)
        folder = Path(package.__file__).resolve().parent
        if folder not in folders:
            folders.append(folder)
    return folders
