"""Answers to chapter 8's exercises (topic ``multiprocess``), as learners write them.

What checking each must give is in ``multiprocess.toml``. The checks of
``run_epoch`` and ``global_batch`` launch these answers in 2 real JAX
processes (each copies the function's source into a worker script), so they
must be module-level functions here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

# ---- exercise 1: process_rows -------------------------------------------------


def rows_ignoring_remainder(num_records, process_index, process_count):
    share = num_records // process_count
    return np.arange(num_records)[process_index * share:][:share]


def rows_interleaved(num_records, process_index, process_count):
    return np.arange(num_records)[process_index::process_count]


def rows_rest_to_last(num_records, process_index, process_count):
    bounds = [p * (num_records // process_count) for p in range(process_count)]
    bounds.append(num_records)
    return np.arange(bounds[process_index], bounds[process_index + 1])


def rows_rounded_up(num_records, process_index, process_count):
    per = -(-num_records // process_count)
    return np.arange(process_index * per, min((process_index + 1) * per, num_records))


def rows_one_based_rank(num_records, process_index, process_count):
    return np.array_split(np.arange(num_records), process_count)[
        (process_index + 1) % process_count]


def rows_array_split(num_records, process_index, process_count):  # correct
    return np.array_split(np.arange(num_records), process_count)[process_index]


def rows_jnp_loop(num_records, process_index, process_count):  # correct
    sizes = [num_records // process_count + (p < num_records % process_count)
             for p in range(process_count)]
    start = sum(sizes[:process_index])
    return jnp.arange(start, start + sizes[process_index], dtype=jnp.int32)


def rows_as_list(num_records, process_index, process_count):  # correct: a list
    share, left = divmod(num_records, process_count)
    first = sum(share + (p < left) for p in range(process_index))
    return list(range(first, first + share + (process_index < left)))


# ---- exercise 2: common_num_steps ---------------------------------------------


def steps_largest_count(local_sizes, batch_size):
    return max(size // batch_size for size in local_sizes)


def steps_process_zero(local_sizes, batch_size):
    return local_sizes[0] // batch_size


def steps_rounded_up(local_sizes, batch_size):
    return min(-(-size // batch_size) for size in local_sizes)


def steps_average(local_sizes, batch_size):
    return sum(local_sizes) // batch_size // len(local_sizes)


def steps_global_batches(local_sizes, batch_size):
    return sum(local_sizes) // batch_size


def steps_with_numpy(local_sizes, batch_size):  # correct
    return int(np.min(np.asarray(local_sizes)) // batch_size)


def steps_with_jnp(local_sizes, batch_size):  # correct, a JAX integer
    return jnp.min(jnp.asarray(local_sizes) // batch_size)


def steps_with_a_loop(local_sizes, batch_size):  # correct, a NumPy integer
    fewest = np.int64(local_sizes[0] // batch_size)
    for size in local_sizes[1:]:
        fewest = min(fewest, np.int64(size // batch_size))
    return fewest


# ---- exercise 3: sum_metrics --------------------------------------------------


def metrics_in_dict_order(local_metrics, allreduce):
    return {name: allreduce(value) for name, value in local_metrics.items()}


def metrics_in_set_order(local_metrics, allreduce):
    return {name: allreduce(local_metrics[name]) for name in set(local_metrics)}


def metrics_not_reduced(local_metrics, allreduce):
    return dict(sorted(local_metrics.items()))


def metrics_one_array_dict_order(local_metrics, allreduce):
    names = list(local_metrics)
    return dict(zip(names, allreduce(np.array([local_metrics[n] for n in names])),
                    strict=True))


def metrics_skipping_zeros(local_metrics, allreduce):
    # Skips a collective where this process's value happens to be 0: a hang.
    return {n: allreduce(v) for n, v in sorted(local_metrics.items()) if v > 0.5}


def metrics_sorted_items(local_metrics, allreduce):  # correct
    return {name: float(allreduce(value))
            for name, value in sorted(local_metrics.items())}


def metrics_one_sorted_array(local_metrics, allreduce):  # correct: one collective
    names = sorted(local_metrics)
    totals = allreduce(jnp.array([local_metrics[n] for n in names], jnp.float32))
    return {n: t for n, t in zip(names, np.asarray(totals), strict=True)}


def metrics_plain_string_keys(local_metrics, allreduce):  # correct, fixed names
    return {name: allreduce(local_metrics[name])
            for name in sorted(str(k) for k in local_metrics)}


# ---- exercise 4: run_epoch, launched --------------------------------------------


def epoch_local_count(local_data, batch_size, step):
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(len(local_data) // batch_size)]


def epoch_max_count(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.max(counts)))]


def epoch_always_first_batch(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[:batch_size]) for _ in range(int(np.min(counts)))]


def epoch_overlapping(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i:i + batch_size]) for i in range(int(counts.min()))]


def epoch_one_short(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    last = int(np.min(counts)) - 1
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(last)]


def epoch_with_break(local_data, batch_size, step):  # correct
    sizes = multihost_utils.process_allgather(jnp.int32(local_data.shape[0]))
    results = []
    for start in range(0, len(local_data), batch_size):
        if start + batch_size > int(sizes.min()):
            break
        results.append(step(local_data[start:start + batch_size]))
    return results


def epoch_while_loop(local_data, batch_size, step):  # correct
    mine = np.array(len(local_data) // batch_size)
    everyone = multihost_utils.process_allgather(mine)
    results, i = [], 0
    while i < int(everyone.min()):
        results.append(step(local_data[i * batch_size:(i + 1) * batch_size]))
        i += 1
    return results


def epoch_reshaped(local_data, batch_size, step):  # correct: a tuple of results
    counts = multihost_utils.process_allgather(jnp.array(len(local_data) // batch_size))
    steps = int(jnp.min(counts))
    batches = np.asarray(local_data[:steps * batch_size]).reshape(steps, batch_size)
    return tuple(step(batch) for batch in batches)


# ---- exercise 5: global_batch, in one process and launched ------------------------


def global_not_padded(local_batch, max_len, sharding):
    return jax.make_array_from_process_local_data(sharding, local_batch)


def global_pad_every_axis(local_batch, max_len, sharding):
    extra = max_len - local_batch.shape[-1]
    return jax.make_array_from_process_local_data(sharding, np.pad(local_batch, extra))


def global_zeros_first(local_batch, max_len, sharding):
    zeros = np.zeros((local_batch.shape[0], max_len - local_batch.shape[1]),
                     local_batch.dtype)
    padded = np.concatenate([zeros, local_batch], axis=1)
    shape = (padded.shape[0] * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_left_on_host(local_batch, max_len, sharding):
    return np.pad(local_batch, ((0, 0), (0, max_len - local_batch.shape[1])))


def global_shape_of_this_process(local_batch, max_len, sharding):
    padded = np.pad(local_batch, ((0, 0), (0, max_len - local_batch.shape[1])))
    return jax.make_array_from_process_local_data(sharding, padded, padded.shape)


def global_rows_per_device(local_batch, max_len, sharding):
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    shape = (rows * jax.device_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_with_jnp(local_batch, max_len, sharding):  # correct
    rows, length = local_batch.shape
    padded = jnp.zeros((rows, max_len), local_batch.dtype).at[:, :length].set(
        local_batch)
    return jax.make_array_from_process_local_data(
        sharding, padded, (jax.process_count() * rows, max_len))


def global_shape_inferred(local_batch, max_len, sharding):  # correct once padded
    width = max_len - local_batch.shape[1]
    return jax.make_array_from_process_local_data(
        sharding, np.pad(local_batch, [(0, 0), (0, width)]))


def global_from_mesh_and_spec(local_batch, max_len, sharding):  # correct (docs)
    padded = np.zeros((len(local_batch), max_len), np.float32)
    padded[:, :local_batch.shape[1]] = local_batch
    return multihost_utils.host_local_array_to_global_array(
        padded, sharding.mesh, sharding.spec)


def epoch_two_steps(local_data, batch_size, step):
    # Every scenario shown has two steps: a count written in, not computed.
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(2)]


def epoch_divide_evenly(local_data, batch_size, step):
    # "Total records ÷ processes ÷ batch size": right only when the records
    # are spread evenly.
    total = multihost_utils.process_allgather(np.int32(len(local_data))).sum()
    steps = int(total) // jax.process_count() // batch_size
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(steps)]


# ---- exercise 6: epoch_records ----------------------------------------------------


def records_one_seed_for_all_epochs(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng(seed).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def records_seed_plus_epoch(seed, epoch, step, num_records, batch_size, rows):
    rng = np.random.default_rng(seed + epoch)
    return rng.permutation(num_records)[step * batch_size:][:batch_size][rows]


def records_rows_first(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[rows]


def records_global_batch(seed, epoch, step, num_records, batch_size, rows):
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size]


def records_in_file_order(seed, epoch, step, num_records, batch_size, rows):
    start = step * batch_size
    return np.arange(start + rows.start, start + rows.stop)


def records_epoch_as_seed(seed, epoch, step, num_records, batch_size, rows):
    perm = np.random.default_rng(epoch).permutation(num_records)
    start = step * batch_size
    return perm[start:start + batch_size][rows]


def records_epoch_first(seed, epoch, step, num_records, batch_size, rows):
    perm = np.random.default_rng((epoch, seed)).permutation(num_records)
    return perm[step * batch_size:(step + 1) * batch_size][rows]


def records_reshuffle_each_epoch(seed, epoch, step, num_records, batch_size, rows):
    rng = np.random.default_rng(seed)
    perm = np.arange(num_records)
    for _ in range(epoch + 1):  # a fresh shuffle every epoch, from one stream
        perm = rng.permutation(num_records)
    return perm[step * batch_size:(step + 1) * batch_size][rows]


def records_legacy_random_state(seed, epoch, step, num_records, batch_size, rows):
    perm = np.random.RandomState([seed, epoch]).permutation(num_records)
    return perm[step * batch_size:(step + 1) * batch_size][rows]


def records_one_based_step(seed, epoch, step, num_records, batch_size, rows):
    perm = np.random.default_rng([seed, epoch]).permutation(num_records)
    first = (step + 1) * batch_size  # step 1 is the first batch
    return perm[first:first + batch_size][rows]


def records_shuffle_the_batch(seed, epoch, step, num_records, batch_size, rows):
    rng = np.random.default_rng([seed, epoch])
    batch = np.arange(num_records)[step * batch_size:(step + 1) * batch_size]
    return rng.permutation(batch)[rows]


def records_by_local_share(seed, epoch, step, num_records, batch_size, rows):
    perm = np.random.default_rng([seed, epoch]).permutation(num_records)
    mine = np.arange(batch_size)[rows]  # this process's positions in a batch
    return perm[step * len(mine) + mine]


def records_fresh_order_each_step(seed, epoch, step, num_records, batch_size,
                                  rows):
    rng = np.random.default_rng([seed, epoch, step])
    return rng.permutation(num_records)[:batch_size][rows]


def records_generator_pcg64(seed, epoch, step, num_records, batch_size,
                            rows):  # correct
    rng = np.random.Generator(np.random.PCG64([seed, epoch]))
    block = rng.permutation(num_records).reshape(-1)[step * batch_size:]
    return block[:batch_size][rows]


def records_with_take(seed, epoch, step, num_records, batch_size, rows):  # correct
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    positions = step * batch_size + np.arange(batch_size)[rows]
    return np.take(order, positions)


def records_as_jnp(seed, epoch, step, num_records, batch_size, rows):  # correct: int32
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return jnp.asarray(order[step * batch_size:(step + 1) * batch_size][rows])


# ---- exercise 7: seconds_to_end ---------------------------------------------------


def _gone(kill_on_bad_exit, heartbeat):
    # Right for a process gone with an error: srun's SIGKILL 30 s (KillWait)
    # after its SIGTERM, or the heartbeat timeout, the sooner.
    return min(30.0, float(heartbeat)) if kill_on_bad_exit else float(heartbeat)


def end_kill_at_once(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    # The old rule: srun's SIGTERM taken to end the others at once.
    if how == "crash" or (how == "raise" and hook):
        return 0.0 if kill_on_bad_exit else float(heartbeat)
    return float(shutdown)


def end_kill_wait_only(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "crash" or (how == "raise" and hook):
        return 30.0 if kill_on_bad_exit else float(heartbeat)
    return float(shutdown)


def end_kill_fixes_everything(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if kill_on_bad_exit:
        return min(30.0, float(heartbeat))
    return float(heartbeat if how == "crash" or (how == "raise" and hook) else shutdown)


def end_raise_is_a_crash(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how in ("raise", "crash"):
        return _gone(kill_on_bad_exit, heartbeat)
    return float(shutdown)


def end_crash_waits_at_the_barrier(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "raise" and hook:
        return _gone(kill_on_bad_exit, heartbeat)
    if how == "crash" and kill_on_bad_exit:
        return min(30.0, float(shutdown))
    return float(shutdown)


def end_timeouts_swapped(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "crash" or (how == "raise" and hook):
        return min(30.0, float(shutdown)) if kill_on_bad_exit else float(shutdown)
    return float(heartbeat)


def end_finish_never_ends(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "finish":
        return float("inf")
    if how == "crash" or hook:
        return _gone(kill_on_bad_exit, heartbeat)
    return float(shutdown)


def end_hook_does_nothing(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "crash":
        return _gone(kill_on_bad_exit, heartbeat)
    return float(shutdown)  # an exception or an early finish: the barrier


def end_gone_is_instant(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "crash" or (how == "raise" and hook):
        return 0.0
    return float(shutdown)


def end_barrier_after_heartbeat(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "crash" or (how == "raise" and hook):
        return _gone(kill_on_bad_exit, heartbeat)
    return float(heartbeat) + float(shutdown)


def end_finish_is_clean(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    if how == "finish":
        return 0.0  # exit code 0: nothing to wait for
    if how == "crash" or (how == "raise" and hook):
        return _gone(kill_on_bad_exit, heartbeat)
    return float(shutdown)


def end_with_a_table(how, hook, kill_on_bad_exit, heartbeat, shutdown):  # correct
    gone = {"raise": hook, "crash": True, "finish": False}[how]
    return (min(30, heartbeat) if kill_on_bad_exit else heartbeat) if gone else shutdown


def end_alive_first(how, hook, kill_on_bad_exit, heartbeat, shutdown):  # correct
    still_alive = how == "finish" or (how == "raise" and not hook)
    if still_alive:
        return float(shutdown)
    kill_wait = 30  # Slurm's default KillWait: SIGKILL after srun's SIGTERM
    return min(kill_wait, heartbeat) if kill_on_bad_exit else heartbeat


def end_as_numpy(how, hook, kill_on_bad_exit, heartbeat, shutdown):  # correct
    gone = how == "crash" or (how == "raise" and hook)
    ended = np.where(kill_on_bad_exit, np.minimum(30, heartbeat), heartbeat)
    seconds = np.where(gone, ended, shutdown)
    return np.float32(seconds)


def end_fits_the_defaults_only(how, hook, kill_on_bad_exit, heartbeat, shutdown):
    # Right for the chapter's timeouts and JAX's defaults, and for no others.
    gone = how == "crash" or (how == "raise" and hook)
    if gone:
        return (3.0 if shutdown == 5 else 30.0 if kill_on_bad_exit else 100.0)
    return 5.0 if heartbeat == 3 else 300.0


# ---- exercise 8: job_ending -------------------------------------------------------

_LATER = "save, then resubmit with --dependency=afterany"
_REQUEUE = "save, and submit with --requeue"
_BY_STATE = {"TIMEOUT": ("time limit", _LATER), "PREEMPTED": ("preemption", _REQUEUE),
             "OUT_OF_MEMORY": ("out of memory", "ask for more memory")}


def _failed(log):  # correct, for a FAILED job
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        import re
        own = re.search(r"^\d+: [A-Za-z]*Error: ", log, re.M)
        return "shutdown barrier", ("exit at once on an exception" if own
                                    else "agree on the number of steps")
    return "kill-on-bad-exit", "fix the failing task"


def job_exit_code_first(log, sacct):
    if "Exited with exit code 1" in log and " FAILED " in sacct:
        return "kill-on-bad-exit", "fix the failing task"
    state = sacct.split()[2]
    return _BY_STATE[state] if state in _BY_STATE else _failed(log)


def job_barrier_before_heartbeat(log, sacct):
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if "Shutdown barrier has failed" in log:
        return _failed(log.replace("stopped sending heartbeats", "heartbeat"))
    return _failed(log)


def job_any_traceback(log, sacct):  # wrong: a partner's all-reduce may fail there
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    ending, fix = _failed(log)
    if ending == "shutdown barrier":
        fix = ("exit at once on an exception" if "Traceback" in log
               else "agree on the number of steps")
    return ending, fix


def job_failed_is_srun(log, sacct):
    state = sacct.split()[2]
    return _BY_STATE.get(state, ("kill-on-bad-exit", "fix the failing task"))


def job_cancelled_means_time_limit(log, sacct):
    if "CANCELLED" in log:
        return "time limit", _LATER
    state = sacct.split()[2]
    return _BY_STATE[state] if state in _BY_STATE else _failed(log)


def job_requeue_after_a_time_limit(log, sacct):
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", _REQUEUE
    if state == "PREEMPTED":
        return "preemption", _LATER
    return _BY_STATE[state] if state in _BY_STATE else _failed(log)


def job_sigterm_means_preemption(log, sacct):
    state = sacct.split()[2]
    if "SIGTERM caught" in log and state != "TIMEOUT":
        return "preemption", _REQUEUE
    return _BY_STATE[state] if state in _BY_STATE else _failed(log)


def job_barrier_means_steps(log, sacct):
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if "stopped sending heartbeats" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier has failed" in log:
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_barrier_means_exception(log, sacct):
    ending, fix = job_with_a_table(log, sacct)
    if ending == "shutdown barrier":
        fix = "exit at once on an exception"  # a barrier fails on a raise
    return ending, fix


def job_failed_means_heartbeat(log, sacct):
    state = sacct.split()[2]
    return _BY_STATE.get(state, ("heartbeat timeout", "add --kill-on-bad-exit=1"))


def job_heartbeat_fix_the_task(log, sacct):
    ending, fix = job_with_a_table(log, sacct)
    if ending == "heartbeat timeout":
        fix = "fix the failing task"  # the crash is what needs fixing
    return ending, fix


def job_kill_asks_for_the_option(log, sacct):
    ending, fix = job_with_a_table(log, sacct)
    if ending == "kill-on-bad-exit":
        fix = "add --kill-on-bad-exit=1"
    return ending, fix


def job_preemption_anywhere(log, sacct):
    if "preemption" in log.lower():
        return "preemption", _REQUEUE
    return job_with_a_table(log, sacct)


def job_exit_code_any_state(log, sacct):
    if "Exited with exit code" in log:
        return "kill-on-bad-exit", "fix the failing task"
    return job_with_a_table(log, sacct)


def job_cancelled_but_not_preempted(log, sacct):
    if "CANCELLED" in log and "DUE TO PREEMPTION" not in log:
        return "time limit", _LATER
    return job_with_a_table(log, sacct)


def job_abort_is_heartbeat(log, sacct):
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if sacct.split()[3].startswith("134"):  # JAX aborted: the heartbeat
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    return "kill-on-bad-exit", "fix the failing task"


def job_memory_as_failed(log, sacct):
    state = sacct.split()[2]
    if state in ("TIMEOUT", "PREEMPTED"):
        return _BY_STATE[state]
    return _failed(log)


def job_with_a_table(log, sacct):  # correct
    state = sacct.split()[2]
    return _BY_STATE[state] if state in _BY_STATE else _failed(log)


def job_line_by_line(log, sacct):  # correct: reads the log once, as a list
    *_, state, _code = sacct.split()
    if state != "FAILED":
        return list(_BY_STATE[state])
    seen = set()
    for line in log.splitlines():
        text = line.split(": ", 1)[-1]
        if "stopped sending heartbeats" in text:
            seen.add("heartbeat")
        elif "Shutdown barrier has failed" in text:
            seen.add("barrier")
        elif text.split(":")[0].endswith("Error") and "." not in text.split(":")[0]:
            seen.add("own error")
    if "heartbeat" in seen:
        return ["heartbeat timeout", "add --kill-on-bad-exit=1"]
    if "barrier" in seen:
        raised = "own error" in seen
        return ["shutdown barrier", "exit at once on an exception" if raised
                else "agree on the number of steps"]
    return ["kill-on-bad-exit", "fix the failing task"]


def job_from_the_srun_lines(log, sacct):  # correct: srun's own words first
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if "Killed" in log and "Aborted" not in log:  # srun ended the others
        return "kill-on-bad-exit", "fix the failing task"
    return _failed(log)
