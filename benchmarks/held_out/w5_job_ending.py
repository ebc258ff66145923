"""Held-out answers written from the exercise text alone (chapter 8's exercise 8, job_ending), writer W5.

Written as a learner would write them, after commit 260ae7a changed the exercise's job
logs to what real runs print: from the text of exercise 8 and the code cells around it
in the student notebook (exercises/08_multiprocess_exercises.ipynb), chapter 8
(book/08_multiprocess.ipynb), and what the names that notebook imports print on small
inputs (job_log(n) and sacct_line(n) of a few thousand jobs, read, and the docstrings of
exercise_kit.multiprocess_logs). No checker, hint, reference solution, named mistake,
stored output, test or other benchmark was read or run; every wrong answer is a mistake
a reader of those texts could make, and both right answers were reasoned from them.
These replace writer W4's job_ending answers, which were written against the old logs.
"""
from __future__ import annotations

import re

# ruff: noqa: E501  (each docstring is one line naming the mistake)

# --------------------------------------------------------------------------------
# multiprocess.job_ending
# --------------------------------------------------------------------------------

_SLURM_STATES = {
    "TIMEOUT": ("time limit", "save, then resubmit with --dependency=afterany"),
    "PREEMPTED": ("preemption", "save, and submit with --requeue"),
    "OUT_OF_MEMORY": ("out of memory", "ask for more memory"),
}


def _state(sacct):
    """The State column of a `sacct -c --format=JobName,Partition,State,ExitCode` line."""
    return sacct.split()[-2]


def _own_error(log):
    """Whether a task printed a traceback of its own error (not a collective's JaxRuntimeError)."""
    for line in log.splitlines():
        found = re.match(r"^\d+: ([A-Za-z_][\w.]*(?:Error|Exception)): ", line)
        if found and not found.group(1).endswith("JaxRuntimeError"):
            return True
    return False


def _barrier_fix(log):
    """The shutdown barrier's fix: a process raised, or one finished early."""
    if _own_error(log):
        return "exit at once on an exception"
    return "agree on the number of steps"


def job_ending__exit_code_alone(log, sacct):
    """Reads a FAILED job's ending from its exit code alone: 137 (SIGKILL) as srun's kill, 134 (SIGABRT) as the shutdown barrier, so heartbeat timeouts are missed."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    code = sacct.split()[-1].partition(":")[0]
    if code == "137":
        return "kill-on-bad-exit", "fix the failing task"
    return "shutdown barrier", _barrier_fix(log)


def job_ending__task_heartbeat_words_only(log, sacct):
    """Knows a heartbeat timeout only by the chapter's 'Task N heartbeat timeout', so a hooked job whose coordinator lists tasks that stopped sending heartbeats reads as srun's kill."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if re.search(r"Task \d+ heartbeat timeout", log):
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__barrier_before_heartbeat(log, sacct):
    """Checks for 'Shutdown barrier has failed' before the heartbeats, so a heartbeat timeout that failed the barrier reads as the barrier's own timeout."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__any_traceback_is_raise(log, sacct):
    """At a failed shutdown barrier takes any traceback for a process that raised, even a partner's JaxRuntimeError from the all-reduce."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__exit_code_1_is_kill_on_bad_exit(log, sacct):
    """Takes srun's 'Exited with exit code 1' for --kill-on-bad-exit's ending, though without the option srun only reports the exit and leaves the others waiting."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if re.search(r"^srun: error: .*: Exited with exit code [1-9]", log, re.M):
        return "kill-on-bad-exit", "fix the failing task"
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    return "shutdown barrier", _barrier_fix(log)


def job_ending__killed_before_sacct(log, sacct):
    """Reads srun's 'Killed' as --kill-on-bad-exit's SIGKILL before looking at the sacct state, so time limits, preemptions and OOM jobs whose tasks were killed read as srun's kill."""
    if re.search(r"^srun: error: .*: Killed$", log, re.M):
        return "kill-on-bad-exit", "fix the failing task"
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__sigterm_is_preemption(log, sacct):
    """Reads JAX's 'SIGTERM caught' (its preemption notifier) as a preemption, so srun's SIGTERM under --kill-on-bad-exit, and an OOM job's, reads as one."""
    if _state(sacct) == "TIMEOUT":
        return _SLURM_STATES["TIMEOUT"]
    if "SIGTERM caught" in log or _state(sacct) == "PREEMPTED":
        return _SLURM_STATES["PREEMPTED"]
    if _state(sacct) == "OUT_OF_MEMORY":
        return _SLURM_STATES["OUT_OF_MEMORY"]
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__heartbeat_fix_is_fix_task(log, sacct):
    """Reads every ending right but gives a heartbeat timeout the fix for why the task vanished, 'fix the failing task', instead of adding --kill-on-bad-exit=1."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "fix the failing task"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__barrier_always_last_batch(log, sacct):
    """Gives every shutdown barrier the last-batch fix, 'agree on the number of steps', even when a process raised."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__slurm_fixes_swapped(log, sacct):
    """Swaps the two Slurm fixes: --requeue for a time limit, a follow-up job with --dependency=afterany for a preemption."""
    state = _state(sacct)
    if state == "TIMEOUT":
        return "time limit", "save, and submit with --requeue"
    if state == "PREEMPTED":
        return "preemption", "save, then resubmit with --dependency=afterany"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__log_before_sacct(log, sacct):
    """Lets the coordinator's and srun's lines in the log decide before the sacct state, so a job whose task the OOM killer ended reads as a heartbeat timeout or a barrier."""
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", _barrier_fix(log)
    if "_step_signal: Terminating" in log:
        return "kill-on-bad-exit", "fix the failing task"
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__right_sacct_then_coordinator(log, sacct):
    """Right: the sacct state names a time limit, a preemption or memory; a FAILED job's log then decides: tasks that stopped sending heartbeats, else a failed shutdown barrier (raised if a task's own error, not a JaxRuntimeError, was printed), else srun's kill."""
    state = _state(sacct)
    if state in _SLURM_STATES:
        return _SLURM_STATES[state]
    if "stopped sending heartbeats" in log or re.search(r"Task \d+ heartbeat timeout", log):
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if re.search(r"Shutdown barrier (in coordination service )?has failed", log):
        return "shutdown barrier", _barrier_fix(log)
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__right_by_task(log, sacct):
    """Right: reads the sacct columns, then each task's lines: the coordinator's unhealthy list means a heartbeat timeout; a barrier that timed out means a raise if some task's traceback ends in its own error, else an early finish; otherwise srun ended the step."""
    _name, _partition, state, _code = sacct.split()
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    unhealthy = barrier = False
    last_error = {}  # task -> the exception its last traceback ended in
    in_traceback = set()
    for line in log.splitlines():
        tagged = re.match(r"^(\d+): (.*)$", line)
        text = tagged.group(2) if tagged else line
        if "unhealthy (stopped sending heartbeats)" in text or re.search(r"\bTask \d+ heartbeat timeout\b", text):
            unhealthy = True
        if "Barrier timed out" in text or "Shutdown barrier has failed" in text:
            barrier = True
        if not tagged:
            continue
        task = int(tagged.group(1))
        if text.startswith("Traceback (most recent call last):"):
            in_traceback.add(task)
        elif task in in_traceback and not text.startswith(" "):
            in_traceback.discard(task)
            last_error[task] = text.split(":", 1)[0]
    if unhealthy:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if barrier:
        raised = any(error != "jax.errors.JaxRuntimeError" for error in last_error.values())
        return "shutdown barrier", ("exit at once on an exception" if raised
                                    else "agree on the number of steps")
    return "kill-on-bad-exit", "fix the failing task"


# --------------------------------------------------------------------------------
# the rows
# --------------------------------------------------------------------------------

_TOPICS = {
    "job_ending": "multiprocess",
}


def _rows(*functions):
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        rows.append((f"{_TOPICS[exercise]}.{exercise}", function,
                     function.__doc__.strip().rstrip(".")))
    return rows


_ALL = [value for name, value in dict(globals()).items()
        if callable(value) and "__" in name and not name.startswith("_")]
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])  # the wrong ones
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])  # the right ones
