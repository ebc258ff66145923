"""A launch started ahead of its work: processes that start now and wait for a job.

Starting a JAX process costs seconds (Python, importing JAX, meeting the
others at the coordinator), far more than the small job an exercise's Check
gives it. :class:`PreparedLaunch` starts the processes in the background
(:func:`jaxcourse.launch.launch`, in a thread of its own) while the learner
is still reading; inside each one, :func:`wait_for_job` waits until
:meth:`PreparedLaunch.run` hands them the job, a JSON document in their
folder, and then they run it as a fresh launch would.

Nothing waits for ever. Each process ends itself:

- when its job runs longer than the job's ``timeout``: it prints
  :data:`TIMED_OUT` and exits with :data:`TIMED_OUT_CODE`, which the
  launcher reports as a failed rank;
- when no job came within ``idle`` seconds, or the process that launched it
  is gone (the notebook's kernel was restarted), or :meth:`PreparedLaunch.close`
  asks it to stop: it exits quietly.

The launch's own timeout (the idle time, the job's and the start-up's)
stays behind all of these as a last resort, and the launcher ends every
process of the launch however it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "JOB_FILE",
    "STARTUP_SECONDS",
    "TIMED_OUT",
    "TIMED_OUT_CODE",
    "PreparedLaunch",
    "wait_for_job",
]

#: The job's file in the launch's folder (written whole, then renamed).
JOB_FILE = "job.json"
_STOP_FILE = "stop"
#: Printed by a process whose job ran out of time, before it exits.
TIMED_OUT = "JOB-TIMED-OUT"
TIMED_OUT_CODE = 4
#: Seconds the processes may take to start and reach :func:`wait_for_job`.
STARTUP_SECONDS = 30.0
#: How often a waiting process looks for its job (s): the Check waits this long.
_POLL = 0.005


def _ready_file(folder: Path, rank: int) -> Path:
    return folder / f"ready-{rank}"


# ---- inside each process -------------------------------------------------------


def wait_for_job(folder: str | os.PathLike[str], rank: int,
                 idle: float) -> dict[str, Any] | None:
    """Wait in a launched process for its job; ``None`` if it should just exit.

    Marks this process ready, then waits for :data:`JOB_FILE` in ``folder``.
    Once the job is read, a guard thread ends the process (exit code
    :data:`TIMED_OUT_CODE`, after printing :data:`TIMED_OUT`) if it is still
    running ``job["timeout"]`` seconds later, and ends it at once if the
    launcher asks it to stop or is gone.

    Parameters
    ----------
    folder : path-like
        The launch's folder.
    rank : int
        This process's rank.
    idle : float
        Seconds to wait for a job before giving up.

    Returns
    -------
    dict or None
        The job, or ``None`` when no job came (idle, stopped, or the process
        that launched this one is gone).
    """
    folder = Path(folder)
    parent = os.getppid()
    _ready_file(folder, rank).touch()
    end = time.monotonic() + idle
    job_file = folder / JOB_FILE
    while not job_file.exists():
        if ((folder / _STOP_FILE).exists() or os.getppid() != parent
                or time.monotonic() > end):
            return None
        time.sleep(_POLL)
    job = json.loads(job_file.read_text(encoding="utf-8"))
    threading.Thread(target=_guard, args=(folder, parent, float(job["timeout"])),
                     name="job-guard", daemon=True).start()
    return job


def _guard(folder: Path, parent: int, timeout: float) -> None:
    """End this process when its job runs out of time, or is stopped."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (folder / _STOP_FILE).exists() or os.getppid() != parent:
            os._exit(0)
        time.sleep(0.02)
    print(TIMED_OUT, flush=True)
    sys.stderr.flush()
    os._exit(TIMED_OUT_CODE)


# ---- in the process that launches ----------------------------------------------


class PreparedLaunch:
    """Start ``script`` in ``num_processes`` processes now; give them a job later.

    Parameters
    ----------
    script : str
        The text of a Python script. It must call :func:`wait_for_job` with
        its own folder (``os.path.dirname(__file__)``), its rank and the
        ``idle`` time, which it finds as its last command-line argument, and
        then do the job it gets.
    num_processes, devices_per_process : int
        As for :func:`jaxcourse.launch.launch`.
    args : sequence of str
        The script's arguments (``idle`` is appended).
    idle : float
        Seconds the processes wait for a job before they exit.
    job_timeout : float
        The longest ``timeout`` a job may be given (for the launch's own,
        last-resort timeout).
    launch : callable, optional
        The launcher, :func:`jaxcourse.launch.launch` by default.
    """

    def __init__(self, script: str, num_processes: int, devices_per_process: int,
                 *, args: Sequence[str] = (), idle: float = 900.0,
                 job_timeout: float = 60.0, launch: Any = None) -> None:
        if launch is None:
            from jaxcourse.launch import launch
        self.folder = Path(tempfile.mkdtemp(prefix="jaxcourse-prepared-"))
        (self.folder / "worker.py").write_text(script, encoding="utf-8")
        self.num_processes = num_processes
        self._gives_up = time.monotonic() + idle  # the processes stop waiting
        self._handed = False
        self._result: Any = None
        self._error: BaseException | None = None
        # Set when the launch has ended. Not Thread.is_alive(): a join() that
        # an interrupt cuts short marks the thread as ended while it still
        # runs (CPython 3.11), and the processes would be left behind.
        self._ended = threading.Event()
        kwargs = {"args": [*args, str(idle)], "cwd": self.folder, "echo": False,
                  "timeout": STARTUP_SECONDS + idle + job_timeout, "grace": 0.5}
        self._thread = threading.Thread(
            target=self._launch, args=(launch, devices_per_process, kwargs),
            name="jaxcourse-prepared-launch", daemon=True)
        self._thread.start()

    def _launch(self, launch: Any, devices: int, kwargs: dict) -> None:
        try:
            self._result = launch("worker.py", self.num_processes, devices, **kwargs)
        except BaseException as err:  # handed to run()
            self._error = err
        finally:
            self._ended.set()

    @property
    def handed(self) -> bool:
        """Whether the processes were given their job (:meth:`run`)."""
        return self._handed

    def waiting(self) -> bool:
        """Whether the processes are starting or waiting, and have no job yet."""
        return (not self._handed and not self._ended.is_set()
                and not (self.folder / _STOP_FILE).exists())

    def will_wait(self, seconds: float) -> bool:
        """Whether they are :meth:`waiting` and will be for ``seconds`` more.

        By their idle time: processes about to give up are better not handed
        a job.
        """
        return self.waiting() and time.monotonic() + seconds < self._gives_up

    def ready(self) -> bool:
        """Whether every process is started and waiting for its job."""
        return self.waiting() and all(_ready_file(self.folder, r).exists()
                                      for r in range(self.num_processes))

    def wait_ready(self, timeout: float) -> bool:
        """Wait until :meth:`ready` (``True``) or ``timeout`` s, or the launch ended."""
        end = time.monotonic() + timeout
        while not self.ready() and self.waiting() and time.monotonic() < end:
            time.sleep(0.02)
        return self.ready()

    def run(self, job: dict[str, Any], timeout: float,
            files: dict[str, str] | None = None) -> Any:
        """Hand the processes ``job`` and wait for the launch to end.

        Parameters
        ----------
        job : dict
            What the processes read from :data:`JOB_FILE` (JSON); ``timeout``
            is added to it.
        timeout : float
            Seconds the job may run in each process (counted from when the
            process reads it).
        files : dict, optional
            Files the job needs, by name: written into the processes' folder
            before the job.

        Returns
        -------
        LaunchResult
            As :func:`jaxcourse.launch.launch` returns it.

        Raises
        ------
        RuntimeError
            If the launch already had a job.
        LaunchError
            As the launch raised it (a rank whose job ran out of time is a
            failed rank whose output holds :data:`TIMED_OUT`).
        """
        if self._handed:
            raise RuntimeError("this prepared launch already had its job")
        self._handed = True
        for name, text in (files or {}).items():
            (self.folder / name).write_text(text, encoding="utf-8")
        written = self.folder / "job.tmp"
        written.write_text(json.dumps({**job, "timeout": timeout}), encoding="utf-8")
        os.replace(written, self.folder / JOB_FILE)  # every process reads it whole
        try:
            # Processes still starting need their start-up besides the job.
            self._ended.wait(timeout + STARTUP_SECONDS + 5.0)
        finally:
            # Interrupted (the stop button, a time limit), or the processes
            # never ended themselves: stop them, and wait for the launcher.
            self.close()
        if not self._ended.is_set():
            raise RuntimeError("the prepared processes did not end")
        if self._error is not None:
            raise self._error.with_traceback(None)
        return self._result

    def close(self, wait: float = 10.0) -> None:
        """Stop the processes (waiting, or running their job) and clean up."""
        if not self._ended.is_set():
            with contextlib.suppress(OSError):
                (self.folder / _STOP_FILE).touch()
            self._ended.wait(wait)
        if self._ended.is_set():
            shutil.rmtree(self.folder, ignore_errors=True)
