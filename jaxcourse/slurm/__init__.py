"""The course's own Slurm cluster, and running programs and jobs on it.

Slurm is what most university and HPC clusters run. This module starts a
small cluster that belongs to the course, on this one machine, so that the
multi-process chapter and the grader can use real ``sbatch`` and ``srun``:

- :func:`start` and :func:`stop` (``make cluster``, ``make cluster-stop``, or
  ``python -m jaxcourse.slurm start|stop|status``) run ``munged``,
  ``slurmctld`` and one or two ``slurmd`` with a configuration written under
  ``~/.jax-course/slurm/`` (``JAX_COURSE_SLURM_DIR`` moves it): its own
  config, state and spool folders, logs, munge key and socket. It never
  reads or changes a system-wide Slurm or munge installation.
- The nodes listen on loopback addresses. Where this process may create
  namespaces (root), there are two nodes, ``node1`` on 127.0.0.1 and
  ``node2`` on 127.0.0.2: each ``slurmd`` runs in a UTS and mount namespace
  of its own, with its node's name as hostname and an ``/etc/hosts`` that
  names both, so that a job sees two hosts, as on a real cluster. Without
  that, one node, ``localhost``.
- :func:`client_env` is the environment in which ``sbatch``, ``srun``,
  ``squeue`` talk to this cluster (``SLURM_CONF``; a shell gets it from
  ``python -m jaxcourse.slurm env``, and ``python -m jaxcourse.slurm
  squeue|sacct`` needs none); :func:`submit`,
  :func:`wait` and :func:`job_state` submit a batch script, wait for it with a
  time limit, and read its state; :func:`launch_srun` runs a program as
  ``srun`` tasks with the interface of :func:`jaxcourse.launch.launch`.

Every wait has a time limit, and a missing Slurm is a one-line
:class:`SlurmUnavailableError`, never a hang or a traceback from here.

The package's modules, bottom to top (each imports only those before it):
:mod:`~jaxcourse.slurm.base` (the cluster's folder, the errors, a Slurm
command's environment), :mod:`~jaxcourse.slurm.daemons` (configure, start,
stop), :mod:`~jaxcourse.slurm.jobs` (submit, wait, state, output),
:mod:`~jaxcourse.slurm.srun` (:func:`launch_srun`) and
:mod:`~jaxcourse.slurm.cli` (``python -m jaxcourse.slurm``). Everything is
re-exported here: ``from jaxcourse import slurm; slurm.start()``.
"""

from __future__ import annotations

from jaxcourse.slurm import base, cli, daemons, jobs, srun
from jaxcourse.slurm.base import *  # noqa: F403  (all public here)
from jaxcourse.slurm.base import _run  # noqa: F401  (the tests call these)
from jaxcourse.slurm.cli import *  # noqa: F403
from jaxcourse.slurm.daemons import *  # noqa: F403
from jaxcourse.slurm.daemons import _config, _nodes  # noqa: F401
from jaxcourse.slurm.jobs import *  # noqa: F403
from jaxcourse.slurm.srun import *  # noqa: F403

__all__: list[str] = []
__all__ += base.__all__
__all__ += daemons.__all__
__all__ += jobs.__all__
__all__ += srun.__all__
__all__ += cli.__all__
