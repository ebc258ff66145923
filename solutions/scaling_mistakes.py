"""The known wrong answers to chapter 6's exercises, as learners write them.

:mod:`solutions.scaling` names each of these in a
:class:`jaxcourse.exercises.Mistake`, with the message a learner reads when
an answer gives the same output; one section per exercise, in the chapter's
order. Each takes the arguments of the exercise's reference.
"""

from __future__ import annotations

import jax
from jax.sharding import PartitionSpec as P

from jaxcourse import scaling
from solutions.scaling_checks import MESHES

# ---- state_bytes_per_device ----------------------------------------------


def _weights_bytes(size: scaling.Size) -> int:
    return scaling.param_count(size) * scaling.F32


def _shards(layout: str, data: int, model: int) -> int:
    return {"data parallel": 1, "FSDP": data, "tensor parallel": model,
            "FSDP + TP": data * model}[layout]


def state_without_adam(size, layout, data, model):
    """Parameters and gradients only: Adam's two moments forgotten."""
    return 2 * _weights_bytes(size) // _shards(layout, data, model)


def state_tp_over_all_devices(size, layout, data, model):
    """Tensor parallelism divided by every device, not by the "model" axis."""
    split = data * model if layout != "data parallel" else 1
    return 4 * _weights_bytes(size) // split


def state_without_grads(size, layout, data, model):
    """Parameters and Adam's moments, but no gradients."""
    return 3 * _weights_bytes(size) // _shards(layout, data, model)


def state_square_matrices(size, layout, data, model):
    """Each block's matrices counted as d × d, not d × 4d and 4d × d."""
    square = size.layers * 2 * size.width * size.width * scaling.F32
    return 4 * square // _shards(layout, data, model)


def state_not_divided(size, layout, data, model):
    """Keep the whole training state on every device, whatever the layout."""
    return 4 * _weights_bytes(size)


# ---- fsdp_specs ----------------------------------------------------------


def specs_by_columns(params):
    """Split each weight's second dimension over "data"."""
    return jax.tree.map(lambda w: P(None, "data"), params)


def specs_over_model(params):
    """Split the first dimension over the wrong axis, "model"."""
    return jax.tree.map(lambda w: P("model", None), params)


def specs_replicated(params):
    """Replicate every weight (data parallelism)."""
    return jax.tree.map(lambda w: P(), params)


def specs_both_axes(params):
    """Split each weight over both axes (FSDP + TP)."""
    return jax.tree.map(lambda w: P("data", "model"), params)


# ---- tp_mlp --------------------------------------------------------------

ROWS, COLS = P("data", None), P(None, "model")


def _mlp(x, w_in, w_out, mesh, per_device, **kwargs):
    return jax.shard_map(per_device, mesh=mesh,
                         in_specs=(ROWS, COLS, P("model", None)),
                         out_specs=ROWS, **kwargs)(x, w_in, w_out)


def tp_gathered_weights(x, w_in, w_out, mesh):
    """Gather both weights whole on every device, then multiply."""
    def per_device(x, a, b):
        a = jax.lax.all_gather(a, "model", axis=1, tiled=True)
        return jax.nn.relu(x @ a) @ jax.lax.all_gather(b, "model", tiled=True)
    return _mlp(x, w_in, w_out, mesh, per_device, check_vma=False)


def tp_gathered_weights_then_summed(x, w_in, w_out, mesh):
    """Gather both weights, then add a psum over 'model' divided by its size.

    The values are right and the program has the one all-reduce the exercise
    asks for, but also the two all-gathers of the weights it forbids.
    """
    def per_device(x, a, b):
        a = jax.lax.all_gather(a, "model", axis=1, tiled=True)
        whole = jax.nn.relu(x @ a) @ jax.lax.all_gather(b, "model", tiled=True)
        return jax.lax.psum(whole, "model") / jax.lax.axis_size("model")
    return _mlp(x, w_in, w_out, mesh, per_device)


def tp_without_sum(x, w_in, w_out, mesh):
    """Return device 0's partial product: the sum is missing."""
    return _mlp(x, w_in, w_out, mesh, lambda x, a, b: jax.nn.relu(x @ a) @ b,
                check_vma=False)


def tp_relu_after_sum(x, w_in, w_out, mesh):
    """Apply relu to the summed output instead of the hidden units."""
    return _mlp(x, w_in, w_out, mesh,
                lambda x, a, b: jax.nn.relu(jax.lax.psum((x @ a) @ b, "model")))


def tp_pmean(x, w_in, w_out, mesh):
    """Average the partial products instead of adding them."""
    return _mlp(x, w_in, w_out, mesh,
                lambda x, a, b: jax.lax.pmean(jax.nn.relu(x @ a) @ b, "model"))


def tp_scatter_then_gather(x, w_in, w_out, mesh):
    """Sum with a reduce-scatter, then gather the pieces."""
    def per_device(x, a, b):
        piece = jax.lax.psum_scatter(jax.nn.relu(x @ a) @ b, "model",
                                     scatter_dimension=1, tiled=True)
        return jax.lax.all_gather(piece, "model", axis=1, tiled=True)
    return _mlp(x, w_in, w_out, mesh, per_device, check_vma=False)


# ---- collective_bytes ----------------------------------------------------


def bytes_no_factor_two(kind, nbytes, n):
    """Price an all-reduce like an all-gather."""
    return nbytes * (n - 1) / n if n > 1 else 0.0


def bytes_whole_operand(kind, nbytes, n):
    """Every device sends the whole operand ((n-1)/n left out)."""
    if n <= 1:
        return 0.0
    return 2.0 * nbytes if kind == "all-reduce" else float(nbytes)


def bytes_to_every_other(kind, nbytes, n):
    """Send the whole operand to each of the n - 1 others."""
    return float(nbytes * (n - 1) * (2 if kind == "all-reduce" else 1))


def bytes_n_over_n_minus_1(kind, nbytes, n):
    """Invert the ratio: n / (n - 1) instead of (n - 1) / n."""
    if n <= 1:
        return 0.0
    return nbytes * n / (n - 1) * (2 if kind == "all-reduce" else 1)


# ---- best_layout ---------------------------------------------------------


def _candidates(every_mesh: bool = False):
    for layout in scaling.LAYOUTS:
        for data, model in MESHES:
            uses_model = layout in ("tensor parallel", "FSDP + TP")
            if not every_mesh and (uses_model != (model > 1) or
                                   (layout == "FSDP + TP" and data == 1)):
                continue
            yield layout, (data, model)


def _sent(size, layout, batch, data, model):
    return sum(scaling.ring_bytes(c.kind, c.nbytes, c.group)
               for c in scaling.predicted_collectives(size, layout, batch, data, model))


def _best(size, batch, budget, key, every_mesh=False, use_budget=True):
    fitting = [(layout, mesh) for layout, mesh in _candidates(every_mesh)
               if not use_budget or
               scaling.state_bytes(size, layout, *mesh)["total"] <= budget]
    if not fitting:
        return None
    return min(fitting, key=lambda c: key(size, batch, c))


def best_ignoring_budget(size, batch, budget_bytes):
    """Pick the fewest bytes sent, whether it fits or not."""
    return _best(size, batch, budget_bytes,
                 lambda s, b, c: round(_sent(s, c[0], b, *c[1])), use_budget=False)


def best_least_memory(size, batch, budget_bytes):
    """Pick the layout that holds the least, not the one that sends the least."""
    return _best(size, batch, budget_bytes,
                 lambda s, b, c: scaling.state_bytes(s, c[0], *c[1])["total"])


def best_every_mesh(size, batch, budget_bytes):
    """Every layout on every mesh: data parallelism on a 1 × 8 mesh sends nothing."""
    return _best(size, batch, budget_bytes,
                 lambda s, b, c: round(_sent(s, c[0], b, *c[1])), every_mesh=True)


def best_operand_bytes(size, batch, budget_bytes):
    """Add up the operands' sizes, not what a ring sends of them."""
    return _best(size, batch, budget_bytes, lambda s, b, c: sum(
        x.nbytes for x in scaling.predicted_collectives(s, c[0], b, *c[1])))


def best_last_of_ties(size, batch, budget_bytes):
    """Ties go to the last candidate instead of the first."""
    fitting = [c for c in _candidates()
               if scaling.state_bytes(size, c[0], *c[1])["total"] <= budget_bytes]
    if not fitting:
        return None
    return max(reversed(fitting), key=lambda c: -round(_sent(size, c[0], batch, *c[1])))


# ---- critical_batch ------------------------------------------------------


def critical_without_regather(hw_flops, link_bandwidth, itemsize, n):
    """Two passes over the weights (gather, reduce-scatter): the re-gather forgotten."""
    return (n - 1) / n * 2 * itemsize * hw_flops / (6 * link_bandwidth)


def critical_without_ring_factor(hw_flops, link_bandwidth, itemsize, n):
    """Each pass sends the whole weights, not (n - 1)/n of them."""
    return itemsize * hw_flops / (2 * link_bandwidth)


def critical_forward_flops(hw_flops, link_bandwidth, itemsize, n):
    """2 FLOPs per parameter per example (the forward pass only) instead of 6."""
    return (n - 1) / n * 3 * itemsize * hw_flops / (2 * link_bandwidth)


def critical_inverted(hw_flops, link_bandwidth, itemsize, n):
    """Turn the ratio upside down: bandwidth over FLOP/s."""
    return (n - 1) / n * itemsize * link_bandwidth / (2 * hw_flops)
