"""Reference code for chapter 7's exercises: keeping several processes in step.

Importing this module registers the exercises ``multiprocess.process_rows``,
``multiprocess.common_num_steps``, ``multiprocess.sum_metrics``,
``multiprocess.run_epoch``, ``multiprocess.global_batch``,
``multiprocess.epoch_records`` and ``multiprocess.seconds_to_end`` with
:mod:`jaxcourse.exercises`: their references, cases, hints and known mistakes.

How each answer is run as several processes would run it is the part of
:mod:`solutions.multiprocess_checks` (in this process) and
:mod:`solutions.multiprocess_harness` (launched). The first three are checked
in this process, ``sum_metrics`` once per simulated process with a stand-in
collective matched by call order (:func:`simulate_processes`). ``run_epoch``
and ``global_batch`` are checked in this process first, then for real, in 2
launched processes (:func:`launch_run_epoch`, :func:`launch_global_batch`),
where a hang is cut short (a process left waiting by a partner that has
finished, at once; any other, by the launcher's timeout) and reported as a
failed test.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.numerics import FLOAT32_ROUNDOFF
from solutions.multiprocess_checks import (
    every_failure,
    every_process,
    global_values,
    in_one_process,
    one_device_rows,
    simulate_processes,
)
from solutions.multiprocess_harness import (
    GLOBAL_DEVICES_PER_PROCESS,
    LAUNCH_PROCESSES,
    launch_global_batch,
    launch_run_epoch,
    not_relaunched,
    prepare_global_batch,
    prepare_run_epoch,
)
from solutions.multiprocess_mistakes import (
    _end_crash_at_the_barrier,
    _end_finish_never,
    _end_kill_always_at_once,
    _end_raise_exits_at_once,
    _end_timeouts_swapped,
    _records_not_shuffled,
    _records_rows_of_the_whole_order,
    _records_same_every_epoch,
    _records_seed_plus_epoch,
    _records_whole_batch,
    _rows_ceil,
    _rows_ignoring_remainder,
    _rows_inclusive,
    _rows_interleaved,
    _rows_rest_to_last,
)

CHAPTER = "07_multiprocess"

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
    course's hook) exits with an error: ``--kill-on-bad-exit`` ends the step
    then, and without it the coordinator misses its heartbeats. A process
    that raised without the hook, or finished early, waits at the shutdown
    barrier, which fails after ``shutdown_timeout``.
    """
    if how == "crash" or (how == "raise" and hook):
        return 0.0 if kill_on_bad_exit else float(heartbeat_timeout)
    return float(shutdown_timeout)


# --------------------------------------------------------------------------
# Checker specs
# --------------------------------------------------------------------------


def _rows_case(n: int, count: int) -> Case:
    return Case(f"the rows of all {count} processes for {n} records",
                lambda rng: (n, count), runner=every_process, dtype="kind")


def _random_rows(seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        return int(rng.integers(20, 200)), int(rng.integers(2, 9))

    return Case(f"the rows of every process for a random record and process "
                f"count (seed {seed})", inputs, runner=every_process, seed=seed,
                dtype="kind")


def _steps_case(sizes: list[int], batch: int) -> Case:
    return Case(f"common_num_steps({sizes}, {batch})", lambda rng: (sizes, batch),
                dtype="kind")


def _random_steps(seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        count = int(rng.integers(2, 9))
        batch = int(rng.integers(8, 65))
        return [int(s) for s in rng.integers(5 * batch, 12 * batch, count)], batch

    return Case(f"random sizes for 2 to 8 processes (seed {seed})", inputs,
                seed=seed, dtype="kind")


METRICS = [
    [("loss", 1.0), ("accuracy", 0.5), ("examples", 250.0)],
    [("examples", 240.0), ("loss", 2.0), ("accuracy", 0.25)],
    [("accuracy", 0.75), ("examples", 260.0), ("loss", 4.0)],
]
MORE_METRICS = [
    [("loss", 0.5), ("accuracy", 0.9), ("examples", 64.0), ("steps", 2.0),
     ("grad_norm", 3.0)],
    [("grad_norm", 1.0), ("steps", 2.0), ("examples", 64.0), ("accuracy", 0.8),
     ("loss", 0.25)],
    [("steps", 2.0), ("loss", 1.5), ("grad_norm", 2.0), ("accuracy", 0.7),
     ("examples", 60.0)],
    [("examples", 62.0), ("grad_norm", 5.0), ("accuracy", 0.6), ("loss", 0.75),
     ("steps", 2.0)],
]


def _metrics_case(description: str, per_process: list) -> Case:
    # The harness sums in float64, in one order for every answer: the sums are
    # the same numbers, except for an answer that gathers the values in a
    # float32 array, which rounds each within u; the values are positive, so
    # the sum moves by u of itself, and by u more if it is kept in float32.
    return Case(description, lambda rng: (per_process,), runner=simulate_processes,
                dtype="any", rtol=2 * FLOAT32_ROUNDOFF, atol=0.0)


def _sum_in_dict_order(local_metrics, allreduce):
    return {name: allreduce(value) for name, value in local_metrics.items()}


def _sum_in_set_order(local_metrics, allreduce):
    return {name: allreduce(local_metrics[name]) for name in set(local_metrics)}


def _sum_locally(local_metrics, allreduce):
    return {name: local_metrics[name] for name in sorted(local_metrics)}


#: The launched scenarios, (records of each process, batch size): the step
#: counts (3 and 2, then 3 and 5) differ between the processes, so counting
#: one's own batches hangs; every process can run 2 steps in the first and 3
#: in the second, so no fixed count fits both; and in the second, dividing
#: all the records evenly (26 / 2 / 3: 4 steps) asks process 0 for a batch it
#: does not have.
EPOCH_SCENARIOS = [[[12, 9], 4], [[9, 17], 3]]


def _epoch_inputs(rng: np.random.Generator) -> tuple:
    return (EPOCH_SCENARIOS,)


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


def _padding_case(description: str, rows: int, length: int, max_len: int,
                  seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        local = rng.normal(size=(rows, length)).astype(np.float32)
        return local, max_len, one_device_rows()

    return Case(description, inputs, extract=global_values, seed=seed)


GLOBAL_SCENARIOS = [(4, [6, 9], 10), (8, [5, 3], 8)]


def _global_inputs(rng: np.random.Generator) -> tuple:
    return (GLOBAL_SCENARIOS,)


def _records_case(description: str, args: tuple) -> Case:
    return Case(description, lambda rng: args, dtype="kind")


def _random_records(seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        batch = 4 * int(rng.integers(2, 9))
        steps = int(rng.integers(2, 6))
        quarter = int(rng.integers(0, 4)) * batch // 4
        records = steps * batch + int(rng.integers(0, batch))  # a remainder too
        return (int(rng.integers(0, 2**31)), int(rng.integers(0, 10)),
                int(rng.integers(0, steps)), records, batch,
                slice(quarter, quarter + batch // 4))

    return Case(f"random seed, epoch, step and sizes, a quarter of each global "
                f"batch (seed {seed})", inputs, seed=seed, dtype="kind")


register(
    Exercise(
        id="multiprocess.process_rows",
        title="Each process's share of the records",
        chapter=CHAPTER,
        reference=process_rows,
        cases=[
            _rows_case(8, 4),
            _rows_case(10, 4),
            _rows_case(1000, 3),
            _rows_case(5, 8),
            _random_rows(1),
            _random_rows(2),
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
            _steps_case([1000, 1000, 1000, 900], 100),
            _steps_case([900, 1000, 1000, 1000], 100),
            _steps_case([130, 250], 64),
            _steps_case([640, 600, 700], 64),
            _steps_case([10, 500], 16),
            _random_steps(3),
            _random_steps(4),
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
            _metrics_case("3 processes, metrics loss/accuracy/examples, each dict "
                          "in its own order", METRICS),
            _metrics_case("4 processes, 5 metrics in 4 different orders",
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
                 "step results)", _epoch_inputs, runner=launch_run_epoch,
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
            _padding_case("in one process: 4 rows of length 7, padded to 10", 4, 7,
                          10, seed=5),
            _padding_case("in one process: 6 rows of length 3, padded to 5", 6, 3, 5,
                          seed=6),
            _padding_case("in one process: 5 rows that already have the agreed "
                          "length 8", 5, 8, 8, seed=7),
            Case(f"launched in {LAUNCH_PROCESSES} processes of "
                 f"{GLOBAL_DEVICES_PER_PROCESS} devices: 4 rows each, of lengths 6 "
                 "and 9, padded to 10; then 8 rows each, of lengths 5 and 3, padded "
                 "to 8 (in each process: the global shape, the sum under jit and "
                 "the gathered array)", _global_inputs, runner=launch_global_batch,
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
            _records_case("the chapter's epochs.py: seed 2026, epoch 0, step 0, 48 "
                          "records in global batches of 16, rows 4 to 8 (process 1)",
                          (2026, 0, 0, 48, 16, slice(4, 8))),
            _records_case("the same step in epoch 1",
                          (2026, 1, 0, 48, 16, slice(4, 8))),
            _records_case("seed 7, epoch 2, step 3: 100 records in global batches of "
                          "20, rows 15 to 20", (7, 2, 3, 100, 20, slice(15, 20))),
            _random_records(8),
            _random_records(9),
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
        mistakes=[
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
        ],
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
        ],
        hints=[
            "First ask whether process 2 is gone at once, with an error: a crash "
            "always is, and so is an exception when the hook calls os._exit(1).",
            "A process that is gone: --kill-on-bad-exit ends the others at once; "
            "without it, the coordinator notices the missing heartbeats after "
            "heartbeat_timeout.",
            "A process still alive (an exception without the hook, or done early "
            "with exit code 0) waits at the shutdown barrier, which fails after "
            "shutdown_timeout, whatever srun's options.",
        ],
        mistakes=[
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
        ],
    ),
)
