"""The wall around a submission's process: bubblewrap (``bwrap``).

The grader (:mod:`jaxcourse.exercises.grading.runner`) starts each submission's
process inside :func:`wrap`'s command, which makes the operating system,
not the process itself, decide what it may touch:

- the whole file system is mounted read-only (the environment, the course,
  the home folder), with a fresh ``/dev`` and ``/proc`` and a private,
  size-limited ``/tmp`` and ``/dev/shm``; ``/run`` (where daemons keep their
  sockets) is empty;
- only its own run folder is writable, and the course's copy inside it is
  read-only again;
- what it must not see at all (the other submissions, the grading folders,
  the original course, ``~/.jax-course`` with its caches and the course's
  Slurm cluster) is covered by an empty folder of the grader's, a *decoy*;
  inside it, the Python environment and the data are shown again, read-only;
- it has no network (only a loopback of its own), no other process in sight
  (a PID namespace: when it ends, everything it started ends with it), and no
  capabilities, even when the grader runs as root, nor a way to gain them in
  a user namespace of its own.

A write to a read-only place fails (``EROFS``). A write into a hidden folder
lands in its decoy, which the grader lists afterwards (:func:`found`): that
is how a write that goes around the in-process guard (a shell, ``ctypes``)
still reaches the submission's row. Nothing it does reaches the real files.

Where ``bwrap`` is missing or cannot create the namespaces it needs (a
kernel or a container that forbids user namespaces), :func:`unavailable_reason`
says why, after trying the wall on a probe; the grader then refuses to grade
unless told to run without it.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BWRAP_ENV",
    "UNSAFE",
    "Layout",
    "found",
    "home_hidden",
    "pid_namespace",
    "pid_namespace_reason",
    "program",
    "refusal",
    "shown",
    "unavailable_reason",
    "wrap",
]

#: The ``bwrap`` program to use (a name on ``PATH`` or a path); tests point it
#: at a missing file to see the grader refuse.
BWRAP_ENV = "JAXCOURSE_BWRAP"

# --unshare-all: user, mount, PID, network, IPC, UTS and cgroup namespaces.
# --unshare-user makes the user namespace required (it is only tried
# otherwise), so that --disable-userns can forbid nested ones: in a user
# namespace of its own a process would hold every capability again.
# --cap-drop ALL: when the grader runs as root, bwrap would otherwise keep
# root's capabilities inside, and a remount would make / writable.
# --die-with-parent: the wall falls with the grader; --new-session: no
# keystrokes pushed into the grader's terminal (TIOCSTI).
_FLAGS = ("--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop",
          "ALL", "--die-with-parent", "--new-session")
_MIB = 2**20
# Entries listed from one decoy at most: enough for a row, bounded for a flood.
_MAX_FOUND = 20


@dataclass
class Layout:
    """What one submission's process may see and write.

    Attributes
    ----------
    own : Path
        The run folder: the one place it may write (besides its private
        ``/tmp``); also its working directory's parent.
    read_only : list of Path
        Folders inside ``own`` mounted read-only again (the course's copy).
    hidden : list of Path
        Folders or files it must not see; each is covered by a decoy.
    emptied : list of Path
        Folders it sees empty and may write to, in memory, as its ``/tmp``:
        the home folder, whose files (keys, tokens) it has no reason to read
        and where libraries expect to write their settings.
    shown : list of Path
        Folders inside hidden or emptied ones that it must read (the Python
        environment, the data): shown again, read-only.
    scratch_mb : int
        Size of its private ``/tmp``, ``/dev/shm`` and emptied folders each,
        in MiB: memory, which the process's own memory limit does not count.
    writable : list of Path
        More folders it may write, where they are (a kernel's connection
        folder, where its Unix sockets go); the grader's submissions have none.
    """

    own: Path
    read_only: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    emptied: list[Path] = field(default_factory=list)
    shown: list[Path] = field(default_factory=list)
    scratch_mb: int = 1024
    writable: list[Path] = field(default_factory=list)


def program() -> str | None:
    """Return the path of ``bwrap`` (or ``$JAXCOURSE_BWRAP``); ``None`` if missing."""
    return shutil.which(os.environ.get(BWRAP_ENV) or "bwrap")


def _resolved(paths: Sequence[Path]) -> list[Path]:
    # Mount points are resolved inside the new namespace: a symlink in a
    # path could point elsewhere there, so every path is the real one.
    return [Path(os.path.realpath(p)) for p in paths]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _kept(paths: Sequence[Path], own: Path) -> list[Path]:
    # Never the root, never what does not exist (bwrap would fail on
    # either), never what lies in the run folder; outer ones first.
    return sorted((p for p in set(_resolved(paths)) if p.parent != p
                   and os.path.lexists(p) and not _inside(p, own)),
                  key=lambda p: (len(p.parts), p))


def _plan(layout: Layout) -> tuple[list[Path], list[Path], list[Path]]:
    """Return the hidden paths, the emptied ones and the shown ones to mount again."""
    own = Path(os.path.realpath(layout.own))
    hidden = _kept(layout.hidden, own)
    emptied = [p for p in _kept(layout.emptied, own) if p not in hidden
               and os.path.isdir(p)]
    shown = [p for p in dict.fromkeys(_resolved(layout.shown))
             if p.exists() and any(_inside(p, h) for h in [*hidden, *emptied])]
    return hidden, emptied, shown


def wrap(command: Sequence[str], layout: Layout, decoys: Path, bwrap: str,
         cwd: Path | None = None) -> list[str]:
    """Return ``command`` run inside the wall that ``layout`` describes.

    Parameters
    ----------
    command : sequence of str
        The submission's process
        (``python -m jaxcourse.exercises.grading.sandbox ...``).
    layout : Layout
        What it may see and write.
    decoys : Path
        An empty folder of the grader's, outside ``layout.own`` and hidden from
        the process: one decoy per hidden path is made in it (see :func:`found`).
    bwrap : str
        The ``bwrap`` program (:func:`program`).
    cwd : Path, optional
        Its working directory, inside ``layout.own``.

    Returns
    -------
    list of str
        The command line to start.
    """
    hidden, emptied, shown = _plan(layout)
    scratch = str(max(1, layout.scratch_mb) * _MIB)
    args = [bwrap, *_FLAGS, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--size", scratch, "--tmpfs", "/tmp", "--size", scratch,
            "--tmpfs", "/dev/shm"]
    needed = [Path(os.path.realpath(layout.own)), *shown]
    if not any(_inside(p, Path("/run")) for p in needed):
        # Sockets on disk stay reachable through a read-only mount (connect
        # needs no write access): daemons' sockets live under /run.
        args += ["--tmpfs", "/run"]
    # In order: decoys over the hidden paths and memory over the emptied
    # ones (outer ones first, so that an inner one lands in its parent's),
    # then what is shown again inside them, then the run folder and its
    # read-only copy of the course.
    covers = []
    for index, path in enumerate(hidden):
        decoy = decoys / str(index)
        if path.is_dir():
            decoy.mkdir(parents=True)
        else:
            decoy.parent.mkdir(parents=True, exist_ok=True)
            decoy.touch()
        covers.append((path, ["--bind", str(decoy), str(path)]))
    covers += [(p, ["--size", scratch, "--tmpfs", str(p)]) for p in emptied]
    for _, cover in sorted(covers, key=lambda c: (len(c[0].parts), c[0])):
        args += cover
    for path in shown:
        args += ["--ro-bind", str(path), str(path)]
    for index, path in enumerate(hidden):
        if any(_inside(path, s) for s in shown):
            # Hidden inside what was shown again: covered again.
            args += ["--bind", str(decoys / str(index)), str(path)]
    args += ["--bind", str(needed[0]), str(needed[0])]
    for path in _resolved(layout.writable):
        if path.is_dir():
            args += ["--bind", str(path), str(path)]
    for path in _resolved(layout.read_only):
        args += ["--ro-bind", str(path), str(path)]
    if cwd is not None:
        args += ["--chdir", os.path.realpath(cwd)]
    return [*args, "--", *command]


def pid_namespace(command: Sequence[str], unshare: str) -> list[str]:
    """Return ``command`` run in a PID namespace of its own, and nothing else walled.

    For a service that must keep the file system and the network (the local
    JupyterHub), but whose every process must end when it is stopped: every
    process it starts, in whatever session, however often it forks, and
    whatever it does to its environment, stays in the namespace, and all of
    them end when the namespace's first process (``command`` itself, the only
    child of the ``unshare`` process this starts) does
    (:func:`jaxcourse.processes.end_namespace`), or when ``unshare`` is
    killed (``--kill-child``). A user namespace comes with it (an ordinary
    user needs one to make a PID namespace); it maps the user to itself, so
    files keep their owner.

    util-linux's ``unshare``, not bubblewrap: the grader walls each submission
    in with bubblewrap, which mounts a new ``/proc`` in a user namespace
    nested in this one, and the kernel allows that only where a ``/proc``
    is already fully visible (fs/namespace.c, ``mount_too_revealing``).
    ``unshare --mount-proc`` mounts a bare one; bubblewrap's own ``--proc``
    covers parts of it read-only, and a grader started under it fails with
    "Can't mount proc on /newroot/proc: Operation not permitted".
    """
    return [unshare, "--user", "--map-current-user", "--pid", "--fork",
            "--mount-proc", "--kill-child", "--", *command]


def pid_namespace_reason(unshare: str | None) -> str | None:
    """Say in one line why :func:`pid_namespace` cannot run here, or ``None``.

    A probe runs ``true`` in one: util-linux 2.38 or later (``--map-current-user``)
    and a kernel that lets this user make user and PID namespaces.
    """
    if unshare is None:
        return "unshare (util-linux) was not found"
    try:
        probe = subprocess.run(pid_namespace(["true"], unshare), capture_output=True,
                               text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{unshare} did not run: {error}"
    if probe.returncode != 0:
        said = " ".join(probe.stderr.split())[:300] or f"exit status {probe.returncode}"
        return (f"{unshare} could not make a PID namespace ({said}); it needs "
                "util-linux 2.38 or later and unprivileged user namespaces")
    return None


def found(layout: Layout, decoys: Path) -> list[str]:
    """Return what the process wrote into hidden paths, as ``write <path>`` lines.

    Each decoy starts empty; bwrap itself only adds the mount points of what
    is mounted inside it (a shown folder, the run folder, a hidden path
    within a hidden folder), and the folders on the way to them. Anything
    else there was written by the submission, and is named by the path it
    wrote to, outside the wall.
    """
    hidden, emptied, shown = _plan(layout)
    inner = [Path(os.path.realpath(layout.own)), *shown, *hidden, *emptied,
             *_resolved(layout.read_only), *_resolved(layout.writable)]
    lines: list[str] = []
    for index, path in enumerate(hidden):
        decoy = decoys / str(index)
        if decoy.is_file() or decoy.is_symlink():
            if decoy.is_symlink() or decoy.stat().st_size:
                lines.append(f"write {path}")
            continue
        # The mount points bwrap made inside this decoy, and the folders
        # on the way to them.
        skeleton = {q.relative_to(path) for p in inner if _inside(p, path)
                    for q in (p, *p.parents) if _inside(q, path) and q != path}
        for root, dirs, files in os.walk(decoy):
            base = Path(root).relative_to(decoy)
            for name in sorted(dirs + files):
                relative = base / name
                if relative in skeleton:
                    continue  # a mount point: what is written there is not here
                lines.append(f"write {path / relative}")
                if len(lines) >= _MAX_FOUND:
                    return lines
            dirs[:] = [d for d in dirs if base / d in skeleton]
    return lines


def home_hidden() -> list[Path]:
    """Return the course's own folders under the home folder, to hide.

    ``~/.jax-course`` (the environments, JAX's compilation cache, the Slurm
    cluster's keys and sockets) and wherever the cache and the cluster were
    moved to.
    """
    from jaxcourse import compile_cache
    from jaxcourse.slurm.base import cluster

    paths = [Path.home() / ".jax-course", cluster().root]
    if os.environ.get(compile_cache.CACHE_DIR_ENV):
        paths.append(Path(os.environ[compile_cache.CACHE_DIR_ENV]))
    return paths


def shown() -> list[Path]:
    """Return what a submission's process must read even where it is hidden.

    The Python environment (this interpreter's prefixes, and the user's
    site-packages where Python reads them), the course's data and its fonts.
    """
    from jaxcourse.data.specs import data_dir
    from jaxcourse.fonts import font_dir

    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                os.path.dirname(os.path.realpath(sys.executable))}
    if site.ENABLE_USER_SITE:  # packages installed with pip --user
        prefixes.add(site.getusersitepackages())
    return [*map(Path, sorted(prefixes)), data_dir(), font_dir()]


_PROBE = """
import errno, os, sys
root = sys.argv[1]
open(os.path.join(root, "own", "ok"), "w").close()
if os.listdir(os.path.join(root, "hidden")):
    sys.exit("a hidden folder showed its files")
open(os.path.join(root, "hidden", "planted"), "w").close()
try:
    open(sys.argv[2], "w").close()
except OSError as err:
    if err.errno != errno.EROFS:
        sys.exit(f"/ is not read-only: {err}")
else:
    sys.exit("a write to / went through")
with open("/proc/self/net/dev") as handle:
    links = [line.split(":")[0].strip() for line in handle if ":" in line]
if links != ["lo"]:
    sys.exit(f"the network is reachable: {links}")
"""


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> str | None:
    with tempfile.TemporaryDirectory(prefix="jaxcourse-wall-") as folder:
        root = Path(folder)
        for name in ("own", "decoys", "hidden"):
            (root / name).mkdir()
        (root / "hidden" / "secret").touch()
        layout = Layout(own=root / "own", hidden=[root / "hidden"], scratch_mb=16)
        # A file at the root of the file system: the probe must fail to
        # write it (as root, a broken wall would succeed; it is removed then).
        top = Path("/") / f"jaxcourse-wall-probe-{os.getpid()}"
        command = wrap([sys.executable, "-S", "-c", _PROBE, str(root), str(top)],
                       layout, root / "decoys", bwrap)
        try:
            proc = subprocess.run(command, capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"{bwrap} could not be run ({err})"
        finally:
            if top.exists():
                top.unlink()
        if proc.returncode != 0:
            why = proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"]
            return f"{bwrap} failed on a probe: {why[-1][:200]}"
        planted = f"write {root / 'hidden' / 'planted'}"
        kept = ((root / "own" / "ok").is_file()
                and not (root / "hidden" / "planted").exists()
                and found(layout, root / "decoys") == [planted])
        if not kept:
            return f"{bwrap} ran the probe but did not keep it in its folder"
    return None


def refusal(reason: str) -> str:
    """Return the grader's refusal to grade without the wall, ``reason`` first."""
    return (f"no sandbox for the submissions: {reason}. Each submission would run "
            "with your permissions: it could change the course's environment, "
            "~/.jax-course and the other submissions, and reach the network. "
            "Install bubblewrap (apt-get install bubblewrap; make setup does), or "
            "pass --no-sandbox (grade(..., sandbox=False)) to grade without it, "
            "one submission at a time")


#: What the grader says, before and after, when it grades without the wall.
UNSAFE = ("warning: graded WITHOUT a sandbox (--no-sandbox): each submission ran "
          "with your permissions, one at a time; only the in-process guard and "
          "the course's fingerprint stood between it and your files")


def unavailable_reason() -> str | None:
    """Say in one line why no submission can be walled in here, or ``None``.

    ``bwrap`` must exist and, on a probe run with the grader's own flags,
    keep a process to its run folder and off the network. The answer is
    kept for the life of this process (per ``bwrap`` program).
    """
    bwrap = program()
    if bwrap is None:
        name = os.environ.get(BWRAP_ENV) or "bwrap"
        return (f"bubblewrap is not installed ({name} was not found; "
                "apt-get install bubblewrap)")
    return _probe(bwrap)
