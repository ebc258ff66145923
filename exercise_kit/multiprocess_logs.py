"""Job logs and ``sacct`` lines for chapter 8's exercise 8, ``job_ending``.

Each job here is one of the endings chapter 8 shows, written the way JAX
0.10.2 and Slurm print them (the messages are those of the chapter's own
jobs: ``early_exit.sbatch``, ``endings.sbatch``, ``time_limit.sbatch`` and
the preempted ``checkpointed.sbatch``), with the details that change from
job to job drawn at random: the job's number and name, the node, how many
tasks, which task failed and how, the program's own error, the steps logged,
the times, the order in which srun groups the tasks.

Who else fails when a task dies was measured (2026-12-07, jax 0.10.2) with
the chapter's ``ending.py``, under the course's launcher and under ``srun``
on the course's cluster, in 2 to 4 processes of 1, 2 or 4 devices: the
tasks whose Gloo all-reduce then fails ("Connection closed by peer") are
its two neighbours in the ring with one device a process, and the next task
alone (none after the last) with more (:meth:`_Job.partners`). Without a
hook such a partner raises and waits at the shutdown barrier; under the
course's hook it exits at once with code 1, so the coordinator lists it
with the dying task as unhealthy, and no task waits at the barrier. With
one device a process and the hook, every task's all-reduce fails in turn
and every task exits at once, task 0 too: no job of the hooked kinds has
one device a process. And when a shutdown barrier fails, a task whose
partner is aborting may see its own all-reduce fail first; under the hook
it then exits with code 1 instead of aborting (seen with one device a
process, in 4 of 6 runs).

:func:`job_log` and :func:`sacct_line` give job ``job_id``'s log and its line
of ``sacct -c --format=JobName,Partition,State,ExitCode``; both depend on
``job_id`` alone, so that a case a check names (``job_ending(job_log(4127),
sacct_line(4127))``) can be pasted and read. The ending of job ``job_id`` is
:data:`KINDS` ``[job_id % len(KINDS)]``, so that consecutive jobs cover every
kind.
"""

from __future__ import annotations

import datetime
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxcourse.exercises.checking.observation import Choice, choice

__all__ = ["ENDINGS", "FIXES", "KINDS", "ending_choice", "job_calls", "job_log",
           "sacct_line"]

#: What ended a job, as ``job_ending`` names it.
ENDINGS = ("kill-on-bad-exit", "heartbeat timeout", "shutdown barrier",
           "time limit", "preemption", "out of memory")

#: The change chapter 8 recommends after each ending.
FIXES = ("fix the failing task", "add --kill-on-bad-exit=1",
         "exit at once on an exception", "agree on the number of steps",
         "save, then resubmit with --dependency=afterany",
         "save, and submit with --requeue", "ask for more memory")

#: The kinds of job: (what happened, its ending, its fix).
KINDS = (
    ("raise under the hook and --kill-on-bad-exit", "kill-on-bad-exit",
     "fix the failing task"),
    ("crash under --kill-on-bad-exit", "kill-on-bad-exit", "fix the failing task"),
    ("crash", "heartbeat timeout", "add --kill-on-bad-exit=1"),
    ("raise under the hook", "heartbeat timeout", "add --kill-on-bad-exit=1"),
    ("raise", "shutdown barrier", "exit at once on an exception"),
    ("finish early", "shutdown barrier", "agree on the number of steps"),
    ("time limit", "time limit", "save, then resubmit with --dependency=afterany"),
    ("preemption", "preemption", "save, and submit with --requeue"),
    ("out of memory", "out of memory", "ask for more memory"),
)

#: The kinds whose script runs under the course's exception hook (every task
#: exits at once, with code 1, on an uncaught exception).
_HOOKED = ("raise under the hook and --kill-on-bad-exit", "raise under the hook")
#: The kinds whose failing task is gone, with an error, before the job ends.
_DYING = ("raise under the hook and --kill-on-bad-exit",
          "crash under --kill-on-bad-exit", "crash", "raise under the hook",
          "out of memory")
#: How many timed-out tasks JAX 0.10.2's coordinator names when a barrier
#: times out ("Some timed out task names:"): two, as its log of 3 missing
#: tasks out of 4 shows (chapter 8's endings.sbatch).
_NAMED_LATE_TASKS = 2

_NAMES = ("train", "train-mlp", "sweep-lr", "finetune", "train-ckpt", "pretrain",
          "eval-large", "dp-step")
_PARTITIONS = ("course", "gpu", "batch", "short")
_ERRORS = (
    ("RuntimeError", "no data left in shard {k}"),
    ("ValueError", "batch of {n} rows cannot be split over {d} devices"),
    ("FileNotFoundError",
     "[Errno 2] No such file or directory: 'data/shard-{k:05d}.npz'"),
    ("KeyError", "'labels'"),
    ("AssertionError", "loss is nan at step {s}"),
)
_GLOO_FAILURES = ("Read error [{ip}]:{port}: Connection reset by peer",
                  "Connection closed by peer [{ip}]:{port}")


class _Job:
    """One job's random details, from a generator seeded with its number."""

    def __init__(self, job_id: int) -> None:
        rng = np.random.default_rng([7, job_id])
        self.rng = rng
        self.id = job_id
        self.kind, self.ending, self.fix = KINDS[job_id % len(KINDS)]
        self.name = str(rng.choice(_NAMES))
        self.partition = str(rng.choice(_PARTITIONS))
        self.node = f"node{int(rng.integers(1, 33))}"
        self.tasks = int(rng.choice([2, 4, 4, 8]))
        self.failing = int(rng.integers(0, self.tasks))
        if self.failing == 0 and self.kind in _DYING:
            # Process 0 holds the coordinator: its death ends the others at
            # once (their next poll of the coordinator fails, "Socket closed"),
            # with no heartbeat timeout, no SIGTERM and no SIGKILL to wait for.
            self.failing = self.tasks - 1
        self.devices = int(rng.choice([1, 2, 4]))
        if self.devices == 1 and self.kind in _HOOKED:
            # One device a process: every all-reduce fails in turn, every
            # task exits under the hook, task 0 too (see the module's notes).
            self.devices = 2
        self.step = int(rng.integers(3, 400))
        month, day, hour, minute, second = (int(v) for v in rng.integers(
            [1, 1, 0, 0, 0], [13, 29, 24, 60, 60]))
        self.clock = datetime.datetime(2026, month, day, hour, minute, second)
        self.thread = int(rng.integers(1000, 99999))
        self.exits: list[int] = []  # tasks that exited as a barrier failed
        self.ip = ".".join(str(int(v)) for v in rng.integers([10, 0, 0, 2],
                                                            [11, 256, 256, 255]))

    # ---- pieces ----------------------------------------------------------
    def later(self, seconds: float) -> datetime.datetime:
        self.clock += datetime.timedelta(seconds=seconds)
        return self.clock

    def glog(self, task: int, level: str, where: str, text: str) -> str:
        """Write a line of JAX's C++ log (absl): level, date, time, thread, source."""
        at = self.later(float(self.rng.uniform(0.0001, 0.002)))
        # One thread per source file (the coordinator, its agent's poller,
        # the preemption notifier...), numbered apart in every process.
        thread = self.thread + 100 * task + zlib.crc32(where.encode()) % 97
        return (f"{task}: {level}{at:%m%d %H:%M:%S}.{at.microsecond:06d} "
                f"{thread:>7} {where}] {text}")

    def start(self) -> list[str]:
        peers = self.tasks * self.devices - 1
        lines = [f"{t}: [Gloo] Rank {t * self.devices + d} is connected to {peers} "
                 f"peer ranks. Expected number of connected peer ranks is : {peers}"
                 for t in self.rng.permutation(self.tasks)
                 for d in range(self.devices)]
        loss = float(self.rng.uniform(1.5, 2.4))
        first = max(1, self.step - int(self.rng.integers(2, 6)))
        for step in range(first, self.step):
            loss *= float(self.rng.uniform(0.97, 0.999))
            lines.append(f"0: step {step}, loss {loss:.6f}")
        return lines

    def others(self) -> list[int]:
        return [t for t in range(self.tasks) if t != self.failing]

    def partners(self) -> list[int]:
        """Return the tasks whose all-reduce fails when the failing task dies.

        As measured (the module's notes): the two neighbours in Gloo's ring
        with one device a process; with more, the next task alone.
        """
        k, n = self.failing, self.tasks
        if self.devices == 1:
            return sorted({(k - 1) % n, (k + 1) % n} - {k})
        return [k + 1] if k + 1 < n else []

    def groups(self, tasks: list[int]) -> list[list[int]]:
        """Tasks as srun groups them in its lines: by when they ended, at random."""
        tasks = [int(t) for t in self.rng.permutation(tasks)]
        cut = int(self.rng.integers(1, len(tasks) + 1))
        return [sorted(part) for part in (tasks[:cut], tasks[cut:]) if part]

    def srun(self, tasks: list[int], said: str) -> str:
        return f"srun: error: {self.node}: {_task_list(tasks)}: {said}"

    def traceback(self, task: int) -> list[str]:
        """Write the program's own error, as Python prints it."""
        kind, text = _ERRORS[int(self.rng.integers(len(_ERRORS)))]
        text = text.format(k=task, n=int(self.rng.integers(3, 999)),
                           d=self.tasks * 2, s=self.step)
        line = int(self.rng.integers(20, 140))
        return [f"{task}: Traceback (most recent call last):",
                f'{task}:   File "/home/user/project/train.py", line {line}, '
                "in <module>",
                f"{task}:     params, loss = train_step(params, *next_batch())",
                f"{task}: {kind}: {text}"]

    def gloo_traceback(self, task: int) -> list[str]:
        """Write a waiting process's error: its partner left a collective."""
        failure = str(self.rng.choice(_GLOO_FAILURES)).format(
            ip=self.ip, port=int(self.rng.integers(1024, 65535)))
        return [f"{task}: Traceback (most recent call last):",
                f'{task}:   File "/home/user/project/train.py", line '
                f"{int(self.rng.integers(20, 140))}, in <module>",
                f'{task}:     print(f"step {{step}}, loss {{float(loss):.6f}}")',
                f"{task}: jax.errors.JaxRuntimeError: UNKNOWN: Gloo all-reduce "
                "failed: [external/gloo/gloo/transport/tcp/pair.cc:"
                f"{int(self.rng.choice([538, 547]))}] {failure}"]

    def cancelled(self, what: str, reason: str = "") -> str:
        at = self.later(float(self.rng.uniform(0.0, 1.0)))
        due = f" DUE TO {reason}" if reason else ""
        return (f"slurmstepd-{self.node}: error: *** {what} ON {self.node} "
                f"CANCELLED AT {at:%Y-%m-%dT%H:%M:%S}{due} ***")

    def sigterm(self, tasks: list[int]) -> list[str]:
        lines = []
        for t in self.rng.permutation(tasks):
            at = self.later(float(self.rng.uniform(0.0001, 0.01)))
            lines.append(self.glog(int(t), "W", "preemption_notifier.cc:90",
                                   f"SIGTERM caught at {at:%Y-%m-%dT%H:%M:%S}."
                                   f"{at.microsecond:06d}000+00:00"))
        return lines

    def barrier(self, cause: str, race: bool = False) -> list[str]:
        """Write the coordination service's failed shutdown barrier, and the end.

        With ``race``, one or two of the tasks still in their collective do
        not abort: their all-reduce failed first, as an aborting partner
        closed its connections, and they exited under the hook with a Gloo
        traceback (:attr:`exits`, written here after the others' ends).
        """
        key = int(self.rng.integers(10**18, 10**19 - 1, dtype=np.uint64))
        # At the barrier: the failing task and, after an early finish, maybe
        # others that finished early too; the coordinator names up to two of
        # the rest, in its own (hash) order.
        reached = (int(self.rng.integers(1, self.tasks))
                   if self.kind == "finish early" else 1)
        late = [int(t) for t in
                self.rng.permutation(self.others())[:self.tasks - reached]]
        waiting = late[:_NAMED_LATE_TASKS]
        self.exits = late[:1 + int(self.rng.random() < 1 / 3)] if race else []
        lines = [self.glog(0, "E", "coordination_service.cc:1520",
                           f"[{key}] Shutdown barrier in coordination service has "
                           "failed:")]
        if cause == "heartbeat":
            lines.append(f"0: INTERNAL: Barrier failed because: task is set to "
                         f"ERROR: UNAVAILABLE: Task {self.failing} heartbeat timeout. "
                         "This indicates that the remote task has failed, got "
                         "preempted, or crashed unexpectedly. Check the task logs for "
                         "an earlier error or scheduler events (e.g. preemption, "
                         "eviction) to debug further.")
        else:
            lines += [f"0: DEADLINE_EXCEEDED: Barrier timed out. Id: "
                      f"Shutdown::{key}::0. This usually happens because a task "
                      "triggered the barrier too early or too slowly. Please look at "
                      "the task logs (both timed out and first task) to debug further.",
                      f"0: # of tasks that reached the barrier: "
                      f"{reached}/{self.tasks}.",
                      f"0: The first task at the barrier: {self.failing}. Some timed "
                      "out task names:", *(f"0: {t}" for t in waiting)]
        lines.append(self.glog(0, "E", "coordination_service.cc:1549",
                               f"[{key}] Use error polling to propagate the following "
                               "error to all tasks: INTERNAL: Shutdown barrier has "
                               "failed."))
        if cause == "heartbeat":
            lines += self.unhealthy([self.failing], key)
        alive = self.others() if cause == "heartbeat" else list(range(self.tasks))
        lines += self.aborting([t for t in alive if t not in self.exits])
        for t in self.exits:
            lines += self.gloo_traceback(t)
        return lines

    def unhealthy(self, dead: list[int], key: int | None = None) -> list[str]:
        """Write the coordinator's list of the tasks whose heartbeats stopped."""
        if key is None:
            key = int(self.rng.integers(10**18, 10**19 - 1, dtype=np.uint64))
        return [self.glog(0, "E", "coordination_service.cc:1549",
                          f"[{key}] Use error polling to propagate the following "
                          "error to all tasks: UNAVAILABLE: The following tasks "
                          "are unhealthy (stopped sending heartbeats):"),
                *(f"0: {t}" for t in self.rng.permutation(dead)),
                "0: The tasks have crashed. Check the task logs for an earlier "
                "error, or scheduler events (e.g. preemption, eviction) to "
                "debug further."]

    def aborting(self, tasks: list[int]) -> list[str]:
        """Write each task's end when the coordinator's error reaches it."""
        lines = []
        for t in self.rng.permutation(tasks):
            t = int(t)
            lines += [self.glog(t, "E", "coordination_service_agent.cc:289",
                                "Polled an error from coordination service (this can "
                                "be an error from this or another task)."),
                      self.glog(t, "F", "client.h:80",
                                "Terminating process because the JAX distributed "
                                "service detected fatal errors. This most likely "
                                "indicates that another task died; see the other task "
                                "logs for more details."),
                      f"{t}: *** Check failure stack trace: ***"]
        return lines

    # ---- the kinds ---------------------------------------------------------
    def log(self) -> str:
        lines = self.start()
        k, others, partners = self.failing, self.others(), self.partners()
        hooked = self.kind in _HOOKED
        if hooked:
            lines += self.traceback(k)
        if self.kind in ("crash under --kill-on-bad-exit", "crash") or hooked:
            # The partners' all-reduce fails at once. Under the hook they exit
            # with code 1 too; without it they wait at the shutdown barrier.
            for p in partners:
                lines += self.gloo_traceback(p)
        dead = [k, *partners] if hooked else [k]
        alive = [t for t in range(self.tasks) if t not in dead]
        if self.kind.endswith("--kill-on-bad-exit"):
            # srun's SIGTERM: JAX's preemption notifier logs it in the tasks
            # still in their collective, not in one at the shutdown barrier.
            waiting = [t for t in alive if t not in partners]
            lines += [*(self.srun(g, "Exited with exit code 1")
                        for g in self.groups(dead)),
                      "srun: launch/slurm: _step_signal: Terminating "
                      f"StepId={self.id}.0",
                      f"0: {self.cancelled(f'STEP {self.id}.0')}",
                      *self.sigterm(waiting),
                      *(self.srun(g, "Killed") for g in self.groups(alive)),
                      f"srun: Force Terminated StepId={self.id}.0"]
        elif self.kind in ("crash", "raise under the hook"):
            lines += [*(self.srun(g, "Exited with exit code 1")
                        for g in self.groups(dead)),
                      *self.heartbeat_ending(dead, alive),
                      *(self.srun(g, "Aborted") for g in self.groups(alive))]
        elif self.kind in ("raise", "finish early"):
            # Process k is alive, at the shutdown barrier, and so are its
            # connections: the others wait in the collective with no error of
            # their own (no partner has left it) until the barrier fails.
            if self.kind == "raise":
                lines += self.traceback(k)
            else:
                lines.append(f"{k}: process {k}: done after {self.step - 1} batches")
            # The barrier fails, and as the tasks abort, a partner's all-reduce
            # may fail before the coordinator's error reaches it: under the
            # hook that task exits with code 1 (seen with one device a task).
            race = (self.kind == "finish early" and self.devices == 1
                    and self.rng.random() < 0.5)
            lines += self.barrier("barrier", race=race)
            exits = self.exits
            aborted = [t for t in range(self.tasks) if t not in exits]
            lines += [self.srun(g, "Aborted") for g in self.groups(aborted)]
            if exits:
                lines += [self.srun(g, "Exited with exit code 1")
                          for g in self.groups(exits)]
        elif self.kind in ("time limit", "preemption"):
            reason = "TIME LIMIT" if self.kind == "time limit" else "PREEMPTION"
            lines += [self.cancelled(f"JOB {self.id}", reason),
                      f"0: {self.cancelled(f'STEP {self.id}.0', reason)}",
                      *self.sigterm(list(range(self.tasks)))]
            if self.rng.random() < 0.5:  # saved at the notice
                lines.append(f"0: preemption notice after step {self.step}: "
                             f"save({self.step}) returned True")
            else:  # no save point: SIGKILL KillWait later
                every = list(range(self.tasks))
                lines += [self.srun(g, "Killed") for g in self.groups(every)]
        else:  # out of memory
            lines += [f"slurmstepd-{self.node}: error: Detected 1 oom_kill event in "
                      f"StepId={self.id}.0. Some of the step tasks have been OOM "
                      "Killed.",
                      self.srun([k], "Out Of Memory")]
            if self.rng.random() < 0.5:
                lines += [self.srun([k], "Exited with exit code 1")]
            # The partners' all-reduce fails; the others still wait for task
            # k: srun ends them (under --kill-on-bad-exit), or the coordinator
            # misses k's heartbeats.
            for p in partners:
                lines += self.gloo_traceback(p)
            if self.rng.random() < 0.5:
                waiting = [t for t in others if t not in partners]
                lines += [f"0: {self.cancelled(f'STEP {self.id}.0')}",
                          *self.sigterm(waiting),
                          *(self.srun(g, "Killed") for g in self.groups(others))]
            else:
                lines += [*self.heartbeat_ending([k], others),
                          *(self.srun(g, "Aborted") for g in self.groups(others))]
        return "\n".join(lines) + "\n"

    def heartbeat_ending(self, dead: list[int], alive: list[int]) -> list[str]:
        """Write the end of a job whose ``dead`` tasks stopped their heartbeats.

        A partner that raised without the hook waits at the shutdown barrier,
        which the coordinator then fails ("Task k heartbeat timeout"); with
        no task at the barrier (a hook, or no partner) it only lists the
        tasks that stopped sending heartbeats, and the others abort.
        """
        at_barrier = [p for p in self.partners() if p not in dead]
        if at_barrier:
            return self.barrier("heartbeat")
        return [*self.unhealthy(dead), *self.aborting(alive)]

    def sacct(self) -> str:
        state, code = {
            "kill-on-bad-exit": ("FAILED", "137:0"),
            "heartbeat timeout": ("FAILED", "134:0"),
            "shutdown barrier": ("FAILED", "134:0"),
            "time limit": ("TIMEOUT", "0:0"),
            "preemption": ("PREEMPTED", "0:0"),
            "out of memory": ("OUT_OF_MEMORY", "0:125"),
        }[self.ending]
        return f"{self.name:>10} {self.partition:>10} {state:>10} {code:>8} "


def _task_list(tasks: list[int]) -> str:
    """Name tasks as srun does: ``task 2``, ``tasks 0-1,3``."""
    runs: list[list[int]] = []
    for t in sorted(tasks):
        if runs and t == runs[-1][-1] + 1:
            runs[-1].append(t)
        else:
            runs.append([t])
    text = ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
    return f"task {text}" if len(tasks) == 1 else f"tasks {text}"


def job_log(job_id: int) -> str:
    """Return the output file of job ``job_id`` (``srun --label``), as text."""
    return _Job(int(job_id)).log()


def sacct_line(job_id: int) -> str:
    """Return job ``job_id``'s line of ``sacct -c``.

    Its columns: ``--format=JobName,Partition,State,ExitCode``.
    """
    return _Job(int(job_id)).sacct()


def answer(job_id: int) -> tuple[str, str]:
    """Return job ``job_id``'s ending and fix, as the generator made it."""
    job = _Job(int(job_id))
    return job.ending, job.fix


def job_calls(count: int | None = None, first: int | None = None,
              jobs: tuple[int, ...] = ()) -> Callable[[np.random.Generator], tuple]:
    """Build inputs: consecutive jobs from a random (or given) first number.

    ``count`` jobs (by default two of every kind) from ``first``, or from a
    number drawn by the case's generator, or the given ``jobs``; each
    labelled by the call that a learner can paste.
    """
    count = 2 * len(KINDS) if count is None else count

    def build(rng: np.random.Generator) -> tuple:
        start = int(rng.integers(100, 99_000)) if first is None else first
        chosen = jobs or range(start, start + count)
        return ([(f"job_ending(job_log({j}), sacct_line({j}))",
                  (job_log(j), sacct_line(j))) for j in chosen],)

    return build


def ending_choice(out: Any) -> dict[str, Choice]:
    """Extract: the answer ``(ending, fix)``, each compared by its name.

    Two entries, so that the feedback says which of the two is wrong ("entry
    'fix': expected 'add --kill-on-bad-exit=1', got ..."); a name outside
    ENDINGS or FIXES is said to be so.
    """
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ValueError(f"{out!r} is not a pair (ending, fix)")
    ending, fix = out
    return {"ending": choice(ending, ENDINGS, "ENDINGS"),
            "fix": choice(fix, FIXES, "FIXES")}
