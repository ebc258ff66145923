"""Named wrong answers of chapter 8's exercises, as a learner writes them.

:mod:`solutions.multiprocess` names one in the feedback when an answer
returns what it returns: here those of ``process_rows``, ``epoch_records``,
``seconds_to_end`` and ``job_ending``, with the last three's tables
(:data:`RECORDS_MISTAKES`, :data:`SECONDS_MISTAKES`, :func:`job_ending_table`).
(The launched exercises keep theirs beside their references, where the
harness marks them.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from exercise_kit.multiprocess_checks import KILL_WAIT
from jaxcourse.exercises import Mistake


def _gone_at_once(how, hook):
    # A crash, or an exception under the course's hook: the process is gone.
    return how == "crash" or (how == "raise" and hook)


def _ended_gone(kill, heartbeat):
    # A process gone with an error: srun's SIGKILL or the heartbeat timeout,
    # the sooner (srun's SIGTERM only comes first, and JAX catches it).
    return float(min(KILL_WAIT, heartbeat)) if kill else float(heartbeat)


def _records_same_every_epoch(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng(seed).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def _records_seed_plus_epoch(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng(seed + epoch).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def _records_rows_of_the_whole_order(seed, epoch, step, num_records, batch_size,
                                     rows):
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[rows]


def _records_whole_batch(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size]


def _records_not_shuffled(seed, epoch, step, num_records, batch_size, rows):
    return np.arange(num_records)[step * batch_size:(step + 1) * batch_size][rows]


def _records_epoch_alone(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng(epoch).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def _records_pair_swapped(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng([epoch, seed]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def _records_stepped_generator(seed, epoch, step, num_records, batch_size, rows):
    # One generator from the seed, drawn once per epoch up to this one.
    rng = np.random.default_rng(seed)
    for _ in range(epoch + 1):
        order = rng.permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def _records_step_from_one(seed, epoch, step, num_records, batch_size, rows):
    # Steps counted from 1: step s takes the block after the s-th.
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[(step + 1) * batch_size:(step + 2) * batch_size][rows]


def _records_shuffled_within_block(seed, epoch, step, num_records, batch_size,
                                   rows):
    # The step's block of records in file order, shuffled within itself.
    block = np.arange(step * batch_size, (step + 1) * batch_size)
    return np.random.default_rng([seed, epoch]).permutation(block)[rows]


def _records_local_blocks(seed, epoch, step, num_records, batch_size, rows):
    # The order stepped through by this process's share, not the global batch.
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    start, stop, _ = rows.indices(batch_size)
    share = stop - start
    return order[start + step * share:stop + step * share]


def _records_order_per_step(seed, epoch, step, num_records, batch_size, rows):
    # A new permutation every step, from [seed, epoch, step], its first block.
    order = np.random.default_rng([seed, epoch, step]).permutation(num_records)
    return order[:batch_size][rows]


def _records_legacy_generator(seed, epoch, step, num_records, batch_size, rows):
    # NumPy's legacy generator (np.random.seed, RandomState) with the pair.
    order = np.random.RandomState([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def _end_kill_always_at_once(how, hook, kill, heartbeat, shutdown):
    # --kill-on-bad-exit taken to end the step whatever the process did.
    if kill:
        return _ended_gone(kill, heartbeat)
    return float(heartbeat if _gone_at_once(how, hook) else shutdown)


def _end_kill_at_once(how, hook, kill, heartbeat, shutdown):
    # srun's SIGTERM taken to end the others at once.
    if _gone_at_once(how, hook):
        return 0.0 if kill else float(heartbeat)
    return float(shutdown)


def _end_kill_wait_alone(how, hook, kill, heartbeat, shutdown):
    # Under --kill-on-bad-exit, srun's SIGKILL taken as the only clock.
    if _gone_at_once(how, hook):
        return KILL_WAIT if kill else float(heartbeat)
    return float(shutdown)


def _end_raise_exits_at_once(how, hook, kill, heartbeat, shutdown):
    # An exception taken to end the process, with or without the hook.
    if how in ("crash", "raise"):
        return _ended_gone(kill, heartbeat)
    return float(shutdown)


def _end_crash_at_the_barrier(how, hook, kill, heartbeat, shutdown):
    # A crashed process taken to wait at the shutdown barrier.
    if how == "crash":
        return float(min(KILL_WAIT, shutdown)) if kill else float(shutdown)
    if how == "raise" and hook:
        return _ended_gone(kill, heartbeat)
    return float(shutdown)


def _end_timeouts_swapped(how, hook, kill, heartbeat, shutdown):
    # The heartbeat's timeout and the barrier's, each in the other's place.
    if _gone_at_once(how, hook):
        return float(min(KILL_WAIT, shutdown)) if kill else float(shutdown)
    return float(heartbeat)


def _end_finish_never(how, hook, kill, heartbeat, shutdown):
    # A process that finished early taken to leave the others waiting forever.
    if how == "finish":
        return float("inf")
    if _gone_at_once(how, hook):
        return _ended_gone(kill, heartbeat)
    return float(shutdown)


def _end_hook_ignored(how, hook, kill, heartbeat, shutdown):
    # An exception taken to leave the process alive, with the hook or not.
    if how == "crash":
        return _ended_gone(kill, heartbeat)
    return float(shutdown)


def _end_crash_always_at_once(how, hook, kill, heartbeat, shutdown):
    # A process that is gone taken to end the others at once, option or not.
    if _gone_at_once(how, hook):
        return 0.0
    return float(shutdown)


def _end_finish_at_once(how, hook, kill, heartbeat, shutdown):
    # An early finish taken to end the others at once.
    if how == "finish":
        return 0.0
    if _gone_at_once(how, hook):
        return _ended_gone(kill, heartbeat)
    return float(shutdown)


def _end_both_timeouts(how, hook, kill, heartbeat, shutdown):
    # The barrier taken to wait for a heartbeat timeout first, then its own.
    if _gone_at_once(how, hook):
        return _ended_gone(kill, heartbeat)
    return float(heartbeat + shutdown)


def _rows_ignoring_remainder(n, index, count):
    per = n // count
    return np.arange(index * per, (index + 1) * per)


def _rows_interleaved(n, index, count):
    return np.arange(index, n, count)


def _rows_rest_to_last(n, index, count):
    per = n // count
    stop = n if index == count - 1 else (index + 1) * per
    return np.arange(index * per, stop)


def _rows_ceil(n, index, count):
    per = -(-n // count)
    return np.arange(min(index * per, n), min((index + 1) * per, n))


def _rows_inclusive(n, index, count):
    return np.array_split(np.arange(n + 1), count)[index]


# ---- job_ending ------------------------------------------------------------
# Each takes the reference's reading and gets one rule wrong, as a rule that
# fits the jobs one has seen does. The reference comes in as an argument
# (:func:`job_ending_mistakes`): this module is imported by
# :mod:`solutions.multiprocess`, and does not import it back.

_LATER = "save, then resubmit with --dependency=afterany"
_REQUEUE = "save, and submit with --requeue"


def _job_exit_code_alone(reference, log, sacct):
    # srun's "Exited with exit code 1" taken for the ending, whatever followed.
    if "Exited with exit code 1" in log and sacct.split()[2] == "FAILED":
        return "kill-on-bad-exit", "fix the failing task"
    return reference(log, sacct)


def _job_barrier_first(reference, log, sacct):
    # "Shutdown barrier has failed" read before the stopped heartbeats.
    if sacct.split()[2] == "FAILED" and "Shutdown barrier has failed" in log:
        return reference(log.replace("stopped sending heartbeats", ""), sacct)
    return reference(log, sacct)


def _job_heartbeat_timeout_words(reference, log, sacct):
    # Only "Task N heartbeat timeout" read as the heartbeat's ending: JAX
    # writes it only when a task waits at the shutdown barrier.
    if "heartbeat timeout" not in log:
        return reference(log.replace("stopped sending heartbeats", ""), sacct)
    return reference(log, sacct)


def _job_any_traceback_raised(reference, log, sacct):
    # At the shutdown barrier, any traceback taken for a process that raised.
    ending, fix = reference(log, sacct)
    if ending == "shutdown barrier":
        raised = "Traceback" in log
        return ending, ("exit at once on an exception" if raised
                        else "agree on the number of steps")
    return ending, fix


def _job_state_alone(reference, log, sacct):
    # FAILED taken for one ending.
    if sacct.split()[2] == "FAILED":
        return "kill-on-bad-exit", "fix the failing task"
    return reference(log, sacct)


def _job_cancelled_is_time_limit(reference, log, sacct):
    # slurmstepd's "CANCELLED AT" taken for the time limit.
    if "CANCELLED AT" in log:
        return "time limit", _LATER
    return reference(log, sacct)


def _job_barrier_always_steps(reference, log, sacct):
    # Every shutdown barrier taken for processes that did different numbers of
    # steps.
    ending, fix = reference(log, sacct)
    if ending == "shutdown barrier":
        return ending, "agree on the number of steps"
    return ending, fix


def _job_barrier_always_raised(reference, log, sacct):
    # Every shutdown barrier taken for a process that raised.
    ending, fix = reference(log, sacct)
    if ending == "shutdown barrier":
        return ending, "exit at once on an exception"
    return ending, fix


def _job_failed_is_heartbeat(reference, log, sacct):
    # FAILED taken for the heartbeat timeout.
    if sacct.split()[2] == "FAILED":
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    return reference(log, sacct)


def _job_fixes_swapped(reference, log, sacct):
    # Requeue for a time limit, a new job after a preemption.
    ending, fix = reference(log, sacct)
    return ending, {_LATER: _REQUEUE, _REQUEUE: _LATER}.get(fix, fix)


def _job_sigterm_is_preemption(reference, log, sacct):
    # JAX's "SIGTERM caught" taken for a preemption.
    if "SIGTERM caught" in log and sacct.split()[2] != "TIMEOUT":
        return "preemption", _REQUEUE
    return reference(log, sacct)


def _job_cancelled_unless_preemption(reference, log, sacct):
    # "CANCELLED" taken for the time limit unless the log says PREEMPTION: the
    # same slip as _job_cancelled_is_time_limit, the preemption read first.
    if "CANCELLED" in log and "PREEMPTION" not in log:
        return "time limit", _LATER
    return reference(log, sacct)


def _job_exit_code_line(reference, log, sacct):
    # Any "Exited with exit code" line taken for srun's kill, whatever the state
    # (an out-of-memory task leaves one too).
    if "Exited with exit code" in log:
        return "kill-on-bad-exit", "fix the failing task"
    return reference(log, sacct)


def _job_heartbeat_fixes_task(reference, log, sacct):
    # A heartbeat timeout answered with the failing task's fix.
    ending, fix = reference(log, sacct)
    return ending, "fix the failing task" if ending == "heartbeat timeout" else fix


def _job_kill_adds_option(reference, log, sacct):
    # srun's kill answered with the option that made it.
    ending, fix = reference(log, sacct)
    return ending, "add --kill-on-bad-exit=1" if ending == "kill-on-bad-exit" else fix


def _job_word_preemption(reference, log, sacct):
    # The word "preemption" anywhere (JAX's preemption_notifier, the
    # coordination service's advice) taken for a preemption.
    if "preemption" in log.lower():
        return "preemption", _REQUEUE
    return reference(log, sacct)


def _job_abort_is_heartbeat(reference, log, sacct):
    # Every abort (exit code 134) taken for the heartbeat timeout: the failed
    # shutdown barrier too.
    ending, fix = reference(log, sacct)
    if ending == "shutdown barrier":
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    return ending, fix


def _job_memory_unread(reference, log, sacct):
    # OUT_OF_MEMORY not read as an ending of its own: the log read as FAILED's.
    return reference(log, sacct.replace("OUT_OF_MEMORY", "FAILED"))


def job_ending_mistakes(reference: Callable) -> dict[str, Callable]:
    """Return ``job_ending``'s named mistakes, each a wrong reading of ``reference``.

    Keyed by the mistake's name (``"exit_code_alone"`` ...); each takes
    ``(log, sacct)``, as the exercise does.
    """
    def bind(mistake: Callable) -> Callable:
        def wrong(log, sacct):
            return mistake(reference, log, sacct)

        wrong.__name__ = wrong.__qualname__ = mistake.__name__
        return wrong

    return {m.__name__.removeprefix("_job_"): bind(m) for m in (
        _job_exit_code_alone, _job_barrier_first,
        _job_state_alone, _job_cancelled_is_time_limit, _job_fixes_swapped,
        _job_sigterm_is_preemption, _job_barrier_always_steps,
        _job_failed_is_heartbeat, _job_cancelled_unless_preemption,
        _job_exit_code_line, _job_heartbeat_fixes_task, _job_kill_adds_option,
        _job_word_preemption, _job_abort_is_heartbeat, _job_memory_unread,
        _job_barrier_always_raised, _job_heartbeat_timeout_words,
        _job_any_traceback_raised)}


# ---- the tables of the cluster exercises ------------------------------------

RECORDS_MISTAKES = [
    Mistake("the order ignores the epoch, so every epoch repeats the same "
            "order: seed the generator with [seed, epoch]",
            _records_same_every_epoch),
    Mistake("seed + epoch gives run 2's epoch 0 the order of run 1's epoch "
            "1: seed the generator with the pair [seed, epoch]",
            _records_seed_plus_epoch),
    Mistake("these are this process's rows of the whole permutation; take "
            "them from the step's global batch",
            _records_rows_of_the_whole_order),
    Mistake("this is the whole global batch: this process loads only the "
            "rows `rows` of it", _records_whole_batch),
    Mistake("the records are not shuffled: draw the epoch's permutation first",
            _records_not_shuffled),
    Mistake("the order ignores the seed, so two runs shuffle alike: seed "
            "the generator with [seed, epoch]", _records_epoch_alone),
    Mistake("[epoch, seed] is another generator than [seed, epoch]: the "
            "order of the pair counts", _records_pair_swapped),
    Mistake("one generator drawn once per epoch gives another order than "
            "the one seeded with [seed, epoch], and a resumed run would "
            "have to replay every epoch: seed a generator with the pair",
            _records_stepped_generator),
    Mistake("NumPy's legacy generator (np.random.seed, RandomState) draws "
            "another permutation: use np.random.default_rng([seed, epoch])",
            _records_legacy_generator),
    Mistake("this is the next step's batch: steps count from 0, and step 0 "
            "is the first block of the epoch's order", _records_step_from_one),
    Mistake("only the records of one block in file order were shuffled, so a "
            "batch holds neighbouring records: shuffle the whole epoch, then "
            "cut it into batches", _records_shuffled_within_block),
    Mistake("each step moves through the order by a whole global batch, "
            "every process's rows together, not by this process's share",
            _records_local_blocks),
    Mistake("a new order at every step can give one record to two steps of an "
            "epoch and none to another: one order per epoch, cut into batches",
            _records_order_per_step),
]

SECONDS_MISTAKES = [
    Mistake("srun's first signal is SIGTERM, which JAX catches (it takes it for "
            "a preemption notice) and carries on: SIGKILL follows KILL_WAIT "
            "seconds later, unless the heartbeat timeout ends the others first",
            _end_kill_at_once),
    Mistake("srun's SIGKILL is not the only clock: the coordinator's heartbeat "
            "timeout still runs, and the sooner of the two ends the others",
            _end_kill_wait_alone),
    Mistake("--kill-on-bad-exit acts only on a task that has exited with an "
            "error: one waiting at the shutdown barrier has not exited, and "
            "one that finished exited with 0", _end_kill_always_at_once),
    Mistake("without the hook, a process that raised does not exit: its "
            "exit handler waits at the shutdown barrier",
            _end_raise_exits_at_once),
    Mistake("a crashed process never reaches the shutdown barrier: the "
            "coordinator notices its missing heartbeats",
            _end_crash_at_the_barrier),
    Mistake("the two timeouts are swapped: heartbeat_timeout is for a "
            "process that vanished, shutdown_timeout for one waiting to "
            "exit", _end_timeouts_swapped),
    Mistake("a process that finished early waits at the shutdown barrier, "
            "which fails after shutdown_timeout and ends every process",
            _end_finish_never),
    Mistake("with the hook, an exception ends the process at once "
            "(os._exit(1)): it is gone with an error, as after a crash",
            _end_hook_ignored),
    Mistake("without --kill-on-bad-exit nothing ends the others at once: "
            "the coordinator waits heartbeat_timeout for the missing "
            "heartbeats", _end_crash_always_at_once),
    Mistake("the shutdown barrier fails after shutdown_timeout alone: the "
            "process waiting there is alive and misses no heartbeat",
            _end_both_timeouts),
    Mistake("a process that finished early exits with code 0, which "
            "neither srun's option nor the coordinator acts on: the others "
            "wait at the shutdown barrier, which fails after "
            "shutdown_timeout", _end_finish_at_once),
]


def job_ending_table(reference: Callable) -> list[Mistake]:
    """Return ``job_ending``'s table: each wrong reading of ``reference``, named."""
    wrong = job_ending_mistakes(reference)
    return [
        Mistake("srun's 'Exited with exit code 1' names the task that failed "
                "first, not what ended the others: without --kill-on-bad-exit "
                "they waited for JAX's heartbeat timeout (the tasks that "
                "'stopped sending heartbeats', in the log)", wrong["exit_code_alone"]),
        Mistake("a heartbeat timeout fails the shutdown barrier too, so the log "
                "has both messages: the heartbeat timeout is what ended the job",
                wrong["barrier_first"]),
        Mistake("FAILED says only that the job ended with an error: srun, the "
                "heartbeat timeout and the shutdown barrier all give it; the log "
                "says which", wrong["state_alone"]),
        Mistake("slurmstepd writes CANCELLED AT for every step it ends: a reason "
                "follows only for a time limit or a preemption (DUE TO ...), and "
                "the sacct state says which",
                wrong["cancelled_is_time_limit"]),
        Mistake("the two fixes are swapped: Slurm requeues a preempted job "
                "submitted with --requeue; a job that ran out of time is not "
                "requeued, the next job waits for it with --dependency=afterany",
                wrong["fixes_swapped"]),
        Mistake("JAX logs 'SIGTERM caught' whenever Slurm ends its tasks: under "
                "--kill-on-bad-exit as on a preemption; the sacct state says "
                "which", wrong["sigterm_is_preemption"]),
        Mistake("at the shutdown barrier, an error of the program's own in the "
                "log means a process raised and never exited: the fix is to "
                "exit at once on an exception; agreeing on the steps is for a "
                "process that finished early", wrong["barrier_always_steps"]),
        Mistake("FAILED says only that the job ended with an error: srun, the "
                "heartbeat timeout and the shutdown barrier all give it; the log "
                "says which", wrong["failed_is_heartbeat"]),
        Mistake("slurmstepd writes CANCELLED AT for every step it ends: a reason "
                "follows only for a time limit or a preemption (DUE TO ...), and "
                "the sacct state says which",
                wrong["cancelled_unless_preemption"]),
        Mistake("an 'Exited with exit code' line says that one task failed, not "
                "what ended the job: a task killed for its memory leaves one too. "
                "Which does sacct's state say, and only then the log?",
                wrong["exit_code_line"]),
        Mistake("the fix is for what ended the job: after a heartbeat timeout the "
                "others waited for a task that had already failed. What would "
                "have ended them at once?", wrong["heartbeat_fixes_task"]),
        Mistake("srun ended the others at once here: --kill-on-bad-exit was "
                "already on, so adding it changes nothing. What made srun act?",
                wrong["kill_adds_option"]),
        Mistake("'preemption' is in lines that any job may print (JAX's "
                "preemption_notifier on SIGTERM, the coordination service's "
                "advice): only Slurm says that a job was preempted",
                wrong["word_preemption"]),
        Mistake("a failed shutdown barrier aborts the processes too (exit code "
                "134, 'Terminating process'): with no task that 'stopped sending "
                "heartbeats' in the log, no heartbeat ended this job",
                wrong["abort_is_heartbeat"]),
        Mistake("OUT_OF_MEMORY is a state that names its ending by itself, as "
                "TIMEOUT and PREEMPTED do: the log is read for FAILED alone",
                wrong["memory_unread"]),
        Mistake("a process at the shutdown barrier either raised or finished "
                "early: only the first leaves an error of the program's own in "
                "the log", wrong["barrier_always_raised"]),
        Mistake("JAX writes 'Task N heartbeat timeout' only when a task waits at "
                "the shutdown barrier: under the course's hook none does, and the "
                "coordinator only lists the tasks that 'stopped sending "
                "heartbeats'. That list is the heartbeat's ending",
                wrong["heartbeat_timeout_words"]),
        Mistake("a traceback of jax.errors.JaxRuntimeError ('Gloo all-reduce "
                "failed') is a task whose partner was aborting, not a raise: at "
                "the shutdown barrier only an error of the program's own means "
                "that a process raised", wrong["any_traceback_raised"]),
    ]
