"""Answers written from the exercise texts alone (chapters 6 and 8: memory, clusters).

See benchmarks/named_mistakes.py. ``ANSWERS`` holds the wrong ones, as the
other files of this folder do; ``RIGHT`` holds answers that are right though
written unlike the references (floats, NumPy, tables, other calls), which the
checks must accept: a rejection among them is a false verdict.

Each answer reads only its exercise's text, in
``exercises/06_scaling_exercises.ipynb`` (``state_bytes_per_device``,
``step_memory``, ``remat_policy``) and
``exercises/08_multiprocess_exercises.ipynb`` (``epoch_records``,
``seconds_to_end``, ``job_ending``), and what those texts name: a ``Size``
(``width``, ``layers``, ``hidden``), the chapter's step, ``REMAT_POLICIES``,
``ENDINGS`` and ``FIXES`` and the logs ``job_log(n)`` prints.
"""

from __future__ import annotations

import re

import jax
import numpy as np

_COPIES = 4  # parameters, gradients, Adam's two moments
_F32 = 4


def _params(size) -> int:
    """The chapter's blocks: w_in (d, 4d) and w_out (4d, d), no biases."""
    return size.layers * 2 * size.width * size.hidden


def _pieces(layout, data, model) -> int:
    return {"data parallel": 1, "FSDP": data, "tensor parallel": model,
            "FSDP + TP": data * model}[layout]


# ---------------------------------------------------------------------------
# Chapter 6, exercise 1: scaling.state_bytes_per_device
# ---------------------------------------------------------------------------


def state_bytes_per_device__right_formula(size, layout, data, model):
    """Sixteen bytes per parameter, divided by the pieces of each weight."""
    return _COPIES * _F32 * _params(size) // _pieces(layout, data, model)


def state_bytes_per_device__right_float(size, layout, data, model):
    """The same as a float, dividing by each sharded axis in turn."""
    total = 16.0 * size.layers * (size.width * size.hidden * 2)
    if layout in ("FSDP", "FSDP + TP"):
        total /= data
    if layout in ("tensor parallel", "FSDP + TP"):
        total /= model
    return total


def state_bytes_per_device__right_numpy(size, layout, data, model):
    """Shapes of the weights as NumPy arrays, bytes from their dtype."""
    shapes = [(size.width, size.hidden), (size.hidden, size.width)] * size.layers
    per_copy = sum(np.prod(s) for s in shapes) * np.dtype(np.float32).itemsize
    return np.int64(per_copy * 4 // _pieces(layout, data, model))


def state_bytes_per_device__right_per_copy(size, layout, data, model):
    """Each of the four copies counted, each split like the weights."""
    split = _pieces(layout, data, model)
    one_copy = _params(size) * 4 // split
    return sum(one_copy for _ in ("params", "grads", "mu", "nu"))


def state_bytes_per_device__square(size, layout, data, model):
    """Takes each block's matrices as width × width."""
    return 16 * size.layers * 2 * size.width * size.width // _pieces(layout, data,
                                                                     model)


def state_bytes_per_device__bits(size, layout, data, model):
    """Counts 32 per float32 number: bits, not bytes."""
    return _COPIES * 32 * _params(size) // _pieces(layout, data, model)


def state_bytes_per_device__one_block(size, layout, data, model):
    """Counts one block's two matrices, not every layer's."""
    return 16 * 2 * size.width * size.hidden // _pieces(layout, data, model)


def state_bytes_per_device__hybrid_over_model(size, layout, data, model):
    """Splits FSDP + TP over the 'model' axis only, as tensor parallelism does."""
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": model,
              "FSDP + TP": model}[layout]
    return 16 * _params(size) // pieces


def state_bytes_per_device__no_moments(size, layout, data, model):
    """Parameters and gradients: Adam's moments taken for part of the gradients."""
    return 2 * _F32 * _params(size) // _pieces(layout, data, model)


def state_bytes_per_device__step_count(size, layout, data, model):
    """Adds Adam's step count (4 bytes), though the text leaves it out."""
    return 16 * _params(size) // _pieces(layout, data, model) + 4


def state_bytes_per_device__tp_over_every_device(size, layout, data, model):
    """Splits tensor parallelism over all data × model devices."""
    pieces = {"data parallel": 1, "FSDP": data, "tensor parallel": data * model,
              "FSDP + TP": data * model}[layout]
    return 16 * _params(size) // pieces


# ---------------------------------------------------------------------------
# Chapter 6, exercise 2: scaling.step_memory
# ---------------------------------------------------------------------------


def _compiled(step, args, donate=None):
    jitted = jax.jit(step) if donate is None else jax.jit(step, donate_argnums=donate)
    return jitted.lower(*args).compile().memory_analysis()


def step_memory__right_leaves(step, params, opt_state, x, y):
    """nbytes of every leaf of params and opt_state; two compiled programs."""
    args = (params, opt_state, x, y)
    state = sum(leaf.nbytes for leaf in jax.tree.leaves([params, opt_state]))
    return {"state": state,
            "peak": _compiled(step, args).peak_memory_in_bytes,
            "donated_peak": _compiled(step, args, (0, 1)).peak_memory_in_bytes}


def step_memory__right_from_arguments(step, params, opt_state, x, y):
    """The state is the arguments less the batch."""
    args = (params, opt_state, x, y)
    plain = _compiled(step, args)
    return {"state": plain.argument_size_in_bytes - x.nbytes - y.nbytes,
            "peak": plain.peak_memory_in_bytes,
            "donated_peak": _compiled(step, args, [0, 1]).peak_memory_in_bytes}


def step_memory__right_sizes(step, params, opt_state, x, y):
    """Sizes times itemsizes, with tree_util, as ints."""
    leaves = jax.tree_util.tree_leaves((params, opt_state))
    state = int(sum(np.size(a) * np.asarray(a).dtype.itemsize for a in leaves))
    args = (params, opt_state, x, y)
    return dict(state=state, peak=int(_compiled(step, args).peak_memory_in_bytes),
                donated_peak=int(_compiled(step, args,
                                           (0, 1)).peak_memory_in_bytes))


def step_memory__right_by_name(step, params, opt_state, x, y):
    """Donation by argument name, compiled once for each."""
    def named(params, opt_state, x, y):
        return step(params, opt_state, x, y)

    args = (params, opt_state, x, y)
    plain = jax.jit(named).lower(*args).compile().memory_analysis()
    donated = jax.jit(named, donate_argnames=("params", "opt_state")).lower(
        *args).compile().memory_analysis()
    state = sum(a.nbytes for a in jax.tree.leaves(params)) + sum(
        a.nbytes for a in jax.tree.leaves(opt_state))
    return {"state": state, "peak": plain.peak_memory_in_bytes,
            "donated_peak": donated.peak_memory_in_bytes}


def step_memory__state_with_batch(step, params, opt_state, x, y):
    """Takes every argument, the batch too, for the state."""
    args = (params, opt_state, x, y)
    plain = _compiled(step, args)
    return {"state": plain.argument_size_in_bytes,
            "peak": plain.peak_memory_in_bytes,
            "donated_peak": _compiled(step, args, (0, 1)).peak_memory_in_bytes}


def step_memory__peak_is_the_sum(step, params, opt_state, x, y):
    """Adds arguments, outputs and temporaries for the peak."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    found = {}
    for key, donate in (("peak", None), ("donated_peak", (0, 1))):
        m = _compiled(step, args, donate)
        found[key] = (m.argument_size_in_bytes + m.output_size_in_bytes
                      + m.temp_size_in_bytes)
    return {"state": state, **found}


def step_memory__peak_in_and_out(step, params, opt_state, x, y):
    """Takes the peak as what goes in plus what comes out."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    found = {}
    for key, donate in (("peak", None), ("donated_peak", (0, 1))):
        m = _compiled(step, args, donate)
        found[key] = m.argument_size_in_bytes + m.output_size_in_bytes
    return {"state": state, **found}


def step_memory__donate_params(step, params, opt_state, x, y):
    """Donates the parameters alone: donate_argnums=0."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    return {"state": state, "peak": _compiled(step, args).peak_memory_in_bytes,
            "donated_peak": _compiled(step, args, 0).peak_memory_in_bytes}


def step_memory__right_predicted(step, params, opt_state, x, y):
    """Predicts the donated peak as the peak less the state it may overwrite.

    The chapter's prediction, and XLA's number for this step: the whole state
    is overwritten in place.
    """
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    peak = _compiled(step, args).peak_memory_in_bytes
    return {"state": state, "peak": peak, "donated_peak": peak - state}


def step_memory__sixteen_per_parameter(step, params, opt_state, x, y):
    """Takes the chapter's 16 bytes per parameter for the state."""
    args = (params, opt_state, x, y)
    count = sum(a.size for a in jax.tree.leaves(params))
    return {"state": 16 * count, "peak": _compiled(step, args).peak_memory_in_bytes,
            "donated_peak": _compiled(step, args, (0, 1)).peak_memory_in_bytes}


def step_memory__params_and_moments(step, params, opt_state, x, y):
    """Counts the parameters and two moments: three copies of the weights."""
    args = (params, opt_state, x, y)
    weights = sum(a.nbytes for a in jax.tree.leaves(params))
    return {"state": 3 * weights, "peak": _compiled(step, args).peak_memory_in_bytes,
            "donated_peak": _compiled(step, args, (0, 1)).peak_memory_in_bytes}


# ---------------------------------------------------------------------------
# Chapter 6, exercise 3: scaling.remat_policy
# ---------------------------------------------------------------------------

_ORDER = ("no remat", "checkpoint_dots", "full remat")


def _residuals(size, batch, per_hidden, per_width=4, layers=True):
    blocks = size.layers if layers else 1
    return batch * blocks * (per_width * size.width + per_hidden * size.hidden)


def remat_policy__right_table(size, batch, budget_bytes):
    """Measured per block and example: 4 d + 9 h, 4 d + 4 h, 4 d."""
    per_hidden = {"no remat": 9, "checkpoint_dots": 4, "full remat": 0}
    for name in _ORDER:
        if _residuals(size, batch, per_hidden[name]) <= budget_bytes:
            return name
    return None


def remat_policy__right_next(size, batch, budget_bytes):
    """The same with next() over pairs."""
    rows = batch * size.layers
    kept = [("no remat", rows * (4 * size.width + 9 * size.hidden)),
            ("checkpoint_dots", rows * (4 * size.width + 4 * size.hidden)),
            ("full remat", rows * 4 * size.width)]
    return next((name for name, nbytes in kept if nbytes <= budget_bytes), None)


def remat_policy__right_numpy(size, batch, budget_bytes):
    """Bytes as a NumPy array, the first that fits by argmax."""
    per_hidden = np.array([9, 4, 0])
    kept = batch * size.layers * (4 * size.width + per_hidden * size.hidden)
    fits = kept <= budget_bytes
    return _ORDER[int(np.argmax(fits))] if fits.any() else None


def remat_policy__right_parts(size, batch, budget_bytes):
    """Bytes by array: output (f32), relu's output and zeros (f32), mask (bool)."""
    per_example = size.layers * 4 * size.width  # every block's output
    extra = {"no remat": size.hidden * (4 + 4 + 1),
             "checkpoint_dots": size.hidden * 4, "full remat": 0}
    for name in _ORDER:
        if batch * (per_example + size.layers * extra[name]) <= budget_bytes:
            return name
    return None


def remat_policy__eight_per_hidden(size, batch, budget_bytes):
    """Keeps relu's output and the dot's: 8 bytes per hidden unit, no mask."""
    for name, per_hidden in zip(_ORDER, (8, 4, 0), strict=True):
        if _residuals(size, batch, per_hidden) <= budget_bytes:
            return name
    return None


def remat_policy__strictly_under(size, batch, budget_bytes):
    """Fits only strictly under the budget."""
    for name, per_hidden in zip(_ORDER, (9, 4, 0), strict=True):
        if _residuals(size, batch, per_hidden) < budget_bytes:
            return name
    return None


def remat_policy__one_block(size, batch, budget_bytes):
    """Counts one block's residuals for the whole model."""
    for name, per_hidden in zip(_ORDER, (9, 4, 0), strict=True):
        if _residuals(size, batch, per_hidden, layers=False) <= budget_bytes:
            return name
    return None


def remat_policy__most_memory_first(size, batch, budget_bytes):
    """Prefers the policy that keeps least: full remat first."""
    for name, per_hidden in zip(_ORDER[::-1], (0, 4, 9), strict=True):
        if _residuals(size, batch, per_hidden) <= budget_bytes:
            return name
    return None


def remat_policy__none_as_text(size, batch, budget_bytes):
    """Returns the string "none" when nothing fits."""
    for name, per_hidden in zip(_ORDER, (9, 4, 0), strict=True):
        if _residuals(size, batch, per_hidden) <= budget_bytes:
            return name
    return "none"


def remat_policy__hidden_only(size, batch, budget_bytes):
    """Counts the hidden activations only, not the blocks' outputs."""
    for name, per_hidden in zip(_ORDER, (9, 4, 0), strict=True):
        if _residuals(size, batch, per_hidden, per_width=0) <= budget_bytes:
            return name
    return None


def remat_policy__mask_as_float(size, batch, budget_bytes):
    """Counts relu's mask as a float32 array: 12 bytes per hidden unit."""
    for name, per_hidden in zip(_ORDER, (12, 4, 0), strict=True):
        if _residuals(size, batch, per_hidden) <= budget_bytes:
            return name
    return None


# ---------------------------------------------------------------------------
# Chapter 8, exercise 6: multiprocess.epoch_records
# ---------------------------------------------------------------------------


def epoch_records__right_slice(seed, epoch, step, num_records, batch_size, rows):
    """The permutation, the step's block, the rows of it."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    block = order[step * batch_size:(step + 1) * batch_size]
    return block[rows]


def epoch_records__right_offsets(seed, epoch, step, num_records, batch_size, rows):
    """The rows shifted by the block's start, in one slice."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    start = step * batch_size
    return order[start + rows.start:start + rows.stop]


def epoch_records__right_shuffle(seed, epoch, step, num_records, batch_size, rows):
    """Shuffles an arange in place with the same generator."""
    order = np.arange(num_records)
    np.random.default_rng([seed, epoch]).shuffle(order)
    return np.take(order, np.arange(step * batch_size,
                                    (step + 1) * batch_size)[rows])


def epoch_records__right_tuple_seed(seed, epoch, step, num_records, batch_size,
                                    rows):
    """A tuple seed, the same entropy as the list."""
    rng = np.random.default_rng((seed, epoch))
    indices = rng.permutation(num_records)
    return np.asarray(indices[step * batch_size:][:batch_size][rows], np.int64)


def epoch_records__seed_plus_epoch(seed, epoch, step, num_records, batch_size,
                                   rows):
    """Seeds with seed + epoch, a new number each epoch."""
    order = np.random.default_rng(seed + epoch).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__same_each_epoch(seed, epoch, step, num_records, batch_size, rows):
    """Seeds with the seed alone."""
    order = np.random.default_rng(seed).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__pair_reversed(seed, epoch, step, num_records, batch_size, rows):
    """Seeds with [epoch, seed]."""
    order = np.random.default_rng([epoch, seed]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__rows_of_all(seed, epoch, step, num_records, batch_size, rows):
    """Indexes the whole permutation with rows."""
    return np.random.default_rng([seed, epoch]).permutation(num_records)[rows]


def epoch_records__whole_block(seed, epoch, step, num_records, batch_size, rows):
    """Returns the step's whole global batch."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size]


def epoch_records__legacy_numpy(seed, epoch, step, num_records, batch_size, rows):
    """Uses NumPy's RandomState with the pair."""
    order = np.random.RandomState([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__stream_of_epochs(seed, epoch, step, num_records, batch_size,
                                    rows):
    """One generator from the seed, a new permutation drawn per epoch."""
    rng = np.random.default_rng(seed)
    for _ in range(epoch):
        rng.permutation(num_records)
    order = rng.permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


# ---------------------------------------------------------------------------
# Chapter 8, exercise 7: multiprocess.seconds_to_end
# ---------------------------------------------------------------------------


def _killed_or_beats(kill_on_bad_exit, heartbeat_timeout):
    """A process gone with an error: srun's SIGKILL 30 s (KILL_WAIT) after its
    SIGTERM, or the heartbeat timeout, whichever comes first."""
    if kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    return float(heartbeat_timeout)


def seconds_to_end__right_gone(how, hook, kill_on_bad_exit, heartbeat_timeout,
                               shutdown_timeout):
    """Gone at once (crash, or raise with the hook): srun or the heartbeats."""
    gone = how == "crash" or (how == "raise" and hook)
    if gone:
        kill_wait = 30.0  # srun's SIGKILL, unless the heartbeats end them first
        return float(min(kill_wait, heartbeat_timeout) if kill_on_bad_exit
                     else heartbeat_timeout)
    return float(shutdown_timeout)


def seconds_to_end__right_ints(how, hook, kill_on_bad_exit, heartbeat_timeout,
                               shutdown_timeout):
    """The same returning the timeouts as they came."""
    if how == "finish" or (how == "raise" and not hook):
        return shutdown_timeout
    return min(30, heartbeat_timeout) if kill_on_bad_exit else heartbeat_timeout


def seconds_to_end__right_table(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                shutdown_timeout):
    """A table of whether the process exits with an error."""
    exits_with_error = {("crash", True): True, ("crash", False): True,
                        ("raise", True): True, ("raise", False): False,
                        ("finish", True): False, ("finish", False): False}
    if not exits_with_error[(how, bool(hook))]:
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    return float(heartbeat_timeout)


def seconds_to_end__right_numpy(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                shutdown_timeout):
    """np.select over the three outcomes."""
    gone = how == "crash" or (how == "raise" and hook)
    return float(np.select([gone and kill_on_bad_exit, gone],
                           [min(30.0, heartbeat_timeout), heartbeat_timeout],
                           shutdown_timeout))


def seconds_to_end__option_for_all(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                   shutdown_timeout):
    """Takes --kill-on-bad-exit to end everything at once."""
    if kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    gone = how == "crash" or (how == "raise" and hook)
    return float(heartbeat_timeout if gone else shutdown_timeout)


def seconds_to_end__raise_is_gone(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                  shutdown_timeout):
    """Takes any exception for a process that is gone."""
    if how == "finish":
        return float(shutdown_timeout)
    return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)


def seconds_to_end__hook_forgotten(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                   shutdown_timeout):
    """Ignores the hook: a raise waits at the barrier."""
    if how == "crash":
        return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)
    return float(shutdown_timeout)


def seconds_to_end__timeouts_swapped(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                     shutdown_timeout):
    """Uses each timeout in the other's place."""
    gone = how == "crash" or (how == "raise" and hook)
    if gone:
        return _killed_or_beats(kill_on_bad_exit, shutdown_timeout)
    return float(heartbeat_timeout)


def seconds_to_end__gone_ends_at_once(how, hook, kill_on_bad_exit,
                                      heartbeat_timeout, shutdown_timeout):
    """Takes a vanished process to end the others at once."""
    gone = how == "crash" or (how == "raise" and hook)
    return 0.0 if gone else float(shutdown_timeout)


def seconds_to_end__finish_is_harmless(how, hook, kill_on_bad_exit,
                                       heartbeat_timeout, shutdown_timeout):
    """Takes an early finish to end the others at once (exit code 0)."""
    if how == "finish":
        return 0.0
    gone = how == "crash" or (how == "raise" and hook)
    if gone:
        return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)
    return float(shutdown_timeout)


def seconds_to_end__barrier_after_heartbeat(how, hook, kill_on_bad_exit,
                                            heartbeat_timeout, shutdown_timeout):
    """Adds both timeouts for a process waiting at the barrier."""
    gone = how == "crash" or (how == "raise" and hook)
    if gone:
        return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)
    return float(heartbeat_timeout + shutdown_timeout)


# ---------------------------------------------------------------------------
# Chapter 8, exercise 8: multiprocess.job_ending
# ---------------------------------------------------------------------------

_LATER = "save, then resubmit with --dependency=afterany"
_BY_STATE = {"TIMEOUT": ("time limit", _LATER),
             "PREEMPTED": ("preemption", "save, and submit with --requeue"),
             "OUT_OF_MEMORY": ("out of memory", "ask for more memory")}


def _own_error(log):
    # A task's own traceback ends in "N: SomethingError: ..."; JAX's in
    # "N: jax.errors.JaxRuntimeError: ...".
    return re.search(r"^\d+: [A-Za-z_]*Error:", log, re.M) is not None


def job_ending__right_rules(log, sacct):
    """The state first; a FAILED job's log, heartbeat before barrier."""
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if "heartbeat timeout" in log:
        return ("heartbeat timeout", "add --kill-on-bad-exit=1")
    if "Shutdown barrier has failed" in log:
        return ("shutdown barrier", "exit at once on an exception" if _own_error(log)
                else "agree on the number of steps")
    return ("kill-on-bad-exit", "fix the failing task")


def job_ending__right_lines(log, sacct):
    """Reads the log line by line, as a list answer."""
    state = [w for w in sacct.split() if w.isupper()][0]
    if state != "FAILED":
        return list(_BY_STATE[state])
    lines = log.splitlines()
    if any("heartbeat timeout" in line for line in lines):
        return ["heartbeat timeout", "add --kill-on-bad-exit=1"]
    if any("Shutdown barrier has failed" in line for line in lines):
        raised = any(re.match(r"\d+: \w+Error: ", line) for line in lines)
        return ["shutdown barrier", "exit at once on an exception" if raised
                else "agree on the number of steps"]
    return ["kill-on-bad-exit", "fix the failing task"]


def job_ending__right_lower(log, sacct):
    """Case-insensitive search of the log."""
    text = log.lower()
    state = sacct.split()[2]
    if state != "FAILED":
        return _BY_STATE[state]
    if "heartbeat timeout" in text:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "shutdown barrier has failed" in text:
        own = re.search(r"^\d+: (?!jax\.)[\w.]*Error: ", log, re.M)
        return "shutdown barrier", ("exit at once on an exception" if own
                                    else "agree on the number of steps")
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__right_from_tables(log, sacct):
    """Endings and fixes from the text's table, by position."""
    endings = ("kill-on-bad-exit", "heartbeat timeout", "shutdown barrier",
               "time limit", "preemption", "out of memory")
    fixes = ("fix the failing task", "add --kill-on-bad-exit=1",
             "exit at once on an exception", "agree on the number of steps",
             "save, then resubmit with --dependency=afterany",
             "save, and submit with --requeue", "ask for more memory")
    state = sacct.split()[2]
    by_state = {"TIMEOUT": (3, 4), "PREEMPTED": (4, 5), "OUT_OF_MEMORY": (5, 6)}
    if state in by_state:
        e, f = by_state[state]
    elif "heartbeat timeout" in log:
        e, f = 1, 1
    elif "Shutdown barrier has failed" in log:
        e, f = 2, (2 if _own_error(log) else 3)
    else:
        e, f = 0, 0
    return endings[e], fixes[f]


def job_ending__failed_means_srun(log, sacct):
    """Takes every FAILED job for srun's --kill-on-bad-exit."""
    state = sacct.split()[2]
    return _BY_STATE.get(state, ("kill-on-bad-exit", "fix the failing task"))


def job_ending__barrier_read_first(log, sacct):
    """Looks for the shutdown barrier before the heartbeat timeout."""
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if "Shutdown barrier has failed" in log:
        return ("shutdown barrier", "exit at once on an exception" if _own_error(log)
                else "agree on the number of steps")
    if "heartbeat timeout" in log:
        return ("heartbeat timeout", "add --kill-on-bad-exit=1")
    return ("kill-on-bad-exit", "fix the failing task")


def job_ending__right_traceback_means_raised(log, sacct):
    """Takes any traceback at the barrier for the program's own: none else has one."""
    state = sacct.split()[2]
    if state in _BY_STATE:
        return _BY_STATE[state]
    if "heartbeat timeout" in log:
        return ("heartbeat timeout", "add --kill-on-bad-exit=1")
    if "Shutdown barrier has failed" in log:
        return ("shutdown barrier", "exit at once on an exception"
                if "Traceback" in log else "agree on the number of steps")
    return ("kill-on-bad-exit", "fix the failing task")


def job_ending__requeue_the_timeout(log, sacct):
    """Requeues a job that ran out of time, resubmits a preempted one."""
    ending, fix = job_ending__right_rules(log, sacct)
    swap = {"save, then resubmit with --dependency=afterany":
            "save, and submit with --requeue",
            "save, and submit with --requeue":
            "save, then resubmit with --dependency=afterany"}
    return ending, swap.get(fix, fix)


def job_ending__barrier_is_steps(log, sacct):
    """Every shutdown barrier: processes that disagreed on the steps."""
    ending, fix = job_ending__right_rules(log, sacct)
    return (ending, "agree on the number of steps") if ending == "shutdown barrier" \
        else (ending, fix)


def job_ending__exit_code_read(log, sacct):
    """Takes srun's "exited with exit code" for the ending when it appears."""
    if "exit code" in log and sacct.split()[2] == "FAILED":
        return ("kill-on-bad-exit", "fix the failing task")
    return job_ending__right_rules(log, sacct)


def job_ending__cancelled_is_timeout(log, sacct):
    """Takes slurmstepd's CANCELLED for a time limit."""
    if "CANCELLED" in log:
        return _BY_STATE["TIMEOUT"]
    return job_ending__right_rules(log, sacct)


# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------

_TOPICS = {"state_bytes_per_device": "scaling", "step_memory": "scaling",
           "remat_policy": "scaling", "epoch_records": "multiprocess",
           "seconds_to_end": "multiprocess", "job_ending": "multiprocess"}


def _rows(*functions) -> list[tuple[str, object, str]]:
    """(exercise id, function, what) for each, the id from the function's name."""
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        rows.append((f"{_TOPICS[exercise]}.{exercise}", function,
                     function.__doc__.strip().rstrip(".")))
    return rows


_ALL = [value for name, value in dict(globals()).items()
        if callable(value) and "__" in name and not name.startswith("_")]

#: The wrong answers (the benchmark's table).
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])
#: The right answers: each must pass its check.
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])
