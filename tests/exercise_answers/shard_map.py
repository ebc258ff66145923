"""Answers to chapter 5's exercises (topic ``shard_map``), as learners write them.

What checking each must give is in ``shard_map.toml``. They need 8 devices:
the contract checks them in a process that asks for 8 devices before it
imports this module (nothing here touches a device).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from exercise_kit.shard_map_checks import linear_loss


# -- exercise 1: global_mean
def mean_device_0(x, mesh):
    return jax.shard_map(lambda b: b.mean(), mesh=mesh, in_specs=P("i"),
                         out_specs=P(), check_vma=False)(x)


def mean_sum_of_means(x, mesh):
    return jax.shard_map(lambda b: jax.lax.psum(jnp.mean(b), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)


def mean_of_sums(x, mesh):
    return jax.shard_map(lambda b: jax.lax.pmean(jnp.sum(b), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)


def mean_gathered(x, mesh):
    def f(b):
        return jnp.mean(jax.lax.all_gather(b, "i", tiled=True))
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P(),
                         check_vma=False)(x)


def mean_unchecked_promise(x, mesh):  # out_specs=P() on a varying value
    return jax.shard_map(lambda b: b.mean(), mesh=mesh, in_specs=P("i"),
                         out_specs=P())(x)


def mean_eight_written_in(x, mesh):
    return jax.shard_map(lambda b: jax.lax.psum(b.mean(), "i") / 8, mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)


def mean_pmean_of_means(x, mesh):  # correct: equal blocks
    return jax.shard_map(lambda b: jax.lax.pmean(b.mean(), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)


def mean_count_with_psum(x, mesh):  # correct: count the entries too
    def f(b):
        total = jax.lax.psum(jnp.sum(b), "i")
        count = jax.lax.psum(b.shape[0], "i")
        return total / count
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P())(x)


def mean_scaled_first(x, mesh):  # correct: divide, then add up
    n = x.shape[0]

    @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
    def f(b):
        return jax.lax.psum(jnp.sum(b / n), "i")
    return jax.jit(f)(x)


# -- exercise 2: allgather_matmul
ROWS = P("i", None)


def _mapped(per_device, in_specs=(ROWS, ROWS), out_specs=ROWS, **kwargs):
    """The answer ``shard_map(per_device)(lhs, rhs)``, as most learners write it."""
    def answer(lhs, rhs, mesh):
        return jax.shard_map(per_device, mesh=mesh, in_specs=in_specs,
                             out_specs=out_specs, **kwargs)(lhs, rhs)
    return answer


def _diagonal_only(a, b):
    k = b.shape[0]
    return jax.lax.dynamic_slice_in_dim(a, jax.lax.axis_index("i") * k, k, axis=1) @ b


def _gathered_twice(a, b):
    out = a @ jax.lax.all_gather(b, "i", tiled=True)
    return jax.lax.all_gather(out, "i", tiled=True)


ag_diagonal = _mapped(_diagonal_only)
ag_replicated_output = _mapped(_gathered_twice, out_specs=P(), check_vma=False)


def ag_by_psum(lhs, rhs, mesh):
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("i"), P("i")), out_specs=P("i"))
    def f(a, b):
        # b in this device's slot of a one-hot stack, zeros elsewhere, summed.
        mine = jax.nn.one_hot(jax.lax.axis_index("i"), jax.lax.axis_size("i"),
                              dtype=b.dtype)
        return a @ jax.lax.psum(mine[:, None, None] * b, "i").reshape(-1, b.shape[1])
    return f(lhs, rhs)


def ag_columns_out(lhs, rhs, mesh):
    gather = partial(jax.lax.all_gather, axis_name="i", tiled=True)
    return jax.shard_map(lambda a, b: a @ gather(b), mesh=mesh,
                         in_specs=(P("i"), P("i")), out_specs=P(None, "i"))(lhs, rhs)


ag_not_tiled = _mapped(lambda a, b: a @ jax.lax.all_gather(b, "i"))
# Correct: gather stacked, (n, k / n, f), then reshape.
ag_stacked_then_reshaped = _mapped(
    lambda a, b: a @ jax.lax.all_gather(b, "i").reshape(-1, b.shape[1]))


def ag_einsum_jit(lhs, rhs, mesh):  # correct: jitted, einsum, spelled P("i")
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("i"), P("i")), out_specs=P("i"))
    def f(a, b):
        full = jax.lax.all_gather(b, axis_name="i", axis=0, tiled=True)
        return jnp.einsum("mk,kf->mf", a, full)
    return f(lhs, rhs)


def ag_dot(lhs, rhs, mesh):  # correct
    gather = partial(jax.lax.all_gather, axis_name="i", tiled=True)
    return jax.shard_map(lambda a, b: jnp.dot(a, gather(b)), mesh=mesh,
                         in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


# -- exercise 3: reduce_scatter_matmul
def _own_rows_of_the_partial_product(a, b):
    part = a @ b
    rows = part.shape[0] // jax.lax.axis_size("i")
    return jax.lax.dynamic_slice_in_dim(part, jax.lax.axis_index("i") * rows, rows)


SPLIT_K = (P(None, "i"), P("i", None))  # lhs by columns, rhs by rows
rs_unsummed = _mapped(_own_rows_of_the_partial_product, in_specs=SPLIT_K)
rs_psum_replicated = _mapped(lambda a, b: jax.lax.psum(a @ b, "i"), in_specs=SPLIT_K,
                             out_specs=P())


def _sum_then_own_rows(a, b):
    total = jax.lax.psum(a @ b, "i")
    rows = total.shape[0] // jax.lax.axis_size("i")
    return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("i") * rows, rows)


rs_psum_then_slice = _mapped(_sum_then_own_rows, in_specs=SPLIT_K)


def rs_columns(lhs, rhs, mesh):
    def f(a, b):
        return jax.lax.psum_scatter(a @ b, "i", scatter_dimension=1, tiled=True)
    return jax.shard_map(f, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P(None, "i"))(lhs, rhs)


def rs_default_dimension(lhs, rhs, mesh):  # correct
    return jax.shard_map(lambda a, b: jax.lax.psum_scatter(a @ b, "i", tiled=True),
                         mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def rs_untiled(lhs, rhs, mesh):  # correct: cut the rows into n pieces first
    def f(a, b):
        part = jnp.matmul(a, b)
        n = jax.lax.axis_size("i")
        return jax.lax.psum_scatter(part.reshape(n, -1, part.shape[1]), "i")
    return jax.shard_map(f, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)


def rs_decorated(lhs, rhs, mesh):  # correct
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P(None, "i"), P("i")),
             out_specs=P("i"))
    def f(a, b):
        return jax.lax.psum_scatter(jnp.dot(a, b), axis_name="i",
                                    scatter_dimension=0, tiled=True)
    return f(lhs, rhs)


# -- exercise 4: ring_shift
def _ring(pairs_for):
    def shift(x, mesh):
        n = mesh.shape["i"]
        return jax.shard_map(lambda b: jax.lax.ppermute(b, "i", pairs_for(n)),
                             mesh=mesh, in_specs=P("i", None),
                             out_specs=P("i", None))(x)
    return shift


ring_backwards = _ring(lambda n: [(d, (d - 1) % n) for d in range(n)])
ring_no_wrap = _ring(lambda n: [(d, d + 1) for d in range(n - 1)])
ring_eight_written_in = _ring(lambda n: [(d, (d + 1) % 8) for d in range(8)])


def ring_by_gather(x, mesh):
    def f(b):
        everything = jax.lax.all_gather(b, "i")
        return everything[(jax.lax.axis_index("i") - 1) % everything.shape[0]]
    return jax.shard_map(f, mesh=mesh, in_specs=P("i", None),
                         out_specs=P("i", None))(x)


def ring_roll_rows(x, mesh):
    return jax.shard_map(lambda b: jnp.roll(b, 1, axis=0), mesh=mesh,
                         in_specs=P("i", None), out_specs=P("i", None))(x)


def ring_axis_size(x, mesh):  # correct: the size from inside
    def f(b):
        n = jax.lax.axis_size("i")
        return jax.lax.ppermute(b, "i", perm=[(j, (j + 1) % n) for j in range(n)])
    return jax.shard_map(f, mesh=mesh, in_specs=P("i", None),
                         out_specs=P("i", None))(x)


def ring_zip(x, mesh):  # correct: pairs from two ranges
    n = mesh.devices.size
    pairs = list(zip(range(n), [*range(1, n), 0]))  # noqa: B905
    return jax.jit(jax.shard_map(lambda b: jax.lax.ppermute(b, "i", pairs),
                                 mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)


def ring_from_mesh_shape(x, mesh):  # correct
    (n,) = mesh.devices.shape
    perm = [(src, (src + 1) % n) for src in range(n)]

    @partial(jax.shard_map, mesh=mesh, in_specs=P("i", None), out_specs=P("i", None))
    def f(block):
        return jax.lax.ppermute(block, axis_name="i", perm=perm)
    return f(x)


# -- exercise 5: global_positions
def _positions(offset, dtype=jnp.int32):
    def positions(x, mesh):
        def f(b):
            k = b.shape[0]
            return offset(jax.lax.axis_index("i"), k, x.size) + jnp.arange(k,
                                                                           dtype=dtype)
        return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)
    return positions


pos_from_zero = _positions(lambda i, k, total: 0)
pos_plus_index = _positions(lambda i, k, total: i)
pos_times_total = _positions(lambda i, k, total: i * total)
pos_float = _positions(lambda i, k, total: i * k, dtype=jnp.float32)


def pos_on_one_device(x, mesh):
    return jnp.arange(x.shape[0], dtype=jnp.int32)


def pos_iota(x, mesh):  # correct: lax.iota and block.size
    def f(b):
        return jax.lax.axis_index("i") * b.size + jax.lax.iota(jnp.int32, b.size)
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)


def pos_from_axis_size(x, mesh):  # correct: block length from the global size
    def f(b):
        k = x.shape[0] // jax.lax.axis_size("i")
        return (jnp.arange(k) + k * jax.lax.axis_index("i")).astype(jnp.int32)
    return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)


def pos_cumsum(x, mesh):  # correct
    def f(b):
        start = jax.lax.axis_index("i") * b.shape[0]
        return start + jnp.cumsum(jnp.ones_like(b, dtype=jnp.int32)) - 1
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)


# -- exercise 6: data_parallel_grads
SPECS = dict(in_specs=(P(), P("batch"), P("batch")), out_specs=P())


def _grads(combine, check_vma=True):
    def grads(params, inputs, targets, mesh):
        def f(p, x, y):
            return combine(jax.grad(linear_loss)(p, x, y))
        return jax.shard_map(f, mesh=mesh, check_vma=check_vma, **SPECS)(
            params, inputs, targets)
    return grads


grads_pmap_recipe = _grads(lambda g: jax.lax.pmean(g, "batch"))
grads_psum_recipe = _grads(lambda g: jax.lax.psum(g, "batch"))
grads_device_0 = _grads(lambda g: g, check_vma=False)
grads_unchecked_pmean = _grads(lambda g: jax.lax.pmean(g, "batch"),
                               check_vma=False)  # correct: pmap's convention


def grads_of_summed_loss(params, inputs, targets, mesh):
    def f(p, x, y):
        return jax.grad(lambda q: jax.lax.psum(linear_loss(q, x, y), "batch"))(p)
    return jax.shard_map(f, mesh=mesh, **SPECS)(params, inputs, targets)


def grads_divided(params, inputs, targets, mesh):  # correct: undo the sum
    def f(p, x, y):
        n = jax.lax.axis_size("batch")
        return jax.tree.map(lambda g: g / n, jax.grad(linear_loss)(p, x, y))
    return jax.shard_map(f, mesh=mesh, **SPECS)(params, inputs, targets)


def grads_value_and_grad(params, inputs, targets, mesh):  # correct
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, **SPECS)
    def f(p, x, y):
        def loss(q):
            return jax.lax.pmean(linear_loss(q, x, y), axis_name="batch")
        return jax.value_and_grad(loss)(p)[1]
    return f(params, inputs, targets)


def grads_compiler(params, inputs, targets, mesh):  # correct: jit does it all
    return jax.jit(jax.grad(linear_loss))(params, inputs, targets)
