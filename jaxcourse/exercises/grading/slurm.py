"""Grade a class as a Slurm job array: ``jaxcourse.exercises.grading --slurm``.

The grading process (here, "the collector") does what the local grader does
before and after the submissions run: it reads every notebook, gives the
unreadable ones their row at once, and judges nothing itself that a task
reports. The runnable submissions are split into chunks, one chunk per task
of one ``sbatch --array`` job; each task grades its chunk exactly as the
local grader grades one submission (:func:`jaxcourse.exercises.grading.runner.run_one`
and the same judging, one at a time, in a fresh sandbox process each) and
appends each row to a file of its own in the output folder, which must
therefore be on storage that the nodes share.

Each task walls its submissions in as the local grader does
(:mod:`jaxcourse.exercises.grading.isolation`); a task on a node where that is not
possible grades nothing and says why, and the collector refuses the class
with that reason once the array has ended (the other tasks' rows are kept),
unless the teacher turned the wall off.

A task that finds the course's files changed after a submission restores
them (from a snapshot the collector took before submitting, so that a task
that started late cannot take a changed course for the original), and
records the time window. Inside the wall no submission can have made the
change, so it is blamed on no one. Without it the array runs one task at a
time, so that a window overlaps exactly one submission, which is blamed
(``tampered``): no submission is ever graded twice to find out who did it.

The Python environment's package folders are fingerprinted once, by the
collector before it submits (``environment.json``); a task that finds them
changed, when it starts or after a submission, grades no further and says
why, and the collector stops with that reason once the array has ended (the
rows finished are kept; a rerun grades the rest).

A task that Slurm ended before it reported (its time limit, a node failure)
gives its submissions the status ``crashed`` with the task's state. The
per-submission ``--timeout`` is enforced inside the task, as locally; the
array's time limit is a backstop. Stopping the collector (Ctrl-C) cancels
the job; a rerun takes the rows that finished from the task files.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from jaxcourse import slurm
from jaxcourse.cli import MissingToolError
from jaxcourse.processes import become_subreaper

from ...messages import message
from . import isolation
from .local import (
    Environment,
    EnvironmentChangedError,
    _row,
    expected_outputs,
    sandbox_modules,
    use_devices,
)
from .rows import SubmissionResult
from .runner import Course, Settings, default_course, run_one, text

__all__ = ["earlier_rows", "grade_on_slurm", "main"]

_SPEC = "spec.json"
# The environment's fingerprint when the array was submitted.
_ENVIRONMENT = "environment.json"


def _snapshot(course: Course, folder: Path) -> None:
    """Copy the course's ``.py`` files as they are now, for the tasks to restore."""
    for index, root in enumerate(course.folders):
        for path, data in course.snapshot.items():
            if path.is_relative_to(root):
                target = folder / str(index) / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)


def _load_snapshot(course: Course, folder: Path) -> None:
    snapshot = {}
    for index, root in enumerate(course.folders):
        base = folder / str(index)
        for saved in base.rglob("*.py"):
            snapshot[root / saved.relative_to(base)] = saved.read_bytes()
    course.snapshot = snapshot


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def grade_on_slurm(
    pending: Sequence[tuple[str, Path]],
    numbers: dict[str, int],
    digests: dict[str, str],
    *,
    ids: list[str],
    language: str,
    timeout: float,
    memory_mb: int,
    case_limit: float | None,
    private: list[Path],
    course: Sequence[Path] | None,
    out_dir: Path,
    chunk: int = 1,
    parallel: int | None = None,
    partition: str | None = None,
    options: Sequence[str] = (),
    finish=None,
    sandbox: bool = True,
    progress=None,
) -> None:
    """Grade ``pending`` as one Slurm job array; hand each row to ``finish``.

    Parameters
    ----------
    pending : sequence of (name, path)
        The readable submissions to grade.
    numbers, digests : dict
        Each submission's number (its run folder's prefix) and SHA-256.
    ids, language, timeout, memory_mb, case_limit, private, course
        As for :func:`jaxcourse.exercises.grading.cli.grade`.
    out_dir : Path
        The grading folder, on storage shared with the nodes.
    chunk : int
        Submissions per array task.
    parallel : int, optional
        At most this many tasks at once (``--array=0-N%parallel``).
    partition : str, optional
        The Slurm partition; by default the cluster's default one.
    options : sequence of str
        More ``sbatch`` options (``--account=...``, ``--qos=...``).
    finish : callable
        Called with ``(name, SubmissionResult)`` for every row.
    sandbox : bool
        Wall each submission in on its node; ``False`` runs them bare, and
        the array one task at a time.
    progress : callable, optional
        Called with ``(name, row)`` as soon as a task has written a row,
        while the array runs (``finish`` is called once it has ended).

    Raises
    ------
    CourseError
        When a node could not wall its submissions in, or a task found the
        Python environment changed (:class:`EnvironmentChangedError`), after
        the array has ended, once every other row was handed to ``finish``.
    """
    folders = [Path(f).resolve() for f in (course or default_course())]
    work = out_dir.resolve() / "slurm" / time.strftime("%Y%m%dT%H%M%S")
    work.mkdir(parents=True, exist_ok=True)
    snapshot = Course(folders)
    _snapshot(snapshot, work / "course")
    environment = Environment()
    (work / _ENVIRONMENT).write_text(json.dumps(
        {"folders": environment.folders, "files": environment.snapshot}),
        encoding="utf-8")
    chunks = _chunks([(numbers[n], n, str(Path(p).resolve()), digests[n])
                      for n, p in pending], max(1, chunk))
    spec = {"ids": ids, "language": language, "timeout": timeout,
            "memory_mb": memory_mb, "case_limit": case_limit,
            "private": [str(p) for p in private],
            "course": [str(f) for f in folders], "chunks": chunks,
            "backup": str(out_dir.resolve() / "jaxcourse-course-changes"),
            "sandbox": sandbox, "out": str(out_dir.resolve())}
    (work / _SPEC).write_text(json.dumps(spec, indent=1), encoding="utf-8")
    longest = max(len(c) for c in chunks)
    # The task's own limits end each submission; Slurm's is a backstop.
    minutes = math.ceil(longest * (timeout + 60) / 60) + 2
    if not sandbox:
        # Bare, a submission could change the course: one task at a time, so
        # that a change is blamed on the one submission that ran.
        parallel = 1
    array = f"0-{len(chunks) - 1}" + (f"%{parallel}" if parallel else "")
    lines = ["#!/bin/bash", "#SBATCH --job-name=jaxcourse-grade",
             f"#SBATCH --array={array}", "#SBATCH --ntasks=1",
             "#SBATCH --cpus-per-task=1", f"#SBATCH --time={minutes}",
             f"#SBATCH --output={work}/task-%a.log"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += [f"#SBATCH {o}" for o in options]
    lines.append(f'exec "{sys.executable}" -m jaxcourse.exercises.grading.slurm '
                 f'"{work / _SPEC}" "$SLURM_ARRAY_TASK_ID"')
    script = work / "job.sh"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = slurm.submit(script, cwd=work)
    print(f"submitted {len(pending)} submissions as Slurm job array {job} "
          f"({len(chunks)} tasks); task logs in {work}", flush=True)
    done = False
    try:
        states = slurm.wait(job, timeout=len(chunks) * minutes * 60 + 120, poll=1.0,
                            each_poll=(lambda: _report_rows(work, progress))
                            if progress else None)
        done = True
    finally:
        if not done:
            slurm.cancel(job)
    task_state = {s.job_id.rsplit("_", 1)[-1]: s for s in states}
    rows, events = _read_run(work)
    blamed = _blamed(rows, events, sandbox)
    refused = _refused(work)
    stopped = _refused(work, "stopped")
    for index, items in enumerate(chunks):
        for _, name, _, digest in items:
            if str(index) in {*refused, *stopped} and name not in rows:
                continue  # never run, or stopped: a rerun grades it
            if name not in rows:
                state = task_state.get(str(index))
                how = f"Slurm task {index}: {state.state if state else 'lost'}"
                finish(name, SubmissionResult(
                    name, dict.fromkeys(ids, 0.0), "crashed",
                    message("grading_crash", language, how=how), sha256=digest))
                continue
            finish(name, _as_row(rows[name], blamed.get(name), language))
    if sandbox and events:
        files = sorted({f for e in events for f in e["files"]})
        print(f"note: the course's files changed during grading ({', '.join(files)}),"
              " not through a submission (none can write to them); the tasks "
              "restored them", file=sys.stderr, flush=True)
    if stopped:
        others = len(stopped) - 1
        raise EnvironmentChangedError(
            min(stopped.values()) + (f" ({others} more Slurm task"
                                     f"{'s' * (others != 1)} stopped for it)"
                                     if others else ""))
    if refused:
        nodes = "; ".join(sorted(set(refused.values())))
        raise MissingToolError(isolation.refusal(f"on the Slurm nodes, {nodes}")
                          + " (the other submissions' rows are kept; a rerun "
                          "grades only what is left)")


def _blamed(rows: dict[str, dict], events: list[dict],
            sandbox: bool) -> dict[str, list[str]]:
    """Return the submissions that changed the course, with the files.

    Inside the wall none can have: nobody. Without it the tasks ran one at a
    time, and a change overlaps the one submission that made it; a change
    that overlaps none, or several (another grader on the same course at the
    same time), is blamed on no one rather than graded again.
    """
    blamed: dict[str, list[str]] = {}
    if sandbox:
        return blamed
    for event in events:
        during = _overlapping(rows, event)
        if len(during) == 1:
            blamed.setdefault(during[0], []).extend(event["files"])
    return blamed


def _as_row(row: dict, files: list[str] | None, language: str) -> SubmissionResult:
    """Return a task's row, ``tampered`` if it changed the course's ``files``."""
    result = SubmissionResult.from_dict(row)
    if not files:
        return result
    return SubmissionResult(
        result.submission, dict.fromkeys(result.scores, 0.0), "tampered",
        text("tamper_changed", language, files=", ".join(sorted(set(files)))),
        sha256=result.sha256, seconds=result.seconds, timings=result.timings)


def _report_rows(work: Path, progress) -> None:
    """Hand each row the tasks have written so far to ``progress``."""
    rows, _ = _read_run(work)
    for name, row in rows.items():
        progress(name, SubmissionResult.from_dict(row))


def _refused(work: Path, kind: str = "refused") -> dict[str, str]:
    """Return the tasks that could not wall their submissions in: index to why.

    ``kind="stopped"``: those that found the environment changed.
    """
    return {p.stem.split("-", 1)[1]: p.read_text(encoding="utf-8").strip()
            for p in work.glob(f"{kind}-*.txt")}


def _read_run(work: Path) -> tuple[dict[str, dict], list[dict]]:
    """Return the rows and course-change events that one array's tasks wrote."""
    rows: dict[str, dict] = {}
    events: list[dict] = []
    for path in sorted(work.glob("rows-*.jsonl")) + sorted(work.glob("events-*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a line a task was writing when it was ended
            if path.name.startswith("rows-"):
                rows[item["submission"]] = item
            else:
                events.append(item)
    return rows, events


def _overlapping(rows: dict[str, dict], event: dict) -> list[str]:
    return [n for n, r in rows.items()
            if r["started"] <= event["to"] and r["ended"] >= event["from"]]


def earlier_rows(out_dir: Path, ids: list[str]) -> dict[str, dict]:
    """Rows that tasks of an earlier, interrupted ``--slurm`` run finished.

    A submission that changed the course (a run without the wall) comes back
    ``tampered``, as the collector would have made it.
    """
    found: dict[str, dict] = {}
    for work in sorted((out_dir / "slurm").glob("*/")):
        try:
            spec = json.loads((work / _SPEC).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not a run's folder, or one cut off while written
        rows, events = _read_run(work)
        blamed = _blamed(rows, events, spec.get("sandbox", False))
        for name, row in rows.items():
            if list(row.get("scores", {})) == ids:
                found[name] = _as_row(row, blamed.get(name),
                                      spec.get("language", "en")).to_dict()
    return found


def _task(spec_file: Path, index: int) -> int:
    """Grade one chunk inside an array task; append its rows to the task's file."""
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    work = spec_file.parent
    ids = spec["ids"]
    if spec.get("sandbox", True):
        reason = isolation.unavailable_reason()
        if reason is not None:
            # Nothing runs bare on a node where the teacher asked for the
            # wall: the collector says why, and a rerun grades these.
            (work / f"refused-{index}.txt").write_text(
                f"{socket.gethostname()}: {reason}\n", encoding="utf-8")
            return 1
    use_devices(ids)
    expected = expected_outputs(ids)
    course = Course([Path(f) for f in spec["course"]])
    _load_snapshot(course, work / "course")
    rows_file = work / f"rows-{index}.jsonl"
    events_file = work / f"events-{index}.jsonl"
    try:
        return _grade_chunk(spec, index, course, expected, rows_file, events_file)
    except EnvironmentChangedError as err:
        # The collector says it once the array has ended; this task's other
        # submissions are left for a rerun.
        (work / f"stopped-{index}.txt").write_text(f"{err}\n", encoding="utf-8")
        return 1


def _grade_chunk(spec: dict, index: int, course: Course, expected: dict,
                 rows_file: Path, events_file: Path) -> int:
    """Grade task ``index``'s chunk, checking the environment before and after each."""
    ids = spec["ids"]
    saved = json.loads((rows_file.parent / _ENVIRONMENT).read_text(encoding="utf-8"))
    environment = Environment(saved["folders"], saved["files"])
    bare = not spec.get("sandbox", True)
    environment.check(None, bare)
    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="jaxcourse-grade-") as root:
        settings = Settings(
            ids=ids, modules=sandbox_modules(ids), timeout=spec["timeout"],
            memory_mb=spec["memory_mb"], case_limit=spec["case_limit"],
            root=Path(root), private=[Path(p) for p in spec["private"]],
            course=course, language=spec["language"], backup=Path(spec["backup"]),
            isolated=spec.get("sandbox", True),
            hidden=[Path(spec["out"])] if spec.get("out") else [],
        )
        last_clean = time.time()
        for number, name, path, digest in spec["chunks"][index]:
            started = time.time()
            run = run_one(Path(path), number, settings)
            environment.check(name, bare)
            changed = course.changed()
            if changed:
                course.restore(changed, settings.backup)
                _append(events_file, {"from": last_clean, "to": time.time(),
                                      "files": [p.name for p in changed]})
            row = _row(name, Path(path), digest, run, settings, expected).to_dict()
            row.update(started=started, ended=run.ended)
            _append(rows_file, row)
            last_clean = time.time()
    return 0


def _append(path: Path, item: dict) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(item, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def main(argv: list[str] | None = None) -> int:
    """Entry point of one array task: ``grading_slurm SPEC TASK_INDEX``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m jaxcourse.exercises.grading.slurm SPEC TASK_INDEX",
              file=sys.stderr)
        return 2
    return _task(Path(args[0]), int(args[1]))


if __name__ == "__main__":
    sys.exit(main())
