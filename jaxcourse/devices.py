"""Simulated CPU devices, so parallelism chapters run on any laptop.

XLA can split one CPU into N "devices". JAX reads that number once, when its
backend first starts (the first array, the first ``jax.devices()``), so it
must be set before: :func:`use_cpu_devices` is the one place that does it in
this process. A child process (a launched rank, a DataLoader worker) reads it
from ``XLA_FLAGS`` instead; :func:`xla_flags` is the one place that writes
that flag, for :func:`use_cpu_devices` and the launcher
(:mod:`jaxcourse.launch`) alike.
"""

from __future__ import annotations

import os

from jaxcourse import CourseError

__all__ = ["DeviceSetupError", "mesh_devices", "use_cpu_devices", "xla_flags"]

_FLAG = "--xla_force_host_platform_device_count"


class DeviceSetupError(CourseError):
    """JAX started before the course could give it the devices asked for."""


def xla_flags(device_count: int, flags: str | None = None) -> str:
    """Return ``XLA_FLAGS`` that ask for ``device_count`` simulated CPU devices.

    Any device count already in ``flags`` is replaced (a notebook's own count
    must not reach a launched rank); every other flag is kept, in order.

    Parameters
    ----------
    device_count : int
        Simulated CPU devices (1 or more).
    flags : str, optional
        The flags to start from; by default this process's ``XLA_FLAGS``.

    Returns
    -------
    str
        The new value, for ``os.environ["XLA_FLAGS"]`` or a child's environment.

    Raises
    ------
    ValueError
        If ``device_count`` is not a positive integer.
    """
    if (
        not isinstance(device_count, int)
        or isinstance(device_count, bool)
        or device_count < 1
    ):
        raise ValueError(
            f"device_count must be a positive integer, not {device_count!r}"
        )
    if flags is None:
        flags = os.environ.get("XLA_FLAGS", "")
    kept = [f for f in flags.split() if f.split("=", 1)[0] != _FLAG]
    return " ".join([*kept, f"{_FLAG}={device_count}"])


def _backends_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def use_cpu_devices(n: int) -> list:
    """Give JAX ``n`` simulated CPU devices and return them.

    Call it right after ``import jax``, before anything creates an array.
    Calling it again with the same or a smaller ``n`` is harmless, so a
    notebook can be re-run top to bottom. It also makes the CPU JAX's only
    platform, so that on a machine with an accelerator (Colab's or Kaggle's
    TPU runtime) ``jax.devices()`` is these ``n`` devices, not the one chip.

    Parameters
    ----------
    n : int
        Number of CPU devices wanted (1 or more).

    Returns
    -------
    list of jax.Device
        ``jax.devices("cpu")``, of length at least ``n``.

    Raises
    ------
    DeviceSetupError
        If JAX already started with fewer than ``n`` CPU devices, or on an
        accelerator; the message says to restart the kernel and call this first.
    ValueError
        If ``n`` is not a positive integer.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive integer, not {n!r}")
    import jax

    if not _backends_started():
        jax.config.update("jax_num_cpu_devices", n)
        # On a machine with an accelerator (a TPU or GPU runtime) JAX would
        # start on it and `jax.devices()` would be its one chip: the chapter's
        # meshes need the n CPU devices to be the default ones.
        jax.config.update("jax_platforms", "cpu")
        # Child processes (a launcher, a DataLoader worker) read XLA_FLAGS,
        # not this process's config; keep the two in step.
        os.environ["XLA_FLAGS"] = xla_flags(n)
    elif jax.default_backend() != "cpu":
        raise DeviceSetupError(
            f"JAX already started on the {jax.default_backend().upper()}, so its "
            f"default devices are the accelerator's ({len(jax.devices())}), not "
            f"{n} CPU devices, and that cannot change once it has started. Restart "
            f"the kernel (Runtime > Restart session in Colab) and run "
            f"use_cpu_devices({n}) right after `import jax`, before anything "
            "creates an array.")
    devices = jax.devices("cpu")
    if len(devices) < n:
        raise DeviceSetupError(
            f"JAX already started with {len(devices)} CPU device"
            f"{'s' if len(devices) != 1 else ''}, and the number of devices "
            f"cannot change once it has. Restart the kernel (or the Python "
            f"process) and call use_cpu_devices({n}) right after `import jax`, "
            "before anything creates an array."
        )
    return devices


def mesh_devices(count: int, what: str = "this", first_cell: int | None = None) -> list:
    """Return ``count`` devices to build a mesh on, or say clearly what is missing.

    The default devices come first; beside one GPU, the simulated CPU devices
    of :func:`use_cpu_devices` do.

    Parameters
    ----------
    count : int
        How many devices the mesh needs.
    what : str
        Who needs them, for the message (e.g. ``"this exercise"``).
    first_cell : int, optional
        The ``use_cpu_devices(...)`` argument the message names; ``count`` if
        omitted.

    Raises
    ------
    DeviceSetupError
        If JAX has fewer than ``count`` devices.
    """
    import jax

    devices = jax.devices()
    if len(devices) < count:
        devices = jax.devices("cpu")
    if len(devices) >= count:
        return devices[:count]
    first = count if first_cell is None else first_cell
    raise DeviceSetupError(f"{what} needs {count} devices and JAX has {len(devices)}: "
                           "restart the kernel and run the first cell "
                           f"(use_cpu_devices({first})) first")
