"""ZeRO's stages 1 and 2: Adam's state (and the gradients) split, not the weights.

Data parallelism keeps everything on every device. ZeRO-1 splits Adam's
moments over the ``"data"`` devices: each device updates its own piece of
every weight after the gradients' all-reduce, and an all-gather puts the
pieces together again. ZeRO-2 also splits the gradients: a reduce-scatter
gives each device only the sum of its piece. (ZeRO-3, which splits the
weights too, is the FSDP layout of :mod:`.layouts`.) Float32 throughout, so
that the stored weights are the ones the step computes with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.scaling.communication import Collective

from .config import Config
from .layouts import DATA, param_specs, spec_tree
from .model import Params, init_params, loss
from .training import optimizer_for

__all__ = ["zero_collectives", "zero_specs", "zero_step"]


def _piece_axis(name: str, ndim: int) -> int:
    """Return the axis of weight ``name`` that FSDP splits over ``"data"``."""
    spec = tuple(param_specs("FSDP")[name])
    return spec.index(DATA) + (ndim - len(spec))


def zero_specs(state: dict[str, Any]) -> dict[str, Any]:
    """Return a ZeRO state's specs: weights whole, Adam's moments split as FSDP's."""
    return {"params": jax.tree.map(lambda _: P(), state["params"]),
            "opt": spec_tree(state["opt"], "FSDP")}


def zero_step(cfg: Config, stage: int, mesh: Any, learning_rate: float = 1e-3
              ) -> Callable:
    """Return ZeRO-``stage``'s step (1 or 2): ``step(state, inputs, targets)``.

    ``state`` is ``{"params", "opt"}`` as :func:`~.training.init_state` makes
    it, laid out by :func:`zero_specs`. Each device differentiates its own
    tokens' loss; stage 1 all-reduces every gradient and keeps its piece,
    stage 2 reduce-scatters it; Adam updates the piece; an all-gather
    rebuilds every weight. Call it under ``jax.jit``.
    """
    _check(stage)
    optimizer = optimizer_for("float32", learning_rate)
    n = mesh.shape[DATA]

    def piece(name: str, w: jax.Array) -> jax.Array:
        axis = _piece_axis(name, w.ndim)
        size = w.shape[axis] // n
        start = jax.lax.axis_index(DATA) * size
        return jax.lax.dynamic_slice_in_dim(w, start, size, axis)

    def per_device(state: dict[str, Any], inputs: jax.Array, targets: jax.Array):
        mine = jax.lax.pcast(state["params"], DATA, to="varying")
        value, grads = jax.value_and_grad(
            lambda p: loss(p, inputs, targets, cfg))(mine)
        grads = _by_name(grads, lambda name, g: (
            piece(name, jax.lax.psum(g, DATA)) if stage == 1 else
            jax.lax.psum_scatter(g, DATA, scatter_dimension=_piece_axis(name, g.ndim),
                                 tiled=True)) / n)
        pieces = _by_name(state["params"], piece)
        updates, opt = optimizer.update(grads, state["opt"], pieces)
        new = jax.tree.map(lambda p, u: p + u, pieces, updates)
        return {"params": new, "opt": opt}, jax.lax.pmean(value, DATA)

    def step(state: dict[str, Any], inputs: jax.Array, targets: jax.Array):
        specs = zero_specs(state)
        split = {"params": spec_tree(state["params"], "FSDP"), "opt": specs["opt"]}
        new, value = jax.shard_map(per_device, mesh=mesh,
                                   in_specs=(specs, P(DATA, None), P(DATA, None)),
                                   out_specs=(split, P()))(state, inputs, targets)
        # Every device needs every weight for the next step: asking for them
        # whole makes XLA all-gather the updated pieces.
        whole = NamedSharding(mesh, P())
        new["params"] = jax.tree.map(
            lambda w: jax.reshard(w, whole), new["params"])
        return new, value

    return step


def _by_name(tree: Params, fn: Callable[[str, jax.Array], jax.Array]) -> Params:
    """Apply ``fn(name, leaf)`` to every weight, named by its dict key."""
    return jax.tree_util.tree_map_with_path(lambda path, w: fn(path[-1].key, w), tree)


def _check(stage: int) -> None:
    if stage not in (1, 2):
        raise ValueError(f"ZeRO stages 1 and 2 run here (stage 3 is FSDP), "
                         f"not {stage!r}")


def zero_collectives(cfg: Config, stage: int, data: int) -> list[Collective]:
    """Return the collectives of :func:`zero_step`'s program, predicted.

    For every weight (whole: the step differentiates the stacked blocks at
    once), in float32: stage 1 all-reduces its gradient, stage 2
    reduce-scatters it, and both all-gather the updated pieces; the loss is
    averaged (one float32 all-reduce).
    """
    _check(stage)
    shapes = jax.eval_shape(lambda: init_params(jax.random.key(0), cfg))
    kind = "all-reduce" if stage == 1 else "reduce-scatter"
    found = [Collective("all-reduce", 4, data)]
    for leaf in jax.tree.leaves(shapes):
        found += [Collective(kind, leaf.size * 4, data),
                  Collective("all-gather", leaf.size * 4, data)]
    return found
