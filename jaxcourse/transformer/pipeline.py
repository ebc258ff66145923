"""A GPipe pipeline: the blocks cut into stages, micro-batches passed along.

Each of ``p`` devices (the mesh axis ``"stage"``) holds ``layers / p``
consecutive blocks. At every tick each stage runs its blocks on what it
holds, then passes the result to the next stage with ``ppermute``; the first
stage takes a new micro-batch, the last one stores a finished one. ``m``
micro-batches need ``m + p - 1`` ticks, and at each tick a stage is busy only
if a micro-batch is there: the idle slots, ``p (p - 1)`` of ``p (m + p - 1)``,
are the bubble.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .config import Config
from .model import Params, blocks

__all__ = ["STAGE", "bubble_fraction", "gpipe"]

STAGE = "stage"


def bubble_fraction(stages: int, micro: int) -> float:
    """Return GPipe's idle share of a step by formula: ``(p - 1) / (m + p - 1)``."""
    return (stages - 1) / (micro + stages - 1)


def gpipe(cfg: Config, mesh: Any) -> Callable:
    """Return ``run(layers, xs) -> (ys, busy)``: the blocks, pipelined over ``"stage"``.

    ``run`` places its arguments on ``mesh`` and calls a jitted ``shard_map``.

    ``layers`` are the stacked blocks (split over the stages along their
    leading axis), ``xs`` the micro-batches of activations ``(m, batch, seq,
    d)``; ``ys`` are the blocks' outputs, as :func:`~.model.blocks` gives
    them, and ``busy`` is ``(stages, ticks)``: whether each stage had a
    micro-batch at each tick (the schedule as it ran).
    """
    p = mesh.shape[STAGE]
    if cfg.layers % p:
        raise ValueError(f"{cfg.layers} layers do not split into {p} stages")
    forward = [(i, i + 1) for i in range(p - 1)]

    def per_stage(layers: Params, xs: jax.Array):
        m = xs.shape[0]
        stage = jax.lax.axis_index(STAGE)

        def tick(carry, t):
            held, ys = carry
            fresh = jax.lax.dynamic_index_in_dim(xs, jnp.minimum(t, m - 1), 0, False)
            out = blocks(layers, jnp.where(stage == 0, fresh, held), cfg)
            busy = (t >= stage) & (t - stage < m)
            done = jnp.clip(t - (p - 1), 0, m - 1)
            keep = (stage == p - 1) & busy
            stored = jax.lax.dynamic_update_index_in_dim(ys, out, done, 0)
            ys = jnp.where(keep, stored, ys)
            return (jax.lax.ppermute(out, STAGE, forward), ys), busy

        start = (jax.lax.pcast(jnp.zeros_like(xs[0]), STAGE, to="varying"),
                 jax.lax.pcast(jnp.zeros_like(xs), STAGE, to="varying"))
        (_, ys), busy = jax.lax.scan(tick, start, jnp.arange(m + p - 1))
        # Only the last stage holds the outputs; the others hold zeros.
        return jax.lax.psum(ys, STAGE), busy[None]

    piped = jax.jit(jax.shard_map(per_stage, mesh=mesh, in_specs=(P(STAGE), P()),
                                  out_specs=(P(), P(STAGE))))

    def run(layers: Params, xs: jax.Array):
        layers = jax.device_put(layers, NamedSharding(mesh, P(STAGE)))
        return piped(layers, jax.device_put(xs, NamedSharding(mesh, P())))

    return run
