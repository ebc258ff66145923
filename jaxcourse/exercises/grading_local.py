"""Grade submissions on this machine: each in its sandbox, judged here, in parallel.

The part of the grader that turns runs into rows: :func:`_row` judges what
one submission's process reported (:func:`jaxcourse.exercises.runner.run_one`)
against the reference outputs, and :func:`_grade_all` grades a list of
submissions ``jobs`` at a time, fingerprinting the course after each one to
blame whoever changed it. The Slurm path
(:mod:`jaxcourse.exercises.grading_slurm`) grades each of its chunks with
:func:`_row` too, and the submissions it cannot blame for sure with
:func:`_grade_all`, one at a time.
"""

from __future__ import annotations

import concurrent.futures
import tempfile
import time
from pathlib import Path

from jaxcourse.course import topic as course_topic
from jaxcourse.devices import use_cpu_devices

from ..messages import message
from .grading_rows import SubmissionResult, _append_row
from .judging import judge, reference_observations
from .observe import Observation
from .registry import get
from .runner import (
    Course,
    Run,
    Settings,
    default_course,
    run_one,
    text,
    unreadable_reason,
)

__all__ = ["expected_outputs", "sandbox_modules", "use_devices"]


def use_devices(ids: list[str]) -> None:
    """Give JAX the simulated devices that the exercises ``ids`` need.

    Exercises on a mesh need their devices before JAX starts, here for the
    references and, through ``XLA_FLAGS``, in every submission's process.
    """
    needed = max((get(i).devices for i in ids), default=1)
    if needed > 1:
        use_cpu_devices(needed)


def expected_outputs(ids: list[str]) -> dict[str, list[Observation]]:
    """Return the reference outputs of the exercises ``ids``, by id."""
    return {i: reference_observations(get(i)) for i in ids}


def sandbox_modules(ids: list[str]) -> list[str]:
    """Return the modules a submission's process imports before its cells."""
    topics = sorted({course_topic(i.split(".", 1)[0]).module for i in ids})
    return ["jax", "numpy", *topics]


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


def _grade_all(todo, digests, results, rows_file, ids, language, jobs, timeout,
               memory_mb, case_limit, folders, course) -> None:
    # The reference outputs, computed before any submission runs.
    expected = expected_outputs(ids)
    with tempfile.TemporaryDirectory(prefix="jaxcourse-grade-") as root:
        settings = Settings(
            ids=ids, modules=sandbox_modules(ids), timeout=timeout,
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
