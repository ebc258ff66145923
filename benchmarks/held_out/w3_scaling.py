"""Held-out answers written from the exercise texts alone (chapters 6, 10), writer W3.

Written from the student notebooks `exercises/06_scaling_exercises.ipynb` and
`exercises/10_fast_step_exercises.ipynb`, the chapters `book/06_scaling.ipynb` and
`book/10_fast_step.ipynb`, and the public library modules they use
(`jaxcourse/scaling/*.py`, `jaxcourse/fast_step.py`, `jaxcourse/step_profile.py`),
plus small scratch runs of the names the notebooks import (`saved_residuals` on tiny
sizes, a compiled step's memory analysis, the shown profiles and cases). The right
answers were compared, on made-up inputs, with the library's public functions
(`state_bytes`, `predicted_collectives`, `critical_batch`, `fast_step.mfu`). No
checker, hint, reference solution, stored expected output, message file or test was
read or run; every answer comes from the exercise texts as a learner reads them.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxcourse import scaling
from jaxcourse.scaling import LAYOUTS

# The notebook's constants, as `exercise_kit.scaling_checks` prints them; the
# functions import them from there when they run (nothing is imported from the
# kit at import time).


def _meshes():
    from exercise_kit.scaling_checks import MESHES

    return MESHES


def _policies():
    from exercise_kit.scaling_checks import REMAT_POLICIES

    return REMAT_POLICIES


def _n_params(size):
    # Two matrices per block, d x 4d and 4d x d.
    return 2 * size.layers * size.width * 4 * size.width


# ---------------------------------------------------------------------------
# scaling.state_bytes_per_device
# ---------------------------------------------------------------------------


def state_bytes_per_device__forgot_gradients(size, layout, data, model):
    """Counts parameters and Adam's moments, not the gradients: 12 bytes a parameter."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    return 3 * 4 * _n_params(size) // pieces


def state_bytes_per_device__fsdp_tp_over_data_only(size, layout, data, model):
    """FSDP + TP divides the state by the data axis only, forgetting the model split."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data,
    }[layout]
    return 16 * _n_params(size) // pieces


def state_bytes_per_device__every_split_over_all_devices(size, layout, data, model):
    """Any sharded layout divides the state by all data * model devices."""
    if layout == "data parallel":
        return 16 * _n_params(size)
    return 16 * _n_params(size) // (data * model)


def state_bytes_per_device__axes_swapped(size, layout, data, model):
    """FSDP splits over the model axis and tensor parallelism over the data axis."""
    pieces = {
        "data parallel": 1,
        "FSDP": model,
        "tensor parallel": data,
        "FSDP + TP": data * model,
    }[layout]
    return 16 * _n_params(size) // pieces


def state_bytes_per_device__only_params_sharded(size, layout, data, model):
    """Splits the parameters but keeps gradients and both moments whole."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    n = _n_params(size)
    return 4 * n // pieces + 3 * 4 * n


def state_bytes_per_device__bits_not_bytes(size, layout, data, model):
    """Counts 32 bits per float32 number instead of 4 bytes."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    return 4 * 32 * _n_params(size) // pieces


def state_bytes_per_device__one_matrix_per_block(size, layout, data, model):
    """Counts one d x 4d matrix per block, forgetting w_out."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    n = size.layers * size.width * 4 * size.width
    return 16 * n // pieces


def state_bytes_per_device__adam_count_added(size, layout, data, model):
    """Adds Adam's 4-byte step count to the state."""
    pieces = {
        "data parallel": 1,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    return 16 * _n_params(size) // pieces + 4


def state_bytes_per_device__data_parallel_splits_too(size, layout, data, model):
    """Thinks data parallelism divides the state over the data axis like the batch."""
    pieces = {
        "data parallel": data,
        "FSDP": data,
        "tensor parallel": model,
        "FSDP + TP": data * model,
    }[layout]
    return 16 * _n_params(size) // pieces


def state_bytes_per_device__right_by_parts(size, layout, data, model):
    """Right: params, grads and two moments, 4 bytes each, over the layout's axes."""
    d, f, layers = size.width, 4 * size.width, size.layers
    params = layers * (d * f + f * d)
    split = 1
    if layout in ("FSDP", "FSDP + TP"):
        split *= data
    if layout in ("tensor parallel", "FSDP + TP"):
        split *= model
    one_copy = params * 4 // split
    return one_copy + one_copy + 2 * one_copy


def state_bytes_per_device__right_sixteen_bytes(size, layout, data, model):
    """Right: 16 bytes a parameter over the product of the axes the layout shards on."""
    axes = {
        "data parallel": (),
        "FSDP": (data,),
        "tensor parallel": (model,),
        "FSDP + TP": (data, model),
    }[layout]
    return 16 * scaling.param_count(size) // math.prod(axes)


# ---------------------------------------------------------------------------
# scaling.step_memory
# ---------------------------------------------------------------------------


def _analysis(fn, args, donate=()):
    return jax.jit(fn, donate_argnums=donate).lower(*args).compile().memory_analysis()


def step_memory__state_sixteen_bytes(step, params, opt_state, x, y):
    """Takes the state as 16 bytes per parameter, gradients included."""
    args = (params, opt_state, x, y)
    n = sum(int(np.size(a)) for a in jax.tree.leaves(params))
    return {
        "state": 16 * n,
        "peak": _analysis(step, args).peak_memory_in_bytes,
        "donated_peak": _analysis(step, args, (0, 1)).peak_memory_in_bytes,
    }


def step_memory__state_without_count(step, params, opt_state, x, y):
    """Counts parameters and both moments, 12 bytes each, leaving Adam's count out."""
    args = (params, opt_state, x, y)
    n = sum(int(np.size(a)) for a in jax.tree.leaves(params))
    return {
        "state": 12 * n,
        "peak": _analysis(step, args).peak_memory_in_bytes,
        "donated_peak": _analysis(step, args, (0, 1)).peak_memory_in_bytes,
    }


def step_memory__state_is_arguments(step, params, opt_state, x, y):
    """Reads the state as the compiled step's argument bytes, the batch included."""
    args = (params, opt_state, x, y)
    plain = _analysis(step, args)
    return {
        "state": plain.argument_size_in_bytes,
        "peak": plain.peak_memory_in_bytes,
        "donated_peak": _analysis(step, args, (0, 1)).peak_memory_in_bytes,
    }


def step_memory__peak_is_sum(step, params, opt_state, x, y):
    """Uses arguments + outputs + temporaries - aliases as the peak."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))

    def total(m):
        return (
            m.argument_size_in_bytes
            + m.output_size_in_bytes
            + m.temp_size_in_bytes
            - m.alias_size_in_bytes
        )

    return {
        "state": state,
        "peak": total(_analysis(step, args)),
        "donated_peak": total(_analysis(step, args, (0, 1))),
    }


def step_memory__peak_arguments_plus_outputs(step, params, opt_state, x, y):
    """Computes the CPU peak as arguments + outputs - aliases, not XLA's own figure."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))

    def peak(m):
        return m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes

    return {
        "state": state,
        "peak": peak(_analysis(step, args)),
        "donated_peak": peak(_analysis(step, args, (0, 1))),
    }


def step_memory__donates_params_only(step, params, opt_state, x, y):
    """Donates only the parameters (donate_argnums=0), not the optimizer state."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    return {
        "state": state,
        "peak": _analysis(step, args).peak_memory_in_bytes,
        "donated_peak": _analysis(step, args, (0,)).peak_memory_in_bytes,
    }


def step_memory__donated_sum_with_temporaries(step, params, opt_state, x, y):
    """Reads the donated program's size as its sum, temporaries included, not peak."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    d = _analysis(step, args, (0, 1))
    return {
        "state": state,
        "peak": _analysis(step, args).peak_memory_in_bytes,
        "donated_peak": (
            d.argument_size_in_bytes
            + d.output_size_in_bytes
            + d.temp_size_in_bytes
            - d.alias_size_in_bytes
        ),
    }


def step_memory__donation_saves_weights_and_moments(step, params, opt_state, x, y):
    """Predicts the donated peak as the peak minus 12 bytes a parameter, uncompiled."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    n = sum(int(np.size(a)) for a in jax.tree.leaves(params))
    peak = _analysis(step, args).peak_memory_in_bytes
    return {"state": state, "peak": peak, "donated_peak": peak - 12 * n}


def step_memory__in_mebibytes(step, params, opt_state, x, y):
    """Returns the three figures in MiB instead of bytes."""
    args = (params, opt_state, x, y)
    state = sum(a.nbytes for a in jax.tree.leaves((params, opt_state)))
    return {
        "state": state / 2**20,
        "peak": _analysis(step, args).peak_memory_in_bytes / 2**20,
        "donated_peak": _analysis(step, args, (0, 1)).peak_memory_in_bytes / 2**20,
    }


def step_memory__right_read_analysis(step, params, opt_state, x, y):
    """Right: every array of the state; XLA:CPU's peak without, with donate (0, 1)."""
    state = sum(leaf.nbytes for leaf in jax.tree.leaves((params, opt_state)))
    plain = jax.jit(step).lower(params, opt_state, x, y).compile()
    donated = (
        jax.jit(step, donate_argnums=(0, 1)).lower(params, opt_state, x, y).compile()
    )
    return {
        "state": int(state),
        "peak": int(plain.memory_analysis().peak_memory_in_bytes),
        "donated_peak": int(donated.memory_analysis().peak_memory_in_bytes),
    }


def step_memory__right_by_argnames(step, params, opt_state, x, y):
    """Right: size times itemsize per leaf; compiled_memory's peaks, donated by name."""
    state = 0
    for leaf in jax.tree.leaves(params) + jax.tree.leaves(opt_state):
        state += int(np.size(leaf)) * np.dtype(leaf.dtype).itemsize
    peaks = {}
    for name, donate in (("peak", ()), ("donated_peak", ("params", "opt_state"))):
        compiled = (
            jax.jit(step, donate_argnames=donate)
            .lower(params, opt_state, x, y)
            .compile()
        )
        peaks[name] = scaling.compiled_memory(compiled)["peak"]
    return {"state": state, **peaks}


# ---------------------------------------------------------------------------
# scaling.remat_policy
# ---------------------------------------------------------------------------
# Measured with saved_residuals (rows not `from` an argument or a constant), per
# example, per block: no remat keeps three (B, 4d) arrays (f32, bool, f32) and
# the block's output; checkpoint_dots one f32 (B, 4d) and the output; full remat
# the output only (the last "output" is the loss's `mul`).


def remat_policy__strict_less(size, batch, budget_bytes):
    """Needs the residuals strictly under the budget (< instead of <=)."""
    d, layers = size.width, size.layers
    per = {"no remat": 40, "checkpoint_dots": 20, "full remat": 4}
    for policy in _policies():
        if per[policy] * batch * d * layers < budget_bytes:
            return policy
    return None


def remat_policy__hidden_arrays_only(size, batch, budget_bytes):
    """Counts only the (B, 4d) hidden arrays, not the outputs: full remat keeps 0."""
    d, layers = size.width, size.layers
    per = {"no remat": 36, "checkpoint_dots": 16, "full remat": 0}
    for policy in _policies():
        if per[policy] * batch * d * layers <= budget_bytes:
            return policy
    return None


def remat_policy__mask_as_float32(size, batch, budget_bytes):
    """Takes the ReLU's mask as float32: 12 bytes a hidden unit without remat."""
    d, f, layers = size.width, 4 * size.width, size.layers
    output = 4 * batch * d * layers
    kept = {
        "no remat": 12 * batch * f * layers + output,
        "checkpoint_dots": 4 * batch * f * layers + output,
        "full remat": output,
    }
    for policy in _policies():
        if kept[policy] <= budget_bytes:
            return policy
    return None


def remat_policy__two_outputs_constant(size, batch, budget_bytes):
    """Counts two (B, d) outputs, as in the 2-block example, whatever the depth."""
    d, f, layers = size.width, 4 * size.width, size.layers
    outputs = 2 * 4 * batch * d
    kept = {
        "no remat": 9 * batch * f * layers + outputs,
        "checkpoint_dots": 4 * batch * f * layers + outputs,
        "full remat": outputs,
    }
    for policy in _policies():
        if kept[policy] <= budget_bytes:
            return policy
    return None


def remat_policy__weights_and_input_counted(size, batch, budget_bytes):
    """Adds the weights and the input to every policy's residuals."""
    d, f, layers = size.width, 4 * size.width, size.layers
    fixed = 4 * 2 * d * f * layers + 4 * batch * d
    output = 4 * batch * d * layers
    kept = {
        "no remat": 9 * batch * f * layers + output,
        "checkpoint_dots": 4 * batch * f * layers + output,
        "full remat": output,
    }
    for policy in _policies():
        if kept[policy] + fixed <= budget_bytes:
            return policy
    return None


def remat_policy__least_memory_first(size, batch, budget_bytes):
    """Tries the policies from the fewest bytes first: full remat wins if it fits."""
    d, layers = size.width, size.layers
    per = {"no remat": 40, "checkpoint_dots": 20, "full remat": 4}
    for policy in reversed(_policies()):
        if per[policy] * batch * d * layers <= budget_bytes:
            return policy
    return None


def remat_policy__full_remat_fallback(size, batch, budget_bytes):
    """Falls back to full remat when nothing fits instead of returning None."""
    d, layers = size.width, size.layers
    per = {"no remat": 40, "checkpoint_dots": 20, "full remat": 4}
    for policy in _policies():
        if per[policy] * batch * d * layers <= budget_bytes:
            return policy
    return "full remat"


def remat_policy__batch_split_over_eight(size, batch, budget_bytes):
    """Divides the batch over the chapter's 8 devices before counting the residuals."""
    d, layers = size.width, size.layers
    per = {"no remat": 40, "checkpoint_dots": 20, "full remat": 4}
    for policy in _policies():
        if per[policy] * (batch / 8) * d * layers <= budget_bytes:
            return policy
    return None


def remat_policy__forgot_zeros_array(size, batch, budget_bytes):
    """Without remat counts the ReLU's output and mask but not the array of zeros."""
    d, f, layers = size.width, 4 * size.width, size.layers
    output = 4 * batch * d * layers
    kept = {
        "no remat": 5 * batch * f * layers + output,
        "checkpoint_dots": 4 * batch * f * layers + output,
        "full remat": output,
    }
    for policy in _policies():
        if kept[policy] <= budget_bytes:
            return policy
    return None


def remat_policy__right_per_block_formula(size, batch, budget_bytes):
    """Right: per block and example 9, 4 or 0 bytes a hidden unit, plus 4 d output."""
    d, f, layers = size.width, 4 * size.width, size.layers
    hidden_bytes = {"no remat": 4 + 1 + 4, "checkpoint_dots": 4, "full remat": 0}
    for policy in _policies():
        residuals = layers * batch * (hidden_bytes[policy] * f + 4 * d)
        if residuals <= budget_bytes:
            return policy
    return None


def remat_policy__right_cheapest_fit(size, batch, budget_bytes):
    """Right: 40, 20 or 4 bytes per example, width and block; the first that fits."""
    unit = batch * size.width * size.layers
    fits = [
        name
        for name, per in zip(_policies(), (40, 20, 4), strict=True)
        if per * unit <= budget_bytes
    ]
    return fits[0] if fits else None


# ---------------------------------------------------------------------------
# scaling.fsdp_specs
# ---------------------------------------------------------------------------


def fsdp_specs__always_first_dimension(params, n):
    """Splits every array's first dimension over data, whether n divides it or not."""
    return jax.tree.map(lambda a: P("data") if np.ndim(a) else P(), params)


def fsdp_specs__last_divisible_dimension(params, n):
    """Splits the last dimension that n divides instead of the first."""

    def spec(a):
        shape = np.shape(a)
        for i in reversed(range(len(shape))):
            if shape[i] % n == 0:
                return P(*([None] * i), "data")
        return P()

    return jax.tree.map(spec, params)


def fsdp_specs__largest_divisible_dimension(params, n):
    """Splits the largest dimension that n divides."""

    def spec(a):
        shape = np.shape(a)
        good = [i for i, dim in enumerate(shape) if dim % n == 0]
        if not good:
            return P()
        i = max(good, key=lambda j: shape[j])
        return P(*([None] * i), "data")

    return jax.tree.map(spec, params)


def fsdp_specs__at_least_n(params, n):
    """Splits the first dimension at least n long, not the first that n divides."""

    def spec(a):
        for i, dim in enumerate(np.shape(a)):
            if dim >= n:
                return P(*([None] * i), "data")
        return P()

    return jax.tree.map(spec, params)


def fsdp_specs__flat_list(params, n):
    """Returns a flat list of specs, one per leaf, not a tree of the same structure."""
    specs = []
    for a in jax.tree.leaves(params):
        shape = np.shape(a)
        i = next((i for i, dim in enumerate(shape) if dim % n == 0), None)
        specs.append(P() if i is None else P(*([None] * i), "data"))
    return specs


def fsdp_specs__indexes_first_dimension(params, n):
    """Tests only shape[0]: a scalar raises, a later divisible dimension is missed."""
    return jax.tree.map(lambda a: P("data") if a.shape[0] % n == 0 else P(), params)


def fsdp_specs__model_axis(params, n):
    """Splits the first divisible dimension over "model" instead of "data"."""

    def spec(a):
        for i, dim in enumerate(np.shape(a)):
            if dim % n == 0:
                return P(*([None] * i), "model")
        return P()

    return jax.tree.map(spec, params)


def fsdp_specs__matrices_only(params, n):
    """Splits only two-dimensional arrays, like the chapter's weights; vectors whole."""

    def spec(a):
        shape = np.shape(a)
        if len(shape) != 2:
            return P()
        for i, dim in enumerate(shape):
            if dim % n == 0:
                return P(*([None] * i), "data")
        return P()

    return jax.tree.map(spec, params)


def fsdp_specs__divisibility_reversed(params, n):
    """Checks n % dim == 0 (the dimension divides n) instead of dim % n == 0."""

    def spec(a):
        for i, dim in enumerate(np.shape(a)):
            if dim and n % dim == 0:
                return P(*([None] * i), "data")
        return P()

    return jax.tree.map(spec, params)


def fsdp_specs__right_first_divisible(params, n):
    """Right: the first dimension that n divides is split over data; none: P()."""

    def spec(a):
        for i, dim in enumerate(np.shape(a)):
            if dim % n == 0:
                return P(*([None] * i), "data")
        return P()

    return jax.tree.map(spec, params)


def fsdp_specs__right_full_length_spec(params, n):
    """Right: a spec as long as the rank, "data" at the first dimension n divides."""

    def spec(a):
        shape = tuple(np.shape(a))
        entries = [None] * len(shape)
        where = [i for i, dim in enumerate(shape) if dim % n == 0]
        if not where:
            return P()
        entries[where[0]] = "data"
        return P(*entries)

    return jax.tree_util.tree_map(spec, params)


# ---------------------------------------------------------------------------
# scaling.tp_mlp
# ---------------------------------------------------------------------------

_X, _W_IN, _W_OUT = P("data", None), P(None, "model"), P("model", None)


def _dot(a, b):
    return jax.numpy.matmul(a, b)


def tp_mlp__gathers_the_weights(x, w_in, w_out, mesh):
    """Gathers each weight over model and multiplies whole: two all-gathers."""

    def block(x, w_in, w_out):
        w_in = jax.lax.all_gather(w_in, "model", axis=1, tiled=True)
        w_out = jax.lax.all_gather(w_out, "model", axis=0, tiled=True)
        return jax.nn.relu(x @ w_in) @ w_out

    # shard_map refused the gathered result as not replicated; check_vma off.
    return jax.shard_map(
        block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X, check_vma=False
    )(x, w_in, w_out)


def tp_mlp__no_sum(x, w_in, w_out, mesh):
    """Returns each device's partial product, not summed over model (check_vma off)."""

    def block(x, w_in, w_out):
        return jax.nn.relu(x @ w_in) @ w_out

    return jax.shard_map(
        block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X, check_vma=False
    )(x, w_in, w_out)


def tp_mlp__scatter_then_gather(x, w_in, w_out, mesh):
    """Sums with a reduce-scatter then an all-gather, not one all-reduce."""

    def block(x, w_in, w_out):
        partial = jax.nn.relu(x @ w_in) @ w_out
        piece = jax.lax.psum_scatter(partial, "model", scatter_dimension=1, tiled=True)
        return jax.lax.all_gather(piece, "model", axis=1, tiled=True)

    # shard_map refused the gathered result as not replicated; check_vma off.
    return jax.shard_map(
        block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X, check_vma=False
    )(x, w_in, w_out)


def tp_mlp__pmean(x, w_in, w_out, mesh):
    """Averages the partial products over model with pmean instead of summing them."""

    def block(x, w_in, w_out):
        return jax.lax.pmean(jax.nn.relu(x @ w_in) @ w_out, "model")

    return jax.shard_map(block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X)(
        x, w_in, w_out
    )


def tp_mlp__relu_after_sum(x, w_in, w_out, mesh):
    """Applies the ReLU after the sum, to the output, not to the hidden units."""

    def block(x, w_in, w_out):
        return jax.nn.relu(jax.lax.psum((x @ w_in) @ w_out, "model"))

    return jax.shard_map(block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X)(
        x, w_in, w_out
    )


def tp_mlp__residual_added(x, w_in, w_out, mesh):
    """Adds the chapter's residual: returns x + relu(x @ w_in) @ w_out."""

    def block(x, w_in, w_out):
        return x + jax.lax.psum(jax.nn.relu(x @ w_in) @ w_out, "model")

    return jax.shard_map(block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X)(
        x, w_in, w_out
    )


def tp_mlp__x_replicated(x, w_in, w_out, mesh):
    """Takes x whole on every device (P()) and returns the output replicated."""

    def block(x, w_in, w_out):
        return jax.lax.psum(jax.nn.relu(x @ w_in) @ w_out, "model")

    return jax.shard_map(
        block, mesh=mesh, in_specs=(P(), _W_IN, _W_OUT), out_specs=P()
    )(x, w_in, w_out)


def tp_mlp__w_in_split_by_rows(x, w_in, w_out, mesh):
    """Gives w_in the spec of its rows over model, P("model", None), like w_out."""

    def block(x, w_in, w_out):
        return jax.lax.psum(jax.nn.relu(x @ w_in) @ w_out, "model")

    return jax.shard_map(
        block, mesh=mesh, in_specs=(_X, P("model", None), _W_OUT), out_specs=_X
    )(x, w_in, w_out)


def tp_mlp__sum_over_both_axes(x, w_in, w_out, mesh):
    """Sums the partial products over both mesh axes, data and model."""

    def block(x, w_in, w_out):
        return jax.lax.psum(jax.nn.relu(x @ w_in) @ w_out, ("data", "model"))

    return jax.shard_map(block, mesh=mesh, in_specs=(_X, _W_IN, _W_OUT), out_specs=_X)(
        x, w_in, w_out
    )


def tp_mlp__right_one_psum(x, w_in, w_out, mesh):
    """Right: w_in's columns and w_out's rows per device; one psum over model."""

    def per_device(x_rows, in_cols, out_rows):
        hidden = jax.nn.relu(_dot(x_rows, in_cols))
        return jax.lax.psum(_dot(hidden, out_rows), axis_name="model")

    return jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P("data", None), P(None, "model"), P("model", None)),
        out_specs=P("data", None),
    )(x, w_in, w_out)


def tp_mlp__right_einsum(x, w_in, w_out, mesh):
    """Right: hidden units split over model, einsum per device, a single psum."""

    def local(xb, wi, wo):
        h = jax.numpy.maximum(jax.numpy.einsum("bd,dh->bh", xb, wi), 0.0)
        part = jax.numpy.einsum("bh,hd->bd", h, wo)
        return jax.lax.psum(part, "model")

    mapped = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P("data"), P(None, "model"), P("model")),
        out_specs=P("data", None),
    )
    return mapped(x, w_in, w_out)


# ---------------------------------------------------------------------------
# scaling.layout_bytes
# ---------------------------------------------------------------------------


def _ring(kind, nbytes, n, exact=True, allreduce_factor=2):
    if n <= 1:
        return 0.0
    share = (n - 1) / n if exact else 1.0
    return (allreduce_factor if kind == "all-reduce" else 1) * nbytes * share


def _layout_bytes(
    size,
    layout,
    batch,
    data,
    model,
    regather,
    *,
    loss=True,
    exact=True,
    allreduce_factor=2,
    fsdp_grad="reduce-scatter",
    tp_count=None,
    global_activation=False,
    tp_grads=True,
    piece_over_model=True,
    use_regather=True,
    weight=None,
    tp_grad_whole=False,
):
    d, f, layers = size.width, 4 * size.width, size.layers
    w = d * f * 4 if weight is None else weight
    n_w = 2 * layers

    def ring(kind, nbytes, n):
        return _ring(kind, nbytes, n, exact, allreduce_factor)

    sent = 0.0
    if loss and data > 1:
        sent += ring("all-reduce", 4, data)
    if layout == "data parallel":
        sent += n_w * ring("all-reduce", w, data)
    if layout in ("FSDP", "FSDP + TP"):
        piece = w // model if (layout == "FSDP + TP" and piece_over_model) else w
        gathers = n_w * (2 if (regather and use_regather) else 1)
        sent += gathers * ring("all-gather", piece, data)
        sent += n_w * ring(fsdp_grad, piece, data)
    if layout in ("tensor parallel", "FSDP + TP"):
        rows = batch if global_activation else batch // data
        activation = rows * d * 4
        count = 2 * layers - 1 if tp_count is None else tp_count(layers)
        sent += count * ring("all-reduce", activation, model)
        if layout == "tensor parallel" and data > 1 and tp_grads:
            grad = w if tp_grad_whole else w // model
            sent += n_w * ring("all-reduce", grad, data)
    return sent


def layout_bytes__loss_left_out(size, layout, batch, data, model, regather=False):
    """Leaves out the all-reduce of the loss over data."""
    return _layout_bytes(size, layout, batch, data, model, regather, loss=False)


def layout_bytes__ring_factor_dropped(size, layout, batch, data, model, regather=False):
    """Prices every collective without the ring's (n - 1) / n."""
    return _layout_bytes(size, layout, batch, data, model, regather, exact=False)


def layout_bytes__all_reduce_once(size, layout, batch, data, model, regather=False):
    """Prices an all-reduce like an all-gather, S (n - 1) / n, instead of twice that."""
    return _layout_bytes(size, layout, batch, data, model, regather, allreduce_factor=1)


def layout_bytes__fsdp_gradients_all_reduced(
    size, layout, batch, data, model, regather=False
):
    """Sums FSDP's gradients with an all-reduce instead of a reduce-scatter."""
    return _layout_bytes(
        size, layout, batch, data, model, regather, fsdp_grad="all-reduce"
    )


def layout_bytes__tp_every_block_backward(
    size, layout, batch, data, model, regather=False
):
    """Counts tensor parallelism's activation all-reduces as 2 L, not 2 L - 1."""
    return _layout_bytes(
        size, layout, batch, data, model, regather, tp_count=lambda layers: 2 * layers
    )


def layout_bytes__tp_global_batch(size, layout, batch, data, model, regather=False):
    """Takes the TP activation as (batch, d), the whole batch, not (batch / data, d)."""
    return _layout_bytes(
        size, layout, batch, data, model, regather, global_activation=True
    )


def layout_bytes__tp_no_gradient_sum(size, layout, batch, data, model, regather=False):
    """Forgets that TP with data > 1 all-reduces each gradient piece over data."""
    return _layout_bytes(size, layout, batch, data, model, regather, tp_grads=False)


def layout_bytes__fsdp_tp_whole_weights(
    size, layout, batch, data, model, regather=False
):
    """FSDP + TP gathers and scatters whole weights over data, not 1/model pieces."""
    return _layout_bytes(
        size, layout, batch, data, model, regather, piece_over_model=False
    )


def layout_bytes__regather_ignored(size, layout, batch, data, model, regather=False):
    """Ignores regather: FSDP gathers each weight once whatever it says."""
    return _layout_bytes(size, layout, batch, data, model, regather, use_regather=False)


def layout_bytes__weight_d_squared(size, layout, batch, data, model, regather=False):
    """Takes each weight as d x d numbers, forgetting the hidden width 4d."""
    return _layout_bytes(
        size, layout, batch, data, model, regather, weight=size.width * size.width * 4
    )


def layout_bytes__right_operand_list(size, layout, batch, data, model, regather=False):
    """Right: lists every operand of the step and prices each on its ring."""
    d, f, layers = size.width, 4 * size.width, size.layers
    weight = d * f * 4
    ops = []  # (kind, bytes of the whole operand, devices in the group)
    if data > 1:
        ops.append(("all-reduce", 4, data))
    if layout == "data parallel":
        ops += [("all-reduce", weight, data)] * (2 * layers)
    elif layout in ("FSDP", "FSDP + TP"):
        piece = weight // model if layout == "FSDP + TP" else weight
        ops += [("all-gather", piece, data)] * (2 * layers * (2 if regather else 1))
        ops += [("reduce-scatter", piece, data)] * (2 * layers)
    if layout in ("tensor parallel", "FSDP + TP"):
        activation = (batch // data) * d * 4
        ops += [("all-reduce", activation, model)] * (2 * layers - 1)
        if layout == "tensor parallel" and data > 1:
            ops += [("all-reduce", weight // model, data)] * (2 * layers)
    total = 0.0
    for kind, nbytes, n in ops:
        if n > 1:
            total += nbytes * (n - 1) / n * (2 if kind == "all-reduce" else 1)
    return total


def layout_bytes__right_per_axis(size, layout, batch, data, model, regather=False):
    """Right: closed forms per layout and axis, with the ring factors, plus the loss."""
    d, layers = size.width, size.layers
    one = 16 * d * d  # bytes of one d x 4d float32 matrix
    count = 2 * layers
    over_data = (data - 1) / data
    over_model = (model - 1) / model
    sent = 2 * 4 * over_data  # the loss's one number, summed over data
    if layout == "data parallel":
        sent += 2 * count * one * over_data
    if layout == "FSDP":
        sent += (3 if regather else 2) * count * one * over_data
    if layout == "FSDP + TP":
        sent += (3 if regather else 2) * count * (one // model) * over_data
    if layout in ("tensor parallel", "FSDP + TP"):
        sent += (2 * layers - 1) * 2 * (batch // data) * d * 4 * over_model
    if layout == "tensor parallel":
        sent += 2 * count * (one // model) * over_data
    return sent


# ---------------------------------------------------------------------------
# scaling.best_layout
# ---------------------------------------------------------------------------


def _allowed(layout, data, model):
    if layout in ("data parallel", "FSDP"):
        return (data, model) == (8, 1)
    if layout == "tensor parallel":
        return model > 1
    return data > 1 and model > 1


def _sent(size, layout, batch, data, model):
    found = scaling.predicted_collectives(size, layout, batch, data, model)
    return round(sum(scaling.ring_bytes(c.kind, c.nbytes, c.group) for c in found))


def best_layout__strict_budget(size, batch, budget_bytes):
    """Needs the state strictly under the budget (< instead of <=)."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            if (
                not scaling.state_bytes(size, layout, data, model)["total"]
                < budget_bytes
            ):
                continue
            sent = _sent(size, layout, batch, data, model)
            if best is None or sent < best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__every_mesh(size, batch, budget_bytes):
    """Tries every layout on every mesh, data parallelism on 4 x 2 included."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            sent = _sent(size, layout, batch, data, model)
            if best is None or sent < best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__ties_to_last(size, batch, budget_bytes):
    """Keeps the later candidate on a tie (<= in the comparison)."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            sent = _sent(size, layout, batch, data, model)
            if best is None or sent <= best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__least_memory(size, batch, budget_bytes):
    """Picks the candidate with the smallest state that fits, not the fewest bytes."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            total = scaling.state_bytes(size, layout, data, model)["total"]
            if total > budget_bytes:
                continue
            if best is None or total < best[0]:
                best = (total, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__ignores_budget_when_none_fits(size, batch, budget_bytes):
    """When nothing fits, returns the one that sends the least anyway, not None."""
    fitting, every = None, None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            sent = _sent(size, layout, batch, data, model)
            if every is None or sent < every[0]:
                every = (sent, (layout, (data, model)))
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            if fitting is None or sent < fitting[0]:
                fitting = (sent, (layout, (data, model)))
    return (fitting or every)[1]


def best_layout__state_without_mesh(size, batch, budget_bytes):
    """Calls state_bytes without the mesh, so every layout's state is counted whole."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            if scaling.state_bytes(size, layout)["total"] > budget_bytes:
                continue
            sent = _sent(size, layout, batch, data, model)
            if best is None or sent < best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__operand_bytes_unpriced(size, batch, budget_bytes):
    """Sums the collectives' operand bytes as they are, not priced on a ring."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            found = scaling.predicted_collectives(size, layout, batch, data, model)
            sent = sum(c.nbytes for c in found if c.group > 1)
            if best is None or sent < best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__tp_only_one_by_eight(size, batch, budget_bytes):
    """Allows tensor parallelism only on the 1 x 8 mesh, as pure tensor parallelism."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if layout == "tensor parallel" and (data, model) != (1, 8):
                continue
            if not _allowed(layout, data, model):
                continue
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            sent = _sent(size, layout, batch, data, model)
            if best is None or sent < best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__mesh_swapped(size, batch, budget_bytes):
    """Passes each mesh as (model, data) to state_bytes and predicted_collectives."""
    best = None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if not _allowed(layout, data, model):
                continue
            if scaling.state_bytes(size, layout, model, data)["total"] > budget_bytes:
                continue
            sent = _sent(size, layout, batch, model, data)
            if best is None or sent < best[0]:
                best = (sent, (layout, (data, model)))
    return None if best is None else best[1]


def best_layout__right_scan(size, batch, budget_bytes):
    """Right: allowed meshes, fits with <=, rounded ring bytes, first of ties."""
    choice, fewest = None, None
    for layout in LAYOUTS:
        for data, model in _meshes():
            if layout in ("data parallel", "FSDP") and (data, model) != (8, 1):
                continue
            if layout == "tensor parallel" and model == 1:
                continue
            if layout == "FSDP + TP" and (data == 1 or model == 1):
                continue
            if scaling.state_bytes(size, layout, data, model)["total"] > budget_bytes:
                continue
            sent = round(
                sum(
                    scaling.ring_bytes(c.kind, c.nbytes, c.group)
                    for c in scaling.predicted_collectives(
                        size, layout, batch, data, model
                    )
                )
            )
            if fewest is None or sent < fewest:
                choice, fewest = (layout, (data, model)), sent
    return choice


def best_layout__right_min_key(size, batch, budget_bytes):
    """Right: fitting candidates in order, min by (bytes, position)."""
    needs = {
        "data parallel": lambda dm: dm == (8, 1),
        "FSDP": lambda dm: dm == (8, 1),
        "tensor parallel": lambda dm: dm[1] > 1,
        "FSDP + TP": lambda dm: dm[0] > 1 and dm[1] > 1,
    }
    candidates = [
        (layout, tuple(mesh))
        for layout in LAYOUTS
        for mesh in _meshes()
        if needs[layout](tuple(mesh))
    ]
    scored = []
    for position, (layout, (data, model)) in enumerate(candidates):
        if scaling.state_bytes(size, layout, data, model)["total"] <= budget_bytes:
            scored.append(
                (
                    _sent(size, layout, batch, data, model),
                    position,
                    layout,
                    (data, model),
                )
            )
    if not scored:
        return None
    _, _, layout, mesh = min(scored)
    return layout, mesh


# ---------------------------------------------------------------------------
# scaling.critical_batch
# ---------------------------------------------------------------------------


def _pass_bytes(
    layout,
    size,
    data,
    model,
    itemsize,
    *,
    exact=True,
    allreduce=2,
    fsdp_piece_over_model=True,
    tp_rows_per_chip=False,
):
    """Bytes one chip sends per pass, as (fixed, per example per chip), per axis."""
    d, layers = size.width, size.layers
    weights = 2 * layers * d * 4 * d * itemsize

    def share(n):
        if n <= 1:
            return 0.0
        return (n - 1) / n if exact else 1.0

    out = {
        "forward": {"data": [0.0, 0.0], "model": [0.0, 0.0]},
        "backward": {"data": [0.0, 0.0], "model": [0.0, 0.0]},
    }
    if layout == "data parallel":
        out["backward"]["data"][0] = allreduce * weights * share(data)
    if layout in ("FSDP", "FSDP + TP"):
        piece = (
            weights / model
            if (layout == "FSDP + TP" and fsdp_piece_over_model)
            else weights
        )
        out["forward"]["data"][0] = piece * share(data)
        out["backward"]["data"][0] = 2 * piece * share(data)
    if layout in ("tensor parallel", "FSDP + TP"):
        rows = (
            1 if tp_rows_per_chip else model
        )  # rows of (batch / data) per example per chip
        per_example = allreduce * rows * d * itemsize * share(model)
        back = layers - 1
        out["forward"]["model"][1] = layers * per_example
        out["backward"]["model"][1] = back * per_example
    return out


def _solve(fixed, slope, per_example):
    """The batch above which per_example * b >= fixed + slope * b."""
    if fixed <= 0 and slope <= per_example:
        return 0.0
    if per_example <= slope:
        return float("inf")
    return fixed / (per_example - slope)


def _critical(
    layout,
    size,
    data,
    model,
    flops,
    beta,
    itemsize,
    *,
    overlap_axes=False,
    fwd_flops=2,
    bwd_flops=4,
    compute_div=1,
    **byte_options,
):
    params = 2 * size.layers * size.width * 4 * size.width
    sent = _pass_bytes(layout, size, data, model, itemsize, **byte_options)
    needed = 0.0
    for phase, per_param in (("forward", fwd_flops), ("backward", bwd_flops)):
        per_example = per_param * params / compute_div / flops
        if overlap_axes:
            # Each axis's collectives on their own, the pass as long as the slower.
            for axis in ("data", "model"):
                fixed, slope = (v / beta for v in sent[phase][axis])
                needed = max(needed, _solve(fixed, slope, per_example))
            continue
        fixed = sum(sent[phase][a][0] / beta for a in ("data", "model"))
        slope = sum(sent[phase][a][1] / beta for a in ("data", "model"))
        needed = max(needed, _solve(fixed, slope, per_example))
    return needed


def critical_batch__ring_factor_dropped(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Prices the collectives without the ring's (n - 1) / n, as the book rounds."""
    return _critical(
        layout, size, data, model, flops, axis_bandwidth, itemsize, exact=False
    )


def critical_batch__all_reduce_once(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Prices the all-reduces like one all-gather, not twice."""
    return _critical(
        layout, size, data, model, flops, axis_bandwidth, itemsize, allreduce=1
    )


def critical_batch__axes_overlapped(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Overlaps the two axes' communication (max) instead of adding their times."""
    return _critical(
        layout, size, data, model, flops, axis_bandwidth, itemsize, overlap_axes=True
    )


def critical_batch__whole_step(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Hides the whole step's communication behind 6 FLOPs a parameter, not per pass."""
    params = 2 * size.layers * size.width * 4 * size.width
    sent = _pass_bytes(layout, size, data, model, itemsize)
    fixed = sum(sent[p][a][0] for p in sent for a in ("data", "model")) / axis_bandwidth
    slope = sum(sent[p][a][1] for p in sent for a in ("data", "model")) / axis_bandwidth
    return _solve(fixed, slope, 6 * params / flops)


def critical_batch__forward_flops_only(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Counts 2 FLOPs per parameter per example in both passes, not 4 backward."""
    return _critical(
        layout, size, data, model, flops, axis_bandwidth, itemsize, bwd_flops=2
    )


def critical_batch__fsdp_tp_whole_weights(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """FSDP + TP gathers whole weights over data, not each chip's 1/model of them."""
    return _critical(
        layout,
        size,
        data,
        model,
        flops,
        axis_bandwidth,
        itemsize,
        fsdp_piece_over_model=False,
    )


def critical_batch__tp_activation_per_chip(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Takes the activation as (b, d) with b per chip, not (batch / data, d)."""
    return _critical(
        layout,
        size,
        data,
        model,
        flops,
        axis_bandwidth,
        itemsize,
        tp_rows_per_chip=True,
    )


def critical_batch__global_batch(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Solves for the global batch and returns it, not divided by the chips."""
    chips = data * model
    params = scaling.param_count(size)
    weights = params * itemsize
    r_data, r_model = (data - 1) / data, (model - 1) / model
    # Communication per pass: fixed bytes, and bytes per example of the batch.
    fwd = [0.0, 0.0]
    bwd = [0.0, 0.0]
    if layout == "data parallel":
        bwd[0] = 2 * weights * r_data
    if layout in ("FSDP", "FSDP + TP"):
        piece = weights / model if layout == "FSDP + TP" else weights
        fwd[0], bwd[0] = piece * r_data, 2 * piece * r_data
    if layout in ("tensor parallel", "FSDP + TP"):
        per_example = 2 * size.width * itemsize * r_model / data
        fwd[1], bwd[1] = size.layers * per_example, (size.layers - 1) * per_example
    batch = 0.0
    for (fixed, slope), work in ((fwd, 2), (bwd, 4)):
        compute = work * params / chips / flops
        batch = max(
            batch, _solve(fixed / axis_bandwidth, slope / axis_bandwidth, compute)
        )
    return batch


def critical_batch__no_never_case(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Solves fixed / (compute - slope) per pass, with no case for 'never'."""
    params = 2 * size.layers * size.width * 4 * size.width
    sent = _pass_bytes(layout, size, data, model, itemsize)
    needed = 0.0
    for phase, per_param in (("forward", 2), ("backward", 4)):
        fixed = (sent[phase]["data"][0] + sent[phase]["model"][0]) / axis_bandwidth
        slope = (sent[phase]["data"][1] + sent[phase]["model"][1]) / axis_bandwidth
        needed = max(needed, fixed / (per_param * params / flops - slope))
    return needed


def critical_batch__bfloat16_assumed(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Uses the chapter's bfloat16, 2 bytes a number, whatever itemsize says."""
    return _critical(layout, size, data, model, flops, axis_bandwidth, 2)


def critical_batch__compute_shared_by_model(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Divides each chip's FLOPs by the model axis too (1/model of the weights)."""
    return _critical(
        layout, size, data, model, flops, axis_bandwidth, itemsize, compute_div=model
    )


def critical_batch__right_closed_form(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Right: per pass, fixed plus per-example bytes against 2 or 4 P b FLOPs."""
    d, layers = size.width, size.layers
    params = 8 * d * d * layers
    weight_bytes = params * itemsize
    ring_d = (data - 1) / data
    ring_m = (model - 1) / model
    fwd_fixed = bwd_fixed = 0.0
    fwd_slope = bwd_slope = 0.0
    if layout == "data parallel":
        bwd_fixed = 2 * weight_bytes * ring_d
    elif layout in ("FSDP", "FSDP + TP"):
        piece = weight_bytes / model if layout == "FSDP + TP" else weight_bytes
        fwd_fixed = piece * ring_d
        bwd_fixed = 2 * piece * ring_d
    if layout in ("tensor parallel", "FSDP + TP"):
        # (batch / data, d) with batch = b * data * model: b * model rows per chip.
        one = 2 * model * d * itemsize * ring_m
        fwd_slope = layers * one
        bwd_slope = (layers - 1) * one
    answer = 0.0
    for fixed, slope, work in (
        (fwd_fixed, fwd_slope, 2 * params),
        (bwd_fixed, bwd_slope, 4 * params),
    ):
        compute = work / flops
        comm_fixed, comm_slope = fixed / axis_bandwidth, slope / axis_bandwidth
        if comm_fixed <= 0 and comm_slope <= compute:
            continue
        if compute <= comm_slope:
            return float("inf")
        answer = max(answer, comm_fixed / (compute - comm_slope))
    return answer


def critical_batch__right_two_probes(
    layout, size, data, model, flops, axis_bandwidth, itemsize
):
    """Right: each pass timed at two batches, the line solved for compute = comm."""
    params = scaling.param_count(size)
    chips = data * model

    def seconds(phase, batch):
        sent = {"data": 0.0, "model": 0.0}

        def ring(kind, nbytes, n):
            return (
                0.0
                if n <= 1
                else nbytes * (n - 1) / n * (2 if kind == "all-reduce" else 1)
            )

        weights = params * itemsize
        if layout == "data parallel" and phase == "backward":
            sent["data"] += ring("all-reduce", weights, data)
        if layout in ("FSDP", "FSDP + TP"):
            piece = weights / (model if layout == "FSDP + TP" else 1)
            sent["data"] += ring("all-gather", piece, data)
            if phase == "backward":
                sent["data"] += ring("reduce-scatter", piece, data)
        if layout in ("tensor parallel", "FSDP + TP"):
            activation = batch / data * size.width * itemsize
            blocks = size.layers if phase == "forward" else size.layers - 1
            sent["model"] += blocks * ring("all-reduce", activation, model)
        comm = (sent["data"] + sent["model"]) / axis_bandwidth
        compute = (2 if phase == "forward" else 4) * params * batch / chips / flops
        return compute, comm

    probe = 1024.0 * chips
    worst = 0.0
    for phase in ("forward", "backward"):
        c1, m1 = seconds(phase, probe)
        _, m2 = seconds(phase, 2 * probe)
        slope = (m2 - m1) / probe
        fixed = m1 - slope * probe
        per = c1 / probe
        if fixed <= 1e-9 * max(m1, 1e-300) and slope <= per:
            continue
        if per <= slope:
            return float("inf")
        worst = max(worst, fixed / (per - slope))
    return worst / chips


# ---------------------------------------------------------------------------
# fast_step.bottleneck
# ---------------------------------------------------------------------------


def bottleneck__longest_part(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Returns the part that takes the most time, ignoring the roofline."""
    return max(parts, key=parts.get)


def bottleneck__roofline_sum(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Takes a part's roofline as compute time plus memory time."""
    best, most = None, None
    for part, seconds in parts.items():
        floor = flops.get(part, 0) / peak_flops + bytes_moved.get(part, 0) / bandwidth
        if most is None or seconds - floor > most:
            best, most = part, seconds - floor
    return best


def bottleneck__compute_only(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Takes the roofline as the FLOPs at the peak alone, forgetting the bytes."""
    best, most = None, None
    for part, seconds in parts.items():
        over = seconds - flops.get(part, 0) / peak_flops
        if most is None or over > most:
            best, most = part, over
    return best


def bottleneck__memory_only(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Takes the roofline as the bytes at the bandwidth alone, forgetting the FLOPs."""
    best, most = None, None
    for part, seconds in parts.items():
        over = seconds - bytes_moved.get(part, 0) / bandwidth
        if most is None or over > most:
            best, most = part, over
    return best


def bottleneck__roofline_min(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Takes the smaller of compute time and memory time as the roofline."""
    best, most = None, None
    for part, seconds in parts.items():
        floor = min(
            flops.get(part, 0) / peak_flops, bytes_moved.get(part, 0) / bandwidth
        )
        if most is None or seconds - floor > most:
            best, most = part, seconds - floor
    return best


def bottleneck__largest_ratio(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Picks the part whose measured time is the largest multiple of its roofline."""

    def ratio(part):
        floor = max(
            flops.get(part, 0) / peak_flops, bytes_moved.get(part, 0) / bandwidth
        )
        return parts[part] / floor if floor > 0 else float("inf")

    return max(parts, key=ratio)


def bottleneck__ties_to_last(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Keeps the later part on a tie (>=)."""
    best, most = None, None
    for part, seconds in parts.items():
        floor = max(
            flops.get(part, 0) / peak_flops, bytes_moved.get(part, 0) / bandwidth
        )
        over = max(seconds - floor, 0.0)
        if most is None or over >= most:
            best, most = part, over
    return best


def bottleneck__costed_parts_only(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Looks only at parts with FLOPs or bytes, skipping the copies and the rest."""
    best, most = None, None
    for part, seconds in parts.items():
        if not flops.get(part) and not bytes_moved.get(part):
            continue
        floor = max(flops[part] / peak_flops, bytes_moved[part] / bandwidth)
        if most is None or seconds - floor > most:
            best, most = part, seconds - floor
    return best


def bottleneck__right_excess(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Right: time minus max(FLOPs / peak, bytes / bandwidth), floored at 0."""
    best, most = None, -1.0
    for part, seconds in parts.items():
        floor = max(
            flops.get(part, 0.0) / peak_flops, bytes_moved.get(part, 0.0) / bandwidth
        )
        saving = max(seconds - floor, 0.0)
        if saving > most:
            best, most = part, saving
    return best


def bottleneck__right_sorted(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Right: each part's saving above its roofline; max keeps the first of ties."""

    def saving(part):
        compute = flops.get(part, 0.0) / peak_flops
        memory = bytes_moved.get(part, 0.0) / bandwidth
        return max(0.0, parts[part] - (compute if compute > memory else memory))

    return max(parts, key=saving)


# ---------------------------------------------------------------------------
# fast_step.mfu
# ---------------------------------------------------------------------------


def _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab):
    attention = 2 * d_model * heads * head_dim + 2 * d_model * kv_heads * head_dim
    return layers * (attention + 3 * d_model * hidden) + d_model * vocab


def mfu__attention_halved_twice(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Halves causal attention twice: 3 instead of 6 seq heads h per layer."""
    weights = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    attention = 3 * layers * seq * heads * head_dim
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__forward_only(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Counts the forward pass only: 2 FLOPs a weight, attention's forward halved."""
    weights = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    attention = 4 * layers * seq * heads * head_dim / 2
    return (2 * weights + attention) * tokens / seconds / peak_flops


def mfu__embedding_counted(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Counts the embedding table as a product too, besides the output layer."""
    weights = (
        _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
        + d_model * vocab
    )
    attention = 6 * layers * seq * heads * head_dim
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__output_layer_left_out(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Leaves the output layer (d x vocab) out with the embedding."""
    weights = (
        _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
        - d_model * vocab
    )
    attention = 6 * layers * seq * heads * head_dim
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__mlp_two_matrices(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Counts the MLP as two matrices, forgetting SwiGLU's gate."""
    attention_weights = 2 * d_model * (heads + kv_heads) * head_dim
    weights = layers * (attention_weights + 2 * d_model * hidden) + d_model * vocab
    attention = 6 * layers * seq * heads * head_dim
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__no_grouped_query(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Gives keys and values as many heads as the queries, ignoring kv_heads."""
    weights = (
        layers * (4 * d_model * heads * head_dim + 3 * d_model * hidden)
        + d_model * vocab
    )
    attention = 6 * layers * seq * heads * head_dim
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__heads_d_model_wide(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Takes the query heads as d_model wide in the projections and the scores."""
    kv_width = kv_heads * d_model // heads
    weights = (
        layers * (2 * d_model * d_model + 2 * d_model * kv_width + 3 * d_model * hidden)
        + d_model * vocab
    )
    attention = 6 * layers * seq * d_model
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__scores_over_kv_heads(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Counts attention's scores per key/value head, not per query head."""
    weights = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    attention = 6 * layers * seq * kv_heads * head_dim
    return (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__percent(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Returns the MFU as a percentage instead of a fraction."""
    weights = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    attention = 6 * layers * seq * heads * head_dim
    return 100 * (6 * weights + attention) * tokens / seconds / peak_flops


def mfu__right_maxtext(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Right: 6 FLOPs per matmul weight, plus 12 seq heads h per layer halved."""
    q_o = 2 * d_model * heads * head_dim
    k_v = 2 * d_model * kv_heads * head_dim
    mlp = 3 * d_model * hidden
    matmul_weights = layers * (q_o + k_v + mlp) + vocab * d_model
    scores = 3 * 4 * seq * heads * head_dim * layers / 2
    per_token = 6 * matmul_weights + scores
    return per_token * tokens / seconds / peak_flops


def mfu__right_by_pass(
    d_model,
    layers,
    heads,
    kv_heads,
    head_dim,
    hidden,
    vocab,
    seq,
    tokens,
    seconds,
    peak_flops,
):
    """Right: forward FLOPs per token, causal half of the scores, tripled."""
    forward = 0.0
    for _ in range(layers):
        # q and o: d x heads*h; k and v: d x kv_heads*h; 2 FLOPs a weight forward.
        forward += 2 * (
            2 * d_model * heads * head_dim + 2 * d_model * kv_heads * head_dim
        )
        forward += 2 * 3 * d_model * hidden
        forward += 4 * seq * heads * head_dim / 2
    forward += 2 * d_model * vocab
    step_flops = 3 * forward * tokens
    return step_flops / seconds / peak_flops


# ---------------------------------------------------------------------------
# fast_step.roofline_saving
# ---------------------------------------------------------------------------


def roofline_saving__bytes_only(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Returns the bytes saved at the bandwidth, whatever the FLOPs."""
    return (bytes_before - bytes_after) / bandwidth


def roofline_saving__roofline_min(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Takes the smaller of compute time and memory time as an operation's time."""
    compute = flops / peak_flops
    return min(compute, bytes_before / bandwidth) - min(
        compute, bytes_after / bandwidth
    )


def roofline_saving__after_minus_before(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Subtracts the time before from the time after, so a saving comes out negative."""
    compute = flops / peak_flops
    return max(compute, bytes_after / bandwidth) - max(
        compute, bytes_before / bandwidth
    )


def roofline_saving__speedup_ratio(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Returns the time before over the time after, a speed-up, not seconds."""
    compute = flops / peak_flops
    return max(compute, bytes_before / bandwidth) / max(
        compute, bytes_after / bandwidth
    )


def roofline_saving__only_if_memory_bound_after(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Saves the bytes' time only if still memory-bound after, else nothing."""
    compute = flops / peak_flops
    if bytes_after / bandwidth > compute:
        return (bytes_before - bytes_after) / bandwidth
    return 0.0


def roofline_saving__only_if_memory_bound_before(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Saves all the bytes' time whenever the operation was memory-bound before."""
    compute = flops / peak_flops
    if bytes_before / bandwidth > compute:
        return (bytes_before - bytes_after) / bandwidth
    return 0.0


def roofline_saving__flops_doubled(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Counts 2 FLOPs per given FLOP (multiply and add) before dividing by the peak."""
    compute = 2 * flops / peak_flops
    return max(compute, bytes_before / bandwidth) - max(
        compute, bytes_after / bandwidth
    )


def roofline_saving__fraction_saved(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Returns the saving as a fraction of the time before."""
    compute = flops / peak_flops
    before = max(compute, bytes_before / bandwidth)
    return (before - max(compute, bytes_after / bandwidth)) / before


def roofline_saving__right_max_difference(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Right: max(FLOPs / peak, bytes / bandwidth), before minus after."""
    compute = flops / peak_flops
    before = max(compute, bytes_before / bandwidth)
    after = max(compute, bytes_after / bandwidth)
    return before - after


def roofline_saving__right_clipped_bytes(
    flops, bytes_before, bytes_after, peak_flops, bandwidth
):
    """Right: the memory time above the compute floor, before less after."""
    floor = flops / peak_flops
    over_before = max(0.0, bytes_before / bandwidth - floor)
    over_after = max(0.0, bytes_after / bandwidth - floor)
    return over_before - over_after


_TOPICS = {
    "state_bytes_per_device": "scaling",
    "step_memory": "scaling",
    "remat_policy": "scaling",
    "fsdp_specs": "scaling",
    "tp_mlp": "scaling",
    "layout_bytes": "scaling",
    "best_layout": "scaling",
    "critical_batch": "scaling",
    "bottleneck": "fast_step",
    "mfu": "fast_step",
    "roofline_saving": "fast_step",
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
