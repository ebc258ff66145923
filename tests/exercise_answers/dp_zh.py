"""Answers to chapter 9's exercises (topic ``dp_zh``), as learners write them.

What checking each must give is in ``dp_zh.toml``. The same answers check the
Simplified-Chinese edition (``dp_zh_hans``): its exercises are generated
twins, and the fragments are converted as its texts are
(``exercise_answers.TWINS``). Four exercises need 8 devices: the contract
checks those in a process that asks for 8 devices before it imports this
module (nothing here touches a device).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from exercise_kit.dp_zh_checks import data_mesh, loss_fn

# ---- answers: 1. global_normalize ----------------------------------------------------


def _nested(per_element, outer="i", inner="j"):
    def global_normalize(grid):
        return jax.pmap(jax.vmap(per_element, axis_name=inner),
                        axis_name=outer)(grid)

    return global_normalize


normalize_rows_only = _nested(lambda x: x / lax.psum(x, "j"))
normalize_columns_only = _nested(lambda x: x / lax.psum(x, "i"))
normalize_jnp_sum = _nested(lambda x: x / jnp.sum(x))
normalize_pmean = _nested(lambda x: x / lax.pmean(x, ("i", "j")))


def normalize_without_pmap(grid):
    return grid / grid.sum()


def normalize_python_loop(grid):
    total = sum(float(v) for v in np.asarray(grid).ravel())
    return jnp.asarray(grid) / total


normalize_two_psums = _nested(lambda x: x / lax.psum(lax.psum(x, "j"), "i"))
normalize_swapped_names = _nested(lambda x: x / lax.psum(x, ("j", "i")),
                                  outer="j", inner="i")


def normalize_seed_axis_names(grid):
    # The seed's idea (psum over the axis names ('p', 'v')), inside the maps it
    # needs: its own names, single quotes, and the sum computed before dividing.
    def per_element(x):
        total_sum = jax.lax.psum(x, axis_name=('p', 'v'))
        return x / total_sum

    return jax.pmap(jax.vmap(per_element, axis_name='v'), axis_name='p')(grid)


def normalize_row_sums_then_psum(grid):
    # 每臺裝置先在自己那一列上求和（一般的 jnp.sum），再跨裝置 psum。
    def per_device(row):
        return row / lax.psum(jnp.sum(row), "i")

    return jax.pmap(per_device, axis_name="i")(grid)


# ---- 2. split_for_devices ------------------------------------------------------------


def split_swapped(array, num_devices):
    return array.reshape(array.shape[0] // num_devices, num_devices, *array.shape[1:])


def split_strided(array, num_devices):
    grouped = array.reshape(array.shape[0] // num_devices, num_devices,
                            *array.shape[1:])
    return jnp.swapaxes(grouped, 0, 1)


def split_flattened(array, num_devices):
    return array.reshape(num_devices, -1)


def split_hard_coded(array, num_devices):
    return array.reshape(8, 32, *array.shape[1:])


def split_minus_one(array, num_devices):
    return array.reshape(num_devices, -1, *array.shape[1:])


def split_np_split(array, num_devices):
    return jnp.stack(jnp.split(jnp.asarray(array), num_devices))


def split_stack_slices(array, num_devices):
    size = array.shape[0] // num_devices
    return jnp.stack([array[k * size:(k + 1) * size] for k in range(num_devices)])


# ---- 3. replicate --------------------------------------------------------------------


def replicate_last_axis(tree, num_devices):
    return jax.tree.map(lambda a: jnp.stack([a] * num_devices, axis=-1), tree)


def replicate_tile(tree, num_devices):
    return jax.tree.map(lambda a: jnp.tile(a, num_devices), tree)


def replicate_one_copy(tree, num_devices):
    return jax.tree.map(lambda a: jnp.asarray(a)[None], tree)


def replicate_not_a_tree(tree, num_devices):
    return jnp.broadcast_to(tree, (num_devices, *jnp.shape(tree)))


def replicate_float32(tree, num_devices):
    return jax.tree.map(
        lambda a: jnp.broadcast_to(jnp.asarray(a, jnp.float32),
                                   (num_devices, *jnp.shape(a))), tree)


def replicate_stack(tree, num_devices):
    return jax.tree.map(lambda a: jnp.stack([a] * num_devices), tree)


def replicate_zeros_plus(tree, num_devices):
    def copies(a):
        a = jnp.asarray(a)
        return jnp.zeros((num_devices, *a.shape), a.dtype) + a

    return jax.tree_util.tree_map(copies, tree)


def replicate_repeat(tree, num_devices):
    return jax.tree.map(lambda a: jnp.repeat(jnp.asarray(a)[None], num_devices, 0),
                        tree)


# ---- 4. pmap_step --------------------------------------------------------------------


def _step(reduce_grads, reduce_loss=True, sign=1.0):
    def pmap_step(params, images, labels, step_size):
        grads = reduce_grads(jax.grad(loss_fn)(params, images, labels))
        loss = loss_fn(params, images, labels)
        new = [{k: layer[k] - sign * step_size * grad[k] for k in layer}
               for layer, grad in zip(params, grads, strict=True)]
        return new, lax.pmean(loss, "batch") if reduce_loss else loss

    return jax.pmap(pmap_step, axis_name="batch", in_axes=(0, 0, 0, None))


step_psum = _step(lambda g: lax.psum(g, "batch"))
step_no_collective = _step(lambda g: g)
step_loss_not_averaged = _step(lambda g: lax.pmean(g, "batch"), reduce_loss=False)
step_ascent = _step(lambda g: lax.pmean(g, "batch"), sign=-1.0)
step_psum_over_n = _step(
    lambda g: jax.tree.map(lambda x: lax.psum(x, "batch") / lax.psum(1, "batch"), g))


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def step_grad_of_pmean_loss(params, images, labels, step_size):
    # shard_map 的寫法搬進 pmap：pmap 不追蹤複製的值，這樣得到的仍是區域梯度。
    def global_loss(p):
        return lax.pmean(loss_fn(p, images, labels), "batch")

    loss, grads = jax.value_and_grad(global_loss)(params)
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def step_separate_grad(params, images, labels, step_size):
    grads = lax.pmean(jax.grad(loss_fn)(params, images, labels), "batch")
    loss = lax.pmean(loss_fn(params, images, labels), "batch")
    new_params = jax.tree_util.tree_map(lambda p, g: p - g * step_size, params, grads)
    return new_params, loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def step_optax_sgd(params, images, labels, step_size):
    import optax

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads, loss = lax.pmean((grads, loss), "batch")
    optimizer = optax.sgd(step_size)
    updates, _ = optimizer.update(grads, optimizer.init(params), params)
    return optax.apply_updates(params, updates), loss


# ---- 5. data_parallel_grads ----------------------------------------------------------


def _in_shard_map(per_device):
    def data_parallel_grads(params, images, labels):
        return jax.jit(jax.shard_map(
            per_device, mesh=data_mesh(), in_specs=(P(), P("batch"), P("batch")),
            out_specs=P(),
        ))(params, images, labels)

    return data_parallel_grads


grads_pmean_local = _in_shard_map(
    lambda p, x, y: lax.pmean(jax.grad(loss_fn)(p, x, y), "batch"))
grads_psum_local = _in_shard_map(
    lambda p, x, y: lax.psum(jax.grad(loss_fn)(p, x, y), "batch"))
grads_local_only = _in_shard_map(lambda p, x, y: jax.grad(loss_fn)(p, x, y))


def grads_one_device(params, images, labels):
    return jax.grad(loss_fn)(params, images, labels)


def grads_sharded_jit(params, images, labels):
    mesh = data_mesh()
    data = NamedSharding(mesh, P("batch"))
    images, labels = jax.device_put((images, labels), data)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    return jax.jit(jax.grad(loss_fn), out_shardings=NamedSharding(mesh, P()))(
        params, images, labels)


grads_local_over_n = _in_shard_map(
    lambda p, x, y: jax.tree.map(lambda g: g / 8, jax.grad(loss_fn)(p, x, y)))


def grads_value_and_grad(params, images, labels):
    @functools.partial(jax.shard_map, mesh=data_mesh(),
                       in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    def per_device(params, images, labels):
        def global_loss(p):
            return lax.pmean(loss_fn(p, images, labels), "batch")

        return jax.value_and_grad(global_loss)(params)[1]

    return jax.jit(per_device)(params, images, labels)


# ---- answers: 6. shard_map_normalize ------------------------------------------------


BLOCKS = P("i", "j")


def _per_block(per_block, out_specs=BLOCKS, check_vma=True):
    def shard_map_normalize(grid, mesh):
        return jax.jit(jax.shard_map(per_block, mesh=mesh, in_specs=P("i", "j"),
                                     out_specs=out_specs, check_vma=check_vma))(grid)

    return shard_map_normalize


blocks_over_i_only = _per_block(lambda b: b / lax.psum(jnp.sum(b), "i"))
blocks_over_j_only = _per_block(lambda b: b / lax.psum(jnp.sum(b), "j"))
blocks_own_sum = _per_block(lambda b: b / jnp.sum(b))
blocks_elementwise_psum = _per_block(lambda b: b / lax.psum(b, ("i", "j")))
blocks_pmean = _per_block(lambda b: b / lax.pmean(jnp.sum(b), ("i", "j")))
# Promises a replicated result that is not: with the check off, device 0's block.
blocks_unchecked_replicated = _per_block(
    lambda b: b / lax.psum(jnp.sum(b), ("i", "j")), out_specs=P(), check_vma=False)


def blocks_own_mesh(grid, mesh):
    # A mesh written in (always 4 x 2) instead of the one given.
    own = jax.make_mesh((4, 2), ("i", "j"),
                        axis_types=(jax.sharding.AxisType.Explicit,) * 2)
    return _per_block(lambda b: b / lax.psum(jnp.sum(b), ("i", "j")))(
        jax.device_put(np.asarray(grid), NamedSharding(own, P("i", "j"))), own)


blocks_two_psums = _per_block(lambda b: b / lax.psum(lax.psum(jnp.sum(b), "i"), "j"))
blocks_swapped_names = _per_block(lambda b: b / lax.psum(jnp.sum(b), ("j", "i")))
blocks_pmean_times_size = _per_block(
    lambda b: b / (lax.pmean(jnp.sum(b), ("i", "j"))
                   * lax.axis_size("i") * lax.axis_size("j")))


def blocks_set_mesh(grid, mesh):
    # The docs' style: the mesh in context instead of mesh=.
    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i", "j"))
    def normalize(block):
        total = lax.psum(block.sum(), axis_name=("i", "j"))
        return block / total

    with jax.set_mesh(mesh):
        return jax.jit(normalize)(grid)


def blocks_sharded_jit(grid, mesh):
    # No shard_map: the compiler partitions the sum; same values and layout,
    # but not the technique the exercise asks for.
    return jax.jit(lambda g: g / jnp.sum(g))(grid)
