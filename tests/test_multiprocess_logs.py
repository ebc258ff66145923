"""Every job log of chapter 8's exercise 8 is one a real run could print.

``exercise_kit.multiprocess_logs.job_log`` writes a job's output the way JAX
0.10.2 and Slurm print it, with random details. A detail drawn at random must
never make an impossible log: a dead task that goes on printing, a dead task 0
(the coordinator's host) whose death waits for a heartbeat timeout, a Gloo
connection lost while every partner is alive, a barrier with nobody at it. The
rules below are what chapter 8's own jobs (``early_exit``, ``endings``,
``time_limit``, ``checkpointed``) and runs on the course's cluster showed:

- srun reports a task dead ("Exited with exit code", "Out Of Memory") once it
  has ended: nothing that task prints comes after (slurmstepd's lines, which
  srun labels with task 0, are Slurm's own);
- a dead task 0 takes the coordinator with it: the others abort at once, on
  their next poll ("Socket closed"), so no heartbeat timeout, no SIGTERM and
  no "Killed" follow; the generator never lets task 0 die;
- "Task N heartbeat timeout" names a task that srun reported dead;
- the shutdown barrier fails only with a task at it: one that raised, one
  that finished, or one whose collective failed;
- Gloo reports a lost connection ("... by peer") only once a partner has
  died or begun to abort, and never from the dead task itself;
- under the course's exception hook (exercise 8's "raise under the hook"
  kinds), a task whose all-reduce failed exits at once, with code 1: srun
  reports it so, never "Aborted" or "Killed", it logs no SIGTERM, the
  coordinator lists it among the tasks that stopped sending heartbeats, and
  no task waits at the shutdown barrier (measured with ``ending.py`` and the
  hook, in 2 to 4 processes: exercise_kit/multiprocess_logs.py's notes);
- the tasks that JAX lists as unhealthy are those srun reported dead;
- JAX logs "SIGTERM caught" only after Slurm cancelled the step, and a task
  is "Killed" only then;
- a timed-out barrier counts the job's tasks, names only tasks that did not
  reach it, at most two of them, each once;
- every task that JAX terminated is reported "Aborted" by srun, and a step
  that failed (not ended by Slurm) ends every task with an error;
- the exercise's reference reads every log as the generator meant it.
"""

from __future__ import annotations

import re

import pytest

from exercise_kit.multiprocess_logs import KINDS, answer, job_log, sacct_line
from solutions.multiprocess import job_ending

LABEL = re.compile(r"^(\d+): ")
SRUN = re.compile(r"^srun: error: \S+: tasks? ([\d,-]+): (.*)$")
DEAD = ("Exited with exit code", "Out Of Memory")


def tasks_of(text: str) -> list[int]:
    """Expand srun's task list: ``0-1,3`` -> ``[0, 1, 3]``."""
    out = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        out += range(int(first), int(last or first) + 1)
    return out


def impossible(log: str, hooked: bool = False) -> list[str]:
    """Return what in ``log`` no real run of the chapter's jobs could print.

    ``hooked``: the job's script runs under the course's exception hook.
    """
    lines = log.splitlines()
    wrong = []
    num_tasks = 1 + max(int(m.group(1)) for line in lines if (m := LABEL.match(line)))
    dead: dict[int, int] = {}  # task -> index of the srun line that reports it dead
    said: dict[int, list[str]] = {}
    for i, line in enumerate(lines):
        if m := SRUN.match(line):
            for t in tasks_of(m.group(1)):
                said.setdefault(t, []).append(m.group(2))
                if m.group(2).startswith(DEAD):
                    dead.setdefault(t, i)
    cancelled = next((i for i, line in enumerate(lines) if "CANCELLED AT" in line),
                     len(lines))
    peers_lost = {int(m.group(1)) for line in lines
                  if (m := LABEL.match(line)) and "by peer" in line}
    aborting: dict[int, int] = {}  # task -> index of its first abort line
    for i, line in enumerate(lines):
        if (m := LABEL.match(line)) and "Check failure stack trace" in line:
            aborting.setdefault(int(m.group(1)), i)
    for i, line in enumerate(lines):
        m = LABEL.match(line)
        if not m or "slurmstepd" in line:
            continue
        t = int(m.group(1))
        if t in dead and i > dead[t]:
            wrong.append(f"task {t} prints after srun reported it dead: {line[:80]}")
        if "coordination_service.cc" in line and t != 0:
            wrong.append(f"the coordinator's lines come from task {t}, not 0")
        if "SIGTERM caught" in line and i < cancelled:
            wrong.append(f"task {t} caught a SIGTERM that Slurm had not sent")
        if "by peer" in line:
            gone = set(dead) | {a for a, at in aborting.items() if at < i}
            if not gone - {t}:
                wrong.append(f"task {t} lost a connection while every partner lives")
            if t in dead and not gone - peers_lost:
                wrong.append(f"dead task {t} reports a lost connection")
    if 0 in dead and ("heartbeat timeout" in log or "SIGTERM caught" in log
                      or any("Killed" in s for s in said.values())):
        wrong.append("task 0 died, yet the others waited (for heartbeats or srun)")
    if hooked:
        for t in sorted(peers_lost):
            if said.get(t) != ["Exited with exit code 1"]:
                wrong.append(f"under the hook, task {t} lost a peer and did not exit "
                             f"at once: srun says {said.get(t)}")
            if re.search(rf"^{t}: .*SIGTERM caught", log, re.M):
                wrong.append(f"under the hook, task {t} lost a peer, caught a SIGTERM")
        if "Shutdown barrier" in log:
            wrong.append("under the hook, a task waits at the shutdown barrier")
    if m := re.search(r"stopped sending heartbeats\):\n((?:0: \d+\n)+)", log):
        listed = {int(v) for v in re.findall(r"^0: (\d+)$", m.group(1), re.M)}
        if listed != set(dead):
            wrong.append(f"JAX lists tasks {sorted(listed)} as unhealthy, srun "
                         f"reported {sorted(dead)} dead")
    for n in re.findall(r"Task (\d+) heartbeat timeout", log):
        if int(n) not in dead or int(n) == 0:
            wrong.append(f"task {n} timed out its heartbeats without dying first")
    if "Shutdown barrier in coordination service has failed" in log:
        at_barrier = {int(t) for t in re.findall(
            r"^(\d+): (?:Traceback|process \d+: done after)", log, re.M)}
        if not at_barrier - set(dead):
            wrong.append("the shutdown barrier failed with nobody at it")
    if m := re.search(r"^0: # of tasks that reached the barrier: (\d+)/(\d+)\.\n"
                      r"0: The first task at the barrier: (\d+)\. Some timed out "
                      r"task names:\n((?:0: \d+\n)*)", log, re.M):
        reached, total, first = (int(v) for v in m.groups()[:3])
        named = [int(v) for v in re.findall(r"^0: (\d+)$", m.group(4), re.M)]
        if total != num_tasks or not 1 <= reached < total:
            wrong.append(f"the barrier counts {reached}/{total} of {num_tasks} tasks")
        if len(named) != min(total - reached, 2) or len(set(named)) != len(named):
            wrong.append(f"the barrier names {named} of {total - reached} late tasks")
        if first in named or not all(0 <= t < num_tasks for t in named):
            wrong.append(f"the barrier names {named}, first at it {first}")
    for t, statuses in said.items():
        if "Killed" in statuses and cancelled == len(lines):
            wrong.append(f"task {t} killed in a step that Slurm never cancelled")
        oom_then_exit = ["Out Of Memory", "Exited with exit code 1"]
        if len(statuses) > 1 and statuses != oom_then_exit:
            wrong.append(f"srun reports task {t} {statuses}")
    # Unless Slurm ended the job (time limit, preemption: the tasks may save
    # and exit 0), a failed step ends every task with an error srun reports.
    if " DUE TO " not in log and set(said) != set(range(num_tasks)):
        wrong.append(f"srun reports tasks {sorted(said)} of {num_tasks}")
    for t in {int(t) for t in re.findall(r"^(\d+): F\S+ .* client\.h:80\] Terminating",
                                         log, re.M)}:
        if "Aborted" not in said.get(t, []):
            wrong.append(f"task {t} terminated by JAX, reported {said.get(t)}")
    return wrong


def test_the_rules_catch_the_impossible_logs() -> None:
    # A dead task 0 that times out its own heartbeat, as the generator once wrote.
    log = job_log(1001)  # a crash: the heartbeat timeout
    failing = int(re.search(r"Task (\d+) heartbeat timeout", log).group(1))
    as_zero = re.sub(rf"(^|Task |tasks? ){failing}\b", r"\g<1>0", log, flags=re.M)
    assert impossible(log) == []
    assert impossible(as_zero)
    # A Gloo failure while every partner lives (an early finish).
    finish = job_log(1004)  # an early finish
    gloo = "1: jax.errors.JaxRuntimeError: UNKNOWN: Gloo all-reduce failed: " \
           "Connection closed by peer [10.0.0.2]:4000\n"
    assert impossible(finish) == []
    assert impossible(gloo + finish)
    # Three tasks named by a barrier that names at most two.
    assert impossible(finish.replace("Some timed out task names:\n",
                                     "Some timed out task names:\n0: 9\n"))


def test_under_the_hook_a_partner_that_lost_its_peer_exits_at_once() -> None:
    # Job 1002: a raise under the hook, and task 3's all-reduce fails with it.
    log = job_log(1002)
    assert impossible(log, hooked=True) == []
    partner = int(re.search(r"^(\d+): .*by peer", log, re.M).group(1))
    dead = re.search(r"^srun: error: \S+: tasks? ([\d,-]+): Exited", log, re.M)
    assert partner in tasks_of(dead.group(1))
    # The shape the generator wrote before: the partner waits, then aborts.
    waited = log.replace(dead.group(0), f"srun: error: node1: task "
                         f"{[t for t in tasks_of(dead.group(1)) if t != partner][0]}"
                         ": Exited") + f"srun: error: node1: task {partner}: Aborted\n"
    assert any("did not exit at once" in w for w in impossible(waited, hooked=True))


@pytest.mark.parametrize("first", range(1000, 3000, 250))
def test_every_generated_log_is_possible(first: int) -> None:
    for job in range(first, first + 250):
        log, sacct = job_log(job), sacct_line(job)
        hooked = "under the hook" in KINDS[job % len(KINDS)][0]
        assert impossible(log, hooked) == [], (job, impossible(log, hooked))
        assert job_ending(log, sacct) == answer(job), job
        assert sacct.split()[2] in {"FAILED", "TIMEOUT", "PREEMPTED", "OUT_OF_MEMORY"}


def test_every_kind_has_its_dying_task_apart_from_zero() -> None:
    # Over 2,000 jobs each kind occurs, and task 0 fails only where it lives
    # on (at the shutdown barrier), or exits once the coordinator has failed
    # the barrier (its all-reduce failing as the others abort, under the hook).
    failing = {}
    for job in range(1000, 3000):
        log = job_log(job)
        kind = KINDS[job % len(KINDS)][0]
        lines = log.splitlines()
        dead = {t: i for i, line in enumerate(lines) if (m := SRUN.match(line))
                and m.group(2).startswith(DEAD) for t in tasks_of(m.group(1))}
        failed = next((i for i, line in enumerate(lines)
                       if "Shutdown barrier has failed" in line), len(lines))
        failing.setdefault(kind, set()).update(t for t, i in dead.items()
                                               if t != 0 or i < failed)
    assert set(failing) == {k[0] for k in KINDS}
    assert all(0 not in tasks for tasks in failing.values()), failing
