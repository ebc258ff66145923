"""Jobs on the course's Slurm cluster: submit, wait, read their state and output.

:func:`submit` hands a batch script to ``sbatch``, :func:`wait` waits for
every task of it with a time limit (and cancels it after), :func:`job_state`
and :func:`job_states` read ``scontrol show job``. The rest serve chapter 7's
cells and the grader: a job's ``srun --label`` output per task
(:func:`job_output`), srun's lines about failed tasks (:func:`srun_errors`),
one line of a job's fields (:func:`describe`), and any Slurm command's
answer (:func:`command`, :func:`sacct`).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jaxcourse.launch.output import GlooFilter, SrunLines
from jaxcourse.slurm.base import (
    SlurmError,
    SlurmTimeoutError,
    SlurmUnavailableError,
    _run,
    client_env,
    cluster,
)
from jaxcourse.slurm.daemons import status

__all__ = [
    "FINAL_STATES",
    "JobState",
    "cancel",
    "command",
    "describe",
    "job_output",
    "job_state",
    "job_states",
    "sacct",
    "srun_errors",
    "submit",
    "wait",
]

# What a job can end as; any other state means it is not done yet.
FINAL_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT",
})
# srun's line about tasks that failed (``srun: error: node1: task 2: Exited
# with exit code 1``): what :func:`srun_errors` and ``launch_srun`` read.
_TASK_FAILED = re.compile(r"srun: error: \S+: tasks? ([\d,-]+): (.*)")


@dataclass
class JobState:
    """A job's state, as ``scontrol show job`` gives it."""

    job_id: str
    state: str
    exit_code: str = ""
    reason: str = ""
    nodes: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """Whether the job has ended, in any way."""
        return self.state in FINAL_STATES


def _require_cluster() -> None:
    if "SLURM_CONF" in os.environ and Path(os.environ["SLURM_CONF"]) != cluster().conf:
        return  # someone else's cluster, chosen on purpose
    now = status()
    if not now.up:
        raise SlurmUnavailableError(now.reason)


def submit(script: str | os.PathLike[str], *, args: Sequence[str] = (),
           cwd: str | os.PathLike[str] | None = None,
           options: Sequence[str] = (), timeout: float = 30.0) -> str:
    """Submit a batch script with ``sbatch``; return the job id.

    Raises
    ------
    SlurmUnavailableError
        If the course's cluster is not running.
    SlurmError
        If ``sbatch`` refused the script; the message is its own.
    """
    _require_cluster()
    result = _run(["sbatch", "--parsable", *options, os.fspath(script), *args],
                  timeout=timeout, env=_job_env(cwd))
    if result.returncode != 0:
        raise SlurmError(f"sbatch refused {os.fspath(script)!r}: "
                         f"{result.stderr.strip()}")
    return result.stdout.strip().split(";")[0]


def _job_env(cwd: str | os.PathLike[str] | None) -> dict[str, str]:
    env = client_env()
    if cwd is not None:
        env["PWD"] = os.fspath(cwd)
    return env


def job_state(job_id: str) -> JobState:
    """Return the state of job ``job_id`` (an array: of its first task)."""
    states = job_states(job_id)
    if not states:
        raise SlurmError(f"Slurm knows no job {job_id}")
    return states[0]


def job_states(job_id: str) -> list[JobState]:
    """Return the state of job ``job_id``, one entry per array task."""
    result = _run(["scontrol", "show", "job", "-o", str(job_id)])
    found = []
    for line in result.stdout.splitlines():
        fields = dict(
            item.split("=", 1) for item in line.split() if "=" in item
        )
        if "JobId" not in fields:
            continue
        task = fields.get("ArrayTaskId")
        found.append(JobState(
            job_id=f"{fields.get('ArrayJobId', fields['JobId'])}_{task}"
            if task else fields["JobId"],
            state=fields.get("JobState", "UNKNOWN"),
            exit_code=fields.get("ExitCode", ""),
            reason=fields.get("Reason", ""),
            nodes=fields.get("NodeList", ""),
            fields=fields,
        ))
    return found


def cancel(job_id: str) -> None:
    """Cancel job ``job_id`` (every task of an array); no error if it ended."""
    with contextlib.suppress(SlurmError):
        _run(["scancel", str(job_id)], timeout=10)


def wait(job_id: str, timeout: float = 120.0, poll: float = 0.5) -> list[JobState]:
    """Wait until every task of job ``job_id`` has ended; return their states.

    Raises
    ------
    SlurmTimeoutError
        After ``timeout`` seconds; the job is cancelled first, so that
        nothing of it keeps running.
    """
    deadline = time.monotonic() + timeout
    while True:
        states = job_states(job_id)
        if states and all(s.done for s in states):
            return states
        if time.monotonic() > deadline:
            cancel(job_id)
            where = ", ".join(f"{s.job_id} {s.state}" for s in states) or "unknown"
            raise SlurmTimeoutError(
                f"job {job_id} was not done after {timeout:g} s ({where}); it was "
                "cancelled")
        time.sleep(poll)


# --------------------------------------------------------------------------
# For the chapter: read a job's output and state, run any Slurm command
# --------------------------------------------------------------------------


def job_output(path: str | os.PathLike[str], num_tasks: int) -> list[list[str]]:
    """Read a job's ``srun --label`` output file: each task's lines, in order.

    Gloo's connection messages are dropped (as the launcher does); lines
    without a label (srun's own, the batch script's) are left out.
    """
    per_task: list[list[str]] = [[] for _ in range(num_tasks)]
    filters = [GlooFilter() for _ in range(num_tasks)]
    splitter = SrunLines()
    for line in Path(path).read_text(errors="replace").splitlines():
        for rank, stream, text in splitter.feed(line):
            if (stream == "stdout" and rank < num_tasks
                    and not filters[rank].is_noise(text)):
                per_task[rank].append(text)
    return per_task


def srun_errors(path: str | os.PathLike[str]) -> list[str]:
    """Return srun's error lines about tasks (``srun: error: NODE: task 2: ...``)."""
    return [line.strip() for line in Path(path).read_text(errors="replace").splitlines()
            if _TASK_FAILED.search(line)]


def describe(state: JobState, keys: Sequence[str] = (
        "JobId", "JobName", "Partition", "JobState", "ExitCode", "NodeList",
        "NumNodes", "NumTasks", "TimeLimit")) -> str:
    """``scontrol show job``'s fields ``keys``, as ``Key=value`` on one line."""
    return " ".join(f"{k}={state.fields.get(k, '')}" for k in keys)


def command(*argv: str, timeout: float = 20.0) -> str:
    """Run a Slurm command (``squeue``, ``sinfo``...) on the course's cluster.

    Returns what it printed (its error output if it failed).
    """
    result = _run(list(argv), timeout=timeout)
    return (result.stdout or result.stderr).rstrip()


def sacct(job_id: str, fmt: str = "JobName,Partition,NNodes,NodeList,State") -> str:
    """Return ``sacct -c`` (the job completion log) for one job, in columns ``fmt``."""
    result = _run(["sacct", "-c", "-j", str(job_id), f"--format={fmt}"])
    return (result.stdout or result.stderr).rstrip()
