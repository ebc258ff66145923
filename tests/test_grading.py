"""A class of generated submissions, graded two at a time: every row, no process
left behind, the course unchanged, and a rerun that grades only what changed."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import shutil
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from slurm_cluster import slurm_cluster  # noqa: F401  (a fixture)

from jaxcourse import slurm
from jaxcourse.data.store import sha256_file
from jaxcourse.exercises import grading
from jaxcourse.exercises.sandbox import plan_cells, skippable

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "03_bayes"
MASTER = ROOT / "solutions" / f"{CHAPTER}_exercises.ipynb"
STUDENT = ROOT / "exercises" / f"{CHAPTER}_exercises.ipynb"
# Two of the chapter's four exercises: the machinery is the same, the checks
# of the other two (gradients, random keys) would only add time.
IDS = ["bayes.batched_log_joint", "bayes.vmapped_log_joint"]
# Each escaping process sleeps for its own number of seconds, so that the
# test can look for it by its command line.
SLEEPS = {"j_new_session": "3101", "k_double_fork": "3102", "l_nohup": "3103"}
# Each notebook's time limit. A correct one takes about 10 s alone, but CI runs
# this beside the rest of the suite (two workers, the grader's two jobs, on two
# cores): one loaded run took over 45 s. The endless one sleeps, so a long
# limit costs wall time on this worker, not CPU.
TIMEOUT = 120


def _solution_cells() -> dict[str, str]:
    master = nbformat.read(MASTER, as_version=4)
    cells = {}
    for cell in master.cells:
        if cell.cell_type == "code" and cell.source.startswith("def "):
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            cells[name] = cell.source
    return cells


def _student(filled: tuple[str, ...] = (), extra: str | None = None):
    """The student notebook, some functions solved, an extra cell after the imports."""
    nb = nbformat.read(STUDENT, as_version=4)
    solved = _solution_cells()
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def "):
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            if name in filled:
                cell.source = solved[name]
    if extra is not None:
        nb.cells.insert(2, nbformat.v4.new_code_cell(extra))
    return nb


def _fingerprint(folders: list[Path]) -> str:
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(folder.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _sleepers() -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = proc.info["cmdline"] or []
        if any(arg in SLEEPS.values() for arg in line[1:2]) and "sleep" in " ".join(
            line[:1]
        ):
            found.append(proc.pid)
    return found


def _class(folder: Path, course: Path) -> None:
    both = ("batched_log_joint", "vmapped_log_joint")
    one = ("batched_log_joint",)
    mlp = course / "solutions" / "mlp.py"
    notebooks = {
        "a_correct": _student(both),
        "b_partial": _student(one),
        "c_untouched": _student(),
        "g_exits": _student(both, "import os\nos._exit(0)"),
        # Endless, but asleep: a busy loop would take a core for the whole time
        # limit, twice a run (here and on Slurm), from the rest of the suite.
        "h_endless": _student(both, "import time\nwhile True:\n    time.sleep(0.5)"),
        "i_8gb": _student(one, "hog = bytearray(8 * 2**30)"),
        "j_new_session": _student(one, (
            "import subprocess\n"
            f"subprocess.Popen(['sleep', '{SLEEPS['j_new_session']}'], "
            "start_new_session=True)")),
        "k_double_fork": _student(one, (
            "import subprocess\n"
            f"subprocess.run(['sh', '-c', 'sleep {SLEEPS['k_double_fork']} &'])")),
        "l_nohup": _student(one, (
            "import subprocess\n"
            f"subprocess.Popen(['nohup', 'sleep', '{SLEEPS['l_nohup']}'], "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, "
            "start_new_session=True)")),
        # Through the module it imports: the private, read-only copy.
        "m_edits_course": _student(both, (
            "import pathlib\nimport solutions\n"
            "target = pathlib.Path(solutions.__file__).parent / 'mlp.py'\n"
            "target.write_text(target.read_text() + '# edited\\n')")),
        # Through a shell, past the guard, at the course's own path.
        "n_shell_edits_course": _student(both, (
            f"import os\nos.system(\"echo '# edited' >> '{mlp}'\")")),
        "o_flood": _student(one, (
            "for _ in range(100_000):\n    print('flood ' * 80)")),
        "p_snoops": _student(both, (
            "import glob, os\n"
            "others = glob.glob(os.path.join(os.getcwd(), '..', '..', '*', 'work', "
            "'*.ipynb'))")),
    }
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    (folder / "d_empty.ipynb").write_text("")
    (folder / "e_not_json.ipynb").write_text("{'cells': [")
    (folder / "f_not_notebook.ipynb").write_text('{"hello": "world"}')


def _course(base: Path, source: Path = ROOT) -> list[Path]:
    """A copy of the course's code (from ``source``) under ``base``."""
    course = base / "course"
    course.mkdir()
    ignore = shutil.ignore_patterns("*.ipynb", "__pycache__")
    folders = [course / "jaxcourse", course / "solutions"]
    for folder in folders:
        shutil.copytree(source / folder.name, folder, ignore=ignore)
    return folders


def _grade_on_slurm(base: Path, folders: list[Path]) -> dict:
    """The class written under ``base``, graded as a Slurm job array."""
    submissions = base / "submissions"
    submissions.mkdir()
    _class(submissions, folders[0].parent)
    started = time.perf_counter()
    # Four tasks of four submissions, two at a time: like jobs=2 locally.
    rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                         timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                         out_dir=base / "out", course=folders, slurm=True,
                         slurm_chunk=4, slurm_parallel=2)
    seconds = time.perf_counter() - started
    return {"rows": rows, "out": base / "out", "seconds": seconds,
            "folders": folders, "submissions": submissions}


def _after_slurm(result: dict) -> dict:
    """What is left once the Slurm grading (and any other) has ended."""
    queue = slurm._run(["squeue", "-h", "-o", "%i"]).stdout.split()
    task = "jaxcourse.exercises.grading_slurm"
    tasks = [p.pid for p in psutil.process_iter(["cmdline"])
             if task in " ".join(p.info["cmdline"] or [])]
    return {**result, "leftover": _sleepers() + tasks, "queue": queue}


def _cluster_for_slurm_tests(request: pytest.FixtureRequest) -> bool:
    """Whether the Slurm tests will run, with the course's cluster up for them."""
    if slurm.unavailable_reason() is not None or not any(
            getattr(item, "cls", None) is TestGradingOnSlurm
            for item in request.session.items):
        return False
    try:
        request.getfixturevalue("slurm_cluster")
    except (Exception, pytest.skip.Exception):
        return False  # the Slurm tests report it; the local ones go on
    return True


@pytest.fixture(scope="module")
def graded(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The class graded once, with what was observed right after.

    When the Slurm tests run too, the same class is graded on Slurm at the
    same time, against a course copy of its own (each grader blames the
    course's changes on its own submissions). Most of either run is the
    endless submission asleep until its time limit, twice (once more alone,
    after a course change while it ran): the two runs overlap those waits.
    """
    base = tmp_path_factory.mktemp("class")
    folders = _course(base)
    before = _fingerprint(folders)
    submissions = base / "submissions"
    submissions.mkdir()
    _class(submissions, folders[0].parent)
    out = base / "out"
    on_slurm = None
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        if _cluster_for_slurm_tests(request):
            slurm_base = tmp_path_factory.mktemp("slurm-class")
            slurm_course = _course(slurm_base, folders[0].parent)
            on_slurm = pool.submit(_grade_on_slurm, slurm_base, slurm_course)
        started = time.perf_counter()
        rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                             timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                             jobs=2, out_dir=out, course=folders)
        seconds = time.perf_counter() - started
    # (Leaving the pool waited for the Slurm run: its sleepers count too.)
    return {"rows": rows, "out": out, "submissions": submissions,
            "folders": folders, "before": before, "seconds": seconds,
            "leftover": _sleepers(), "on_slurm": on_slurm}


@pytest.mark.slow
class TestGradingAClass:
    """Sixteen submissions, graded with ``jobs=2``."""

    def test_every_row(self, graded) -> None:
        both, one, none = [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]
        expected = {
            "a_correct": ("graded", both),
            "b_partial": ("graded", one),
            "c_untouched": ("graded", none),
            "d_empty": ("unreadable", none),
            "e_not_json": ("unreadable", none),
            "f_not_notebook": ("unreadable", none),
            "g_exits": ("crashed", none),
            "h_endless": ("timed out", none),
            "i_8gb": ("out of memory", one),
            "j_new_session": ("graded", one),
            "k_double_fork": ("graded", one),
            "l_nohup": ("graded", one),
            "m_edits_course": ("tampered", none),
            "n_shell_edits_course": ("tampered", none),
            "o_flood": ("graded", one),
            "p_snoops": ("tampered", none),
        }
        got = {r.submission: (r.status, list(r.scores.values()))
               for r in graded["rows"]}
        assert got == expected
        reasons = {r.submission: r.reason for r in graded["rows"]}
        assert reasons["d_empty"] == "the file is empty"
        assert reasons["e_not_json"].startswith("the file is not JSON (")
        assert reasons["f_not_notebook"].startswith(
            "the file is JSON but not a notebook")
        assert reasons["g_exits"] == (
            "the notebook ended its own process (exit code 0) before the checks")
        assert reasons["h_endless"] == (
            f"the notebook ran past the {TIMEOUT} s time limit")
        assert reasons["i_8gb"].startswith(
            "it ran out of memory (limit 3000 MB) in cells 2")
        assert reasons["m_edits_course"] == (
            "it tried to change the course's files (mlp.py): zero")
        assert reasons["n_shell_edits_course"] == (
            "the course's files changed while it ran (mlp.py); they were restored: "
            "zero")
        assert reasons["p_snoops"].startswith("it tried to read outside its own folder")
        assert all(r.status in grading.STATUSES for r in graded["rows"])

    def test_no_process_is_left_and_the_course_is_unchanged(self, graded) -> None:
        assert graded["leftover"] == []
        assert _fingerprint(graded["folders"]) == graded["before"]
        # What the shell wrote was kept aside, not lost.
        saved = list((graded["out"] / "jaxcourse-course-changes").rglob("mlp.py"))
        assert saved and saved[0].read_text().endswith("# edited\n")

    def test_timings_and_feedback(self, graded) -> None:
        correct = graded["rows"][0]
        assert set(correct.timings) == {"start-up", "imports", "cells", "checks"}
        assert all(v >= 0 for v in correct.timings.values())
        paths = grading.write_feedback(graded["rows"], graded["out"])
        assert len(paths) == 16
        text = (graded["out"] / "feedback" / "b_partial.md").read_text()
        assert text.startswith("# Feedback: b_partial\n")
        assert "## bayes.vmapped_log_joint: 0%" in text
        assert "- Status: graded" in text
        tampered = (graded["out"] / "feedback" / "p_snoops.md").read_text()
        assert "- Status: tampered" in tampered

    def test_a_rerun_grades_only_what_changed(self, graded) -> None:
        out, submissions = graded["out"], graded["submissions"]
        rows_file = out / "rows.jsonl"
        # An interrupted run leaves at most a torn last line.
        with open(rows_file, "a", encoding="utf-8") as handle:
            handle.write('{"submission": "a_corr')
        before = len(rows_file.read_text().splitlines())
        changed = nbformat.read(submissions / "c_untouched.ipynb", as_version=4)
        changed.cells.append(nbformat.v4.new_markdown_cell("done"))
        nbformat.write(changed, submissions / "c_untouched.ipynb")
        rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                             timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                             jobs=2, out_dir=out, course=graded["folders"])
        lines = rows_file.read_text().splitlines()
        assert len(lines) == before + 1
        assert json.loads(lines[-1])["submission"] == "c_untouched"
        assert [r.to_dict() for r in rows if r.submission != "c_untouched"] == [
            r.to_dict() for r in graded["rows"] if r.submission != "c_untouched"]
        assert _sleepers() == []


@pytest.fixture(scope="module")
def slurm_graded(graded, slurm_cluster, tmp_path_factory) -> dict:  # noqa: F811
    """The same class, graded as a Slurm job array on the course's cluster."""
    if graded["on_slurm"] is not None:  # graded beside the local run
        return _after_slurm(graded["on_slurm"].result())
    base = tmp_path_factory.mktemp("slurm-class")
    return _after_slurm(_grade_on_slurm(base, graded["folders"]))


def _same(row) -> tuple:
    # Not the SHA-256: each class is written anew, with fresh cell ids.
    return row.submission, row.status, row.scores, row.reason, row.feedback


@pytest.mark.slow
class TestGradingOnSlurm:
    """``--slurm``: the class as a job array gives the local grader's rows."""

    def test_the_rows_equal_the_local_graders(self, graded, slurm_graded) -> None:
        print(f"\nlocal, jobs=2: {graded['seconds']:.0f} s\n"
              f"{grading.summary_text(graded['rows'])}\n"
              f"Slurm job array: {slurm_graded['seconds']:.0f} s\n"
              f"{grading.summary_text(slurm_graded['rows'])}")
        assert [_same(r) for r in slurm_graded["rows"]] == [
            _same(r) for r in graded["rows"]]
        lines = (slurm_graded["out"] / "rows.jsonl").read_text().splitlines()
        assert len(lines) == 16
        for row in slurm_graded["rows"]:
            notebook = slurm_graded["submissions"] / f"{row.submission}.ipynb"
            assert row.sha256 == sha256_file(notebook)

    def test_nothing_is_left_running(self, graded, slurm_graded) -> None:
        assert slurm_graded["leftover"] == []
        assert slurm_graded["queue"] == []
        # The shell's edit of the course was found and undone here too.
        assert _fingerprint(slurm_graded["folders"]) == graded["before"]

    def test_a_rerun_submits_nothing(self, slurm_graded) -> None:
        before = sorted((slurm_graded["out"] / "slurm").iterdir())
        rows = grading.grade([slurm_graded["submissions"]], chapter=CHAPTER,
                             exercises=IDS, timeout=TIMEOUT, case_time_limit=10,
                             memory_mb=3000, out_dir=slurm_graded["out"],
                             course=slurm_graded["folders"], slurm=True)
        assert sorted((slurm_graded["out"] / "slurm").iterdir()) == before
        assert [_same(r) for r in rows] == [_same(r) for r in slurm_graded["rows"]]


def test_the_table_lines_up_under_long_names() -> None:
    rows = [grading.SubmissionResult("alice", {"bayes.batched_log_joint": 1.0,
                                               "bayes.vmapped_log_joint": 0.5},
                                     "graded", "code cell 3 raised SyntaxError"),
            grading.SubmissionResult("bob", {"bayes.batched_log_joint": 0.0,
                                             "bayes.vmapped_log_joint": 0.0},
                                     "crashed")]
    assert grading.summary_text(rows).splitlines() == [
        "exercises: bayes.<name>",
        "submission  batched_log_joint  vmapped_log_joint   total  status",
        "alice                    1.00               0.50    1.50  graded",
        "bob                      0.00               0.00    0.00  crashed",
        "",
        "reasons:",
        "  alice: code cell 3 raised SyntaxError",
    ]


def test_cells_that_cannot_change_the_functions_are_skipped() -> None:
    assert skippable('check_panel("bayes.sample_betas", sample_betas)')
    assert skippable("learning_rate_explorer()")
    assert not skippable("check_panel(x := 1)")
    assert not skippable("jax.config.update('jax_enable_x64', True)")
    cells = [
        "import jax.numpy as jnp\nSCALE = 2.0",
        "def helper(x):\n    return SCALE * x",
        "def f(x):\n    return helper(x)",
        "check_panel('t.f', f)",
        "result = check('t.f', f)\nprint(result)",
        "SCALE = 3.0",  # read by f through helper: must run
        "import jax\njax.config.update('jax_enable_x64', True)",  # global state
        "while True:\n    pass",
        "def demo(y):\n    return y",
    ]
    assert plan_cells(cells, ["f"]) == [True, True, True, False, False, True, True,
                                        True, False]
