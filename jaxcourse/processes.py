"""End a process and every process it started, wherever they went.

One implementation, used by the multi-process launcher
(:mod:`jaxcourse.launch`) and the grader (:mod:`jaxcourse.exercises.grading.cli`):
while the roots run, the supervisor collects their :func:`descendants` now and
then; to end them, it calls :func:`end_tree`.

Killing a process group is not enough: a child can leave the group
(``setsid``, ``start_new_session=True``), and a double fork or ``nohup``
hands a grandchild to ``init`` once its parent exits, so that walking the
tree from the root no longer finds it. Three nets catch them:

1. the process groups of the roots, and every descendant seen while they
   ran (kept as psutil handles, which notice if a pid is reused);
2. a *tag*: an environment variable with a value unique to one launch or
   one submission. Children inherit their parent's environment, including
   through ``setsid``, double forks and ``nohup``, so every process of this
   user whose environment carries the tag belongs to the tree, wherever it
   was reparented;
3. on Linux, :func:`become_subreaper`: orphans of the tree are reparented
   to the supervising process instead of ``init``, so they stay its
   descendants even if they cleared their environment.

After SIGTERM (and a grace period) everything still found is sent SIGKILL,
and the search repeats until nothing is left, so that a process forking
while it is being ended cannot slip through.

The three nets search for processes, and a child that clears its
environment, calls ``setsid`` and forks twice where no subreaper waits
escapes them all. What must end with certainty runs in a PID namespace of
its own instead (bubblewrap: the grader's wall, nbgrader's kernel; util-linux's
unshare: the local hub): nothing can leave one, and :func:`end_namespace`
ends every process in it by killing its init.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

import psutil

__all__ = [
    "TAG_ENV",
    "become_subreaper",
    "reap_adopted",
    "descendants",
    "end_namespace",
    "end_tree",
    "new_tag",
    "tagged",
]

TAG_ENV = "JAXCOURSE_PROCESS_TAG"
_PR_SET_CHILD_SUBREAPER = 36


def new_tag() -> str:
    """Return a fresh value for :data:`TAG_ENV`, unique to one process tree."""
    return secrets.token_hex(8)


def become_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants of this process its children (Linux).

    Parameters
    ----------
    on : bool
        ``False`` gives orphans back to init again.

    Returns
    -------
    bool
        Whether it worked; ``False`` on other systems, where the tag and the
        process groups remain.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_adopted(before: Iterable[int]) -> list[int]:
    """Collect the exit status of orphans adopted while this was a subreaper.

    An orphan that dies after :func:`end_tree` last looked stays a zombie
    child of this process until someone waits for it, and nobody else will:
    :mod:`subprocess` waits only for the processes it started.

    Parameters
    ----------
    before : iterable of int
        The pids of this process's children before it became a subreaper
        (the caller's own, which their owners wait for).

    Returns
    -------
    list of int
        The pids collected.
    """
    mine = set(before)
    collected = []
    for child in psutil.Process().children():
        if child.pid in mine:
            continue
        with contextlib.suppress(psutil.Error, ChildProcessError, OSError):
            if child.status() == psutil.STATUS_ZOMBIE and os.waitpid(
                    child.pid, os.WNOHANG)[0] == child.pid:
                collected.append(child.pid)
    return collected


def end_namespace(outer: psutil.Process, grace: float = 0.0) -> list[int]:
    """End every process of the PID namespace that ``outer`` made; return their pids.

    ``outer`` is the ``unshare`` process of
    :func:`jaxcourse.exercises.grading.isolation.pid_namespace` (or a ``bwrap
    --unshare-pid`` one); its only child is the namespace's init. When that
    init dies, the kernel kills every other process in the namespace: nothing
    inside can leave it, whatever session, parent or environment it gave
    itself, so no search, tag or tree walk is needed. With ``grace``, the
    service gets SIGTERM first and that long to stop on its own: the init
    itself under ``unshare`` (the service is the init), the init's children
    under bwrap (whose init does not pass signals on).

    Parameters
    ----------
    outer : psutil.Process
        The ``unshare`` or ``bwrap`` process (checked by the caller to be the
        one it started).
    grace : float
        Seconds between SIGTERM to the service and SIGKILL to the init.

    Returns
    -------
    list of int
        The pids of the namespace's processes, as seen from here, init included.
    """
    try:
        inits = outer.children()
        members = outer.children(recursive=True)
    except psutil.Error:
        return []
    if grace > 0:
        leaders = []
        for init in inits:
            with contextlib.suppress(psutil.Error):
                leaders += init.children() if init.name() == "bwrap" else [init]
        for proc in leaders:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGTERM)
        psutil.wait_procs(leaders, timeout=grace)
    for init in inits:
        with contextlib.suppress(psutil.Error):
            init.kill()
    psutil.wait_procs([outer, *members], timeout=10)
    return sorted(p.pid for p in members)


def tagged(tag: str) -> list[psutil.Process]:
    """Return this user's living processes whose environment carries ``tag``."""
    me = os.getpid()
    uid = os.getuid() if hasattr(os, "getuid") else None
    found = []
    for proc in psutil.process_iter(["uids", "status"]):
        if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if uid is not None and proc.info["uids"] and proc.info["uids"].real != uid:
            continue  # another user's: not ours to read or end
        with contextlib.suppress(psutil.Error, OSError):
            if proc.environ().get(TAG_ENV) == tag:
                found.append(proc)
    return found


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def descendants(roots: Iterable[subprocess.Popen]) -> dict[int, psutil.Process]:
    """Return every living descendant of the roots that are still running.

    A supervisor calls it now and then while the roots run, and passes what it
    found to :func:`end_tree` as ``seen``: a grandchild whose parent has
    exited is no longer reachable from a root, but its handle still is.

    Parameters
    ----------
    roots : iterable of subprocess.Popen
        The processes started directly.

    Returns
    -------
    dict
        Pid to psutil handle (which notices if the pid is reused later).
    """
    found: dict[int, psutil.Process] = {}
    for root in roots:
        if root.poll() is not None:
            continue  # its pid may already belong to someone else
        with contextlib.suppress(psutil.Error):
            found.update(
                (c.pid, c) for c in psutil.Process(root.pid).children(recursive=True)
            )
    return found


def _collect(
    roots: Iterable[subprocess.Popen],
    seen: dict[int, psutil.Process],
    tag: str | None,
) -> list[psutil.Process]:
    """Every living process of the tree, found by all three nets."""
    seen.update(descendants(roots))
    if tag is not None:
        for proc in tagged(tag):
            seen[proc.pid] = proc
            with contextlib.suppress(psutil.Error):
                seen.update((c.pid, c) for c in proc.children(recursive=True))
    return [p for p in seen.values() if _alive(p)]


def _reap(pids: Iterable[int], keep: set[int]) -> None:
    """Collect the exit status of killed orphans that became our children.

    As a subreaper this process inherits orphans; once they die they stay
    zombies until someone waits for them. ``keep`` holds the pids that
    :mod:`subprocess` waits for itself.
    """
    for pid in pids:
        if pid in keep:
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def end_tree(
    roots: list[subprocess.Popen],
    seen: dict[int, psutil.Process] | None = None,
    *,
    tag: str | None = None,
    grace: float = 1.0,
) -> list[int]:
    """SIGTERM every process of the tree, then SIGKILL what is left.

    Parameters
    ----------
    roots : list of subprocess.Popen
        The processes started directly; each leads its own process group
        (``start_new_session=True``).
    seen : dict, optional
        Descendants found earlier (pid to psutil handle), updated in place.
    tag : str, optional
        The value of :data:`TAG_ENV` given to the roots' environment.
    grace : float
        Seconds between SIGTERM and SIGKILL; 0 sends SIGKILL at once.

    Returns
    -------
    list of int
        The pids that were signalled (roots excluded).
    """
    seen = {} if seen is None else seen
    signalled: set[int] = set()
    root_pids = {r.pid for r in roots}
    signals = [signal.SIGTERM, signal.SIGKILL] if grace > 0 else [signal.SIGKILL]
    for sig in signals:
        # SIGKILL is repeated until a search finds nothing: a process that
        # forked after the last search is found by the next one.
        rounds = 50 if sig == signal.SIGKILL else 1
        for _ in range(rounds):
            found = _collect(roots, seen, tag)
            for root in roots:
                # The group outlives its leader while a member lives on.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(root.pid, sig)
            for proc in found:
                # psutil refuses to signal a pid that now names another process.
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(sig)
                    signalled.add(proc.pid)
            if sig == signal.SIGTERM:
                break
            time.sleep(0.02)
            if not _collect(roots, seen, tag) and all(
                r.poll() is not None for r in roots
            ):
                break
        end = time.monotonic() + (grace if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < end:
            _reap(signalled, root_pids)
            if all(r.poll() is not None for r in roots) and not any(
                _alive(p) for p in seen.values()
            ):
                break
            time.sleep(0.05)
        else:
            continue
        if sig == signal.SIGTERM and not _collect(roots, seen, tag):
            break
    for root in roots:
        with contextlib.suppress(subprocess.TimeoutExpired):
            root.wait(timeout=5)
    _reap(signalled, root_pids)
    return sorted(signalled)
