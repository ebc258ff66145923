"""Reference code for chapter 8's exercises: keeping several processes in step.

Importing this module registers the exercises ``multiprocess.process_rows``,
``multiprocess.common_num_steps``, ``multiprocess.sum_metrics``,
``multiprocess.run_epoch``, ``multiprocess.global_batch``,
``multiprocess.epoch_records``, ``multiprocess.seconds_to_end`` and
``multiprocess.job_ending`` with
:mod:`jaxcourse.exercises`: their references, cases, hints and known mistakes.

How each answer is run as several processes would run it is the part of
:mod:`exercise_kit.multiprocess_checks` (in this process) and
:mod:`exercise_kit.multiprocess_harness` (launched). The first three are checked
in this process, ``sum_metrics`` once per simulated process with a stand-in
collective matched by call order (:func:`simulate_processes`). ``run_epoch``
and ``global_batch`` are checked in this process first, then for real, in 2
launched processes (:func:`launch_run_epoch`, :func:`launch_global_batch`),
where a hang is cut short (a process left waiting by a partner that has
finished, at once; any other, by the launcher's timeout) and reported as a
failed test.
"""

from __future__ import annotations

import re

import jax
import numpy as np

from exercise_kit.multiprocess_cases import (
    METRICS,
    MORE_METRICS,
    epoch_inputs,
    global_inputs,
    metrics_case,
    padding_case,
    random_records,
    random_rows,
    random_steps,
    records_case,
    rows_case,
    steps_case,
)
from exercise_kit.multiprocess_checks import (
    KILL_WAIT,
    every_failure,
    every_failure_of,
    in_one_process,
    random_timeouts,
)
from exercise_kit.multiprocess_harness import (
    GLOBAL_DEVICES_PER_PROCESS,
    LAUNCH_PROCESSES,
    launch_global_batch,
    launch_run_epoch,
    not_relaunched,
    prepare_global_batch,
    prepare_run_epoch,
)
from exercise_kit.multiprocess_logs import ending_choice, job_calls
from exercise_kit.multiprocess_mistakes import (
    RECORDS_MISTAKES,
    SECONDS_MISTAKES,
    _rows_ceil,
    _rows_ignoring_remainder,
    _rows_inclusive,
    _rows_interleaved,
    _rows_rest_to_last,
    job_ending_table,
)
from jaxcourse.exercises import Case, Exercise, Mistake, each_call, register

CHAPTER = "08_multiprocess"

# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def process_rows(num_records, process_index, process_count):
    """Return the record indices this process loads: one contiguous block.

    The blocks cover ``0 .. num_records - 1`` in order and their sizes differ
    by at most one: the first ``num_records % process_count`` processes take
    one record more.
    """
    base, extra = divmod(num_records, process_count)
    start = process_index * base + min(process_index, extra)
    stop = start + base + (1 if process_index < extra else 0)
    return np.arange(start, stop)


def common_num_steps(local_sizes, batch_size):
    """Return the number of full batches that every process can run."""
    return min(size // batch_size for size in local_sizes)


def sum_metrics(local_metrics, allreduce):
    """Sum each metric over all processes, one collective per metric.

    The collectives are issued in sorted order of the names, which is the same
    in every process (dict and set orders may not be).
    """
    return {name: allreduce(local_metrics[name]) for name in sorted(local_metrics)}


def run_epoch(local_data, batch_size, step):
    """Run ``step`` on this process's full batches, as often as every process.

    Every process learns every process's batch count with a collective and
    all stop at the smallest, so each calls ``step`` the same number of times.
    """
    from jax.experimental import multihost_utils

    mine = len(local_data) // batch_size
    counts = multihost_utils.process_allgather(np.int32(mine))
    num_steps = int(np.min(counts))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(num_steps)]


def global_batch(local_batch, max_len, sharding):
    """Assemble the global batch from every process's rows, padded to ``max_len``.

    Each process pads its own rows with zeros on the right to the length all
    processes agreed on, and states the global shape, so that no process
    infers a shape of its own from the data it happens to hold.
    """
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    global_shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, global_shape)


def epoch_records(seed, epoch, step, num_records, batch_size, rows):
    """Return the records this process loads for global batch ``step`` of ``epoch``.

    Every process draws the same permutation of all the records, from the
    shared seed and the epoch alone; the global batch is its ``step``-th block
    of ``batch_size``, and this process loads the rows ``rows`` of that block
    (the rows its devices hold under the sharding).
    """
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def seconds_to_end(how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout):
    """Return how long after process 2 fails the other processes are ended.

    A process that is gone at once (a crash, or an exception under the
    course's hook) exits with an error, and the coordinator misses its
    heartbeats: the others abort after ``heartbeat_timeout``. With
    ``--kill-on-bad-exit`` srun also ends the step: SIGTERM at once, which
    JAX catches (a preemption notice) and carries on, then SIGKILL
    :data:`KILL_WAIT` seconds later; the sooner of the two ends them. A
    process that raised without the hook, or finished early, waits at the
    shutdown barrier, which fails after ``shutdown_timeout``.
    """
    if how == "crash" or (how == "raise" and hook):
        if kill_on_bad_exit:
            return float(min(KILL_WAIT, heartbeat_timeout))
        return float(heartbeat_timeout)
    return float(shutdown_timeout)


def job_ending(log, sacct):
    """Return what ended a job, and the fix, from its log and its ``sacct`` line.

    The state says it for a time limit, a preemption and memory. A FAILED job
    was ended by JAX's heartbeat timeout (the coordinator lists the tasks
    that "stopped sending heartbeats"), by its shutdown barrier, or by srun
    (``--kill-on-bad-exit``), in that order of reading: a heartbeat timeout
    fails the shutdown barrier too. At the barrier, a process raised only if
    the log has an error of the program's own; a process that finished early
    leaves at most the others' ``JaxRuntimeError``.
    """
    state = sacct.split()[2]  # JobName Partition State ExitCode
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        # "2: RuntimeError: ...", not "3: jax.errors.JaxRuntimeError: ..."
        if re.search(r"^\d+: \w+Error: ", log, re.M):
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


# --------------------------------------------------------------------------
# Checker specs
# --------------------------------------------------------------------------


def _sum_in_dict_order(local_metrics, allreduce):
    return {name: allreduce(value) for name, value in local_metrics.items()}


def _sum_in_set_order(local_metrics, allreduce):
    return {name: allreduce(local_metrics[name]) for name in set(local_metrics)}


def _sum_locally(local_metrics, allreduce):
    return {name: local_metrics[name] for name in sorted(local_metrics)}


def _epoch_first_batch_each_time(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[:batch_size]) for _ in range(int(np.min(counts)))]


def _epoch_overlapping_batches(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i:i + batch_size]) for i in range(int(np.min(counts)))]


def _epoch_one_step_short(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.min(counts)) - 1)]


not_relaunched(_epoch_first_batch_each_time, _epoch_overlapping_batches,
               _epoch_one_step_short)


def _global_not_padded(local_batch, max_len, sharding):
    return jax.make_array_from_process_local_data(sharding, local_batch)


def _global_padded_both_axes(local_batch, max_len, sharding):
    padded = np.pad(local_batch, max_len - local_batch.shape[1])
    return jax.make_array_from_process_local_data(sharding, padded)


def _global_padded_left(local_batch, max_len, sharding):
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (max_len - length, 0)))
    return jax.make_array_from_process_local_data(
        sharding, padded, (rows * jax.process_count(), max_len))


def _global_shape_of_one_process(local_batch, max_len, sharding):
    padded = np.pad(local_batch, ((0, 0), (0, max_len - local_batch.shape[1])))
    return jax.make_array_from_process_local_data(sharding, padded, padded.shape)


not_relaunched(_global_not_padded, _global_padded_both_axes, _global_padded_left)


register(
    Exercise(
        id="multiprocess.process_rows",
        title="Each process's share of the records",
        chapter=CHAPTER,
        reference=process_rows,
        cases=[
            rows_case(8, 4),
            rows_case(10, 4),
            rows_case(1000, 3),
            rows_case(5, 8),
            random_rows(1),
            random_rows(2),
        ],
        hints=[
            "Python's divmod gives the base share and the number of leftover "
            "records in one call.",
            "The first `extra` processes take one record more than the others. "
            "Process p starts after all the records of processes 0 .. p-1: count "
            "them, and how many of those processes took a leftover.",
            "Check your blocks by hand for 10 records and 4 processes: [0, 1, 2], "
            "[3, 4, 5], [6, 7], [8, 9]. NumPy can also split an array into nearly "
            "equal pieces in exactly this way.",
        ],
        mistakes=[
            Mistake("the last num_records % process_count records are never loaded: "
                    "hand the leftovers out, one each to the first processes",
                    _rows_ignoring_remainder),
            Mistake("the rows are interleaved (strided): a valid split for training "
                    "too, but this exercise asks for one contiguous block per "
                    "process, process 0's first", _rows_interleaved),
            Mistake("the last process gets all the leftovers, so the shares differ "
                    "by more than one: give one each to the first processes",
                    _rows_rest_to_last),
            Mistake("rounding the share up leaves the last processes short (or "
                    "empty): the shares must differ by at most one", _rows_ceil),
            Mistake("off by one: the blocks include the record num_records, which "
                    "does not exist (stop is exclusive)", _rows_inclusive),
        ],
    ),
    Exercise(
        id="multiprocess.common_num_steps",
        title="One step count for every process",
        chapter=CHAPTER,
        reference=common_num_steps,
        cases=[
            steps_case([1000, 1000, 1000, 900], 100),
            steps_case([900, 1000, 1000, 1000], 100),
            steps_case([130, 250], 64),
            steps_case([640, 600, 700], 64),
            steps_case([10, 500], 16),
            random_steps(3),
            random_steps(4),
        ],
        hints=[
            "Each process can run size // batch_size full batches.",
            "A process that has run out of batches cannot join another step: the "
            "count that all processes can run is the smallest one.",
        ],
        mistakes=[
            Mistake("that is the largest count: the processes with fewer batches "
                    "run out, and the others hang in their extra steps",
                    lambda sizes, b: max(s // b for s in sizes)),
            Mistake("that is process 0's own count: each process would use its own, "
                    "and they would disagree", lambda sizes, b: sizes[0] // b),
            Mistake("rounding up counts a partial last batch, whose shape differs "
                    "from the others: count full batches only",
                    lambda sizes, b: min(-(-s // b) for s in sizes)),
            Mistake("that is the average count: processes below the average run out "
                    "and the rest hang",
                    lambda sizes, b: sum(sizes) // b // len(sizes)),
            Mistake("that is the number of global batches (all records together); "
                    "count the batches each process can fill from its own records",
                    lambda sizes, b: sum(sizes) // b),
        ],
    ),
    Exercise(
        id="multiprocess.sum_metrics",
        title="The same collectives in the same order",
        chapter=CHAPTER,
        reference=sum_metrics,
        cases=[
            metrics_case("3 processes, metrics loss/accuracy/examples, each dict "
                          "in its own order", METRICS),
            metrics_case("4 processes, 5 metrics in 4 different orders",
                          MORE_METRICS),
        ],
        hints=[
            "Collectives are matched by order: the k-th allreduce of every process "
            "is added to the k-th of the others, whatever name it had.",
            "A dict's order is its insertion order, which differs between the "
            "processes here; a set's order depends on string hashes, which differ "
            "between machines.",
            "Iterate in an order that depends only on the names themselves, not "
            "on how each process filled its dict: a built-in function gives one.",
        ],
        mistakes=[
            Mistake("the collectives (or the entries of one collective's array) "
                    "follow each process's dict order, so values of different "
                    "metrics were added together: iterate in an order every "
                    "process shares, such as sorted(...)", _sum_in_dict_order),
            Mistake("the collectives follow set order, which depends on each "
                    "machine's string hashing: iterate in sorted order",
                    _sum_in_set_order),
            Mistake("the metrics were not summed over the processes: call allreduce "
                    "on each value", _sum_locally),
        ],
    ),
    Exercise(
        id="multiprocess.run_epoch",
        title="Fix the last-batch hang",
        chapter=CHAPTER,
        reference=run_epoch,
        cases=[
            Case("in one process, 10 records in batches of 4: two steps, on the "
                 "first 8 records", lambda rng: (10, 4), runner=in_one_process,
                 dtype="any"),
            Case("in one process, 23 records in batches of 5: four steps, on the "
                 "first 20 records", lambda rng: (23, 5), runner=in_one_process,
                 dtype="any"),
            Case(f"launched in {LAUNCH_PROCESSES} processes: 12 and 9 records in "
                 "batches of 4, then 9 and 17 in batches of 3 (each process's "
                 "step results)", epoch_inputs, runner=launch_run_epoch,
                 warm_up=prepare_run_epoch, dtype="any", endless="collective",
                 time_limit=60.0),
        ],
        hints=[
            "The hanging version lets each process count its own full batches. "
            "The process with more batches waits in a step that the other never "
            "joins.",
            "No process knows the others' counts until they tell it: "
            "multihost_utils.process_allgather(value) returns every process's "
            "value, in every process.",
            "Every process now holds the same counts: run as many steps as the "
            "smallest of them, each on the next full batch of this process's "
            "data, and return the list of the step results.",
        ],
        mistakes=[
            Mistake("every step got the first batch: step i takes records i * "
                    "batch_size to (i + 1) * batch_size", _epoch_first_batch_each_time),
            Mistake("the batches overlap: they start one record apart instead of "
                    "batch_size records apart", _epoch_overlapping_batches),
            Mistake("one step short: every process can still fill one more full "
                    "batch (an off-by-one in the number of steps)",
                    _epoch_one_step_short),
        ],
    ),
    Exercise(
        id="multiprocess.global_batch",
        title="One global batch from every process's rows",
        chapter=CHAPTER,
        reference=global_batch,
        cases=[
            padding_case("in one process: 4 rows of length 7, padded to 10", 4, 7,
                          10, seed=5),
            padding_case("in one process: 6 rows of length 3, padded to 5", 6, 3, 5,
                          seed=6),
            padding_case("in one process: 5 rows that already have the agreed "
                          "length 8", 5, 8, 8, seed=7),
            Case(f"launched in {LAUNCH_PROCESSES} processes of "
                 f"{GLOBAL_DEVICES_PER_PROCESS} devices: 4 rows each, of lengths 6 "
                 "and 9, padded to 10; then 8 rows each, of lengths 5 and 3, padded "
                 "to 8 (in each process: the global shape, the sum under jit and "
                 "the gathered array)", global_inputs, runner=launch_global_batch,
                 warm_up=prepare_global_batch, dtype="any", endless="collective",
                 time_limit=60.0),
        ],
        hints=[
            "Two things must be the same in every process: the length of the "
            "rows, and the shape of the global array. Neither may depend on the "
            "data a process happens to hold.",
            "np.pad takes one (before, after) pair per axis: pad only the end of "
            "axis 1, with zeros.",
            "jax.make_array_from_process_local_data(sharding, local_data, "
            "global_shape) takes the shape of the whole array: how many rows do "
            "all the processes hold together? jax.process_count() says how many "
            "processes there are.",
        ],
        mistakes=[
            Mistake("the rows are not padded to max_len: each process would infer "
                    "a global shape from its own row length, and the processes "
                    "would disagree about the array they share", _global_not_padded),
            Mistake("np.pad with a single width pads both ends of every axis, "
                    "rows too: give one (before, after) pair per axis",
                    _global_padded_both_axes),
            Mistake("the zeros are on the left: pad the end of every row, so "
                    "that position k holds the same element in every process",
                    _global_padded_left),
            Mistake("the global shape is this process's own shape: each process "
                    "then reads its data as the whole array and keeps only its "
                    "slice of it. The global batch has the rows of every process",
                    _global_shape_of_one_process),
        ],
    ),
    Exercise(
        id="multiprocess.epoch_records",
        title="Each process's records, epoch after epoch",
        chapter=CHAPTER,
        reference=epoch_records,
        cases=[
            records_case("the chapter's epochs.py: seed 2026, epoch 0, step 0, 48 "
                          "records in global batches of 16, rows 4 to 8 (process 1)",
                          (2026, 0, 0, 48, 16, slice(4, 8))),
            records_case("the same step in epoch 1",
                          (2026, 1, 0, 48, 16, slice(4, 8))),
            records_case("seed 7, epoch 2, step 3: 100 records in global batches of "
                          "20, rows 15 to 20", (7, 2, 3, 100, 20, slice(15, 20))),
            random_records(8),
            random_records(9),
        ],
        hints=[
            "np.random.default_rng([seed, epoch]) makes one generator from both "
            "numbers, the same in every process; its .permutation(n) shuffles "
            "0 .. n-1.",
            "The global batch of step s is the block of the permutation from s * "
            "batch_size to (s + 1) * batch_size.",
            "rows are positions within one global batch: index the step's block "
            "with them, not the whole permutation.",
        ],
        mistakes=RECORDS_MISTAKES,
    ),
    Exercise(
        id="multiprocess.seconds_to_end",
        title="What ends a failed step, and when",
        chapter=CHAPTER,
        reference=seconds_to_end,
        cases=[
            Case("the chapter's ending.py: heartbeat timeout 3 s, shutdown timeout "
                 "5 s (every failure, with and without the hook and the option)",
                 lambda rng: (3, 5), runner=every_failure, dtype="any"),
            Case("JAX's defaults: heartbeat timeout 100 s, shutdown timeout 300 s",
                 lambda rng: (100, 300), runner=every_failure, dtype="any"),
            Case("16 random pairs of timeouts, from 0.5 to 450 s (seed 11)",
                 random_timeouts(), runner=every_failure_of, seed=11, dtype="any"),
            Case("16 more random pairs (seed 12)", random_timeouts(),
                 runner=every_failure_of, seed=12, dtype="any"),
        ],
        hints=[
            "First ask whether process 2 is gone at once, with an error: a crash "
            "always is, and so is an exception when the hook calls os._exit(1).",
            "A process that is gone: the coordinator notices its missing "
            "heartbeats after heartbeat_timeout. --kill-on-bad-exit adds srun's "
            "clock: SIGTERM at once, which JAX catches and carries on, then "
            "SIGKILL KILL_WAIT seconds later. The sooner of the two ends the "
            "others.",
            "A process still alive (an exception without the hook, or done early "
            "with exit code 0) waits at the shutdown barrier, which fails after "
            "shutdown_timeout, whatever srun's options.",
        ],
        mistakes=SECONDS_MISTAKES,
    ),
    Exercise(
        id="multiprocess.job_ending",
        title="Read a failed job: which ending, which fix",
        chapter=CHAPTER,
        reference=job_ending,
        cases=[
            Case("one job of each kind, jobs 1000 to 1008 (each ending and fix "
                 "compared by its name)", job_calls(9, first=1000),
                 runner=each_call(ending_choice), dtype="any"),
            Case("three jobs in which a partner's all-reduce failed: 1002 (a raise "
                 "under the hook), 1013 (an early finish) and 1017 (a raise under "
                 "the hook, with --kill-on-bad-exit); beside them 1003 (a raise), "
                 "1004 (an early finish) and 1007 (out of memory)",
                 job_calls(jobs=(1002, 1013, 1017, 1003, 1004, 1007)),
                 runner=each_call(ending_choice), dtype="any"),
            Case("27 jobs from a random number on (seed 21)", job_calls(27),
                 runner=each_call(ending_choice), seed=21, dtype="any"),
            Case("27 more (seed 22)", job_calls(27), runner=each_call(ending_choice),
                 seed=22, dtype="any"),
        ],
        hints=[
            "Start with the state in the sacct line: three states name their "
            "ending by themselves. Only FAILED needs the log.",
            "A FAILED job's log can hold several of the chapter's messages at once. "
            "Ask which of them came first, and which is only a consequence: what "
            "does a heartbeat timeout do to the shutdown barrier?",
            "At the shutdown barrier, a process either raised (and did not exit) "
            "or finished early. Which of the two leaves an error of the "
            "program's own in the log? (The others print none: no partner has "
            "left their collective.)",
        ],
        mistakes=job_ending_table(job_ending),
    ),
)
