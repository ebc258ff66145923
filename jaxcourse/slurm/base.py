"""Where the course's Slurm cluster lives, and how a Slurm command reaches it.

The bottom of :mod:`jaxcourse.slurm`: the cluster's folder and files
(:class:`Cluster`, :func:`cluster`, ``$JAX_COURSE_SLURM_DIR``), the errors of
the whole package, whether Slurm is installed here
(:func:`unavailable_reason`), and the environment and time limit under which
``sbatch``, ``srun``, ``squeue``... talk to the course's cluster
(:func:`client_env`, ``_run``). It starts nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jaxcourse import CourseError
from jaxcourse.cli import MissingToolError

__all__ = [
    "CLIENTS",
    "DAEMONS",
    "DIR_ENV",
    "MARK_ENV",
    "PARTITION",
    "URGENT",
    "Cluster",
    "SlurmError",
    "SlurmTimeoutError",
    "SlurmUnavailableError",
    "client_env",
    "cluster",
    "unavailable_reason",
]

DIR_ENV = "JAX_COURSE_SLURM_DIR"
# Every daemon the course starts carries this variable (the cluster's
# folder), and so does everything they start: how :func:`stop` recognizes
# them, and never another Slurm's processes.
MARK_ENV = "JAX_COURSE_SLURM"
CLIENTS = ("sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel", "sacct")
DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "course"
#: A second partition on the same nodes whose jobs preempt those of
#: :data:`PARTITION` (chapter 8's preemption and requeue).
URGENT = "urgent"


class SlurmError(CourseError):
    """Something about the course's Slurm cluster or a job on it went wrong."""


class SlurmUnavailableError(SlurmError, MissingToolError):
    """Slurm is not installed here, or the course's cluster is not running."""


class SlurmTimeoutError(SlurmError):
    """A job or the cluster did not get where it should in time."""


# --------------------------------------------------------------------------
# Where everything lives
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """The folders and files of the course's cluster."""

    root: Path

    @property
    def conf(self) -> Path:
        """``slurm.conf``; clients find it through ``SLURM_CONF``."""
        return self.root / "etc" / "slurm.conf"

    @property
    def hosts(self) -> Path:
        """The ``/etc/hosts`` the nodes see: both node names, on loopback."""
        return self.root / "etc" / "hosts"

    @property
    def key(self) -> Path:
        """The cluster's own munge key."""
        return self.root / "munge" / "munge.key"

    @property
    def socket(self) -> Path:
        """The socket of the cluster's own ``munged``."""
        return self.root / "run" / "munge.socket"

    @property
    def log_dir(self) -> Path:
        """The daemons' logs."""
        return self.root / "log"

    @property
    def jobs_log(self) -> Path:
        """Slurm's job completion log (``sacct -c`` reads it)."""
        return self.log_dir / "jobs.txt"

    def pid_file(self, daemon: str) -> Path:
        """Return the pid file of ``munged``, ``slurmctld`` or ``slurmd-<node>``."""
        return self.root / "run" / f"{daemon}.pid"

    def log(self, daemon: str) -> Path:
        """Return the log file of ``daemon``."""
        return self.log_dir / f"{daemon}.log"


def cluster() -> Cluster:
    """Return the course's cluster (its folder: ``$JAX_COURSE_SLURM_DIR``)."""
    root = os.environ.get(DIR_ENV) or Path.home() / ".jax-course" / "slurm"
    return Cluster(Path(root).expanduser().resolve())


def unavailable_reason() -> str | None:
    """Say in one line why the course's cluster cannot run here, or ``None``."""
    missing = [c for c in (*CLIENTS, *DAEMONS) if shutil.which(c) is None]
    if missing:
        return (
            f"Slurm is not installed here ({', '.join(missing)} not found); "
            "`make cluster` installs it (Debian's slurmctld, slurmd, "
            "slurm-client and munge)"
        )
    return None


def client_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment whose Slurm commands use the course's cluster.

    ``SLURM_CONF`` points at the course's ``slurm.conf``, and the directory
    of this Python comes first on ``PATH``, so that a job's ``python`` is
    the course's.
    """
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = str(cluster().conf)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    return env


def _run(argv: Sequence[str], timeout: float = 20.0,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a Slurm command against the course's cluster, with a time limit."""
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout,
            env=client_env() if env is None else dict(env), stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise SlurmUnavailableError(unavailable_reason() or
                                    f"{argv[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise SlurmTimeoutError(
            f"`{' '.join(argv[:2])}` did not answer within {timeout:g} s; is the "
            f"cluster up? (its logs: {_tilde(cluster().log_dir)})") from None


def _tilde(path: Path) -> str:
    # Messages (and stored notebook outputs) name the home folder as ~.
    with contextlib.suppress(ValueError):
        return "~/" + str(path.relative_to(Path.home()))
    return str(path)
