"""The grader's output for people: the tables, each learner's feedback, a summary.

From a class's rows (:class:`~jaxcourse.exercises.grading.rows.SubmissionResult`):
``grades.csv`` and ``grades.json`` (submission x exercise -> score), one
Markdown file of feedback per learner in the exercises' language, the
plain-text table that ``python -m jaxcourse.exercises.grading`` prints, and
the class's flags for the teacher (:func:`class_flags`: answers that paste
the reference, answers two submissions share), in both.
"""

from __future__ import annotations

import csv
import json
import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..checking.answers import (
    answer_marks,
    reference_digest,
    reference_marks,
    reference_size,
)
from ..checking.registry import get
from .rows import SubmissionResult
from .runner import text

__all__ = [
    "PASTED_MIN_NODES",
    "Flag",
    "class_flags",
    "feedback_text",
    "pasted",
    "print_summary",
    "summary_text",
    "text_width",
    "write_feedback",
    "write_tables",
]


def write_tables(rows: Sequence[SubmissionResult], out_dir: str | os.PathLike[str],
                 stem: str = "grades", course: dict | None = None
                 ) -> tuple[Path, Path]:
    """Write ``<stem>.csv`` and ``<stem>.json`` (submission × exercise → score).

    The CSV starts with UTF-8's byte-order mark (``utf-8-sig``): Excel on
    Windows then reads a Chinese name as written, not as mojibake, and
    Python's ``csv``, pandas and LibreOffice read it as plain UTF-8
    (``encoding="utf-8-sig"`` drops the mark; pandas does so itself).
    ``course``, when given (the grader's version and commit), is written
    into the JSON as ``"course"``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ids = list(rows[0].scores) if rows else []
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    with open(csv_path, "w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", *ids, "total", "status", "reason"])
        for row in rows:
            writer.writerow([row.submission, *(f"{row.scores[i]:g}" for i in ids),
                             f"{row.total:g}", row.status, row.reason])
    flags = [f.to_dict() for f in class_flags(rows)]
    table = {"exercises": ids, "submissions": [r.to_dict() for r in rows],
             "flags": flags}
    if course is not None:
        table = {"course": course, **table}
    json_path.write_text(
        json.dumps(table, indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return csv_path, json_path


@dataclass(frozen=True)
class Flag:
    """An answer for the teacher to look at: it scores as checked all the same.

    ``kind`` is ``"pasted"`` (the answer is the reference, written in the
    notebook) or ``"same"`` (``others`` wrote the same answer).
    """

    exercise: str
    submission: str
    kind: str
    others: tuple[str, ...] = ()

    def text(self) -> str:
        """Say it in the exercise's language."""
        language = _language(self.exercise)
        if self.kind == "pasted":
            return text("flag_pasted", language)
        return text("flag_same", language, others=", ".join(self.others))

    def to_dict(self) -> dict:
        """Return the flag as ``grades.json`` (and nbgrader's class file) lists it."""
        return {"exercise": self.exercise, "submission": self.submission,
                "flag": self.kind, "others": list(self.others), "text": self.text()}


def _language(exercise_id: str) -> str:
    try:
        return get(exercise_id).language
    except KeyError:  # a row of an exercise the course no longer has
        return "en"


#: A shown solution of at least this many AST nodes (its code alone, see
#: :func:`jaxcourse.exercises.checking.answers.reference_size`) is long enough that an
#: answer with its very code was pasted, comments stripped or not; a shorter
#: one (``sample_betas``' two lines: 45) is what many learners write alike,
#: and is flagged only with the solution's prose in it. Measured on the
#: blind benchmark's honest answers (tests/test_grading_flags.py).
PASTED_MIN_NODES = 60


def _reference(exercise_id: str) -> tuple[str, set[str], bool]:
    """Return the shown solution's digest, its prose marks, and whether it is long."""
    try:
        solution = get(exercise_id).solution_source()
    except KeyError:
        return "", set(), False
    return (reference_digest(solution), reference_marks(solution),
            reference_size(solution) >= PASTED_MIN_NODES)


def pasted(answer: str, reference: tuple[str, set[str], bool]) -> bool:
    """Return whether ``answer`` (as a row holds it) is the shown solution, pasted.

    Its code must be the solution's (names, comments and layout aside), and
    either the solution is long (:data:`PASTED_MIN_NODES`) or the answer
    carries a line of the solution's docstring or comments: a short answer
    that any learner writes is not flagged for its code alone.
    """
    code, marks = answer_marks(answer)
    digest_part, prose, long = reference
    return bool(code) and code == digest_part and (long or bool(marks & prose))


def class_flags(rows: Sequence[SubmissionResult]) -> list[Flag]:
    """Return the answers a teacher should look at, exercise by exercise.

    Answers are compared as the notebooks write them, normalised
    (:mod:`jaxcourse.exercises.checking.answers`: names, comments, docstrings and
    layout do not count): an answer equal to the reference's shown solution
    is ``"pasted"``; answers that two or more submissions share are
    ``"same"``, each listing the others. Only answers that earned points are
    compared: an untouched template is the same everywhere, and a borrowed
    answer already scores 0. These are flags, not zeros: a short answer is
    often written the same way by learners who never met.
    """
    if not rows or not any(r.answers for r in rows):
        return []
    order = {r.submission: n for n, r in enumerate(rows)}
    flags: list[Flag] = []
    for exercise_id in rows[0].scores:
        reference = _reference(exercise_id)
        found: list[Flag] = []
        shared: dict[str, list[str]] = {}
        for row in rows:
            answer = row.answers.get(exercise_id, "")
            if not answer or row.scores.get(exercise_id, 0.0) <= 0:
                continue
            if pasted(answer, reference):
                found.append(Flag(exercise_id, row.submission, "pasted"))
            elif answer_marks(answer)[0] != reference[0]:
                # The same code, whatever its comments: shared. The shown
                # solution's own code, short, is what many write alike.
                shared.setdefault(answer_marks(answer)[0], []).append(row.submission)
        for group in shared.values():
            if len(group) > 1:
                found += [Flag(exercise_id, name, "same",
                               tuple(o for o in group if o != name)) for name in group]
        flags += sorted(found, key=lambda f: order[f.submission])
    return flags


def feedback_text(row: SubmissionResult) -> str:
    """Return the Markdown feedback for one learner, in the exercises' language."""
    ids = list(row.scores)
    language = get(ids[0]).language if ids else "en"
    lines = [f"# {text('feedback_title', language, name=row.submission)}", "",
             f"- {text('status', language, status=row.status)}",
             f"- {text('score', language, total=row.total, count=len(ids))}"]
    if row.reason:
        lines.append(f"- {row.reason}")
    for exercise_id in ids:
        score = row.scores[exercise_id]
        lines += ["", f"## {text('exercise', language, id=exercise_id, score=score)}",
                  ""]
        lines += [f"- {text}" for text in row.feedback.get(exercise_id, [])]
    return "\n".join(lines) + "\n"


def write_feedback(rows: Sequence[SubmissionResult],
                   out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write ``feedback/<submission>.md`` for every row; return the paths."""
    folder = Path(out_dir) / "feedback"
    written = []
    for row in rows:
        path = folder / f"{row.submission.replace('/', '__')}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(feedback_text(row), encoding="utf-8")
        written.append(path)
    return written


def text_width(text: str) -> int:
    """Return how many columns ``text`` takes in a terminal.

    A wide or full-width character (Chinese, Japanese, Korean: Unicode's
    East Asian Width ``W`` or ``F``) takes two, a combining mark none, any
    other one; ``len`` would count each one.
    """
    return sum(0 if unicodedata.combining(c)
               else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _left(text: str, width: int) -> str:
    return text + " " * max(0, width - text_width(text))


def _right(text: str, width: int) -> str:
    return " " * max(0, width - text_width(text)) + text


def summary_text(rows: Sequence[SubmissionResult]) -> str:
    """Return a plain-text table of the scores, then the reasons and the flags.

    Every column is as wide as its heading, so scores stay under long
    exercise names; a topic prefix that every id shares (``bayes.``) is
    said once above the table instead of in every heading. Widths are
    counted in a terminal's columns (:func:`text_width`), so that the table
    lines up under Chinese names too.
    """
    if not rows:
        return "no submissions"
    ids = list(rows[0].scores)
    topics = {i.split(".", 1)[0] for i in ids}
    one_topic = len(topics) == 1 and all("." in i for i in ids)
    shared = f"{topics.pop()}." if one_topic else ""
    heads = [i[len(shared):] for i in ids]
    widths = [max(6, text_width(h)) for h in heads]
    width = max(10, *(text_width(r.submission) for r in rows))
    lines = [f"exercises: {shared}<name>"] if shared else []
    lines.append(f"{_left('submission', width)}  "
                 + "  ".join(_right(h, w) for h, w in zip(heads, widths, strict=True))
                 + f"  {'total':>6}  status")
    for row in rows:
        cells = "  ".join(f"{row.scores[i]:>{w}.2f}"
                          for i, w in zip(ids, widths, strict=True))
        lines.append(f"{_left(row.submission, width)}  {cells}  {row.total:>6.2f}  "
                     f"{row.status}")
    reasons = [f"  {r.submission}: {r.reason}" for r in rows if r.reason]
    if reasons:
        lines += ["", "reasons:", *reasons]
    flags = [f"  {f.exercise}: {f.submission}: {f.text()}" for f in class_flags(rows)]
    if flags:
        lines += ["", "flags (for a look; the scores stand):", *flags]
    return "\n".join(lines)


def print_summary(rows: Sequence[SubmissionResult]) -> None:
    """Print :func:`summary_text`."""
    print(summary_text(rows))
