"""Real TPU slices, compiled for from this machine: compile-only devices and their mesh.

The simulated CPU devices of :mod:`jaxcourse.devices` are for *running*
things; what a program costs on a chip (its memory, its FLOPs, the
collectives it really issues) is a fact of that chip's compiler. XLA's CPU
backend is not a stand-in for it: its ``peak_memory_in_bytes`` leaves the
temporaries out, it lays out and fuses differently, and it prints collectives
differently. JAX can ask the TPU compiler itself without a TPU:
``jax.experimental.topologies.get_topology_desc(topology_name="v5e:2x4",
platform="tpu")`` returns *compile-only* devices of that slice, and a program
lowered onto a mesh of them compiles with the real TPU compiler (libtpu)
into a real ``memory_analysis()``, ``cost_analysis()`` and HLO; nothing can
run on them. MaxText's ``train_compile.py`` is built on the same idea.

Where libtpu comes from. ``make setup`` unpacks the libtpu that the pinned
JAX names (``requirements.txt``) into ``~/.jax-course/libtpu/<version>``,
*outside* the course's environment: importable there, it would make every
JAX start on a machine without a TPU try the TPU first, print libtpu's
initialisation errors and fall back to the CPU a second later. Loaded here
only when a slice is asked for, after JAX has chosen its CPU backend, it
adds a compiler and nothing else; what it prints while it starts is kept
and shown only if it fails. On a TPU machine (a TPU VM, Colab's or Kaggle's
TPU runtime) JAX's own libtpu is used. ``JAX_COURSE_LIBTPU`` names another
``libtpu.so``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from jaxcourse import CourseError

__all__ = ["ALLOW_ENV", "LIBTPU_ENV", "LIBTPU_VERSION", "SLICES", "Slice", "SliceError",
           "compile_for_chip", "libtpu_path", "libtpu_version", "slice_devices",
           "slice_mesh"]

#: The libtpu that JAX 0.10.2's ``jax[tpu]`` extra names (``requirements.txt``
#: pins the same; a test keeps the two equal).
LIBTPU_VERSION = "0.0.42.1"

#: Names another ``libtpu.so`` (or the folder holding it).
LIBTPU_ENV = "JAX_COURSE_LIBTPU"

_GIB = 2**30


#: libtpu lets one process at a time hold it (a lock file in /tmp) unless the
#: process *started* with this variable set (libtpu reads the environment the
#: process was started with, so setting it later does nothing). The course's
#: make targets export it: with no TPU there is no chip to guard, and two
#: notebooks or two test workers may both compile for a slice.
ALLOW_ENV = "ALLOW_MULTIPLE_LIBTPU_LOAD"

_LOCKED = (
    "another process on this machine holds libtpu (a notebook or program that "
    "compiled for a TPU slice), and this one was started without "
    f"{ALLOW_ENV}=1. Restart that kernel, or start Jupyter with "
    f"`{ALLOW_ENV}=1 jupyter lab` (`make lab` does), then run this cell again.")


class SliceError(CourseError):
    """A slice could not be made: no libtpu, or a name the course does not know."""


class Slice(NamedTuple):
    """A TPU slice the course compiles for.

    Attributes
    ----------
    name : str
        The course's name, e.g. ``"v5e 2x4"``.
    topology : str
        libtpu's topology name, e.g. ``"v5e:2x4"``.
    chip : str
        The chip, as :data:`jaxcourse.scaling.HARDWARE` names it.
    shape : tuple of int
        Chips along each axis of the slice's torus.
    hbm : int
        Published HBM per chip, bytes.
    usable_hbm : int
        What the TPU compiler lets one program use per chip, bytes: the
        "available HBM" of its out-of-memory message (libtpu 0.0.42.1;
        ``tests/test_slices.py`` reads it back from the compiler).
    """

    name: str
    topology: str
    chip: str
    shape: tuple[int, ...]
    hbm: int
    usable_hbm: int

    @property
    def chips(self) -> int:
        """Chips in the slice (one JAX device each on v5e, v5p and v6e)."""
        count = 1
        for n in self.shape:
            count *= n
        return count


def _slice(topology: str, chip: str, hbm_gib: float, usable_gib: float) -> Slice:
    generation, _, dims = topology.partition(":")
    shape = tuple(int(n) for n in dims.split("x"))
    return Slice(f"{generation} {dims}", topology, chip, shape,
                 round(hbm_gib * _GIB), round(usable_gib * _GIB))


#: The slices the chapters compile for. HBM per chip from Google Cloud's TPU
#: pages (v5e 16 GiB, v5p 95 GiB, v6e 32 GiB); usable HBM from the compiler.
SLICES: dict[str, Slice] = {s.name: s for s in (
    _slice("v5e:2x4", "TPU v5e", 16, 15.75),
    _slice("v5e:4x4", "TPU v5e", 16, 15.75),
    _slice("v5e:16x16", "TPU v5e", 16, 15.75),
    _slice("v5p:2x2x2", "TPU v5p", 95, 95.74),
    _slice("v5p:4x4x4", "TPU v5p", 95, 95.74),
    _slice("v6e:2x4", "TPU v6e", 32, 31.25),
    _slice("v6e:16x16", "TPU v6e", 32, 31.25),
)}


def _course_libtpu() -> Path:
    home = Path.home() / ".jax-course"
    return home / "libtpu" / LIBTPU_VERSION / "libtpu" / "libtpu.so"


def libtpu_path() -> str | None:
    """Return the ``libtpu.so`` slices compile with, or ``None`` if there is none.

    In order: ``JAX_COURSE_LIBTPU`` (a file, or a folder holding
    ``libtpu.so`` or ``libtpu/libtpu.so``), the course's own copy
    (``~/.jax-course/libtpu/<version>``, from ``make setup``), and JAX's own
    (an importable ``libtpu``, as on a TPU machine).
    """
    named = os.environ.get(LIBTPU_ENV)
    if named:
        for candidate in (Path(named), Path(named) / "libtpu.so",
                          Path(named) / "libtpu" / "libtpu.so"):
            if candidate.is_file():
                return str(candidate)
        return None
    if _course_libtpu().is_file():
        return str(_course_libtpu())
    from jax._src.cloud_tpu_init import get_tpu_library_path

    return get_tpu_library_path()


def libtpu_version() -> str | None:
    """Return the version of the libtpu :func:`libtpu_path` finds, if known.

    The course's own copy is :data:`LIBTPU_VERSION`; JAX's is the installed
    ``libtpu`` distribution's. One named by ``JAX_COURSE_LIBTPU`` carries no
    version a program can read: ``None``, as where there is no libtpu.
    """
    import importlib.metadata as md

    path = libtpu_path()
    if path is None or os.environ.get(LIBTPU_ENV):
        return None
    if path == str(_course_libtpu()):
        return LIBTPU_VERSION
    try:
        return md.version("libtpu")
    except md.PackageNotFoundError:
        return None


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[list[str]]:
    """Keep what C++ writes to file descriptor 2 meanwhile; yield it as lines.

    libtpu logs its start (no TPU hostnames, no accelerator type) with its own
    C++ logger, below Python's ``sys.stderr``; only a descriptor-level
    redirect keeps it out of a notebook's output.
    """
    kept: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            yield kept
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept.extend(sink.read().decode("utf-8", "replace").splitlines())


def _without_persistent_cache() -> None:
    """Turn JAX's persistent compilation cache off for the rest of this process.

    JAX 0.10.2 writes a compile-only TPU executable into the cache but cannot
    read it back ("PjRtCompiler must be constructed with a Client to call
    DeserializeLoadedExecutable"): the second run of a notebook would fail on
    its own cache. A process that compiles for a slice therefore compiles
    everything afresh; ``reset_cache`` makes JAX read the setting again.
    """
    import jax
    from jax._src import compilation_cache

    if jax.config.jax_enable_compilation_cache:
        jax.config.update("jax_enable_compilation_cache", False)
        compilation_cache.reset_cache()


def slice_devices(name: str) -> list:
    """Return the compile-only devices of the TPU slice ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`SLICES`, e.g. ``"v5e 2x4"`` (``"v5e:2x4"`` works too).

    Returns
    -------
    list of jax.Device
        One per chip, in libtpu's order. Programs compile onto them; nothing runs.

    Raises
    ------
    SliceError
        If the name is not a known slice, or no libtpu can be found or loaded;
        the message says what to do.
    """
    wanted = SLICES.get(name) or SLICES.get(name.replace(":", " "))
    if wanted is None:
        raise SliceError(f"no TPU slice named {name!r}: the course compiles for "
                         f"{', '.join(repr(k) for k in SLICES)}")
    path = libtpu_path()
    if path is None:
        raise SliceError(
            "compiling for a TPU slice needs libtpu, the TPU compiler, and none was "
            f"found: run `make setup` (it unpacks libtpu {LIBTPU_VERSION} into "
            "~/.jax-course/libtpu), or `pip install libtpu==" + LIBTPU_VERSION
            + f"` into a folder of your own and set {LIBTPU_ENV} to it")
    from jax._src import xla_bridge
    from jax._src.lib import _jax, xla_client

    try:
        with _quiet_stderr() as logged:
            # Loaded by path, not through TPU_LIBRARY_PATH: a variable would
            # reach every child process, whose JAX would then try a TPU first.
            if not xla_client.pjrt_plugin_loaded("tpu"):
                xla_client.load_pjrt_plugin_dynamically("tpu", path)
            topology = xla_bridge.make_pjrt_tpu_topology(wanted.topology)
            devices = list(topology._make_compile_only_devices())
        _without_persistent_cache()
    except (RuntimeError, _jax.JaxRuntimeError) as error:
        if "lockfile" in str(error):
            raise SliceError(_LOCKED) from None
        detail = "\n".join([str(error).splitlines()[0], *logged[-5:]])
        raise SliceError(f"libtpu ({path}) could not describe the slice "
                         f"{wanted.name!r}:\n{detail}") from None
    return devices


def slice_mesh(name: str, axis_shapes: Sequence[int],
               axis_names: Sequence[str], explicit: bool = True) -> Any:
    """Return a mesh over the compile-only devices of the TPU slice ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`SLICES`.
    axis_shapes, axis_names : sequence
        The mesh, as ``jax.make_mesh`` takes it; the product of the shapes must
        be the slice's chip count.
    explicit : bool
        Explicit axis types (the course's default); ``False`` for Auto.

    Raises
    ------
    SliceError
        As :func:`slice_devices`, or if the mesh does not cover the slice.
    """
    import jax
    from jax.sharding import AxisType

    devices = slice_devices(name)
    size = 1
    for n in axis_shapes:
        size *= n
    if size != len(devices):
        raise SliceError(f"a {' × '.join(map(str, axis_shapes))} mesh has {size} "
                         f"devices; the slice {name!r} has {len(devices)}")
    kind = AxisType.Explicit if explicit else AxisType.Auto
    return jax.make_mesh(tuple(axis_shapes), tuple(axis_names),
                         axis_types=(kind,) * len(axis_names), devices=devices)


def compile_for_chip(jitted: Any, *args: Any, slice_name: str = "v5e 2x4") -> Any:
    """Compile ``jitted`` for one chip of ``slice_name``, from its arguments' shapes.

    Each argument (an array or a ``jax.ShapeDtypeStruct``, in any pytree) is
    replaced by its shape and dtype on the slice's first chip, so the program
    is the one this machine's CPU would run, compiled by the TPU compiler:
    its ``memory_analysis()`` and ``cost_analysis()`` are the chip's.

    Parameters
    ----------
    jitted : jax.stages.Wrapped
        A ``jax.jit`` function (its ``donate_argnums`` are kept).
    *args
        What it would be called with.
    slice_name : str
        A key of :data:`SLICES`.

    Returns
    -------
    jax.stages.Compiled
        Nothing can run it; read its analyses.
    """
    import jax
    from jax.sharding import SingleDeviceSharding

    on = SingleDeviceSharding(slice_devices(slice_name)[0])
    shaped = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=on),
                          args)
    return jitted.lower(*shaped).compile()
