"""JAX's persistent compilation cache, in the course's folder, for this machine.

JAX can keep every compiled program on disk and reuse it in a later process
that compiles the same program: the second run of a notebook, a test suite or
a launched worker then skips most of its compiling. The course turns it on for
its test suite (``tests/conftest.py``), and so for every notebook kernel and
process the tests start; for a learner's exercises, as soon as a notebook
imports :mod:`jaxcourse.exercises` (:func:`enable_by_default`), and so for
the processes a Check launches; and ``make setup`` fills it with what the
reference answers compile (``python -m jaxcourse.exercises.authoring.warm_cache``), so
that even a learner's first Check finds much of its work done.
``JAX_COURSE_COMPILE_CACHE=off`` keeps it off everywhere.

The folder is ``~/.jax-course/cache/jax/<key>`` (``JAX_COURSE_CACHE_DIR``
moves ``~/.jax-course/cache``). JAX's own key covers the program, the
compile options, the XLA flags and the JAX and jaxlib versions, but not the
host CPU, whose instruction set a CPU executable is compiled for; so the
folder's name adds the versions and a digest of the CPU's model and flags,
and a copied home folder never runs another machine's code.

The grader does not use it (:func:`without`): submissions run in sandboxes
that could write to a shared cache, and one submission must never be able to
place compiled code that another one runs.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CACHE_DIR_ENV", "JAX_SETTINGS", "SWITCH_ENV", "cache_dir", "enable",
           "enable_by_default", "machine_key", "without"]

#: Moves the folder that holds the cache (default ``~/.jax-course/cache``).
CACHE_DIR_ENV = "JAX_COURSE_CACHE_DIR"

#: ``off`` keeps the cache off where the course would turn it on.
SWITCH_ENV = "JAX_COURSE_COMPILE_CACHE"

#: JAX's settings, as the environment variables that every child process
#: inherits. Every program is cached, however fast it compiled: the course's
#: programs are small, and their number is what costs time.
JAX_SETTINGS = {
    "JAX_COMPILATION_CACHE_DIR": "",  # filled in by enable()
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}


def _cpu_description() -> str:
    # The model name and the instruction-set flags: what a compiled CPU
    # executable depends on. /proc/cpuinfo exists on Linux (and Colab).
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"{platform.machine()} {platform.processor()}"
    wanted = ("model name", "flags", "Features", "CPU implementer", "CPU part")
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
             for line in text.splitlines() if ":" in line}
    return platform.machine() + "".join(f"|{k}={lines.get(k, '')}" for k in wanted)


def machine_key() -> str:
    """Return the cache folder's name: JAX and jaxlib versions, Python, CPU digest.

    Returns
    -------
    str
        For example ``jax0.10.2-jaxlib0.10.2-py3.11-x86_64-1a2b3c4d5e``.
    """
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "none"

    digest = hashlib.sha256(_cpu_description().encode()).hexdigest()[:10]
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return (f"jax{installed('jax')}-jaxlib{installed('jaxlib')}-{python}-"
            f"{platform.machine()}-{digest}")


def cache_dir() -> Path:
    """Return this machine's cache folder (not created)."""
    root = os.environ.get(CACHE_DIR_ENV) or Path.home() / ".jax-course" / "cache"
    return Path(root) / "jax" / machine_key()


def enable() -> Path:
    """Turn the cache on in this process and in every process it starts.

    Sets JAX's variables in ``os.environ`` (where they are not set already,
    so a caller's own choice wins), and JAX's configuration too when JAX is
    imported already.

    Returns
    -------
    Path
        The folder in use.
    """
    folder = Path(os.environ.get("JAX_COMPILATION_CACHE_DIR") or cache_dir())
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in JAX_SETTINGS.items():
        os.environ.setdefault(name, value or str(folder))
    if "jax" in sys.modules:
        import jax

        jax.config.update("jax_compilation_cache_dir",
                          os.environ["JAX_COMPILATION_CACHE_DIR"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(
            os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", int(
            os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"]))
    return folder


def enable_by_default() -> Path | None:
    """Turn the cache on, as :func:`enable`, unless it is to stay off.

    It stays off with ``JAX_COURSE_COMPILE_CACHE=off`` (which the grader
    sets in its sandbox, see the module's docstring); a folder that cannot be
    made leaves it off too, since the cache only saves time.

    Returns
    -------
    Path or None
        The folder in use, or ``None`` when the cache stays off.
    """
    if os.environ.get(SWITCH_ENV, "on").strip().lower() == "off":
        return None
    try:
        return enable()
    except OSError:
        return None


def without(env: Mapping[str, str]) -> dict[str, str]:
    """Return a copy of ``env`` with the cache turned off (for the grader's sandbox)."""
    return {k: v for k, v in env.items() if k not in JAX_SETTINGS}
