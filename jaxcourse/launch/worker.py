"""Inside a worker: join the launch this process belongs to.

A rank started by :func:`~jaxcourse.launch.launch` finds its place in the
``JAX_COURSE_*`` environment variables named here, and
:func:`initialize_from_env` turns them into a ``jax.distributed`` process:
Gloo collectives kept on the loopback address, the simulated device count,
and an exit at once after an uncaught exception (so a crashed rank does not
look like a hung one).
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

from jaxcourse.launch.result import LaunchError

__all__ = [
    "COORDINATOR_ENV",
    "DEVICES_ENV",
    "LOOPBACK",
    "NUM_PROCESSES_ENV",
    "PROCESS_ID_ENV",
    "initialize_from_env",
]

COORDINATOR_ENV = "JAX_COURSE_COORDINATOR"
NUM_PROCESSES_ENV = "JAX_COURSE_NUM_PROCESSES"
PROCESS_ID_ENV = "JAX_COURSE_PROCESS_ID"
DEVICES_ENV = "JAX_COURSE_DEVICES_PER_PROCESS"

# Every connection of a launch stays on this machine.
LOOPBACK = "127.0.0.1"


def initialize_from_env(*, fail_fast: bool = True) -> None:
    """Join the launch this process belongs to; call it before any JAX work.

    Started by :func:`~jaxcourse.launch.launch`, it does what a worker would
    otherwise write out by hand: Gloo for cross-process collectives on CPU,
    the simulated device count, and :func:`jax.distributed.initialize` with
    the address, process count and rank from the environment (coordinator
    bound to 127.0.0.1 only). Started by ``mpirun``, ``srun`` or on a Cloud
    TPU VM (no ``JAX_COURSE_PROCESS_ID``), it calls
    ``jax.distributed.initialize()`` with no arguments and lets JAX read the
    cluster's own variables.

    Parameters
    ----------
    fail_fast : bool
        End the process with exit code 1 as soon as an exception escapes the
        script. By default JAX's exit handler first waits (up to five
        minutes) at a shutdown barrier for the other ranks, so a crashed rank
        would look like a hang to the launcher.

    Raises
    ------
    LaunchError
        If no launcher (nor ``mpirun``, ``srun``, a TPU VM) started this
        process.
    """
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    devices = os.environ.get(DEVICES_ENV)
    if devices:
        jax.config.update("jax_num_cpu_devices", int(devices))
    if fail_fast:
        sys.excepthook = _exit_after_traceback
    if PROCESS_ID_ENV not in os.environ:
        try:
            jax.distributed.initialize()
        except ValueError as exc:
            if "coordinator_address" not in str(exc):
                raise
            raise LaunchError(
                "this script is one rank of a multi-process run, but no launcher "
                "started it. Start it with jaxcourse.launch.launch(...) or under "
                "`mpirun`/`srun`."
            ) from None
        return
    _pin_gloo_to_loopback()
    address = os.environ[COORDINATOR_ENV]
    if int(os.environ[PROCESS_ID_ENV]) != 0:
        _wait_for_coordinator(address)
    jax.distributed.initialize(
        coordinator_address=address,
        num_processes=int(os.environ[NUM_PROCESSES_ENV]),
        process_id=int(os.environ[PROCESS_ID_ENV]),
        # By default the coordinator listens on every interface.
        coordinator_bind_address=address,
    )


def _wait_for_coordinator(address: str, seconds: float = 30.0) -> None:
    """Return once rank 0's coordinator accepts connections (or after ``seconds``).

    A rank that connects before the coordinator listens is refused, and the
    connection library then waits about a second before it tries again: on
    a busy laptop that second was half of a launch. Probing every 10 ms
    first makes the first attempt succeed. If the coordinator never comes
    up, ``jax.distributed.initialize`` reports it as it would have.
    """
    import socket
    import time

    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return
        except OSError:
            time.sleep(0.01)


def _exit_after_traceback(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    sys.__excepthook__(exc_type, exc, tb)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def _pin_gloo_to_loopback() -> None:
    """Make Gloo listen on 127.0.0.1 rather than where the hostname resolves.

    JAX 0.10 builds its Gloo collectives without an address, and Gloo then
    binds to whatever this machine's hostname resolves to: a LAN address on
    many machines, nothing at all on some laptops. All our processes share
    one machine, so loopback is right. This reaches into JAX internals; if
    they move, Gloo keeps its default.
    """
    try:
        from functools import partial

        from jax._src.lib import _jax
    except ImportError:
        return
    make = getattr(_jax, "make_gloo_tcp_collectives", None)
    if make is None or isinstance(make, partial):
        return
    _jax.make_gloo_tcp_collectives = partial(make, hostname=LOOPBACK)
