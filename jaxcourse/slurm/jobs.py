"""Jobs on the course's Slurm cluster: submit, wait, read their state and output.

:func:`submit` hands a batch script to ``sbatch``, :func:`wait` waits for
every task of it with a time limit (and cancels it after), :func:`job_state`
and :func:`job_states` read ``scontrol show job``. The rest serve chapter 8's
cells and the grader: a job's ``srun --label`` output per task
(:func:`job_output`), srun's lines about failed tasks (:func:`srun_errors`),
one line of a job's fields (:func:`describe`), any Slurm command's answer
(:func:`command`, :func:`sacct`), and the finished jobs of the completion
log, an array one row per task (:func:`finished_jobs`, :func:`sacct_table`).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import time
from collections.abc import Callable, Sequence
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
    "SACCT_FIELDS",
    "JobState",
    "cancel",
    "command",
    "describe",
    "finished_jobs",
    "job_output",
    "job_state",
    "job_states",
    "sacct",
    "sacct_table",
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
#: The columns of :func:`sacct_table`: fields that ``sacct --helpformat``
#: lists in Slurm 22.05, with their meaning there. An array task's ``JobID``
#: is ``<array>_<task>`` and its ``JobIDRaw`` its own number; sacct has no
#: ``ArrayJobId`` or ``ArrayTaskId`` field (those are scontrol's and squeue's,
#: ``%F`` and ``%K``).
SACCT_FIELDS = ("JobID", "JobIDRaw", "JobName", "State", "ExitCode", "Elapsed",
                "NodeList")
_FIELD = re.compile(r"(\w+)=(\S*)")


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


def wait(job_id: str, timeout: float = 120.0, poll: float = 0.5,
         each_poll: Callable[[], None] | None = None) -> list[JobState]:
    """Wait until every task of job ``job_id`` has ended; return their states.

    ``each_poll``, when given, is called between two looks at the job (the
    grader reports the rows its tasks have written so far).

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
        if each_poll is not None:
            each_poll()
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
    lines = Path(path).read_text(errors="replace").splitlines()
    parts = [part for line in lines for part in splitter.feed(line)] + splitter.flush()
    for rank, stream, text in parts:
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
    """Return ``sacct -c`` (the job completion log) for one job, in columns ``fmt``.

    For a job that is not an array: ``sacct -c`` matches ``job_id`` with the
    number of each job in the log, and knows no array (its tasks have numbers
    of their own, and it calls their ``ArrayJobId`` an "Unknown type"). An
    array's tasks: :func:`finished_jobs`.
    """
    result = _run(["sacct", "-c", "-j", str(job_id), f"--format={fmt}"])
    return (result.stdout or result.stderr).rstrip()


def _elapsed(start: str, end: str) -> str:
    """``EndTime - StartTime`` as sacct writes it: ``[D-]HH:MM:SS``."""
    try:
        seconds = int((datetime.datetime.fromisoformat(end)
                       - datetime.datetime.fromisoformat(start)).total_seconds())
    except ValueError:  # "Unknown": cancelled before it started
        seconds = 0
    days, rest = divmod(max(seconds, 0), 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def finished_jobs(job_ids: Sequence[str] = (),
                  log: str | os.PathLike[str] | None = None) -> list[dict[str, str]]:
    """Return the finished jobs of the completion log, an array one row per task.

    What ``sacct -c`` reads (the course's cluster keeps no accounting
    database), read here because ``sacct -c`` knows no array: ``sacct -c -j
    82`` shows only the task whose own number is 82, and an error line for
    every ``ArrayJobId`` in the log.

    Parameters
    ----------
    job_ids : sequence of str
        Jobs (``82``: every task of array 82, or the job or task whose own
        number is 82) or array tasks (``82_1``); empty: every job. When the
        log holds several submissions under one number (the cluster was
        started afresh), the latest one.
    log : path-like, optional
        The completion log; by default the course's cluster's.

    Returns
    -------
    list of dict
        One row per job or array task, by :data:`SACCT_FIELDS` (sacct's
        names), in the order of the log, each array's tasks by task number.
    """
    path = Path(log) if log is not None else cluster().jobs_log
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        fields = dict(_FIELD.findall(line))
        if "JobId" not in fields:
            continue
        task = fields.get("ArrayTaskId", "")
        array = fields.get("ArrayJobId", "")
        rows.append({
            "JobID": f"{array}_{task}" if task and array else fields["JobId"],
            "JobIDRaw": fields["JobId"],
            "JobName": fields.get("Name", ""),
            "State": fields.get("JobState", ""),
            "ExitCode": fields.get("ExitCode", ""),
            "Elapsed": _elapsed(fields.get("StartTime", ""), fields.get("EndTime", "")),
            "NodeList": fields.get("NodeList", ""),
            # Not columns: what groups and orders an array's tasks.
            "_array": array or fields["JobId"],
            "_task": task,
            "_submitted": fields.get("SubmitTime", ""),
        })
    if job_ids:
        wanted = set()
        for job_id in map(str, job_ids):
            matches = [r for r in rows
                       if job_id in (r["JobID"], r["JobIDRaw"], r["_array"])]
            if matches:
                latest = matches[-1]["_submitted"]
                wanted.update(id(r) for r in matches if r["_submitted"] == latest)
        rows = [r for r in rows if id(r) in wanted]
    order = {}
    for row in rows:
        order.setdefault(row["_array"], len(order))
    rows.sort(key=lambda r: (order[r["_array"]],
                             int(r["_task"]) if r["_task"].isdigit() else -1))
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


def sacct_table(rows: Sequence[dict[str, str]],
                fields: Sequence[str] = SACCT_FIELDS) -> str:
    """Lay out :func:`finished_jobs`' rows as sacct does: a header, a rule, columns."""
    widths = [max([len(f), *(len(r.get(f, "")) for r in rows)]) for f in fields]
    lines = [[f for f in fields], ["-" * w for w in widths],
             *([r.get(f, "") for f in fields] for r in rows)]
    return "\n".join(" ".join(v.ljust(w) for v, w in zip(line, widths, strict=True))
                     .rstrip() for line in lines)
