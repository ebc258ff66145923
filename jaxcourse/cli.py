"""What every command line of the course shares: ``--version`` and the exit codes.

Every ``python -m jaxcourse.<command>`` builds its parser with :func:`parser`
or adds :func:`add_version` to its own, so that each one answers
``--version``; the grader, the hub and the Slurm commands end through
:func:`run`, the others catch their own errors, and all of them end with one
of these codes and a line on stderr, never a traceback:

====  ==============================================================
code  meaning
====  ==============================================================
0     done
1     the work ran and failed, or found a problem (a check, a job)
2     a bad command line: an unknown option, a missing or wrong path
3     a program the command needs is missing (bubblewrap, Slurm …)
130   interrupted (Ctrl-C)
====  ==============================================================

README.md ("Command lines") lists them for users.
"""

from __future__ import annotations

import argparse
import functools
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import CourseError, __version__

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_MISSING_TOOL",
    "EXIT_OK",
    "EXIT_USAGE",
    "MissingToolError",
    "UsageError",
    "add_version",
    "course_commit",
    "existing_path",
    "parser",
    "run",
    "version_text",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # argparse's own code for a bad command line
EXIT_MISSING_TOOL = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

_ROOT = Path(__file__).resolve().parents[1]


class MissingToolError(CourseError):
    """A program the command needs is not installed here (exit code 3)."""


class UsageError(CourseError):
    """A command line that names a missing or wrong path (exit code 2)."""


def _git_dir(root: Path) -> Path | None:
    """Return the checkout's git folder (a worktree's ``.git`` file points at it)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            return (root / text[len("gitdir:"):].strip()).resolve()
    return None


def _head_commit(git: Path) -> str | None:
    """Read HEAD's commit from git's files: no process is started."""
    head = (git / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref:"):
        return head if re.fullmatch(r"[0-9a-f]{40,64}", head) else None  # detached
    ref = head[len("ref:"):].strip()
    # A worktree keeps its HEAD, and the shared refs live in its common folder.
    common = git / "commondir"
    folders = [git] + ([(git / common.read_text().strip()).resolve()]
                       if common.is_file() else [])
    for folder in folders:
        loose = folder / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip()
        packed = folder / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                commit, _, name = line.partition(" ")
                if name == ref:
                    return commit
    return None


@functools.cache
def course_commit(changes: bool = False) -> str | None:
    """Return the git commit of this checkout of the course, or ``None``.

    ``None`` where the course is not a git checkout (an installed wheel, a
    class release). Read from git's files, so that no process starts (a
    release and the grader record it); with ``changes``, ``git status`` is
    asked too (``--version``), and a checkout whose tracked files differ from
    the commit gets ``+modified``: its code is not that commit's.
    """
    git = _git_dir(_ROOT)
    try:
        commit = _head_commit(git) if git is not None else None
    except OSError:
        commit = None
    if commit is None or not changes:
        return commit
    try:
        changed = subprocess.run(
            ["git", "-C", str(_ROOT), "status", "--porcelain",
             "--untracked-files=no"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return commit
    modified = changed.returncode == 0 and changed.stdout.strip()
    return commit + ("+modified" if modified else "")


def version_text() -> str:
    """Return ``jaxcourse <version>``, with the checkout's commit when known."""
    commit = course_commit(changes=True)
    return f"jaxcourse {__version__}" + (f" (commit {commit})" if commit else "")


class _Version(argparse.Action):
    """``--version``: the text is found when asked (git runs only then)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print the course's version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_text())
        parser.exit(EXIT_OK)


def add_version(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give ``parser`` a ``--version`` option; return it."""
    parser.add_argument("--version", action=_Version)
    return parser


def parser(prog: str, description: str, **kwargs) -> argparse.ArgumentParser:
    """Return an ``ArgumentParser`` with ``--version`` and the exit codes in its help.

    Parameters
    ----------
    prog : str
        How the command is typed, e.g. ``python -m jaxcourse.hub``.
    description : str
        One line: what the command does.
    **kwargs
        More ``ArgumentParser`` arguments.
    """
    kwargs.setdefault("epilog", "exit codes: 0 done, 1 failed, 2 bad command line "
                      "or path, 3 a needed program is missing, 130 interrupted")
    return add_version(argparse.ArgumentParser(prog=prog, description=description,
                                               **kwargs))


def existing_path(text: str) -> Path:
    """Return ``text`` as a path that exists: an ``argparse`` type (else exit 2).

    Raises
    ------
    argparse.ArgumentTypeError
        When nothing is at ``text``; argparse then prints the usage and the
        message, and exits with code 2.
    """
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {text}")
    return path


def run(main: Callable[[], int | None]) -> int:
    """Call ``main``; turn the course's errors and Ctrl-C into a line and a code.

    A :class:`MissingToolError` is code 3, a :class:`UsageError` 2, any other
    :class:`~jaxcourse.CourseError` 1, and Ctrl-C 130, each with one line on
    stderr. Anything else is a bug of the course: its traceback is kept.
    """
    try:
        code = main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MissingToolError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_MISSING_TOOL
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if code is None else int(code)
