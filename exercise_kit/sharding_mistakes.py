"""The known wrong answers to chapter 4's exercises, as learners write them.

:mod:`solutions.sharding` names each of these in a
:class:`jaxcourse.exercises.Mistake`, with the message a learner reads when
an answer gives the same output; one section per exercise, in the chapter's
order (``spec_for_target``'s are one-line specs, written where they are
named). Each takes the arguments of the exercise's reference.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

# ---- shard_mlp_2d ----------------------------------------------------------


def mlp_2d_with(specs: list, batch_spec: P) -> Callable:
    """Return a ``shard_mlp_2d`` that places layer k with ``specs[k]``."""
    def place(params, batch, mesh):
        params = [
            (jax.device_put(w, NamedSharding(mesh, ws)),
             jax.device_put(b, NamedSharding(mesh, bs)))
            for (w, b), (ws, bs) in zip(params, specs, strict=True)
        ]
        return params, jax.device_put(batch, NamedSharding(mesh, batch_spec))

    return place


_REPLICATED = (P(), P())
SWAPPED = mlp_2d_with(
    [_REPLICATED, (P("model", None), P()), (P(None, "model"), P("model")),
     _REPLICATED], P("batch"))
BIAS_REPLICATED = mlp_2d_with(
    [_REPLICATED, (P(None, "model"), P()), (P("model", None), P()), _REPLICATED],
    P("batch"))
MODEL_REPLICATED = mlp_2d_with([_REPLICATED] * 4, P("batch"))
BATCH_OVER_MODEL = mlp_2d_with(
    [_REPLICATED, (P(None, "model"), P("model")), (P("model", None), P()),
     _REPLICATED], P("model"))
BATCH_OVER_BOTH = mlp_2d_with(
    [_REPLICATED, (P(None, "model"), P("model")), (P("model", None), P()),
     _REPLICATED], P(("batch", "model")))


# ---- make_hidden_layer -----------------------------------------------------


def layer_with(x_spec=None, w_spec=None, h_spec=None) -> Callable:
    """Return a ``make_hidden_layer`` that constrains x, w and h as given."""
    def make(mesh):
        def hidden_layer(x, w):
            if x_spec is not None:
                x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, x_spec))
            if w_spec is not None:
                w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, w_spec))
            h = jax.nn.relu(x @ w)
            if h_spec is not None:
                h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, h_spec))
            return h

        return jax.jit(hidden_layer)

    return make


# ---- collective_free_specs -------------------------------------------------


def nothing_split(mesh):
    """Replicate all three: no collective, but every device does all the work."""
    return P(), P(), P()


def _first_axis(mesh) -> str:
    return mesh.axis_names[0]


def megatron(mesh):
    """Split w1 by columns and w2 by rows: tensor parallelism, an all-reduce."""
    batch, model = mesh.axis_names
    return P(batch), P(None, model), P(model)


def batch_first_axis(mesh):
    """Split the batch over one mesh axis only."""
    return P(_first_axis(mesh)), P(), P()


def last_columns(mesh):
    """Split w2 by columns: the first layer is repeated along that axis."""
    batch, model = mesh.axis_names
    return P(batch), P(), P(None, model)


def contracted_x(mesh):
    """Split x's columns and w1's rows: that cuts the sum of x @ w1."""
    batch, model = mesh.axis_names
    return P(batch, model), P(model), P()


# ---- cheaper_product -------------------------------------------------------


def gather_w(x, w):
    """Gather w, whichever operand is smaller."""
    return x @ jax.reshard(w, P())


def gather_x(x, w):
    """Gather x, whichever operand is smaller."""
    return jax.reshard(x, P()) @ w


def gather_both(x, w):
    """Gather both operands."""
    return jax.reshard(x, P()) @ jax.reshard(w, P())


def w_by_rows(x, w):
    """Move w to a split by rows (an all-to-all), then multiply."""
    axis = jax.typeof(w).sharding.spec[1]  # the axis w's columns are split over
    return x @ jax.reshard(w, P(axis, None))


def larger_gathered(x, w):
    """Gather the larger operand: the comparison the wrong way round."""
    if x.size > w.size:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


def batch_against_contracted(x, w):
    """Compare x's rows with the contracted dimension: w's columns are the ones."""
    if x.shape[0] <= x.shape[1]:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())


def hundred_rows(x, w):
    """Gather x for a batch under 100 rows, w for a larger one: a fixed threshold."""
    if x.shape[0] < 100:
        return jax.reshard(x, P()) @ w
    return x @ jax.reshard(w, P())
