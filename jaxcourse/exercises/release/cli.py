"""A class release: what students get for an assignment, without the answers.

Usage::

    python -m jaxcourse.exercises.release DIR                  # every chapter
    python -m jaxcourse.exercises.release DIR --chapters 03_bayes 06_scaling
    python -m jaxcourse.exercises.release DIR --solutions-after 2027-01-31
    python -m jaxcourse.exercises.release DIR --publish-solutions   # later

What ``DIR`` then holds, and why, is :mod:`~jaxcourse.exercises.release.writer`'s
to say; this module adds the solutions later (:func:`publish_solutions`) and
reads the command line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from jaxcourse.cli import add_version

from ... import course
from ..checking.class_release import SETTINGS_NAME, solutions_path
from ..checking.registry import _REGISTRY, EDITION_FOLDERS, _edition
from .writer import (
    ReleaseError,
    _content_package,
    _module_file,
    resolve_chapters,
    write_release,
)

__all__ = ["main", "publish_solutions"]


def publish_solutions(out: Path, echo: Callable[[str], None] | None = print
                      ) -> list[Path]:
    """Add the solutions of a release's chapters to it, for its Show-solution date.

    Writes, beside each module of the release that defines exercises, a
    table of every exercise's solution in each language it is read in (an
    English chapter's editions too), as the course shows it.

    Raises
    ------
    ReleaseError
        If ``out`` is not a release.
    """
    settings_file = out / "jaxcourse" / "exercises" / SETTINGS_NAME
    if not settings_file.is_file():
        raise ReleaseError(f"{out} is not a class release (no {SETTINGS_NAME})")
    chapters = json.loads(settings_file.read_text(encoding="utf-8"))["chapters"]
    tables: dict[str, dict[str, str]] = {}
    for topic in resolve_chapters(chapters):
        course.load(topic.key)
        for exercise in _REGISTRY.values():
            if exercise.reference.__module__ != topic.module:
                continue
            table = tables.setdefault(topic.module, {})
            table[f"{exercise.id}|{exercise.language}"] = exercise.solution_source()
            if exercise.language == "en":
                for language in EDITION_FOLDERS.values():
                    table[f"{exercise.id}|{language}"] = _edition(
                        exercise, language).solution_source()
    package, _ = _content_package(course.topics())
    written = []
    for name, table in sorted(tables.items()):
        path = solutions_path(_module_file(out / package, name))
        path.write_text(json.dumps(table, ensure_ascii=False, indent=1, sort_keys=True)
                        + "\n", encoding="utf-8")
        written.append(path)
        if echo:
            echo(f"wrote {path}")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.exercises.release",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 done, 1 a chapter was left out, 2 a bad command "
               "line, or a folder or course that cannot make a release")
    parser.add_argument("out", type=Path, metavar="DIR", help="the release's folder")
    parser.add_argument("--chapters", nargs="+", metavar="CHAPTER",
                        help="e.g. 03_bayes 06_scaling (default: every chapter)")
    parser.add_argument("--solutions-after", type=dt.date.fromisoformat,
                        metavar="YYYY-MM-DD",
                        help="Show solution works from this day on, once the "
                        "solutions are published (default: never)")
    parser.add_argument("--publish-solutions", action="store_true",
                        help="add the solutions to the release in DIR (for its date)")
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier release in DIR")
    add_version(parser)
    args = parser.parse_args(argv)
    try:
        if args.publish_solutions:
            publish_solutions(args.out)
            return 0
        settings = write_release(args.out, args.chapters,
                                 solutions_after=args.solutions_after, force=args.force,
                                 changes=True)
    except (ReleaseError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote a class release of {', '.join(settings['chapters'])} to {args.out}")
    return 1 if settings["excluded"] else 0


if __name__ == "__main__":
    sys.exit(main())
