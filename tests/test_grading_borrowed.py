"""Borrowed reference answers score 0; pasted and shared answers are flagged.

A class of chapter 3's student notebooks, two exercises each: five ways of
handing in the course's reference answer as one's own (each zero, with the
status ``borrowed``, the other exercise graded as usual), a reference pasted
into a cell (full marks, flagged), two learners with the same answer of their
own (full marks, flagged), an honest one (nothing). Then the same machinery
in this process, on a course of one small module, without JAX; and on Slurm,
where the status must come back through the tasks' rows.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from course_copy import copy_code
from hostile_class import (
    BATCHED,
    BORROWED,
    HONEST_BATCHED,
    HONEST_VMAPPED,
    IDS,
    TWIN,
    TWIN_RETYPED,
    VMAPPED,
    borrowed_sentence,
    with_answers,
)
from slurm_cluster import slurm_cluster  # noqa: F401  (a fixture)

from jaxcourse import slurm
from jaxcourse.exercises import get
from jaxcourse.exercises.checking.answers import (
    answer_digests,
    digest,
    reference_digest,
)
from jaxcourse.exercises.grading import cli as grading
from jaxcourse.exercises.grading.borrowing import Watch, verdicts
from jaxcourse.exercises.grading.rows import SubmissionResult
from jaxcourse.exercises.grading.tables import Flag, class_flags

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "03_bayes"
STUDENT = ROOT / "exercises" / f"{CHAPTER}_exercises.ipynb"
# As in tests/test_grading.py: about 10 s alone, far more on a loaded machine.
TIMEOUT = 120

# Lists the folder above its run folder: the grader's, with a random name.
SNOOP = "import os\nfound = os.listdir(os.path.dirname(os.path.dirname(os.getcwd())))\n"


def _pasted() -> str:
    """The reference, pasted from the Show-solution button (docstring and all)."""
    return get(BATCHED).solution_source()


def _notebook(batched: str, vmapped: str) -> nbformat.NotebookNode:
    """The student notebook with these two cells in place of the stubs."""
    return with_answers(nbformat.read(STUDENT, as_version=4),
                        batched_log_joint=batched, vmapped_log_joint=vmapped)


def _class(folder: Path, names: list[str] | None = None) -> None:
    batched, vmapped = iter(HONEST_BATCHED), iter(HONEST_VMAPPED)
    notebooks = {"a_honest": (next(batched), next(vmapped))}
    for name, (exercise, _, cell) in BORROWED.items():
        notebooks[name] = ((cell, next(vmapped)) if exercise == BATCHED
                           else (next(batched), cell))
    notebooks["h_pasted"] = (_pasted(), next(vmapped))
    notebooks["i_twin"] = (next(batched), TWIN)
    notebooks["j_twin"] = (next(batched), TWIN_RETYPED)
    for name, cells in notebooks.items():
        if names is None or name in names:
            nbformat.write(_notebook(*cells), folder / f"{name}.ipynb")
    if names is None or "o_snoops" in names:
        # Right answers, and a look at the grading folder around its own,
        # whose name is random: the row must not carry it.
        # (In the cell that defines a function: a later cell that binds only
        # what no function reads is not run.)
        nb = _notebook(HONEST_BATCHED[0] + SNOOP, HONEST_VMAPPED[0])
        nbformat.write(nb, folder / "o_snoops.ipynb")


def _course(base: Path) -> list[Path]:
    """A copy of the course's code: a change the grader finds is restored in
    the copy, never in the working tree that others may be editing."""
    return copy_code(base)


def _grade(base: Path, names: list[str] | None = None, **options) -> dict:
    submissions, out = base / "submissions", base / "out"
    submissions.mkdir()
    _class(submissions, names)
    rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                         timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                         out_dir=out, course=_course(base), **options)
    grading.write_tables(rows, out)
    grading.write_feedback(rows, out)
    return {"rows": {r.submission: r for r in rows}, "list": rows, "out": out}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The class, graded two at a time."""
    return _grade(tmp_path_factory.mktemp("borrowing-class"), jobs=2)


# ---- the class, graded -------------------------------------------------------------


@pytest.mark.parametrize("name", list(BORROWED))
def test_each_way_of_borrowing_scores_zero(graded, name: str) -> None:
    exercise, how, _ = BORROWED[name]
    other = VMAPPED if exercise == BATCHED else BATCHED
    row = graded["rows"][name]
    assert row.status == "borrowed", row
    assert row.scores == {exercise: 0.0, other: 1.0}, row
    sentence = borrowed_sentence(exercise, how)
    [feedback] = row.feedback[exercise]
    assert feedback.startswith("borrowed the reference answer: ") and \
        sentence in feedback, feedback
    assert f"{exercise}: borrowed the reference answer" in row.reason
    # The other exercise: its tests' own messages, nothing borrowed.
    assert not any("borrowed" in m for m in row.feedback[other])
    # What the learner is handed back says it too.
    text = (graded["out"] / "feedback" / f"{name}.md").read_text(encoding="utf-8")
    assert "- Status: borrowed" in text and feedback in text


def test_the_others_are_graded_as_usual(graded) -> None:
    for name in ("a_honest", "h_pasted", "i_twin", "j_twin"):
        row = graded["rows"][name]
        assert (row.status, row.scores, row.reason) == (
            "graded", {BATCHED: 1.0, VMAPPED: 1.0}, ""), row
        assert not any("borrowed" in m for ms in row.feedback.values() for m in ms)


def test_the_class_report_flags_pasted_and_shared_answers(graded) -> None:
    flags = class_flags(graded["list"])
    assert flags == [Flag(BATCHED, "h_pasted", "pasted"),
                     Flag(VMAPPED, "i_twin", "same", ("j_twin",)),
                     Flag(VMAPPED, "j_twin", "same", ("i_twin",))]
    # In grades.json, for the teacher, with the sentence.
    table = json.loads((graded["out"] / "grades.json").read_text(encoding="utf-8"))
    assert table["flags"][0] == {"exercise": BATCHED, "submission": "h_pasted",
                                 "flag": "pasted", "others": [],
                                 "text": "pasted the reference answer"}
    assert [f["text"] for f in table["flags"][1:]] == [
        "same answer as j_twin", "same answer as i_twin"]
    # And printed at the end of the summary.
    summary = grading.summary_text(graded["list"])
    print(f"\n{summary}")
    assert summary.splitlines()[-4:] == [
        "flags (for a look; the scores stand):",
        f"  {BATCHED}: h_pasted: pasted the reference answer",
        f"  {VMAPPED}: i_twin: same answer as j_twin",
        f"  {VMAPPED}: j_twin: same answer as i_twin",
    ]
    assert "  b_imports: " in summary and "  h_pasted: " not in summary.split(
        "flags")[0]


# ---- on Slurm: the status comes back through the tasks' rows -----------------------

ON_SLURM = ["a_honest", "e_wrapper", "f_exec_source", "h_pasted", "k_course_helper",
            "l_detector_off", "m_exec_changed", "o_snoops"]
# What differs between two runs of the same submission: how long it took.
TIMES = {"seconds", "timings"}


def _same(row: SubmissionResult) -> dict:
    """Every field of a row but its times (and the JSON row is all of them)."""
    found = {k: v for k, v in row.to_dict().items() if k not in TIMES}
    assert set(found) | TIMES == set(row.to_dict())
    return found


def test_a_look_around_scores_zero_and_names_no_random_folder(graded) -> None:
    row = graded["rows"]["o_snoops"]
    assert row.status == "tampered" and set(row.scores.values()) == {0.0}, row
    assert "(the grading folder)" in row.reason, row.reason
    assert "jaxcourse-grade-" not in row.reason, row.reason


@pytest.mark.slow
def test_on_slurm_the_rows_and_flags_are_the_local_graders(
        graded, slurm_cluster, tmp_path: Path) -> None:  # noqa: F811
    """One array task grades a borrowed wrapper, an exec'd copy, a pasted answer."""
    found = _grade(tmp_path, ON_SLURM, slurm=True, slurm_chunk=len(ON_SLURM))
    assert [_same(r) for r in found["list"]] == [
        _same(graded["rows"][n]) for n in ON_SLURM]
    assert found["rows"]["e_wrapper"].status == "borrowed"
    assert class_flags(found["list"]) == [Flag(BATCHED, "h_pasted", "pasted")]
    assert slurm._run(["squeue", "-h", "-o", "%i"]).stdout.split() == []


# ---- the same machinery in this process, on a course of one module -----------------

COURSE_MODULE = '''\
"""A reference answer, and a helper that notebooks may import."""


def area(width, height):
    """The reference answer."""
    total = width * height
    return total


def helper(width):
    return area(width, 1) + 0
'''


@pytest.fixture
def small_course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A course of one module, ``tinycourse.answers``, importable."""
    package = tmp_path / "tinycourse"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "answers.py").write_text(COURSE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("tinycourse.answers")
    yield module, Watch({"tiny.area": module.area}, [package])
    for name in ("tinycourse.answers", "tinycourse"):
        sys.modules.pop(name, None)


def _learner(source: str) -> dict:
    """Run ``source`` as a notebook cell would (its code not from a file)."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile(textwrap.dedent(source), "<ipython-input-1-0>", "exec"), namespace)
    return namespace


def _seen(watch: Watch, function, sources: list[str]) -> tuple[str, str] | None:
    watch.find_copies(sources)
    found = watch.borrowed(function)
    if found is None:
        with watch.watching() as watching:
            function(3, 4)
        found = ("calls", watching.ran) if watching.ran else None
    return found


@pytest.mark.parametrize(("source", "how"), [
    ("from tinycourse.answers import area", "is"),
    ("import importlib\narea = importlib.import_module('tinycourse.answers').area",
     "is"),
    ("import functools, tinycourse.answers as m\n"
     "area = functools.wraps(m.area)(lambda w, h: 0)", "is"),
    ("import functools, tinycourse.answers as m\narea = functools.partial(m.area)",
     "is"),
    ("import tinycourse.answers as m\ndef area(w, h):\n    return m.area(w, h)",
     "calls"),
    ("import tinycourse.answers as m\narea = lambda w, h: [m][0].area(w, h)", "calls"),
    ("import inspect, tinycourse.answers as m\nexec(inspect.getsource(m.area))",
     "copy"),
    ("import tinycourse.answers as m\nns = {}\nexec(open(m.__file__).read(), ns)\n"
     "def area(w, h):\n    return ns['area'](w, h)", "calls"),
])
def test_a_borrowed_answer_is_seen(small_course, source: str, how: str) -> None:
    _, watch = small_course
    function = _learner(source)["area"]
    assert _seen(watch, function, [source]) == (how, "tinycourse.answers.area")


@pytest.mark.parametrize("source", [
    # Written in the notebook: its own.
    "def area(w, h):\n    return w * h",
    # The reference pasted into the cell (a flag for the teacher, not a zero).
    COURSE_MODULE.split("\n\n\n")[1],
    # A helper the course offers, which calls the reference itself.
    "from tinycourse.answers import helper\ndef area(w, h):\n    return helper(w) * h",
])
def test_an_answer_of_ones_own_is_not(small_course, source: str) -> None:
    _, watch = small_course
    function = _learner(source)["area"]
    assert _seen(watch, function, [source]) is None


def test_the_course_calling_its_reference_is_not_the_learner(small_course) -> None:
    module, watch = small_course
    with watch.watching() as watching:
        module.helper(3)  # the checks' machinery, or one reference in another
    assert watching.ran is None


# ---- normalised answers, verdicts and flags, from data -----------------------------


def test_answers_are_compared_without_names_comments_or_layout() -> None:
    first = "def f(a, b):\n    '''Doc.'''\n    c = a + b  # sum\n    return c * 2\n"
    again = ("@jax.jit\ndef g(x: int,\n      y) -> int:\n    z: int = x + y\n"
             "    return z * 2\n")
    other = "def f(a, b):\n    c = a + b\n    return c * 3\n"
    parse = ast.parse
    assert digest(parse(first).body[0]) == digest(parse(again).body[0])
    assert digest(parse(first).body[0]) != digest(parse(other).body[0])
    # The last definition of the name counts; none at all is "".
    cells = [first, "%timeit f(1, 2)\n", "def f(a, b):\n    return a\n"]
    assert answer_digests(cells, {"t.f": "f", "t.g": "g"}) == {
        "t.f": digest(parse("def f(a, b):\n    return a\n").body[0]), "t.g": ""}
    assert reference_digest(first) == digest(parse(first).body[0])


def test_verdicts_read_only_what_they_know() -> None:
    report = {"borrowed": {
        BATCHED: {"how": "calls", "reference": "solutions.bayes.batched_log_joint"},
        VMAPPED: {"how": "stole", "reference": "x"},  # not a known way: ignored
        "bayes.nothing": {"how": "is", "reference": "x"},  # not graded here
    }}
    assert verdicts(report, IDS) == {BATCHED: (
        "borrowed the reference answer: `batched_log_joint` runs the course's "
        "`solutions.bayes.batched_log_joint`: zero")}
    assert verdicts({"borrowed": ["not", "a", "dict"]}, IDS) == {}
    assert verdicts({}, IDS) == {}


def test_flags_leave_out_answers_that_earned_nothing() -> None:
    def row(name: str, score: float, answer: str) -> SubmissionResult:
        return SubmissionResult(name, {BATCHED: score}, "graded",
                                answers={BATCHED: answer})

    pasted = reference_digest(get(BATCHED).solution_source())
    rows = [row("a", 1.0, "abc"), row("b", 0.5, "abc"), row("c", 0.0, "abc"),
            row("d", 1.0, pasted), row("e", 0.0, pasted), row("f", 1.0, ""),
            row("g", 1.0, "")]
    assert class_flags(rows) == [Flag(BATCHED, "a", "same", ("b",)),
                                 Flag(BATCHED, "b", "same", ("a",)),
                                 Flag(BATCHED, "d", "pasted")]
    # Rows without answers (an older grades.json): no flags, no lookup.
    assert class_flags([SubmissionResult("x", {"nope.none": 1.0}, "graded")]) == []
