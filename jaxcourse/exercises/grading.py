"""Grade a class's submitted notebooks: one row per submission, one column per exercise.

Usage::

    python -m jaxcourse.exercises.grading submissions/ --out grades/
    python -m jaxcourse.exercises.grading alice.ipynb bob.ipynb --chapter 01_mlp_tfds

Each submission runs in its own process, in a private temporary copy, with a
wall-clock limit for the whole notebook (``--timeout``), a time limit for each
test (``--case-time-limit``) and, on Linux, a memory limit (``--memory-mb``,
enforced with ``RLIMIT_DATA``). That process executes the notebook's code
cells (errors do not stop it), then calls the learner's functions, found by
name, on every test's inputs and reports *what they returned* as plain JSON
data. Everything that decides a score happens in this, the grading process:
the reference outputs are computed before any submission runs, and the
comparison, the scores and the tables are made here. A submission that
crashes, hangs, deletes cells or renames functions still gets a row, with
zeros and the reason. The threat model is described in ``book/for_teachers.md``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .core import (
    GRADING_ENV,
    Observation,
    by_chapter,
    exercise_ids,
    get,
    judge,
    observe_all,
    reference_observations,
)
from .messages import message

__all__ = [
    "GradingIntegrityError",
    "SubmissionResult",
    "grade",
    "main",
    "print_summary",
    "write_tables",
]

MAX_RESULT_BYTES = 20 * 2**20


class GradingIntegrityError(RuntimeError):
    """A submission changed the course's own code: later results are void."""


@dataclass
class SubmissionResult:
    """One row of the table: a submission's score per exercise, and why."""

    submission: str
    scores: dict[str, float]
    status: str  # "graded", "timed out", "crashed" or "unreadable"
    reason: str = ""
    feedback: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        """Sum of the exercise scores."""
        return round(sum(self.scores.values()), 4)

    def to_dict(self) -> dict:
        """Return a JSON-compatible row."""
        return {
            "submission": self.submission,
            "scores": self.scores,
            "total": self.total,
            "status": self.status,
            "reason": self.reason,
            "feedback": self.feedback,
            "seconds": round(self.seconds, 1),
        }


# --------------------------------------------------------------------------
# The child: runs one submission, reports observations
# --------------------------------------------------------------------------


def _limit_memory(megabytes: int) -> None:
    # RLIMIT_DATA (heap and private mappings) rather than RLIMIT_AS: XLA and
    # the thread stacks reserve far more address space than they ever touch,
    # so an address-space limit low enough to matter breaks JAX's start-up.
    if megabytes <= 0:
        return
    try:
        import resource

        limit = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    except (ImportError, ValueError, OSError, AttributeError):
        pass  # not on this platform: documented, the wall-clock limit remains


def _child(notebook: Path, result: Path, ids: list[str], memory_mb: int,
           case_limit: float | None) -> int:
    _limit_memory(memory_mb)
    os.environ[GRADING_ENV] = "1"
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    errors = []
    try:
        nb = nbformat.read(notebook, as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "code"]
    except Exception as err:  # an unreadable notebook still gets a row
        cells, errors = [], [{"cell": -1, "error": type(err).__name__}]
    for index, cell in enumerate(cells):
        outcome = shell.run_cell(cell.source, store_history=False)
        if not outcome.success:
            err = outcome.error_in_exec or outcome.error_before_exec
            errors.append({"cell": index + 1, "error": type(err).__name__})
    report: dict = {"cell_errors": errors, "exercises": {}}
    for exercise_id in ids:
        exercise = get(exercise_id)
        name = exercise.function_name
        if name in shell.user_ns:
            observed = observe_all(exercise, shell.user_ns[name], case_limit)
        else:
            observed = [Observation("missing")] * len(exercise.cases)
        report["exercises"][exercise_id] = [o.to_json() for o in observed]
    partial = result.with_suffix(".partial")
    partial.write_text(json.dumps(report), encoding="utf-8")
    partial.replace(result)
    sys.stdout.flush()
    # Skip interpreter teardown: a learner's atexit hook or thread cannot
    # change the report any more, and exiting is faster.
    os._exit(0)


# --------------------------------------------------------------------------
# The parent: isolation, judging, tables
# --------------------------------------------------------------------------


def _course_fingerprint() -> str:
    """Hash of the reference solutions' and the checkers' source files."""
    import solutions

    digest = hashlib.sha256()
    folders = [Path(solutions.__file__).parent, Path(__file__).parent]
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _names(paths: Sequence[Path]) -> list[str]:
    stems = [p.stem for p in paths]
    return [
        f"{p.parent.name}/{p.stem}" if stems.count(p.stem) > 1 else p.stem
        for p in paths
    ]


def _run_one(path: Path, ids: list[str], timeout: float, memory_mb: int,
             case_limit: float | None) -> tuple[str, dict | None, str]:
    """Run one submission in a fresh process; return (status, report, detail)."""
    with tempfile.TemporaryDirectory(prefix="jaxcourse-grade-") as private:
        work = Path(private) / "work"
        outbox = Path(private) / "outbox"
        work.mkdir()
        outbox.mkdir()
        copy = work / "submission.ipynb"
        shutil.copyfile(path, copy)
        result = outbox / "result.json"
        env = dict(os.environ)
        env.update({
            GRADING_ENV: "1",
            "IPYTHONDIR": str(Path(private) / "ipython"),
            "MPLBACKEND": "Agg",
            "PYTHONHASHSEED": "0",
            "JAX_PLATFORMS": env.get("JAX_PLATFORMS", "cpu"),
        })
        command = [sys.executable, "-m", "jaxcourse.exercises.grading", "--child",
                   str(copy), "--result", str(result), "--memory-mb", str(memory_mb),
                   "--exercises", *ids]
        if case_limit is not None:
            command += ["--case-time-limit", str(case_limit)]
        log_path = Path(private) / "log.txt"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
            try:
                code = process.wait(timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                code = None
            finally:
                # The whole process group: nothing it started outlives it.
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError, AttributeError):
                    process.kill()
                process.wait()
        if timed_out:
            return "timed out", None, message("grading_timeout", seconds=timeout)
        if not result.is_file():
            how = f"exit code {code}" if code is not None and code >= 0 else \
                _signal_name(code or 0)
            return "crashed", None, message("grading_crash", how=how)
        try:
            if result.stat().st_size > MAX_RESULT_BYTES:
                raise ValueError("too large")
            report = json.loads(result.read_text(encoding="utf-8"))
            if not isinstance(report, dict) or not isinstance(
                report.get("exercises"), dict
            ):
                raise ValueError("not a report")
        except (ValueError, OSError) as err:
            return "unreadable", None, message("grading_unreadable", why=str(err)[:80])
        return "graded", report, ""


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
            feedback[exercise_id] = [message("grading_unreadable", why=repr(err)[:80])]
            continue
        scores[exercise_id] = round(result.score, 4)
        feedback[exercise_id] = result.messages
        if observed and observed[0].kind == "missing":
            notes.append(message("missing_function", name=exercise.function_name))
    cells = report.get("cell_errors", [])
    if isinstance(cells, list) and cells:
        listed = ", ".join(
            f"{c.get('cell')} ({c.get('error')})"
            for c in cells[:5] if isinstance(c, dict)
        )
        notes.insert(0, message("grading_cell_errors", cells=listed))
    return scores, feedback, "; ".join(notes)


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
            except (ValueError, KeyError, TypeError, OSError):
                hits = []
        found.update(hits[:1])
    if len(found) != 1:
        raise SystemExit(
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
) -> list[SubmissionResult]:
    """Grade notebooks, each in its own process; return one row per submission.

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

    Returns
    -------
    list of SubmissionResult
        In the order given (folders sorted by file name).
    """
    paths: list[Path] = []
    for item in map(Path, submissions):
        paths += sorted(item.glob("*.ipynb")) if item.is_dir() else [item]
    if not paths:
        raise SystemExit("no notebooks to grade")
    if exercises is None:
        exercises = exercise_ids(chapter or _infer_chapter(paths))
    ids = list(exercises)
    # Exercises on a mesh need their devices before JAX starts, here for the
    # references and, through XLA_FLAGS, in every submission's process.
    needed = max((get(i).devices for i in ids), default=1)
    if needed > 1:
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(needed)
    # The reference outputs, computed before any submission runs.
    expected = {i: reference_observations(get(i)) for i in ids}
    fingerprint = _course_fingerprint()
    rows = []
    for name, path in zip(_names(paths), paths, strict=True):
        started = time.perf_counter()
        status, report, detail = _run_one(path, ids, timeout, memory_mb,
                                          case_time_limit)
        if _course_fingerprint() != fingerprint:
            raise GradingIntegrityError(
                f"grading {path} changed the course's solutions or checkers; "
                "restore them (git checkout) and grade again, that one separately"
            )
        if report is None:
            row = SubmissionResult(name, dict.fromkeys(ids, 0.0), status, detail)
        else:
            scores, feedback, notes = _judge_report(report, ids, expected)
            row = SubmissionResult(name, scores, status, notes, feedback)
        row.seconds = time.perf_counter() - started
        rows.append(row)
    return rows


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


def summary_text(rows: Sequence[SubmissionResult]) -> str:
    """Return a plain-text table of the scores, then the reasons."""
    if not rows:
        return "no submissions"
    ids = list(rows[0].scores)
    width = max(10, *(len(r.submission) for r in rows))
    head = f"{'submission':<{width}}  " + "  ".join(f"{i:>12}" for i in ids)
    lines = [head + f"  {'total':>6}  status"]
    for row in rows:
        cells = "  ".join(f"{row.scores[i]:>12.2f}" for i in ids)
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
    parser.add_argument("--chapter", help="e.g. 01_mlp_tfds (default: inferred)")
    parser.add_argument("--exercises", nargs="+", help="only these exercise ids")
    parser.add_argument("--out", type=Path, default=Path("."),
                        help="folder for grades.csv and grades.json")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds for one whole notebook")
    parser.add_argument("--case-time-limit", type=float, default=None,
                        help="seconds per test (default: each exercise's own)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="memory limit per submission, 0 for none")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.submissions[0], args.result, args.exercises,
                      args.memory_mb, args.case_time_limit)
    rows = grade(args.submissions, chapter=args.chapter, exercises=args.exercises,
                 timeout=args.timeout, case_time_limit=args.case_time_limit,
                 memory_mb=args.memory_mb)
    csv_path, json_path = write_tables(rows, args.out)
    print_summary(rows)
    print(f"\nwrote {csv_path} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
