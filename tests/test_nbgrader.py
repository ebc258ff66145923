"""nbgrader: the autograded score, and real nbgrader on chapter 3.

The slow tests run nbgrader 0.9.6 from its own environment (made by `make
setup`, JAX_COURSE_NBGRADER_VENV moves it) on a course folder written by
``authoring --nbgrader``: the released notebook must equal the class
release's (``make release``: no install of the public course, Show solution
said to be off), and autograding submissions made from it, with the course's
Python as the kernel, must give the master full marks, the untouched student
notebook zero, and a half-done one its partial credit, all scored
automatically (nothing left for manual grading), with no warning that a cell
changed. A notebook that replaces, in nbgrader's kernel, what the test cells
call, or rewrites the test cells before they run, still scores zero: the
scores come from the course's grader in a fresh process. And nbgrader's
kernel runs behind the grader's wall: a hostile notebook writes nothing into
the environment or ~/.jax-course, reads no other submission, reaches no
socket on 127.0.0.1, and leaves no process behind. The hostile class's ways
of borrowing a reference answer (tests/hostile_class.py) score zero with
their reason, and the class's flags reach nbgrader's gradebook and log.
"""

from __future__ import annotations

import copy
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
from hostile_class import (
    BATCHED,
    BORROWED,
    ELBO,
    HONEST_BATCHED,
    LIBRARY_ELBO,
    TWIN,
    TWIN_RETYPED,
    VMAPPED,
    borrowed_sentence,
    with_answers,
)

from jaxcourse.exercises import check, get
from jaxcourse.exercises.authoring import cli as authoring
from jaxcourse.exercises.authoring.release_stubs import release_cells
from jaxcourse.exercises.checking.answers import reference_digest
from jaxcourse.exercises.grading.nbgrader_scores import class_report, graded_checks
from jaxcourse.exercises.grading.rows import SubmissionResult
from jaxcourse.exercises.nbgrader.autograde import autograde
from jaxcourse.exercises.nbgrader.preprocessor import CourseChangedError, CourseScores

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "03_bayes"
NAME = f"{CHAPTER}_exercises.ipynb"
NBGRADER_VENV = Path(os.environ.get(
    "JAX_COURSE_NBGRADER_VENV", Path.home() / ".jax-course" / "venv-nbgrader"))
STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"
# Both sums without an axis: the batch collapses to one number (1 of 6 tests).
NO_AXIS = (
    "    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0))\n"
    "    return result + jnp.sum(-jax.nn.softplus("
    "-(2 * y - 1) * jnp.dot(all_x, beta.T).T))"
)


def _no_axis(beta, all_x, y):
    import jax
    import jax.numpy as jnp
    import jax.scipy as jsp

    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0))
    return result + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * jnp.dot(all_x, beta.T).T))


# ---- autograde: the score nbgrader reads ------------------------------------------


def test_autograde_shows_the_panel_and_scores_in_points(capsys) -> None:
    reference = get("bayes.batched_log_joint").reference
    full = autograde("bayes.batched_log_joint", reference, points=2)
    bundle = full._repr_mimebundle_()
    assert bundle["text/plain"] == repr(full) == "2.0"
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert full.panel.result.passed

    partial = autograde("bayes.batched_log_joint", _no_axis)
    score = check("bayes.batched_log_joint", _no_axis).score
    assert 0 < score < 1
    assert partial.score == round(score, 6)
    assert float(repr(partial)) == partial.score

    def batched_log_joint(beta, all_x, y):
        raise NotImplementedError()

    assert repr(autograde("bayes.batched_log_joint", batched_log_joint)) == "0.0"
    # nbgrader gives a test cell that wrote to stderr zero points.
    assert capsys.readouterr().err == ""


def test_autograde_refuses_points_it_cannot_award() -> None:
    with pytest.raises(ValueError, match="points must be positive"):
        autograde("bayes.batched_log_joint", _no_axis, points=0)


def test_autograde_defers_to_the_classroom_grader(monkeypatch) -> None:
    from jaxcourse.exercises.checking.judging import GRADING_ENV

    monkeypatch.setenv(GRADING_ENV, "1")
    graded = autograde("bayes.batched_log_joint", get("bayes.batched_log_joint")
                       .reference)
    assert graded.panel.result is None and repr(graded) == "0.0"


# ---- what a class gets: the release's cells, nbgrader's too -----------------------


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").rglob("*.ipynb")),
                         ids=lambda p: str(p.relative_to(ROOT / "exercises")))
def test_release_cells_install_nothing_and_say_show_solution_is_off(
        path: Path) -> None:
    from jaxcourse.messages import LANGUAGES, message

    nb = nbformat.read(path, as_version=4)
    release_cells(nb)
    text = "".join(c.source for c in nb.cells)
    assert "git+" not in text and "subprocess.run" not in text
    notes = [lang for lang in LANGUAGES
             if message("release_solution_note", lang) in text]
    assert len(notes) == 1, notes
    # The note is in the language of the button's name the notebook uses.
    assert message("show_solution", notes[0]) in text
    again = copy.deepcopy(nb)
    release_cells(again)
    assert [c.source for c in again.cells] == [c.source for c in nb.cells]


# ---- CourseScores: nbgrader's scores from the course's grader ----------------------


def _meta(grade_id: str, *, grade: bool = False, solution: bool = False,
          points: float = 1) -> dict:
    return {"nbgrader": {"grade": grade, "grade_id": grade_id, "locked": not solution,
                         "points": points, "schema_version": 3,
                         "solution": solution}}


def _tiny(relu: str, one_hot: str) -> nbformat.NotebookNode:
    """An executed nbgrader notebook: two solutions, two check cells, one assert.

    Each check cell's stored output claims full marks, as a kernel the learner
    tampered with would print; the plain assert cell is nbgrader's own.
    """
    nb = nbformat.v4.new_notebook()
    claim = nbformat.v4.new_output("execute_result", data={"text/plain": "2.0"},
                                   execution_count=3)
    nb.cells = [
        nbformat.v4.new_code_cell("import jax.numpy as jnp\n"
                                  "from jaxcourse.exercises import check_panel",
                                  metadata=_meta("imports")),
        nbformat.v4.new_code_cell(relu, metadata=_meta("relu-solution",
                                                       solution=True)),
        nbformat.v4.new_code_cell('check_panel("mlp.relu", relu)',
                                  metadata=_meta("relu", grade=True, points=2),
                                  outputs=[claim]),
        nbformat.v4.new_code_cell(one_hot, metadata=_meta("one_hot-solution",
                                                          solution=True)),
        nbformat.v4.new_code_cell('check_panel("mlp.one_hot", one_hot)',
                                  metadata=_meta("one_hot", grade=True, points=2),
                                  outputs=[claim]),
        nbformat.v4.new_code_cell("assert True", metadata=_meta("mine", grade=True),
                                  outputs=[]),
    ]
    for number, cell in enumerate(nb.cells, 1):
        cell.execution_count = number
    return nb


ONE_HOT_STUB = ("def one_hot(x, k, dtype=jnp.float32):\n"
                "    raise NotImplementedError()\n"
                "check_panel = lambda *a, **k: 2.0")


def test_graded_checks_are_the_test_cells_that_check_an_exercise() -> None:
    nb = _tiny("def relu(x):\n    return jnp.maximum(0, x)", ONE_HOT_STUB)
    # A solution cell that calls check_panel is the learner's, never a test.
    nb.cells[1].source += '\ncheck_panel("mlp.relu", relu)'
    assert graded_checks(nb) == {"relu": "mlp.relu", "one_hot": "mlp.one_hot"}


def test_course_scores_refuse_a_course_changed_since_nbgrader_started(
        tmp_path: Path) -> None:
    course = tmp_path / "course"
    (course / "pkg").mkdir(parents=True)
    (course / "pkg" / "judging.py").write_text("PASS = False\n")
    CourseScores.watch([course])
    try:
        scores = CourseScores(python="/nonexistent/python")
        nb = _tiny("def relu(x):\n    return x", ONE_HOT_STUB)
        # What a kernel with the teacher's rights could do between two notebooks.
        (course / "pkg" / "judging.py").write_text("PASS = True\n")
        with pytest.raises(CourseChangedError, match="judging.py"):
            scores(nb, {})
        (course / "pkg" / "judging.py").write_text("PASS = False\n")
        (course / "pkg" / "extra.py").write_text("")
        with pytest.raises(CourseChangedError, match="extra.py"):
            scores(nb, {})
    finally:
        CourseScores.watch([])
    # Placed before nbgrader's Execute, its scores would be executed away.
    for cell in nb.cells:
        cell.execution_count = None
    with pytest.raises(RuntimeError, match="after Execute"):
        scores(nb, {})


def test_course_scores_refuse_an_environment_changed_since_nbgrader_started(
        tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    CourseScores.watch([], environment=[site])
    try:
        scores = CourseScores(python="/nonexistent/python")
        nb = _tiny("def relu(x):\n    return x", ONE_HOT_STUB)
        # Python's own bytecode is not a change ...
        (site / "pkg" / "__pycache__").mkdir()
        (site / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
        # ... a .pth, which every later process runs, is.
        (site / "zz_planted.pth").write_text("import os\n")
        with pytest.raises(CourseChangedError,
                           match=r"Python environment changed.*zz_planted\.pth"):
            scores(nb, {})
    finally:
        CourseScores.watch([])


def test_the_class_report_is_the_graders_flags_with_this_notebook_among_them(
) -> None:
    pasted = reference_digest(get(BATCHED).solution_source())
    row = SubmissionResult("carol", {BATCHED: 1.0, VMAPPED: 1.0}, "graded",
                           answers={BATCHED: pasted, VMAPPED: "shared"})
    classmates = {
        "alice": {"scores": {BATCHED: 1.0, VMAPPED: 1.0},
                  "answers": {BATCHED: "hers", VMAPPED: "shared"}},
        # The same answer, but it earned nothing: not compared.
        "bob": {"scores": {VMAPPED: 0.0}, "answers": {VMAPPED: "shared"}},
        # Carol's own earlier notebook: this one replaces it.
        "carol": {"scores": {VMAPPED: 1.0}, "answers": {VMAPPED: "hers"}},
    }
    assert class_report(row, classmates) == [
        {"exercise": BATCHED, "submission": "carol", "flag": "pasted", "others": [],
         "text": "pasted the reference answer"},
        {"exercise": VMAPPED, "submission": "alice", "flag": "same",
         "others": ["carol"], "text": "same answer as carol"},
        {"exercise": VMAPPED, "submission": "carol", "flag": "same",
         "others": ["alice"], "text": "same answer as alice"},
    ]
    assert class_report(row, {})[1:] == []  # alone: only what it pasted


# Stands for the course's Python: writes the report CourseScores reads, each
# student with one answer, all the same, so that every two are flagged; and
# keeps the classmates it was given, for the test to read.
FAKE_COURSE = """\
import json, sys
args = sys.argv
name = args[args.index("--name") + 1]
assert args[args.index("--class") + 1] == "-"
mates = json.load(sys.stdin)
with open(args[args.index("--out") + 1] + ".mates", "w") as kept:
    json.dump(mates, kept)
everyone = sorted({*mates, name})
flags = [{"exercise": "mlp.relu", "submission": n, "flag": "same",
          "others": [o for o in everyone if o != n], "text": "same answer"}
         for n in everyone] if len(everyone) > 1 else []
json.dump({"status": "borrowed" if name == "bob" else "graded",
           "reason": "borrowed the reference answer" if name == "bob" else "",
           "cells": {"relu": {"exercise": "mlp.relu", "fraction": 1.0,
                              "markdown": "**mlp.relu: 100%**"}},
           "scores": {"mlp.relu": 1.0}, "answers": {"mlp.relu": "same"},
           "flags": flags}, open(args[args.index("--out") + 1], "w"))
"""


def test_course_scores_keep_the_class_and_say_its_flags(
        tmp_path: Path, monkeypatch, caplog) -> None:
    fake = tmp_path / "course-python"
    fake.write_text(f"#!{sys.executable}\n{FAKE_COURSE}")
    fake.chmod(0o755)
    mates: list[dict] = []
    real_run = subprocess.run

    def run(command, **options):
        done = real_run(command, **options)
        out = Path(command[command.index("--out") + 1])
        mates.append(json.loads(Path(f"{out}.mates").read_text()))
        return done

    monkeypatch.setattr(subprocess, "run", run)
    scores = CourseScores(python=str(fake), flags_dir=str(tmp_path / "flags"))
    caplog.set_level("INFO")
    for student in ("alice", "bob", "alice"):
        nb = _tiny("def relu(x):\n    return x", ONE_HOT_STUB)
        who = {"student": student, "assignment": "03_bayes", "notebook": "nb"}
        graded, _ = scores(nb, {"nbgrader": who})
        assert graded.cells[2].outputs[0].data["text/plain"] == "2.0"
        # The learner's feedback names no other student.
        assert "same answer" not in json.dumps(graded.cells[2].outputs[0].data)
    # Each notebook is compared with the others graded before it, never with
    # an earlier notebook of its own.
    assert mates[0] == {}
    assert list(mates[1]) == ["alice"]
    assert list(mates[2]) == ["bob"]
    known = json.loads((tmp_path / "flags" / "03_bayes" / "nb.json").read_text())
    assert sorted(known["students"]) == ["alice", "bob"]
    assert known["students"]["bob"]["status"] == "borrowed"
    assert [(f["submission"], f["others"]) for f in known["flags"]] == [
        ("alice", ["bob"]), ("bob", ["alice"])]
    # nbgrader's log, which the teacher reads, says each flag and verdict.
    said = [r.getMessage() for r in caplog.records]
    assert "The course's grader: bob: borrowed: borrowed the reference answer" in said
    assert ("The course's grader flags alice for mlp.relu: same answer "
            "(the score stands)") in said


@pytest.mark.slow  # the course's grader runs the notebook in a process
def test_course_scores_replace_what_the_kernel_printed(tmp_path: Path) -> None:
    nb = _tiny("def relu(x):\n    return jnp.maximum(0, x)", ONE_HOT_STUB)
    scores = CourseScores(python=sys.executable, path=[str(ROOT)], timeout=120)
    graded, resources = scores(nb, {})
    relu, one_hot, mine = graded.cells[2], graded.cells[4], graded.cells[5]
    # A right answer earns the cell's 2 points, the stub none, whatever the
    # kernel printed; one result each, its feedback in Markdown.
    assert [o.data["text/plain"] for o in relu.outputs] == ["2.0"]
    assert [o.data["text/plain"] for o in one_hot.outputs] == ["0.0"]
    assert one_hot.outputs[0].execution_count == 5
    assert one_hot.outputs[0].data["text/markdown"].startswith(
        "**mlp.one_hot: 0%**")
    assert "NotImplementedError" in one_hot.outputs[0].data["text/markdown"]
    assert mine.outputs == []  # not the course's: nbgrader scores it
    # Once per notebook, however many times nbgrader's config inserted it.
    assert resources["jaxcourse_scored"] is True
    again = _tiny("def relu(x):\n    return x", ONE_HOT_STUB)
    assert scores(again, resources)[0].cells[2].outputs[0].data["text/plain"] == "2.0"


# ---- real nbgrader (slow) -----------------------------------------------------------


@pytest.fixture(scope="module")
def nbgrader_bin() -> Path:
    folder = NBGRADER_VENV / "bin"
    if not (folder / "nbgrader").is_file():
        pytest.fail(f"nbgrader is not installed in {NBGRADER_VENV}: run `make setup`, "
                    "which makes it from scripts/nbgrader-requirements.txt")
    return folder


def _nbgrader(bin_dir: Path, course: Path, *args: str, timeout: float) -> str:
    # nbgrader calls `alembic` by name, so its environment's bin goes first on
    # PATH; the course's folder of kernelspecs makes `python3` the course's
    # Python, where JAX and the course are.
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               JUPYTER_PATH=str(course / "jupyter"))
    proc = subprocess.run([str(bin_dir / "nbgrader"), *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


def _cells(path: Path) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nbformat.read(path, as_version=4).cells]


def _submit(course: Path, student: str, nb: nbformat.NotebookNode) -> None:
    folder = course / "submitted" / student / CHAPTER
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / NAME)


GRADEBOOK = """
import json, sys
from nbgrader.api import Gradebook
with Gradebook("sqlite:///gradebook.db") as gb:
    out = {}
    for student in sys.argv[2:]:
        sub = gb.find_submission(sys.argv[1], student)
        nb = gb.find_submission_notebook(sys.argv[1] + "_exercises", sys.argv[1],
                                         student)
        out[student] = {
            "score": sub.score, "max_score": sub.max_score,
            "needs_manual_grade": sub.needs_manual_grade,
            "cells": {g.name: g.auto_score for g in nb.grades},
            "flagged": nb.flagged,
        }
print(json.dumps(out))
"""


# What a learner controls is the kernel that nbgrader runs the notebook in:
# these lines, at the end of a solution cell, replace what the test cells call
# there (the course's autograde, the check panel) ...
PATCHES = (
    "\nimport jaxcourse.exercises as _course\n"
    "_course.autograde = lambda *a, **k: 1.0\n"
    "check_panel = lambda *a, **k: 1.0\n"
)
# ... and this one rewrites every later cell, test cells too, before it runs.
REWRITE = '\nget_ipython().input_transformers_post.append(lambda lines: ["1.0\\n"])\n'


# What a hostile notebook tries in nbgrader's kernel, each attempt's outcome
# printed as JSON: a .pth into the course's environment (every later process
# would run it), a file into ~/.jax-course, another student's notebook, a
# socket on 127.0.0.1, and five children that ignore SIGTERM, clear their
# environment, call setsid and fork twice.
HOSTILE = """
import json, os, socket, subprocess, sys
tried = {{}}
try:
    open({pth!r}, "w").write("import os\\n")
    tried["pth"] = "written"
except OSError:
    tried["pth"] = "OSError"
try:
    open({planted!r}, "w").write("planted")
    tried["planted"] = "ok (a decoy)"
except OSError as err:
    tried["planted"] = type(err).__name__
try:
    open({other!r}).read()
    tried["other"] = "read"
except OSError as err:
    tried["other"] = type(err).__name__
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
    tried["network"] = "connected"
except OSError:
    tried["network"] = "OSError"
escape = (
    "import os, signal, sys\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    "if os.fork() == 0:\\n"
    "    os.setsid()\\n"
    "    if os.fork() == 0:\\n"
    "        os.execve(sys.executable, [sys.executable, '-c', 'import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)', "
    "{mark!r}], {{}})\\n"
    "    os._exit(0)\\n")
tried["children"] = sum(
    subprocess.run([sys.executable, "-c", escape], env={{}}).returncode == 0
    for _ in range(5))
print(json.dumps(tried))
"""


def _living(mark: str) -> list[int]:
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE
            and mark in (p.info["cmdline"] or [])]


@pytest.mark.slow
def test_nbgrader_releases_and_autogrades_chapter_3(
    tmp_path: Path, nbgrader_bin: Path
) -> None:
    course = tmp_path / "course"
    authoring.export_nbgrader(course, chapters=[CHAPTER])
    _nbgrader(nbgrader_bin, course, "generate_assignment", CHAPTER, timeout=120)
    released = course / "release" / CHAPTER / NAME
    # What a class gets from `make release`: the same cells as nbgrader's,
    # with no install of the public course (its answers) and Show solution
    # said to be off.
    handed_out = nbformat.read(ROOT / "exercises" / NAME, as_version=4)
    release_cells(handed_out)
    assert _cells(released) == [(c.cell_type, c.source) for c in handed_out.cells]
    text = released.read_text(encoding="utf-8")
    assert "git+" not in text and "subprocess.run" not in text
    assert "stays off until your teacher publishes" in text

    # Every submission is the class release's notebook with some cells
    # answered, as a learner's is: its read-only cells are nbgrader's own.
    master = nbformat.read(ROOT / "solutions" / NAME, as_version=4)
    untouched = copy.deepcopy(handed_out)
    partial = copy.deepcopy(handed_out)
    solver = copy.deepcopy(handed_out)
    solved = {c.source.split("(", 1)[0]: c.source for c in master.cells
              if c.source.startswith("def ")}
    for cell in solver.cells:
        cell.source = solved.get(cell.source.split("(", 1)[0], cell.source)
    for cell in partial.cells:
        if cell.source.startswith("def batched_log_joint("):
            cell.source = cell.source.replace(STUB, NO_AXIS)
        elif cell.source.startswith("def vmapped_log_joint("):
            cell.source = solved["def vmapped_log_joint"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    mark = f"jaxcourse-escapee-{secrets.token_hex(4)}"
    pth = Path(sysconfig.get_paths()["purelib"]) / f"zz_{mark}.pth"
    planted = Path.home() / ".jax-course" / f"{mark}.txt"
    other = course / "submitted" / "solver" / CHAPTER / NAME
    hostile = HOSTILE.format(pth=str(pth), planted=str(planted), mark=mark,
                             other=str(other), port=listener.getsockname()[1])
    cheats = {}
    for student, lines in [("patcher", PATCHES), ("rewriter", REWRITE),
                           ("hostile", hostile)]:
        cheats[student] = copy.deepcopy(handed_out)
        first = next(c for c in cheats[student].cells
                     if c.source.startswith("def batched_log_joint("))
        first.source += lines
    _submit(course, "solver", solver)
    _submit(course, "untouched", untouched)
    _submit(course, "partial", partial)
    for student, nb in cheats.items():
        _submit(course, student, nb)
    # The hostile class's three ways past the in-process tripwire
    # (tests/hostile_class.py), with a library answer and two students whose
    # own answer is the same beside them: each borrowed answer scores 0 with
    # its reason, the others as checked, and the class's flags reach nbgrader.
    borrowers = {
        "k_course_helper": {"batched_log_joint": BORROWED["k_course_helper"][2],
                            "vmapped_log_joint": TWIN},
        "l_detector_off": {"batched_log_joint": HONEST_BATCHED[1],
                           "vmapped_log_joint": BORROWED["l_detector_off"][2],
                           "elbo_value_and_grad": LIBRARY_ELBO},
        "m_exec_changed": {"batched_log_joint": BORROWED["m_exec_changed"][2],
                           "vmapped_log_joint": TWIN_RETYPED},
    }
    for student, cells in borrowers.items():
        _submit(course, student, with_answers(copy.deepcopy(handed_out), **cells))
    try:
        log = _nbgrader(nbgrader_bin, course, "autograde", CHAPTER, timeout=1500)
        # Behind the wall: nothing written into the environment or the
        # course's folder, nothing running, no connection made.
        assert not pth.exists(), "a notebook wrote a .pth into the environment"
        assert not planted.exists(), "a notebook wrote into ~/.jax-course"
        assert not _living(mark), "a process a notebook started outlived it"
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
        pth.unlink(missing_ok=True)
        planted.unlink(missing_ok=True)
        for pid in _living(mark):
            os.kill(pid, 9)
    autograded = nbformat.read(course / "autograded" / "hostile" / CHAPTER / NAME,
                               as_version=4)
    [attempts] = [json.loads(o.text) for c in autograded.cells
                  if c.cell_type == "code" for o in c.outputs
                  if o.get("name") == "stdout" and o.text.startswith("{")]
    assert attempts == {"pth": "OSError", "planted": "ok (a decoy)",
                        "other": "FileNotFoundError", "network": "OSError",
                        "children": 5}, attempts

    students = ["solver", "untouched", "partial", *cheats, *borrowers]
    proc = subprocess.run(
        [str(nbgrader_bin / "python"), "-c", GRADEBOOK, CHAPTER, *students],
        cwd=course, capture_output=True, text=True, timeout=60, check=True)
    grades = json.loads(proc.stdout)
    names = ["batched_log_joint", "vmapped_log_joint", "sample_betas",
             "elbo_value_and_grad", "ascent_step"]
    # The course's grader keeps four decimals of a fraction.
    fraction = pytest.approx(check("bayes.batched_log_joint", _no_axis).score,
                             abs=1e-4)
    nothing = {"score": 0.0, "max_score": 5.0, "needs_manual_grade": False,
               "cells": dict.fromkeys(names, 0.0), "flagged": False}

    def one(name: str, flagged: bool) -> dict:
        return {"score": 1.0, "max_score": 5.0, "needs_manual_grade": False,
                "cells": {**dict.fromkeys(names, 0.0), name: 1.0},
                "flagged": flagged}

    # A flagged answer (pasted, shared) scores as checked; a borrowed one 0.
    # nbgrader's flag (the formgrader's flag column, for the teacher) marks
    # every submission the course's grader flags, borrowed or tampered.
    assert grades == {
        "solver": {"score": 5.0, "max_score": 5.0, "needs_manual_grade": False,
                   "cells": dict.fromkeys(names, 1.0), "flagged": True},
        "untouched": nothing,
        "partial": {"score": pytest.approx(1 + fraction.expected, abs=1e-4),
                    "max_score": 5.0, "needs_manual_grade": False,
                    "cells": {**dict.fromkeys(names, 0.0), "batched_log_joint":
                              fraction, "vmapped_log_joint": 1.0},
                    "flagged": False},
        "patcher": nothing,
        "rewriter": nothing,
        "hostile": {**nothing, "flagged": True},
        "k_course_helper": one("vmapped_log_joint", True),
        "l_detector_off": one("batched_log_joint", True),
        "m_exec_changed": one("vmapped_log_joint", True),
    }
    _assert_the_class_flags_reach_nbgrader(course, log, borrowers)
    # nbgrader warns when a read-only cell differs from its release; none does
    # here (a test cell's hidden region used to make each one differ, even in
    # the untouched release).
    assert "has changed" not in log, log[-4000:]


def _feedback(course: Path, student: str) -> dict[str, str]:
    """Return the Markdown feedback under each test cell, by exercise id.

    Each starts with the exercise and its score: ``**bayes.x: 0%**``.
    """
    nb = nbformat.read(course / "autograded" / student / CHAPTER / NAME, as_version=4)
    said = [o.data["text/markdown"] for c in nb.cells if c.cell_type == "code"
            for o in c.outputs if "text/markdown" in o.get("data", {})]
    return {text.split(":", 1)[0].strip("*"): text for text in said}


def _assert_the_class_flags_reach_nbgrader(course: Path, log: str,
                                           borrowers: dict) -> None:
    """Each borrowed answer's reason in its cell; the class's flags for the teacher."""
    for student in borrowers:
        exercise, how, _ = BORROWED[student]
        said = _feedback(course, student)[exercise]
        assert "Status: borrowed" in said and borrowed_sentence(exercise, how) in said
    elbo = _feedback(course, "l_detector_off")[ELBO]
    assert "uses the course's `jaxcourse.bayes.elbo`" in elbo, elbo
    known = json.loads((course / "jaxcourse_flags" / CHAPTER
                        / f"{CHAPTER}_exercises.json").read_text())
    assert known["flags"] == [
        {"exercise": BATCHED, "submission": "solver", "flag": "pasted",
         "others": [], "text": "pasted the reference answer"},
        {"exercise": VMAPPED, "submission": "k_course_helper", "flag": "same",
         "others": ["m_exec_changed"], "text": "same answer as m_exec_changed"},
        {"exercise": VMAPPED, "submission": "m_exec_changed", "flag": "same",
         "others": ["k_course_helper"], "text": "same answer as k_course_helper"},
    ]
    assert {n: s["status"] for n, s in known["students"].items()
            if s["status"] != "graded"} == {
        "hostile": "tampered", **dict.fromkeys(borrowers, "borrowed")}
    assert ("The course's grader flags m_exec_changed for bayes.vmapped_log_joint: "
            "same answer as k_course_helper (the score stands)") in log, log[-4000:]
    # The learner's feedback names no other student.
    assert "k_course_helper" not in json.dumps(_feedback(course, "m_exec_changed"))


@pytest.mark.slow
def test_nbgrader_accepts_a_markdown_answer(tmp_path: Path, nbgrader_bin: Path) -> None:
    # No chapter has one yet; nbgrader takes a Markdown solution only as a
    # manually graded answer, and releases it as the course's generator does.
    source = tmp_path / "solutions"
    source.mkdir()
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "display_name": "Python 3 (ipykernel)", "language": "python",
        "name": "python3"}})
    nb.cells = [
        nbformat.v4.new_markdown_cell("Why batch?\n### BEGIN SOLUTION\nSpeed.\n"
                                      "### END SOLUTION"),
        nbformat.v4.new_code_cell("def relu(x):\n    ### BEGIN SOLUTION\n"
                                  "    return max(x, 0)\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell('check_panel("mlp.relu", relu)'),
        nbformat.v4.new_code_cell("print('only for the teacher')",
                                  metadata={"tags": ["solution-only"]}),
    ]
    nbformat.write(nb, source / "99_tiny_exercises.ipynb")
    course = tmp_path / "course"
    authoring.export_nbgrader(course, source)
    _nbgrader(nbgrader_bin, course, "generate_assignment", "99_tiny", timeout=120)
    released = course / "release" / "99_tiny" / "99_tiny_exercises.ipynb"
    student = authoring.student_notebook(nb, "99_tiny_exercises.ipynb")
    assert _cells(released) == [(c.cell_type, c.source) for c in student.cells]
    assert _cells(released)[0] == ("markdown", "Why batch?\nYOUR ANSWER HERE")
    meta = nbformat.read(released, as_version=4).cells[0].metadata.nbgrader
    assert (meta.grade, meta.solution, meta.points) == (True, True, 1)
    shutil.rmtree(course)
