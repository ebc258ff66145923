"""A Check leaves nothing armed: after an endless answer, the kernel works on.

A learner's answer that never ends is stopped by the Check's time limit (a
``SIGALRM`` interval timer in the main thread). Whatever stopped it, once the
Check has returned or raised: no interval timer runs, the ``SIGALRM``
handler is the one found before, JAX is not left inside a trace, no thread
and no process of the Check is left, and ordinary work afterwards (sleeps and
small jitted computations, for seconds) is not interrupted. Each endless
answer is one a learner writes, for one kind of exercise: a Python loop, a
loop while JAX traces it under ``jax.jit``, a ``tf.data`` pipeline that
``.repeat()`` s for ever, and (slow) a launched multi-process answer, in
processes started for it and in processes prepared ahead of the Check.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core as jax_core
from processes import assert_no_children_left

from jaxcourse.exercises import check, get, warm_up
from jaxcourse.exercises.checking.observe import (
    TimeLimitError,
    _TimeUp,
    call_with_time_limit,
)
from jaxcourse.load_clock import WALL_CAP, LoadClock

#: Seconds of ordinary work after the endless answers.
ORDINARY_WORK_S = 5.0


def _endless_loop(*args, **kwargs):
    # A million objects, freed in C while the interrupt unwinds: the moment a
    # second interrupt, 50 ms later, used to skip the disarming.
    garbage = [[] for _ in range(1_000_000)]
    while garbage:
        pass


def _endless_while_traced(*args, **kwargs):
    # Under jax.jit this loops while JAX traces the function.
    steps = 0
    while steps >= 0:
        steps += 1


def _endless_pipeline(dataset, batch_size):
    return list(dataset.batch(batch_size).repeat().as_numpy_iterator())


def _endless_when_launched(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    if jax.process_count() > 1:
        while True:  # only in the launched processes: a hang there
            pass
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.min(counts)))]


# exercise, endless answer, time limit (s), what the message must say.
ENDLESS = [
    ("mlp.relu", _endless_loop, 1.0, "a loop that never ends?"),
    ("bayes.sample_betas", _endless_while_traced, 1.0, "a loop that never ends?"),
]
if importlib.util.find_spec("tensorflow") is not None:
    ENDLESS.append(("mlp.tf_batches", _endless_pipeline, 2.0,
                    "a dataset that never runs out?"))


class _State:
    """What a Check must leave as it found it."""

    def __init__(self) -> None:
        self.handler = signal.getsignal(signal.SIGALRM)
        self.threads = set(threading.enumerate())

    def assert_unchanged(self, what: str) -> None:
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), what
        assert signal.getsignal(signal.SIGALRM) is self.handler, what
        assert jax_core.trace_state_clean(), what
        # A launch's pipe readers end with their processes: give them a moment.
        end = time.monotonic() + 5.0
        while set(threading.enumerate()) - self.threads and time.monotonic() < end:
            time.sleep(0.05)
        assert not set(threading.enumerate()) - self.threads, what


def _ordinary_work(state: _State) -> None:
    """Sleep and compute for ORDINARY_WORK_S seconds; nothing may interrupt it."""
    double = jax.jit(lambda x: 2 * x + 1)
    end, rounds = time.monotonic() + ORDINARY_WORK_S, 0
    while time.monotonic() < end:
        time.sleep(0.05)
        assert float(double(jnp.float32(rounds))) == 2 * rounds + 1
        rounds += 1
        state.assert_unchanged(f"during ordinary work, round {rounds}")
    assert rounds > 20


def test_endless_answers_leave_nothing_armed() -> None:
    state = _State()
    for exercise_id, answer, limit, likely in ENDLESS:
        clock = LoadClock()
        result = check(exercise_id, answer, time_limit=limit)
        first = result.messages[0]
        assert not result.passed, result.report()
        assert f"did not finish within {limit:g} s" in first, first
        assert likely in first, first
        # Cut at the limit: importing TensorFlow (outside it) and judging aside.
        # Counted as the limit counts (time spent waiting for a core while
        # other processes hold them does not count), and never past the cap.
        assert clock.elapsed() < limit + 15, (exercise_id, clock.wall())
        assert clock.wall() < WALL_CAP * limit + 15, (exercise_id, clock.wall())
        state.assert_unchanged(f"after checking {exercise_id}")
    _ordinary_work(state)


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit, BaseException,
                                    GeneratorExit])
def test_whatever_the_answer_raises_nothing_stays_armed(raised) -> None:
    state = _State()

    def answer(x):
        raise raised("from the learner's code")

    if raised is KeyboardInterrupt:  # the learner pressing stop goes through
        with pytest.raises(KeyboardInterrupt):
            check("mlp.relu", answer, time_limit=5.0)
    else:
        assert "raised" in check("mlp.relu", answer, time_limit=5.0).messages[0]
    state.assert_unchanged(f"after an answer that raised {raised.__name__}")


def test_an_interrupt_at_the_time_limit_leaves_nothing_armed() -> None:
    state = _State()

    def stopped_at_the_limit():
        try:
            while True:
                pass
        except _TimeUp:  # the learner presses stop just as time runs out
            raise KeyboardInterrupt from None

    with pytest.raises(KeyboardInterrupt):
        call_with_time_limit(stopped_at_the_limit, 0.2)
    state.assert_unchanged("after an interrupt at the time limit")


def test_a_launched_endless_answer_leaves_nothing_behind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxcourse.launch import launch

    state = _State()
    # The Check's own limit bounds the launch, which ends its processes and
    # says what each one did.
    # Counted as the limit counts: the launched processes' waits for a core
    # (on a busy machine) do not count, and never past the cap.
    clock = LoadClock()
    result = check("multiprocess.run_epoch", _endless_when_launched, time_limit=8.0)
    assert clock.elapsed() < 8.0 + 10, (clock.wall(), result.report())
    assert clock.wall() < WALL_CAP * 8.0, result.report()
    launched = result.messages[-1]
    assert "hung and were ended after" in launched, launched
    # Both ran the answer's own endless loop: neither waited for the other.
    assert "was still running (in your code" in launched, launched
    assert_no_children_left("the launched check left processes behind")
    state.assert_unchanged("after the launched check")

    # The same answer in processes prepared ahead (as a check panel does).
    monkeypatch.setenv("JAX_COURSE_WARM_UP", "1")
    (prepared,) = warm_up(get("multiprocess.run_epoch"))
    assert prepared.wait_ready(60)
    result = check("multiprocess.run_epoch", _endless_when_launched, time_limit=5.0)
    assert prepared.handed
    assert "hung and were ended after 4 s" in result.messages[-1], result.report()
    assert_no_children_left("the prepared check left processes behind")
    state.assert_unchanged("after the prepared check")

    # And when the time limit itself interrupts a launch, the launch still
    # ends every process it started.
    script = "import time\nwhile True:\n    time.sleep(0.01)\n"
    with pytest.raises(TimeLimitError):
        call_with_time_limit(
            lambda: launch([sys.executable, "-c", script], 2, 1, echo=False,
                           timeout=60),
            3.0)
    assert_no_children_left("a launch interrupted by the time limit left processes")
    state.assert_unchanged("after a launch interrupted by the time limit")
    _ordinary_work(state)


def test_the_load_clock_counts_sleeps_and_leaves_out_compiling() -> None:
    # A sleep waits for nothing but time: it counts in full, loaded or not.
    clock = LoadClock()
    time.sleep(0.3)
    assert 0.25 <= clock.elapsed() <= clock.wall()
    # A first compile is left out (up to what the caller allows), never more
    # than the wall time it took. (A constant of its own: no cache holds it.)
    clock = LoadClock()
    compiled = jax.jit(lambda x: jnp.sin(x) @ x.T + clock.wall())(jnp.ones((7, 3)))
    compiled.block_until_ready()
    work, compiling = clock.reading()
    assert 0 < compiling <= work <= clock.wall()
    assert clock.elapsed(compiling=0.0) >= clock.elapsed()


def test_a_watched_process_counts_until_it_is_no_longer_watched() -> None:
    from jaxcourse import load_clock

    asked: list[int] = []

    def pids() -> list[int]:
        asked.append(1)
        return [os.getppid()]

    stop = load_clock.watch(pids)
    try:
        LoadClock().elapsed()
        assert asked
    finally:
        stop()
    asked.clear()
    LoadClock().elapsed()
    assert not asked
