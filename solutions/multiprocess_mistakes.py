"""Named wrong answers of chapter 7's exercises, as a learner writes them.

:mod:`solutions.multiprocess` names one in the feedback when an answer
returns what it returns: here those of ``process_rows``, ``epoch_records``
and ``seconds_to_end``. (The launched exercises keep theirs beside their
references, where the harness marks them.)
"""

from __future__ import annotations

import numpy as np


def _gone_at_once(how, hook):
    # A crash, or an exception under the course's hook: the process is gone.
    return how == "crash" or (how == "raise" and hook)


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


def _end_kill_always_at_once(how, hook, kill, heartbeat, shutdown):
    # --kill-on-bad-exit taken to end the step whatever the process did.
    if kill:
        return 0.0
    return float(heartbeat if _gone_at_once(how, hook) else shutdown)


def _end_raise_exits_at_once(how, hook, kill, heartbeat, shutdown):
    # An exception taken to end the process, with or without the hook.
    if how in ("crash", "raise"):
        return 0.0 if kill else float(heartbeat)
    return float(shutdown)


def _end_crash_at_the_barrier(how, hook, kill, heartbeat, shutdown):
    # A crashed process taken to wait at the shutdown barrier.
    if how == "crash":
        return 0.0 if kill else float(shutdown)
    if how == "raise" and hook:
        return 0.0 if kill else float(heartbeat)
    return float(shutdown)


def _end_timeouts_swapped(how, hook, kill, heartbeat, shutdown):
    # The heartbeat's timeout and the barrier's, each in the other's place.
    if _gone_at_once(how, hook):
        return 0.0 if kill else float(shutdown)
    return float(heartbeat)


def _end_finish_never(how, hook, kill, heartbeat, shutdown):
    # A process that finished early taken to leave the others waiting forever.
    if how == "finish":
        return float("inf")
    if _gone_at_once(how, hook):
        return 0.0 if kill else float(heartbeat)
    return float(shutdown)


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
