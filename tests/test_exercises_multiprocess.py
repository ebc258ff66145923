"""Chapter 8's exercises beyond the contract, and the batch-split explorer.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook) is checked for every
chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/multiprocess.py``. Here: the checks' own guarantees.
``multiprocess.run_epoch`` launches its answers in 2 real JAX processes, so a
test that checks one is slow and checks, like ``tests/test_launch.py``, that
no process outlives it (including a hang, which the launcher ends after 20 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import jax
import numpy as np
import psutil
import pytest
from jax.experimental import multihost_utils
from processes import assert_no_children_left

from exercise_kit import multiprocess_cases, multiprocess_harness
from jaxcourse.exercises import check
from jaxcourse.exercises.widgets.explorers_multiprocess import (
    BatchSplitExplorer,
    draw_layout,
    layout_table,
    row_layout,
    split_problem,
)
from solutions import multiprocess


@pytest.fixture()
def no_children_left() -> Iterator[None]:
    yield
    assert_no_children_left("a check left processes behind")


def failures(result) -> str:
    return " | ".join(f.message for f in result.feedback if not f.passed)


# ---- exercise 1: process_rows -------------------------------------------------


def test_process_rows_reference_covers_every_record_once() -> None:
    for n, count in [(10, 4), (5, 8), (1000, 3), (97, 7)]:
        shares = [multiprocess.process_rows(n, p, count) for p in range(count)]
        assert np.array_equal(np.concatenate(shares), np.arange(n))
        sizes = [len(s) for s in shares]
        assert max(sizes) - min(sizes) <= 1


# ---- exercise 3: sum_metrics --------------------------------------------------


def test_simulated_processes_really_iterate_sets_differently() -> None:
    metrics_of = multiprocess_harness._metrics_of
    orders = {tuple(set(metrics_of(p, multiprocess_cases.MORE_METRICS[p])))
              for p in range(4)}
    assert len(orders) > 1


# ---- exercise 4: run_epoch, launched -------------------------------------------
# A module-level function: the checker copies its source into a worker script.


def epoch_only_process_zero_steps(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    if jax.process_index() != 0:
        return []
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.min(counts)))]


def test_run_epoch_refuses_lambdas_before_launching() -> None:
    answer = lambda d, b, s: [s(d[i * b:(i + 1) * b]) for i in range(len(d) // b)]  # noqa: E731
    result = check("multiprocess.run_epoch", answer)
    assert not result.passed
    assert "not lambda" in failures(result)


def test_not_attempted_launches_nothing() -> None:
    def run_epoch(local_data, batch_size, step):
        raise NotImplementedError()

    result = check("multiprocess.run_epoch", run_epoch)
    assert result.status == "not_attempted"
    assert not psutil.Process().children(recursive=True)


def test_run_epoch_in_one_process_catches_partial_batches() -> None:
    def ceil_batches(local_data, batch_size, step):
        n = -(-len(local_data) // batch_size)
        return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(n)]

    with pytest.raises(ValueError, match="pass full batches only"):
        multiprocess_harness.in_one_process(ceil_batches, 10, 4)


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
def test_run_epoch_reports_a_real_hang() -> None:
    result = check("multiprocess.run_epoch", epoch_only_process_zero_steps)
    message = failures(result)
    # Ended by the launch's own time-out, within the Check's limit, so that
    # the message can say what each process did.
    ended = re.search(r"hung and were ended after (\d+(?:\.\d+)?) s", message)
    assert ended and float(ended[1]) <= multiprocess_harness.LAUNCH_TIMEOUT, message
    assert "process 0 called step() 1 times in scenario 1 and was still waiting" \
        in message
    # Process 1 returned [] at once and waits in scenario 2's process_allgather.
    assert "process 1 called step() 0 times" in message


# ---- launched Checks, prepared while the learner reads -------------------------


@pytest.fixture()
def panels_prepare(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("JAX_COURSE_WARM_UP", "1")  # tests turn it off elsewhere
    yield
    multiprocess_harness.close_prepared()
    assert_no_children_left("a prepared launch outlived its test")


def _waiting_launch() -> object:
    (prepared,) = multiprocess_harness._PREPARED.values()
    assert prepared.wait_ready(60), "the prepared processes never got ready"
    return prepared


@pytest.mark.slow
@pytest.mark.usefixtures("panels_prepare")
def test_a_panel_prepares_the_processes_of_its_next_check() -> None:
    from jaxcourse.exercises import CheckPanel

    panel = CheckPanel("multiprocess.run_epoch", multiprocess.run_epoch, run=False)
    first = _waiting_launch()
    result = panel.run_check()
    assert result.passed, result.report()
    assert first.handed  # the Check ran in the prepared processes
    second = _waiting_launch()  # and the panel prepared the next Check's
    assert second is not first
    # A hang there is ended within the Check's limit and told as before.
    result = check("multiprocess.run_epoch", epoch_only_process_zero_steps,
                   time_limit=8.0)
    assert second.handed
    message = failures(result)
    assert "hung and were ended after 7 s" in message, message
    assert "process 0 called step() 1 times in scenario 1 and was still waiting" \
        in message
    # No panel: nothing is prepared, and nothing is left.
    assert not multiprocess_harness._PREPARED


@pytest.mark.slow
@pytest.mark.usefixtures("panels_prepare")
def test_global_batch_checks_in_prepared_processes() -> None:
    from jaxcourse.exercises import get, warm_up

    (prepared,) = warm_up(get("multiprocess.global_batch"))
    assert prepared.wait_ready(60)
    result = check("multiprocess.global_batch", multiprocess.global_batch)
    assert result.passed, result.report()
    assert prepared.handed


# ---- exercise 5: global_batch, launched ----------------------------------------


def test_global_batch_launch_varies_lengths_and_rows() -> None:
    rows = {r for r, _, _ in multiprocess_cases.GLOBAL_SCENARIOS}
    assert len(rows) > 1
    for _, lengths, _ in multiprocess_cases.GLOBAL_SCENARIOS:
        assert len(set(lengths)) == 2
    assert multiprocess_harness.GLOBAL_DEVICES_PER_PROCESS > 1  # devices != processes


# ---- the explorer ---------------------------------------------------------------


def test_layout_matches_the_chapter() -> None:
    # Chapter 8's load_data.py: 10,000 rows, 4 processes x 2 devices.
    blocks = row_layout(10_000, 4, 2)
    assert [(b.process, b.local_device, b.start, b.stop) for b in blocks[2:4]] == [
        (1, 0, 2500, 3750), (1, 1, 3750, 5000)]
    assert split_problem(10_000, 4, 2) == ""


def test_uneven_batch_is_explained() -> None:
    problem = split_problem(30, 4, 2)
    assert "do not split evenly over 8 devices" in problem
    assert "drop to 24 rows or pad to 32" in problem
    with pytest.raises(ValueError, match="split evenly"):
        row_layout(30, 4, 2)
    assert "⚠" in layout_table(30, 4, 2)
    assert draw_layout(30, 4, 2) is None


def test_explorer_redraws_when_the_sliders_move() -> None:
    import matplotlib

    matplotlib.use("Agg")
    explorer = BatchSplitExplorer(processes=4, devices_per_process=2, global_batch=32)
    assert explorer.even and "Each process loads 8 rows" in explorer.table.value
    assert "<td>4:8</td>" in explorer.table.value  # device 1 of process 0
    explorer.processes.value = 3  # 32 rows over 6 devices
    assert not explorer.even and "⚠" in explorer.table.value
    explorer.batch.value = 36
    assert explorer.even and "Each process loads 12 rows" in explorer.table.value
    explorer.devices.value = 1
    assert "each device holds 12" in explorer.table.value
    assert explorer.text().startswith("Batch-split explorer")


# ---- exercise 7: seconds_to_end, random timeouts ----------------------------------


def test_random_timeouts_differ_and_vary() -> None:
    from exercise_kit.multiprocess_checks import random_timeouts

    (settings,) = random_timeouts()(np.random.default_rng(11))
    assert len(set(settings)) == 16 and all(h != s for h, s in settings)
    assert (3, 5) not in settings and (100, 300) not in settings


# ---- exercise 8: job_ending --------------------------------------------------------


def test_job_logs_carry_the_real_messages_of_their_ending() -> None:
    from exercise_kit.multiprocess_logs import KINDS, job_log, sacct_line

    said = {  # what JAX 0.10.2 and Slurm print, as in chapter 8's jobs
        "kill-on-bad-exit": ["Exited with exit code 1", "Killed", "SIGTERM caught"],
        "heartbeat timeout": ["stopped sending heartbeats", "Exited with exit code 1",
                              "Aborted"],
        "shutdown barrier": ["Shutdown barrier has failed", "Barrier timed out",
                             "Aborted"],
        "time limit": ["CANCELLED AT", "DUE TO TIME LIMIT", "SIGTERM caught"],
        "preemption": ["CANCELLED AT", "DUE TO PREEMPTION", "SIGTERM caught"],
        "out of memory": ["oom_kill event", "Out Of Memory"],
    }
    states = {"time limit": "TIMEOUT", "preemption": "PREEMPTED",
              "out of memory": "OUT_OF_MEMORY"}
    for job in range(2000, 2000 + 4 * len(KINDS)):
        _, ending, _ = KINDS[job % len(KINDS)]
        log = job_log(job)
        assert all(text in log for text in said[ending]), (job, ending)
        assert sacct_line(job).split()[2] == states.get(ending, "FAILED")
        assert job_log(job) == log  # a pasted call shows the same log


def test_job_ending_reference_reads_every_kind_right() -> None:
    from exercise_kit.multiprocess_logs import answer, job_log, sacct_line

    for job in range(5000, 5600):
        assert multiprocess.job_ending(job_log(job), sacct_line(job)) == answer(job)


def test_job_ending_names_a_wrong_choice() -> None:
    result = check("multiprocess.job_ending", lambda log, sacct: ("crash", "retry"))
    assert not result.passed
    assert "'crash' is not one of ENDINGS" in failures(result)


def test_a_failure_is_reported_by_the_process_that_left_not_its_partner() -> None:
    # The race CI met: process 0 raised (its batch was short) and left; process
    # 1's all-reduce then failed, and the launcher saw process 1 end first.
    from exercise_kit.multiprocess_workers import failure_message
    from jaxcourse.launch import LaunchResult, RankFailedError

    own = ("ValueError: process 0 passed step() a batch of shape (0,), not (3,): "
           "every process must pass full batches")
    partner = ("ValueError: UNKNOWN: Gloo all-reduce failed: [external/gloo/gloo/"
               "transport/tcp/pair.cc:538] Read error [127.0.0.1]:13962: "
               "Connection reset by peer")
    result = LaunchResult(["python", "worker.py"], 2, 1, "127.0.0.1:1",
                          returncodes=[1, 1], stdout=["", ""],
                          stderr=[f"Traceback (most recent call last):\n{own}\n",
                                  f"Traceback (most recent call last):\n{partner}\n"])
    error = RankFailedError("rank 1 exited with code 1", result, 1, 1)
    assert failure_message(error) == f"process 0 failed: {own}"
    # With no error of its own anywhere, the launcher's rank is reported.
    result.stderr[0] = ""
    assert failure_message(error) == f"process 1 failed: {partner}"


def _answer(local_data, batch_size, step):  # the launched function's stand-in
    return step


def _timed_out_launch(lines: list[str]):
    """A launch function that ran out of time after its ranks printed ``lines``."""
    from jaxcourse.launch import LaunchResult, LaunchTimeoutError

    def launch(*args, **kwargs):
        result = LaunchResult(command=["python", "worker.py"], num_processes=2,
                              devices_per_process=1, coordinator="127.0.0.1:1",
                              returncodes=[None, None], stdout=lines, stderr=["", ""])
        raise LaunchTimeoutError("did not finish in 10 s", result, running=[0, 1])
    return launch


def test_a_finished_process_is_never_called_hung(monkeypatch) -> None:
    # At a load of 8, both processes of a right run_epoch printed their
    # results and were still ending when the launch's time ran out: the Check
    # said "the processes hung ... process 0 ... finished" (#65).
    from exercise_kit.multiprocess_workers import RESULT

    def steps(rank: int, n: int) -> str:
        return "".join(f"scenario 1: step {i} of process {rank} started\n"
                       for i in range(1, n + 1))

    result_line = RESULT + "[[1.0]]"
    finished = [steps(rank, 3) + result_line + "\n" for rank in (0, 1)]
    monkeypatch.setattr(multiprocess_harness, "launcher",
                        lambda: (_timed_out_launch(finished), "a stand-in"))
    result = multiprocess_harness._launch_worker("", _answer, [((2, 2), 1)], 1)
    assert multiprocess_harness.rank_results(result) == [[[1.0]], [[1.0]]]
    # One process without its result did hang: said so, and which one waited.
    waiting = [f"{steps(0, 3)}{result_line}\n", steps(1, 2)]
    monkeypatch.setattr(multiprocess_harness, "launcher",
                        lambda: (_timed_out_launch(waiting), "a stand-in"))
    with pytest.raises(multiprocess_harness.ProcessesOutOfStepError,
                       match=r"hung and were ended .* process 0 called step\(\) 3 "
                             r"times in scenario 1 and finished; process 1 called "
                             r"step\(\) 2 times in scenario 1 and was still waiting "
                             r"for process 0, which had finished and left"):
        multiprocess_harness._launch_worker("", _answer, [((2, 2), 1)], 1)
    # Neither finished: each is said to wait where it was, for the other
    # where it was (one gone on to scenario 2's collectives, one behind).
    started = "scenario {}: started by process {}\n"
    apart = [started.format(1, 0) + steps(0, 2),
             started.format(1, 1) + steps(1, 2) + started.format(2, 1)]
    monkeypatch.setattr(multiprocess_harness, "launcher",
                        lambda: (_timed_out_launch(apart), "a stand-in"))
    with pytest.raises(multiprocess_harness.ProcessesOutOfStepError) as raised:
        multiprocess_harness._launch_worker("", _answer, [((2, 2), 1)], 1)
    said = str(raised.value)
    assert ("process 0 called step() 2 times in scenario 1 and was still waiting "
            "at step() call 2 of scenario 1 for process 1 at the start of "
            "scenario 2") in said, said
    assert ("process 1 called step() 2 times in scenario 1 and was still waiting "
            "at the start of scenario 2 for process 0 at step() call 2 of "
            "scenario 1") in said, said


def test_job_ending_rejects_any_traceback_read_as_a_raise() -> None:
    # Issue #66: at the shutdown barrier, a partner's JaxRuntimeError (its
    # all-reduce failed as the others aborted, under the hook) is no raise.
    def any_traceback(log, sacct):
        ending, fix = multiprocess.job_ending(log, sacct)
        if ending == "shutdown barrier":
            return ending, ("exit at once on an exception" if "Traceback" in log
                            else "agree on the number of steps")
        return ending, fix

    result = check("multiprocess.job_ending", any_traceback)
    assert not result.passed
    assert "job_log(1013)" in failures(result)
    assert "is a task whose partner was aborting, not a raise" in failures(result)


def test_job_ending_names_the_heartbeat_timeout_read_from_its_words() -> None:
    # Under the hook nobody waits at the barrier: no "Task N heartbeat timeout".
    def words(log, sacct):
        if "heartbeat timeout" not in log and "stopped sending heartbeats" in log:
            return "kill-on-bad-exit", "fix the failing task"
        return multiprocess.job_ending(log, sacct)

    result = check("multiprocess.job_ending", words)
    assert not result.passed
    assert "only lists the tasks that 'stopped sending heartbeats'" in failures(result)

