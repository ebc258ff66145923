"""How chapter 8's answers are launched as several processes would run them.

The launching harness of :mod:`solutions.multiprocess`, whose exercises name
these functions as their runners; it holds no exercise.
:func:`launch_run_epoch` and :func:`launch_global_batch` check for real: they
write the learner's function beside a worker script
(:data:`exercise_kit.multiprocess_workers.WORKER`, ``GLOBAL_WORKER``) and start
it in 2 processes with :func:`jaxcourse.launch.launch`, or with ``srun`` when
the course's Slurm cluster is up (:func:`launcher`; never in the grader's
sandbox). A process still running ``PATIENCE`` s after another finished
waits in a collective for a partner that has left: its watchdog ends it. Any
other hang is ended by the launcher's timeout, within the Check's own time
limit. Either is reported, with what each process did
(:mod:`exercise_kit.multiprocess_workers` reads the ranks' output), as a failed
test. :func:`prepare_launch` starts a case's processes ahead of its Check, so
that a launched Check only hands them the learner's function.

The same answers are checked in this one process first
(:mod:`exercise_kit.multiprocess_checks`, whose simulated processes and
one-process runners are importable from here too, as they always were);
:func:`not_relaunched` marks the known mistakes those cases already
recognise, so that checking them never costs a launch.

Every failure of the processes to stay in step is a
:class:`ProcessesOutOfStepError`, whose message the learner reads.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import tempfile
import textwrap
import tokenize
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from exercise_kit.multiprocess_checks import (
    Metrics,
    ProcessesOutOfStepError,
    SaltedName,
    every_process,
    global_values,
    in_one_process,
    local_step,
    metrics_of,
    one_device_rows,
    simulate_processes,
)
from exercise_kit.multiprocess_workers import (
    GLOBAL_WORKER,
    PATIENCE,
    WORKER,
    failure_message,
    finished_ranks,
    hang_message,
    hung,
    hung_ranks,
    rank_results,
    ranks_saying,
    uneven_steps,
)

__all__ = [
    "GLOBAL_DEVICES_PER_PROCESS", "GLOBAL_WORKER", "LAUNCHER_ENV", "LAUNCH_PROCESSES",
    "LAUNCH_TIMEOUT", "PATIENCE", "PREPARED_IDLE", "WORKER", "Metrics",
    "ProcessesOutOfStepError", "SaltedName", "close_prepared", "every_process",
    "global_values", "in_one_process", "launch_global_batch", "launch_run_epoch",
    "launcher", "local_step", "metrics_of", "not_relaunched", "one_device_rows",
    "prepare_global_batch", "prepare_launch", "prepare_run_epoch",
    "simulate_processes",
]

#: The tests' older name of :func:`exercise_kit.multiprocess_checks.metrics_of`.
_metrics_of = metrics_of

# ---- a real launch -----------------------------------------------------------

LAUNCH_PROCESSES = 2
#: Seconds a launch may take at most; less when the Check's own time limit
#: leaves less (:func:`jaxcourse.exercises.checking.observe.time_left`).
LAUNCH_TIMEOUT = 20.0
#: Devices of each process in a launched ``global_batch`` check.
GLOBAL_DEVICES_PER_PROCESS = 2


def _source_of(function: Callable) -> str:
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        # SyntaxError and TokenError: the file changed since the function was
        # defined, so its recorded lines no longer hold it.
        raise ProcessesOutOfStepError(
            "the checker could not read your function's source code: define it "
            "with `def` in a notebook cell or a file"
        ) from None
    if function.__name__ == "<lambda>":
        raise ProcessesOutOfStepError("write the function with `def`, not lambda")
    return source


def launch_run_epoch(function: Callable, scenarios: Sequence) -> tuple:
    """Run ``function`` in 2 launched processes (1 device each) per scenario.

    Parameters
    ----------
    function : callable
        ``function(local_data, batch_size, step)``; its source is copied into
        the worker script, so it may use only its arguments and ``jax``,
        ``jnp``, ``np``, ``multihost_utils``, ``NamedSharding`` and ``P``.
    scenarios : sequence of (sizes, batch_size)
        ``sizes[r]`` records for process ``r``; run one after the other.

    Returns
    -------
    tuple
        For each process, one array of step results per scenario.

    Raises
    ------
    ProcessesOutOfStepError
        If the processes run different step counts, hang (a process left
        waiting by a partner is ended after ``PATIENCE`` s, any other hang
        after ``LAUNCH_TIMEOUT`` s at most) or one fails; the message says
        what each process did.
    """
    try:
        result = _launch_worker(WORKER, function, scenarios, devices_per_process=1)
    except ProcessesOutOfStepError as err:
        uneven = uneven_steps(err.result, len(scenarios)) \
            if err.result is not None and hung(err.result) else ""
        if not uneven:
            raise
        waiting = ", ".join(f"process {r}" for r in hung_ranks(err.result))
        raise ProcessesOutOfStepError(
            f"{uneven} ({waiting} waited for one that had left, and was stopped "
            f"after {PATIENCE:g} s)") from None
    uneven = uneven_steps(result, len(scenarios))
    if uneven:
        raise ProcessesOutOfStepError(uneven)
    return tuple(tuple(np.array(v, dtype=np.float64) for v in found)
                 for found in rank_results(result))


#: Known mistakes that the in-process cases recognise: launched, they hang or
#: fail, so naming them there too would only cost a launch (or a timeout).
#: Kept as (module, name): a learner's function of the same name is launched.
_NOT_RELAUNCHED: set[tuple[str, str]] = set()


def not_relaunched(*mistakes: Callable) -> None:
    """Mark known mistakes that the launched cases need not run.

    Parameters
    ----------
    *mistakes : callable
        Module-level functions, given as a :class:`jaxcourse.exercises.Mistake`
        of an exercise whose in-process cases already recognise them.
    """
    _NOT_RELAUNCHED.update((f.__module__, f.__name__) for f in mistakes)


#: ``course`` always launches with the course's launcher, ``slurm`` always
#: with ``srun`` (an error if the cluster is down); unset or ``auto``: ``srun``
#: when the course's Slurm cluster is up, the course's launcher otherwise.
LAUNCHER_ENV = "JAX_COURSE_CHECK_LAUNCHER"


def launcher() -> tuple[Callable, str]:
    """Choose how a Check starts its processes: ``(launch function, in words)``.

    Through ``srun`` on the course's Slurm cluster when it is up (chapter 8's
    Slurm section, ``make cluster``), otherwise with the course's launcher.
    The grader's sandbox always uses the course's launcher: a submission's
    processes stay inside the sandbox's process tree, where the grader ends
    them, and a class's grading never queues behind (or submits to) a
    cluster of its own accord. :data:`LAUNCHER_ENV` overrides the choice.

    Returns
    -------
    tuple
        The function, with :func:`jaxcourse.launch.launch`'s interface, and
        how it launches, in words.
    """
    from jaxcourse import slurm
    from jaxcourse.exercises.grading.sandbox import GUARD_ENV
    from jaxcourse.launch import launch

    course = (launch, "the course's launcher")
    chosen = os.environ.get(LAUNCHER_ENV, "auto").strip().lower() or "auto"
    if chosen not in {"auto", "course", "slurm"}:
        raise ValueError(f"{LAUNCHER_ENV} must be auto, course or slurm, "
                         f"not {chosen!r}")
    if os.environ.get(GUARD_ENV) or chosen == "course":
        return course
    # status() runs no Slurm command when Slurm is missing or no daemon is ours.
    if chosen == "auto" and not slurm.status().up:
        return course
    return slurm.launch_srun, "srun on the course's Slurm cluster"


def _scenarios_argument(scenarios: Sequence) -> str:
    return json.dumps([list(s) for s in scenarios])


#: Launches prepared ahead of a Check (:func:`prepare_launch`), by what they
#: will run: (worker script, scenarios, devices per process).
_PREPARED: dict[tuple[str, str, int], Any] = {}
#: Seconds prepared processes wait for a Check before they exit.
PREPARED_IDLE = 900.0


def prepare_launch(worker: str, scenarios: Sequence, devices_per_process: int) -> Any:
    """Start ``worker``'s processes now, to run the next Check's answer.

    The processes start JAX, meet, compile what their checks run
    (``warm_up()`` in the worker) and wait, so that a Check that comes
    later only hands them the learner's function
    (:class:`jaxcourse.launch.prepared.PreparedLaunch`): a launched Check
    then takes a fraction of a second instead of the seconds that starting
    JAX costs. Only with the course's launcher (not on the Slurm cluster, and
    never in the grader's sandbox, whose Checks launch afresh). A launch
    already prepared and still waiting is reused.

    Returns
    -------
    PreparedLaunch or None
        ``None`` where no launch is prepared.
    """
    from jaxcourse.exercises.grading.sandbox import GUARD_ENV
    from jaxcourse.launch import launch
    from jaxcourse.launch.prepared import PreparedLaunch

    if os.environ.get(GUARD_ENV) or launcher()[0] is not launch:
        return None
    key = (worker, _scenarios_argument(scenarios), devices_per_process)
    prepared = _PREPARED.get(key)
    if prepared is not None and prepared.waiting():
        return prepared
    prepared = PreparedLaunch(
        worker, LAUNCH_PROCESSES, devices_per_process,
        args=[key[1], "--prepared", "", str(PATIENCE)], idle=PREPARED_IDLE,
        job_timeout=LAUNCH_TIMEOUT)
    _PREPARED[key] = prepared
    return prepared


def _take_prepared(key: tuple[str, str, int]) -> Any:
    """Return the prepared launch for ``key`` if it still waits (and forget it)."""
    prepared = _PREPARED.pop(key, None)
    # One about to give up waiting is left to end by itself.
    return prepared if prepared is not None and prepared.will_wait(60.0) else None


@atexit.register
def close_prepared() -> None:
    """End every prepared launch still waiting (at exit, or to free the CPUs)."""
    while _PREPARED:
        _PREPARED.popitem()[1].close()


def _all_finished(result: Any) -> bool:
    """Whether every process printed its result before the launch was ended.

    On a busy machine the processes may finish the answer's work and then run
    out of the launch's time while they exit (JAX's shutdown barrier waits
    for every partner): an answer whose every process finished is judged on
    what they printed, never called hung (a right ``run_epoch`` and
    ``global_batch`` were, at a load of 8).
    """
    return result is not None and len(finished_ranks(result)) == result.num_processes


def _launch_worker(worker: str, function: Callable, scenarios: Sequence,
                   devices_per_process: int) -> Any:
    """Launch ``worker`` with the learner's ``function`` in LAUNCH_PROCESSES ranks.

    A launch prepared for the same worker and scenarios (:func:`prepare_launch`)
    runs it if one waits; otherwise the processes start now.
    """
    from jaxcourse.launch import LaunchTimeoutError, RankFailedError
    from jaxcourse.launch.prepared import TIMED_OUT

    if (getattr(function, "__module__", None),
            getattr(function, "__name__", None)) in _NOT_RELAUNCHED:
        raise ProcessesOutOfStepError("a known mistake, recognised in one process")
    from jaxcourse.exercises.checking.observe import time_left

    source = _source_of(function)
    # Within the Check's own time limit, with a second to end the processes
    # and say why: a bare "did not finish" would name no process.
    left = time_left()
    timeout = LAUNCH_TIMEOUT if left is None else max(1.0, min(LAUNCH_TIMEOUT,
                                                               left - 1.0))
    scenarios_json = _scenarios_argument(scenarios)
    prepared = _take_prepared((worker, scenarios_json, devices_per_process))
    try:
        if prepared is not None:
            return prepared.run({"answer": "answer.py", "name": function.__name__},
                                timeout, files={"answer.py": source})
        with tempfile.TemporaryDirectory(prefix="jaxcourse-check-") as folder:
            Path(folder, "worker.py").write_text(worker)
            Path(folder, "answer.py").write_text(source)
            launch, _ = launcher()
            return launch(
                "worker.py", LAUNCH_PROCESSES, devices_per_process, cwd=folder,
                echo=False, timeout=timeout, grace=0.5,
                args=[scenarios_json, "answer.py", function.__name__, str(PATIENCE)],
            )
    except LaunchTimeoutError as err:
        if _all_finished(err.result):
            return err.result
        raise ProcessesOutOfStepError(hang_message(err.result, timeout),
                                      err.result) from None
    except RankFailedError as err:
        if ranks_saying(err.result, TIMED_OUT) and _all_finished(err.result):
            return err.result
        if ranks_saying(err.result, TIMED_OUT):
            # A prepared process ran out of its job's time: the same hang.
            message = hang_message(err.result, timeout)
        elif hung(err.result):
            message = hang_message(err.result, None)
        else:
            message = failure_message(err)
        raise ProcessesOutOfStepError(message, err.result) from None


def launch_global_batch(function: Callable, scenarios: Sequence) -> tuple:
    """Run ``global_batch``-like ``function`` in 2 processes of 2 devices each.

    Parameters
    ----------
    function : callable
        ``function(local_batch, max_len, sharding)``; its source is copied
        into the worker script (see :func:`launch_run_epoch`).
    scenarios : sequence of (rows, lengths, max_len)
        Every process holds ``rows`` rows of length ``lengths[rank]``.

    Returns
    -------
    tuple
        For each process and scenario: the global shape it saw, the sum of the
        global array computed under ``jit``, and the whole array, gathered.

    Raises
    ------
    ProcessesOutOfStepError
        If the processes hang or one fails (see :func:`launch_run_epoch`).
    """
    result = _launch_worker(GLOBAL_WORKER, function, scenarios,
                            devices_per_process=GLOBAL_DEVICES_PER_PROCESS)
    return tuple(tuple((np.array(shape, dtype=np.int64), np.float64(total),
                        np.array(values, dtype=np.float64))
                       for shape, total, values in found)
                 for found in rank_results(result))


def prepare_run_epoch(scenarios: Sequence) -> Any:
    """Start a ``run_epoch`` case's processes ahead (the case's ``warm_up``)."""
    return prepare_launch(WORKER, scenarios, 1)


def prepare_global_batch(scenarios: Sequence) -> Any:
    """Start a ``global_batch`` case's processes ahead (its ``warm_up``)."""
    return prepare_launch(GLOBAL_WORKER, scenarios, GLOBAL_DEVICES_PER_PROCESS)
