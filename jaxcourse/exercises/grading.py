"""Grade a class's submitted notebooks: one row per submission, one column per exercise.

Usage::

    python -m jaxcourse.exercises.grading submissions/ --out grades/ --jobs 2
    python -m jaxcourse.exercises.grading alice.ipynb bob.ipynb --chapter 01_mlp

The reference outputs are computed once, before any submission runs. Then
``--jobs`` submissions at a time (default: the number of cores) each run in
a fresh process (:mod:`jaxcourse.exercises.sandbox`) against a private,
read-only copy of the course, with a wall-clock limit (``--timeout``), a
time limit per test (``--case-time-limit``) and, on Linux, a memory limit
(``--memory-mb``). That process reports *what the learner's functions
returned* as plain JSON; everything that decides a score happens here. When
a submission ends, every process it started ends too
(:func:`jaxcourse.processes.end_tree`).

Every submission gets a row, with one status: ``graded``, ``unreadable``
(empty, not JSON, not a notebook), ``crashed``, ``timed out``, ``out of
memory`` or ``tampered`` (it tried to write to the course or to look at
other submissions: zero). Rows are appended to ``<out>/rows.jsonl`` as each
submission finishes, so an interrupted run loses nothing; a rerun skips the
submissions whose notebook is unchanged (``--force`` grades all again).
``<out>/feedback/<submission>.md`` holds every test's message for the
learner, in the exercises' language. The threat model is described in
``book/for_teachers.md``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jaxcourse import CourseError
from jaxcourse.course import topic as course_topic
from jaxcourse.data.store import sha256_file
from jaxcourse.processes import become_subreaper

from .judging import judge, reference_observations
from ..messages import message
from .observe import Observation
from .registry import by_chapter, exercise_ids, get
from .runner import (
    Course,
    Run,
    Settings,
    default_course,
    run_one,
    text,
    unreadable_reason,
)

__all__ = [
    "STATUSES",
    "SubmissionResult",
    "grade",
    "main",
    "print_summary",
    "write_feedback",
    "write_tables",
]

STATUSES = ("graded", "unreadable", "crashed", "timed out", "out of memory",
            "tampered")
_ROWS = "rows.jsonl"


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


def _names(paths: Sequence[Path]) -> list[str]:
    stems = [p.stem for p in paths]
    return [
        f"{p.parent.name}/{p.stem}" if stems.count(p.stem) > 1 else p.stem
        for p in paths
    ]


def _judge_report(
    report: dict, ids: list[str], expected: dict
) -> tuple[dict, dict, str]:
    scores, feedback, notes = {}, {}, []
    for exercise_id in ids:
        exercise = get(exercise_id)
        try:
            observed = [Observation.from_json(o)
                        for o in report["exercises"][exercise_id]]
            result = judge(exercise, observed, expected[exercise_id])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            scores[exercise_id] = 0.0
            feedback[exercise_id] = [message("grading_unreadable", exercise.language,
                                                 why=repr(err)[:80])]
            continue
        scores[exercise_id] = round(result.score, 4)
        feedback[exercise_id] = result.messages
        if observed and observed[0].kind == "missing":
            notes.append(message("missing_function", exercise.language,
                                 name=exercise.function_name))
    cells = report.get("cell_errors", [])
    if isinstance(cells, list) and cells:
        language = get(ids[0]).language if ids else "en"
        # "code cell 3 raised SyntaxError": the cell's number, not a count.
        listed = "; ".join(
            message("grading_cell_error", language, cell=c.get("cell"),
                    error=c.get("error"))
            for c in cells[:5] if isinstance(c, dict)
        )
        notes.insert(0, listed)
    return scores, feedback, "; ".join(notes)


def _row(name: str, path: Path, digest: str, run: Run, settings: Settings,
         expected: dict) -> SubmissionResult:
    ids, language = settings.ids, settings.language
    zeros = dict.fromkeys(ids, 0.0)
    if run.attempts:
        kind, _, where = run.attempts[0].partition(" ")
        where = Path(where).name or where
        key = "tamper_read" if kind == "read" else "tamper_write"
        row = SubmissionResult(name, zeros, "tampered",
                               text(key, language, path=where))
    elif run.report is None:
        row = SubmissionResult(name, zeros, run.status, run.detail)
    else:
        scores, feedback, notes = _judge_report(run.report, ids, expected)
        status = "graded"
        cells = run.report.get("cell_errors")
        cells = cells if isinstance(cells, list) else []
        memory = [c for c in cells
                  if isinstance(c, dict) and c.get("error") == "MemoryError"]
        if memory:
            # The functions are still observed and scored: the row says that
            # the notebook hit the limit, the scores what the checks saw.
            status = "out of memory"
            where = text("oom_cells", language,
                          cells=", ".join(str(c.get("cell")) for c in memory))
            notes = "; ".join(filter(None, [
                text("oom", language, mb=settings.memory_mb, where=where), notes]))
        row = SubmissionResult(name, scores, status, notes, feedback)
    row.sha256, row.timings = digest, run.timings
    row.seconds = run.ended - run.started
    return row


# --------------------------------------------------------------------------
# The class: parallel, resumable
# --------------------------------------------------------------------------


def _infer_chapter(paths: Sequence[Path]) -> str:
    chapters = list(by_chapter())
    found = set()
    for path in paths:
        hits = [c for c in chapters if c in path.name]
        if not hits:
            try:
                meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
                origin = meta["jaxcourse"]["generated_from"]
                hits = [c for c in chapters if c in origin]
            except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError):
                hits = []
        found.update(hits[:1])
    if len(found) != 1:
        raise SystemExit(
            "cannot tell which chapter these notebooks belong to; pass --chapter "
            f"(one of: {', '.join(chapters)})"
        )
    return found.pop()


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


def grade(
    submissions: Sequence[str | os.PathLike[str]],
    *,
    chapter: str | None = None,
    exercises: Sequence[str] | None = None,
    timeout: float = 300.0,
    case_time_limit: float | None = None,
    memory_mb: int = 4096,
    jobs: int | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
    course: Sequence[str | os.PathLike[str]] | None = None,
    slurm: bool = False,
    slurm_chunk: int = 1,
    slurm_parallel: int | None = None,
    partition: str | None = None,
    slurm_options: Sequence[str] = (),
) -> list[SubmissionResult]:
    """Grade notebooks, ``jobs`` at a time; return one row per submission.

    Parameters
    ----------
    submissions : sequence of path-like
        Notebook files, or folders whose ``*.ipynb`` are all graded.
    chapter : str, optional
        The chapter whose exercises are graded; inferred from the file names
        (or the notebooks' metadata) when omitted.
    exercises : sequence of str, optional
        Grade only these exercise ids.
    timeout : float
        Wall-clock seconds for one whole submission.
    case_time_limit : float, optional
        Seconds per test; by default each exercise's own limit.
    memory_mb : int
        Memory limit of a submission's process (``RLIMIT_DATA``, Linux); 0
        for none.
    jobs : int, optional
        Submissions graded at once; by default the number of cores.
    out_dir : path-like, optional
        Folder for ``rows.jsonl``, appended to as each submission finishes;
        submissions already graded there with an unchanged notebook are not
        graded again. ``None``: nothing is written.
    force : bool
        Grade every submission again, even those already in ``out_dir``.
    course : sequence of path-like, optional
        The folders of course code that submissions must not change and get
        a read-only copy of (default: ``jaxcourse`` and ``solutions``).
    slurm : bool
        Grade as a Slurm job array (:mod:`jaxcourse.exercises.grading_slurm`)
        instead of ``jobs`` local processes; needs ``out_dir``, on storage
        the nodes share. The rows are the same.
    slurm_chunk : int
        Submissions per array task.
    slurm_parallel : int, optional
        At most this many array tasks at once.
    partition : str, optional
        The Slurm partition (default: the cluster's default).
    slurm_options : sequence of str
        More ``sbatch`` options, such as ``--account=...``.

    Returns
    -------
    list of SubmissionResult
        In the order given (folders sorted by file name).
    """
    paths: list[Path] = []
    folders: list[Path] = []
    for item in map(Path, submissions):
        if item.is_dir():
            paths += sorted(item.glob("*.ipynb"))
            folders.append(item.resolve())
        else:
            paths.append(item)
            # The file alone, not its folder: that may hold the course itself.
            folders.append(item.resolve())
    if not paths:
        raise SystemExit("no notebooks to grade")
    if exercises is None:
        exercises = exercise_ids(chapter or _infer_chapter(paths))
    ids = list(exercises)
    language = get(ids[0]).language if ids else "en"
    # Exercises on a mesh need their devices before JAX starts, here for the
    # references and, through XLA_FLAGS, in every submission's process.
    needed = max((get(i).devices for i in ids), default=1)
    if needed > 1:
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(needed)
    if not jobs:
        jobs = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else os.cpu_count() or 1)
    names = _names(paths)
    rows_file = None
    done: dict[str, SubmissionResult] = {}
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        rows_file = Path(out_dir) / _ROWS
        if not force:
            done = _load_rows(rows_file, ids)
            if slurm:
                from .grading_slurm import earlier_rows

                # Rows that the tasks of an interrupted --slurm run finished.
                for name, row in earlier_rows(Path(out_dir), ids).items():
                    if name not in done or done[name].sha256 != row["sha256"]:
                        done[name] = SubmissionResult.from_dict(row)
                        _append_row(rows_file, done[name])
    digests = {name: sha256_file(path)
               for name, path in zip(names, paths, strict=True)}
    results: dict[str, SubmissionResult] = {}
    todo = []
    for name, path in zip(names, paths, strict=True):
        if name in done and done[name].sha256 == digests[name]:
            results[name] = done[name]
        else:
            todo.append((name, path))
    if todo and slurm:
        if rows_file is None:
            raise ValueError("grading on Slurm needs out_dir, on storage the "
                             "nodes share")
        _grade_on_slurm(todo, digests, results, rows_file, ids, language, timeout,
                        memory_mb, case_time_limit, folders, course, slurm_chunk,
                        slurm_parallel, partition, slurm_options)
    elif todo:
        # While submissions run, their orphans (double forks, nohup) become our
        # children, not init's, so that they remain in reach. Only then: a
        # caller's own orphans (a browser's helpers, say) are not ours to keep.
        become_subreaper()
        try:
            _grade_all(todo, digests, results, rows_file, ids, language, jobs,
                       timeout, memory_mb, case_time_limit, folders, course)
        finally:
            become_subreaper(False)
    return [results[name] for name in names]


def _readable(todo, digests, ids, language, finish) -> list:
    """Finish every unreadable submission of ``todo``; return the others."""
    pending = []
    for name, path in todo:
        reason = unreadable_reason(path, language)
        if reason is None:
            pending.append((name, path))
        else:
            finish(name, SubmissionResult(name, dict.fromkeys(ids, 0.0), "unreadable",
                                          reason, sha256=digests[name]))
    return pending


def _grade_on_slurm(todo, digests, results, rows_file, ids, language, timeout,
                    memory_mb, case_limit, folders, course, chunk, parallel,
                    partition, options) -> None:
    from .grading_slurm import grade_on_slurm

    def finish(name: str, row: SubmissionResult) -> None:
        results[name] = row
        _append_row(rows_file, row)

    numbers = {name: n for n, (name, _) in enumerate(todo)}
    pending = _readable(todo, digests, ids, language, finish)
    if pending:
        grade_on_slurm(pending, numbers, digests, ids=ids, language=language,
                       timeout=timeout, memory_mb=memory_mb, case_limit=case_limit,
                       private=folders, course=course, out_dir=rows_file.parent,
                       chunk=chunk, parallel=parallel, partition=partition,
                       options=options, finish=finish)


def _grade_all(todo, digests, results, rows_file, ids, language, jobs, timeout,
               memory_mb, case_limit, folders, course) -> None:
    # The reference outputs, computed before any submission runs.
    expected = {i: reference_observations(get(i)) for i in ids}
    topics = sorted({course_topic(i.split('.', 1)[0]).module for i in ids})
    with tempfile.TemporaryDirectory(prefix="jaxcourse-grade-") as root:
        settings = Settings(
            ids=ids, modules=["jax", "numpy", *topics], timeout=timeout,
            memory_mb=memory_mb, case_limit=case_limit, root=Path(root),
            private=folders, course=Course(course or default_course()),
            language=language,
            backup=(rows_file.parent if rows_file is not None
                    else Path(tempfile.gettempdir())) / "jaxcourse-course-changes",
        )

        def finish(name: str, row: SubmissionResult) -> None:
            results[name] = row
            if rows_file is not None:
                _append_row(rows_file, row)

        pending = _readable(todo, digests, ids, language, finish)
        rerun = _parallel(pending, jobs, settings, expected, digests, finish)
        # Submissions that ran while the course changed: one at a time now,
        # so that the one that changes it again is known for sure.
        if rerun:
            left = _parallel(rerun, 1, settings, expected, digests, finish)
            assert not left, "one at a time, every change has one culprit"


def _parallel(pending, jobs, settings, expected, digests, finish) -> list:
    """Grade ``pending``, ``jobs`` at a time; return those to grade again alone.

    After each submission the course is fingerprinted. A change is restored
    and blamed on the submission that ran since the last clean look; if
    several did, they are returned, to be graded again one at a time (with
    ``jobs=1`` the next submission starts only after that look, so the
    culprit is always known).
    """
    running: dict[str, tuple[float, float | None]] = {}
    state = {"last_clean": time.time()}
    blamed: dict[str, list[Path]] = {}
    suspects: set[str] = set()
    rerun = []
    paths = dict(pending)

    def work(number: int, name: str, path: Path) -> Run:
        running[name] = (time.time(), None)
        return run_one(path, number, settings)

    def done(name: str, run: Run) -> None:
        running[name] = (running[name][0], run.ended)
        changed = settings.course.changed()
        now = time.time()
        if changed:
            # Restore first, then find who ran since the last clean look.
            settings.course.restore(changed, settings.backup)
            # (list(): the workers add entries while we read.)
            during = [n for n, (start, end) in list(running.items())
                      if end is None or end >= state["last_clean"]]
            if len(during) == 1:
                blamed[during[0]] = changed
            else:  # none: changed from outside; several: grade them again
                suspects.update(during)
        state["last_clean"] = now
        if name in suspects:
            rerun.append((name, paths[name]))
            return
        row = _row(name, paths[name], digests[name], run, settings, expected)
        if name in blamed:
            files = ", ".join(p.name for p in blamed[name])
            row = SubmissionResult(
                name, dict.fromkeys(settings.ids, 0.0), "tampered",
                text("tamper_changed", settings.language, files=files),
                sha256=digests[name], seconds=row.seconds, timings=row.timings,
            )
        finish(name, row)

    if jobs <= 1:
        for number, (name, path) in enumerate(pending):
            done(name, work(number, name, path))
        return rerun
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(work, n, name, path): name
                   for n, (name, path) in enumerate(pending)}
        for future in concurrent.futures.as_completed(futures):
            done(futures[future], future.result())
    return rerun


# --------------------------------------------------------------------------
# Tables, feedback, summary
# --------------------------------------------------------------------------


def write_tables(rows: Sequence[SubmissionResult], out_dir: str | os.PathLike[str],
                 stem: str = "grades") -> tuple[Path, Path]:
    """Write ``<stem>.csv`` and ``<stem>.json`` (submission × exercise → score)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ids = list(rows[0].scores) if rows else []
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", *ids, "total", "status", "reason"])
        for row in rows:
            writer.writerow([row.submission, *(f"{row.scores[i]:g}" for i in ids),
                             f"{row.total:g}", row.status, row.reason])
    json_path.write_text(
        json.dumps({"exercises": ids, "submissions": [r.to_dict() for r in rows]},
                   indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return csv_path, json_path


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


def summary_text(rows: Sequence[SubmissionResult]) -> str:
    """Return a plain-text table of the scores, then the reasons.

    Every column is as wide as its heading, so scores stay under long
    exercise names; a topic prefix that every id shares (``bayes.``) is
    said once above the table instead of in every heading.
    """
    if not rows:
        return "no submissions"
    ids = list(rows[0].scores)
    topics = {i.split(".", 1)[0] for i in ids}
    one_topic = len(topics) == 1 and all("." in i for i in ids)
    shared = f"{topics.pop()}." if one_topic else ""
    heads = [i[len(shared):] for i in ids]
    widths = [max(6, len(h)) for h in heads]
    width = max(10, *(len(r.submission) for r in rows))
    lines = [f"exercises: {shared}<name>"] if shared else []
    lines.append(f"{'submission':<{width}}  "
                 + "  ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True))
                 + f"  {'total':>6}  status")
    for row in rows:
        cells = "  ".join(f"{row.scores[i]:>{w}.2f}"
                          for i, w in zip(ids, widths, strict=True))
        lines.append(f"{row.submission:<{width}}  {cells}  {row.total:>6.2f}  "
                     f"{row.status}")
    reasons = [f"  {r.submission}: {r.reason}" for r in rows if r.reason]
    if reasons:
        lines += ["", "reasons:", *reasons]
    return "\n".join(lines)


def print_summary(rows: Sequence[SubmissionResult]) -> None:
    """Print :func:`summary_text`."""
    print(summary_text(rows))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", nargs="+", type=Path,
                        help="notebooks, or folders of notebooks")
    parser.add_argument("--chapter", help="e.g. 01_mlp (default: inferred)")
    parser.add_argument("--exercises", nargs="+", help="only these exercise ids")
    parser.add_argument("--out", type=Path, default=Path("."),
                        help="folder for rows.jsonl, grades.csv, grades.json "
                             "and feedback/")
    parser.add_argument("--jobs", type=int, default=None,
                        help="submissions graded at once (default: cores)")
    parser.add_argument("--force", action="store_true",
                        help="grade again submissions already in --out")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds for one whole notebook")
    parser.add_argument("--case-time-limit", type=float, default=None,
                        help="seconds per test (default: each exercise's own)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="memory limit per submission, 0 for none")
    group = parser.add_argument_group(
        "Slurm", "grade as a job array on a Slurm cluster (--out on shared storage)")
    group.add_argument("--slurm", action="store_true",
                       help="submit the class with sbatch instead of grading here")
    group.add_argument("--chunk", type=int, default=1,
                       help="submissions per array task (default 1)")
    group.add_argument("--parallel", type=int, default=None,
                       help="at most this many array tasks at once")
    group.add_argument("--partition", help="the partition (default: the cluster's)")
    group.add_argument("--sbatch-option", action="append", default=[],
                       metavar="OPTION",
                       help="another sbatch option, such as "
                            "--sbatch-option=--account=cs101")
    args = parser.parse_args(argv)
    try:
        rows = grade(args.submissions, chapter=args.chapter,
                     exercises=args.exercises, timeout=args.timeout,
                     case_time_limit=args.case_time_limit,
                     memory_mb=args.memory_mb, jobs=args.jobs, out_dir=args.out,
                     force=args.force, slurm=args.slurm, slurm_chunk=args.chunk,
                     slurm_parallel=args.parallel, partition=args.partition,
                     slurm_options=args.sbatch_option)
    except CourseError as err:  # no Slurm here, sbatch refused, a job timed out
        print(f"error: {err}", file=sys.stderr)
        return 1
    csv_path, json_path = write_tables(rows, args.out)
    write_feedback(rows, args.out)
    print_summary(rows)
    print(f"\nwrote {csv_path}, {json_path} and {args.out / 'feedback'}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
