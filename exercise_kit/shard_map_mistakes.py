"""The known wrong answers to chapter 5's exercises, as learners write them.

:mod:`solutions.shard_map` names each of these in a
:class:`jaxcourse.exercises.Mistake`, with the message a learner reads when
an answer gives the same output; one section per exercise, in the chapter's
order. Each takes the arguments of the exercise's reference, arrays first and
then ``mesh`` (see :mod:`exercise_kit.shard_map_checks`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from exercise_kit.shard_map_checks import linear_loss
from jaxcourse.collectives import ring_pairs

# ---- global_mean ---------------------------------------------------------


def mean_of_device_0(x, mesh):
    """Return each device's own mean as if replicated: device 0's wins."""
    return jax.shard_map(lambda b: b.mean(), mesh=mesh, in_specs=P("i"),
                         out_specs=P(), check_vma=False)(x)


def sum_of_means(x, mesh):
    """Return the psum of the per-device means: (devices) times the mean."""
    return jax.shard_map(lambda b: jax.lax.psum(b.mean(), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)


def mean_of_sums(x, mesh):
    """Return the pmean of the per-device sums (divided by the devices)."""
    return jax.shard_map(lambda b: jax.lax.pmean(b.sum(), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)


def gathered_mean(x, mesh):
    """Gather all of x onto every device, then take its mean."""
    return jax.shard_map(lambda b: jax.lax.all_gather(b, "i", tiled=True).mean(),
                         mesh=mesh, in_specs=P("i"), out_specs=P(),
                         check_vma=False)(x)


def means_per_device(x, mesh):
    """Return one mean per device, left split over the devices."""
    return jax.shard_map(lambda b: b.mean(keepdims=True), mesh=mesh,
                         in_specs=P("i"), out_specs=P("i"))(x)


# ---- allgather_matmul ----------------------------------------------------


def diagonal_block_only(lhs, rhs, mesh):
    """Multiply on each device only the block of rhs it holds."""
    def per_device(lhs_block, rhs_block):
        k = rhs_block.shape[0]
        mine = jax.lax.dynamic_slice_in_dim(lhs_block, jax.lax.axis_index("i") * k,
                                            k, axis=1)
        return mine @ rhs_block

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def gathered_output(lhs, rhs, mesh):
    """Compute the right rows of the product, then gather them all."""
    def per_device(lhs_block, rhs_block):
        out = lhs_block @ jax.lax.all_gather(rhs_block, "i", tiled=True)
        return jax.lax.all_gather(out, "i", tiled=True)

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P(), check_vma=False)(lhs, rhs)


def gather_by_psum(lhs, rhs, mesh):
    """Assemble rhs with a psum of zero-padded blocks, then multiply."""
    def per_device(lhs_block, rhs_block):
        n = jax.lax.axis_size("i")
        slots = jnp.zeros((n, *rhs_block.shape), rhs_block.dtype)
        slots = slots.at[jax.lax.axis_index("i")].set(rhs_block)
        return lhs_block @ jax.lax.psum(slots, "i").reshape(-1, rhs_block.shape[1])

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def allgather_columns_out(lhs, rhs, mesh):
    """Concatenate the right blocks along the columns."""
    def per_device(lhs_block, rhs_block):
        return lhs_block @ jax.lax.all_gather(rhs_block, "i", tiled=True)

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P(None, "i"))(lhs, rhs)


# ---- reduce_scatter_matmul -----------------------------------------------


def own_rows_unsummed(lhs, rhs, mesh):
    """Keep each device's rows of its own partial product, unsummed."""
    def per_device(lhs_block, rhs_block):
        partial = lhs_block @ rhs_block
        rows = partial.shape[0] // jax.lax.axis_size("i")
        return jax.lax.dynamic_slice_in_dim(partial, jax.lax.axis_index("i") * rows,
                                            rows)

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def psum_replicated(lhs, rhs, mesh):
    """Return the whole sum of the partial products, replicated (psum)."""
    return jax.shard_map(lambda a, b: jax.lax.psum(a @ b, "i"), mesh=mesh,
                         in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P())(lhs, rhs)


def psum_then_slice(lhs, rhs, mesh):
    """Sum the partial products with psum, then keep each device's rows."""
    def per_device(lhs_block, rhs_block):
        total = jax.lax.psum(lhs_block @ rhs_block, "i")
        rows = total.shape[0] // jax.lax.axis_size("i")
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("i") * rows,
                                            rows)

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def scatter_columns(lhs, rhs, mesh):
    """Sum the partial products and scatter them along the columns."""
    def per_device(lhs_block, rhs_block):
        return jax.lax.psum_scatter(lhs_block @ rhs_block, "i", scatter_dimension=1,
                                    tiled=True)

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P(None, "i"))(lhs, rhs)


# ---- ring_shift ----------------------------------------------------------


def _shift_with(pairs_for):
    def shift(x, mesh):
        n = mesh.shape["i"]
        return jax.shard_map(lambda b: jax.lax.ppermute(b, "i", perm=pairs_for(n)),
                             mesh=mesh, in_specs=P("i", None),
                             out_specs=P("i", None))(x)

    return shift


SHIFT_BACKWARDS = _shift_with(lambda n: ring_pairs(n, -1))
SHIFT_WITHOUT_WRAP = _shift_with(lambda n: [(d, d + 1) for d in range(n - 1)])


def shift_by_gather(x, mesh):
    """Gather every block onto every device, to pick the previous one."""
    def per_device(block):
        everything = jax.lax.all_gather(block, "i")       # (n, rows, cols)
        n = everything.shape[0]
        return everything[(jax.lax.axis_index("i") - 1) % n]

    return jax.shard_map(per_device, mesh=mesh, in_specs=P("i", None),
                         out_specs=P("i", None))(x)


def roll_inside_block(x, mesh):
    """Roll the rows inside each device's block; no block moves."""
    return jax.shard_map(lambda b: jnp.roll(b, 1, axis=0), mesh=mesh,
                         in_specs=P("i", None), out_specs=P("i", None))(x)


# ---- global_positions ----------------------------------------------------


def _positions_with(offset):
    def positions(x, mesh):
        def per_device(block):
            k = block.shape[0]
            return offset(jax.lax.axis_index("i"), k, x.size) + \
                jnp.arange(k, dtype=jnp.int32)

        return jax.shard_map(per_device, mesh=mesh, in_specs=P("i"),
                             out_specs=P("i"))(x)

    return positions


COUNT_FROM_ZERO = _positions_with(lambda index, k, total: 0)
OFFSET_BY_INDEX = _positions_with(lambda index, k, total: index)
OFFSET_BY_TOTAL = _positions_with(lambda index, k, total: index * total)


def positions_on_one_device(x, mesh):
    """Compute the positions on one device, outside shard_map."""
    return jnp.arange(x.size, dtype=jnp.int32)


# ---- data_parallel_grads -------------------------------------------------


def _grads_with(combine, check_vma=True):
    def grads(params, inputs, targets, mesh):
        def per_device(params, inputs, targets):
            return combine(jax.grad(linear_loss)(params, inputs, targets))

        return jax.shard_map(per_device, mesh=mesh,
                             in_specs=(P(), P("batch"), P("batch")),
                             out_specs=P(), check_vma=check_vma)(
                                 params, inputs, targets)

    return grads


PMEAN_OF_SUMMED = _grads_with(lambda g: jax.lax.pmean(g, "batch"))
PSUM_OF_SUMMED = _grads_with(lambda g: jax.lax.psum(g, "batch"))
DEVICE_0_ONLY = _grads_with(lambda g: g, check_vma=False)
