"""The model of chapter 6: a deep MLP with a transformer's block shape.

Its size is one number, the width ``d`` (:class:`Size`); each block computes
``x + relu(x @ w_in) @ w_out`` with a hidden width of ``4 d``, so every byte
and every FLOP can be counted by hand. Everything is float32 here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["DATA", "F32", "LAYOUTS", "MODEL", "Size", "forward", "identity",
           "init_params", "loss", "make_batch", "param_count"]

#: The four layouts, by the names the chapter uses.
LAYOUTS = ("data parallel", "FSDP", "tensor parallel", "FSDP + TP")
#: Bytes per float32 number.
F32 = 4
#: The mesh axes: the batch is split over "data", the MLP's hidden units over "model".
DATA, MODEL = "data", "model"


class Size(NamedTuple):
    """The model's shape.

    Attributes
    ----------
    width : int
        ``d``: the size of the residual stream (each block's input and output).
    layers : int
        The number of MLP blocks.
    """

    width: int
    layers: int

    @property
    def hidden(self) -> int:
        """The hidden width of each block, ``4 d`` as in a transformer's MLP."""
        return 4 * self.width


def param_count(size: Size) -> int:
    """Return the number of parameters: two ``d × 4d`` matrices per block."""
    return size.layers * 2 * size.width * size.hidden


def init_params(key: jax.Array, size: Size) -> list[dict[str, jax.Array]]:
    """Return one ``{"w_in", "w_out"}`` dict per block, scaled for unit variance."""
    keys = jax.random.split(key, 2 * size.layers)
    d, f = size.width, size.hidden
    return [
        {"w_in": jax.random.normal(keys[2 * i], (d, f)) / np.sqrt(d),
         "w_out": jax.random.normal(keys[2 * i + 1], (f, d)) / np.sqrt(f)}
        for i in range(size.layers)
    ]


def make_batch(key: jax.Array, size: Size, batch: int) -> tuple[jax.Array, jax.Array]:
    """Return inputs and regression targets of shape ``(batch, d)``."""
    k_x, k_y = jax.random.split(key)
    return (jax.random.normal(k_x, (batch, size.width)),
            jax.random.normal(k_y, (batch, size.width)))


def identity(w: jax.Array) -> jax.Array:
    """Return ``w``: the default ``use`` of :func:`forward` (no gather)."""
    return w


def forward(params: Sequence[dict[str, jax.Array]], x: jax.Array,
            use: Callable[[jax.Array], jax.Array] = identity,
            out_sharding: Any = None, remat: bool | Callable = False) -> jax.Array:
    """Run the blocks ``x + relu(x @ w_in) @ w_out``.

    Parameters
    ----------
    params : sequence of dict
        The blocks' weights, as :func:`init_params` makes them.
    x : jax.Array
        Inputs ``(batch, d)``.
    use : callable
        Applied to each weight before it is used: the identity, or the
        all-gather of a fully sharded weight (FSDP).
    out_sharding : PartitionSpec or None
        The layout of ``h @ w_out``; tensor parallelism names it, since the
        product sums over the split hidden units (one all-reduce per block).
    remat : bool or callable
        Wrap each block in ``jax.checkpoint``: its backward pass recomputes
        the block's inside (the hidden activations, and any gathered weight)
        from its input instead of keeping them. A callable is a policy from
        ``jax.checkpoint_policies`` that names what may be kept after all
        (``checkpoint_dots``: the matrix products' outputs).
    """
    def block_fn(block, x):
        hidden = jax.nn.relu(x @ use(block["w_in"]))
        return x + jnp.matmul(hidden, use(block["w_out"]), out_sharding=out_sharding)

    if remat is True:
        block_fn = jax.checkpoint(block_fn)
    elif remat:
        block_fn = jax.checkpoint(block_fn, policy=remat)
    for block in params:
        x = block_fn(block, x)
    return x


def loss(params: Sequence[dict[str, jax.Array]], x: jax.Array, y: jax.Array,
         use: Callable[[jax.Array], jax.Array] = identity,
         out_sharding: Any = None, remat: bool | Callable = False) -> jax.Array:
    """Return the mean squared error of :func:`forward` against ``y``."""
    return jnp.mean((forward(params, x, use, out_sharding, remat) - y) ** 2)
