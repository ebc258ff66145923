"""The known wrong answers to chapter 6's exercises, as learners write them.

:mod:`solutions.scaling` names each of these in a
:class:`jaxcourse.exercises.Mistake`, with the message a learner reads when
an answer gives the same output; one section per exercise, in the chapter's
order. Each takes the arguments of the exercise's reference. The three memory
exercises' are in :mod:`exercise_kit.scaling_memory_mistakes`, with their tables.
"""

from __future__ import annotations

import jax
from jax.sharding import PartitionSpec as P

from exercise_kit.scaling_checks import MESHES
from jaxcourse import scaling

# ---- fsdp_specs ----------------------------------------------------------


def _first_divisible(weight, n, order):
    for axis in order(range(len(weight.shape)), weight.shape):
        if weight.shape[axis] % n == 0:
            return P(*[None] * axis, "data")
    return P()


def specs_first_always(params, n):
    """Split the first dimension over "data", whether n divides it or not."""
    return jax.tree.map(lambda w: P("data") if w.ndim else P(), params)


def specs_largest(params, n):
    """Split the largest dimension that n divides (ties: the first)."""
    return jax.tree.map(lambda w: _first_divisible(
        w, n, lambda axes, shape: sorted(axes, key=lambda a: -shape[a])), params)


def specs_last(params, n):
    """Split the last dimension that n divides."""
    return jax.tree.map(lambda w: _first_divisible(
        w, n, lambda axes, shape: reversed(axes)), params)


def specs_first_only(params, n):
    """Split the first dimension when n divides it; otherwise keep the array whole."""
    return jax.tree.map(
        lambda w: P("data") if w.ndim and w.shape[0] % n == 0 else P(), params)


def specs_at_least_n(params, n):
    """Split the first dimension at least n long, whether n divides it or not."""
    def spec(w):
        axis = next((a for a, length in enumerate(w.shape) if length >= n), None)
        return P() if axis is None else P(*[None] * axis, "data")
    return jax.tree.map(spec, params)


def specs_fixed_eight(params, n):
    """Apply the rule for 8 devices, whatever n is."""
    return jax.tree.map(lambda w: _first_divisible(w, 8, lambda axes, shape: axes),
                        params)


def specs_without_leading_nones(params, n):
    """P("data") for the first dimension n divides, without the Nones before it."""
    return jax.tree.map(lambda w: P("data") if any(
        length % n == 0 for length in w.shape) else P(), params)


def specs_over_model(params, n):
    """Split the first divisible dimension over the wrong axis, "model"."""
    def spec(w):
        found = _first_divisible(w, n, lambda axes, shape: axes)
        return P(*["model" if e == "data" else e for e in found])
    return jax.tree.map(spec, params)


def specs_replicated(params, n):
    """Replicate every weight (data parallelism)."""
    return jax.tree.map(lambda w: P(), params)


# ---- tp_mlp --------------------------------------------------------------

# Said of every answer that gathers the weights, whatever it adds to them.
GATHERED_WEIGHTS = ("you gathered the weights whole onto every device (two "
                    "all-gathers of weights, and no memory saved): keep them split "
                    "and sum the partial outputs with one psum over 'model'")
# Said in place of the error jax.shard_map raises when the result still
# differs across 'model' (no psum, a psum over 'data', gathered weights):
# its first line, all a panel shows, names neither the axis nor the fix.
UNSUMMED_OVER_MODEL = ("the result still differs across the devices of a 'model' "
                       "group, which out_specs P('data', None) rules out: add the "
                       "partial products with one psum over 'model', the axis the "
                       "hidden units are split over (not 'data'), and keep the "
                       "weights split")
# Said of a sum that also adds over 'data', whose devices hold other rows.
SUMMED_OVER_DATA = ("the partial products were also added over 'data', whose "
                    "devices hold other rows of x: add them over 'model' only, "
                    "the axis the hidden units are split over")

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


def tp_sum_over_data(x, w_in, w_out, mesh):
    """Add the partial products over "data", the wrong axis.

    The result still differs across 'model', which ``out_specs`` says it does
    not: ``jax.shard_map``'s check raises ("... out_specs which require
    replication ..."), as it does for no sum at all and for gathered weights.
    """
    return _mlp(x, w_in, w_out, mesh,
                lambda x, a, b: jax.lax.psum(jax.nn.relu(x @ a) @ b, "data"))


def tp_sum_over_data_unchecked(x, w_in, w_out, mesh):
    """Add over "data" with the check off, as JAX's error suggests: rows mixed."""
    return _mlp(x, w_in, w_out, mesh,
                lambda x, a, b: jax.lax.psum(jax.nn.relu(x @ a) @ b, "data"),
                check_vma=False)


def tp_sum_over_both_axes(x, w_in, w_out, mesh):
    """Add over ("data", "model"): the rows of other examples are added in."""
    return _mlp(x, w_in, w_out, mesh, lambda x, a, b: jax.lax.psum(
        jax.nn.relu(x @ a) @ b, ("data", "model")))


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


# ---- layout_bytes ---------------------------------------------------------


def _layout_bytes(size, layout, batch, data, model, regather, *, gathers=None,
                  all_reduce=2, ring=True, blocks_backward=-1, tp_grads=True,
                  loss=True):
    def send(kind, nbytes, n):
        if n <= 1:
            return 0.0
        share = nbytes * (n - 1) / n if ring else nbytes
        return all_reduce * share if kind == "all-reduce" else share

    weight = size.width * size.hidden * 4
    weights = 2 * size.layers
    sent = send("all-reduce", 4, data) if loss else 0.0
    if layout == "data parallel":
        sent += weights * send("all-reduce", weight, data)
    if layout in ("FSDP", "FSDP + TP"):
        piece = weight / (model if layout == "FSDP + TP" else 1)
        count = gathers if gathers is not None else (2 if regather else 1)
        sent += weights * (count * send("all-gather", piece, data)
                           + send("reduce-scatter", piece, data))
    if layout in ("tensor parallel", "FSDP + TP"):
        activation = batch / data * size.width * 4
        sent += (2 * size.layers + blocks_backward) * send("all-reduce", activation,
                                                           model)
        if layout == "tensor parallel" and tp_grads:
            sent += weights * send("all-reduce", weight / model, data)
    return sent


def layout_bytes_no_regather(size, layout, batch, data, model, regather=False):
    """One gather per weight, whatever regather says."""
    return _layout_bytes(size, layout, batch, data, model, regather, gathers=1)


def layout_bytes_all_reduce_once(size, layout, batch, data, model, regather=False):
    """Price an all-reduce like an all-gather."""
    return _layout_bytes(size, layout, batch, data, model, regather, all_reduce=1)


def layout_bytes_whole(size, layout, batch, data, model, regather=False):
    """Every collective sends its whole operand ((n - 1)/n left out)."""
    return _layout_bytes(size, layout, batch, data, model, regather, ring=False)


def layout_bytes_2l(size, layout, batch, data, model, regather=False):
    """2 L all-reduces of activations, not 2 L - 1."""
    return _layout_bytes(size, layout, batch, data, model, regather,
                         blocks_backward=0)


def layout_bytes_no_tp_grads(size, layout, batch, data, model, regather=False):
    """Tensor parallelism's weight gradients not summed over "data"."""
    return _layout_bytes(size, layout, batch, data, model, regather, tp_grads=False)


def layout_bytes_no_loss(size, layout, batch, data, model, regather=False):
    """Leave the loss's all-reduce out."""
    return _layout_bytes(size, layout, batch, data, model, regather, loss=False)


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


def best_never_none(size, batch, budget_bytes):
    """When nothing fits, the candidate that holds the least instead of None."""
    fitting = [c for c in _candidates()
               if scaling.state_bytes(size, c[0], *c[1])["total"] <= budget_bytes]
    if fitting:
        return min(fitting, key=lambda c: round(_sent(size, c[0], batch, *c[1])))
    return min(_candidates(), key=lambda c: scaling.state_bytes(size, c[0], *c[1])
               ["total"])


def best_with_regather(size, batch, budget_bytes):
    """Price FSDP with ZeRO-3's re-gather (regather=True)."""
    def sent(c):
        return round(sum(scaling.ring_bytes(k.kind, k.nbytes, k.group) for k in
                         scaling.predicted_collectives(size, c[0], batch, *c[1],
                                                       regather=True)))
    fitting = [c for c in _candidates()
               if scaling.state_bytes(size, c[0], *c[1])["total"] <= budget_bytes]
    return min(fitting, key=sent) if fitting else None


# ---- critical_batch ------------------------------------------------------


def _critical(layout, size, data, model, flops, axis_bandwidth, itemsize, *,
              dp_phase=2, ring=True, activations=True, per_chip=True):
    alpha = flops / axis_bandwidth
    data_ring = (data - 1) / data if ring else float(data > 1)
    model_ring = (model - 1) if ring else model * float(model > 1)
    if layout == "data parallel":
        return data_ring * itemsize * alpha / dp_phase
    weights = data_ring * itemsize * alpha / (2 * model)
    grows = model_ring * itemsize * alpha / (8 * size.width) if activations else 0.0
    if grows >= 1:
        return float("inf")
    return weights / (1 - grows) * (1 if per_chip else model)


def critical_whole_step(layout, size, data, model, flops, axis_bandwidth, itemsize):
    """Hide data parallelism's all-reduce behind the whole step (6 FLOPs)."""
    return _critical(layout, size, data, model, flops, axis_bandwidth, itemsize,
                     dp_phase=3)


def critical_per_group(layout, size, data, model, flops, axis_bandwidth, itemsize):
    """Return the batch per data-parallel group of ``model`` chips, not per chip."""
    return _critical(layout, size, data, model, flops, axis_bandwidth, itemsize,
                     per_chip=False)


def critical_without_activations(layout, size, data, model, flops, axis_bandwidth,
                                 itemsize):
    """Tensor parallelism's activations left out: the weights' bytes only."""
    return _critical(layout, size, data, model, flops, axis_bandwidth, itemsize,
                     activations=False)


def critical_without_ring_factor(layout, size, data, model, flops, axis_bandwidth,
                                 itemsize):
    """Each collective sends its whole operand, not (n - 1)/n of it."""
    return _critical(layout, size, data, model, flops, axis_bandwidth, itemsize,
                     ring=False)


def critical_inverted(layout, size, data, model, flops, axis_bandwidth, itemsize):
    """Bandwidth over FLOP/s instead of FLOP/s over bandwidth."""
    return _critical(layout, size, data, model, axis_bandwidth, flops, itemsize)
