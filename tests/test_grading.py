"""A class of generated submissions, graded two at a time: every row, no process
left behind, the course and the environment unchanged, and a rerun that grades
only what changed; the wall around each submission, and the refusal without it."""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import subprocess
import sysconfig
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from course_copy import copy_code
from slurm_cluster import slurm_cluster  # noqa: F401  (a fixture)

from jaxcourse import CourseError, slurm
from jaxcourse.data.store import sha256_file
from jaxcourse.exercises.grading import cli as grading
from jaxcourse.exercises.grading import isolation
from jaxcourse.exercises.grading.sandbox import plan_cells, skippable

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
# What the escaping submission aims at outside its run folder: a .pth in the
# environment (it would run in every later Python), a file under
# ~/.jax-course and one it deletes there (the canary, which the tests put
# there first). Harmless if they ever got through: the .pth only names a
# folder that does not exist, and the fixture removes all three.
SITE = Path(sysconfig.get_paths()["purelib"])
PTH = SITE / "zz_jaxcourse_test_planted.pth"
HOME = Path.home() / ".jax-course"
PLANTED = HOME / "jaxcourse-test-planted"
CANARY = HOME / "jaxcourse-test-canary"


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


def _escape(submissions: Path) -> str:
    """A cell that writes and deletes outside its run folder, twice.

    Through Python, where the in-process guard refuses and names each
    attempt; then through a shell, around the guard, where only the wall
    stands: the .pth fails (read-only), the write under ~/.jax-course and the
    one into another submission's folder land in the decoys that hide them,
    and the canary is out of sight.
    """
    other = submissions / "a_correct.ipynb"
    targets = [str(PTH), str(PLANTED), str(other)]
    shell = (f"echo /nowhere >> '{PTH}'; echo planted > '{PLANTED}'; "
             f"rm -f '{CANARY}'; echo planted >> '{other}'")
    return (
        "import os, subprocess\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        with open(path, 'a') as handle:\n"
        "            handle.write('/nowhere\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        f"    os.remove({str(CANARY)!r})\n"
        "except OSError:\n"
        "    pass\n"
        f"subprocess.run(['sh', '-c', {shell!r}])")


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
        "q_escapes": _student(both, _escape(folder)),
    }
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    (folder / "d_empty.ipynb").write_text("")
    (folder / "e_not_json.ipynb").write_text("{'cells': [")
    (folder / "f_not_notebook.ipynb").write_text('{"hello": "world"}')


def _course(base: Path, source: Path = ROOT) -> list[Path]:
    """A copy of the course's code (from ``source``) under ``base``."""
    return copy_code(base, source)


def _environment() -> str:
    """A digest of the environment's site-packages: its entries, and its files' times.

    Folders' own times are left out: another process compiling a module
    for the first time adds a ``__pycache__`` inside one.
    """
    digest = hashlib.sha256()
    for entry in sorted(SITE.iterdir()):
        digest.update(entry.name.encode())
        if entry.is_file():
            info = entry.stat()
            digest.update(f"{info.st_size} {info.st_mtime_ns}".encode())
    return digest.hexdigest()


def _folder_digest(folder: Path) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def canary() -> object:
    """The file the escaping submission deletes under ~/.jax-course, put there first.

    Whatever happens, nothing the submission aimed at is left behind.
    """
    HOME.mkdir(parents=True, exist_ok=True)
    CANARY.write_text("the grading test's canary\n")
    try:
        yield CANARY
    finally:
        for path in (CANARY, PLANTED, PTH):
            path.unlink(missing_ok=True)


def _grade_on_slurm(base: Path, folders: list[Path]) -> dict:
    """The class written under ``base``, graded as a Slurm job array."""
    submissions = base / "submissions"
    submissions.mkdir()
    _class(submissions, folders[0].parent)
    started = time.perf_counter()
    # Four tasks of four submissions, two at a time: like jobs=2 locally.
    before = _folder_digest(submissions)
    rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                         timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                         out_dir=base / "out", course=folders, slurm=True,
                         slurm_chunk=4, slurm_parallel=2)
    seconds = time.perf_counter() - started
    return {"rows": rows, "out": base / "out", "seconds": seconds,
            "folders": folders, "submissions": submissions,
            "submissions_unchanged": _folder_digest(submissions) == before}


def _after_slurm(result: dict) -> dict:
    """What is left once the Slurm grading (and any other) has ended."""
    queue = slurm._run(["squeue", "-h", "-o", "%i"]).stdout.split()
    task = "jaxcourse.exercises.grading.slurm"
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


def _zombies() -> list[int]:
    """This process's descendants that ended and were never waited for."""
    found = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_ZOMBIE:
                found.append(child.pid)
    return found


@pytest.fixture(scope="module")
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           canary: Path) -> dict:
    """The class graded once, with what was observed right after.

    When the Slurm tests run too, the same class is graded on Slurm at the
    same time, against a course copy of its own. Most of either run is the
    endless submission asleep until its time limit: the two runs overlap
    those waits.
    """
    base = tmp_path_factory.mktemp("class")
    folders = _course(base)
    before = _fingerprint(folders)
    environment = _environment()
    submissions = base / "submissions"
    submissions.mkdir()
    _class(submissions, folders[0].parent)
    notebooks = _folder_digest(submissions)
    out = base / "out"
    on_slurm = None
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        if _cluster_for_slurm_tests(request):
            slurm_base = tmp_path_factory.mktemp("slurm-class")
            slurm_course = _course(slurm_base, folders[0].parent)
            on_slurm = pool.submit(_grade_on_slurm, slurm_base, slurm_course)
        zombies_before = _zombies()
        started = time.perf_counter()
        rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                             timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                             jobs=2, out_dir=out, course=folders)
        seconds = time.perf_counter() - started
        # The walls' inner processes, adopted while grading, were collected:
        # left as zombies, they would be this process's children for good.
        zombies = sorted(set(_zombies()) - set(zombies_before))
    # (Leaving the pool waited for the Slurm run: its sleepers count too.)
    return {"rows": rows, "out": out, "submissions": submissions,
            "folders": folders, "before": before, "seconds": seconds,
            "leftover": _sleepers(), "zombies": zombies, "on_slurm": on_slurm,
            "environment_unchanged": _environment() == environment,
            "submissions_unchanged": _folder_digest(submissions) == notebooks,
            "home": {"canary": CANARY.is_file(), "planted": PLANTED.exists(),
                     "pth": PTH.exists()}}


@pytest.mark.slow
class TestGradingAClass:
    """Seventeen submissions, graded with ``jobs=2``."""

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
            "q_escapes": ("tampered", none),
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
        # Around the guard, through a shell: the wall hid the course behind a
        # decoy, and what the shell wrote there is named.
        assert reasons["n_shell_edits_course"] == (
            "it tried to change the course's files (mlp.py): zero")
        assert reasons["p_snoops"].startswith("it tried to read outside its own folder")
        # Every file it aimed at, through Python or a shell, in its row.
        assert reasons["q_escapes"] == (
            f"it tried to write outside its own folder ({PTH.name}, {PLANTED.name}, "
            f"{CANARY.name}, a_correct.ipynb): zero")
        assert all(r.status in grading.STATUSES for r in graded["rows"])

    def test_no_process_is_left_and_nothing_outside_changed(self, graded) -> None:
        assert graded["leftover"] == []
        assert graded["zombies"] == []
        assert _fingerprint(graded["folders"]) == graded["before"]
        # Nothing reached the course, so nothing had to be restored.
        assert not (graded["out"] / "jaxcourse-course-changes").exists()
        # Nor the environment, ~/.jax-course or the other submissions.
        assert graded["environment_unchanged"]
        assert graded["home"] == {"canary": True, "planted": False, "pth": False}
        assert graded["submissions_unchanged"]

    def test_timings_and_feedback(self, graded) -> None:
        correct = graded["rows"][0]
        assert set(correct.timings) == {"start-up", "imports", "cells", "checks"}
        assert all(v >= 0 for v in correct.timings.values())
        paths = grading.write_feedback(graded["rows"], graded["out"])
        assert len(paths) == 17
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
        assert len(lines) == 17
        for row in slurm_graded["rows"]:
            notebook = slurm_graded["submissions"] / f"{row.submission}.ipynb"
            assert row.sha256 == sha256_file(notebook)

    def test_nothing_is_left_running_or_changed(self, graded, slurm_graded) -> None:
        assert slurm_graded["leftover"] == []
        assert slurm_graded["queue"] == []
        # The tasks walled their submissions in too.
        assert _fingerprint(slurm_graded["folders"]) == graded["before"]
        assert not (slurm_graded["out"] / "jaxcourse-course-changes").exists()
        assert slurm_graded["submissions_unchanged"]
        assert graded["environment_unchanged"]  # measured after both runs
        assert graded["home"] == {"canary": True, "planted": False, "pth": False}

    def test_a_rerun_submits_nothing(self, slurm_graded) -> None:
        before = sorted((slurm_graded["out"] / "slurm").iterdir())
        rows = grading.grade([slurm_graded["submissions"]], chapter=CHAPTER,
                             exercises=IDS, timeout=TIMEOUT, case_time_limit=10,
                             memory_mb=3000, out_dir=slurm_graded["out"],
                             course=slurm_graded["folders"], slurm=True)
        assert sorted((slurm_graded["out"] / "slurm").iterdir()) == before
        assert [_same(r) for r in rows] == [_same(r) for r in slurm_graded["rows"]]


@pytest.mark.slow
def test_a_slurm_node_without_the_wall_grades_nothing(
        slurm_cluster, tmp_path: Path, monkeypatch) -> None:  # noqa: F811
    # The task inherits the variable: bubblewrap is missing on its node.
    monkeypatch.setenv(isolation.BWRAP_ENV, str(tmp_path / "no-bwrap"))
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    submissions.mkdir()
    nbformat.write(_student(), submissions / "alice.ipynb")
    with pytest.raises(CourseError, match=(
            r"no sandbox for the submissions: on the Slurm nodes, .+: "
            r"bubblewrap is not installed")):
        grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                      timeout=TIMEOUT, out_dir=out, slurm=True)
    # Nothing ran, so no row: a rerun on a node with the wall grades it.
    assert not (out / "rows.jsonl").exists()


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


# ---- the wall itself, and grading without it ------------------------------------


def test_the_wall_keeps_a_shell_in_its_run_folder(tmp_path: Path) -> None:
    own, hidden, decoys = tmp_path / "own", tmp_path / "hidden", tmp_path / "decoys"
    home = tmp_path / "home"
    for folder in (own / "course", hidden / "venv", decoys, home):
        folder.mkdir(parents=True)
    (hidden / "secret").write_text("the other submissions\n")
    (hidden / "venv" / "site.py").write_text("# the environment\n")
    (home / "id_rsa").write_text("a key\n")
    lone = tmp_path / "alice.ipynb"
    lone.write_text("{}")
    layout = isolation.Layout(own=own, read_only=[own / "course"],
                              hidden=[hidden, lone], emptied=[home],
                              shown=[hidden / "venv"], scratch_mb=16)
    target = SITE / "zz_jaxcourse_test_wall"
    script = (
        f"ls '{hidden}'; cat '{hidden}/venv/site.py'; "
        f"touch '{hidden}/venv/x' 2>&1; touch '{own}/course/x' 2>&1; "
        f"touch '{target}' 2>&1; "
        f"echo planted > '{hidden}/planted'; echo planted >> '{lone}'; "
        f"echo ok > '{own}/ok'; cat /proc/net/dev | grep -c :; "
        f"echo settings > '{home}/.rc'; ls -A '{home}'")
    bwrap = isolation.program()
    assert bwrap is not None, isolation.unavailable_reason()
    try:
        proc = subprocess.run(isolation.wrap(["sh", "-c", script], layout, decoys,
                                             bwrap, cwd=own),
                              capture_output=True, text=True, timeout=60)
    finally:
        target.unlink(missing_ok=True)
    lines = proc.stdout.splitlines()
    # The hidden folder shows only what is shown again, read-only; the
    # course's copy is read-only in the run folder; so is the environment.
    assert lines[:2] == ["venv", "# the environment"], proc.stdout + proc.stderr
    assert all("Read-only file system" in line for line in lines[2:5]), lines
    assert lines[5] == "1"  # the loopback only: no network
    # The home folder: empty, and writable in memory only.
    assert lines[6:] == [".rc"]
    assert sorted(p.name for p in home.iterdir()) == ["id_rsa"]
    assert (own / "ok").read_text() == "ok\n"
    assert sorted(p.name for p in hidden.iterdir()) == ["secret", "venv"]
    assert lone.read_text() == "{}"
    assert isolation.found(layout, decoys) == [f"write {lone}",
                                               f"write {hidden / 'planted'}"]


def _bare_class(folder: Path, course: Path, log: Path) -> None:
    mlp = course / "solutions" / "mlp.py"
    both = ("batched_log_joint", "vmapped_log_joint")
    nbformat.write(_student(both), folder / "a_correct.ipynb")
    # Each run leaves a line in the log: the test counts how often it ran.
    nbformat.write(_student(both, (
        f"import os\nos.system(\"echo run >> '{log}'; echo '# edited' >> '{mlp}'\")")),
        folder / "b_shell_edits_course.ipynb")


def test_without_the_wall_the_grader_refuses(tmp_path: Path, monkeypatch,
                                             capsys) -> None:
    monkeypatch.setenv(isolation.BWRAP_ENV, str(tmp_path / "no-bwrap"))
    reason = isolation.unavailable_reason()
    assert reason is not None and reason.startswith("bubblewrap is not installed")
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    submissions.mkdir()
    nbformat.write(_student(), submissions / "alice.ipynb")
    argv = [str(submissions), "--out", str(out), "--chapter", CHAPTER,
            "--exercises", *IDS]
    assert grading.main(argv) == 3  # a program it needs is missing (jaxcourse.cli)
    error = capsys.readouterr().err
    assert error.startswith(f"error: no sandbox for the submissions: {reason}.")
    assert "--no-sandbox" in error
    # Refused before anything ran: no row, no table.
    assert not (out / "grades.csv").exists()
    assert not (out / "rows.jsonl").exists() or not (out / "rows.jsonl").read_text()
    with pytest.raises(CourseError, match="no sandbox"):
        grading.grade([submissions], chapter=CHAPTER, exercises=IDS)


@pytest.mark.slow
def test_no_sandbox_grades_bare_one_at_a_time(tmp_path: Path, monkeypatch,
                                              capsys) -> None:
    # Even with bubblewrap missing: the teacher said so.
    monkeypatch.setenv(isolation.BWRAP_ENV, str(tmp_path / "no-bwrap"))
    folders = _course(tmp_path)
    before = _fingerprint(folders)
    submissions, log = tmp_path / "submissions", tmp_path / "runs.log"
    submissions.mkdir()
    _bare_class(submissions, folders[0].parent, log)
    rows = grading.grade([submissions], chapter=CHAPTER, exercises=IDS,
                         timeout=TIMEOUT, case_time_limit=10, memory_mb=3000,
                         jobs=2, out_dir=tmp_path / "out", course=folders,
                         sandbox=False)
    assert capsys.readouterr().err.count(isolation.UNSAFE) == 1
    got = {r.submission: (r.status, r.reason) for r in rows}
    # Bare, the shell's edit reached the course: the fingerprint found it,
    # restored it and, one submission at a time, blamed the one that ran,
    # without running anyone's code a second time.
    assert got == {
        "a_correct": ("graded", ""),
        "b_shell_edits_course": (
            "tampered",
            "the course's files changed while it ran (mlp.py); they were "
            "restored: zero"),
    }
    assert log.read_text() == "run\n"
    assert _fingerprint(folders) == before


def test_a_notebook_named_twice_is_graded_once_and_names_never_clash(
        tmp_path: Path) -> None:
    paths = [Path("/a/x/s.ipynb"), Path("/b/x/s.ipynb"), Path("/c/t.ipynb")]
    assert grading._names(paths) == ["a/x/s", "b/x/s", "t"]
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "alice.ipynb").write_text("")
    rows = grading.grade([submissions, submissions / "alice.ipynb"],
                         chapter=CHAPTER, exercises=IDS)
    assert [(r.submission, r.status) for r in rows] == [("alice", "unreadable")]


def test_a_course_change_is_blamed_only_without_the_wall() -> None:
    from jaxcourse.exercises.grading.slurm import _blamed

    rows = {"a": {"started": 0, "ended": 10}, "b": {"started": 5, "ended": 20},
            "c": {"started": 30, "ended": 40}}
    events = [{"from": 32, "to": 33, "files": ["mlp.py"]},
              {"from": 6, "to": 7, "files": ["bayes.py"]}]
    assert _blamed(rows, events, sandbox=True) == {}
    # Bare, the tasks ran one at a time: one overlap is the one that did it;
    # two (another grader at once) blame no one, and nobody runs again.
    assert _blamed(rows, events, sandbox=False) == {"c": ["mlp.py"]}


# ---- a changed environment stops grading ------------------------------------------


def _fake_runs(monkeypatch, site: Path, module, plant: str) -> list[str]:
    """Replace ``module``'s run_one: each run is a crash; ``plant``'s writes a .pth.

    What a package installed while the class is graded looks like to the
    grader (inside the wall no submission can write there): a file appears in
    the environment's package folders during one submission's run. Returns
    the names of the submissions run, in order. Only its first run plants.
    """
    from jaxcourse.exercises.grading import local as grading_local
    from jaxcourse.exercises.grading.runner import Run

    ran: list[str] = []

    def run_one(path: Path, number: int, settings) -> Run:
        started = time.time()
        if path.stem == plant and plant not in ran:
            (site / "zz_planted.pth").write_text("import os\n")
        ran.append(path.stem)
        time.sleep(0.05)  # so that two jobs overlap
        return Run("crashed", detail="not run: a test", started=started,
                   ended=time.time())

    monkeypatch.setattr(grading_local, "environment_folders", lambda: [str(site)])
    monkeypatch.setattr(module, "run_one", run_one)
    monkeypatch.setattr(module, "expected_outputs", lambda ids: {})
    # Whether or not this machine can build the wall: nothing runs here.
    monkeypatch.setattr(isolation, "unavailable_reason", lambda: None)
    return ran


@pytest.mark.slow  # the finished run's stamp asks git (no submission runs)
def test_a_changed_environment_stops_grading_with_one_paragraph(
        tmp_path: Path, monkeypatch, capsys) -> None:
    from jaxcourse.exercises.grading import local as grading_local

    site = tmp_path / "site-packages"
    (site / "pkg" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    submissions.mkdir()
    names = [f"{letter}_student" for letter in "abcdefgh"]
    for name in names:
        nbformat.write(_student(), submissions / f"{name}.ipynb")
    ran = _fake_runs(monkeypatch, site, grading_local, plant="c_student")
    argv = [str(submissions), "--out", str(out), "--chapter", CHAPTER,
            "--exercises", *IDS, "--jobs", "2"]
    assert grading.main(argv) == 1  # the work ran and failed (jaxcourse.cli)
    error = capsys.readouterr().err
    assert "Traceback" not in error
    last = error.strip().splitlines()[-1]
    assert last.startswith("error: the course's Python environment changed while "
                           f"grading ({site / 'zz_planted.pth'}; found after "), last
    assert "Grading stopped; no submission can write there" in last
    # Stopped at once: the submissions queued never ran; the change's own
    # submission has no row (it may have run with it), and no submission
    # whose check found the change either; those checked before keep theirs.
    # (Two at a time: at most c, the two beside it and one more, whatever
    # the order in which they end.)
    assert "c_student" in ran and len(ran) <= 5, ran
    lines = ((out / "rows.jsonl").read_text().splitlines()
             if (out / "rows.jsonl").exists() else [])
    rows = [json.loads(line)["submission"] for line in lines]
    assert "c_student" not in rows and set(rows) < set(ran), (rows, ran)
    assert not (out / "grades.csv").exists()
    # Python's own bytecode is no change; once the .pth is gone, the same
    # command grades only what is left.
    (site / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
    (site / "zz_planted.pth").unlink()
    before = len(ran)
    assert grading.main(argv) == 0
    assert sorted(ran[before:]) == sorted(set(names) - set(rows))
    assert (out / "grades.csv").is_file()


def test_a_slurm_task_stops_when_the_environment_changed(
        tmp_path: Path, monkeypatch) -> None:
    from jaxcourse.exercises.grading import slurm as grading_slurm
    from jaxcourse.exercises.nbgrader.preprocessor import environment_fingerprint

    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "six.py").write_text("")
    course = tmp_path / "course" / "pkg"
    course.mkdir(parents=True)
    (course / "mod.py").write_text("X = 1\n")
    work = tmp_path / "out" / "slurm" / "run"
    (work / "course" / "0").mkdir(parents=True)
    (work / "course" / "0" / "mod.py").write_text("X = 1\n")
    chunk = [[n, name, str(tmp_path / f"{name}.ipynb"), "digest"]
             for n, name in enumerate(["a", "b", "c"])]
    for _, _, path, _ in chunk:
        nbformat.write(_student(), path)
    spec = {"ids": IDS, "language": "en", "timeout": 60, "memory_mb": 0,
            "case_limit": None, "private": [], "course": [str(course)],
            "chunks": [chunk], "backup": str(tmp_path / "backup"), "sandbox": True,
            "out": str(tmp_path / "out")}
    (work / "spec.json").write_text(json.dumps(spec))
    (work / "environment.json").write_text(json.dumps(
        {"folders": [str(site)], "files": environment_fingerprint([site])}))
    ran = _fake_runs(monkeypatch, site, grading_slurm, plant="b")
    monkeypatch.setattr(grading_slurm, "become_subreaper", lambda *a: None)
    assert grading_slurm._task(work / "spec.json", 0) == 1
    assert ran == ["a", "b"]
    rows = (work / "rows-0.jsonl").read_text().splitlines()
    assert [json.loads(line)["submission"] for line in rows] == ["a"]
    [(index, why)] = grading_slurm._refused(work, "stopped").items()
    assert index == "0" and "zz_planted.pth; found after b)" in why
    # A task that starts after the change grades nothing.
    (work / "stopped-0.txt").unlink()
    assert grading_slurm._task(work / "spec.json", 0) == 1
    assert ran == ["a", "b"] and "found before any submission ran" in (
        work / "stopped-0.txt").read_text()
