"""Answers written from the exercise texts alone (chapters 6 and 8: memory, processes).

Written blind for issue #51 by a helper that read only the student notebooks
``exercises/06_scaling_exercises.ipynb`` and
``exercises/08_multiprocess_exercises.ipynb``, the chapters ``book/06_scaling.ipynb``
and ``book/08_multiprocess.ipynb`` as a learner reads them, the definitions of
``Size``, ``LAYOUTS``, ``MESHES``, ``REMAT_POLICIES``, ``ENDINGS`` and ``FIXES``, and
what the helpers the texts name printed (``scaling.saved_residuals`` on a few small
sizes, ``job_log(n)``/``sacct_line(n)`` on a few jobs). No checker, reference
solution, stored output or test was read or run, so the right answers are first
tries and the wrong ones are mistakes a learner could make from these texts. Six
exercises: ``state_bytes_per_device``, ``step_memory`` and ``remat_policy``
(chapter 6), ``epoch_records``, ``seconds_to_end`` and ``job_ending`` (chapter 8).
"""

from __future__ import annotations

import math
import re

import jax
import numpy as np

from jaxcourse import scaling

# The remat policies in REMAT_POLICIES' order, fewest FLOPs first.
_POLICIES = ("no remat", "checkpoint_dots", "full remat")
_FIXES = {
    "kill-on-bad-exit": "fix the failing task",
    "heartbeat timeout": "add --kill-on-bad-exit=1",
    "raised": "exit at once on an exception",
    "finished": "agree on the number of steps",
    "time limit": "save, then resubmit with --dependency=afterany",
    "preemption": "save, and submit with --requeue",
    "out of memory": "ask for more memory",
}


def _params(size):
    """Parameters of the chapter's model: ``layers`` blocks of d x 4d and 4d x d."""
    return size.layers * 2 * size.width * 4 * size.width


def _pieces(layout, data, model):
    """How many pieces a layout cuts each weight into on a ``data x model`` mesh."""
    return {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]


# ---------------------------------------------------------------------------
# Chapter 6, exercise 1: state_bytes_per_device
# ---------------------------------------------------------------------------


def state_bytes_per_device__right_pieces(size, layout, data, model):
    """Four float32 copies of every parameter, divided by the pieces the layout cuts."""
    return 4 * 4 * scaling.param_count(size) // _pieces(layout, data, model)


def state_bytes_per_device__right_shard_shapes(size, layout, data, model):
    """Adds up the block each device holds of w_in and w_out, four copies of 4 bytes."""
    d, hidden = size.width, 4 * size.width
    rows = data if layout in ("FSDP", "FSDP + TP") else 1  # FSDP: over "data"
    cols = (
        model if layout in ("tensor parallel", "FSDP + TP") else 1
    )  # TP: over "model"
    # w_in (d, 4d): TP splits its columns; w_out (4d, d): TP splits its rows.
    w_in = (d // rows) * (hidden // cols)
    w_out = (hidden // cols) * (d // rows)
    return size.layers * (w_in + w_out) * 4 * 4


def state_bytes_per_device__right_eval_shape(size, layout, data, model):
    """Reads the parameter shapes with jax.eval_shape, then shares them out."""
    shapes = jax.eval_shape(lambda: scaling.init_params(jax.random.key(0), size))
    total = sum(
        int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize
        for leaf in jax.tree.leaves(shapes)
    )
    divide = 1
    if "FSDP" in layout:
        divide *= data
    if layout in ("tensor parallel", "FSDP + TP"):
        divide *= model
    return 4 * total // divide  # parameters, gradients, Adam's mu and nu


def state_bytes_per_device__right_float(size, layout, data, model):
    """16 bytes per parameter over a float divisor, rounded back to whole bytes."""
    per_parameter = 16.0
    split_data = layout.startswith("FSDP")
    split_model = layout.endswith("TP") or layout == "tensor parallel"
    share = (1.0 / data if split_data else 1.0) * (1.0 / model if split_model else 1.0)
    return int(round(per_parameter * 8 * size.width**2 * size.layers * share))


def state_bytes_per_device__right_loop(size, layout, data, model):
    """Loops over the four copies and the blocks, each weight cut by the layout."""
    axes = {
        "data parallel": (),
        "FSDP": ("data",),
        "tensor parallel": ("model",),
        "FSDP + TP": ("data", "model"),
    }[layout]
    n = {"data": data, "model": model}
    total = 0
    for _copy in ("params", "grads", "mu", "nu"):
        for _block in range(size.layers):
            for shape in ((size.width, 4 * size.width), (4 * size.width, size.width)):
                elements = shape[0] * shape[1]
                for axis in axes:
                    elements //= n[axis]
                total += 4 * elements
    return total


def state_bytes_per_device__forgot_adam(size, layout, data, model):
    """Counts parameters and gradients only, not Adam's two moments."""
    return 2 * 4 * _params(size) // _pieces(layout, data, model)


def state_bytes_per_device__forgot_gradients(size, layout, data, model):
    """Leaves out the gradients (three copies: parameters and two moments)."""
    return 3 * 4 * _params(size) // _pieces(layout, data, model)


def state_bytes_per_device__numbers_not_bytes(size, layout, data, model):
    """Counts four numbers per parameter but forgets that a float32 takes 4 bytes."""
    return 4 * _params(size) // _pieces(layout, data, model)


def state_bytes_per_device__divides_by_devices(size, layout, data, model):
    """Divides every sharded layout by all data * model devices, not by its axes."""
    pieces = 1 if layout == "data parallel" else data * model
    return 16 * _params(size) // pieces


def state_bytes_per_device__dp_splits_too(size, layout, data, model):
    """Thinks data parallelism also splits the state over the data axis."""
    pieces = {
        "data parallel": data,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    return 16 * _params(size) // pieces


def state_bytes_per_device__one_block(size, layout, data, model):
    """Counts the 8 d^2 parameters of one block and forgets the number of layers."""
    return 16 * 8 * size.width**2 // _pieces(layout, data, model)


def state_bytes_per_device__axes_swapped(size, layout, data, model):
    """Splits FSDP over "model" and tensor parallelism over "data"."""
    pieces = {
        "data parallel": 1,
        "FSDP": model,
        "tensor parallel": data,
        "FSDP + TP": data * model,
    }[layout]
    return 16 * _params(size) // pieces


def state_bytes_per_device__only_weights_split(size, layout, data, model):
    """Splits only the parameters; gradients and Adam's moments stay whole."""
    params = 4 * _params(size)
    return params // _pieces(layout, data, model) + 3 * params


def state_bytes_per_device__fsdp_tp_model_only(size, layout, data, model):
    """FSDP + TP divided by the model axis only, as if it were tensor parallelism."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": model,
    }[layout]
    return 16 * _params(size) // pieces


def state_bytes_per_device__adds_step_count(size, layout, data, model):
    """Adds Adam's 4-byte step count that the text leaves out."""
    return 16 * _params(size) // _pieces(layout, data, model) + 4


# ---------------------------------------------------------------------------
# Chapter 6, exercise 2: step_memory
# ---------------------------------------------------------------------------


def _analysis(step, params, opt_state, x, y, donate=()):
    """XLA's memory analysis of ``step`` compiled for the default (CPU) backend."""
    return (
        jax.jit(step, donate_argnums=donate)
        .lower(params, opt_state, x, y)
        .compile()
        .memory_analysis()
    )


def _state(params, opt_state):
    """Bytes of every array of params and opt_state."""
    return sum(leaf.nbytes for leaf in jax.tree.leaves((params, opt_state)))


def step_memory__right_analysis(step, params, opt_state, x, y):
    """Sums the state's nbytes; peak_memory_in_bytes with and without donation."""
    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0, 1))
    return {
        "state": _state(params, opt_state),
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": donated.peak_memory_in_bytes,
    }


def step_memory__right_compiled_memory(step, params, opt_state, x, y):
    """Uses the chapter's scaling.compiled_memory on both compiled steps."""
    plain = scaling.compiled_memory(
        jax.jit(step).lower(params, opt_state, x, y).compile()
    )
    donating = jax.jit(step, donate_argnums=(0, 1))
    donated = scaling.compiled_memory(donating.lower(params, opt_state, x, y).compile())
    state = 0
    for leaf in jax.tree.leaves(params) + jax.tree.leaves(opt_state):
        state += int(np.prod(np.shape(leaf))) * np.dtype(leaf.dtype).itemsize
    return {"state": state, "peak": plain["peak"], "donated_peak": donated["peak"]}


def step_memory__right_from_shapes(step, params, opt_state, x, y):
    """Compiles from ShapeDtypeStructs and counts the state from the shapes."""
    shapes = jax.tree.map(
        lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype), (params, opt_state, x, y)
    )
    plain = jax.jit(step).lower(*shapes).compile().memory_analysis()
    donated = (
        jax.jit(step, donate_argnums=[0, 1]).lower(*shapes).compile().memory_analysis()
    )
    state = jax.tree.reduce(
        lambda total, s: total + math.prod(s.shape) * s.dtype.itemsize, shapes[:2], 0
    )
    return {
        "state": int(state),
        "peak": int(plain.peak_memory_in_bytes),
        "donated_peak": int(donated.peak_memory_in_bytes),
    }


def step_memory__right_arguments_minus_batch(step, params, opt_state, x, y):
    """The state as XLA:CPU's arguments less the batch; the peaks as XLA reports."""
    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0, 1))
    state = plain.argument_size_in_bytes - np.asarray(x).nbytes - np.asarray(y).nbytes
    return {
        "state": int(state),
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": donated.peak_memory_in_bytes,
    }


def step_memory__right_numpy_sizes(step, params, opt_state, x, y):
    """Counts the state with NumPy sizes and itemsizes; one loop over donations."""
    state = 0
    for tree in (params, opt_state):
        for leaf in jax.tree.leaves(tree):
            array = np.asarray(leaf)
            state += array.size * array.itemsize
    peaks = []
    for donate in ((), (0, 1)):
        compiled = (
            jax.jit(step, donate_argnums=donate)
            .lower(params, opt_state, x, y)
            .compile()
        )
        peaks.append(compiled.memory_analysis().peak_memory_in_bytes)
    return {"state": state, "peak": peaks[0], "donated_peak": peaks[1]}


def step_memory__sixteen_bytes_per_parameter(step, params, opt_state, x, y):
    """Takes the state as the chapter's 16 bytes per parameter, gradients included."""
    result = step_memory__right_analysis(step, params, opt_state, x, y)
    n = sum(leaf.size for leaf in jax.tree.leaves(params))
    return {**result, "state": 16 * n}


def step_memory__state_without_count(step, params, opt_state, x, y):
    """Counts parameters and two moments (12 bytes each), not Adam's step count."""
    result = step_memory__right_analysis(step, params, opt_state, x, y)
    n = sum(leaf.size for leaf in jax.tree.leaves(params))
    return {**result, "state": 12 * n}


def step_memory__state_with_batch(step, params, opt_state, x, y):
    """Takes all the arguments as the state, the batch x and y included."""
    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0, 1))
    return {
        "state": plain.argument_size_in_bytes,
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": donated.peak_memory_in_bytes,
    }


def step_memory__peak_is_sum(step, params, opt_state, x, y):
    """Reports arguments + outputs + temporaries - aliases as the peak."""

    def total(m):
        return (
            m.argument_size_in_bytes
            + m.output_size_in_bytes
            + m.temp_size_in_bytes
            - m.alias_size_in_bytes
        )

    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0, 1))
    return {
        "state": _state(params, opt_state),
        "peak": total(plain),
        "donated_peak": total(donated),
    }


def step_memory__donates_params_only(step, params, opt_state, x, y):
    """Donates only the parameters (donate_argnums=0), not the optimizer state."""
    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0,))
    return {
        "state": _state(params, opt_state),
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": donated.peak_memory_in_bytes,
    }


def step_memory__donation_halves_peak(step, params, opt_state, x, y):
    """Predicts that donation halves the peak (old and new state not both live)."""
    plain = _analysis(step, params, opt_state, x, y)
    return {
        "state": _state(params, opt_state),
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": plain.peak_memory_in_bytes // 2,
    }


def step_memory__subtracts_alias_again(step, params, opt_state, x, y):
    """Subtracts the aliased bytes again from the donated peak."""
    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0, 1))
    return {
        "state": _state(params, opt_state),
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": donated.peak_memory_in_bytes - donated.alias_size_in_bytes,
    }


def step_memory__mebibytes(step, params, opt_state, x, y):
    """Returns the three figures in MiB, as the chapter prints them, not in bytes."""
    result = step_memory__right_analysis(step, params, opt_state, x, y)
    return {name: value / 2**20 for name, value in result.items()}


def step_memory__state_in_elements(step, params, opt_state, x, y):
    """Counts the state's numbers (array sizes), not their bytes."""
    result = step_memory__right_analysis(step, params, opt_state, x, y)
    return {
        **result,
        "state": sum(leaf.size for leaf in jax.tree.leaves((params, opt_state))),
    }


def step_memory__peak_is_arguments(step, params, opt_state, x, y):
    """Takes the arguments' bytes as XLA:CPU's peak ('not the temporaries')."""
    plain = _analysis(step, params, opt_state, x, y)
    donated = _analysis(step, params, opt_state, x, y, donate=(0, 1))
    return {
        "state": _state(params, opt_state),
        "peak": plain.argument_size_in_bytes,
        "donated_peak": donated.argument_size_in_bytes - donated.alias_size_in_bytes,
    }


# ---------------------------------------------------------------------------
# Chapter 6, exercise 3: remat_policy
# ---------------------------------------------------------------------------
# Measured with scaling.saved_residuals on (width, layers, batch) = (32, 2, 8),
# (32, 3, 8), (16, 1, 4), (32, 2, 5), (8, 1, 1), (8, 4, 1), (8, 1, 3): per block
# three (B, 4d) arrays without remat (f32, f32, bool), one f32 (B, 4d) with
# checkpoint_dots, none with full remat; and L float32 (B, d) arrays in every policy
# (L - 1 block outputs and one in the loss).


def _first_fit(costs, budget_bytes):
    for policy in _POLICIES:
        if costs[policy] <= budget_bytes:
            return policy
    return None


def remat_policy__right_formula(size, batch, budget_bytes):
    """40, 20 and 4 bytes per layer, example and unit of width; the first that fits."""
    unit = size.layers * batch * size.width
    return _first_fit(
        {"no remat": 40 * unit, "checkpoint_dots": 20 * unit, "full remat": 4 * unit},
        budget_bytes,
    )


def remat_policy__right_parts(size, batch, budget_bytes):
    """Per block the (B, 4d) arrays each policy keeps, plus L float32 (B, d) arrays."""
    hidden = batch * 4 * size.width
    always = size.layers * batch * size.width * 4
    per_block = {
        "no remat": hidden * (4 + 1 + 4),
        "checkpoint_dots": hidden * 4,
        "full remat": 0,
    }
    for policy in _POLICIES:
        if size.layers * per_block[policy] + always <= budget_bytes:
            return policy
    return None


def remat_policy__right_itemsizes(size, batch, budget_bytes):
    """Counts each kept array with NumPy itemsizes; next() over the ordered policies."""
    f32, boolean = np.dtype(np.float32).itemsize, np.dtype(np.bool_).itemsize
    wide = [batch, 4 * size.width]
    narrow = [batch, size.width]
    kept = {
        "no remat": [(f32, wide), (boolean, wide), (f32, wide)],
        "checkpoint_dots": [(f32, wide)],
        "full remat": [],
    }

    def bytes_of(policy):
        block = sum(item * int(np.prod(shape)) for item, shape in kept[policy])
        return size.layers * block + size.layers * f32 * int(np.prod(narrow))

    return next((p for p in _POLICIES if bytes_of(p) <= budget_bytes), None)


def remat_policy__right_per_example(size, batch, budget_bytes):
    """Bytes per example and block, as floats, times the batch and the layers."""
    per_example_block = {
        "no remat": 10.0 * 4 * size.width,  # 9 per hidden unit + 4 per width
        "checkpoint_dots": 5.0 * 4 * size.width,
        "full remat": 1.0 * 4 * size.width,
    }
    fitting = [
        p
        for p in _POLICIES
        if per_example_block[p] * batch * size.layers <= budget_bytes
    ]
    return fitting[0] if fitting else None


def remat_policy__right_ratios(size, batch, budget_bytes):
    """Full remat's bytes times 10, 5 and 1, tested from the fewest FLOPs on."""
    base = 4 * size.width * batch * size.layers
    for factor, policy in zip((10, 5, 1), _POLICIES, strict=True):
        if factor * base <= budget_bytes:
            return policy
    return None


def remat_policy__mask_as_float(size, batch, budget_bytes):
    """Counts the ReLU's boolean mask as a float32 (12 bytes per hidden unit, not 9)."""
    unit = size.layers * batch * size.width
    return _first_fit(
        {"no remat": 52 * unit, "checkpoint_dots": 20 * unit, "full remat": 4 * unit},
        budget_bytes,
    )


def remat_policy__forgot_block_outputs(size, batch, budget_bytes):
    """Counts only the (B, 4d) arrays, not the (B, d) arrays kept under every policy."""
    unit = size.layers * batch * size.width
    return _first_fit(
        {"no remat": 36 * unit, "checkpoint_dots": 16 * unit, "full remat": 0},
        budget_bytes,
    )


def remat_policy__outputs_minus_one(size, batch, budget_bytes):
    """Counts L - 1 block outputs (next blocks' inputs), missing the loss's array."""
    per_block = batch * 4 * size.width
    outputs = (size.layers - 1) * batch * size.width * 4
    return _first_fit(
        {
            "no remat": size.layers * 9 * per_block + outputs,
            "checkpoint_dots": size.layers * 4 * per_block + outputs,
            "full remat": outputs,
        },
        budget_bytes,
    )


def remat_policy__strict_budget(size, batch, budget_bytes):
    """Needs the residuals to be strictly below the budget (< for "at most")."""
    unit = size.layers * batch * size.width
    costs = {
        "no remat": 40 * unit,
        "checkpoint_dots": 20 * unit,
        "full remat": 4 * unit,
    }
    for policy in _POLICIES:
        if costs[policy] < budget_bytes:
            return policy
    return None


def remat_policy__least_memory(size, batch, budget_bytes):
    """Returns the fitting policy that keeps the least, not the cheapest in FLOPs."""
    unit = size.layers * batch * size.width
    costs = {
        "no remat": 40 * unit,
        "checkpoint_dots": 20 * unit,
        "full remat": 4 * unit,
    }
    fitting = [p for p in _POLICIES if costs[p] <= budget_bytes]
    return fitting[-1] if fitting else None


def remat_policy__full_remat_fallback(size, batch, budget_bytes):
    """Falls back to full remat instead of None when nothing fits."""
    unit = size.layers * batch * size.width
    choice = _first_fit(
        {"no remat": 40 * unit, "checkpoint_dots": 20 * unit, "full remat": 4 * unit},
        budget_bytes,
    )
    return choice or "full remat"


def remat_policy__per_example_only(size, batch, budget_bytes):
    """Compares one example's bytes with the budget, forgetting the batch."""
    unit = size.layers * size.width
    return _first_fit(
        {"no remat": 40 * unit, "checkpoint_dots": 20 * unit, "full remat": 4 * unit},
        budget_bytes,
    )


def remat_policy__hidden_is_width(size, batch, budget_bytes):
    """Takes the ReLU's arrays as (B, d), forgetting that the hidden layer is 4d."""
    unit = size.layers * batch * size.width
    return _first_fit(
        {
            "no remat": (9 + 4) * unit,
            "checkpoint_dots": (4 + 4) * unit,
            "full remat": 4 * unit,
        },
        budget_bytes,
    )


def remat_policy__one_block(size, batch, budget_bytes):
    """Counts one block's residuals and forgets to multiply by the number of layers."""
    unit = batch * size.width
    return _first_fit(
        {"no remat": 40 * unit, "checkpoint_dots": 20 * unit, "full remat": 4 * unit},
        budget_bytes,
    )


def remat_policy__dots_keep_mask(size, batch, budget_bytes):
    """Thinks checkpoint_dots keeps the product and the mask (5 bytes per unit)."""
    unit = size.layers * batch * size.width
    return _first_fit(
        {"no remat": 40 * unit, "checkpoint_dots": 24 * unit, "full remat": 4 * unit},
        budget_bytes,
    )


# ---------------------------------------------------------------------------
# Chapter 8, exercise 6: epoch_records
# ---------------------------------------------------------------------------


def epoch_records__right_slice_then_rows(
    seed, epoch, step, num_records, batch_size, rows
):
    """Permutation from default_rng([seed, epoch]), the step-th block, then its rows."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[step * batch_size : (step + 1) * batch_size][rows]


def epoch_records__right_offsets(seed, epoch, step, num_records, batch_size, rows):
    """Offsets the rows' start and stop by step * batch_size in one slice."""
    start, stop, stride = rows.indices(batch_size)
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    base = step * batch_size
    return np.asarray(order[base + start : base + stop : stride], dtype=np.int64)


def epoch_records__right_shuffle_arange(
    seed, epoch, step, num_records, batch_size, rows
):
    """Shuffles an arange in place with the same generator, then picks positions."""
    rng = np.random.default_rng(np.array([seed, epoch]))
    order = np.arange(num_records)
    rng.shuffle(order)
    positions = np.arange(step * batch_size, (step + 1) * batch_size)[rows]
    return order[positions]


def epoch_records__right_loop(seed, epoch, step, num_records, batch_size, rows):
    """Builds the list record by record from the global batch's row indices."""
    generator = np.random.Generator(
        np.random.PCG64(np.random.SeedSequence([seed, epoch]))
    )
    order = generator.permutation(num_records).tolist()
    first, last, stride = rows.indices(batch_size)
    return np.array(
        [order[step * batch_size + r] for r in range(first, last, stride)], dtype=int
    )


def epoch_records__right_split(seed, epoch, step, num_records, batch_size, rows):
    """Takes the global batch with np.take on its positions, then slices its rows."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    block = np.take(
        order, range(step * batch_size, min((step + 1) * batch_size, num_records))
    )
    return block[rows].astype(np.int64)


def epoch_records__seed_plus_epoch(seed, epoch, step, num_records, batch_size, rows):
    """Seeds with seed + epoch, the shortcut the text warns against."""
    order = np.random.default_rng(seed + epoch).permutation(num_records)
    return order[step * batch_size : (step + 1) * batch_size][rows]


def epoch_records__ignores_epoch(seed, epoch, step, num_records, batch_size, rows):
    """Seeds with the seed alone, so every epoch draws the same order."""
    order = np.random.default_rng(seed).permutation(num_records)
    return order[step * batch_size : (step + 1) * batch_size][rows]


def epoch_records__epoch_then_seed(seed, epoch, step, num_records, batch_size, rows):
    """Writes the seed list the other way round, [epoch, seed]."""
    order = np.random.default_rng([epoch, seed]).permutation(num_records)
    return order[step * batch_size : (step + 1) * batch_size][rows]


def epoch_records__one_stream(seed, epoch, step, num_records, batch_size, rows):
    """One generator from the seed, one permutation drawn per epoch until this one."""
    rng = np.random.default_rng(seed)
    for _ in range(epoch + 1):
        order = rng.permutation(num_records)
    return order[step * batch_size : (step + 1) * batch_size][rows]


def epoch_records__steps_from_one(seed, epoch, step, num_records, batch_size, rows):
    """Counts steps from 1: step s takes the block after the s-th."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[(step + 1) * batch_size : (step + 2) * batch_size][rows]


def epoch_records__rows_of_permutation(
    seed, epoch, step, num_records, batch_size, rows
):
    """Applies the rows to the whole permutation, forgetting the step's block."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[rows]


def epoch_records__positions_not_records(
    seed, epoch, step, num_records, batch_size, rows
):
    """Returns the positions in the shuffled order, not the records found there."""
    return np.arange(step * batch_size, (step + 1) * batch_size)[rows]


def epoch_records__shuffle_within_batch(
    seed, epoch, step, num_records, batch_size, rows
):
    """Shuffles only within the step's block of records in file order."""
    block = np.arange(step * batch_size, (step + 1) * batch_size)
    return np.random.default_rng([seed, epoch]).permutation(block)[rows]


def epoch_records__local_blocks(seed, epoch, step, num_records, batch_size, rows):
    """Steps through the permutation by the process's share, not the global batch."""
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    start, stop, _ = rows.indices(batch_size)
    local = stop - start
    return order[start + step * local : stop + step * local]


def epoch_records__reshuffle_each_step(
    seed, epoch, step, num_records, batch_size, rows
):
    """Draws a new permutation every step, from [seed, epoch, step]."""
    order = np.random.default_rng([seed, epoch, step]).permutation(num_records)
    return order[:batch_size][rows]


# ---------------------------------------------------------------------------
# Chapter 8, exercise 7: seconds_to_end
# ---------------------------------------------------------------------------


def _killed_or_beats(kill_on_bad_exit, heartbeat_timeout):
    """A process gone with an error: srun's SIGKILL 30 s (KILL_WAIT) after its
    SIGTERM, or the heartbeat timeout, whichever comes first."""
    if kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    return float(heartbeat_timeout)


def seconds_to_end__right_rules(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """A live process waits at the barrier; a gone one is killed or misses beats."""
    if how == "finish" or (how == "raise" and not hook):
        return float(shutdown_timeout)
    if kill_on_bad_exit:  # SIGKILL KILL_WAIT after the SIGTERM, or the heartbeats
        return float(min(30.0, heartbeat_timeout))
    return float(heartbeat_timeout)


def seconds_to_end__right_table(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """All twelve failures in a table of which clock ends them."""
    table = {}
    for h in (False, True):
        for k in (False, True):
            table["crash", h, k] = "kill" if k else "heartbeat"
            table["raise", h, k] = ("kill" if k else "heartbeat") if h else "shutdown"
            table["finish", h, k] = "shutdown"
    clock = table[how, bool(hook), bool(kill_on_bad_exit)]
    return {
        "kill": float(min(30.0, heartbeat_timeout)),  # KILL_WAIT or heartbeats
        "heartbeat": float(heartbeat_timeout),
        "shutdown": float(shutdown_timeout),
    }[clock]


def seconds_to_end__right_exit_code(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Asks whether process 2 exits at once, and with which code."""
    exits_at_once = how == "crash" or (how == "raise" and hook)
    exit_code = (
        1 if exits_at_once else None
    )  # "finish" stays at the barrier, code 0 later
    if exit_code is None:
        return shutdown_timeout * 1.0
    if kill_on_bad_exit and exit_code != 0:
        return float(min(30.0, heartbeat_timeout))
    return heartbeat_timeout * 1.0


def seconds_to_end__right_match(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """A match statement over the way process 2 fails."""
    match how:
        case "finish":
            seconds = shutdown_timeout
        case "raise" if not hook:
            seconds = shutdown_timeout
        case _:
            seconds = heartbeat_timeout
            if kill_on_bad_exit:
                seconds = min(30, heartbeat_timeout)
    return float(seconds)


def seconds_to_end__right_arithmetic(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Selects the timeout with 0/1 weights."""
    alive = int(how == "finish" or (how == "raise" and not hook))
    gone = 1 - alive
    return float(
        alive * shutdown_timeout
        + gone * (1 - int(bool(kill_on_bad_exit))) * heartbeat_timeout
        + gone * int(bool(kill_on_bad_exit)) * min(30.0, heartbeat_timeout)
    )


def seconds_to_end__hook_ignored_raise_exits(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Thinks any exception exits the process with an error, hook or not."""
    if how == "finish":
        return float(shutdown_timeout)
    return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)


def seconds_to_end__hook_ignored_raise_waits(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Thinks a process that raises always waits at the barrier, hook or not."""
    if how in ("finish", "raise"):
        return float(shutdown_timeout)
    return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)


def seconds_to_end__kill_ends_finish(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Thinks --kill-on-bad-exit also ends the step at once on an early finish."""
    if kill_on_bad_exit and (how != "raise" or hook):
        return float(min(30.0, heartbeat_timeout))
    if how == "finish" or (how == "raise" and not hook):
        return float(shutdown_timeout)
    return float(heartbeat_timeout)


def seconds_to_end__timeouts_swapped(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Swaps the two clocks: a vanished process is the shutdown timeout's, and back."""
    if how == "finish" or (how == "raise" and not hook):
        return float(heartbeat_timeout)
    return _killed_or_beats(kill_on_bad_exit, shutdown_timeout)


def seconds_to_end__kill_acts_on_exception(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Thinks --kill-on-bad-exit acts on an exception that leaves the process alive."""
    if how == "finish":
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    return (
        float(shutdown_timeout)
        if how == "raise" and not hook
        else float(heartbeat_timeout)
    )


def seconds_to_end__finish_as_vanished(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Treats a process that finished early as gone: the heartbeat timeout ends it."""
    if how == "raise" and not hook:
        return float(shutdown_timeout)
    if how == "finish":
        return float(heartbeat_timeout)
    return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)


def seconds_to_end__chapter_constants(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Hard-codes the chapter's 3 s and 5 s instead of the arguments."""
    if how == "finish" or (how == "raise" and not hook):
        return 5.0
    return 3.0  # the 3 s heartbeat comes before the 30 s KILL_WAIT


def seconds_to_end__first_clock(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Without a kill at once, whichever timeout expires first ends the step."""
    gone_with_error = how == "crash" or (how == "raise" and hook)
    if gone_with_error and kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    return float(min(heartbeat_timeout, shutdown_timeout))


def seconds_to_end__last_clock(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Without a kill at once, the step lasts until both timeouts have expired."""
    gone_with_error = how == "crash" or (how == "raise" and hook)
    if gone_with_error and kill_on_bad_exit:
        return float(min(30.0, heartbeat_timeout))
    return float(max(heartbeat_timeout, shutdown_timeout))


def seconds_to_end__srun_reports_crash(
    how, hook, kill_on_bad_exit, heartbeat_timeout, shutdown_timeout
):
    """Thinks srun ends the step when a task crashes, with or without the option."""
    if how == "crash":
        return 0.0
    if how == "finish" or not hook:
        return float(shutdown_timeout)
    return _killed_or_beats(kill_on_bad_exit, heartbeat_timeout)


# ---------------------------------------------------------------------------
# Chapter 8, exercise 8: job_ending
# ---------------------------------------------------------------------------


def _state_of(sacct):
    """The State column of ``sacct --format=JobName,Partition,State,ExitCode``."""
    return sacct.split()[2]


def _own_exceptions(log):
    """(task, exception) of each traceback but JaxRuntimeError (the reaction)."""
    in_traceback, found = set(), []
    for line in log.splitlines():
        match = re.match(r"^(\d+): (.*)$", line)
        if not match:
            continue
        task, text = match.groups()
        if text.startswith("Traceback"):
            in_traceback.add(task)
        elif task in in_traceback and not text.startswith(" "):
            in_traceback.discard(task)  # the line after the frames names the exception
            found.append((task, text.split(":")[0]))
    return [
        (task, name) for task, name in found if not name.endswith("JaxRuntimeError")
    ]


def job_ending__right_state_then_log(log, sacct):
    """Slurm's state first; if FAILED, heartbeat, then barrier, else srun's kill."""
    state = _state_of(sacct)
    slurm = {
        "TIMEOUT": "time limit",
        "PREEMPTED": "preemption",
        "OUT_OF_MEMORY": "out of memory",
    }
    if state in slurm:
        return slurm[state], _FIXES[slurm[state]]
    if "heartbeat timeout" in log:
        return "heartbeat timeout", _FIXES["heartbeat timeout"]
    if "Shutdown barrier" in log:
        raised = bool(_own_exceptions(log))
        return "shutdown barrier", _FIXES["raised" if raised else "finished"]
    return "kill-on-bad-exit", _FIXES["kill-on-bad-exit"]


def job_ending__right_log_markers(log, sacct):
    """Reads the decisive lines of the log, in an order where none hides another."""
    if "DUE TO TIME LIMIT" in log:
        return "time limit", "save, then resubmit with --dependency=afterany"
    if "DUE TO PREEMPTION" in log:
        return "preemption", "save, and submit with --requeue"
    if "oom_kill" in log or "Out Of Memory" in log:
        return "out of memory", "ask for more memory"
    if re.search(r"Task \d+ heartbeat timeout", log):
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Barrier timed out" in log:
        # The first task at the barrier is the one that left the loop: did it raise?
        first = re.search(r"The first task at the barrier: (\d+)", log).group(1)
        raised = re.search(rf"^{first}: Traceback", log, re.M) is not None
        return (
            "shutdown barrier",
            "exit at once on an exception"
            if raised
            else "agree on the number of steps",
        )
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__right_exit_codes(log, sacct):
    """Uses sacct's state and exit code: 137 is srun's SIGKILL, 134 JAX's abort."""
    _name, _partition, state, code = sacct.split()
    if state != "FAILED":
        ending = {
            "TIMEOUT": "time limit",
            "PREEMPTED": "preemption",
            "OUT_OF_MEMORY": "out of memory",
        }[state]
        return ending, _FIXES[ending]
    if code.split(":")[0] == "137" or "_step_signal" in log:
        return "kill-on-bad-exit", _FIXES["kill-on-bad-exit"]
    if "heartbeat timeout" in log:
        return "heartbeat timeout", _FIXES["heartbeat timeout"]
    kinds = {name.rsplit(".", 1)[-1] for _task, name in _own_exceptions(log)}
    return "shutdown barrier", _FIXES["raised" if kinds else "finished"]


def job_ending__right_lines(log, sacct):
    """Walks the log line by line, collecting what each line proves."""
    seen, last_was_frame = set(), {}
    for line in log.splitlines():
        if "heartbeat timeout" in line:
            seen.add("heartbeat")
        elif "DEADLINE_EXCEEDED" in line and "Shutdown" in line:
            seen.add("barrier")
        task, _, text = line.partition(": ")
        if text.startswith("Traceback"):
            last_was_frame[task] = True
        elif last_was_frame.get(task) and not text.startswith(" "):
            last_was_frame[task] = False  # this task's exception line
            if "JaxRuntimeError" not in text.split(":")[0]:
                seen.add("raised")
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", _FIXES["time limit"]
    if state == "PREEMPTED":
        return "preemption", _FIXES["preemption"]
    if state == "OUT_OF_MEMORY":
        return "out of memory", _FIXES["out of memory"]
    if "heartbeat" in seen:
        return "heartbeat timeout", _FIXES["heartbeat timeout"]
    if "barrier" in seen:
        return "shutdown barrier", _FIXES["raised" if "raised" in seen else "finished"]
    return "kill-on-bad-exit", _FIXES["kill-on-bad-exit"]


def job_ending__right_regex_table(log, sacct):
    """A table of (source, pattern, ending), the first match wins."""
    rules = [
        (sacct, r"\bTIMEOUT\b", "time limit"),
        (sacct, r"\bPREEMPTED\b", "preemption"),
        (sacct, r"\bOUT_OF_MEMORY\b", "out of memory"),
        (log, r"Task \d+ heartbeat timeout", "heartbeat timeout"),
        (log, r"Shutdown barrier .*has failed", "shutdown barrier"),
        (sacct, r"\bFAILED\b", "kill-on-bad-exit"),
    ]
    ending = next(end for text, pattern, end in rules if re.search(pattern, text))
    if ending == "shutdown barrier":
        fix = (
            "exit at once on an exception"
            if _own_exceptions(log)
            else "agree on the number of steps"
        )
    else:
        fix = _FIXES[ending]
    return ending, fix


def job_ending__barrier_before_heartbeat(log, sacct):
    """Looks for the barrier before the heartbeat, which fails the barrier too."""
    state = _state_of(sacct)
    slurm = {
        "TIMEOUT": "time limit",
        "PREEMPTED": "preemption",
        "OUT_OF_MEMORY": "out of memory",
    }
    if state in slurm:
        return slurm[state], _FIXES[slurm[state]]
    if "Shutdown barrier" in log:
        return "shutdown barrier", _FIXES[
            "raised" if _own_exceptions(log) else "finished"
        ]
    if "heartbeat timeout" in log:
        return "heartbeat timeout", _FIXES["heartbeat timeout"]
    return "kill-on-bad-exit", _FIXES["kill-on-bad-exit"]


def job_ending__barrier_always_exception(log, sacct):
    """Gives every shutdown-barrier job the exception fix, never the step-count one."""
    ending, fix = job_ending__right_state_then_log(log, sacct)
    if ending == "shutdown barrier":
        fix = "exit at once on an exception"
    return ending, fix


def job_ending__right_any_traceback(log, sacct):
    """Counts any traceback as the raise: right, for no partner leaves a barrier job."""
    ending, fix = job_ending__right_state_then_log(log, sacct)
    if ending == "shutdown barrier":
        fix = (
            "exit at once on an exception"
            if "Traceback" in log
            else "agree on the number of steps"
        )
    return ending, fix


def job_ending__heartbeat_fix_task(log, sacct):
    """Answers a heartbeat timeout with fixing the task, not adding the option."""
    ending, fix = job_ending__right_state_then_log(log, sacct)
    if ending == "heartbeat timeout":
        fix = "fix the failing task"
    return ending, fix


def job_ending__kill_fix_option(log, sacct):
    """Answers a kill-on-bad-exit ending with adding --kill-on-bad-exit=1."""
    ending, fix = job_ending__right_state_then_log(log, sacct)
    if ending == "kill-on-bad-exit":
        fix = "add --kill-on-bad-exit=1"
    return ending, fix


def job_ending__preemption_word_in_log(log, sacct):
    """Calls any log that mentions preemption (preemption_notifier too) a preemption."""
    if "preemption" in log.lower():
        return "preemption", _FIXES["preemption"]
    return job_ending__right_state_then_log(log, sacct)


def job_ending__exit_code_line_means_kill(log, sacct):
    """Takes any "Exited with exit code" line as srun's kill, before looking further."""
    if "Exited with exit code" in log:
        return "kill-on-bad-exit", _FIXES["kill-on-bad-exit"]
    return job_ending__right_state_then_log(log, sacct)


def job_ending__cancelled_means_time_limit(log, sacct):
    """Reads any "CANCELLED AT" line as the time limit."""
    if "CANCELLED" in log and "PREEMPTION" not in log:
        return "time limit", _FIXES["time limit"]
    return job_ending__right_state_then_log(log, sacct)


def job_ending__aborted_means_heartbeat(log, sacct):
    """Takes every exit code 134 (JAX's abort) as a heartbeat timeout."""
    ending, fix = job_ending__right_state_then_log(log, sacct)
    if ending == "shutdown barrier":
        return "heartbeat timeout", _FIXES["heartbeat timeout"]
    return ending, fix


def job_ending__slurm_fixes_swapped(log, sacct):
    """Swaps the fixes of a time limit and a preemption."""
    ending, fix = job_ending__right_state_then_log(log, sacct)
    swap = {"time limit": _FIXES["preemption"], "preemption": _FIXES["time limit"]}
    return ending, swap.get(ending, fix)


def job_ending__no_memory_branch(log, sacct):
    """Knows only the chapter's five endings: out of memory falls to srun's kill."""
    state = _state_of(sacct)
    if state == "TIMEOUT":
        return "time limit", _FIXES["time limit"]
    if state == "PREEMPTED":
        return "preemption", _FIXES["preemption"]
    if "heartbeat timeout" in log:
        return "heartbeat timeout", _FIXES["heartbeat timeout"]
    if "Shutdown barrier" in log:
        return "shutdown barrier", _FIXES[
            "raised" if _own_exceptions(log) else "finished"
        ]
    return "kill-on-bad-exit", _FIXES["kill-on-bad-exit"]


_TOPICS = {
    "state_bytes_per_device": "scaling",
    "step_memory": "scaling",
    "remat_policy": "scaling",
    "epoch_records": "multiprocess",
    "seconds_to_end": "multiprocess",
    "job_ending": "multiprocess",
}


def _rows(*functions):
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        rows.append(
            (
                f"{_TOPICS[exercise]}.{exercise}",
                function,
                function.__doc__.strip().rstrip("."),
            )
        )
    return rows


_ALL = [
    value
    for name, value in dict(globals()).items()
    if callable(value) and "__" in name and not name.startswith("_")
]
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])  # the wrong ones
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])  # the right ones
