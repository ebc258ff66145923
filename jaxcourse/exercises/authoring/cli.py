"""Generate the student notebooks in ``exercises/`` from the solution notebooks.

Usage::

    python -m jaxcourse.exercises.authoring           # regenerate exercises/
    python -m jaxcourse.exercises.authoring --check   # exit 1 if out of date
    python -m jaxcourse.exercises.authoring --nbgrader DIR   # an nbgrader course

Every ``solutions/*.ipynb`` is a master: complete and executed. Its student
copy keeps every cell but replaces each region between ``### BEGIN SOLUTION``
and ``### END SOLUTION`` (nbgrader's markers) with ``# YOUR CODE HERE`` and
``raise NotImplementedError()`` (in Markdown: ``YOUR ANSWER HERE``), removes
each region between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``,
drops the cells tagged ``solution-only``, and clears every output, execution
count and stored widget state: what ``nbgrader generate_assignment`` makes of
the master, so the two never differ. Its cells keep their nbgrader metadata,
so that nbgrader grades this copy like its own.

The masters also carry nbgrader's cell metadata, which this module writes
(and ``--check`` verifies): a cell with a solution region is a solution cell,
each ``check_panel(...)`` cell an autograded test cell worth
:data:`TEST_POINTS`, ending with a hidden :func:`~jaxcourse.exercises.autograde`
call that scores partial credit, and every other cell is read-only. With
``--nbgrader DIR`` it writes a course folder for nbgrader: ``DIR/source/
<chapter>/<notebook>.ipynb``, ``DIR/nbgrader_config.py`` and a kernelspec
that runs this Python (see book/for_teachers.md).

Generating also writes the reference outputs stored beside each topic's module
(:mod:`jaxcourse.exercises.checking.references`), those that are stale, so that a first
Check runs only the learner's function; ``--check`` reports stale ones too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaxcourse.cli import add_version

from ..checking.references.writer import stale as stale_outputs
from ..checking.references.writer import write_all as write_outputs

# The parts live in the modules below; their names are re-exported (``as``)
# so that ``authoring.<name>`` keeps reaching them.
from .markers import BEGIN as BEGIN
from .markers import BEGIN_HIDDEN as BEGIN_HIDDEN
from .markers import CODE_STUB as CODE_STUB
from .markers import END as END
from .markers import END_HIDDEN as END_HIDDEN
from .markers import SOLUTION_ONLY_TAG as SOLUTION_ONLY_TAG
from .markers import TEXT_STUB as TEXT_STUB
from .markers import AuthoringError
from .markers import strip_hidden_tests as strip_hidden_tests
from .markers import strip_solutions as strip_solutions
from .masters import ANSWER_POINTS as ANSWER_POINTS
from .masters import MASTERS, ROOT, masters_out_of_date, update_masters
from .masters import NBGRADER_SCHEMA as NBGRADER_SCHEMA
from .masters import TEST_POINTS as TEST_POINTS
from .masters import hidden_tests as hidden_tests
from .masters import with_nbgrader as with_nbgrader
from .nbgrader import COURSE_ID as COURSE_ID
from .nbgrader import NBGRADER_CONFIG as NBGRADER_CONFIG
from .nbgrader import SAFETY_NOTE, export_nbgrader
from .nbgrader import assignment_name as assignment_name
from .students import STUDENTS, generate, out_of_date
from .students import TITLES as TITLES
from .students import student_notebook as student_notebook
from .students import student_title as student_title

__all__ = [
    "BEGIN",
    "BEGIN_HIDDEN",
    "END",
    "END_HIDDEN",
    "TEST_POINTS",
    "export_nbgrader",
    "generate",
    "main",
    "masters_out_of_date",
    "out_of_date",
    "strip_hidden_tests",
    "strip_solutions",
    "student_notebook",
    "update_masters",
    "with_nbgrader",
]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.exercises.authoring",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=Path, default=MASTERS)
    parser.add_argument("--exercises", type=Path, default=STUDENTS)
    parser.add_argument("--check", action="store_true",
                        help="only report whether exercises/ and the masters' "
                        "nbgrader metadata are up to date")
    parser.add_argument("--nbgrader", type=Path, metavar="DIR",
                        help="write an nbgrader course folder to DIR instead")
    parser.add_argument("--chapter", action="append", metavar="NAME",
                        help="with --nbgrader: only this chapter (repeatable), "
                        "e.g. 03_bayes")
    add_version(parser)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except AuthoringError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.nbgrader:
        for path in export_nbgrader(args.nbgrader, args.solutions, args.chapter):
            print(f"wrote {path}")
        print(f"wrote {args.nbgrader / 'nbgrader_config.py'}; next, in that "
              "folder: nbgrader generate_assignment <chapter>")
        print(SAFETY_NOTE, file=sys.stderr)
        return 0
    if args.chapter:
        print("error: --chapter goes with --nbgrader", file=sys.stderr)
        return 2
    if args.check:
        masters = masters_out_of_date(args.solutions)
        for name in masters:
            print(f"out of date: {MASTERS.name}/{name} (hidden tests or nbgrader "
                  "metadata)")
        stale = out_of_date(args.solutions, args.exercises)
        for name in stale:
            print(f"out of date: exercises/{name}")
        # The reference outputs stored beside each topic's module.
        outputs = stale_outputs()
        for path in outputs:
            print(f"out of date: {_shown(path)} (stored reference outputs)")
        if stale or masters or outputs:
            print("run `python -m jaxcourse.exercises.authoring` to regenerate")
        return 1 if stale or masters or outputs else 0
    for path in update_masters(args.solutions):
        print(f"execute it: python scripts/run_notebook.py {_shown(path)}")
    for path in generate(args.solutions, args.exercises):
        print(f"wrote {_shown(path)}")
    # The reference outputs, so that a first Check runs only the learner's
    # function; only the stale ones are computed again.
    write_outputs(echo=lambda line: print(f"reference outputs: {line}"))
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
