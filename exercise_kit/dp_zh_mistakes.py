"""The known wrong answers to chapter 9's exercises, as learners write them.

:mod:`solutions.dp_zh` names each in a :class:`jaxcourse.exercises.Mistake`,
with the message a learner reads when an answer gives the same output. The
one-line mistakes are written where they are named; these make the longer
ones: a normalization under ``pmap`` and ``vmap`` (:func:`pmap_vmap`), a
``pmap`` step (:func:`pmap_step_with`), gradients under ``shard_map``
(:func:`shard_map_grads`) and a per-block normalization
(:func:`blocks_with`), each with the reduction it is given.
"""

from __future__ import annotations

import functools

import jax
from jax import lax
from jax.sharding import PartitionSpec as P

from exercise_kit.dp_zh_checks import data_mesh, loss_fn


def pmap_vmap(per_element, outer="i", inner="j"):
    """global_normalize 的錯誤版本：pmap 包住 vmap，逐元素做 per_element."""
    return lambda grid: jax.pmap(jax.vmap(per_element, axis_name=inner),
                                 axis_name=outer)(grid)


def pmap_step_with(reduce_grads, reduce_loss=True):
    """pmap_step 的錯誤版本：梯度用 reduce_grads 歸約，損失可以不平均."""
    @functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
    def step(params, images, labels, step_size):
        loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
        grads = reduce_grads(grads)
        if reduce_loss:
            loss = lax.pmean(loss, "batch")
        return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss

    return step


def shard_map_grads(per_device):
    """data_parallel_grads 的錯誤版本：每臺裝置執行 per_device."""
    def grads(params, images, labels):
        return jax.jit(jax.shard_map(per_device, mesh=data_mesh(),
                                     in_specs=(P(), P("batch"), P("batch")),
                                     out_specs=P()))(params, images, labels)

    return grads


def blocks_with(per_block):
    """shard_map_normalize 的錯誤版本：每一塊執行 per_block."""
    def shard_map_normalize(grid, mesh):
        return jax.jit(jax.shard_map(per_block, mesh=mesh, in_specs=P("i", "j"),
                                     out_specs=P("i", "j")))(grid)

    return shard_map_normalize
