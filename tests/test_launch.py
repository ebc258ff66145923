"""The multi-process launcher: success, crash, hang, busy port, and no orphans.

The slow tests start real JAX processes (4 ranks x 2 CPU devices, Gloo
collectives); the fast ones use plain Python workers to check the process
handling alone. After every test, no process that the test started may be
alive: each test checks the pids the launcher reports, and a fixture checks
that this test process has no children left.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from processes import alive, assert_no_children_left

from jaxcourse import CourseError
from jaxcourse import launch as launcher
from jaxcourse.launch import prepared as prepared_launch
from jaxcourse.launch.output import GlooFilter, MpiLines, tail


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    yield
    assert_no_children_left("the launch left processes behind")


def write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path


# A rank that joins the cluster, sums ones over every device, and reports.
PSUM = """
    import os
    import time
    from jaxcourse.launch import initialize_from_env

    initialize_from_env()
    import jax
    import jax.numpy as jnp

    rank = jax.process_index()
    ones = jnp.ones(jax.local_device_count())
    total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(ones)
    print(f"rank {rank} of {jax.process_count()}: psum {total.tolist()}")
    if rank == int(os.environ.get("CRASH_RANK", -1)):
        raise RuntimeError(f"rank {rank} gives up")
    if rank == int(os.environ.get("HANG_RANK", -1)):
        time.sleep(600)  # never joins the next collective
    total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(ones)
    print(f"rank {rank} done: {total.tolist()}")
"""


@pytest.mark.slow
def test_four_ranks_sum_over_eight_devices(tmp_path: Path) -> None:
    script = write(tmp_path, "psum.py", PSUM)
    result = launcher.launch(script, 4, 2, timeout=90, cwd=tmp_path, echo=False)
    assert result.ok and result.error is None
    assert result.returncodes == [0, 0, 0, 0]
    assert result.coordinator.startswith("127.0.0.1:")
    for rank in range(4):
        assert result.lines(rank) == [
            f"rank {rank} of 4: psum [8.0, 8.0]",
            f"rank {rank} done: [8.0, 8.0]",
        ]
    assert len(result.pids) == 4
    assert not alive(result.all_pids)


@pytest.mark.slow
def test_a_crashing_rank_ends_every_rank(tmp_path: Path) -> None:
    script = write(tmp_path, "psum.py", PSUM)
    with pytest.raises(launcher.RankFailedError) as info:
        launcher.launch(
            script, 4, 2, timeout=90, cwd=tmp_path, echo=False, env={"CRASH_RANK": "2"}
        )
    err = info.value
    assert isinstance(err, CourseError)
    assert err.rank == 2 and err.returncode == 1
    message = str(err)
    assert message.startswith("rank 2 exited with code 1:")
    assert "RuntimeError: rank 2 gives up" in message
    assert str(tmp_path) not in message  # the script's folder is left out
    assert err.result.returncodes[2] == 1
    assert len(err.pids) == 4
    assert not alive(err.pids)


@pytest.mark.slow
def test_a_hanging_rank_times_out(tmp_path: Path) -> None:
    script = write(tmp_path, "psum.py", PSUM)
    with pytest.raises(launcher.LaunchTimeoutError) as info:
        launcher.launch(
            script, 4, 2, timeout=15, cwd=tmp_path, echo=False, env={"HANG_RANK": "1"}
        )
    err = info.value
    message = str(err)
    assert message.startswith("timed out after 15 s; ranks 0, 1, 2, 3 are still")
    assert "a collective waiting for a rank that never joins?" in message
    # Every rank got through the first psum, then waited for rank 1.
    for rank in range(4):
        assert f"[rank {rank}] rank {rank} of 4: psum [8.0, 8.0]" in message
    assert err.running == [0, 1, 2, 3]
    assert err.result.returncodes == [None] * 4
    assert not alive(err.pids)


def test_a_port_in_use_fails_before_starting_anything(tmp_path: Path) -> None:
    script = write(tmp_path, "never.py", "raise SystemExit('must not run')\n")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(
            launcher.PortInUseError, match=f"port {port} .* already in use"
        ):
            launcher.launch(script, 4, 2, port=port, cwd=tmp_path, echo=False)
    # Zombies are dead: another test's orphans may wait there to be reaped.
    assert not alive(c.pid for c in psutil.Process().children(recursive=True))


def test_the_port_asked_for_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The notebook's own device count must not reach the ranks; its other
    # XLA flags must.
    monkeypatch.setenv(
        "XLA_FLAGS",
        "--xla_force_host_platform_device_count=8 --xla_cpu_enable_fast_math=false",
    )
    script = write(
        tmp_path,
        "env.py",
        """
        import os
        print(os.environ["JAX_COURSE_COORDINATOR"], os.environ["JAX_COURSE_PROCESS_ID"],
              os.environ["JAX_COURSE_NUM_PROCESSES"], os.environ["XLA_FLAGS"],
              os.environ["SEED"])
        """,
    )
    port = launcher.free_port()
    result = launcher.launch(
        script,
        3,
        5,
        port=port,
        cwd=tmp_path,
        echo=False,
        env=lambda rank: {"SEED": str(10 * rank)},
    )
    flags = "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=5"
    for rank in range(3):
        assert result.lines(rank) == [
            f"127.0.0.1:{port} {rank} 3 {flags} {10 * rank}"
        ]


# Plain-Python workers: the process handling without JAX's start-up time.
CHILD = """
    import os
    import subprocess
    import sys
    import time

    rank = int(os.environ["JAX_COURSE_PROCESS_ID"])
    # A grandchild: it must be ended along with its parent.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"grandchild {child.pid}", flush=True)
    time.sleep(2)  # every rank has started its grandchild by then
    if rank == 1 and os.environ.get("MODE") == "crash":
        sys.exit("rank 1 cannot read its shard")
    time.sleep(600 if os.environ.get("MODE") in ("crash", "hang") else 0)
    child.kill()
    child.wait()
    print("done")
"""


def grandchildren(result: launcher.LaunchResult) -> list[int]:
    return [
        int(line.split()[1])
        for rank in range(result.num_processes)
        for line in result.lines(rank)
        if line.startswith("grandchild ")
    ]


def test_plain_success_streams_output_tagged_by_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write(tmp_path, "child.py", CHILD)
    result = launcher.launch(script, 2, 1, cwd=tmp_path, timeout=30)
    shown = capsys.readouterr().out.splitlines()
    assert sorted(line for line in shown if line.endswith("done")) == [
        "[rank 0] done",
        "[rank 1] done",
    ]
    assert result.returncodes == [0, 0]
    result.show()
    ordered = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in ordered] == ["0]", "0]", "1]", "1]"]
    assert not alive([*result.all_pids, *grandchildren(result)])


def test_plain_crash_ends_the_others_and_their_children(tmp_path: Path) -> None:
    script = write(tmp_path, "child.py", CHILD)
    with pytest.raises(launcher.RankFailedError) as info:
        launcher.launch(
            script, 3, 1, cwd=tmp_path, timeout=60, echo=False, env={"MODE": "crash"}
        )
    err = info.value
    assert str(err).startswith("rank 1 exited with code 1:\n    rank 1 cannot read")
    assert err.result.returncodes == [None, 1, None]
    assert len(grandchildren(err.result)) == 3
    assert not alive([*err.pids, *grandchildren(err.result)])


# Rank 2 fails only because rank 1 did (the words a collective prints when its
# peer is gone), yet its exit is seen first, as a loaded machine may see it:
# rank 1 leaves a moment after rank 2 has.
KNOCK_ON = """
    import os
    import sys
    import time
    from pathlib import Path

    rank = int(os.environ["JAX_COURSE_PROCESS_ID"])
    if rank == 2:
        Path("rank2_leaves").touch()
        sys.exit("[gloo] Read error [127.0.0.1]:7597: Connection reset by peer")
    if rank == 1:
        while not Path("rank2_leaves").exists():
            time.sleep(0.01)
        time.sleep(0.2)
        sys.exit("rank 1 ran out of memory")
    time.sleep(600)
"""


def test_the_rank_reported_is_the_cause_not_a_partner_that_lost_it(
    tmp_path: Path,
) -> None:
    script = write(tmp_path, "knock_on.py", KNOCK_ON)
    with pytest.raises(launcher.RankFailedError) as info:
        launcher.launch(script, 3, 1, cwd=tmp_path, timeout=60, echo=False)
    err = info.value
    assert (err.rank, err.returncode) == (1, 1), str(err)
    assert str(err).startswith(
        "rank 1 exited with code 1:\n    rank 1 ran out of memory")
    # Both ended on their own, the knock-on first; rank 0 was ended.
    assert err.result.returncodes == [None, 1, 1]
    assert not alive(err.pids)


def test_plain_hang_times_out_and_ends_grandchildren(tmp_path: Path) -> None:
    script = write(tmp_path, "child.py", CHILD)
    with pytest.raises(
        launcher.LaunchTimeoutError, match=r"timed out after 4 s; ranks 0, 1"
    ):
        launcher.launch(
            script, 2, 1, cwd=tmp_path, timeout=4, echo=False, env={"MODE": "hang"}
        )


# A rank whose children leave its process group three ways; then it fails.
ESCAPER = """
    import os
    import subprocess
    import sys

    # A new session, nohup in a new session, and a double fork into a new
    # session (the shell exits at once, handing its child to init). The first
    # keeps the rank's stdout open: the launch must still end.
    pids = [
        subprocess.Popen(["sleep", "3201"], start_new_session=True).pid,
        subprocess.Popen(["nohup", "sleep", "3202"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid,
        int(subprocess.run(
            ["setsid", "sh", "-c", "sleep 3203 >/dev/null 2>&1 & echo $!"],
            capture_output=True, text=True).stdout),
    ]
    print("escaped", *pids, flush=True)
    sys.exit(3)
"""


def test_children_that_left_the_group_are_ended_too(tmp_path: Path) -> None:
    script = write(tmp_path, "escaper.py", ESCAPER)
    with pytest.raises(launcher.RankFailedError) as info:
        launcher.launch(script, 2, 1, cwd=tmp_path, timeout=30, echo=False)
    escaped = [
        int(pid)
        for rank in range(2)
        for line in info.value.result.lines(rank)
        if line.startswith("escaped ")
        for pid in line.split()[1:]
    ]
    assert len(escaped) >= 3  # the first rank to fail printed its three
    assert not alive([*info.value.pids, *escaped])


def test_check_false_returns_the_failure(tmp_path: Path) -> None:
    script = write(tmp_path, "child.py", CHILD)
    result = launcher.launch(
        script,
        2,
        1,
        cwd=tmp_path,
        timeout=4,
        echo=False,
        check=False,
        env={"MODE": "hang"},
    )
    assert not result.ok and result.error.startswith("timed out after 4 s")
    assert result.returncodes == [None, None]
    assert len(grandchildren(result)) == 2
    assert not alive([*result.all_pids, *grandchildren(result)])


PIDFILE_CHILD = """
    import os
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


def test_an_interrupted_launch_leaves_nothing_behind(tmp_path: Path) -> None:
    # The notebook's stop button raises KeyboardInterrupt inside launch().
    write(tmp_path, "child.py", PIDFILE_CHILD)
    driver = write(tmp_path, "driver.py", DRIVER)
    proc = subprocess.Popen([sys.executable, driver.name], cwd=tmp_path)
    try:
        files = [tmp_path / f"pids-{rank}.txt" for rank in range(2)]
        deadline = time.monotonic() + 60
        while not all(f.is_file() and f.read_text() for f in files):
            assert time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.1)
        pids = [int(pid) for f in files for pid in f.read_text().split()]
        assert len(alive(pids)) == 4
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) != 0
    finally:
        proc.kill()
        proc.wait()
    assert not alive(pids)


# ---- a launch prepared ahead of its job ----------------------------------------

# A rank that waits for its job, then prints the job's word, or loops for ever.
PREPARED = """
import os
import sys
import time

from jaxcourse.launch.prepared import wait_for_job

rank = int(os.environ["JAX_COURSE_PROCESS_ID"])
job = wait_for_job(os.path.dirname(os.path.abspath(__file__)), rank,
                   float(sys.argv[-1]))
if job is None:
    sys.exit(0)
while job["word"] == "endless":
    time.sleep(0.01)
print(f"rank {rank}: {job['word']}", flush=True)
"""


def _prepared(idle: float = 60.0) -> prepared_launch.PreparedLaunch:
    launch = prepared_launch.PreparedLaunch(PREPARED, 2, 1, idle=idle, job_timeout=30)
    assert launch.wait_ready(60), "the prepared processes never got ready"
    return launch


def test_a_prepared_launch_runs_the_job_it_is_given() -> None:
    launch = _prepared()
    assert launch.ready() and launch.waiting() and not launch.handed
    result = launch.run({"word": "hello"}, timeout=30)
    assert [result.lines(r) for r in range(2)] == [["rank 0: hello"], ["rank 1: hello"]]
    assert launch.handed and not launch.waiting()
    assert not launch.folder.exists()
    with pytest.raises(RuntimeError, match="already had its job"):
        launch.run({"word": "again"}, timeout=30)


def test_a_prepared_job_that_runs_out_of_time_is_ended() -> None:
    launch = _prepared()
    started = time.monotonic()
    with pytest.raises(launcher.RankFailedError) as failed:
        launch.run({"word": "endless"}, timeout=1.0)
    assert time.monotonic() - started < 10
    assert failed.value.returncode == prepared_launch.TIMED_OUT_CODE
    assert prepared_launch.TIMED_OUT in failed.value.result.lines(failed.value.rank)


def test_an_interrupted_prepared_job_leaves_nothing_behind() -> None:
    from jaxcourse.exercises import TimeLimitError, call_with_time_limit

    launch = _prepared()
    with pytest.raises(TimeLimitError):  # as the notebook's stop button would
        call_with_time_limit(lambda: launch.run({"word": "endless"}, timeout=30), 1.0)
    assert not launch.waiting()


def test_prepared_processes_that_get_no_job_end_by_themselves() -> None:
    idle = _prepared(idle=1.0)
    closed = _prepared()
    closed.close()  # asked to stop (the kernel exits, or the CPUs are wanted)
    assert not closed.waiting() and not closed.folder.exists()
    deadline = time.monotonic() + 30
    while idle.waiting():
        assert time.monotonic() < deadline, "idle prepared processes kept waiting"
        time.sleep(0.1)


def test_a_missing_script_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no script 'nope.py'"):
        launcher.launch("nope.py", 2, 1, cwd=tmp_path)


def test_error_renders_as_its_message_in_ipython() -> None:
    err = launcher.LaunchTimeoutError(
        "timed out after 1 s", launcher.LaunchResult([], 1, 1, ""), [0]
    )
    assert err._render_traceback_() == ["LaunchTimeoutError: timed out after 1 s"]


def test_traceback_summary_keeps_own_frame_and_exception() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/some/where/train.py", line 8, in <module>',
        "    x = make(local)",
        "        ^^^^^^^^^^^",
        '  File "/venv/lib/python3.11/site-packages/jax/_src/array.py", line 9, in f',
        "    raise ValueError(",
        "ValueError: Invalid host data",
    ]
    summary = tail(lines, Path("/some/where"))
    assert summary.splitlines() == [
        '      File "train.py", line 8, in <module>',
        "        x = make(local)",
        "    ValueError: Invalid host data",
    ]


def test_gloo_connection_messages_are_dropped_even_when_shuffled() -> None:
    # Two devices' threads wrote their messages at once: pieces interleaved,
    # one line per message, the second holding only a number.
    opener, expected = "[Gloo] Rank ", "Expected number of connected peer ranks is : "
    shuffled = [
        f"{opener}3{opener} is connected to 27 is connected to  peer ranks. 7"
        f"{expected} peer ranks. 7{expected}",
        "7",
    ]
    whole = f"{opener}0 is connected to 3 peer ranks. {expected}3"
    lines = ["process 0 of 4", *shuffled, "42", whole, "", "psum [8. 8.]"]
    gloo = GlooFilter()
    assert [line for line in lines if not gloo.is_noise(line)] == [
        "process 0 of 4",
        "42",
        "",
        "psum [8. 8.]",
    ]


def test_mpirun_chunks_are_put_back_together_per_rank() -> None:
    # mpirun tags chunks, not lines: rank 1's line is split around rank 2's.
    chunks = MpiLines()
    got = [
        *chunks.feed("[1,1]<stdout>:process 1 of 4[1,2]<stdout>:process 2 of 4"),
        *chunks.feed("[1,3]<stderr>:a warning"),
        *chunks.feed("[1,1]<stdout>:"),
        *chunks.feed("mpirun noticed something[1,0]<stdout>:half"),
        *chunks.flush(),
    ]
    assert got == [
        (2, "stdout", "process 2 of 4"),
        (3, "stderr", "a warning"),
        (1, "stdout", "process 1 of 4"),
        (0, "stderr", "mpirun noticed something"),
        (0, "stdout", "half"),
    ]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")
def test_mpirun_and_a_bare_initialize(tmp_path: Path) -> None:
    script = write(tmp_path, "psum.py", PSUM)
    result = launcher.launch_mpirun(
        script.name, 2, 2, cwd=tmp_path, timeout=90, echo=False
    )
    assert result.command[0] == "mpirun" and "-n" in result.command
    assert str(tmp_path) not in " ".join(result.command)
    for rank in range(2):
        assert result.lines(rank) == [
            f"rank {rank} of 2: psum [4.0, 4.0]",
            f"rank {rank} done: [4.0, 4.0]",
        ]
    assert len(result.descendants) >= 2
    assert not alive(result.all_pids)


def test_initialize_outside_any_launcher_says_what_to_do() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAX_COURSE_", "OMPI_", "SLURM_", "PMI"))
    }
    code = "from jaxcourse.launch import initialize_from_env; initialize_from_env()"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "JAX_PLATFORMS": "cpu"},
        timeout=120,
    )
    assert proc.returncode == 1
    assert "no launcher started it" in proc.stderr
