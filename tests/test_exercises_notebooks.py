"""Student notebooks: how they are generated from the masters, and up to date;
classroom grading of a folder of submissions. That every chapter's student
notebook is generated, stripped and runnable is in tests/test_exercise_contract.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from course_copy import copy_code

from jaxcourse.exercises.authoring import cli as authoring
from jaxcourse.exercises.authoring.nbgrader import KERNEL_NAME
from jaxcourse.exercises.authoring.release_stubs import release_cells
from jaxcourse.exercises.grading import cli as grading

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "01_mlp_exercises.ipynb"
STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"
IDS = ["mlp.relu", "mlp.one_hot", "mlp.accuracy", "mlp.update"]


# ---- generation -----------------------------------------------------------------


def test_strip_solutions_keeps_indentation_and_context() -> None:
    source = (
        "def f(x):\n"
        "    y = 1\n"
        "    ### BEGIN SOLUTION\n"
        "    return x + y\n"
        "    ### END SOLUTION\n"
        "print('after')"
    )
    assert authoring.strip_solutions(source) == (
        "def f(x):\n    y = 1\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
        "print('after')"
    )
    markdown = "Answer:\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION"
    stripped = authoring.strip_solutions(markdown, "markdown")
    assert stripped == "Answer:\nYOUR ANSWER HERE"


@pytest.mark.parametrize(
    "source",
    [
        "### BEGIN SOLUTION\nx",
        "### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION",
    ],
)
def test_malformed_markers_are_refused(source: str) -> None:
    with pytest.raises(authoring.AuthoringError):
        authoring.strip_solutions(source)


def test_exercises_folder_is_up_to_date(tmp_path: Path) -> None:
    fresh = tmp_path / "exercises"
    authoring.generate(ROOT / "solutions", fresh)
    for path in fresh.glob("*.ipynb"):
        committed = ROOT / "exercises" / path.name
        assert committed.is_file(), f"exercises/{path.name} is missing"
        assert committed.read_text() == path.read_text(), (
            f"exercises/{path.name} is out of date: run "
            "`python -m jaxcourse.exercises.authoring`"
        )
    assert authoring.out_of_date() == []
    assert authoring.main(["--check"]) == 0


def test_check_reports_stale_notebooks(tmp_path: Path) -> None:
    authoring.generate(ROOT / "solutions", tmp_path)
    (tmp_path / STUDENT.name).write_text("{}")
    (tmp_path / "orphan.ipynb").write_text("{}")
    assert authoring.out_of_date(ROOT / "solutions", tmp_path) == [
        STUDENT.name, "orphan.ipynb"
    ]


# ---- nbgrader: metadata, hidden tests, the course folder ---------------------------

MASTER_3 = ROOT / "solutions" / "03_bayes_exercises.ipynb"
NAMES_3 = ["batched_log_joint", "vmapped_log_joint", "sample_betas",
           "elbo_value_and_grad", "ascent_step"]
HIDDEN = (
    "### BEGIN HIDDEN TESTS\n"
    "from jaxcourse.exercises import autograde\n"
    'autograde("bayes.batched_log_joint", batched_log_joint, points=1)\n'
    "### END HIDDEN TESTS"
)


def test_strip_hidden_tests_removes_the_region_with_its_markers() -> None:
    panel = 'check_panel("bayes.batched_log_joint", batched_log_joint)'
    assert authoring.strip_hidden_tests(f"{panel}\n{HIDDEN}") == panel
    for source in ("### BEGIN HIDDEN TESTS\nx", "### END HIDDEN TESTS",
                   "### BEGIN HIDDEN TESTS\n### BEGIN HIDDEN TESTS"):
        with pytest.raises(authoring.AuthoringError):
            authoring.strip_hidden_tests(source)


@pytest.mark.parametrize("source", [
    "x = 1  ### BEGIN SOLUTION\n### END SOLUTION",
    "Put your answer between BEGIN SOLUTION and END SOLUTION.",
])
def test_marker_words_inside_a_line_are_refused(source: str) -> None:
    # nbgrader takes any line containing them for a marker.
    with pytest.raises(authoring.AuthoringError, match="read as a marker"):
        authoring.strip_solutions(source, "markdown")


def test_masters_carry_nbgrader_metadata_and_hidden_tests() -> None:
    assert authoring.masters_out_of_date() == []
    master = nbformat.read(MASTER_3, as_version=4)
    metas = [c.metadata["nbgrader"] for c in master.cells]
    assert all(m["schema_version"] == 3 for m in metas)
    assert len({m["grade_id"] for m in metas}) == len(metas)
    tests = [m for m in metas if m["grade"]]
    assert [m["grade_id"] for m in tests] == NAMES_3
    assert all(m["points"] == 1 and m["locked"] and not m["solution"] for m in tests)
    solutions = [m for m in metas if m["solution"]]
    assert [m["grade_id"] for m in solutions] == [f"{n}-solution" for n in NAMES_3]
    assert not any(m["locked"] or m["grade"] for m in solutions)
    others = [m for m in metas if not m["grade"] and not m["solution"]]
    assert others and all(m["locked"] for m in others)
    panel = 'check_panel("bayes.batched_log_joint", batched_log_joint)'
    assert f"{panel}\n{HIDDEN}" in [c.source for c in master.cells]
    # Applying it again changes nothing.
    assert nbformat.writes(authoring.with_nbgrader(master)) == nbformat.writes(master)

    student = authoring.student_notebook(master, MASTER_3.name)
    assert "HIDDEN TESTS" not in nbformat.writes(student)
    assert "autograde" not in nbformat.writes(student)
    assert panel in [c.source for c in student.cells]
    assert [c.metadata["nbgrader"] for c in student.cells] == metas


def test_check_fails_when_a_master_lacks_its_nbgrader_metadata(tmp_path: Path) -> None:
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    master = nbformat.read(MASTER_3, as_version=4)
    index = next(i for i, c in enumerate(master.cells) if HIDDEN in c.source)
    del master.cells[0].metadata["nbgrader"]
    cell = master.cells[index]
    cell.source = authoring.strip_hidden_tests(cell.source)
    nbformat.write(master, solutions / MASTER_3.name)
    authoring.generate(solutions, exercises)
    args = ["--check", "--solutions", str(solutions), "--exercises", str(exercises)]
    assert authoring.masters_out_of_date(solutions) == [MASTER_3.name]
    assert authoring.main(args) == 1
    # Its check cell's source changed: that cell's outputs go, the others stay,
    # and the master is listed for execution.
    assert authoring.update_masters(solutions) == [solutions / MASTER_3.name]
    fixed = nbformat.read(solutions / MASTER_3.name, as_version=4)
    assert fixed.cells[index].outputs == [] and fixed.cells[index].source.endswith(
        "### END HIDDEN TESTS")
    assert fixed.cells[index - 1].outputs == master.cells[index - 1].outputs
    assert authoring.main(args) == 0
    assert authoring.update_masters(solutions) == []


def test_a_check_cell_holds_only_its_call() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('x = 1\ncheck_panel("mlp.relu", relu)')]
    with pytest.raises(authoring.AuthoringError, match="a check cell holds one call"):
        authoring.with_nbgrader(nb)


def test_nbgrader_course_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    from traitlets.config import Config

    course = tmp_path / "course"
    args = ["--nbgrader", str(course), "--chapter", "03_bayes"]
    assert authoring.main(args) == 0
    assert [p.name for p in (course / "source").iterdir()] == ["03_bayes"]
    source = nbformat.read(course / "source" / "03_bayes" / MASTER_3.name,
                           as_version=4)
    master = nbformat.read(MASTER_3, as_version=4)
    # The same cells, but titled as the exercises nbgrader releases to learners,
    # without the hidden tests (nbgrader scores with the course's grader), and
    # as the class release hands them out (no install of the public course).
    assert master.cells[0].source.startswith("# Solutions 3: ")
    master.cells[0].source = authoring.student_title(master.cells[0].source)
    for cell in master.cells:
        cell.source = authoring.strip_hidden_tests(cell.source)
    release_cells(master)
    assert "git+" not in "".join(c.source for c in source.cells)
    assert source.cells[0].source.startswith("# Chapter 3 exercises: ")
    assert [(c.cell_type, c.source, c.metadata["nbgrader"]) for c in source.cells] \
        == [(c.cell_type, c.source, c.metadata["nbgrader"]) for c in master.cells]
    assert all(not c.outputs and c.execution_count is None
               for c in source.cells if c.cell_type == "code")
    assert "widgets" not in source.metadata
    config = Config()
    monkeypatch.setattr(sys, "path", list(sys.path))  # the config adds its folder
    exec((course / "nbgrader_config.py").read_text(), {
        "get_config": lambda: config, "__file__": str(course / "nbgrader_config.py")})
    assert config.CourseScores.python == sys.executable
    assert str(ROOT) in config.CourseScores.path
    assert (course / "jaxcourse_nbgrader.py").is_file()
    assert config.ClearSolutions.code_stub == {
        "python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    assert config.ClearSolutions.text_stub == "YOUR ANSWER HERE"
    assert config.Execute.timeout == 300
    # The kernel behind the grader's wall, reached over Unix sockets.
    assert config.KernelManager.transport == "ipc"
    assert Path(config.KernelManager.connection_file).parent.is_dir()
    # Every notebook runs in the walled kernel, which only the folder's
    # jupyter/ has: without JUPYTER_PATH nbgrader runs nothing.
    assert config.Execute.kernel_name == KERNEL_NAME == "jaxcourse-walled"
    spec = json.loads((course / "jupyter" / "kernels" / "jaxcourse-walled" /
                       "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m",
                            "jaxcourse.exercises.grading.nbgrader_kernel",
                            "--course", str(course.resolve()), "-f",
                            "{connection_file}"]
    assert spec["interrupt_mode"] == "message"
    assert spec["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)

    # A cell tagged solution-only is not for nbgrader, which does not know the tag.
    tiny = tmp_path / "solutions"
    tiny.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(
        "y = 2", metadata={"tags": ["solution-only"]})]
    nbformat.write(nb, tiny / "99_tiny_exercises.ipynb")
    [written] = authoring.export_nbgrader(tmp_path / "tiny", tiny)
    assert [c.source for c in nbformat.read(written, as_version=4).cells] == ["x = 1"]

    assert authoring.main(["--nbgrader", str(course), "--chapter", "99_none"]) == 2
    assert "no master for chapter 99_none" in capsys.readouterr().err


# ---- grading ----------------------------------------------------------------------

BODIES = {
    "relu": "return jnp.maximum(0, x)",
    "one_hot": "return jax.nn.one_hot(x, k, dtype=dtype)",
    "accuracy": "return jnp.mean(jnp.argmax(log_probs, 1) == jnp.argmax(targets, 1))",
    "update": "grads = jax.grad(loss)(params, images, targets)\n"
              "    return jax.tree.map(lambda p, g: p - step_size * g, params, grads)",
}


def submission(bodies: dict[str, str], first_cell: str | None = None):
    """The student notebook with some functions filled in (and an extra cell)."""
    nb = nbformat.read(STUDENT, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and STUB in cell.source:
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            if name in bodies:
                cell.source = cell.source.replace(STUB, "    " + bodies[name])
    if first_cell:
        nb.cells.insert(2, nbformat.v4.new_code_cell(first_cell))
    return nb


@pytest.mark.slow
def test_grading_a_folder(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "submissions"
    folder.mkdir()
    partly = dict(BODIES, accuracy="return jnp.mean(jnp.argmax(log_probs, 0) == "
                  "jnp.argmax(targets, 0))")
    del partly["update"]
    cases = {
        "a_correct": submission(BODIES),
        "b_partly": submission(partly),
        "c_crashing": submission(BODIES, "import ctypes\nctypes.string_at(0)"),
        "d_hanging": submission(BODIES, "while True:\n    pass"),
        # Renames relu, deletes accuracy, and allocates past the memory limit.
        "e_renamed": submission(BODIES, "hog = bytearray(6 * 2**30)"),
    }
    renamed = cases["e_renamed"]
    for cell in renamed.cells:
        cell.source = cell.source.replace("def relu(", "def my_relu(")
    renamed.cells = [c for c in renamed.cells if "def accuracy" not in c.source]
    for name, nb in cases.items():
        nbformat.write(nb, folder / f"{name}.ipynb")

    # A copy of the course for the grader to guard (and restore): never the
    # checkout itself, which may be edited while the test runs.
    course = copy_code(tmp_path)
    rows = grading.grade([folder], exercises=IDS, timeout=30,
                         case_time_limit=5, memory_mb=3000, jobs=2, course=course)
    table = {r.submission: (r.scores, r.status) for r in rows}
    ones = dict.fromkeys(IDS, 1.0)
    zeros = dict.fromkeys(IDS, 0.0)
    assert table == {
        "a_correct": (ones, "graded"),
        "b_partly": ({"mlp.relu": 1.0, "mlp.one_hot": 1.0, "mlp.accuracy": 0.4,
                      "mlp.update": 0.0}, "graded"),
        "c_crashing": (zeros, "crashed"),
        "d_hanging": (zeros, "timed out"),
        # Its functions are still scored; the status says it hit the limit.
        "e_renamed": ({"mlp.relu": 0.0, "mlp.one_hot": 1.0, "mlp.accuracy": 0.0,
                       "mlp.update": 1.0}, "out of memory"),
    }
    reasons = {r.submission: r.reason for r in rows}
    assert reasons["c_crashing"] == "the notebook process died (SIGSEGV)"
    assert reasons["d_hanging"] == "the notebook ran past the 30 s time limit"
    assert reasons["e_renamed"] == (
        # Its check cells for relu and accuracy are not run: they only show
        # a panel, and change nothing the checks observe.
        "it ran out of memory (limit 3000 MB) in cells 2; "
        "code cell 2 raised MemoryError; "
        "no function named `relu` was found; "
        "no function named `accuracy` was found"
    )
    partly_feedback = " ".join(rows[1].feedback["mlp.accuracy"])
    assert "argmax along axis 0" in partly_feedback

    csv_path, json_path = grading.write_tables(rows, tmp_path / "out")
    lines = csv_path.read_text(encoding="utf-8-sig").splitlines()
    assert lines[0] == "submission,mlp.relu,mlp.one_hot,mlp.accuracy,mlp.update," \
        "total,status,reason"
    assert lines[2].startswith("b_partly,1,1,0.4,0,2.4,graded")
    assert lines[5].startswith("e_renamed,0,1,0,1,2,out of memory,")
    data = json.loads(json_path.read_text())
    assert data["exercises"] == IDS
    assert [s["total"] for s in data["submissions"]] == [4.0, 2.4, 0.0, 0.0, 2.0]
    grading.print_summary(rows)
    assert "d_hanging" in capsys.readouterr().out


def test_a_forged_or_broken_report_scores_zero() -> None:
    from jaxcourse.exercises import get
    from jaxcourse.exercises.checking.judging import reference_observations

    expected = {"mlp.relu": reference_observations(get("mlp.relu"))}
    passed = [{"kind": "passed"}] * 5  # not an observation
    report = {"exercises": {"mlp.relu": passed}, "cell_errors": "junk"}
    scores, feedback, reason = grading._judge_report(report, ["mlp.relu"], expected)
    assert scores == {"mlp.relu": 0.0}
    assert "could not be read" in feedback["mlp.relu"][0]
