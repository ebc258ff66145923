"""Where each weight lives under each layout, and the training step that follows.

The layouts (:data:`~jaxcourse.scaling.model.LAYOUTS`) as partition specs
(:func:`param_specs`, :func:`spec_tree`, :func:`place`), a training step
written with shardings (:func:`make_step`, Explicit mode: JAX inserts the
collectives), and the same steps written per device with ``shard_map``
(:func:`fsdp_step_shard_map`, :func:`tp_step_shard_map`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from .model import DATA, LAYOUTS, MODEL, identity, loss

__all__ = ["check_layout", "fsdp_step_shard_map", "make_step", "param_specs", "place",
           "spec_tree", "tp_step_shard_map"]


def check_layout(layout: str) -> None:
    """Raise a ``ValueError`` that lists the layouts if ``layout`` is not one."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


def param_specs(layout: str) -> dict[str, P]:
    """Return where each weight of a block lives, for ``layout``.

    Data parallelism replicates them; FSDP splits each weight's first
    dimension over ``"data"``; tensor parallelism splits ``w_in`` by columns
    and ``w_out`` by rows over ``"model"`` (Megatron-LM's MLP), so the hidden
    units are split and a block needs one reduction; FSDP + TP does both.
    """
    check_layout(layout)
    return {
        "data parallel": {"w_in": P(), "w_out": P()},
        "FSDP": {"w_in": P(DATA, None), "w_out": P(DATA, None)},
        "tensor parallel": {"w_in": P(None, MODEL), "w_out": P(MODEL, None)},
        "FSDP + TP": {"w_in": P(DATA, MODEL), "w_out": P(MODEL, DATA)},
    }[layout]


def _gather_over_data(layout: str) -> Callable[[jax.Array], jax.Array]:
    """Return the weights' all-gather over ``"data"`` before use (FSDP layouts)."""
    if layout == "FSDP":
        return lambda w: jax.reshard(w, P())
    if layout == "FSDP + TP":
        def gather(w: jax.Array) -> jax.Array:
            # Keep the "model" split, undo the "data" one.
            spec = jax.typeof(w).sharding.spec
            return jax.reshard(w, P(*(None if e == DATA else e for e in spec)))
        return gather
    return identity


def make_step(layout: str, optimizer: Any, remat: bool = False) -> Callable:
    """Return a training step for ``layout``, written with shardings (Explicit mode).

    The step takes ``(params, opt_state, x, y)`` laid out as the layout says
    (see :func:`place`) and returns the new parameters, the new optimizer
    state and the loss. Under ``jax.jit`` with a mesh set (axes ``"data"``
    and, for the tensor-parallel layouts, ``"model"``), JAX inserts every
    collective the layouts imply.
    """
    check_layout(layout)
    use = _gather_over_data(layout)
    # The product over split hidden units must say where its result goes.
    out = P(DATA, None) if layout in ("tensor parallel", "FSDP + TP") else None

    def step(params, opt_state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y, use, out, remat)
        params, opt_state = _apply_update(optimizer, grads, opt_state, params)
        return params, opt_state, value

    return step


def place(tree: Any, layout: str) -> Any:
    """Lay out a tree of block weights (or Adam moments shaped like them).

    Leaves whose dict key is ``w_in`` or ``w_out`` follow
    :func:`param_specs`; everything else (the step count) is replicated. Needs
    ``jax.set_mesh`` with the layout's axes.
    """
    return jax.device_put(tree, spec_tree(tree, layout))


def spec_tree(tree: Any, layout: str) -> Any:
    """Return the ``PartitionSpec`` of every leaf of ``tree`` under ``layout``.

    Leaves whose dict key is ``w_in`` or ``w_out`` (weights, or Adam's moments
    of them) get :func:`param_specs`'s; every other leaf, such as Adam's step
    count, is replicated.
    """
    specs = param_specs(layout)

    def spec_of(path, leaf):
        key = getattr(path[-1], "key", None) if path else None
        return specs.get(key, P()) if getattr(leaf, "ndim", 0) == 2 else P()

    return jax.tree_util.tree_map_with_path(spec_of, tree)


def _apply_update(optimizer: Any, grads: Any, opt_state: Any, params: Any):
    """Return the parameters and optimizer state after one optimizer update."""
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return jax.tree.map(lambda p, u: p + u, params, updates), opt_state


def fsdp_step_shard_map(optimizer: Any, mesh: Any, remat: bool = False) -> Callable:
    """Return FSDP's step per device: all-gather weights, reduce-scatter gradients.

    Each device holds ``1/n`` of every weight's rows, and of Adam's moments.
    The forward pass gathers each weight (``all_gather``); differentiating an
    ``all_gather`` gives its transpose, a ``psum_scatter``, so the gradients
    come back already summed and split like the weights. The optimizer then
    updates each device's slice on its own.
    """
    def per_device(params, opt_state, x, y):
        def local_loss(params):
            gather = lambda w: jax.lax.all_gather(w, DATA, tiled=True)  # noqa: E731
            # The mean over the global batch: each device's mean, averaged.
            return jax.lax.pmean(loss(params, x, y, gather, remat=remat), DATA)

        value, grads = jax.value_and_grad(local_loss)(params)
        params, opt_state = _apply_update(optimizer, grads, opt_state, params)
        return params, opt_state, value

    return _with_specs(per_device, mesh, "FSDP")


def tp_step_shard_map(optimizer: Any, mesh: Any) -> Callable:
    """Return Megatron's tensor-parallel step per device: one ``psum`` per block.

    Each device holds ``w_in``'s columns and ``w_out``'s rows for its share of
    the hidden units, computes a partial output of every block, and one
    ``psum`` over ``"model"`` completes it. The backward pass needs one more
    per block (the transpose of the forward's ``psum`` is free; the gradient
    reaching a block's input is a sum over the split units). The batch may be
    split over ``"data"`` too: then the gradients are averaged over it.
    """
    def per_device(params, opt_state, x, y):
        def local_loss(params):
            h = x
            for block in params:
                partial = jax.nn.relu(h @ block["w_in"]) @ block["w_out"]
                h = h + jax.lax.psum(partial, MODEL)
            return jax.lax.pmean(jnp.mean((h - y) ** 2), DATA)

        value, grads = jax.value_and_grad(local_loss)(params)
        params, opt_state = _apply_update(optimizer, grads, opt_state, params)
        return params, opt_state, value

    return _with_specs(per_device, mesh, "tensor parallel")


def _with_specs(per_device: Callable, mesh: Any, layout: str) -> Callable:
    def step(params, opt_state, x, y):
        p_specs, o_specs = spec_tree(params, layout), spec_tree(opt_state, layout)
        batch = P(DATA, None)
        return jax.shard_map(per_device, mesh=mesh,
                             in_specs=(p_specs, o_specs, batch, batch),
                             out_specs=(p_specs, o_specs, P()))(params, opt_state, x, y)

    return step
