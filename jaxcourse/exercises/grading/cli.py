"""Grade a class's submitted notebooks: one row per submission, one column per exercise.

Usage::

    python -m jaxcourse.exercises.grading submissions/ --out grades/ --jobs 2
    python -m jaxcourse.exercises.grading alice.ipynb bob.ipynb --chapter 01_mlp

The reference outputs are computed once, before any submission runs. Then
``--jobs`` submissions at a time (default: the number of cores) each run in
a fresh process (:mod:`jaxcourse.exercises.grading.sandbox`) against a private,
read-only copy of the course, with a wall-clock limit (``--timeout``), a
time limit per test (``--case-time-limit``) and, on Linux, a memory limit
(``--memory-mb``), inside bubblewrap's wall
(:mod:`jaxcourse.exercises.grading.isolation`): everything read-only but its own
run folder, the other submissions and ``~/.jax-course`` out of sight, no
network. Where that wall cannot be built the grader refuses, unless
``--no-sandbox`` says to grade without it (one submission at a time, with a
warning). That process reports *what the learner's functions returned* as
plain JSON; everything that decides a score happens here. When a
submission ends, every process it started ends too
(:func:`jaxcourse.processes.end_tree`).

Every submission gets a row, with one status: ``graded``, ``unreadable``
(empty, not JSON, not a notebook), ``crashed``, ``timed out``, ``out of
memory``, ``tampered`` (it tried to write outside its run folder or to
look at other submissions: zero) or ``borrowed`` (an exercise's function is, runs or
copies the course's reference answer: zero for that exercise,
:mod:`jaxcourse.exercises.grading.borrowing`). Rows are appended to
``<out>/rows.jsonl`` as each submission finishes, so an interrupted run
loses nothing; a rerun skips the submissions whose notebook is unchanged
(``--force`` grades all again). ``<out>/feedback/<submission>.md`` holds
every test's message for the learner, in the exercises' language. The
summary and ``grades.json`` end with the class's flags, for the teacher: the
answers that paste the reference, and those two submissions share
(:func:`jaxcourse.exercises.grading.tables.class_flags`). The threat model
is described in ``book/for_teachers.md``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import psutil

from jaxcourse import __version__
from jaxcourse import cli as commandline
from jaxcourse.cli import UsageError, course_commit
from jaxcourse.data.store import sha256_file
from jaxcourse.processes import become_subreaper, reap_adopted
from jaxcourse.progress import Progress

from ..checking.answers import notebook_answers
from ..checking.registry import by_chapter, exercise_ids, get
from . import isolation

# Re-exported (``as``) names live in the modules below; ``grading.<name>``
# keeps reaching them.
from .local import _grade_all as _grade_all
from .local import _judge_report as _judge_report
from .local import _parallel as _parallel
from .local import _readable, use_devices
from .local import _row as _row
from .rows import ROWS, STATUSES, SubmissionResult, _append_row, _load_rows
from .slurm import earlier_rows, grade_on_slurm
from .tables import feedback_text as feedback_text
from .tables import print_summary, write_feedback, write_tables
from .tables import summary_text as summary_text

__all__ = [
    "STATUSES",
    "SubmissionResult",
    "course_stamp",
    "grade",
    "main",
    "print_summary",
    "stamp_text",
    "write_feedback",
    "write_tables",
]


def _names(paths: Sequence[Path]) -> list[str]:
    """Name each notebook by its stem, with as many folders as tell it apart.

    Two notebooks must never share a name: a name keys the row, the run and
    the file it was read from.
    """
    parts = [(*p.resolve().parent.parts, p.stem) for p in paths]
    names = []
    for mine in parts:
        depth = 1
        while depth < len(mine) and any(
                other != mine and other[-depth:] == mine[-depth:] for other in parts):
            depth += 1
        names.append("/".join(mine[-depth:]))
    return names


# --------------------------------------------------------------------------
# The class: parallel, resumable
# --------------------------------------------------------------------------


def _unknown(kind: str, name: str, known: Sequence[str]) -> UsageError:
    """Say that a chapter or exercise does not exist: the nearest name, then all."""
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}? " if near else ""
    return UsageError(f"no {kind} {name!r}: {hint}one of {', '.join(known)}")


def _chosen_exercises(chapter: str | None, exercises: Sequence[str] | None,
                      paths: Sequence[Path]) -> list[str]:
    """Return the exercise ids to grade, checked before anything is graded or written.

    A misspelled ``--chapter`` graded nothing and recorded every submission
    as crashed, and a misspelled ``--exercises`` id ended in a traceback (#67):
    both are refused here with the names that exist.
    """
    chapters = by_chapter()
    if chapter is not None and chapter not in chapters:
        raise _unknown("chapter", chapter, list(chapters))
    if exercises is None:
        return exercise_ids(chapter or _infer_chapter(paths))
    known = chapters[chapter] if chapter is not None else exercise_ids()
    for exercise in exercises:
        if exercise not in known:
            where = f"exercise of {chapter}" if chapter is not None else "exercise"
            # The ids of the topic it names, when it names one: a shorter line.
            topic = [i for i in known if i.split(".")[0] == exercise.split(".")[0]]
            raise _unknown(where, exercise, topic or known)
    return list(exercises)


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
        raise UsageError(
            "cannot tell which chapter these notebooks belong to; pass --chapter "
            f"(one of: {', '.join(chapters)})"
        )
    return found.pop()


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
    sandbox: bool = True,
    progress: bool = True,
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
        Grade as a Slurm job array (:mod:`jaxcourse.exercises.grading.slurm`)
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
    sandbox : bool
        Run each submission inside bubblewrap's wall
        (:mod:`jaxcourse.exercises.grading.isolation`). ``False`` runs them bare,
        one at a time (one array task at a time on Slurm), and says so on
        standard error: only for a machine where the wall cannot be built
        and the learners are trusted.
    progress : bool
        Report each submission as it finishes, with the count and the time
        left, on standard error (:class:`jaxcourse.progress.Progress`: a bar
        on a terminal, one line per submission elsewhere).

    Returns
    -------
    list of SubmissionResult
        In the order given (folders sorted by file name).

    Raises
    ------
    CourseError
        When a submission is to run and the wall cannot be built, here or on
        a Slurm node, and ``sandbox`` is true; nothing ran bare
        (:class:`jaxcourse.cli.MissingToolError`). A
        :class:`jaxcourse.cli.UsageError` when a path given does not exist,
        holds no notebook, or the chapter cannot be told.
    """
    paths: list[Path] = []
    folders: list[Path] = []
    for item in map(Path, submissions):
        if not item.exists():
            raise UsageError(f"no such notebook or folder: {item}")
        if item.is_dir():
            paths += sorted(item.glob("*.ipynb"))
            folders.append(item.resolve())
        else:
            paths.append(item)
            # The file alone, not its folder: that may hold the course itself.
            folders.append(item.resolve())
    # A notebook named twice (its folder and itself) is graded once: its
    # code never runs twice at once, under one name, in two run folders.
    unique: dict[Path, Path] = {}
    for path in paths:
        unique.setdefault(path.resolve(), path)
    paths = list(unique.values())
    if not paths:
        raise UsageError("no notebooks to grade in "
                         + ", ".join(str(s) for s in submissions))
    ids = _chosen_exercises(chapter, exercises, paths)
    language = get(ids[0]).language if ids else "en"
    use_devices(ids)
    if not jobs:
        jobs = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else os.cpu_count() or 1)
    names = _names(paths)
    rows_file = None
    done: dict[str, SubmissionResult] = {}
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        rows_file = Path(out_dir) / ROWS
        if not force:
            done = _load_rows(rows_file, ids)
            if slurm:
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
    meter = Progress(len(todo), "grading") if todo and progress else None

    def report(name: str, row: SubmissionResult) -> None:
        if meter is not None:
            meter.done(name, row.status)

    try:
        _grade_todo(todo, digests, results, rows_file, ids, language, jobs, timeout,
                    memory_mb, case_time_limit, folders, course, slurm, slurm_chunk,
                    slurm_parallel, partition, slurm_options, sandbox, report)
    finally:
        if meter is not None:
            meter.close()
    # Each answer as the notebook writes it, for the class's flags: read here
    # from the file, so a row graded now, on Slurm or by an earlier run has it.
    functions = {i: get(i).function_name for i in ids}
    for name, path in zip(names, paths, strict=True):
        results[name].answers = notebook_answers(path, functions)
    return [results[name] for name in names]


def _grade_todo(todo, digests, results, rows_file, ids, language, jobs, timeout,
                memory_mb, case_time_limit, folders, course, slurm, slurm_chunk,
                slurm_parallel, partition, slurm_options, sandbox, report) -> None:
    """Grade ``todo`` here or on Slurm, calling ``report`` as each row is done."""
    if todo and slurm:
        if rows_file is None:
            raise ValueError("grading on Slurm needs out_dir, on storage the "
                             "nodes share")
        if not sandbox:
            print(isolation.UNSAFE, file=sys.stderr, flush=True)
        _grade_on_slurm(todo, digests, results, rows_file, ids, language, timeout,
                        memory_mb, case_time_limit, folders, course, slurm_chunk,
                        slurm_parallel, partition, slurm_options, sandbox, report)
    elif todo:
        if not sandbox:
            print(isolation.UNSAFE, file=sys.stderr, flush=True)
        # While submissions run, their orphans (double forks, nohup) become our
        # children, not init's, so that they remain in reach. Only then: a
        # caller's own orphans (a browser's helpers, say) are not ours to keep.
        own = {child.pid for child in psutil.Process().children()}
        become_subreaper()
        try:
            _grade_all(todo, digests, results, rows_file, ids, language, jobs,
                       timeout, memory_mb, case_time_limit, folders, course,
                       sandbox, on_row=report)
        finally:
            # Adopted orphans that died last (a wall's inner process) would
            # stay zombies of the caller's process: collect them first.
            reap_adopted(own)
            become_subreaper(False)


def _grade_on_slurm(todo, digests, results, rows_file, ids, language, timeout,
                    memory_mb, case_limit, folders, course, chunk, parallel,
                    partition, options, sandbox, report) -> None:
    def finish(name: str, row: SubmissionResult) -> None:
        results[name] = row
        _append_row(rows_file, row)
        report(name, row)

    numbers = {name: n for n, (name, _) in enumerate(todo)}
    pending = _readable(todo, digests, ids, language, finish)
    if pending:
        grade_on_slurm(pending, numbers, digests, ids=ids, language=language,
                       timeout=timeout, memory_mb=memory_mb, case_limit=case_limit,
                       private=folders, course=course, out_dir=rows_file.parent,
                       chunk=chunk, parallel=parallel, partition=partition,
                       options=options, finish=finish, sandbox=sandbox,
                       progress=report)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; exit codes as :mod:`jaxcourse.cli` says.

    1 when the grading failed (sbatch refused, a timeout), 2 for a bad
    command line or a path that does not exist, 3 when bubblewrap (without
    ``--no-sandbox``) or Slurm (with ``--slurm``) is missing.
    """
    parser = commandline.parser("python -m jaxcourse.exercises.grading",
                                __doc__.splitlines()[0])
    parser.add_argument("submissions", nargs="+", type=commandline.existing_path,
                        help="notebooks, or folders of notebooks")
    parser.add_argument("--chapter", help="e.g. 01_mlp (default: inferred)")
    parser.add_argument("--exercises", nargs="+", help="only these exercise ids")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for rows.jsonl, grades.csv, grades.json "
                             "and feedback/ (made if missing)")
    parser.add_argument("--jobs", type=_positive, default=None,
                        help="submissions graded at once (default: cores)")
    parser.add_argument("--force", action="store_true",
                        help="grade again submissions already in --out")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds for one whole notebook")
    parser.add_argument("--case-time-limit", type=float, default=None,
                        help="seconds per test (default: each exercise's own)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="memory limit per submission, 0 for none")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="grade without bubblewrap's wall, where it cannot be "
                             "built: each submission runs with your permissions, "
                             "one at a time (see book/for_teachers.md)")
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
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file, not a folder")
    return commandline.run(lambda: _main(args))


def course_stamp(submissions: Sequence[str | os.PathLike[str]],
                 changes: bool = False) -> dict:
    """Return the grader's course and the releases the submissions came from.

    ``{"version", "commit", "releases"}``: this course's version and git
    commit (``None`` outside a checkout; with ``changes``, ``+modified`` when
    the checkout differs from it: :func:`jaxcourse.cli.course_commit`), and
    each class release
    (:mod:`jaxcourse.exercises.release` writes ``jaxcourse.release`` into its
    notebooks' metadata) with the submissions that carry it.
    """
    releases: dict[tuple, list[str]] = {}
    for item in map(Path, submissions):
        for path in sorted(item.glob("*.ipynb")) if item.is_dir() else [item]:
            try:
                meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
                found = meta["jaxcourse"]["release"]
                key = (str(found["version"]), found.get("commit"))
            except (ValueError, KeyError, TypeError, OSError, UnicodeDecodeError):
                continue  # not from a release, or not a notebook at all
            releases.setdefault(key, []).append(path.stem)
    return {"version": __version__, "commit": course_commit(changes),
            "releases": [{"version": v, "commit": c, "submissions": names}
                         for (v, c), names in releases.items()]}


def stamp_text(stamp: dict) -> str:
    """Say which course graded, and from which releases the notebooks came."""
    lines = [f"graded with the JAX course {stamp['version']} "
             f"(commit {stamp['commit'] or 'unknown: not a git checkout'})"]
    for release in stamp["releases"]:
        count = len(release["submissions"])
        commit = release["commit"] or "unknown"
        lines.append(f"{count} submission{'s' * (count != 1)} from the class release "
                     f"of {release['version']} (commit {commit})")
        if release["version"] != stamp["version"]:
            lines.append("  not the grader's version: the exercises may differ")
    return "\n".join(lines)


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text}")
    return number


def _main(args: argparse.Namespace) -> int:
    rows = grade(args.submissions, chapter=args.chapter,
                 exercises=args.exercises, timeout=args.timeout,
                 case_time_limit=args.case_time_limit,
                 memory_mb=args.memory_mb, jobs=args.jobs, out_dir=args.out,
                 force=args.force, slurm=args.slurm, slurm_chunk=args.chunk,
                 slurm_parallel=args.parallel, partition=args.partition,
                 slurm_options=args.sbatch_option, sandbox=not args.no_sandbox)
    stamp = course_stamp(args.submissions, changes=True)
    csv_path, json_path = write_tables(rows, args.out, course=stamp)
    write_feedback(rows, args.out)
    print_summary(rows)
    print(f"\n{stamp_text(stamp)}")
    print(f"\nwrote {csv_path}, {json_path} and {args.out / 'feedback'}/")
    if args.no_sandbox:  # said before grading, and again under the table
        print(f"\n{isolation.UNSAFE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
