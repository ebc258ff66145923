"""The course's Slurm cluster: start/stop, srun with the launcher's interface,
chapter 8's launched Checks through srun, and its Slurm cells without Slurm.

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

from exercise_kit import multiprocess_cases, multiprocess_harness
from jaxcourse import slurm
from jaxcourse.exercises.checking.registry import get
from jaxcourse.launch import RankFailedError
from jaxcourse.launch.output import SrunLines

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "08_multiprocess.ipynb"

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


def test_a_long_line_that_srun_relays_in_pieces_is_joined() -> None:
    # srun --label relays a line of 1500 characters as 1024 + 476, each piece
    # labelled (seen with Slurm 22.05); a long JSON line must come back whole.
    lines = SrunLines()
    long = "a" * 1500
    assert lines.feed(f"1: {long[:1024]}") == []
    assert lines.feed("0: short") == [(0, "stdout", "short")]  # another task between
    assert lines.feed(f"1: {long[1024:]}") == [(1, "stdout", long)]
    assert lines.feed(f"2: {'b' * 1024}") == []
    assert lines.flush() == [(2, "stdout", "b" * 1024)]  # never ended: kept


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
    # Chapter 8's preemption: `urgent` jobs requeue the `course` jobs in their way.
    assert "PreemptType=preempt/partition_prio" in text
    assert "PreemptMode=REQUEUE" in text
    assert re.search(r"^PartitionName=urgent .*PriorityTier=2", text, re.M)
    # Chapter 8's time-limit job holds a CPU of node1 beside the other jobs:
    # every node has 4 at least, as configured, on any machine.
    assert "SlurmdParameters=config_overrides" in text
    cpus = re.findall(r"^NodeName=\S+ .*CPUs=(\d+)", text, re.M)
    assert len(cpus) == 2 and all(int(n) >= 4 for n in cpus)


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


# ---- the command line a teacher uses: python -m jaxcourse.slurm ------------------

# A grading array's three tasks as Slurm 22.05's job completion log writes them
# (each task has a number of its own, its array's is ArrayJobId), after a job
# numbered 82 from before the cluster was started afresh and a plain job.
JOBS_LOG = "".join(
    f"JobId={raw} UserId=root(0) GroupId=root(0) Name={name} JobState={state} "
    f"Partition=course TimeLimit=5 StartTime={start} "
    f"EndTime=2026-12-03T13:15:10 NodeList={nodes} NodeCnt=1 ProcCnt=1 "
    f"WorkDir=/tmp ReservationName= Tres=cpu=1,mem=1M,node=1,billing=1 Account= "
    f"QOS= WcKey= Cluster=unknown SubmitTime={submitted} "
    f"EligibleTime={submitted} {array}DerivedExitCode=0:0 ExitCode={code} \n"
    for raw, name, state, start, nodes, submitted, array, code in [
        ("82", "old", "COMPLETED", "2026-12-03T13:15:08", "node1",
         "2026-12-01T09:00:00", "", "0:0"),
        ("81", "two-nodes", "COMPLETED", "2026-12-03T13:15:03", "node[1-2]",
         "2026-12-03T13:15:01", "", "0:0"),
        ("83", "jaxcourse-grade", "COMPLETED", "2026-12-03T13:15:08", "node2",
         "2026-12-03T13:15:04", "ArrayJobId=82 ArrayTaskId=0 ", "0:0"),
        ("84", "jaxcourse-grade", "FAILED", "2026-12-03T13:15:09", "node1",
         "2026-12-03T13:15:04", "ArrayJobId=82 ArrayTaskId=1 ", "1:0"),
        # Cancelled before it started.
        ("82", "jaxcourse-grade", "CANCELLED", "Unknown", "(null)",
         "2026-12-03T13:15:04", "ArrayJobId=82 ArrayTaskId=2 ", "0:0"),
    ])


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[2:]]


def test_env_is_the_line_that_points_slurm_at_the_course_cluster(
        tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv(slurm.DIR_ENV, str(tmp_path / "my slurm"))
    assert slurm.main(["env"]) == 0
    line = capsys.readouterr().out.strip()
    assert line == f"export SLURM_CONF='{tmp_path}/my slurm/etc/slurm.conf'"


def test_sacct_shows_every_task_of_an_array(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv(slurm.DIR_ENV, str(tmp_path))
    log = slurm.cluster().jobs_log
    log.parent.mkdir(parents=True)
    log.write_text(JOBS_LOG)
    assert slurm.main(["sacct", "-j", "82"]) == 0
    out = capsys.readouterr().out
    # sacct's own names, and the fields that exist in Slurm 22.05 (no
    # ArrayJobId or ArrayTaskId): a task's JobID is <array>_<task>.
    assert out.splitlines()[0].split() == list(slurm.SACCT_FIELDS)
    assert _rows(out) == [
        ["82_0", "83", "jaxcourse-grade", "COMPLETED", "0:0", "00:00:02", "node2"],
        ["82_1", "84", "jaxcourse-grade", "FAILED", "1:0", "00:00:01", "node1"],
        ["82_2", "82", "jaxcourse-grade", "CANCELLED", "0:0", "00:00:00", "(null)"],
    ]
    assert slurm.main(["sacct", "-j", "82_1,81"]) == 0
    assert [r[0] for r in _rows(capsys.readouterr().out)] == ["81", "82_1"]
    assert slurm.main(["sacct"]) == 0
    assert len(_rows(capsys.readouterr().out)) == 5
    assert slurm.main(["sacct", "-j", "7"]) == 1
    assert "python -m jaxcourse.slurm squeue -r -j 7" in capsys.readouterr().err


@pytest.mark.slow  # it runs a squeue script: a process
def test_slurm_commands_are_passed_on_with_the_course_config(
        tmp_path, monkeypatch, capfd) -> None:
    monkeypatch.setenv(slurm.DIR_ENV, str(tmp_path / "slurm"))
    fake = tmp_path / "bin" / "squeue"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "$SLURM_CONF $*"\nexit "${FAKE_EXIT:-0}"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/someone-elses.conf")
    # Its options are squeue's, not ours.
    assert slurm.main(["squeue", "-r", "-j", "82"]) == 0
    assert capfd.readouterr().out == f"{slurm.cluster().conf} -r -j 82\n"
    # Slurm's own error, then why: the course's cluster is not running.
    monkeypatch.setenv("FAKE_EXIT", "1")
    assert slurm.main(["squeue"]) == 1
    err = capfd.readouterr().err
    assert "error: the course's Slurm cluster is not running" in err
    assert "`make cluster` starts it" in err


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
def test_a_teacher_follows_a_grading_array(slurm_cluster, tmp_path, capfd) -> None:  # noqa: F811
    assert slurm.main(["status"]) == 0
    out = capfd.readouterr().out
    assert f"export SLURM_CONF={slurm.cluster().conf}" in out
    script = tmp_path / "array.sh"
    script.write_text("#!/bin/bash\n#SBATCH --job-name=jaxcourse-array-test\n"
                      "#SBATCH --array=0-2\n#SBATCH --time=1\n"
                      f"#SBATCH --output={tmp_path}/task-%a.log\n"
                      '[ "$SLURM_ARRAY_TASK_ID" != 1 ]\n')
    job = slurm.submit(script, cwd=tmp_path)
    # Slurm's own squeue, through the command line: one line per task.
    assert slurm.main(["squeue", "-r", "-h", "-j", job, "-o", "%i"]) == 0
    listed = capfd.readouterr().out.split()
    assert set(listed) <= {f"{job}_{t}" for t in range(3)}, listed
    slurm.wait(job, timeout=120)
    deadline = time.monotonic() + 20  # slurmctld writes the log as tasks end
    while len(slurm.finished_jobs([job])) < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert slurm.main(["sacct", "-j", job]) == 0
    out, err = capfd.readouterr()
    assert [(r[0], r[3], r[4]) for r in _rows(out)] == [
        (f"{job}_0", "COMPLETED", "0:0"), (f"{job}_1", "FAILED", "1:0"),
        (f"{job}_2", "COMPLETED", "0:0")]
    assert err == ""
    # The same columns work in Slurm's own sacct, with the printed line.
    own = subprocess.run(
        ["bash", "-c", f"{slurm.env_line()} && sacct -c -j {job} "
         f"--format={','.join(slurm.SACCT_FIELDS)}"],
        capture_output=True, text=True, timeout=30)
    assert own.returncode == 0, own.stderr
    assert own.stdout.split()[:len(slurm.SACCT_FIELDS)] == list(slurm.SACCT_FIELDS)
    assert "Invalid field" not in own.stderr


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
    scenarios = multiprocess_cases.EPOCH_SCENARIOS
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
    """Chapter 8's cells tagged ``slurm``, as one script (``%%writefile`` done)."""
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
    assert lines[1:] == ["skipped: no Slurm cluster (see above)"] * 9
