"""Grade submissions on this machine: each in its sandbox, judged here, in parallel.

The part of the grader that turns runs into rows: :func:`_row` judges what
one submission's process reported (:func:`jaxcourse.exercises.grading.runner.run_one`)
against the reference outputs, and :func:`_grade_all` grades a list of
submissions ``jobs`` at a time, fingerprinting the course after each one.
Inside the wall (:mod:`jaxcourse.exercises.grading.isolation`) no submission can
change the course, so a change came from elsewhere: it is restored and
blamed on no one. Without the wall the submissions run one at a time, so
that a change is blamed on the one that ran, and no submission's code ever
runs twice. The Python environment's package folders (site-packages) are
fingerprinted too (:class:`Environment`, nbgrader's fingerprint): a change
there cannot be restored, and runs in every later process, the grader's
included, so grading stops (:class:`EnvironmentChangedError`). The Slurm
path (:mod:`jaxcourse.exercises.grading.slurm`) grades each of its chunks
with :func:`_row` too.
"""

from __future__ import annotations

import concurrent.futures
import re
import sys
import tempfile
from pathlib import Path

from jaxcourse import CourseError
from jaxcourse.cli import MissingToolError
from jaxcourse.course import topic as course_topic
from jaxcourse.devices import use_cpu_devices

from ...messages import message
from ..checking.judging import judge, reference_observations
from ..checking.library_answers import library_answers
from ..checking.observe import Observation
from ..checking.registry import get
from ..nbgrader.preprocessor import changed_paths, environment_fingerprint
from . import isolation
from .borrowing import verdicts
from .rows import SubmissionResult, _append_row
from .runner import (
    Course,
    Run,
    Settings,
    default_course,
    run_one,
    text,
    unreadable_reason,
)

__all__ = ["Environment", "EnvironmentChangedError", "environment_folders",
           "expected_outputs", "sandbox_modules", "use_devices"]


class EnvironmentChangedError(CourseError):
    """The Python environment changed while grading: grading stopped."""


def environment_folders() -> list[str]:
    """Return this Python's package folders (site-packages): what grading watches.

    nbgrader's scoring watches the same ones
    (:func:`jaxcourse.exercises.authoring.nbgrader.environment_folders`).
    """
    # Imported here: the authoring package is a second or so of imports that
    # only this list needs.
    from ..authoring.nbgrader import environment_folders as folders

    return folders()


class Environment:
    """The Python environment's package folders, as they were when grading began.

    Fingerprinted by nbgrader's own function
    (:func:`~jaxcourse.exercises.nbgrader.preprocessor.environment_fingerprint`:
    every file's size and time, ``__pycache__`` left out): a ``.pth`` or a
    module written there, or a package installed or upgraded, runs in every
    later process, each submission's and the grader's. On the course's own
    environment (57,000 files, 8 GB) a fingerprint takes 0.4 to 0.6 s, about
    1.3 s on a busy two-core machine: reading every byte would take minutes.
    """

    def __init__(self, folders: list[str] | None = None,
                 snapshot: dict[str, str] | None = None) -> None:
        self.folders = environment_folders() if folders is None else list(folders)
        self.snapshot = (environment_fingerprint(self.folders) if snapshot is None
                         else snapshot)

    def changed(self) -> list[str]:
        """Return the files added, removed or changed since the snapshot."""
        return changed_paths(self.snapshot, environment_fingerprint(self.folders))

    def check(self, last: str | None, bare: bool) -> None:
        """Raise :class:`EnvironmentChangedError` if anything changed.

        ``last`` names the submission that last finished (``None``: none
        yet); ``bare``: it ran without the wall, and could have written there.
        """
        changed = self.changed()
        if changed:
            raise EnvironmentChangedError(environment_changed_text(changed, last, bare))


def environment_changed_text(changed: list[str], last: str | None, bare: bool) -> str:
    """Say, in one paragraph, that the environment changed and what to do."""
    listed = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
    when = f"found after {last}" if last else "found before any submission ran"
    who = "someone installed or changed a package during the run"
    if not bare:
        who = f"no submission can write there (each runs inside the wall), so {who}"
    elif last:
        who = f"{last} ran without the wall and may have written it, or {who}"
    return (f"the course's Python environment changed while grading ({listed}; "
            f"{when}): a file in its package folders (site-packages; "
            "a .pth there runs in every later process, the grader's included) "
            "changes what every later submission, and the grader itself, run. "
            f"Grading stopped; {who}. The rows finished before are kept in "
            "rows.jsonl (with --out). Remove or reinstall what changed, then run "
            "the same command again: only the submissions left are graded.")


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
    # An answer that is, runs or copies a reference answer scores 0, whatever
    # it returned (jaxcourse.exercises.grading.borrowing).
    for exercise_id, sentence in verdicts(report, ids).items():
        scores[exercise_id], feedback[exercise_id] = 0.0, [sentence]
        notes.append(f"{exercise_id}: {sentence}")
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


# A folder the grader made with a random name (tempfile.mkdtemp): the grading
# root, a submission's run folder ("0003-k2j4_x9a") or its decoys.
_RANDOM = re.compile(r"^(jaxcourse-grade-|(\d{4})-(hidden-)?)[A-Za-z0-9_]{8}$")


def _stable_name(path: Path, settings: Settings) -> str:
    """Return the name a row gives ``path``: the same on every run and path.

    A file is named by its own name. A folder the grader made under a random
    name (the grading root, a run folder) is named by what does not change:
    the grading folder, or the submission's number. The rows of the local
    grader and of ``--slurm`` then say the same.
    """
    found = _RANDOM.match(path.name)
    if found is None:
        return path.name
    if path == settings.root or found.group(1) == "jaxcourse-grade-":
        return text("folder", settings.language)
    return found.group(2)


def _tamper_reason(attempts: list[str], settings: Settings) -> str:
    """Say what a submission tried, for its row: the worst kind, its files.

    A change to the course's code first, then a write anywhere else outside
    its run folder (the environment, ``~/.jax-course``, another submission),
    then a look outside it; each names up to five files.
    """
    kinds: dict[str, list[str]] = {"tamper_write": [], "tamper_outside": [],
                                   "tamper_read": []}
    for line in attempts:
        kind, _, where = line.partition(" ")
        path = Path(where)
        if kind == "read":
            key = "tamper_read"
        elif any(path == f or f in path.parents for f in settings.course.folders):
            key = "tamper_write"
        else:
            key = "tamper_outside"
        name = _stable_name(path, settings) or where
        if name not in kinds[key]:
            kinds[key].append(name)
    key = next(k for k, names in kinds.items() if names)
    names = kinds[key]
    listed = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return text(key, settings.language, path=listed)


def _add_library_answers(report: dict, path: Path, ids: list[str]) -> None:
    """Add to ``report`` the answers that use a library function returning them.

    Read here, from the notebook's file, in the grading process: nothing the
    submission ran can change it (:mod:`jaxcourse.exercises.checking.library_answers`).
    """
    import nbformat

    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception:  # unreadable: its row already says so
        return
    sources = [c.source for c in notebook.cells if c.cell_type == "code"]
    exercises = {exercise_id: get(exercise_id).function_name for exercise_id in ids}
    found = library_answers(sources, exercises)
    if not found:
        return
    borrowed = report.get("borrowed")
    borrowed = borrowed if isinstance(borrowed, dict) else {}
    for exercise_id, function in found.items():
        borrowed.setdefault(exercise_id, {"how": "library", "reference": function})
    report["borrowed"] = borrowed


def _row(name: str, path: Path, digest: str, run: Run, settings: Settings,
         expected: dict) -> SubmissionResult:
    ids, language = settings.ids, settings.language
    zeros = dict.fromkeys(ids, 0.0)
    if run.attempts:
        row = SubmissionResult(name, zeros, "tampered",
                               _tamper_reason(run.attempts, settings))
    elif run.report is None:
        row = SubmissionResult(name, zeros, run.status, run.detail)
    else:
        _add_library_answers(run.report, path, ids)
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
        if verdicts(run.report, ids):
            status = "borrowed"  # over "out of memory": the reason says both
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
               memory_mb, case_limit, folders, course, sandbox=True,
               on_row=None, environment=None) -> None:
    def finish(name: str, row: SubmissionResult) -> None:
        results[name] = row
        if rows_file is not None:
            _append_row(rows_file, row)
        if on_row is not None:  # the grader's progress
            on_row(name, row)

    pending = _readable(todo, digests, ids, language, finish)
    if not pending:
        return
    if sandbox:
        reason = isolation.unavailable_reason()
        if reason is not None:  # before anything runs, or is computed
            raise MissingToolError(isolation.refusal(reason))
    else:
        # The course's fingerprint is then the only net for a write that goes
        # around the guard: one at a time, whoever changed the course is the
        # one that ran, and nobody's code has to run a second time to find out.
        jobs = 1
    # The environment as it is before anything runs, the references included.
    environment = environment or Environment()
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
            isolated=sandbox,
            hidden=[rows_file.parent] if rows_file is not None else [],
        )
        _parallel(pending, jobs, settings, expected, digests, finish, environment)


def _parallel(pending, jobs, settings, expected, digests, finish,
              environment=None) -> None:
    """Grade ``pending``, ``jobs`` at a time, handing each row to ``finish``.

    After each submission the course is fingerprinted, and a change restored.
    Without the wall (``jobs`` is then 1) it is blamed on the submission that
    just ran: ``tampered``. Inside the wall no submission can write to the
    course, so the change came from elsewhere (someone editing it during
    the run): it is said, and blamed on no one. The environment
    (:class:`Environment`), when given, is fingerprinted too: a change stops
    grading (:class:`EnvironmentChangedError`), the submission that just ran
    without a row (it may have run with the change), those not started not run.
    """
    paths = dict(pending)

    def done(name: str, run: Run) -> None:
        if environment is not None:
            environment.check(name, bare=not settings.isolated)
        changed = settings.course.changed()
        if changed:
            settings.course.restore(changed, settings.backup)
        row = _row(name, paths[name], digests[name], run, settings, expected)
        if changed and not settings.isolated:
            files = ", ".join(p.name for p in changed)
            row = SubmissionResult(
                name, dict.fromkeys(settings.ids, 0.0), "tampered",
                text("tamper_changed", settings.language, files=files),
                sha256=digests[name], seconds=row.seconds, timings=row.timings,
            )
        elif changed:
            print(f"note: the course's files changed during grading "
                  f"({', '.join(p.name for p in changed)}), not through a "
                  f"submission (none can write to them); restored, the changed "
                  f"files kept in {settings.backup}", file=sys.stderr, flush=True)
        finish(name, row)

    if jobs <= 1:
        for number, (name, path) in enumerate(pending):
            done(name, run_one(path, number, settings))
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, path, n, settings): name
                   for n, (name, path) in enumerate(pending)}
        try:
            for future in concurrent.futures.as_completed(futures):
                done(futures[future], future.result())
        except BaseException:
            # Leaving the block waits for every submission queued: only those
            # already running (each within its limits) are waited for.
            pool.shutdown(wait=True, cancel_futures=True)
            raise
