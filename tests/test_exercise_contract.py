"""The contract every exercise keeps, checked for every registered exercise.

For every exercise id (``jaxcourse.exercises.exercise_ids()``): its reference
passes its own check; every wrong answer in the tables of
``tests/exercise_answers`` is rejected with a report that names the problem;
every alternative answer is accepted; the tables hold at least three wrong
answers and one alternative. For every chapter: the student notebook is the
one generated from the solution notebook, stripped of the solutions, and
(slow) it runs from top to bottom with every exercise "not attempted yet";
the submissions of a chapter's table are graded as expected (slow).

An exercise is checked with as many devices as it declares
(``Exercise.devices``): with one, in this process; with more, in one fresh
process per device count, shared by every test of those exercises (JAX fixes
its number of devices when it starts). Those tests are slow, and so are the
checks that launch processes themselves (``multiprocess.run_epoch``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from exercise_answers import (
    Row,
    answer,
    answers_module,
    judge,
    right,
    submissions,
    table,
    topic_of,
    wrong,
)
from processes import (
    assert_no_children_left,
    per_device_count,
    starts_a_process,
)

from jaxcourse.exercises import by_chapter, exercise_ids, get, message

ROOT = Path(__file__).resolve().parents[1]
STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"
IDS = exercise_ids()
TOPICS = sorted({topic_of(exercise_id) for exercise_id in IDS})
CHAPTERS = sorted(by_chapter())


def launches(exercise_id: str) -> bool:
    """Whether checking ``exercise_id`` launches processes of its own."""
    return any(starts_a_process(getattr(case, "runner", None))
               for case in get(exercise_id).cases)


def _param(exercise_id: str, *values: object, name: str = "") -> object:
    # Judged in another process (more devices), or launching processes: slow.
    slow = get(exercise_id).devices > 1 or launches(exercise_id)
    return pytest.param(exercise_id, *values, marks=[pytest.mark.slow] * slow,
                        id=f"{exercise_id}-{name}" if name else exercise_id)


WRONG = [_param(r.exercise_id, r.name, r.fragments, name=r.name)
         for topic in TOPICS for r in wrong(topic)]
RIGHT = [_param(r.exercise_id, r.name, name=r.name)
         for topic in TOPICS for r in right(topic)]


# ---- judging, in this process or in one per device count --------------------------

@pytest.fixture(scope="session")
def judged_elsewhere():
    """Verdicts from one fresh process per device count, each computed once."""
    return per_device_count("judge_all")


def verdict(request: pytest.FixtureRequest, exercise_id: str, name: str) -> dict:
    """The check of ``exercise_id``'s answer ``name`` (or its "reference")."""
    devices = get(exercise_id).devices
    if devices > 1:  # such tests are slow (_param): they use that fixture
        return request.getfixturevalue("judged_elsewhere")(devices)[
            f"{exercise_id}:{name}"]
    function = (get(exercise_id).reference if name == "reference"
                else answer(exercise_id, name))
    found = judge(exercise_id, function)
    if launches(exercise_id):
        assert_no_children_left(f"checking {exercise_id} left processes behind")
    return found


def expected(exercise_id: str, fragment: str) -> str:
    """``fragment`` as the exercise says it: converted for a generated edition."""
    if get(exercise_id).language != "zh-Hans":
        return fragment
    pytest.importorskip("opencc", reason="the Simplified-Chinese fragments are "
                        "converted with OpenCC, which Colab lacks")
    from jaxcourse import zh_hans

    return zh_hans.convert_text(fragment)


# ---- every exercise ------------------------------------------------------------------


@pytest.mark.parametrize("exercise_id", [_param(e) for e in IDS])
def test_reference_passes_its_own_check(request, exercise_id: str) -> None:
    found = verdict(request, exercise_id, "reference")
    assert found["status"] == "passed", found["report"]
    total = sum(not case.advice for case in get(exercise_id).cases)  # advice aside
    assert found["summary"] == message("summary", get(exercise_id).language,
                                       id=exercise_id, passed=total, total=total)


@pytest.mark.parametrize(("exercise_id", "name", "fragments"), WRONG)
def test_wrong_answer_is_rejected_and_named(request, exercise_id: str, name: str,
                                            fragments: tuple[str, ...]) -> None:
    found = verdict(request, exercise_id, name)
    assert found["status"] == "failed" and found["score"] < 1.0, found["report"]
    for fragment in fragments:
        assert expected(exercise_id, fragment) in found["report"], found["report"]


@pytest.mark.parametrize(("exercise_id", "name"), RIGHT)
def test_alternative_correct_answer_is_accepted(request, exercise_id: str,
                                                name: str) -> None:
    found = verdict(request, exercise_id, name)
    assert found["status"] == "passed" and found["score"] == 1.0, found["report"]


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_exercise_has_three_wrong_answers_and_an_alternative(
        exercise_id: str) -> None:
    topic = topic_of(exercise_id)
    assert answers_module(topic) and table(topic), \
        f"no answers to {topic}: tests/exercise_answers/{topic}.py and .toml"
    assert Counter(r.exercise_id for r in wrong(topic))[exercise_id] >= 3
    assert Counter(r.exercise_id for r in right(topic))[exercise_id] >= 1


@pytest.mark.parametrize("topic", TOPICS)
def test_every_answer_is_to_a_registered_exercise(topic: str) -> None:
    rows: list[Row] = wrong(topic) + right(topic)
    assert {r.exercise_id for r in rows} <= set(IDS)
    assert all(callable(answer(r.exercise_id, r.name)) for r in rows)
    named = [(r.exercise_id, r.name) for r in rows]
    assert len(named) == len(set(named)), "an answer is in the tables twice"
    assert all(r.fragments for r in wrong(topic)), "a wrong answer names nothing"


# ---- every chapter's student notebook ---------------------------------------------

_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def _notebooks(chapter: str) -> tuple[nbformat.NotebookNode, Path]:
    name = f"{chapter}_exercises.ipynb"
    return nbformat.read(ROOT / "solutions" / name, as_version=4), \
        ROOT / "exercises" / name


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_student_notebook_is_generated_and_stripped(chapter: str) -> None:
    from jaxcourse.exercises.authoring import cli as authoring

    master, path = _notebooks(chapter)
    student = authoring.student_notebook(master, path.name)
    text = nbformat.writes(student)
    assert path.read_text(encoding="utf-8") == text + "\n", (
        f"{path.name} is out of date: run `python -m jaxcourse.exercises.authoring`")
    assert "BEGIN SOLUTION" not in text
    code = [c for c in student.cells if c.cell_type == "code"]
    sources = "\n".join(c.source for c in student.cells)
    # One stub per exercise, in the cell that defines the learner's function.
    for exercise_id in by_chapter()[chapter]:
        name = get(exercise_id).function_name
        assert [c for c in code if f"def {name}(" in c.source and STUB in c.source], \
            f"no stub for {name}"
    assert sources.count(STUB) == len(by_chapter()[chapter])
    # The longest line of every solution is gone.
    for cell in master.cells:
        for region in _REGION.findall(cell.source):
            longest = max((line.strip() for line in region.splitlines()), key=len)
            assert longest not in sources, longest
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in code)
    assert "widgets" not in student.metadata
    assert len(student.cells) == len(master.cells)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_student_notebook_runs_and_reports_not_attempted(
        chapter: str, raw_root: Path, execute_notebook) -> None:
    _, path = _notebooks(chapter)
    texts = execute_notebook(path)
    for exercise_id in by_chapter()[chapter]:
        exercise = get(exercise_id)
        counted = sum(not case.advice for case in exercise.cases)  # advice is not
        said = message("summary_not_attempted", exercise.language, id=exercise_id,
                       total=counted)
        assert said in texts, texts
    assert_no_children_left(f"running {path.name} left processes behind")


# ---- grading a chapter's submissions ----------------------------------------------

GRADED = [chapter for chapter in CHAPTERS
          if submissions(topic_of(by_chapter()[chapter][0]))]


def _filled(chapter: str, bodies: dict[str, str] | None) -> nbformat.NotebookNode:
    master, path = _notebooks(chapter)
    if bodies is None:
        return master
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and STUB in cell.source:
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            if name in bodies:
                body = textwrap.dedent(bodies[name]).strip("\n")
                cell.source = cell.source.replace(STUB, textwrap.indent(body, "    "))
    return nb


@pytest.mark.parametrize("chapter", GRADED)
def test_grading_the_chapters_submissions(chapter: str, tmp_path: Path) -> None:
    expected_rows = submissions(topic_of(by_chapter()[chapter][0]))
    folder, out = tmp_path / "submissions", tmp_path / "grades"
    folder.mkdir()
    for name, submission in expected_rows.items():
        nbformat.write(_filled(chapter, submission.bodies), folder / f"{name}.ipynb")
    # A fresh process, as a teacher runs it: the grader gives JAX its devices.
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcourse.exercises.grading", str(folder),
         "--out", str(out), "--timeout", "240"],
        capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grades = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert grades["exercises"] == by_chapter()[chapter]
    rows = {row["submission"]: row for row in grades["submissions"]}
    for name, submission in expected_rows.items():
        assert rows[name]["status"] == "graded", rows[name]
        assert rows[name]["scores"] == submission.scores, rows[name]
        for exercise_id, fragment in submission.feedback.items():
            assert fragment in " ".join(rows[name]["feedback"][exercise_id])
