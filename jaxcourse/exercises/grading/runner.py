"""Run one submission in its sandbox process, against a read-only course copy.

The grader's runner: :class:`Course` (the course's code, fingerprinted,
restorable, copied read-only for each submission without any answer:
:mod:`jaxcourse.exercises.authoring.answerless`), :func:`run_one` (a fresh
``python -m jaxcourse.exercises.grading.sandbox`` process in a private run folder,
inside the operating system's wall (:mod:`jaxcourse.exercises.grading.isolation`)
unless the teacher turned it off, its output's tail kept, its whole process
tree ended afterwards) and :func:`unreadable_reason` (empty, not JSON, not a
notebook). Judging is :mod:`jaxcourse.exercises.grading.local`'s, the tables
:mod:`jaxcourse.exercises.grading.tables`'.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jaxcourse import compile_cache
from jaxcourse.cli import MissingToolError
from jaxcourse.course import content_folders
from jaxcourse.processes import TAG_ENV, end_tree, new_tag

from ...messages import LANGUAGES, message
from ..checking.mode import GRADING_ENV
from . import isolation
from .sandbox import GUARD_ENV

__all__ = [
    "Course",
    "Run",
    "Settings",
    "default_course",
    "run_one",
    "text",
    "unreadable_reason",
]

MAX_RESULT_BYTES = 20 * 2**20
_LOG_TAIL_BYTES = 64 * 2**10

def text(key: str, language: str, **values: object) -> str:
    """Return the grader's own sentence ``key`` in ``language``, formatted.

    The sentences live in :mod:`jaxcourse.messages` as
    ``grading_<key>``; an unknown language reads English.
    """
    known = language if language in LANGUAGES else "en"
    return message(f"grading_{key}", known, **values)


# --------------------------------------------------------------------------
# Reading a submission, and the course it must not change
# --------------------------------------------------------------------------


def unreadable_reason(path: Path, language: str) -> str | None:
    """Why ``path`` is not a notebook we can run, or ``None`` if it is one."""
    import nbformat

    try:
        raw = path.read_bytes()
    except OSError as err:
        return text("not_json", language, why=type(err).__name__)
    if not raw.strip():
        return text("empty", language)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        return text("not_json", language, why=str(err)[:80])
    try:
        if not isinstance(data, dict) or "cells" not in data:
            raise ValueError("no cells")
        nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as err:  # nbformat raises several kinds
        return text("not_notebook", language, why=str(err).splitlines()[0][:80])
    return None


class Course:
    """The course's code: fingerprinted, restorable, copied read-only."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.folders = [Path(f).resolve() for f in folders]
        self.snapshot = self._read()
        self._lock = threading.Lock()

    def _files(self) -> list[Path]:
        return sorted(p for f in self.folders for p in f.rglob("*.py")
                      if "__pycache__" not in p.parts)

    def _read(self) -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in self._files()}

    def changed(self) -> list[Path]:
        """Return the files that differ from the snapshot (edited, added, deleted)."""
        now = self._read()
        return sorted(p for p in {*now, *self.snapshot}
                      if now.get(p) != self.snapshot.get(p))

    def restore(self, paths: Sequence[Path], backup: Path) -> None:
        """Put ``paths`` back as they were when grading began.

        What is overwritten is first saved under ``backup``: a change made by
        a person editing the course during the run is kept, not lost.
        """
        folder = backup / time.strftime("%Y%m%dT%H%M%S")
        for path in paths:
            if path.is_file():
                saved = folder / path.parent.name / path.name
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_bytes(path.read_bytes())
        for path in paths:
            if path in self.snapshot:
                with contextlib.suppress(OSError):
                    path.chmod(path.stat().st_mode | stat.S_IWUSR)
                path.write_bytes(self.snapshot[path])
            else:
                path.unlink(missing_ok=True)

    def copy_to(self, target: Path, cache: Path) -> None:
        """Write the course without its answers under ``target``, read-only.

        The copy (:func:`jaxcourse.exercises.authoring.answerless.write_graded_copy`)
        holds no reference answer and nothing that computes one: a borrowed
        answer, however it is reached, computes nothing there. It is written
        once per grading run into ``cache`` (a folder the submissions cannot
        see) and copied from there.
        """
        with self._lock:
            template = cache / "answerless"
            if not template.is_dir():
                from ..authoring.answerless import write_graded_copy

                partial = cache / "answerless.partial"
                shutil.rmtree(partial, ignore_errors=True)
                write_graded_copy(self.folders, partial)
                partial.rename(template)
        for folder in self.folders:
            shutil.copytree(template / folder.name, target / folder.name)
        _read_only(target)


def _read_only(folder: Path) -> None:
    for root, dirs, files in os.walk(folder):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o555)
    os.chmod(folder, 0o555)


def _writable(folder: Path) -> None:
    # Read-only folders cannot be deleted until they are writable again.
    for root, dirs, _ in os.walk(folder):
        os.chmod(root, 0o755)
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, name), 0o755)


def default_course() -> list[Path]:
    """Return the folders of the engine and of the course's content packages."""
    return content_folders()


# --------------------------------------------------------------------------
# Running one submission
# --------------------------------------------------------------------------


@dataclass
class Run:
    """What one submission's process did: status, report, times, attempts."""

    status: str
    report: dict | None = None
    detail: str = ""
    attempts: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    log_tail: str = ""
    started: float = 0.0
    ended: float = 0.0


@dataclass
class Settings:
    """What every submission of one grading run shares.

    ``isolated``: each submission runs inside the wall
    (:mod:`jaxcourse.exercises.grading.isolation`); ``False`` only when the teacher
    said so. ``hidden``: more folders its process must not see (the grading
    folder with everyone's rows).
    """

    ids: list[str]
    modules: list[str]
    timeout: float
    memory_mb: int
    case_limit: float | None
    root: Path
    private: list[Path]
    course: Course
    language: str
    backup: Path
    isolated: bool = True
    hidden: list[Path] = field(default_factory=list)


def _tail_reader(pipe, keep: collections.deque) -> None:
    # Keeps only the end of what the submission prints: a flood of output
    # costs it time, not the grader's memory or disk.
    size = 0
    with contextlib.suppress(OSError, ValueError):
        for chunk in iter(lambda: pipe.read(8192), b""):
            keep.append(chunk)
            size += len(chunk)
            while size > _LOG_TAIL_BYTES and len(keep) > 1:
                size -= len(keep.popleft())


def run_one(path: Path, number: int, settings: Settings) -> Run:
    """Run one submission in a fresh process; report what happened."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{number:04d}-", dir=settings.root))
    # The decoys that cover what it must not see: beside its run folder, not
    # in it, so that it cannot reach them but through the paths they cover.
    decoys = Path(tempfile.mkdtemp(prefix=f"{number:04d}-hidden-", dir=settings.root))
    try:
        return _run_in(path, run_dir, decoys, settings)
    finally:
        for folder in (run_dir, decoys):
            _writable(folder)
            shutil.rmtree(folder, ignore_errors=True)


def _checkouts(folders: Sequence[Path]) -> list[Path]:
    """Return the checkouts that hold ``folders``: their parent, where it is one.

    A checkout of the course holds the answers outside the course's folders
    too (the masters' notebooks, the tests' answers, its git history): the
    whole of it is hidden. A parent inside the Python environment
    (site-packages) is not a checkout.
    """
    shown = [Path(os.path.realpath(p)) for p in isolation.shown()]
    found = []
    for folder in folders:
        parent = Path(os.path.realpath(folder)).parent
        if not ((parent / "pyproject.toml").is_file() or (parent / ".git").exists()):
            continue
        if any(parent == s or s in parent.parents for s in shown):
            continue
        found.append(parent)
    return found


def _layout(run_dir: Path, settings: Settings) -> isolation.Layout:
    """Return what the submission's process may see and write (inside the wall)."""
    course = [*settings.course.folders, *default_course()]
    hidden = [*course, *_checkouts(course), *settings.private, settings.root,
              *settings.hidden, *isolation.home_hidden()]
    # The home folder: empty (no keys or tokens to read, and hand back in an
    # error message) but writable, in memory, where libraries keep settings.
    return isolation.Layout(own=run_dir, read_only=[run_dir / "course"],
                            hidden=hidden, emptied=[Path.home()],
                            shown=isolation.shown(),
                            scratch_mb=settings.memory_mb or 1024)


def _matplotlib_config(folder: Path) -> None:
    # Outside the wall matplotlib keeps its font list in ~/.cache; inside it
    # that is read-only, and matplotlib would rebuild the list (seconds) in a
    # temporary folder on every run: it starts from a copy instead.
    folder.mkdir()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for font_list in (cache / "matplotlib").glob("fontlist-*.json"):
        with contextlib.suppress(OSError):
            shutil.copyfile(font_list, folder / font_list.name)


def _as_original(line: str, run_dir: Path, course: Course) -> str:
    # A write to the private copy of the course is reported at the course's
    # own path: the row says the same whichever copy it aimed at.
    kind, _, where = line.partition(" ")
    copy = run_dir / "course"
    try:
        relative = Path(where).relative_to(os.path.realpath(copy))
    except ValueError:
        return line
    for folder in course.folders:
        if relative.parts and relative.parts[0] == folder.name:
            return f"{kind} {folder.parent / relative}"
    return line


def _run_in(path: Path, run_dir: Path, decoys: Path, settings: Settings) -> Run:
    work, outbox, course = run_dir / "work", run_dir / "outbox", run_dir / "course"
    work.mkdir()
    outbox.mkdir()
    settings.course.copy_to(course, settings.root)
    copy = work / "submission.ipynb"
    shutil.copyfile(path, copy)
    _matplotlib_config(run_dir / "matplotlib")
    layout = _layout(run_dir, settings)
    tag = new_tag()
    # No shared compilation cache: one submission must never place compiled
    # code that another one runs (and the course's switch keeps it off when
    # the submission imports jaxcourse.exercises).
    env = compile_cache.without(os.environ)
    env.update({
        compile_cache.SWITCH_ENV: "off",
        GRADING_ENV: "1",
        TAG_ENV: tag,
        # The private copy comes first: the submission imports it, not ours.
        "PYTHONPATH": os.pathsep.join([str(course), env.get("PYTHONPATH", "")]),
        # Bytecode cannot be written into the read-only copy; do not try.
        "PYTHONDONTWRITEBYTECODE": "1",
        "IPYTHONDIR": str(run_dir / "ipython"),
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(run_dir / "matplotlib"),
        "PYTHONHASHSEED": "0",
        "JAX_PLATFORMS": env.get("JAX_PLATFORMS", "cpu"),
        # The guard (the second layer, in the process) refuses what the wall
        # makes fail, and names it: the course, the environment, the course's
        # own folders under the home folder.
        GUARD_ENV: json.dumps({
            "protect": [*map(str, settings.course.folders), str(course),
                        *map(str, isolation.shown()),
                        *map(str, isolation.home_hidden())],
            "private": [str(settings.root), *map(str, settings.private)],
            "own": str(run_dir),
        }),
    })
    command = [sys.executable, "-m", "jaxcourse.exercises.grading.sandbox", str(copy),
               "--outbox", str(outbox), "--memory-mb", str(settings.memory_mb),
               "--modules", *settings.modules, "--exercises", *settings.ids]
    if settings.case_limit is not None:
        command += ["--case-time-limit", str(settings.case_limit)]
    if settings.isolated:
        bwrap = isolation.program()
        if bwrap is None:  # removed since the grader checked: run nothing bare
            raise MissingToolError(
                isolation.refusal(isolation.unavailable_reason() or ""))
        # Inside, /tmp is its own: an inherited TMPDIR may name a hidden folder.
        env["TMPDIR"] = "/tmp"
        command = isolation.wrap(command, layout, decoys, bwrap, cwd=work)
    tail: collections.deque = collections.deque()
    run = Run("graded", started=time.time())
    process = subprocess.Popen(
        command, cwd=work, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    reader = threading.Thread(target=_tail_reader, args=(process.stdout, tail),
                              daemon=True)
    reader.start()
    try:
        code = process.wait(settings.timeout)
        timed_out = False
        if settings.isolated and code > 128:
            # bwrap passes a signal on as 128 + its number, as a shell does
            # (an exit(139) of the notebook's own reads as SIGSEGV too).
            code = -(code - 128)
    except subprocess.TimeoutExpired:
        timed_out, code = True, None
    finally:
        # Whatever it started, in whatever session, ends with it.
        end_tree([process], tag=tag, grace=0)
        reader.join(timeout=5)
        with contextlib.suppress(OSError):
            process.stdout.close()
    run.ended = time.time()
    run.log_tail = b"".join(tail).decode("utf-8", "replace")
    attempts_file = outbox / "attempts.txt"
    if attempts_file.is_file():
        run.attempts = attempts_file.read_text("utf-8", "replace").splitlines()[:20]
    if settings.isolated:
        # What went around the guard (a shell, ctypes) into a hidden folder.
        run.attempts += isolation.found(layout, decoys)
    run.attempts = [_as_original(a, run_dir, settings.course) for a in run.attempts]
    result = outbox / "result.json"
    if timed_out:
        run.status = "timed out"
        run.detail = message("grading_timeout", settings.language,
                             seconds=settings.timeout)
        return run
    if not result.is_file():
        language = settings.language
        if code is not None and code >= 0:
            how = f"exit code {code}"
            run.status, run.detail = "crashed", text("exited", language, how=how)
        else:
            run.status = "crashed"
            run.detail = message("grading_crash", settings.language,
                                 how=_signal_name(code or 0))
        memory_words = ("MemoryError", "bad_alloc", "Cannot allocate memory")
        if code == -signal.SIGKILL or any(w in run.log_tail for w in memory_words):
            # Nothing here sends SIGKILL before the time limit: the kernel's
            # out-of-memory killer did, or an allocation failed.
            run.status = "out of memory"
            run.detail = text("oom", language, mb=settings.memory_mb, where="")
        return run
    try:
        if result.stat().st_size > MAX_RESULT_BYTES:
            raise ValueError("too large")
        report = json.loads(result.read_text(encoding="utf-8"))
        if not isinstance(report, dict) or not isinstance(
            report.get("exercises"), dict
        ):
            raise ValueError("not a report")
    except (ValueError, OSError) as err:
        run.status = "crashed"
        run.detail = message("grading_unreadable", settings.language, why=str(err)[:80])
        return run
    run.report = report
    times = report.get("timings")
    if isinstance(times, dict) and all(
        isinstance(times.get(k), int | float)
        for k in ("begun", "imported", "cells", "checks")
    ):
        run.timings = {
            "start-up": times["begun"] - run.started,
            "imports": times["imported"] - times["begun"],
            "cells": times["cells"] - times["imported"],
            "checks": times["checks"] - times["cells"],
        }
    return run


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"
