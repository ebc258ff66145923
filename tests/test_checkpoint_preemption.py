"""Chapter 8's ``checkpointed.py`` saves at the step of a preemption notice.

The script gives Orbax's manager ``save_interval_steps=20`` and offers it every
step (``manager.save(done)``); after a SIGTERM the manager must save the step
at which every process reached JAX's preemption sync point, and the next run
must resume from that step, not from the last interval save. An earlier version
called ``reached_preemption_sync_point(step)`` and then
``manager.save(step + 1)``: Orbax asked the sync point again for ``step + 1``,
got False, and skipped the save while the script logged "saved". This test
runs the chapter's own script (read from the notebook) under the course's
launcher in two processes, sends SIGTERM to process 1 after the first save,
and fails if that save at the notice is skipped.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest
from processes import assert_no_children_left

from jaxcourse import launch as launcher

CHAPTER = Path(__file__).resolve().parent.parent / "book" / "08_multiprocess.ipynb"
# The chapter's cells that write the script and the two modules it imports.
SCRIPTS = {"rows.py": "b8e7f183", "train_step.py": "c407b170",
           "checkpointed.py": "67ed5140"}


def write_scripts(folder: Path) -> None:
    """Write the chapter's %%writefile cells named in SCRIPTS into ``folder``."""
    cells = {c["id"]: "".join(c["source"])
             for c in json.loads(CHAPTER.read_text())["cells"]}
    for name, cell_id in SCRIPTS.items():
        first, _, body = cells[cell_id].partition("\n")
        assert first == f"%%writefile {name}", first
        (folder / name).write_text(body + "\n")


def ranks(folder: Path) -> dict[int, psutil.Process]:
    """The running processes of checkpointed.py in ``folder``, by rank."""
    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if "checkpointed.py" in proc.cmdline() and Path(proc.cwd()) == folder:
                found[int(proc.environ()["JAX_COURSE_PROCESS_ID"])] = proc
        except (psutil.NoSuchProcess, psutil.AccessDenied, KeyError):
            continue
    return found


def saved_steps(checkpoints: Path) -> list[int]:
    """The steps of the committed saves (Orbax's folders named by their step)."""
    return sorted(int(p.name) for p in checkpoints.iterdir() if p.name.isdigit())


@pytest.mark.slow
def test_preemption_between_interval_saves_is_saved_and_resumed(
        tmp_path: Path, raw_root: Path) -> None:
    write_scripts(tmp_path)
    source = (tmp_path / "checkpointed.py").read_text()
    interval = int(re.search(r"^SAVE_EVERY = (\d+)", source, re.M).group(1))
    assert "save_interval_steps=SAVE_EVERY" in source and interval > 1
    checkpoints = tmp_path / "ck"
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = launcher.launch(
                "checkpointed.py", 2, 1, args=["ck"], cwd=tmp_path, echo=False,
                timeout=60)
        except launcher.LaunchError as error:  # reported below, with its output
            outcome["error"] = error

    first = threading.Thread(target=run)
    first.start()
    # The first save (step 1: the manager saves the first step it is offered)
    # is committed once its folder has its step's name; then process 1 gets
    # Slurm's notice, between step 1 and the interval's first save.
    deadline = time.monotonic() + 60
    while not (checkpoints / "1").is_dir():
        assert first.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.05)
    processes = ranks(tmp_path)
    assert sorted(processes) == [0, 1], processes
    processes[1].send_signal(signal.SIGTERM)
    first.join(90)
    assert "result" in outcome, outcome.get("error")
    result = outcome["result"]
    assert result.returncodes == [0, 0], result.lines(0, "stderr")[-10:]
    log = "\n".join(result.lines(0))
    notice = re.search(
        r"^preemption notice after step (\d+): save\(\1\) returned (\w+)$", log, re.M)
    assert notice, log
    step = int(notice.group(1))
    # Between two interval saves, so that only the save at the notice has it.
    assert 1 < step < interval, log
    assert notice.group(2) == "True", log
    assert saved_steps(checkpoints) == [1, step], log

    # The next run (the requeued job's) starts from the notice's step.
    again = launcher.launch("checkpointed.py", 2, 1, args=["ck"], cwd=tmp_path,
                            echo=False, timeout=60)
    lines = again.lines(0)
    assert lines[0] == f"resumed after step {step}", lines
    assert lines[1].startswith(f"step {step + 1}, loss "), lines
    assert lines[-1].startswith("done after step 24, loss "), lines
    on_interval = set(range(interval, 25, interval))  # the script's 24 steps
    assert on_interval <= set(saved_steps(checkpoints)), saved_steps(checkpoints)
    assert_no_children_left("checkpointed.py left processes behind")
