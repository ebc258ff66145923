"""The course's side of nbgrader's scores: a notebook's test cells, graded here.

nbgrader grades a test cell by what it printed in the kernel that executed
the learner's notebook, a kernel the learner's own cells controlled first:
two lines there that replaced :func:`jaxcourse.exercises.autograde` gave full
marks with no answers. The nbgrader course folder that ``python -m
jaxcourse.exercises.authoring --nbgrader DIR`` writes therefore has nbgrader
run :class:`~jaxcourse.exercises.nbgrader.preprocessor.CourseScores` right
after it executes a notebook: in nbgrader's own process, it writes the
notebook to a private folder and runs this module with the course's Python::

    python -m jaxcourse.exercises.grading.nbgrader_scores NOTEBOOK --out scores.json

which scores every test cell that calls ``check_panel("<topic>.<name>", f)``
with the course's grader (:func:`score_notebook`: a fresh sandboxed process
runs the learner's cells against a read-only copy of the course, as ``python
-m jaxcourse.exercises.grading`` does) and writes, for each cell, the fraction
of tests passed and the feedback; ``CourseScores`` puts the score in points in
place of what the cell printed in the kernel. With ``--name STUDENT --class
FILE`` (``-``: standard input; the answers of the students ``CourseScores``
autograded before) it also writes the class's flags, this notebook among
them (:func:`class_report`).

Nothing imports this module but its command line (the reference outputs'
fingerprints follow imports, and the grader is not what computes them).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

from jaxcourse.cli import add_version, existing_path
from jaxcourse.cli import run as run_command

__all__ = ["class_report", "graded_checks", "main", "score_notebook"]

# The calls whose first argument names the exercise a test cell checks (the
# masters' hidden region calls autograde).
_CHECK_CALLS = ("check_panel", "autograde")


def _checked_exercise(source: str) -> str | None:
    """Return the exercise id that a ``check_panel("<id>", f)`` call names, if any."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _CHECK_CALLS and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            return node.args[0].value
    return None


def graded_checks(nb: Any) -> dict[str, str]:
    """Return the nbgrader test cells that check an exercise: grade id to exercise id.

    A test cell is a code cell that nbgrader grades and that is not a
    solution. It is read-only: nbgrader puts back its released source (and
    points) before it executes a submission, so the exercise it names is the
    teacher's, whatever the learner edited.
    """
    found = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if (cell.cell_type != "code" or not meta.get("grade")
                or meta.get("solution") or "grade_id" not in meta):
            continue
        exercise_id = _checked_exercise(cell.source)
        if exercise_id is not None:
            found[meta["grade_id"]] = exercise_id
    return found


def _cell_feedback(row: Any, exercise_id: str) -> str:
    """Return the Markdown that nbgrader's feedback shows under one test cell."""
    from ..checking.registry import get
    from .runner import text

    language = get(exercise_id).language
    score = row.scores[exercise_id]
    lines = [f"**{text('exercise', language, id=exercise_id, score=score)}**", ""]
    if row.status != "graded":
        lines.append(f"- {text('status', language, status=row.status)}")
    if row.reason:
        lines.append(f"- {row.reason}")
    lines += [f"- {line}" for line in row.feedback.get(exercise_id, [])]
    return "\n".join(lines) + "\n"


def class_report(row: Any, classmates: dict[str, dict]) -> list[dict]:
    """Return the class's flags, ``row`` among ``classmates``, as in ``grades.json``.

    ``classmates`` maps each other student to what an earlier report said of
    them (``scores`` and ``answers``, by exercise id). The flags are the
    course grader's own (:func:`~jaxcourse.exercises.grading.tables.class_flags`),
    computed on the exercises of ``row``.
    """
    from .rows import SubmissionResult
    from .tables import class_flags

    ids = list(row.scores)
    rows = [row]
    for name, mate in classmates.items():
        if name == row.submission or not isinstance(mate, dict):
            continue
        scores, answers = mate.get("scores") or {}, mate.get("answers") or {}
        rows.append(SubmissionResult(
            name, {i: float(scores.get(i, 0.0)) for i in ids}, "graded",
            answers={i: str(answers.get(i, "")) for i in ids}))
    rows.sort(key=lambda r: r.submission)
    return [flag.to_dict() for flag in class_flags(rows)]


def score_notebook(path: Path, *, timeout: float = 300.0,
                   memory_mb: int = 4096, name: str | None = None,
                   classmates: dict[str, dict] | None = None) -> dict:
    """Score an nbgrader notebook's test cells with the course's grader.

    The notebook runs as one submission of
    :func:`jaxcourse.exercises.grading.cli.grade`: in a fresh process, against
    a read-only copy of the course, with its time and memory limits. Nothing
    from the kernel in which nbgrader executed it is used.

    Parameters
    ----------
    path : Path
        The notebook, with its nbgrader metadata.
    timeout : float
        Seconds for the whole notebook.
    memory_mb : int
        Memory limit of its process, 0 for none.
    name : str, optional
        The student's name, for the class's flags (default: the file's stem).
    classmates : dict, optional
        The other students' ``scores`` and ``answers``, by name, as earlier
        reports gave them: the class's flags are computed with them.

    Returns
    -------
    dict
        ``status`` and ``reason`` (the grader's row), ``cells`` (for each
        test cell's grade id, the ``exercise`` it checks, the ``fraction`` of
        its tests passed (0 to 1) and the ``markdown`` feedback), the row's
        ``scores`` and ``answers`` by exercise id, and ``flags``: the class's
        flags (:func:`class_report`; for the teacher, never in the feedback).
    """
    import nbformat

    from .cli import grade

    cells = graded_checks(nbformat.read(path, as_version=4))
    ids = list(dict.fromkeys(cells.values()))
    if not ids:
        return {"status": "graded", "reason": "", "cells": {}, "scores": {},
                "answers": {}, "flags": []}
    [row] = grade([path], exercises=ids, timeout=timeout, memory_mb=memory_mb,
                  jobs=1, progress=False)  # one notebook: no count to show
    row.submission = name or path.stem
    return {
        "status": row.status,
        "reason": row.reason,
        "cells": {grade_id: {"exercise": exercise_id,
                             "fraction": row.scores.get(exercise_id, 0.0),
                             "markdown": _cell_feedback(row, exercise_id)}
                  for grade_id, exercise_id in cells.items()},
        "scores": row.scores,
        "answers": row.answers,
        "flags": class_report(row, classmates or {}),
    }


def main(argv: list[str] | None = None) -> int:
    """Score NOTEBOOK into FILE (``... nbgrader_scores NOTEBOOK --out FILE``)."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.exercises.grading.nbgrader_scores",
        description="Score an nbgrader notebook's test cells with the course's "
                    "grader (nbgrader's CourseScores runs this).")
    parser.add_argument("notebook", type=existing_path)
    parser.add_argument("--out", type=Path, required=True,
                        help="where the scores go, as JSON")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds for the whole notebook")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="memory limit of its process, 0 for none")
    parser.add_argument("--name", help="the student's name, for the class's flags")
    parser.add_argument("--class", dest="classmates",
                        help="JSON file (- for standard input): the other "
                             "students' scores and answers, by name; the report "
                             "then holds the class's flags")
    add_version(parser)
    args = parser.parse_args(argv)
    classmates = {}
    if args.classmates == "-":
        classmates = json.loads(sys.stdin.read() or "{}")
    elif args.classmates:
        classmates = json.loads(existing_path(args.classmates).read_text(
            encoding="utf-8"))

    def scored() -> int:
        report = score_notebook(args.notebook, timeout=args.timeout,
                                memory_mb=args.memory_mb, name=args.name,
                                classmates=classmates)
        # Written whole, then renamed: CourseScores never reads half a report.
        partial = args.out.with_suffix(".partial")
        partial.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
        partial.replace(args.out)
        return 0

    # The grader's own stops (a changed environment, no wall) are one line on
    # stderr, which CourseScores shows, not a traceback.
    return run_command(scored)


if __name__ == "__main__":
    sys.exit(main())
