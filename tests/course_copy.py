"""A copy of one translated chapter (its masters and catalog) under a test's folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from jaxcourse import i18n

ROOT = Path(__file__).resolve().parents[1]


def copy_family(tmp_path: Path, family: i18n.Family) -> Path:
    """Copy ``family``'s master notebooks and its catalog under ``tmp_path``.

    Returns the copied catalog's path; the layout under ``tmp_path`` is the
    course's, so that the i18n functions can be pointed at the copy.
    """
    for master in family.masters:
        (tmp_path / master).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / master, tmp_path / master)
    catalog = tmp_path / family.catalog.relative_to(ROOT)
    catalog.parent.mkdir(parents=True)
    shutil.copy(family.catalog, catalog)
    return catalog


def copy_code(base: Path, source: Path = ROOT) -> list[Path]:
    """Copy the course's code under ``base / "course"`` for a grader to guard.

    The engine and every content package (the topics' and their helpers',
    :func:`jaxcourse.course.content_packages`), as a class's course holds
    them, without notebooks: a change the grader finds is restored in the
    copy, never in the working tree that others may be editing.
    """
    from jaxcourse.course import content_packages

    course = base / "course"
    course.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("*.ipynb", "__pycache__")
    folders = [course / name for name in ("jaxcourse", *content_packages())]
    for folder in folders:
        shutil.copytree(source / folder.name, folder, ignore=ignore)
    return folders
