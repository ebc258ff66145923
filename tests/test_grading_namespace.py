"""The grader ends everything a submission started, by its PID namespace.

A submission's cell starts a child that ignores SIGTERM, clears its
environment (so no tag of the grader's can find it), calls ``setsid`` and
forks twice (so no process group, session or parent leads to it). The
grader runs each submission inside the wall
(:mod:`jaxcourse.exercises.grading.isolation`), in a PID namespace of its
own: when the submission's process tree is ended, the namespace ends, and
that grandchild with it. Needs bubblewrap.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from jaxcourse.exercises.grading.cli import grade

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "03_bayes_exercises.ipynb"


def escape(mark: str) -> str:
    """A cell whose grandchild hides from every net but a PID namespace."""
    return (
        "import os, signal, sys, time\n"
        "if os.fork() == 0:\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execve(sys.executable, [sys.executable, '-c', 'import signal, "
        "time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)', "
        f"{mark!r}], {{}})\n"
        "    os._exit(0)\n"
        "time.sleep(1)\n")


def living(mark: str) -> list[int]:
    """The pids of living processes whose command line carries ``mark``."""
    return [p.pid for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE
            and mark in (p.info["cmdline"] or [])]


def test_the_grader_ends_a_child_that_left_its_session_and_environment(
        tmp_path: Path) -> None:
    mark = f"jaxcourse-escapee-{secrets.token_hex(4)}"
    nb = nbformat.read(STUDENT, as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell(escape(mark)))
    folder = tmp_path / "submitted"
    folder.mkdir()
    nbformat.write(nb, folder / "escapes.ipynb")
    [row] = grade([folder], chapter="03_bayes", jobs=1, timeout=240, progress=False,
                  exercises=["bayes.batched_log_joint"])
    assert row.status == "graded", (row.status, row.reason)
    deadline = time.monotonic() + 5
    while living(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not living(mark), "a submission's grandchild outlived its grading"
