"""Another clone's job, waiting in the course's cluster while a notebook runs.

The course's Slurm cluster is one per home folder, shared by every clone
(``make cluster``): while one clone's chapter 8 runs, another clone's jobs may
sit in the queue, under the same user and with the same job names. A notebook
whose stored output lists the whole queue then fails for a reason of another
checkout's. ``tests/conftest.py`` puts such a job in the queue for the whole
of every notebook named in :data:`NOTEBOOKS`, so that nbval proves those
notebooks list only their own jobs.

The job is held (``sbatch --hold``): it stays PENDING, takes no node and
cannot be preempted, and it is cancelled when the notebook's last cell has
run. It carries the name of chapter 8's own first job, so only a notebook
that names its jobs by id, not by name, leaves it out.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from jaxcourse import slurm

# Notebooks that run with a foreign job in the queue (paths from the root).
NOTEBOOKS = ("book/08_multiprocess.ipynb",)
# The name chapter 8 gives its own time-limit job.
NAME = "time-limit"

_SCRIPT = f"""#!/bin/bash
#SBATCH --job-name={NAME}
#SBATCH --ntasks=1
#SBATCH --time=5
#SBATCH --output=/dev/null
sleep 300
"""


class ForeignJob:
    """A held job of "another clone", and whether the cluster was started for it."""

    def __init__(self) -> None:
        self.job: str | None = None
        self.started = False
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    def submit(self) -> None:
        """Queue the held job; nothing where Slurm cannot run (nor does the chapter)."""
        if slurm.unavailable_reason() is not None:
            return
        self.started = slurm.start(timeout=90, quiet=True).started
        # From a folder of its own, as another checkout would submit it.
        self._folder = tempfile.TemporaryDirectory(prefix="other-clone-")
        script = Path(self._folder.name) / "other.sbatch"
        script.write_text(_SCRIPT)
        self.job = slurm.submit(script, cwd=self._folder.name, options=["--hold"])
        state = slurm.job_state(self.job).state
        if state != "PENDING":
            raise AssertionError(f"the foreign job {self.job} is {state}, not held")

    def cancel(self) -> None:
        """Cancel the job, wait until the queue has let it go, stop what we started."""
        try:
            if self.job is not None:
                slurm.cancel(self.job)
                # test_slurm, on the same worker next, expects an empty queue.
                deadline = time.monotonic() + 30
                while (self.job in slurm.command("squeue", "--noheader", "--format=%i")
                       .split() and time.monotonic() < deadline):
                    time.sleep(0.2)
        finally:
            if self.started:
                slurm.stop(quiet=True)
            if self._folder is not None:
                self._folder.cleanup()
            self.job, self.started, self._folder = None, False, None
