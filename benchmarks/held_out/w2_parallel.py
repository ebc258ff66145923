"""Held-out answers written from the exercise texts alone (ch. 4, 5 and 9), writer W2.

Written from the student notebooks 04_sharding_exercises, 05_shard_map_exercises
and 09_dp_zh_exercises and the chapters book/04_sharding, book/05_shard_map and
book/09_dp_zh, as a learner reads them. The only course code run was what those
notebooks import (use_cpu_devices, draw_target, explicit_mesh, line_mesh, place,
linear_loss, loss_fn, NUM_DEVICES), and these functions on small made-up inputs.
No checker, hint, reference solution, stored output, message file or test was
read or run.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from exercise_kit.dp_zh_checks import NUM_DEVICES, loss_fn
from exercise_kit.shard_map_checks import linear_loss

# ---------------------------------------------------------------------------
# Chapter 4, exercise 1: spec_for_target (rows cut in 2, columns cut in 4;
# the top-right piece is on device 6, so rows follow "b" and columns "a").
# ---------------------------------------------------------------------------


def spec_for_target__rows_a_columns_b():
    """Puts "a" on the rows and "b" on the columns, the order the mesh is written in."""
    return P("a", "b")


def spec_for_target__columns_only():
    """Splits the columns over "a" but forgets to split the rows."""
    return P(None, "a")


def spec_for_target__rows_only():
    """Splits the rows over "b" but forgets to split the columns."""
    return P("b", None)


def spec_for_target__columns_over_b():
    """Puts the columns on "b" and leaves the rows whole."""
    return P(None, "b")


def spec_for_target__rows_over_a():
    """Splits the rows over "a" only, as in the chapter's P("a", None) drawing."""
    return P("a", None)


def spec_for_target__replicated():
    """Returns an empty spec, replicating the whole array."""
    return P()


def spec_for_target__columns_over_both():
    """Splits the columns over both mesh axes, eight pieces in one dimension."""
    return P(None, ("a", "b"))


def spec_for_target__rows_over_both():
    """Splits the rows over both mesh axes ("b" then "a"), the columns whole."""
    return P(("b", "a"), None)


def spec_for_target__right_b_then_a():
    """Right: two row pieces over "b", four column pieces over "a"."""
    return P("b", "a")


def spec_for_target__right_tuple_entries():
    """Right: the same layout written with one-axis tuples."""
    return jax.sharding.PartitionSpec(("b",), ("a",))


# ---------------------------------------------------------------------------
# Chapter 4, exercise 2: shard_mlp_2d
# ---------------------------------------------------------------------------


def _put(mesh, array, spec):
    return jax.device_put(array, NamedSharding(mesh, spec))


def _place_mlp(params, batch, mesh, layer_specs, data_spec=None, target_spec=None):
    data_spec = P("batch", None) if data_spec is None else data_spec
    placed = []
    for k, (W, b) in enumerate(params):
        w_spec, b_spec = layer_specs.get(k, (P(), P()))
        placed.append((_put(mesh, W, w_spec), _put(mesh, b, b_spec)))
    inputs, targets = batch
    target_spec = data_spec if target_spec is None else target_spec
    return placed, (_put(mesh, inputs, data_spec), _put(mesh, targets, target_spec))


def shard_mlp_2d__bias_left_replicated(params, batch, mesh):
    """Splits layer 1's W by columns but leaves its bias replicated."""
    specs = {1: (P(None, "model"), P()), 2: (P("model", None), P())}
    return _place_mlp(params, batch, mesh, specs)


def shard_mlp_2d__rows_and_columns_swapped(params, batch, mesh):
    """Splits layer 1 by rows and layer 2 by columns (bias following layer 2)."""
    specs = {1: (P("model", None), P()), 2: (P(None, "model"), P("model"))}
    return _place_mlp(params, batch, mesh, specs)


def shard_mlp_2d__layer2_bias_split(params, batch, mesh):
    """Also splits layer 2's bias over "model", like layer 1's."""
    specs = {1: (P(None, "model"), P("model")), 2: (P("model", None), P("model"))}
    return _place_mlp(params, batch, mesh, specs)


def shard_mlp_2d__batch_over_both_axes(params, batch, mesh):
    """Splits the inputs and targets 8 ways, over "batch" and "model" together."""
    specs = {1: (P(None, "model"), P("model")), 2: (P("model", None), P())}
    return _place_mlp(params, batch, mesh, specs, data_spec=P(("batch", "model"), None))


def shard_mlp_2d__targets_replicated(params, batch, mesh):
    """Splits the inputs over "batch" but leaves the targets replicated."""
    specs = {1: (P(None, "model"), P("model")), 2: (P("model", None), P())}
    return _place_mlp(params, batch, mesh, specs, target_spec=P())


def shard_mlp_2d__own_4x2_mesh(params, batch, mesh):
    """Builds its own 4x2 ("batch", "model") mesh instead of using the one given."""
    own = jax.make_mesh(
        (4, 2), ("batch", "model"), axis_types=(AxisType.Auto, AxisType.Auto)
    )
    specs = {1: (P(None, "model"), P("model")), 2: (P("model", None), P())}
    return _place_mlp(params, batch, own, specs)


def shard_mlp_2d__layers_off_by_one(params, batch, mesh):
    """Counts layers from 1: splits layer 0 by columns and layer 1 by rows."""
    specs = {0: (P(None, "model"), P("model")), 1: (P("model", None), P())}
    return _place_mlp(params, batch, mesh, specs)


def shard_mlp_2d__list_of_lists(params, batch, mesh):
    """Right layouts, but returns each layer as a [W, b] list instead of a tuple."""
    specs = {1: (P(None, "model"), P("model")), 2: (P("model", None), P())}
    placed, data = _place_mlp(params, batch, mesh, specs)
    return [[W, b] for W, b in placed], data


def shard_mlp_2d__right_loop_by_position(params, batch, mesh):
    """Right: chooses (W, b) specs by layer position and places every leaf."""

    def on(spec):
        return NamedSharding(mesh, spec)

    out = []
    for k, (W, b) in enumerate(params):
        if k == 1:
            w_spec, b_spec = P(None, "model"), P("model")
        elif k == 2:
            w_spec, b_spec = P("model", None), P()
        else:
            w_spec, b_spec = P(), P()
        out.append((jax.device_put(W, on(w_spec)), jax.device_put(b, on(b_spec))))
    inputs, targets = batch
    rows = on(P("batch"))
    return out, (jax.device_put(inputs, rows), jax.device_put(targets, rows))


def shard_mlp_2d__right_tree_of_shardings(params, batch, mesh):
    """Right: one device_put of the whole tree with a matching tree of shardings."""
    layer_specs = [(P(), P()) for _ in params]
    layer_specs[1] = (P(None, "model"), P("model"))
    layer_specs[2] = (P("model", None), P(None))
    shardings = [tuple(NamedSharding(mesh, s) for s in pair) for pair in layer_specs]
    new_params = jax.device_put([tuple(layer) for layer in params], shardings)
    new_batch = jax.device_put(tuple(batch), NamedSharding(mesh, P("batch", None)))
    return [tuple(layer) for layer in new_params], new_batch


# ---------------------------------------------------------------------------
# Chapter 4, exercise 3: make_hidden_layer
# ---------------------------------------------------------------------------


def make_hidden_layer__constrain_w_instead(mesh):
    """Constrains the input w to split its columns over "model", not the result."""

    @jax.jit
    def hidden_layer(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P(None, "model")))
        return jax.nn.relu(x @ w)

    return hidden_layer


def make_hidden_layer__transposed_spec(mesh):
    """Constrains the result to P("model", "batch"), the axes the wrong way round."""

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(
            h, NamedSharding(mesh, P("model", "batch"))
        )

    return hidden_layer


def make_hidden_layer__columns_only(mesh):
    """Constrains the result to P(None, "model"), dropping the split of the rows."""

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(
            h, NamedSharding(mesh, P(None, "model"))
        )

    return hidden_layer


def make_hidden_layer__rows_only(mesh):
    """Constrains the result to P("batch", None), what it already was."""

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(
            h, NamedSharding(mesh, P("batch", None))
        )

    return hidden_layer


def make_hidden_layer__replicated(mesh):
    """Constrains the result to P(), replicated on every device."""

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P()))

    return hidden_layer


def make_hidden_layer__no_relu(mesh):
    """Constrains x @ w correctly but forgets the relu."""

    @jax.jit
    def hidden_layer(x, w):
        return jax.lax.with_sharding_constraint(
            x @ w, NamedSharding(mesh, P("batch", "model"))
        )

    return hidden_layer


def make_hidden_layer__not_jitted(mesh):
    """Right computation and constraint, but returns the function without jax.jit."""

    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(
            h, NamedSharding(mesh, P("batch", "model"))
        )

    return hidden_layer


def make_hidden_layer__own_4x2_mesh(mesh):
    """Builds a fresh 4x2 ("batch", "model") mesh for the constraint, not mesh."""
    own = jax.make_mesh(
        (4, 2), ("batch", "model"), axis_types=(AxisType.Auto, AxisType.Auto)
    )

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(
            h, NamedSharding(own, P("batch", "model"))
        )

    return hidden_layer


def make_hidden_layer__bare_partition_spec(mesh):
    """Passes a bare PartitionSpec to the constraint without the mesh."""

    @jax.jit
    def hidden_layer(x, w):
        return jax.lax.with_sharding_constraint(jax.nn.relu(x @ w), P("batch", "model"))

    return hidden_layer


def make_hidden_layer__right_constrain_output(mesh):
    """Right: relu(x @ w), then the result constrained to P("batch", "model")."""
    blocks = NamedSharding(mesh, P("batch", "model"))

    def hidden_layer(x, w):
        return jax.lax.with_sharding_constraint(jax.nn.relu(jnp.dot(x, w)), blocks)

    return jax.jit(hidden_layer)


def make_hidden_layer__right_constrain_preactivation(mesh):
    """Right: constrains the product before the element-wise relu (same layout)."""

    @jax.jit
    def hidden_layer(x, w):
        z = jax.lax.with_sharding_constraint(
            x @ w, NamedSharding(mesh, P("batch", "model"))
        )
        return jnp.maximum(z, 0)

    return hidden_layer


# ---------------------------------------------------------------------------
# Chapter 4, exercise 4: collective_free_specs
# ---------------------------------------------------------------------------


def collective_free_specs__fixed_axis_names(mesh):
    """Splits x's rows over ("data", "model") by name, whatever the mesh calls them."""
    return P(("data", "model"), None), P(), P()


def collective_free_specs__first_axis_only(mesh):
    """Data parallelism over the first mesh axis only, weights replicated."""
    first = mesh.axis_names[0]
    return P(first, None), P(), P()


def collective_free_specs__star_unpacked_names(mesh):
    """Writes P(*mesh.axis_names) for x, which splits its columns over axis two."""
    return P(*mesh.axis_names), P(), P()


def collective_free_specs__all_replicated(mesh):
    """Replicates everything: no communication, but every device does all the work."""
    return P(), P(), P()


def collective_free_specs__batch_and_w1_columns(mesh):
    """Batch over the first axis, w1 by columns over the second, w2 replicated."""
    first, second = mesh.axis_names
    return P(first, None), P(None, second), P()


def collective_free_specs__second_axis_only(mesh):
    """Splits the batch over the second mesh axis only."""
    return P(mesh.axis_names[1], None), P(), P()


def collective_free_specs__w1_split_too(mesh):
    """Splits the batch over every axis and also w1's columns over the second axis."""
    names = tuple(mesh.axis_names)
    return P(names, None), P(None, names[1]), P()


def collective_free_specs__contracted_dimension(mesh):
    """Splits x's columns and w1's rows (the contracted dimension) over every axis."""
    names = tuple(mesh.axis_names)
    return P(None, names), P(names, None), P()


def collective_free_specs__right_batch_over_every_axis(mesh):
    """Right: the rows of x over all mesh axes, both weights replicated."""
    return P(tuple(mesh.axis_names), None), P(), P()


def collective_free_specs__right_reversed_axis_order(mesh):
    """Right: the batch over all axes in the other order, weights whole everywhere."""
    first, second = mesh.axis_names
    return P((second, first)), P(None, None), P(None, None)


# ---------------------------------------------------------------------------
# Chapter 4, exercise 5: cheaper_product (Explicit mode)
# ---------------------------------------------------------------------------


def _axis(x):
    return jax.typeof(x).sharding.spec[0]


def cheaper_product__always_gather_w(x, w):
    """Always asks for the product split by rows, which gathers w every time."""
    return jnp.matmul(x, w, out_sharding=P(_axis(x), None))


def cheaper_product__always_gather_x(x, w):
    """Always gathers x with jax.reshard, whichever operand is smaller."""
    return jax.reshard(x, P()) @ w


def cheaper_product__gather_both(x, w):
    """Makes both operands whole on every device before multiplying."""
    return jax.reshard(x, P()) @ jax.reshard(w, P())


def cheaper_product__replicated_output(x, w):
    """Names a fully replicated output, out_sharding=P()."""
    return jnp.matmul(x, w, out_sharding=P())


def cheaper_product__gather_the_larger(x, w):
    """Compares the sizes but gathers the larger operand."""
    if x.size > w.size:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


def cheaper_product__back_to_x_layout(x, w):
    """Gathers the smaller operand, then reshards the product back to x's row layout."""
    axis = _axis(x)
    if x.size <= w.size:
        out = jax.reshard(x, P()) @ w
    else:
        out = x @ jax.reshard(w, P())
    return jax.reshard(out, P(axis, None))


def cheaper_product__all_to_all_route(x, w):
    """Splits both operands along the contracted dimension, then sums the partials."""
    axis = _axis(x)
    x_k = jax.reshard(x, P(None, axis))
    w_k = jax.reshard(w, P(axis, None))
    return jnp.matmul(x_k, w_k, out_sharding=P(axis, None))


def cheaper_product__hardcoded_axis_x(x, w):
    """Chooses by size, but writes the mesh axis name "X" into the out_sharding."""
    if x.size <= w.size:
        return jnp.matmul(x, w, out_sharding=P(None, "X"))
    return jnp.matmul(x, w, out_sharding=P("X", None))


def cheaper_product__right_reshard_smaller(x, w):
    """Right: jax.reshard the operand with fewer elements to P(), then multiply."""
    if x.size <= w.size:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


def cheaper_product__right_out_sharding_by_shape(x, w):
    """Right: x has m*k entries and w k*f, so m < f means keeping w's columns split."""
    axis = _axis(x)
    m, f = x.shape[0], w.shape[1]
    spec = P(None, axis) if m <= f else P(axis, None)
    return jnp.matmul(x, w, out_sharding=spec)


def cheaper_product__right_device_put_smaller(x, w):
    """Right: device_put the smaller operand to P() inside the traced function."""
    x_bytes = x.size * x.dtype.itemsize
    w_bytes = w.size * w.dtype.itemsize
    if w_bytes < x_bytes:
        return jnp.dot(x, jax.device_put(w, P()))
    return jnp.dot(jax.device_put(x, P()), w)


# ---------------------------------------------------------------------------
# Chapter 5, exercise 1: global_mean
# ---------------------------------------------------------------------------


def _on_i(fn, mesh, in_specs=None, out_specs=None, **kwargs):
    in_specs = P("i") if in_specs is None else in_specs
    out_specs = P() if out_specs is None else out_specs
    return jax.shard_map(
        fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kwargs
    )


def global_mean__sum_not_mean(x, mesh):
    """Returns the psum of the block sums, the total instead of the mean."""
    return _on_i(lambda b: jax.lax.psum(b.sum(), "i"), mesh)(x)


def global_mean__divide_by_block_length(x, mesh):
    """Divides the global sum by the length of one device's block."""
    return _on_i(lambda b: jax.lax.psum(b.sum(), "i") / b.shape[0], mesh)(x)


def global_mean__psum_of_local_means(x, mesh):
    """Adds up the local means without dividing by the number of devices."""
    return _on_i(lambda b: jax.lax.psum(jnp.mean(b), "i"), mesh)(x)


def global_mean__pmean_of_local_sums(x, mesh):
    """Averages the local sums over the devices, forgetting the block length."""
    return _on_i(lambda b: jax.lax.pmean(jnp.sum(b), "i"), mesh)(x)


def global_mean__hardcoded_length_32(x, mesh):
    """Divides the psum by 32, the length of the example vector."""
    return _on_i(lambda b: jax.lax.psum(b.sum(), "i") / 32.0, mesh)(x)


def global_mean__gather_then_mean(x, mesh):
    """Gathers the whole vector on every device and takes its mean there."""

    def per_device(b):
        return jnp.mean(jax.lax.all_gather(b, "i", tiled=True))

    return _on_i(per_device, mesh, check_vma=False)(x)


def global_mean__psum_whole_block(x, mesh):
    """psums the whole block element by element, then takes the mean of that."""
    return _on_i(lambda b: jnp.mean(jax.lax.psum(b, "i")), mesh)(x)


def global_mean__local_means_concatenated(x, mesh):
    """Returns each device's own mean, concatenated with out_specs=P("i")."""
    return _on_i(lambda b: jnp.mean(b, keepdims=True), mesh, out_specs=P("i"))(x)


def global_mean__no_shard_map(x, mesh):
    """Calls jnp.mean on the sharded x and lets the compiler do it, no shard_map."""
    return jax.jit(jnp.mean)(x)


def global_mean__right_psum_then_divide(x, mesh):
    """Right: psum of each block's sum, divided by block length times device count."""

    def per_device(b):
        total = jax.lax.psum(jnp.sum(b), "i")
        return total / (b.shape[0] * jax.lax.axis_size("i"))

    return _on_i(per_device, mesh)(x)


def global_mean__right_pmean_of_block_means(x, mesh):
    """Right: the blocks are equally long, so the pmean of their means is the mean."""
    return jax.jit(_on_i(lambda b: jax.lax.pmean(b.mean(), "i"), mesh))(x)


def global_mean__right_divide_by_global_size(x, mesh):
    """Right: psum of the block sums divided by the size of the whole x."""
    n = x.size
    return _on_i(lambda b: jax.lax.psum(b.sum(), "i") / n, mesh)(x)


# ---------------------------------------------------------------------------
# Chapter 5, exercise 2: allgather_matmul (both split by rows)
# ---------------------------------------------------------------------------

_ROWS = P("i", None)


def allgather_matmul__psum_of_partials(lhs, rhs, mesh):
    """Multiplies its lhs columns by its rows of rhs and psums the partial products."""

    def per_device(l_block, r_block):
        k = r_block.shape[0]
        start = jax.lax.axis_index("i") * k
        l_part = jax.lax.dynamic_slice_in_dim(l_block, start, k, axis=1)
        return jax.lax.psum(l_part @ r_block, "i")

    return _on_i(per_device, mesh, (_ROWS, _ROWS), _ROWS)(lhs, rhs)


def allgather_matmul__stacked_gather_reshaped(lhs, rhs, mesh):
    """Gathers rhs untiled on axis 1 and reshapes it, which interleaves the rows."""

    def per_device(l_block, r_block):
        stacked = jax.lax.all_gather(r_block, "i", axis=1)
        return l_block @ stacked.reshape(-1, r_block.shape[1])

    return _on_i(per_device, mesh, (_ROWS, _ROWS), _ROWS)(lhs, rhs)


def allgather_matmul__untiled_gather(lhs, rhs, mesh):
    """Uses all_gather without tiled=True and multiplies by the stacked blocks."""

    def per_device(l_block, r_block):
        return l_block @ jax.lax.all_gather(r_block, "i")

    return _on_i(per_device, mesh, (_ROWS, _ROWS), _ROWS)(lhs, rhs)


def allgather_matmul__gathers_both_replicated(lhs, rhs, mesh):
    """Gathers both operands, computes the whole product and returns it replicated."""

    def per_device(l_block, r_block):
        l_all = jax.lax.all_gather(l_block, "i", tiled=True, to="invarying")
        r_all = jax.lax.all_gather(r_block, "i", tiled=True, to="invarying")
        return l_all @ r_all

    return _on_i(per_device, mesh, (_ROWS, _ROWS), P())(lhs, rhs)


def allgather_matmul__chapter_column_gather(lhs, rhs, mesh):
    """Takes rhs by columns as in the chapter and gathers along axis 1."""

    def per_device(l_block, r_block):
        return l_block @ jax.lax.all_gather(r_block, "i", axis=1, tiled=True)

    return _on_i(per_device, mesh, (_ROWS, P(None, "i")), _ROWS)(lhs, rhs)


def allgather_matmul__out_specs_columns(lhs, rhs, mesh):
    """Gathers rhs correctly but joins the result with out_specs=P(None, "i")."""

    def per_device(l_block, r_block):
        return l_block @ jax.lax.all_gather(r_block, "i", tiled=True)

    return _on_i(per_device, mesh, (_ROWS, _ROWS), P(None, "i"))(lhs, rhs)


def allgather_matmul__no_gather_partial(lhs, rhs, mesh):
    """Multiplies by its own rows of rhs only, with no collective."""

    def per_device(l_block, r_block):
        k = r_block.shape[0]
        start = jax.lax.axis_index("i") * k
        return jax.lax.dynamic_slice_in_dim(l_block, start, k, axis=1) @ r_block

    return _on_i(per_device, mesh, (_ROWS, _ROWS), _ROWS)(lhs, rhs)


def allgather_matmul__replicated_out_spec(lhs, rhs, mesh):
    """Gathers rhs but returns with out_specs=P() and check_vma=False."""

    def per_device(l_block, r_block):
        return l_block @ jax.lax.all_gather(r_block, "i", tiled=True)

    return _on_i(per_device, mesh, (_ROWS, _ROWS), P(), check_vma=False)(lhs, rhs)


def allgather_matmul__right_tiled_gather(lhs, rhs, mesh):
    """Right: each device gathers all rows of rhs (tiled), times its lhs rows."""

    def per_device(l_block, r_block):
        r_all = jax.lax.all_gather(r_block, "i", axis=0, tiled=True)
        return jnp.matmul(l_block, r_all)

    return jax.jit(_on_i(per_device, mesh, (P("i"), P("i")), P("i")))(lhs, rhs)


def allgather_matmul__right_stacked_then_reshape(lhs, rhs, mesh):
    """Right: all_gather stacks the blocks on a new axis 0, reshaped back to (k, f)."""

    def per_device(l_block, r_block):
        stacked = jax.lax.all_gather(r_block, "i")
        return l_block @ stacked.reshape(l_block.shape[1], r_block.shape[1])

    return _on_i(per_device, mesh, (_ROWS, _ROWS), _ROWS)(lhs, rhs)


# ---------------------------------------------------------------------------
# Chapter 5, exercise 3: reduce_scatter_matmul
# ---------------------------------------------------------------------------

_COLS = P(None, "i")


def reduce_scatter_matmul__scatter_columns(lhs, rhs, mesh):
    """Copies the chapter: scatter_dimension=1 and a result split by columns."""

    def per_device(l_block, r_block):
        return jax.lax.psum_scatter(
            l_block @ r_block, "i", scatter_dimension=1, tiled=True
        )

    return _on_i(per_device, mesh, (_COLS, _ROWS), _COLS)(lhs, rhs)


def reduce_scatter_matmul__replicated_out_spec(lhs, rhs, mesh):
    """Reduce-scatters by rows but declares out_specs=P() with check_vma=False."""

    def per_device(l_block, r_block):
        return jax.lax.psum_scatter(
            l_block @ r_block, "i", scatter_dimension=0, tiled=True
        )

    return _on_i(per_device, mesh, (_COLS, _ROWS), P(), check_vma=False)(lhs, rhs)


def reduce_scatter_matmul__psum_then_slice(lhs, rhs, mesh):
    """psums the partial products, then each device slices out its rows."""

    def per_device(l_block, r_block):
        total = jax.lax.psum(l_block @ r_block, "i")
        rows = total.shape[0] // jax.lax.axis_size("i")
        return jax.lax.dynamic_slice_in_dim(
            total, jax.lax.axis_index("i") * rows, rows, axis=0
        )

    return _on_i(per_device, mesh, (_COLS, _ROWS), _ROWS)(lhs, rhs)


def reduce_scatter_matmul__psum_replicated(lhs, rhs, mesh):
    """psums the partial products and returns the whole product replicated."""

    def per_device(l_block, r_block):
        return jax.lax.psum(l_block @ r_block, "i")

    return _on_i(per_device, mesh, (_COLS, _ROWS), P())(lhs, rhs)


def reduce_scatter_matmul__untiled_scatter(lhs, rhs, mesh):
    """Calls psum_scatter on dimension 0 without tiled=True."""

    def per_device(l_block, r_block):
        return jax.lax.psum_scatter(l_block @ r_block, "i", scatter_dimension=0)

    return _on_i(per_device, mesh, (_COLS, _ROWS), _ROWS)(lhs, rhs)


def reduce_scatter_matmul__no_collective(lhs, rhs, mesh):
    """Returns each device's partial product, concatenated by rows, without summing."""

    def per_device(l_block, r_block):
        return l_block @ r_block

    return _on_i(per_device, mesh, (_COLS, _ROWS), _ROWS)(lhs, rhs)


def reduce_scatter_matmul__averaged_partials(lhs, rhs, mesh):
    """Reduce-scatters the partial products, then divides by the number of devices."""

    def per_device(l_block, r_block):
        piece = jax.lax.psum_scatter(
            l_block @ r_block, "i", scatter_dimension=0, tiled=True
        )
        return piece / jax.lax.axis_size("i")

    return _on_i(per_device, mesh, (_COLS, _ROWS), _ROWS)(lhs, rhs)


def reduce_scatter_matmul__gather_both(lhs, rhs, mesh):
    """Gathers both operands whole, multiplies, and keeps its own rows."""

    def per_device(l_block, r_block):
        l_all = jax.lax.all_gather(l_block, "i", axis=1, tiled=True)
        r_all = jax.lax.all_gather(r_block, "i", axis=0, tiled=True)
        full = l_all @ r_all
        rows = full.shape[0] // jax.lax.axis_size("i")
        return jax.lax.dynamic_slice_in_dim(
            full, jax.lax.axis_index("i") * rows, rows, axis=0
        )

    return _on_i(per_device, mesh, (_COLS, _ROWS), _ROWS)(lhs, rhs)


def reduce_scatter_matmul__right_tiled_rows(lhs, rhs, mesh):
    """Right: psum_scatter the partial product along its rows, tiled."""

    def per_device(l_block, r_block):
        partial = jnp.dot(l_block, r_block)
        return jax.lax.psum_scatter(partial, "i", scatter_dimension=0, tiled=True)

    return jax.jit(_on_i(per_device, mesh, (_COLS, _ROWS), _ROWS))(lhs, rhs)


def reduce_scatter_matmul__right_untiled_reshaped(lhs, rhs, mesh):
    """Right: one row block of the partial product per device, untiled psum_scatter."""

    def per_device(l_block, r_block):
        n = jax.lax.axis_size("i")
        partial = l_block @ r_block
        pieces = partial.reshape(n, partial.shape[0] // n, partial.shape[1])
        return jax.lax.psum_scatter(pieces, "i", scatter_dimension=0)

    return _on_i(per_device, mesh, (_COLS, _ROWS), _ROWS)(lhs, rhs)


# ---------------------------------------------------------------------------
# Chapter 5, exercise 4: ring_shift
# ---------------------------------------------------------------------------


def _permute(x, mesh, pairs, in_spec=_ROWS):
    return _on_i(
        lambda b: jax.lax.ppermute(b, "i", perm=pairs), mesh, in_spec, in_spec
    )(x)


def ring_shift__wrong_direction(x, mesh):
    """Sends every block to the previous device (d to d - 1)."""
    n = mesh.shape["i"]
    return _permute(x, mesh, [(d, (d - 1) % n) for d in range(n)])


def ring_shift__no_wraparound(x, mesh):
    """Leaves out the pair from the last device back to device 0."""
    n = mesh.shape["i"]
    return _permute(x, mesh, [(d, d + 1) for d in range(n - 1)])


def ring_shift__all_devices_count(x, mesh):
    """Builds the ring from len(jax.devices()) instead of the mesh's size."""
    n = len(jax.devices())
    return _permute(x, mesh, [(d, (d + 1) % n) for d in range(n)])


def ring_shift__roll_within_block(x, mesh):
    """Rolls the rows inside each device's block instead of moving blocks."""
    return _on_i(lambda b: jnp.roll(b, 1, axis=0), mesh, _ROWS, _ROWS)(x)


def ring_shift__roll_by_one_row(x, mesh):
    """Rolls the global array by one row instead of one block of rows."""
    return jax.jit(lambda a: jnp.roll(a, 1, axis=0))(x)


def ring_shift__gather_roll_slice(x, mesh):
    """Gathers the whole matrix, rolls it by a block and keeps its own block."""

    def per_device(b):
        rows = b.shape[0]
        whole = jnp.roll(jax.lax.all_gather(b, "i", tiled=True), rows, axis=0)
        return jax.lax.dynamic_slice_in_dim(whole, jax.lax.axis_index("i") * rows, rows)

    return _on_i(per_device, mesh, _ROWS, _ROWS)(x)


def ring_shift__columns_split(x, mesh):
    """Splits the matrix by columns, so the ring moves column blocks."""
    n = mesh.shape["i"]
    return _permute(x, mesh, [(d, (d + 1) % n) for d in range(n)], in_spec=_COLS)


def ring_shift__two_hops(x, mesh):
    """Sends each block two devices along, (d, d + 2)."""
    n = mesh.shape["i"]
    return _permute(x, mesh, [(d, (d + 2) % n) for d in range(n)])


def ring_shift__right_next_device(x, mesh):
    """Right: pairs (d, (d + 1) mod n) with n read from the mesh."""
    n = mesh.shape["i"]
    return jax.jit(lambda a: _permute(a, mesh, [(d, (d + 1) % n) for d in range(n)]))(x)


def ring_shift__right_receive_from_previous(x, mesh):
    """Right: every device receives from d - 1; the wrap pair from the axis size."""

    def per_device(b):
        n = jax.lax.axis_size("i")
        pairs = [((d - 1) % n, d) for d in range(n)]
        return jax.lax.ppermute(b, "i", perm=pairs)

    return _on_i(per_device, mesh, P("i"), P("i"))(x)


# ---------------------------------------------------------------------------
# Chapter 5, exercise 5: global_positions
# ---------------------------------------------------------------------------


def _positions(x, mesh, per_device, **kwargs):
    return _on_i(per_device, mesh, P("i"), kwargs.pop("out_specs", P("i")), **kwargs)(x)


def global_positions__local_only(x, mesh):
    """Returns 0, 1, ... within each block, forgetting the device's offset."""
    return _positions(x, mesh, lambda b: jnp.arange(b.shape[0], dtype=jnp.int32))


def global_positions__offset_times_device_count(x, mesh):
    """Multiplies the device index by the device count instead of the block length."""

    def per_device(b):
        return jax.lax.axis_index("i") * jax.lax.axis_size("i") + jnp.arange(
            b.shape[0], dtype=jnp.int32
        )

    return _positions(x, mesh, per_device)


def global_positions__starts_at_one(x, mesh):
    """Counts the positions from 1 instead of 0."""

    def per_device(b):
        return jax.lax.axis_index("i") * b.shape[0] + jnp.arange(
            1, b.shape[0] + 1, dtype=jnp.int32
        )

    return _positions(x, mesh, per_device)


def global_positions__float_dtype(x, mesh):
    """Right positions, but cast to x's dtype instead of int32."""

    def per_device(b):
        start = jax.lax.axis_index("i") * b.shape[0]
        return (start + jnp.arange(b.shape[0])).astype(b.dtype)

    return _positions(x, mesh, per_device)


def global_positions__copies_values(x, mesh):
    """Returns x's own values as int32, which only matches when x is 0, 1, 2, ..."""
    return _positions(x, mesh, lambda b: b.astype(jnp.int32))


def global_positions__hardcoded_block_4(x, mesh):
    """Uses 4 for the block length, as in the 32-entry example on 8 devices."""

    def per_device(b):
        return jax.lax.axis_index("i") * 4 + jnp.arange(b.shape[0], dtype=jnp.int32)

    return _positions(x, mesh, per_device)


def global_positions__global_arange_per_device(x, mesh):
    """Every device builds arange of the whole length of x; out_specs joins them."""
    total = x.shape[0]
    return _positions(x, mesh, lambda b: jnp.arange(total, dtype=jnp.int32))


def global_positions__global_length_offset(x, mesh):
    """Uses the length of the whole x as the offset step instead of the block length."""
    total = x.shape[0]

    def per_device(b):
        return jax.lax.axis_index("i") * total + jnp.arange(b.shape[0], dtype=jnp.int32)

    return _positions(x, mesh, per_device)


def global_positions__right_index_times_block(x, mesh):
    """Right: axis_index times the block length, plus arange of the block, as int32."""

    def per_device(b):
        size = b.shape[0]
        return jax.lax.axis_index("i").astype(jnp.int32) * size + jnp.arange(
            size, dtype=jnp.int32
        )

    return jax.jit(lambda a: _positions(a, mesh, per_device))(x)


def global_positions__right_broadcast_iota(x, mesh):
    """Right: lax.iota for the block, shifted by the block's start."""

    def per_device(b):
        start = jnp.int32(b.shape[0]) * jax.lax.axis_index("i")
        return lax.iota(jnp.int32, b.shape[0]) + start

    return _positions(x, mesh, per_device)


# ---------------------------------------------------------------------------
# Chapter 5, exercise 6: data_parallel_grads (linear model, axis "batch")
# ---------------------------------------------------------------------------

_DP_SPECS = (P(), P("batch"), P("batch"))


def _dp(fn, mesh, **kwargs):
    return jax.shard_map(fn, mesh=mesh, in_specs=_DP_SPECS, out_specs=P(), **kwargs)


def data_parallel_grads__local_grads_no_collective(params, inputs, targets, mesh):
    """Returns the local gradient as is, since shard_map already sums it."""

    def per_device(p, x, y):
        return jax.grad(linear_loss)(p, x, y)

    return _dp(per_device, mesh)(params, inputs, targets)


def data_parallel_grads__local_grads_psum(params, inputs, targets, mesh):
    """Differentiates the local loss and psums the gradients over "batch"."""

    def per_device(p, x, y):
        return jax.lax.psum(jax.grad(linear_loss)(p, x, y), "batch")

    return _dp(per_device, mesh)(params, inputs, targets)


def data_parallel_grads__grad_of_psum_loss(params, inputs, targets, mesh):
    """Differentiates the psum of the local losses instead of their mean."""

    def per_device(p, x, y):
        return jax.grad(lambda q: jax.lax.psum(linear_loss(q, x, y), "batch"))(p)

    return _dp(per_device, mesh)(params, inputs, targets)


def data_parallel_grads__unchecked_psum(params, inputs, targets, mesh):
    """Turns check_vma off and psums the local gradients."""

    def per_device(p, x, y):
        return jax.lax.psum(jax.grad(linear_loss)(p, x, y), "batch")

    return _dp(per_device, mesh, check_vma=False)(params, inputs, targets)


def data_parallel_grads__unchecked_local(params, inputs, targets, mesh):
    """Turns check_vma off and returns the local gradient with no collective."""

    def per_device(p, x, y):
        return jax.grad(linear_loss)(p, x, y)

    return _dp(per_device, mesh, check_vma=False)(params, inputs, targets)


def data_parallel_grads__averaged_twice(params, inputs, targets, mesh):
    """Differentiates the pmean of the loss, then divides by the device count again."""

    def per_device(p, x, y):
        grads = jax.grad(lambda q: jax.lax.pmean(linear_loss(q, x, y), "batch"))(p)
        n = jax.lax.axis_size("batch")
        return jax.tree.map(lambda g: g / n, grads)

    return _dp(per_device, mesh)(params, inputs, targets)


def data_parallel_grads__replicated_data(params, inputs, targets, mesh):
    """Gives every device the whole batch (in_specs P() for the data), pmean loss."""

    def per_device(p, x, y):
        return jax.grad(lambda q: jax.lax.pmean(linear_loss(q, x, y), "batch"))(p)

    return jax.shard_map(
        per_device, mesh=mesh, in_specs=(P(), P(), P()), out_specs=P()
    )(params, inputs, targets)


def data_parallel_grads__right_grad_of_pmean(params, inputs, targets, mesh):
    """Right: differentiate the pmean over "batch" of the local loss."""

    def per_device(p, x, y):
        def whole_batch_loss(q):
            return jax.lax.pmean(linear_loss(q, x, y), "batch")

        return jax.grad(whole_batch_loss)(p)

    return jax.jit(_dp(per_device, mesh))(params, inputs, targets)


def data_parallel_grads__right_unchecked_then_pmean(params, inputs, targets, mesh):
    """Right: with check_vma=False local gradients stay unsummed, so pmean them."""

    def per_device(p, x, y):
        return jax.lax.pmean(jax.grad(linear_loss)(p, x, y), "batch")

    return _dp(per_device, mesh, check_vma=False)(params, inputs, targets)


def data_parallel_grads__right_psum_loss_over_devices(params, inputs, targets, mesh):
    """Right: differentiate psum(local loss) / number of devices."""

    def per_device(p, x, y):
        def loss(q):
            return jax.lax.psum(linear_loss(q, x, y), "batch") / jax.lax.axis_size(
                "batch"
            )

        return jax.grad(loss)(p)

    return _dp(per_device, mesh)(params, inputs, targets)


# ---------------------------------------------------------------------------
# Chapter 9 (Traditional Chinese), exercise 1: global_normalize (pmap over vmap)
# ---------------------------------------------------------------------------


def _pmap_vmap(one_number):
    return jax.pmap(jax.vmap(one_number, axis_name="j"), axis_name="i")


def dpzh_global_normalize__only_j(grid):
    """psums over "j" only, so every row is normalised on its own."""
    return _pmap_vmap(lambda v: v / lax.psum(v, "j"))(grid)


def dpzh_global_normalize__only_i(grid):
    """psums over "i" only, so every column is normalised on its own."""
    return _pmap_vmap(lambda v: v / lax.psum(v, "i"))(grid)


def dpzh_global_normalize__jnp_sum(grid):
    """Divides by jnp.sum of the one number, which gives all ones."""
    return _pmap_vmap(lambda v: v / jnp.sum(v))(grid)


def dpzh_global_normalize__pmean(grid):
    """Uses lax.pmean over ("i", "j") instead of psum."""
    return _pmap_vmap(lambda v: v / lax.pmean(v, ("i", "j")))(grid)


def dpzh_global_normalize__single_device(grid):
    """Computes grid / grid.sum() directly, without pmap."""
    return grid / grid.sum()


def dpzh_global_normalize__pmap_rows_no_vmap(grid):
    """Only a pmap over rows: sums each row with jnp.sum, then psums over "i"."""
    return jax.pmap(lambda row: row / lax.psum(jnp.sum(row), "i"), axis_name="i")(grid)


def dpzh_global_normalize__vmap_without_axis_name(grid):
    """Forgets axis_name="j" on the inner vmap but still psums over ("i", "j")."""
    inner = jax.vmap(lambda v: v / lax.psum(v, ("i", "j")))
    return jax.pmap(inner, axis_name="i")(grid)


def dpzh_global_normalize__right_tuple_of_axes(grid):
    """Right: pmap over vmap, one number divided by psum over ("i", "j")."""

    def one(v):
        return v / lax.psum(v, axis_name=("i", "j"))

    return jax.pmap(jax.vmap(one, axis_name="j"), axis_name="i")(grid)


def dpzh_global_normalize__right_nested_psums(grid):
    """Right: psum over "j" then over "i", the same global total."""

    def one(v):
        return v / lax.psum(lax.psum(v, "j"), "i")

    return jax.pmap(jax.vmap(one, axis_name="j"), axis_name="i")(grid)


# ---------------------------------------------------------------------------
# Chapter 9, exercise 2: split_for_devices
# ---------------------------------------------------------------------------


def dpzh_split_for_devices__interleaved(array, num_devices):
    """Reshapes to (B, D, ...) and swaps axes: device k gets every D-th example."""
    per_device = array.shape[0] // num_devices
    return jnp.swapaxes(array.reshape(per_device, num_devices, *array.shape[1:]), 0, 1)


def dpzh_split_for_devices__hardcoded_8(array, num_devices):
    """Writes 8 devices into the reshape."""
    return array.reshape(8, array.shape[0] // 8, *array.shape[1:])


def dpzh_split_for_devices__hardcoded_batch_32(array, num_devices):
    """Writes the chapter's 32 examples per device into the reshape."""
    return array.reshape(num_devices, 32, *array.shape[1:])


def dpzh_split_for_devices__flattens_trailing(array, num_devices):
    """Reshapes to (num_devices, -1), merging the per-device batch and other axes."""
    return array.reshape(num_devices, -1)


def dpzh_split_for_devices__trailing_minus_one(array, num_devices):
    """Reshapes to (num_devices, B, -1): adds an axis to labels, flattens images."""
    return array.reshape(num_devices, array.shape[0] // num_devices, -1)


def dpzh_split_for_devices__drops_trailing_axes(array, num_devices):
    """Reshapes to (num_devices, N // num_devices), forgetting the other axes."""
    return array.reshape(num_devices, array.shape[0] // num_devices)


def dpzh_split_for_devices__casts_to_float(array, num_devices):
    """Converts to float32 while reshaping, which changes the labels' dtype."""
    batch = array.shape[0] // num_devices
    return jnp.asarray(array, jnp.float32).reshape(num_devices, batch, *array.shape[1:])


def dpzh_split_for_devices__list_of_pieces(array, num_devices):
    """Returns the list from jnp.split instead of one stacked array."""
    return jnp.split(array, num_devices)


def dpzh_split_for_devices__right_reshape(array, num_devices):
    """Right: reshape to (num_devices, N // num_devices, *rest)."""
    n = array.shape[0]
    return jnp.reshape(array, (num_devices, n // num_devices) + tuple(array.shape[1:]))


def dpzh_split_for_devices__right_split_and_stack(array, num_devices):
    """Right: cut into consecutive pieces with jnp.split and stack them."""
    return jnp.stack(jnp.split(array, num_devices, axis=0))


# ---------------------------------------------------------------------------
# Chapter 9, exercise 3: replicate
# ---------------------------------------------------------------------------


def dpzh_replicate__tile(tree, num_devices):
    """Uses jnp.tile(a, num_devices), which repeats along the last axis."""
    return jax.tree.map(lambda a: jnp.tile(a, num_devices), tree)


def dpzh_replicate__hardcoded_8(tree, num_devices):
    """Broadcasts every leaf to 8 copies whatever num_devices is."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (8, *a.shape)), tree)


def dpzh_replicate__trailing_axis(tree, num_devices):
    """Stacks the copies along a new last axis instead of a leading one."""
    return jax.tree.map(lambda a: jnp.stack([a] * num_devices, axis=-1), tree)


def dpzh_replicate__expand_only(tree, num_devices):
    """Adds the leading axis with a[None] but never repeats it."""
    return jax.tree.map(lambda a: a[None], tree)


def dpzh_replicate__mutates_layers(tree, num_devices):
    """Overwrites the leaves of the chapter's list of {"w", "b"} dicts in place."""
    for layer in tree:
        for key in layer:
            layer[key] = jnp.broadcast_to(layer[key], (num_devices, *layer[key].shape))
    return tree


def dpzh_replicate__ones_times_leaf(tree, num_devices):
    """Multiplies each leaf by jnp.ones, which turns integer leaves into float32."""
    return jax.tree.map(lambda a: jnp.ones((num_devices, *jnp.shape(a))) * a, tree)


def dpzh_replicate__numpy_broadcast(tree, num_devices):
    """Builds the copies with NumPy, which cannot run under jax.jit."""
    return jax.tree.map(
        lambda a: np.broadcast_to(np.asarray(a), (num_devices, *np.shape(a))).copy(),
        tree,
    )


def dpzh_replicate__right_broadcast_to(tree, num_devices):
    """Right: broadcast every leaf to (num_devices, *shape), keeping its dtype."""
    return jax.tree.map(
        lambda a: jnp.broadcast_to(a, (num_devices,) + jnp.shape(a)), tree
    )


def dpzh_replicate__right_stack_copies(tree, num_devices):
    """Right: stack num_devices references to each leaf along a new axis 0."""

    def copies(a):
        a = jnp.asarray(a)
        return jnp.stack([a for _ in range(num_devices)], axis=0)

    return jax.tree_util.tree_map(copies, tree)


# ---------------------------------------------------------------------------
# Chapter 9, exercise 4: pmap_step (decorator as in the stub)
# ---------------------------------------------------------------------------


def _sgd(params, grads, step_size):
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads)


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__psum_grads(params, images, labels, step_size):
    """Sums the gradients over "batch" with psum instead of averaging them."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.psum(grads, "batch")
    return _sgd(params, grads, step_size), lax.pmean(loss, "batch")


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__no_collective(params, images, labels, step_size):
    """Updates every copy with its own local gradient and loss, no collective."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    return _sgd(params, grads, step_size), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__local_loss(params, images, labels, step_size):
    """Averages the gradients but returns each device's local loss."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    return _sgd(params, grads, step_size), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__gradient_ascent(params, images, labels, step_size):
    """Adds step_size times the gradient instead of subtracting it."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    new_params = jax.tree.map(lambda p, g: p + step_size * g, params, grads)
    return new_params, lax.pmean(loss, "batch")


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__wrong_axis_name(params, images, labels, step_size):
    """Averages over the axis name "i" from exercise 1 instead of "batch"."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "i")
    return _sgd(params, grads, step_size), lax.pmean(loss, "i")


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__swapped_outputs(params, images, labels, step_size):
    """Returns (loss, new_params) instead of (new_params, loss)."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    return lax.pmean(loss, "batch"), _sgd(params, grads, step_size)


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__divided_again(params, images, labels, step_size):
    """pmeans the gradients and then also divides the step by the device count."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    n = lax.psum(1, "batch")
    return _sgd(params, grads, step_size / n), lax.pmean(loss, "batch")


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__grad_of_pmean_loss(params, images, labels, step_size):
    """Uses the shard_map recipe under pmap: grad of pmean(loss), no gradient pmean."""

    def global_loss(p):
        return lax.pmean(loss_fn(p, images, labels), "batch")

    loss, grads = jax.value_and_grad(global_loss)(params)
    return _sgd(params, grads, step_size), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__right_pmean_both(params, images, labels, step_size):
    """Right: local value_and_grad, pmean of gradients and loss, then the SGD step."""
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, axis_name="batch")
    new_params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return new_params, lax.pmean(loss, axis_name="batch")


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def dpzh_pmap_step__right_psum_over_count(params, images, labels, step_size):
    """Right: psum of gradients and loss divided by the number of devices."""
    count = lax.psum(1.0, "batch")
    loss = loss_fn(params, images, labels)
    grads = jax.grad(loss_fn)(params, images, labels)
    mean_grads = jax.tree.map(lambda g: lax.psum(g, "batch") / count, grads)
    new_params = jax.tree.map(lambda p, g: p - step_size * g, params, mean_grads)
    return new_params, lax.psum(loss, "batch") / count


# ---------------------------------------------------------------------------
# Chapter 9, exercise 5: data_parallel_grads (loss_fn, no mesh argument)
# ---------------------------------------------------------------------------


def _batch_mesh():
    return jax.make_mesh((NUM_DEVICES,), ("batch",), axis_types=(AxisType.Auto,))


def _dpzh(fn, **kwargs):
    return jax.shard_map(
        fn,
        mesh=_batch_mesh(),
        in_specs=(P(), P("batch"), P("batch")),
        out_specs=P(),
        **kwargs,
    )


def dpzh_data_parallel_grads__pmap_recipe(params, images, labels):
    """Carries the pmap recipe over: local gradients, then pmean."""

    def per_device(p, x, y):
        return lax.pmean(jax.grad(loss_fn)(p, x, y), "batch")

    return _dpzh(per_device)(params, images, labels)


def dpzh_data_parallel_grads__local_no_collective(params, images, labels):
    """Returns the local gradient with no collective, trusting the automatic sum."""

    def per_device(p, x, y):
        return jax.grad(loss_fn)(p, x, y)

    return _dpzh(per_device)(params, images, labels)


def dpzh_data_parallel_grads__grad_of_psum(params, images, labels):
    """Differentiates the psum of the local losses instead of their pmean."""

    def per_device(p, x, y):
        return jax.grad(lambda q: lax.psum(loss_fn(q, x, y), "batch"))(p)

    return _dpzh(per_device)(params, images, labels)


def dpzh_data_parallel_grads__unchecked_local(params, images, labels):
    """Turns check_vma off and returns the local gradients unaveraged."""

    def per_device(p, x, y):
        return jax.grad(loss_fn)(p, x, y)

    return _dpzh(per_device, check_vma=False)(params, images, labels)


def dpzh_data_parallel_grads__divided_by_devices_again(params, images, labels):
    """Differentiates the pmean of the loss, then divides the gradient by 8 again."""

    def per_device(p, x, y):
        grads = jax.grad(lambda q: lax.pmean(loss_fn(q, x, y), "batch"))(p)
        return jax.tree.map(lambda g: g / NUM_DEVICES, grads)

    return _dpzh(per_device)(params, images, labels)


def dpzh_data_parallel_grads__single_device(params, images, labels):
    """Calls jax.grad(loss_fn) on the unsharded batch, all on one device."""
    return jax.jit(jax.grad(loss_fn))(params, images, labels)


def dpzh_data_parallel_grads__labels_not_split(params, images, labels):
    """Splits the images over "batch" but gives every device all the labels."""

    def per_device(p, x, y):
        return jax.grad(lambda q: lax.pmean(loss_fn(q, x, y), "batch"))(p)

    return jax.shard_map(
        per_device, mesh=_batch_mesh(), in_specs=(P(), P("batch"), P()), out_specs=P()
    )(params, images, labels)


def dpzh_data_parallel_grads__pmap_stacked(params, images, labels):
    """Uses pmap on the split batch and returns the 8 stacked gradient copies."""

    def per_device(p, x, y):
        return lax.pmean(jax.grad(loss_fn)(p, x, y), "batch")

    n = NUM_DEVICES
    split_x = images.reshape(n, images.shape[0] // n, *images.shape[1:])
    split_y = labels.reshape(n, labels.shape[0] // n)
    return jax.pmap(per_device, axis_name="batch", in_axes=(None, 0, 0))(
        params, split_x, split_y
    )


def dpzh_data_parallel_grads__right_grad_of_global_loss(params, images, labels):
    """Right: shard_map, differentiate pmean of the local loss over "batch"."""

    def per_device(p, x, y):
        def global_loss(q):
            return lax.pmean(loss_fn(q, x, y), axis_name="batch")

        return jax.grad(global_loss)(p)

    return _dpzh(per_device)(params, images, labels)


def dpzh_data_parallel_grads__right_sharded_jit(params, images, labels):
    """Right: params constrained to P(), data to P("batch"), jit of the plain grad."""
    mesh = _batch_mesh()
    replicated = NamedSharding(mesh, P())
    rows = NamedSharding(mesh, P("batch"))

    @functools.partial(jax.jit, out_shardings=replicated)
    def grads(p, x, y):
        p = jax.lax.with_sharding_constraint(p, replicated)
        x = jax.lax.with_sharding_constraint(x, rows)
        y = jax.lax.with_sharding_constraint(y, rows)
        return jax.grad(loss_fn)(p, x, y)

    return grads(params, images, labels)


def dpzh_data_parallel_grads__right_unchecked_pmean(params, images, labels):
    """Right: check_vma=False keeps local gradients unsummed, so pmean is correct."""

    def per_device(p, x, y):
        return lax.pmean(jax.grad(loss_fn)(p, x, y), "batch")

    return _dpzh(per_device, check_vma=False)(params, images, labels)


# ---------------------------------------------------------------------------
# Chapter 9, exercise 6: shard_map_normalize on a 2-D ("i", "j") mesh
# ---------------------------------------------------------------------------

_IJ = P("i", "j")


def _blocks(fn, mesh, spec=_IJ, out=None, **kwargs):
    return jax.shard_map(
        fn, mesh=mesh, in_specs=spec, out_specs=spec if out is None else out, **kwargs
    )


def dpzh_shard_map_normalize__only_i(grid, mesh):
    """psums the block sums over "i" only."""
    return _blocks(lambda b: b / lax.psum(jnp.sum(b), "i"), mesh)(grid)


def dpzh_shard_map_normalize__only_j(grid, mesh):
    """psums the block sums over "j" only."""
    return _blocks(lambda b: b / lax.psum(jnp.sum(b), "j"), mesh)(grid)


def dpzh_shard_map_normalize__block_sum_only(grid, mesh):
    """Divides each block by its own jnp.sum, no psum."""
    return _blocks(lambda b: b / jnp.sum(b), mesh)(grid)


def dpzh_shard_map_normalize__psum_whole_block(grid, mesh):
    """psums the block element by element instead of its sum."""
    return _blocks(lambda b: b / lax.psum(b, ("i", "j")), mesh)(grid)


def dpzh_shard_map_normalize__pmean(grid, mesh):
    """Uses pmean of the block sums instead of psum."""
    return _blocks(lambda b: b / lax.pmean(jnp.sum(b), ("i", "j")), mesh)(grid)


def dpzh_shard_map_normalize__transposed_specs(grid, mesh):
    """Writes in_specs and out_specs as P("j", "i")."""
    return _blocks(
        lambda b: b / lax.psum(jnp.sum(b), ("i", "j")), mesh, spec=P("j", "i")
    )(grid)


def dpzh_shard_map_normalize__own_4x2_mesh(grid, mesh):
    """Builds its own 4x2 ("i", "j") mesh like the chapter's, ignoring the one given."""
    own = jax.make_mesh(
        (4, 2), ("i", "j"), axis_types=(AxisType.Explicit, AxisType.Explicit)
    )
    return _blocks(lambda b: b / lax.psum(jnp.sum(b), ("i", "j")), own)(grid)


def dpzh_shard_map_normalize__replicated_out_spec(grid, mesh):
    """Declares out_specs=P() with check_vma=False, as if every block were equal."""
    return _blocks(
        lambda b: b / lax.psum(jnp.sum(b), ("i", "j")), mesh, out=P(), check_vma=False
    )(grid)


def dpzh_shard_map_normalize__right_psum_both_axes(grid, mesh):
    """Right: sum the block, psum over ("i", "j"), divide; P("i", "j") both ways."""

    def per_device(block):
        return block / lax.psum(jnp.sum(block), axis_name=("i", "j"))

    return jax.jit(
        jax.shard_map(
            per_device, mesh=mesh, in_specs=P("i", "j"), out_specs=P("i", "j")
        )
    )(grid)


def dpzh_shard_map_normalize__right_nested_psums(grid, mesh):
    """Right: psum over "i", then over "j", of the block's sum."""

    def per_device(block):
        total = lax.psum(lax.psum(block.sum(), "i"), "j")
        return block / total

    return _blocks(per_device, mesh)(grid)


def dpzh_shard_map_normalize__right_axis_names(grid, mesh):
    """Right: psum over all of mesh.axis_names."""
    names = tuple(mesh.axis_names)
    return _blocks(lambda b: b / lax.psum(jnp.sum(b), names), mesh, spec=P(*names))(
        grid
    )


_TOPICS = {
    "spec_for_target": "sharding",
    "shard_mlp_2d": "sharding",
    "make_hidden_layer": "sharding",
    "collective_free_specs": "sharding",
    "cheaper_product": "sharding",
    "global_mean": "shard_map",
    "allgather_matmul": "shard_map",
    "reduce_scatter_matmul": "shard_map",
    "ring_shift": "shard_map",
    "global_positions": "shard_map",
    "data_parallel_grads": "shard_map",
    "dpzh_global_normalize": "dp_zh",
    "dpzh_split_for_devices": "dp_zh",
    "dpzh_replicate": "dp_zh",
    "dpzh_pmap_step": "dp_zh",
    "dpzh_data_parallel_grads": "dp_zh",
    "dpzh_shard_map_normalize": "dp_zh",
}


def _rows(*functions):
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        topic = _TOPICS[exercise]
        if exercise.startswith("dpzh_"):
            exercise = exercise[len("dpzh_") :]
        rows.append(
            (f"{topic}.{exercise}", function, function.__doc__.strip().rstrip("."))
        )
    return rows


_ALL = [
    value
    for name, value in dict(globals()).items()
    if callable(value) and "__" in name and not name.startswith("_")
]
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])  # the wrong ones
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])  # the right ones
