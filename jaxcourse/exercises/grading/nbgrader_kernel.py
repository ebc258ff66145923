"""nbgrader's kernel behind the grader's wall: start ipykernel inside bubblewrap.

nbgrader executes each submission in a Jupyter kernel with the teacher's
rights. The kernelspec that ``authoring --nbgrader DIR`` writes
(:func:`jaxcourse.exercises.authoring.nbgrader.export_nbgrader`) starts this module
instead of ipykernel::

    python -m jaxcourse.exercises.grading.nbgrader_kernel --course DIR -f CONNECTION

It starts ``ipykernel`` inside the wall the grader builds around a submission
(:mod:`jaxcourse.exercises.grading.isolation`):

- everything read-only but the notebook's own folder (the kernel's working
  directory, where nbgrader autogrades it) and the folder of its connection
  file, where its sockets are;
- the nbgrader course folder (every other submission, the gradebook, the
  sources) and ``~/.jax-course`` hidden behind decoys, the home folder empty;
  the Python environment, the course's code and its data shown read-only;
- no network: the kernel talks to nbgrader through Unix sockets (the
  ``ipc`` transport, which ``nbgrader_config.py`` sets), which a network
  namespace does not cut;
- its own PID namespace: when the kernel ends, or nbgrader kills this
  launcher, every process it started ends too, wherever it went (``setsid``,
  double forks, a cleared environment).

Where the wall cannot be built, or the connection is not over ``ipc``, it
refuses (exit status 2) and says why; nbgrader then reports a dead kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ... import compile_cache
from . import isolation

__all__ = ["layout", "main"]


def layout(own: Path, course: Path, connection: Path) -> isolation.Layout:
    """Return what the kernel of a notebook in ``own`` may see and write.

    Parameters
    ----------
    own : Path
        The notebook's folder: the kernel's working directory, writable.
    course : Path
        The nbgrader course folder: hidden, except ``own`` inside it.
    connection : Path
        The kernel's connection file; its folder stays writable (the
        kernel's sockets are created there).
    """
    from ...course import content_folders

    return isolation.Layout(
        own=own, hidden=[course, *isolation.home_hidden()], emptied=[Path.home()],
        shown=[*isolation.shown(), *content_folders()],
        writable=[connection.parent])


def _refuse(why: str) -> int:
    print(f"jaxcourse nbgrader kernel: {why}", file=sys.stderr, flush=True)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run ipykernel inside the wall until it ends; return its exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.exercises.grading.nbgrader_kernel",
        description="Start ipykernel inside the grader's wall (bubblewrap), "
                    "for nbgrader.")
    parser.add_argument("--course", type=Path, required=True,
                        help="the nbgrader course folder, hidden from the kernel")
    parser.add_argument("-f", dest="connection", type=Path, required=True,
                        help="the connection file Jupyter gives the kernel")
    # The rest goes to ipykernel (nbclient adds --HistoryManager.hist_file=...).
    args, rest = parser.parse_known_args(argv)
    connection = args.connection.resolve()
    try:
        transport = json.loads(connection.read_text(encoding="utf-8")).get("transport")
    except (OSError, ValueError) as err:
        return _refuse(f"cannot read the connection file {connection}: {err}")
    if transport != "ipc":
        return _refuse(
            f"the kernel's connection uses {transport!r}, not 'ipc': behind the "
            "wall it has no network, so it talks over Unix sockets. Set "
            "c.KernelManager.transport = 'ipc' in nbgrader_config.py (python -m "
            "jaxcourse.exercises.authoring --nbgrader writes it)")
    reason = isolation.unavailable_reason()
    if reason is not None:
        return _refuse(isolation.refusal(reason))
    bwrap = isolation.program()
    own = Path.cwd()
    # Beside the connection's folder when nbgrader_config.py made it (that
    # run's folder, removed when nbgrader exits, even if nbgrader kills this
    # launcher first); the kernel cannot write there.
    run = connection.parent.parent
    decoys = Path(tempfile.mkdtemp(
        prefix="hidden-" if run.name.startswith("jaxcourse-nbgrader-") else
        "jaxcourse-kernel-hidden-",
        dir=run if run.name.startswith("jaxcourse-nbgrader-") else None))
    wall = layout(own, args.course.resolve(), connection)
    command = [sys.executable, "-m", "ipykernel_launcher", "-f", str(connection),
               *rest]
    # No shared compilation cache (it is hidden, and one notebook must never
    # place compiled code that another one runs), as for the grader's runs.
    env = compile_cache.without(os.environ)
    env.update({compile_cache.SWITCH_ENV: "off", "TMPDIR": "/tmp",
                "PYTHONDONTWRITEBYTECODE": "1"})
    # ipykernel watches the pid that started it and stops when its parent
    # looks gone: in its own PID namespace its parent is that namespace's
    # init, pid 1, which it reads as "exited". bwrap ends it with this
    # launcher instead (--die-with-parent).
    env.pop("JPY_PARENT_PID", None)
    try:
        process = subprocess.Popen(
            isolation.wrap(command, wall, decoys, bwrap, cwd=own), env=env,
            stdin=subprocess.DEVNULL)
        try:
            code = process.wait()
        except KeyboardInterrupt:
            # nbgrader interrupts through the control channel
            # (interrupt_mode "message"); a stray SIGINT ends the kernel.
            process.kill()
            code = process.wait()
        for line in isolation.found(wall, decoys):
            # What the notebook wrote around the wall into a hidden folder
            # (it landed in a decoy, not there): nbgrader's log shows it.
            print(f"jaxcourse nbgrader kernel: {line} (kept out)", file=sys.stderr)
        return code
    finally:
        shutil.rmtree(decoys, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
