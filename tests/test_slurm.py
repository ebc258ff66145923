"""The course's Slurm cluster: start/stop, srun with the launcher's interface,
chapter 7's launched Checks through srun, and its Slurm cells without Slurm.

The slow tests use the real cluster (``slurm_cluster``: started once per
session, stopped at the end if the session started it); where Slurm is not
installed they are skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import numpy as np
import psutil
import pytest
from processes import alive
from slurm_cluster import slurm_cluster  # noqa: F401  (a fixture)

from jaxcourse import slurm
from jaxcourse.exercises.registry import get
from jaxcourse.launch import RankFailedError
from jaxcourse.launch.output import SrunLines
from solutions import multiprocess, multiprocess_harness

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "07_multiprocess.ipynb"

PSUM = """
    import os
    from jaxcourse.launch import initialize_from_env

    initialize_from_env()
    import jax

    ones = jax.numpy.ones(jax.local_device_count())
    total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(ones)
    rank = jax.process_index()
    if rank == int(os.environ.get("CRASH_RANK", -1)):
        raise RuntimeError(f"rank {rank} gives up")
    print(f"rank {rank} of {jax.process_count()} "
          f"(SLURM_PROCID {os.environ['SLURM_PROCID']}): {total.tolist()}")
"""


def test_srun_labels_split_the_output_by_task() -> None:
    lines = SrunLines()
    assert lines.feed("2: hello", "stdout") == [(2, "stdout", "hello")]
    assert lines.feed(" 10: oops", "stderr") == [(10, "stderr", "oops")]
    # srun's own words carry no label: shown as rank 0's, on stderr.
    assert lines.feed("srun: error: node1: task 2: Exited with exit code 1",
                      "stderr") == [(0, "stderr",
                                     "srun: error: node1: task 2: Exited with "
                                     "exit code 1")]
    assert lines.flush() == []


def test_the_configuration_stays_in_the_course_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(slurm.DIR_ENV, str(tmp_path / "slurm"))
    c = slurm.cluster()
    text = slurm._config(c, slurm._nodes(True), (40001, 40002))
    paths = [line.split("=", 1)[1] for line in text.splitlines()
             if line.split("=", 1)[0] in {"StateSaveLocation", "SlurmdSpoolDir",
                                          "SlurmctldPidFile", "SlurmctldLogFile",
                                          "JobCompLoc", "PlugStackConfig"}]
    assert len(paths) == 6
    assert all(p.startswith(str(tmp_path / "slurm")) for p in paths)
    assert f"AuthInfo=socket={tmp_path / 'slurm' / 'run' / 'munge.socket'}" in text
    assert "NodeName=node1 NodeAddr=127.0.0.1" in text
    assert "NodeName=node2 NodeAddr=127.0.0.2" in text
    assert "CommunicationParameters=NoInAddrAny" in text


def test_no_slurm_is_one_clear_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # Slurm's commands are gone
    reason = slurm.unavailable_reason()
    assert reason.startswith("Slurm is not installed here (sbatch, srun")
    assert "`make cluster` installs it" in reason
    with pytest.raises(slurm.SlurmUnavailableError, match="not installed"):
        slurm.start()
    with pytest.raises(slurm.SlurmUnavailableError, match="not installed"):
        slurm.submit("x.sh")
    (tmp_path / "x.py").write_text("print('never run')\n")
    with pytest.raises(slurm.SlurmUnavailableError, match="not installed"):
        slurm.launch_srun(tmp_path / "x.py", cwd=tmp_path)


@pytest.mark.slow
def test_starting_again_changes_nothing(slurm_cluster) -> None:  # noqa: F811
    c = slurm.cluster()
    before = slurm.running(c)
    stamp = c.conf.stat().st_mtime_ns
    again = slurm.start(quiet=True)
    assert again.up and not again.started
    assert slurm.running(c) == before
    assert c.conf.stat().st_mtime_ns == stamp
    assert set(before) == {"munged", "slurmctld",
                           *(f"slurmd-{n}" for n in again.nodes)}
    assert all(state == "idle" for state in again.nodes.values())


@pytest.mark.slow
def test_launch_srun_has_the_launchers_interface(slurm_cluster, tmp_path) -> None:  # noqa: F811
    script = tmp_path / "psum.py"
    script.write_text(textwrap.dedent(PSUM))
    result = slurm.launch_srun(script, 4, 2, timeout=120, cwd=tmp_path, echo=False)
    assert result.ok and result.returncodes == [0, 0, 0, 0]
    for rank in range(4):
        assert result.lines(rank) == [
            f"rank {rank} of 4 (SLURM_PROCID {rank}): [8.0, 8.0]"]
    with pytest.raises(RankFailedError) as info:
        slurm.launch_srun(script, 4, 2, timeout=120, cwd=tmp_path, echo=False,
                          env={"CRASH_RANK": "1"})
    err = info.value
    assert err.rank == 1
    message = str(err)
    assert message.startswith("rank 1 exited with exit code 1:")
    assert "RuntimeError: rank 1 gives up" in message
    assert message.endswith("Every other rank was ended (srun --kill-on-bad-exit).")
    assert not alive(err.pids)

    def leftovers() -> list:
        # Slurm may still be completing the step (KillWait): poll, with a limit.
        ranks = [p for p in psutil.process_iter(["cmdline"])
                 if str(script) in " ".join(p.info["cmdline"] or [])]
        return ranks + slurm.command("squeue", "-h").split()

    deadline = time.monotonic() + 30
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers() == []


@pytest.mark.slow
def test_launched_checks_go_through_srun_when_the_cluster_is_up(
        slurm_cluster, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv(multiprocess_harness.LAUNCHER_ENV, "auto")
    launch, how = multiprocess_harness.launcher()
    assert launch is slurm.launch_srun and "srun" in how
    # The grader's sandbox never submits to a cluster, up or not.
    monkeypatch.setenv("JAXCOURSE_GRADING_GUARD", "{}")
    assert multiprocess_harness.launcher()[1] == "the course's launcher"
    monkeypatch.delenv("JAXCOURSE_GRADING_GUARD")

    calls = []
    real = slurm.launch_srun

    def counted(*args, **kwargs):  # the real srun launch, counted
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(slurm, "launch_srun", counted)
    exercise = get("multiprocess.run_epoch")
    scenarios = multiprocess.EPOCH_SCENARIOS
    through_srun = multiprocess_harness.launch_run_epoch(exercise.reference,
                                                         scenarios)
    assert calls == ["worker.py"]
    monkeypatch.setenv(multiprocess_harness.LAUNCHER_ENV, "course")
    locally = multiprocess_harness.launch_run_epoch(exercise.reference, scenarios)
    assert len(calls) == 1
    for a, b in zip(through_srun, locally, strict=True):
        for x, y in zip(a, b, strict=True):
            assert x.tolist() == y.tolist()

    # A learner's hanging answer is cut and named under srun too, as with the
    # course's launcher: process 0 waits in a step that process 1 never joins.
    monkeypatch.setenv(multiprocess_harness.LAUNCHER_ENV, "slurm")
    with pytest.raises(multiprocess_harness.ProcessesOutOfStepError) as info:
        multiprocess_harness.launch_run_epoch(epoch_only_process_zero_steps,
                                              scenarios)
    assert len(calls) == 2
    message = str(info.value)
    ended = re.search(r"hung and were ended after (\d+(?:\.\d+)?) s", message)
    assert ended and float(ended[1]) <= multiprocess_harness.LAUNCH_TIMEOUT, message
    assert "process 0 called step() 1 times" in message, message
    assert "process 1 called step() 0 times" in message, message


# Module level: a launched Check copies the function's source into its worker.
def epoch_only_process_zero_steps(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    if jax.process_index() != 0:
        return []
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.min(counts)))]


def _slurm_cells() -> str:
    """Chapter 7's cells tagged ``slurm``, as one script (``%%writefile`` done)."""
    nb = json.loads(CHAPTER.read_text(encoding="utf-8"))
    parts = ["from pathlib import Path"]
    for cell in nb["cells"]:
        if "slurm" not in cell.get("metadata", {}).get("tags", []):
            continue
        source = "".join(cell["source"])
        if source.startswith("%%writefile "):
            name, _, body = source[len("%%writefile "):].partition("\n")
            parts.append(f"Path({name.strip()!r}).write_text({body!r})")
        else:
            parts.append(source)
    parts.append("slurm.release()")
    return "\n".join(parts)


@pytest.mark.slow
def test_the_chapter_skips_its_slurm_cells_without_slurm(tmp_path) -> None:
    # Slurm's commands removed from PATH: only this Python's folder is left.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    env.pop("SLURM_CONF", None)
    result = subprocess.run([sys.executable, "-c", _slurm_cells()], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "Slurm cells skipped: Slurm is not installed here (sbatch, srun")
    assert lines[1:] == ["skipped: no Slurm cluster (see above)"] * 6
