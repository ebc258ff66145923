"""Verdicts that do not depend on the machine's load.

Every test here runs while busy loops of its own (one a core, in processes
of their own) keep every core busy, as other people's work does on a shared
laptop, Binder or grading node. Each asserts the verdicts a quiet machine
gives: the exercise contracts' tables (``tests/exercise_answers``) for
answers to ``mlp.update`` and ``bayes.sample_betas``, judged in a fresh
process with the compilation cache off as the grader runs them (every
compile is a first one); a small class graded; a launch interrupted by the
stop button; and a real endless loop, still stopped. Afterwards nothing the
tests started is left running.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from exercise_answers import wrong
from processes import MARK, alive, assert_no_children_left, run_script

from jaxcourse.exercises.checking.time_limit import (
    WALL_CAP,
    TimeLimitError,
    call_with_time_limit,
)
from jaxcourse.exercises.grading import cli as grading
from jaxcourse.load_clock import LoadClock, waits_are_measured

ROOT = Path(__file__).resolve().parents[1]

# A busy loop that ends by itself when the test process is gone (or after
# five minutes), so that not even a killed test run leaves one behind.
BUSY = """
import os, sys, time
parent, end = int(sys.argv[1]), time.monotonic() + 300
while os.getppid() == parent and time.monotonic() < end:
    for _ in range(100_000):
        pass
"""


#: Busy loops per core: every core busy, so that any other process gets
#: about half a core (more, and the suite would take too long)...
LOOPS_PER_CORE = 1
#: ...but four for the contracts, as the time limits' bug was first seen (8
#: loops on 2 cores): with wall-clock limits, mlp.update's first compiles
#: (cache off) then ran out of time.
CONTRACT_LOOPS_PER_CORE = 4


def _busy(per_core: int) -> Iterator[list[subprocess.Popen]]:
    """Yield ``per_core`` busy loops a core (at least two cores); end them after."""
    loops: list[subprocess.Popen] = []
    try:
        for _ in range(per_core * max(2, os.cpu_count() or 2)):
            loops.append(subprocess.Popen(
                [sys.executable, "-c", BUSY, str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        yield loops
        # The load lasted the whole test: no loop ended early.
        assert all(loop.poll() is None for loop in loops), "a busy loop ended"
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()
    assert_no_children_left("the test left processes behind")


@pytest.fixture
def busy_cores() -> Iterator[list[subprocess.Popen]]:
    """A busy loop a core, ended when the test is done."""
    yield from _busy(LOOPS_PER_CORE)


@pytest.fixture
def busier_cores() -> Iterator[list[subprocess.Popen]]:
    """Four busy loops a core, ended when the test is done."""
    yield from _busy(CONTRACT_LOOPS_PER_CORE)


# ---- the exercise contracts, in a fresh process, compilation cache off -------

# Answers whose verdicts the contracts' tables give: a right one passes, a
# wrong one fails with its named mistake (the one a loaded machine turned
# into "did not finish within 5 s"; mlp.update's update_prints_loss only
# fails under jax.jit, after compiling op by op).
JUDGED = {
    "mlp.update": ("reference", "update_prints_loss"),
    "bayes.sample_betas": ("reference", "sample_one"),
}

JUDGE = """
import json, sys
sys.path.insert(0, {tests!r})
import exercise_answers
from jaxcourse.exercises import get

found = {{}}
for exercise_id, names in {judged!r}.items():
    for name in names:
        function = (get(exercise_id).reference if name == "reference"
                    else exercise_answers.answer(exercise_id, name))
        found[exercise_id + ":" + name] = exercise_answers.judge(exercise_id, function)
print({mark!r} + json.dumps(found))
"""


def _expected() -> dict[str, tuple[str, ...] | None]:
    """Each judged answer's named mistake (``None``: it must pass)."""
    named = {(r.exercise_id, r.name): r.fragments
             for topic in ("mlp", "bayes") for r in wrong(topic)}
    return {f"{e}:{n}": named.get((e, n)) for e, names in JUDGED.items()
            for n in names}


def test_the_contracts_give_the_same_verdicts_under_load(busier_cores) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COURSE_COMPILE_CACHE="off")
    env.pop("XLA_FLAGS", None)
    code = JUDGE.format(tests=str(ROOT / "tests"), judged=JUDGED, mark=MARK)
    found = run_script(code, timeout=600, env=env)
    for key, fragments in _expected().items():
        verdict = found[key]
        assert "did not finish" not in verdict["report"], (key, verdict["report"])
        if fragments is None:
            assert verdict["status"] == "passed", (key, verdict["report"])
        else:
            assert verdict["status"] == "failed", (key, verdict["report"])
            for fragment in fragments:
                assert fragment in verdict["report"], (key, verdict["report"])


# ---- a small class, graded --------------------------------------------------------

CHAPTER = "03_bayes"
STUDENT = ROOT / "exercises" / f"{CHAPTER}_exercises.ipynb"
GRADED = ["bayes.sample_betas"]
BODIES = {
    "a_right": ("epsilon = jax.random.normal(key, (num_samples, beta_loc.shape[0]))\n"
                "return beta_loc + jnp.exp(beta_log_scale) * epsilon"),
    "b_one_sample": ("return beta_loc + jnp.exp(beta_log_scale) * "
                     "jax.random.normal(key, beta_loc.shape)"),
}
STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"


def _submission(body: str) -> nbformat.NotebookNode:
    nb = nbformat.read(STUDENT, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def sample_betas"):
            assert STUB in cell.source
            cell.source = cell.source.replace(STUB, textwrap.indent(body, "    "))
    return nb


def test_a_class_is_graded_alike_under_load(busy_cores, tmp_path: Path) -> None:
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, body in BODIES.items():
        nbformat.write(_submission(body), folder / f"{name}.ipynb")
    rows = grading.grade([folder], chapter=CHAPTER, exercises=GRADED, timeout=240,
                         jobs=2, out_dir=tmp_path / "grades", progress=False)
    by_name = {Path(row.submission).stem: row for row in rows}
    assert all(row.status == "graded" for row in rows), rows
    assert by_name["a_right"].scores == {"bayes.sample_betas": 1.0}, by_name["a_right"]
    wrong_row = by_name["b_one_sample"]
    assert wrong_row.scores["bayes.sample_betas"] < 1.0, wrong_row
    feedback = " ".join(wrong_row.feedback["bayes.sample_betas"])
    assert "wrong shape" in feedback and "did not finish" not in feedback, feedback


# ---- a launch, interrupted by the stop button -------------------------------------

PIDFILE_CHILD = """
import os
import re
import subprocess
import sys
import time
from pathlib import Path

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
rank = os.environ["JAX_COURSE_PROCESS_ID"]
Path(f"pids-{rank}.txt").write_text(f"{os.getpid()} {child.pid}")
time.sleep(600)
"""

DRIVER = """
from jaxcourse.launch import launch

launch("child.py", 2, 1, timeout=600, echo=False)
"""


def test_an_interrupted_launch_leaves_nothing_behind_under_load(
        busy_cores, tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text(PIDFILE_CHILD)
    (tmp_path / "driver.py").write_text(DRIVER)
    # faulthandler: a driver that does not exit says where it waits.
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "driver.py"],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        files = [tmp_path / f"pids-{rank}.txt" for rank in range(2)]
        deadline = time.monotonic() + 120
        while not all(f.is_file() and f.read_text() for f in files):
            assert time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.1)
        pids = [int(pid) for f in files for pid in f.read_text().split()]
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints every stack
            pytest.fail("the driver did not exit within 30 s of SIGINT:\n"
                        + proc.communicate(timeout=30)[1][-6000:])
        assert code != 0
    finally:
        proc.kill()
        proc.communicate()
    assert not alive(pids)


# ---- a real endless loop is still stopped -----------------------------------------

def test_an_endless_loop_is_stopped_once_it_had_its_time(busy_cores) -> None:
    def endless() -> None:
        while True:
            pass

    clock = LoadClock()
    with pytest.raises(TimeLimitError):
        call_with_time_limit(endless, 1.0)
    # Stopped once it had its second (the time it waited for a core aside),
    # and never later than the cap on the wall clock.
    assert clock.elapsed() >= 0.9, (clock.wall(), clock.waited())
    assert clock.wall() < WALL_CAP * 1.0 + 5, (clock.wall(), clock.waited())
    if waits_are_measured():
        # The load was real: the loop waited for a core for part of the time.
        assert clock.waited() > 0.1, (clock.wall(), clock.waited())


def test_the_load_clock_keeps_a_sleep_and_leaves_out_the_waits(busy_cores) -> None:
    # A sleep waits for nothing but time: it counts in full, loaded or not.
    clock = LoadClock()
    time.sleep(1.0)
    assert 0.9 <= clock.elapsed() <= clock.wall()
    # Busy work of one second of its own: on the wall clock it takes longer
    # while the busy loops hold the cores, but the clock counts about one.
    clock = LoadClock()
    ran = time.thread_time()
    while time.thread_time() - ran < 1.0:
        pass
    if waits_are_measured():
        assert clock.elapsed() < 1.0 + 0.5 * (clock.wall() - 1.0) + 0.2, (
            clock.wall(), clock.waited(), clock.elapsed())
    assert clock.elapsed() >= 0.9



# ---- what a learner waits for an endless answer, in a real kernel -------------

# Eight busy loops started by the kernel itself: in its session, so that the
# scheduler shares the cores between them and the kernel's own work as it
# does for other programs the learner runs (a loop in another session, as
# the fixtures start them, gets its own share of the machine under Linux's
# autogroups, and leaves the kernel most of a core).
LOAD_CELL = """
import os, subprocess, sys
import jaxcourse.exercises
busy = [subprocess.Popen([sys.executable, "-c", {busy!r}, str(os.getpid())],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        for _ in range({loops})]
"""

ENDLESS_CELL = """
from jaxcourse.exercises import check

def count_params(*args, **kwargs):
    while True:
        pass

result = check("transformer.count_params", count_params{limit})
said = [f.message for f in result.feedback if not f.passed][0]
print("SAID:" + said)
"""


def test_an_endless_answers_message_says_how_long_the_learner_waited() -> None:
    """#65 item 4: at a load of 8 the message gives the wall time, within 20 %.

    The cell runs in a Jupyter kernel, as JupyterLab runs it, and is timed
    from the request to the reply, which is when the learner reads it. The
    limit (10 s for this exercise's first test) is counted in the kernel's
    own time, so the learner waits several times longer.
    """
    from jupyter_client.manager import start_new_kernel

    # The Check button's limit is 10 s; 3 s says the same in a third of the
    # suite's time (the 10 s limit measured so: see the CHANGELOG, #65).
    limit = os.environ.get("JAXCOURSE_ENDLESS_LIMIT", "3.0")
    cell = ENDLESS_CELL.replace("{limit}", f", time_limit={limit}" if limit else "")
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        loops = CONTRACT_LOOPS_PER_CORE * max(2, os.cpu_count() or 2)
        client.execute_interactive(LOAD_CELL.format(busy=BUSY, loops=loops),
                                   timeout=300)
        printed: list[str] = []

        def output(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])

        started = time.monotonic()
        reply = client.execute_interactive(cell, timeout=600,
                                           output_hook=output)
        waited = time.monotonic() - started
        client.execute_interactive("for loop in busy: loop.kill()", timeout=60)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]
    said = "".join(printed).partition("SAID:")[2]
    within = re.search(r"did not finish within (\d+) s", said)
    clock = re.search(r"stopped after (\d+) s on the clock", said)
    assert within and clock, (said, waited)  # the wait is said beside the limit
    assert abs(float(clock[1]) - waited) <= 0.2 * waited, (said, waited)
    assert waited > 1.5 * float(within[1]), (said, waited)  # the load was real
    print(f"waited {waited:.1f} s; said: {said}")
