"""nbgrader's side of the course's scores: a preprocessor that nbgrader runs.

nbgrader autogrades a notebook by executing it in a kernel and reading what
each test cell printed there. That kernel belongs to the learner as much as
to nbgrader: the learner's cells ran in it first, and whatever they did there
(replace ``jaxcourse.exercises.autograde`` or ``check_panel``, patch any of
the course's functions, or register an IPython input transformer that
rewrites every later cell before it runs) decides what a test cell prints. No
code in a test cell can be trusted to run as written in that kernel.

:class:`CourseScores` therefore runs in nbgrader's own process, right after
nbgrader has executed the notebook: it writes the notebook's source to a
private folder, has the course's grader score it there (``python -m
jaxcourse.exercises.grading.nbgrader_scores``: the learner's cells run in a
fresh, sandboxed process against a read-only copy of the course, exactly as ``python -m
jaxcourse.exercises.grading`` runs them), and replaces the outputs of every
test cell that the grader scored with one result whose plain text is the
score, which nbgrader then reads. Nothing the kernel did reaches either
process. Before each notebook it also compares the course's files, and the
whole Python environment's package folders, with what they were when
nbgrader started (:meth:`CourseScores.watch`), and refuses to score once
either changed.

The class's flags reach nbgrader too, for the teacher only: the grader's
verdicts (an answer that borrows the reference, or a library function that
computes it: zero, with the reason in the cell's feedback) and the class's
flags (an answer that pastes the shown solution, answers two students share:
scored as checked). Each notebook's answers join its class file
(``jaxcourse_flags/<assignment>/<notebook>.json`` in nbgrader's course
folder, where the kernel cannot reach), the class's flags are computed from it by the
course's grader (:func:`jaxcourse.exercises.grading.tables.class_flags`), and
every flagged submission gets nbgrader's own flag in its gradebook (the flag
column of the formgrader), with a line in nbgrader's log. The learner's
feedback never names another student.

nbgrader loads this file in its own environment, which need not have JAX or
the course: it imports the standard library, ``traitlets`` and ``nbformat``
(nbgrader's own dependencies), never ``jaxcourse``. ``python -m
jaxcourse.exercises.authoring --nbgrader DIR`` copies it to
``DIR/jaxcourse_nbgrader.py`` and registers it in ``DIR/nbgrader_config.py``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import nbformat
from traitlets import Bool, Float, Integer, List, Unicode
from traitlets.config import LoggingConfigurable

__all__ = ["CourseChangedError", "CourseScores", "changed_paths",
           "environment_fingerprint", "fingerprint"]

#: What the course's side of the scores is run as (with the course's Python).
COURSE_MODULE = "jaxcourse.exercises.grading.nbgrader_scores"
# Seconds the course's side may take beyond the notebook's own time limit:
# its imports and the reference outputs, computed before the notebook runs.
_OVERHEAD = 600
# Set in nbgrader's resources once a notebook is scored. nbgrader may read its
# config twice, and each reading inserts CourseScores again: the notebook is
# scored once all the same.
_SCORED = "jaxcourse_scored"
# Statuses of the course's grader that the teacher should look at, flagged
# in nbgrader's gradebook as the class's flags are.
_LOOK_AT = ("borrowed", "tampered")


class CourseChangedError(RuntimeError):
    """The course's files changed after nbgrader started: nothing is scored."""


def fingerprint(folders: Iterable[str | os.PathLike[str]]) -> dict[str, str]:
    """Return the SHA-256 of every ``.py`` file under ``folders``, by path.

    The files the course's grader protects too (its ``Course``): the code
    that runs a submission and judges it.
    """
    found = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def environment_fingerprint(
        folders: Iterable[str | os.PathLike[str]]) -> dict[str, str]:
    """Return the size and time of every file under ``folders``, by path.

    For the Python environment's package folders (site-packages): a ``.pth``
    or a module written there runs in every later process, the course's
    grader included. Only sizes and times, as hashing gigabytes per notebook
    would cost minutes; ``__pycache__`` is left out, which Python itself
    writes when it first imports a module.
    """
    found = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in files:
                path = os.path.join(root, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                found[path] = f"{info.st_size} {info.st_mtime_ns}"
    return found


def changed_paths(before: dict, now: dict) -> list:
    """Return the keys whose value differs between two fingerprints, sorted.

    A key in only one of them (a file added or deleted) differs too.
    """
    return sorted(p for p in {*before, *now} if before.get(p) != now.get(p))


def _is_test_cell(cell: Any) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return (cell.get("cell_type") == "code" and bool(meta.get("grade"))
            and not meta.get("solution") and "grade_id" in meta)


class CourseScores(LoggingConfigurable):
    """Replace the test cells' outputs with the course's grader's scores.

    An nbgrader preprocessor (a callable ``(nb, resources) -> (nb,
    resources)``) for ``c.Autograde.autograde_preprocessors``, right after
    ``Execute``. Test cells that the course's grader does not score (no
    ``check_panel("<topic>.<name>", f)`` call) keep nbgrader's own outputs.
    """

    python = Unicode(
        "python3", help="The course's Python: where JAX and the course are."
    ).tag(config=True)
    path = List(
        Unicode(), help="Folders put first on PYTHONPATH for the course's side: "
        "those of the course that wrote the config, whatever else is installed."
    ).tag(config=True)
    timeout = Float(
        300.0, help="Seconds for one notebook in the course's grader."
    ).tag(config=True)
    memory_mb = Integer(
        4096, help="Memory limit of the notebook's process, in MB; 0 for none."
    ).tag(config=True)
    flags_dir = Unicode(
        "jaxcourse_flags", help="Folder of the class files, one per assignment "
        "and notebook (the answers compared for the class's flags, and the "
        "flags), relative to nbgrader's course folder, where nbgrader runs."
    ).tag(config=True)
    # nbconvert sets this on every preprocessor it registers.
    enabled = Bool(True)

    # What the course's files were when :meth:`watch` was called (when
    # nbgrader loaded its config, before any notebook ran); empty: not watched.
    _baseline: ClassVar[dict[str, dict[str, str]]] = {}
    # The same for the Python environment's package folders (sizes and times).
    _environment: ClassVar[dict[str, dict[str, str]]] = {}

    @classmethod
    def watch(cls, folders: Iterable[str | os.PathLike[str]],
              environment: Iterable[str | os.PathLike[str]] = ()) -> None:
        """Remember the course's files now, to refuse scoring once they change.

        Called from ``nbgrader_config.py``, which nbgrader reads when it
        starts (sometimes twice), before it runs any notebook. ``environment``:
        the course's Python's package folders (site-packages), watched whole.
        """
        cls._baseline = {str(f): fingerprint([f]) for f in folders}
        cls._environment = {str(f): environment_fingerprint([f]) for f in environment}

    def _check_course(self) -> None:
        changed = []
        for folder, before in self._environment.items():
            changed += changed_paths(before, environment_fingerprint([folder]))
        if changed:
            raise CourseChangedError(
                f"the course's Python environment changed after nbgrader started "
                f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}): "
                "a file there (a .pth runs in every process) changes what every "
                "later notebook, and the course's grader, run. Grading stopped. "
                "If a submission wrote it, remove it; if you installed or "
                "upgraded a package yourself, restart nbgrader.")
        for folder, before in self._baseline.items():
            changed += changed_paths(before, fingerprint([folder]))
        if changed:
            raise CourseChangedError(
                f"the course's files changed after nbgrader started "
                f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}): "
                "nbgrader runs every notebook with your rights, so a submission "
                "graded since may have written them. Put them back (git status, "
                "git checkout), then autograde again; if you changed them "
                "yourself, restart nbgrader.")

    def __call__(self, nb: Any, resources: dict) -> tuple[Any, dict]:
        """Score ``nb``'s test cells with the course's grader; see the class."""
        return self.preprocess(nb, resources)

    def preprocess(self, nb: Any, resources: dict) -> tuple[Any, dict]:
        """Score ``nb``'s test cells with the course's grader; see the class.

        Raises
        ------
        CourseChangedError
            If the course's files changed since :meth:`watch`.
        RuntimeError
            If this runs before nbgrader executed the notebook, or the
            course's grader failed (not the notebook: a notebook that
            crashes or hangs is scored zero, with the reason).
        """
        tests = [c for c in nb.cells if _is_test_cell(c)]
        if not tests or resources.get(_SCORED):
            return nb, resources
        if all(c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code"):
            # Before nbgrader's Execute, whose outputs would replace ours.
            raise RuntimeError(
                "CourseScores must come after Execute in "
                "c.Autograde.autograde_preprocessors")
        self._check_course()
        who = resources.get("nbgrader") or {}
        student, assignment = who.get("student"), who.get("assignment")
        class_file = (Path(self.flags_dir) / assignment / f"{who['notebook']}.json"
                      if student and assignment and who.get("notebook") else None)
        report = self._grade(nb, student, class_file)
        for cell in tests:
            found = report["cells"].get(cell.metadata.nbgrader["grade_id"])
            if found is None:
                continue
            points = float(cell.metadata.nbgrader["points"])
            # Never above the cell's points, which nbgrader refuses; rounded
            # so that the text is short.
            score = min(round(float(found["fraction"]) * points, 6), points)
            cell.outputs = [nbformat.v4.new_output(
                "execute_result", execution_count=cell.get("execution_count"),
                data={"text/plain": repr(score), "text/markdown": found["markdown"]})]
        self.log.info("The course's grader scored %d test cells (%s) in a fresh "
                      "process; their outputs in the kernel were replaced",
                      len(report["cells"]), report["status"])
        if class_file is not None:
            self._flag(report, student, class_file, who)
        resources[_SCORED] = True
        return nb, resources

    def _flag(self, report: dict, student: str, class_file: Path, who: dict) -> None:
        """Keep ``student``'s answers in the class file; flag whom to look at.

        The class file holds, for each student autograded so far, the
        grader's status and reason and the answers it compares; and the
        class's flags, as the course's grader computed them with this
        notebook in. Every submission flagged (by the class's flags, or
        borrowed or tampered) gets nbgrader's flag in the gradebook, and a
        line in nbgrader's log says why.
        """
        known = _read_class(class_file)
        known["students"][student] = {
            "status": report["status"], "reason": report["reason"],
            "scores": report.get("scores", {}), "answers": report.get("answers", {})}
        known["flags"] = report.get("flags", [])
        class_file.parent.mkdir(parents=True, exist_ok=True)
        partial = class_file.with_suffix(".partial")
        partial.write_text(json.dumps(known, indent=1, ensure_ascii=False),
                           encoding="utf-8")
        partial.replace(class_file)
        if report["status"] in _LOOK_AT:
            self.log.warning("The course's grader: %s: %s: %s", student,
                             report["status"], report["reason"])
        for flag in known["flags"]:
            if flag["submission"] == student or student in flag["others"]:
                self.log.warning("The course's grader flags %s for %s: %s "
                                 "(the score stands)", flag["submission"],
                                 flag["exercise"], flag["text"])
        flagged = {f["submission"] for f in known["flags"]}
        flagged |= {name for name, row in known["students"].items()
                    if row.get("status") in _LOOK_AT}
        _flag_in_gradebook(who, sorted(flagged), self.log)

    def _grade(self, nb: Any, student: str | None = None,
               class_file: Path | None = None) -> dict:
        """Run the course's side on ``nb`` in a private folder; return its report.

        With ``student`` and ``class_file``, the course's side also computes
        the class's flags, with this notebook as ``student`` among the
        students the class file holds.
        """
        source = copy.deepcopy(nb)
        for cell in source.cells:
            if cell.cell_type == "code":
                # The grader reads the source only; the kernel's outputs stay out.
                cell.outputs, cell.execution_count = [], None
        with tempfile.TemporaryDirectory(prefix="jaxcourse-nbgrader-") as folder:
            notebook = Path(folder) / "submission.ipynb"
            out = Path(folder) / "scores.json"
            nbformat.write(source, notebook)
            command = [self.python, "-m", COURSE_MODULE, str(notebook), "--out",
                       str(out), "--timeout", f"{self.timeout:g}",
                       "--memory-mb", str(self.memory_mb)]
            classmates = None
            if student and class_file is not None:
                # On standard input, not in a file: no other student's name
                # lies where the submission's process might look.
                students = _read_class(class_file)["students"]
                students.pop(student, None)  # a notebook graded again
                classmates = json.dumps(students, ensure_ascii=False)
                command += ["--name", student, "--class", "-"]
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [*self.path, *filter(None, [env.get("PYTHONPATH")])])
            try:
                done = subprocess.run(command, cwd=folder, env=env,
                                      capture_output=True, text=True,
                                      input=classmates if classmates else None,
                                      stdin=None if classmates else subprocess.DEVNULL,
                                      timeout=self.timeout + _OVERHEAD)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise RuntimeError(f"the course's grader did not run: {err}") from None
            if done.returncode != 0 or not out.is_file():
                tail = (done.stderr or done.stdout).strip()[-2000:]
                raise RuntimeError(
                    f"the course's grader failed (exit {done.returncode}): {tail}")
            return json.loads(out.read_text(encoding="utf-8"))


def _read_class(class_file: Path) -> dict:
    """Return an assignment's class file, or an empty one."""
    try:
        known = json.loads(class_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known.get("students"), dict):
        known["students"] = {}
    return known


def _flag_in_gradebook(who: dict, students: list[str], log: Any) -> None:
    """Set nbgrader's flag on each of ``students``' notebooks in the gradebook.

    The flag the formgrader shows in its flag column, for the teacher alone
    (nbgrader's feedback leaves it out). Only set, never cleared: a grader
    may have flagged the notebook by hand. A notebook not autograded yet has
    no row: it is flagged when it is.
    """
    try:
        from nbgrader.api import Gradebook, MissingEntry
    except ImportError:  # not in nbgrader's process: nothing to flag
        return
    if not students or not who.get("db_url"):
        return
    with Gradebook(who["db_url"]) as gradebook:
        for student in students:
            try:
                notebook = gradebook.find_submission_notebook(
                    who["notebook"], who["assignment"], student)
            except MissingEntry:
                continue
            if not notebook.flagged:
                notebook.flagged = True
                log.info("Flagged %s's %s in the gradebook", student, who["notebook"])
        gradebook.db.commit()
