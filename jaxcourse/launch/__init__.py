"""Start several JAX processes on one machine, the way a cluster would.

JAX's multi-process model runs one Python program per host; each calls
:func:`jax.distributed.initialize` and they meet at a coordinator. On one
laptop we can play every host: :func:`launch` starts ``N`` local processes
with ``M`` simulated CPU devices each, streams their output prefixed by rank,
and makes sure that a crash or a hang ends *every* process with a message
that says which rank failed and why. :func:`launch_mpirun` starts the same
script through Open MPI's ``mpirun``, as clusters do.

Each process started by :func:`launch` finds its place in these environment
variables (the worker reads them itself, or calls :func:`initialize_from_env`):

``JAX_COURSE_COORDINATOR``
    ``"127.0.0.1:PORT"``: where process 0 serves the coordinator.
``JAX_COURSE_NUM_PROCESSES``
    The number of processes, ``N``.
``JAX_COURSE_PROCESS_ID``
    This process's rank, ``0 .. N-1``.
``JAX_COURSE_DEVICES_PER_PROCESS``
    The number of simulated CPU devices each process should create, ``M``
    (``XLA_FLAGS`` carries the same number, for scripts that do nothing).

The launcher keeps all its traffic on the loopback address 127.0.0.1: the
coordinator, Open MPI's own connections under :func:`launch_mpirun`, and the
Gloo connections of workers that call :func:`initialize_from_env`. (A worker
that calls ``jax.distributed.initialize`` itself leaves Gloo at its default:
the address this machine's hostname resolves to.)

Failures never leave a process behind: each rank runs in its own process
group, and on a crash, a timeout or an interrupt (the notebook's stop button)
every group is sent SIGTERM, then SIGKILL. Every process of a launch carries
a tag in its environment, so that a child that left its group (a new
session, a double fork, ``nohup``) is found and ended too; the teardown is
:func:`jaxcourse.processes.end_tree`, the grader's as well.

The package is split at its seams; everything public is importable from here:

:mod:`~jaxcourse.launch.worker`
    inside a rank: :func:`initialize_from_env` and the environment's names;
:mod:`~jaxcourse.launch.start`
    :func:`launch`, :func:`launch_mpirun`, ports and each rank's environment;
:mod:`~jaxcourse.launch.supervise`
    running the processes, streaming their output, ending them all;
:mod:`~jaxcourse.launch.output`
    reading the ranks' output and putting a failure into words;
:mod:`~jaxcourse.launch.result`
    :class:`LaunchResult` and the errors a launch raises;
:mod:`~jaxcourse.launch.process_groups`
    which processes each collective of a compiled program joins, read from
    its replica groups (imported by its own name: it needs NumPy).
"""

from __future__ import annotations

from jaxcourse.launch import result, start, worker
from jaxcourse.launch.result import *  # noqa: F403  (all public here)
from jaxcourse.launch.start import *  # noqa: F403
from jaxcourse.launch.worker import *  # noqa: F403

__all__: list[str] = []
__all__ += result.__all__
__all__ += start.__all__
__all__ += worker.__all__
