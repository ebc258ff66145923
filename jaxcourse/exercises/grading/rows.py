"""The grader's rows: one submission's scores and status, and the file of rows.

What the local grader (:mod:`jaxcourse.exercises.grading.cli`) and the Slurm path
(:mod:`jaxcourse.exercises.grading.slurm`) share at the bottom: the row
itself (:class:`SubmissionResult`, with the statuses it may have) and
``rows.jsonl``, appended to one row at a time as each submission finishes,
so that an interrupted run loses nothing, and read back by a rerun.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["ROWS", "STATUSES", "SubmissionResult"]

STATUSES = ("graded", "unreadable", "crashed", "timed out", "out of memory",
            "tampered", "borrowed")
#: The file of rows in a grading folder.
ROWS = "rows.jsonl"


@dataclass
class SubmissionResult:
    """One row of the table: a submission's score per exercise, and why."""

    submission: str
    scores: dict[str, float]
    status: str  # one of STATUSES
    reason: str = ""
    feedback: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0
    sha256: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    # Exercise id -> the digest of the learner's function as the notebook
    # writes it (jaxcourse.exercises.checking.answers), "" where it defines none: what
    # the class's flags compare.
    answers: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """Sum of the exercise scores."""
        return round(sum(self.scores.values()), 4)

    def to_dict(self) -> dict:
        """Return a JSON-compatible row."""
        row = asdict(self)
        row["total"] = self.total
        row["seconds"] = round(self.seconds, 1)
        row["timings"] = {k: round(v, 2) for k, v in self.timings.items()}
        return row

    @classmethod
    def from_dict(cls, row: dict) -> SubmissionResult:
        """Rebuild a row written by :meth:`to_dict`."""
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in row.items() if k in names})


def _load_rows(rows_file: Path, ids: list[str]) -> dict[str, SubmissionResult]:
    """Rows from an earlier run for the same exercises; a torn last line is skipped."""
    done: dict[str, SubmissionResult] = {}
    if not rows_file.is_file():
        return done
    for line in rows_file.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = SubmissionResult.from_dict(json.loads(line))
        except (ValueError, TypeError):
            continue  # the line an interrupted run was writing
        if list(row.scores) == ids:
            done[row.submission] = row
    return done


def _append_row(rows_file: Path, row: SubmissionResult) -> None:
    # One write per row, flushed to disk: a run stopped at any moment leaves
    # whole rows and at most one torn last line, which a rerun ignores.
    line = json.dumps(row.to_dict(), ensure_ascii=False) + "\n"
    with contextlib.suppress(OSError), open(rows_file, "rb") as existing:
        existing.seek(-1, os.SEEK_END)
        if existing.read(1) != b"\n":
            line = "\n" + line  # after a torn line: start a fresh one
    with open(rows_file, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
