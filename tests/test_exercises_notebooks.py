"""Student notebooks: generated from the masters, up to date, and runnable;
classroom grading of a folder of submissions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from jaxcourse.exercises import authoring, grading

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "01_mlp_tfds_exercises.ipynb"
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


def test_student_notebook_is_stripped_and_clean() -> None:
    master = nbformat.read(ROOT / "solutions" / STUDENT.name, as_version=4)
    student = authoring.student_notebook(master, STUDENT.name)
    text = nbformat.writes(student)
    assert "BEGIN SOLUTION" not in text and "jnp.maximum(0, x)" not in text
    assert text.count("raise NotImplementedError()") == 6 + 1  # + the intro's mention
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in student.cells if c.cell_type == "code")
    assert "widgets" not in student.metadata
    assert len(student.cells) == len(master.cells)


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


@pytest.mark.slow
def test_student_notebook_runs_and_reports_not_attempted(
    raw_root: Path, execute_notebook
) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id, total in zip(IDS, (5, 5, 5, 4), strict=True):
        assert f"{exercise_id}: not attempted yet (0/{total} tests)" in texts


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
    course = [tmp_path / "course" / name for name in ("jaxcourse", "solutions")]
    for target in course:
        shutil.copytree(ROOT / target.name, target,
                        ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
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
        "cells that raised: 2 (MemoryError); "
        "no function named `relu` was found; "
        "no function named `accuracy` was found"
    )
    partly_feedback = " ".join(rows[1].feedback["mlp.accuracy"])
    assert "argmax along axis 0" in partly_feedback

    csv_path, json_path = grading.write_tables(rows, tmp_path / "out")
    lines = csv_path.read_text().splitlines()
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
    from jaxcourse.exercises.core import reference_observations

    expected = {"mlp.relu": reference_observations(get("mlp.relu"))}
    passed = [{"kind": "passed"}] * 5  # not an observation
    report = {"exercises": {"mlp.relu": passed}, "cell_errors": "junk"}
    scores, feedback, reason = grading._judge_report(report, ["mlp.relu"], expected)
    assert scores == {"mlp.relu": 0.0}
    assert "could not be read" in feedback["mlp.relu"][0]
