"""An nbgrader course folder made from the masters: ``authoring --nbgrader DIR``.

Each chapter is an nbgrader assignment: ``DIR/source/<chapter>/`` holds its
master with its nbgrader metadata, without outputs, without the
``solution-only`` cells and without the hidden tests; ``DIR/nbgrader_config.py``
sets the same stubs as the course's student notebooks, a time limit per cell,
and has nbgrader score the test cells with the course's grader
(``DIR/jaxcourse_nbgrader.py``, a copy of
:mod:`jaxcourse.exercises.nbgrader.preprocessor`); and ``DIR/jupyter`` holds a
kernelspec that runs this Python behind the grader's wall
(:mod:`jaxcourse.exercises.grading.nbgrader_kernel`; see book/for_teachers.md). The
sources' cells are the class release's
(:func:`~jaxcourse.exercises.authoring.release_stubs.release_cells`): what nbgrader
hands out never installs the public course, and a notebook from
``make release`` matches every read-only cell.

Why no hidden tests: the score no longer comes from the kernel that ran the
learner's notebook (:mod:`jaxcourse.exercises.grading.nbgrader_scores`), so a
hidden region would only run the check a second time there; and nbgrader saves each
read-only cell's checksum *with* its hidden region but releases it without,
so every such cell logged "Attribute 'checksum' ... has changed!" when the
untouched release was autograded (nbgrader issue 1961).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat

from ...course import content_folders
from ..nbgrader import preprocessor as nbgrader_preprocessor
from ..nbgrader.autograde import write_kernelspec
from .markers import (
    CODE_STUB,
    SOLUTION_ONLY_TAG,
    TEXT_STUB,
    AuthoringError,
    strip_hidden_tests,
)
from .masters import MASTERS, with_nbgrader
from .release_stubs import release_cells
from .students import master_language, student_title

__all__ = ["COURSE_ID", "KERNEL_NAME", "NBGRADER_CONFIG", "SAFETY_NOTE",
           "SCORES_MODULE", "assignment_name", "environment_folders",
           "export_nbgrader"]

COURSE_ID = "jax-hands-on"
#: The kernel nbgrader runs every notebook in: the course's Python behind the
#: grader's wall (``DIR/jupyter/kernels/<name>``).
KERNEL_NAME = "jaxcourse-walled"
#: The name of :mod:`jaxcourse.exercises.nbgrader.preprocessor`'s copy in the
#: course folder, where nbgrader's environment imports it from.
SCORES_MODULE = "jaxcourse_nbgrader"
#: What ``authoring --nbgrader`` prints: the limit that remains.
SAFETY_NOTE = (
    "note: nbgrader scores with the course's grader (a fresh sandboxed process "
    "per notebook), so nothing a notebook does in nbgrader's kernel changes its "
    "score; that kernel, too, runs behind the grader's wall (bubblewrap: no "
    "write outside the notebook's folder, no other submission in sight, no "
    "network, nothing left running), and it refuses to start where the wall "
    "cannot be built. The class's flags (pasted or shared answers, borrowed "
    "and library answers) are set in nbgrader's gradebook (the formgrader's "
    "flag column) and written to its log and to jaxcourse_flags/ in the course "
    "folder (book/for_teachers.md)."
)


def environment_folders() -> list[str]:
    """Return this Python's package folders: what nbgrader's scoring watches.

    Its site-packages (pure and platform) and the user's, where Python reads
    it: a ``.pth`` or a module written there runs in every later process.
    """
    import site
    import sysconfig

    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    if site.ENABLE_USER_SITE and Path(site.getusersitepackages()).is_dir():
        paths.add(site.getusersitepackages())
    return sorted(str(Path(p).resolve()) for p in paths)


def _walled(spec_file: Path, course: Path, path: list[str]) -> None:
    """Make the kernelspec start its kernel behind the grader's wall.

    :mod:`jaxcourse.exercises.grading.nbgrader_kernel` starts ipykernel inside
    bubblewrap, with ``course`` (the nbgrader course folder) hidden; the
    kernel reaches nbgrader over Unix sockets only, and no signal reaches
    it in its own PID namespace, so it is interrupted by a message. Its
    ``PYTHONPATH`` starts with ``path``: the course that wrote the spec.
    """
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    python = spec["argv"][0]
    spec["argv"] = [python, "-m", "jaxcourse.exercises.grading.nbgrader_kernel",
                    "--course", str(course), "-f", "{connection_file}"]
    spec["interrupt_mode"] = "message"
    spec["env"] = {"PYTHONPATH": os.pathsep.join(path)}
    spec_file.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")


def assignment_name(master: Path) -> str:
    """Return a master's nbgrader assignment: its chapter (``03_bayes``)."""
    return master.stem.removesuffix("_exercises")


NBGRADER_CONFIG = '''\
"""nbgrader's settings for the JAX course's exercise notebooks.

Generated by `python -m jaxcourse.exercises.authoring --nbgrader`. Each chapter
is an assignment (source/<chapter>/); `nbgrader generate_assignment <chapter>`
releases the student notebook, which equals the class release's copy
(`make release`).
"""

c = get_config()  # noqa: F821 (nbgrader defines it)

c.CourseDirectory.course_id = {course_id!r}
# A check runs an exercise on several inputs (some in several processes):
# nbgrader's default of 30 s per cell is too short on a small machine.
c.Execute.timeout = {timeout}

# Each submission's kernel runs behind the course's wall (the kernelspec in
# jupyter/ starts jaxcourse.exercises.grading.nbgrader_kernel): no write outside its
# folder, no other submission in sight, no network, and its own PID namespace.
# Without a network it talks to nbgrader over Unix sockets, in a folder of
# this run's own (the kernel may write there, and sees nothing else of yours):
# nbgrader runs one kernel at a time, each with this connection file and its
# sockets beside it. The run's folder also keeps what the wall hid from each
# kernel (nbgrader may kill a kernel's launcher before it cleans up); it goes
# when nbgrader exits.
import atexit  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

_run = tempfile.mkdtemp(prefix="jaxcourse-nbgrader-")
atexit.register(shutil.rmtree, _run, ignore_errors=True)
os.mkdir(os.path.join(_run, "kernel"))
c.KernelManager.transport = "ipc"
# Every notebook runs in this kernel, whatever its metadata names: only this
# folder's jupyter/ has it (JUPYTER_PATH=$PWD/jupyter), so without that
# nbgrader stops ("No such kernel named {kernel}") instead of running a
# submission outside the wall.
c.Execute.kernel_name = {kernel!r}
c.KernelManager.connection_file = os.path.join(_run, "kernel", "kernel.json")
# The stubs of the course's own student notebooks, so that both are the same.
c.ClearSolutions.code_stub = {{"python": {code_stub!r}}}
c.ClearSolutions.text_stub = {text_stub!r}

# The scores. nbgrader reads a test cell's score from what it printed in the
# kernel that ran the learner's notebook, where the learner's cells ran first
# and could replace what the test cell calls. CourseScores runs in nbgrader's
# own process right after that execution (Execute comes first in nbgrader's
# list): the course's grader scores the notebook's source in a fresh
# sandboxed process, and each test cell's outputs become that score.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from {scores_module} import CourseScores  # noqa: E402

# The course's files and its whole environment (site-packages included) now,
# before any notebook runs: should either change, the scoring stops.
CourseScores.watch({course!r}, environment={environment!r})
c.CourseScores.python = {python!r}
c.CourseScores.path = {path!r}
c.CourseScores.timeout = {timeout}
c.Autograde.autograde_preprocessors.insert(1, CourseScores)
'''


def export_nbgrader(
    dest: Path,
    source_dir: Path = MASTERS,
    chapters: list[str] | None = None,
    *,
    course_id: str = COURSE_ID,
    timeout: int = 300,
) -> list[Path]:
    """Write an nbgrader course folder for the masters in ``source_dir``.

    ``dest/source/<chapter>/<master name>`` holds each master with its
    nbgrader metadata (:func:`with_nbgrader`), without outputs, without its
    hidden tests and without its ``solution-only`` cells (a tag nbgrader does
    not know); ``dest/nbgrader_config.py`` sets the stubs and the time limit
    and registers ``dest/jaxcourse_nbgrader.py``
    (:class:`~jaxcourse.exercises.nbgrader.preprocessor.CourseScores`, which scores
    the test cells with this Python's course); and
    ``dest/jupyter/kernels/jaxcourse-walled`` is a kernelspec running this
    Python behind the grader's wall, the kernel of every notebook, for
    nbgrader installed in another environment (``JUPYTER_PATH=dest/jupyter``).

    Parameters
    ----------
    dest : Path
        The course folder (created if needed; existing sources are replaced).
    source_dir : Path
        The masters.
    chapters : list of str, optional
        Only these chapters (e.g. ``["03_bayes"]``); default: all.
    course_id : str
        nbgrader's course id (the exchange's name for the course).
    timeout : int
        Seconds per cell when nbgrader executes a notebook, and for the whole
        notebook when the course's grader scores it.

    Returns
    -------
    list of Path
        The source notebooks written.
    """
    masters = {assignment_name(p): p for p in sorted(source_dir.glob("*.ipynb"))}
    folders = content_folders()
    unknown = sorted(set(chapters or ()) - set(masters))
    if unknown:
        raise AuthoringError(
            f"no master for chapter {', '.join(unknown)}; the chapters are: "
            f"{', '.join(masters)}")
    written = []
    for chapter, path in masters.items():
        if chapters and chapter not in chapters:
            continue
        nb = with_nbgrader(nbformat.read(path, as_version=4))
        nb.cells = [c for c in nb.cells
                    if SOLUTION_ONLY_TAG not in c.get("metadata", {}).get("tags", [])]
        for cell in nb.cells:
            # The source equals the release: no "checksum has changed" (above).
            cell.source = strip_hidden_tests(cell.source)
            cell.get("metadata", {}).pop("execution", None)
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        if nb.cells and nb.cells[0].cell_type == "markdown":
            # nbgrader releases this source to learners: the exercises' title.
            nb.cells[0].source = student_title(nb.cells[0].source,
                                               master_language(path.name))
        # The class release's cells: a first cell that never installs the
        # public course (answers included), and Show solution said to be off.
        # A notebook handed out from `make release` then matches every
        # read-only cell here (nbgrader logs no changed checksum).
        release_cells(nb)
        nb.metadata.pop("widgets", None)
        target = dest / "source" / chapter / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    (dest / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(
        course_id=course_id, timeout=timeout, code_stub=CODE_STUB,
        text_stub=TEXT_STUB, scores_module=SCORES_MODULE, python=sys.executable,
        course=[str(f) for f in folders],
        # The folders that hold the course's packages: the course that wrote
        # this folder is the one that scores, even where another copy of it
        # is installed in that Python.
        path=sorted({str(f.parent) for f in folders}),
        environment=environment_folders(), kernel=KERNEL_NAME), encoding="utf-8")
    shutil.copyfile(nbgrader_preprocessor.__file__, dest / f"{SCORES_MODULE}.py")
    _walled(write_kernelspec(dest / "jupyter", KERNEL_NAME), dest.resolve(),
            sorted({str(f.parent) for f in folders}))
    return written
