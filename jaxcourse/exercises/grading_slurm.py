"""Grade a class as a Slurm job array: ``jaxcourse.exercises.grading --slurm``.

The grading process (here, "the collector") does what the local grader does
before and after the submissions run: it reads every notebook, gives the
unreadable ones their row at once, and judges nothing itself that a task
reports. The runnable submissions are split into chunks, one chunk per task
of one ``sbatch --array`` job; each task grades its chunk exactly as the
local grader grades one submission (:func:`jaxcourse.exercises.runner.run_one`
and the same judging, one at a time, in a fresh sandbox process each) and
appends each row to a file of its own in the output folder, which must
therefore be on storage that the nodes share.

What cannot be decided inside one task is who changed the course. A task
that finds the course's files changed after a submission restores them
(from a snapshot the collector took before submitting, so that a task that
started late cannot take a changed course for the original), and records
the time window. Once the array has ended, a window that overlaps exactly one
submission, in any task, blames it (``tampered``); one that overlaps several
sends them all to be graded again, one at a time, here, as the local grader
does with several jobs.

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
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from jaxcourse import slurm
from jaxcourse.processes import become_subreaper

from ..messages import message
from .grading_local import (
    _grade_all,
    _row,
    expected_outputs,
    sandbox_modules,
    use_devices,
)
from .grading_rows import SubmissionResult
from .runner import Course, Settings, default_course, run_one, text

__all__ = ["earlier_rows", "grade_on_slurm", "main"]

_SPEC = "spec.json"


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
) -> None:
    """Grade ``pending`` as one Slurm job array; hand each row to ``finish``.

    Parameters
    ----------
    pending : sequence of (name, path)
        The readable submissions to grade.
    numbers, digests : dict
        Each submission's number (its run folder's prefix) and SHA-256.
    ids, language, timeout, memory_mb, case_limit, private, course
        As for :func:`jaxcourse.exercises.grading.grade`.
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
    """
    folders = [Path(f).resolve() for f in (course or default_course())]
    work = out_dir.resolve() / "slurm" / time.strftime("%Y%m%dT%H%M%S")
    work.mkdir(parents=True, exist_ok=True)
    snapshot = Course(folders)
    _snapshot(snapshot, work / "course")
    chunks = _chunks([(numbers[n], n, str(Path(p).resolve()), digests[n])
                      for n, p in pending], max(1, chunk))
    spec = {"ids": ids, "language": language, "timeout": timeout,
            "memory_mb": memory_mb, "case_limit": case_limit,
            "private": [str(p) for p in private],
            "course": [str(f) for f in folders], "chunks": chunks,
            "backup": str(out_dir.resolve() / "jaxcourse-course-changes")}
    (work / _SPEC).write_text(json.dumps(spec, indent=1), encoding="utf-8")
    longest = max(len(c) for c in chunks)
    # The task's own limits end each submission; Slurm's is a backstop.
    minutes = math.ceil(longest * (timeout + 60) / 60) + 2
    array = f"0-{len(chunks) - 1}" + (f"%{parallel}" if parallel else "")
    lines = ["#!/bin/bash", "#SBATCH --job-name=jaxcourse-grade",
             f"#SBATCH --array={array}", "#SBATCH --ntasks=1",
             "#SBATCH --cpus-per-task=1", f"#SBATCH --time={minutes}",
             f"#SBATCH --output={work}/task-%a.log"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += [f"#SBATCH {o}" for o in options]
    lines.append(f'exec "{sys.executable}" -m jaxcourse.exercises.grading_slurm '
                 f'"{work / _SPEC}" "$SLURM_ARRAY_TASK_ID"')
    script = work / "job.sh"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = slurm.submit(script, cwd=work)
    print(f"submitted {len(pending)} submissions as Slurm job array {job} "
          f"({len(chunks)} tasks); task logs in {work}", flush=True)
    done = False
    try:
        states = slurm.wait(job, timeout=len(chunks) * minutes * 60 + 120, poll=1.0)
        done = True
    finally:
        if not done:
            slurm.cancel(job)
    task_state = {s.job_id.rsplit("_", 1)[-1]: s for s in states}
    rows, events = _read_run(work)
    paths = dict(pending)
    blamed: dict[str, list[str]] = {}
    suspects: set[str] = set()
    for event in events:
        during = _overlapping(rows, event)
        if len(during) == 1:
            blamed.setdefault(during[0], []).extend(event["files"])
        else:
            suspects.update(during)
    for index, items in enumerate(chunks):
        for _, name, _, digest in items:
            if name in suspects:
                continue
            if name not in rows:
                state = task_state.get(str(index))
                how = f"Slurm task {index}: {state.state if state else 'lost'}"
                finish(name, SubmissionResult(
                    name, dict.fromkeys(ids, 0.0), "crashed",
                    message("grading_crash", language, how=how), sha256=digest))
                continue
            row = SubmissionResult.from_dict(rows[name])
            if name in blamed:
                files = ", ".join(sorted(set(blamed[name])))
                row = SubmissionResult(
                    name, dict.fromkeys(ids, 0.0), "tampered",
                    text("tamper_changed", language, files=files),
                    sha256=digest, seconds=row.seconds, timings=row.timings)
            finish(name, row)
    if suspects:
        # One at a time, here: the one that changes the course again is known.
        again = [(n, paths[n]) for n in sorted(suspects, key=numbers.get)]
        results: dict = {}
        _grade_all(again, digests, results, None, ids, language, 1, timeout,
                   memory_mb, case_limit, private, list(folders))
        for name, _ in again:
            finish(name, results[name])


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

    A row is taken only if no change of the course overlapped it (otherwise
    its submission is graded again).
    """
    found: dict[str, dict] = {}
    for work in sorted((out_dir / "slurm").glob("*/")):
        rows, events = _read_run(work)
        unsure = {n for e in events for n in _overlapping(rows, e)}
        for name, row in rows.items():
            if name not in unsure and list(row.get("scores", {})) == ids:
                found[name] = row
    return found


def _task(spec_file: Path, index: int) -> int:
    """Grade one chunk inside an array task; append its rows to the task's file."""
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    work = spec_file.parent
    ids = spec["ids"]
    use_devices(ids)
    expected = expected_outputs(ids)
    course = Course([Path(f) for f in spec["course"]])
    _load_snapshot(course, work / "course")
    rows_file = work / f"rows-{index}.jsonl"
    events_file = work / f"events-{index}.jsonl"
    become_subreaper()
    with tempfile.TemporaryDirectory(prefix="jaxcourse-grade-") as root:
        settings = Settings(
            ids=ids, modules=sandbox_modules(ids), timeout=spec["timeout"],
            memory_mb=spec["memory_mb"], case_limit=spec["case_limit"],
            root=Path(root), private=[Path(p) for p in spec["private"]],
            course=course, language=spec["language"], backup=Path(spec["backup"]),
        )
        last_clean = time.time()
        for number, name, path, digest in spec["chunks"][index]:
            started = time.time()
            run = run_one(Path(path), number, settings)
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
        print("usage: python -m jaxcourse.exercises.grading_slurm SPEC TASK_INDEX",
              file=sys.stderr)
        return 2
    return _task(Path(args[0]), int(args[1]))


if __name__ == "__main__":
    sys.exit(main())
