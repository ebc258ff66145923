"""A GPipe pipeline: the blocks cut into stages, micro-batches passed along.

Each of ``p`` devices (the mesh axis ``"stage"``) holds ``layers / p``
consecutive blocks. At every tick each stage runs its blocks on what it
holds, then passes the result to the next stage with ``ppermute``, together
with a flag saying whether it is a micro-batch or nothing. The first stage
takes a new micro-batch at the ticks its ``feed`` says, the last one stores
what it computed only when the flag it received says it was a micro-batch.
Whether a stage was busy at a tick is that flag, read from the run: with the
default feed (a micro-batch at each of the first ``m`` ticks) ``m``
micro-batches need ``m + p - 1`` ticks, and the idle slots, ``p (p - 1)`` of
``p (m + p - 1)``, are the bubble (:func:`bubble_fraction`); with another
feed the flags say what that schedule did.

:func:`gpipe_grad` is the pipeline's backward pass: JAX differentiates the
``scan`` over ticks, the ``ppermute`` (its transpose sends the cotangents
back, from each stage to the one before) and ``shard_map``. Differentiated
as a whole, the forward pass keeps what each tick's blocks need for the
backward pass until it runs, so each stage holds the activations of every
micro-batch it ran: ``m`` of them, GPipe's memory (:func:`in_flight`). 1F1B
starts a micro-batch's backward pass as soon as it has left the last stage,
so stage ``s`` holds at most ``p - s`` (by formula: this module does not run
that schedule).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.scaling.memory import compiled_memory, residual_bytes, saved_residuals

from .config import Config
from .model import Params, blocks, init_params

__all__ = ["SCHEDULES", "STAGE", "bubble_fraction", "default_feed", "gpipe",
           "gpipe_grad", "gpipe_grad_memory", "in_flight", "micro_batch_residuals"]

STAGE = "stage"

#: The schedules :func:`in_flight` counts.
SCHEDULES = ("GPipe", "1F1B")


def bubble_fraction(stages: int, micro: int) -> float:
    """Return GPipe's idle share of a step by formula: ``(p - 1) / (m + p - 1)``."""
    return (stages - 1) / (micro + stages - 1)


def default_feed(stages: int, micro: int) -> np.ndarray:
    """Return GPipe's feed: a micro-batch at each of the first ``m`` ticks.

    One flag per tick, ``m + p - 1`` of them, for :func:`gpipe`'s ``feed``.
    """
    return np.arange(micro + stages - 1) < micro


def in_flight(schedule: str, stages: int, micro: int) -> list[int]:
    """Return, per stage, the most micro-batches whose activations it holds at once.

    GPipe runs every forward pass before any backward pass: each stage holds
    all ``m``. 1F1B (one forward, one backward; PipeDream-Flush) is
    Megatron-LM's ``forward_backward_pipelining_without_interleaving``
    (``megatron/core/pipeline_parallel/schedules.py``): stage ``s`` runs
    ``min(p - s - 1, m)`` warm-up forward passes, then alternates one forward
    and one backward, so it holds at most ``min(m, p - s)``. By formula, from
    the two schedules' definitions: this module runs neither backward
    schedule tick by tick (:func:`gpipe_grad` is JAX's backward pass of the
    whole forward run, which keeps GPipe's ``m``).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    if stages < 1 or micro < 1:
        raise ValueError(f"stages and micro-batches must be at least 1, not {stages}, "
                         f"{micro}")
    if schedule == "GPipe":
        return [micro] * stages
    return [min(micro, stages - s) for s in range(stages)]


def _check_feed(feed: Any, stages: int, micro: int) -> np.ndarray:
    """Return ``feed`` as booleans, or say why it cannot feed ``micro`` of them."""
    feed = np.asarray(default_feed(stages, micro) if feed is None else feed, dtype=bool)
    if feed.ndim != 1 or int(feed.sum()) != micro:
        raise ValueError(f"the feed must be one flag per tick with {micro} set, "
                         f"not {feed.astype(int).tolist()}")
    last = int(np.flatnonzero(feed)[-1])
    if last + stages > feed.size:
        raise ValueError(f"the last micro-batch, fed at tick {last}, "
                         f"needs {stages} ticks to cross {stages} stages; the feed has "
                         f"{feed.size}")
    return feed


def _per_stage(cfg: Config, stages: int, remat: str) -> Callable:
    """One stage's program for ``shard_map``: ``(layers, xs, feed) -> (ys, busy)``."""
    forward = [(i, i + 1) for i in range(stages - 1)]

    def per_stage(layers: Params, xs: jax.Array, feed: jax.Array):
        m = xs.shape[0]
        stage = jax.lax.axis_index(STAGE)
        first, last = stage == 0, stage == stages - 1

        def tick(carry, take):
            held, valid, taken, stored, ys = carry
            # The first stage reads the feed; every other stage works on what
            # it received, and its flag says whether that was a micro-batch.
            fresh = jax.lax.dynamic_index_in_dim(xs, jnp.minimum(taken, m - 1), 0,
                                                 keepdims=False)
            busy = jnp.where(first, take, valid)
            out = blocks(layers, jnp.where(first, fresh, held), cfg, remat=remat)
            keep = last & busy
            ys = jnp.where(keep, jax.lax.dynamic_update_index_in_dim(
                ys, out, jnp.minimum(stored, m - 1), 0), ys)
            sent, flag = jax.lax.ppermute((out, busy), STAGE, forward)
            return (sent, flag, taken + take, stored + keep, ys), busy

        start = jax.tree.map(
            lambda x: jax.lax.pcast(x, STAGE, to="varying"),
            (jnp.zeros_like(xs[0]), jnp.zeros((), bool), jnp.zeros((), jnp.int32),
             jnp.zeros((), jnp.int32), jnp.zeros_like(xs)))
        (*_, ys), busy = jax.lax.scan(tick, start, feed)
        # Only the last stage holds the outputs; the others hold zeros.
        return jax.lax.psum(ys, STAGE), busy[None]

    return per_stage


def _placed(mesh: Any, layers: Params, *replicated: Any) -> tuple:
    """Put the layers split over ``"stage"`` and the rest whole on every stage."""
    whole = NamedSharding(mesh, P())
    return (jax.device_put(layers, NamedSharding(mesh, P(STAGE))),
            *(jax.device_put(x, whole) for x in replicated))


def _stages(cfg: Config, mesh: Any) -> int:
    p = mesh.shape[STAGE]
    if cfg.layers % p:
        raise ValueError(f"{cfg.layers} layers do not split into {p} stages")
    return p


def gpipe(cfg: Config, mesh: Any, remat: str = "none") -> Callable:
    """Return ``run(layers, xs, feed=None) -> (ys, busy)``: the blocks, pipelined.

    ``run`` places its arguments on ``mesh`` and calls a jitted ``shard_map``
    over its axis ``"stage"``.

    ``layers`` are the stacked blocks (split over the stages along their
    leading axis), ``xs`` the micro-batches of activations ``(m, batch, seq,
    d)``; ``feed`` says at which ticks the first stage takes the next
    micro-batch (one flag per tick, ``m`` of them set; by default
    :func:`default_feed`, GPipe's). ``ys`` are the blocks' outputs, as
    :func:`~.model.blocks` gives them, and ``busy`` is ``(stages, ticks)``:
    the flag each stage's input carried at each tick, as the run passed it
    along (the schedule as it ran, not as a formula says). ``remat`` is a
    policy of :data:`~.model.REMAT_POLICIES` for each block.
    """
    p = _stages(cfg, mesh)
    piped = jax.jit(jax.shard_map(_per_stage(cfg, p, remat), mesh=mesh,
                                  in_specs=(P(STAGE), P(), P()),
                                  out_specs=(P(), P(STAGE))))

    def run(layers: Params, xs: jax.Array, feed: Any = None):
        feed = _check_feed(feed, p, xs.shape[0])
        return piped(*_placed(mesh, layers, xs, feed))

    return run


def _grad_program(cfg: Config, mesh: Any, remat: str) -> Callable:
    """Return the jitted backward pass, ``(layers, xs, cotangent, feed) -> grads``."""
    p = _stages(cfg, mesh)
    piped = jax.shard_map(_per_stage(cfg, p, remat), mesh=mesh,
                          in_specs=(P(STAGE), P(), P()), out_specs=(P(), P(STAGE)))

    def grad(layers: Params, xs: jax.Array, cotangent: jax.Array, feed: jax.Array):
        _, pullback = jax.vjp(lambda w, x: piped(w, x, feed)[0], layers, xs)
        return pullback(cotangent)

    return jax.jit(grad)


def gpipe_grad(cfg: Config, mesh: Any, remat: str = "none") -> Callable:
    """Return the pipeline's backward pass, ``grad(layers, xs, cotangent, feed=None)``.

    The vector-Jacobian product of :func:`gpipe`'s ``ys`` with
    ``cotangent`` (the same shape as ``xs``): the gradient of ``Σ ys ·
    cotangent`` with respect to the stacked blocks and to the micro-batches,
    through ``shard_map``, the ``scan`` over ticks and ``ppermute``, as
    ``(d_layers, d_xs)``.
    ``d_layers`` comes back split over ``"stage"``, as the layers are.
    """
    p = _stages(cfg, mesh)
    program = _grad_program(cfg, mesh, remat)

    def grad(layers: Params, xs: jax.Array, cotangent: jax.Array, feed: Any = None):
        feed = _check_feed(feed, p, xs.shape[0])
        return program(*_placed(mesh, layers, xs, cotangent, feed))

    return grad


def gpipe_grad_memory(cfg: Config, mesh: Any, micro: int, batch: int, seq: int,
                      remat: str = "none") -> dict[str, int]:
    """Return the memory of the backward pass for ``micro`` micro-batches, compiled.

    :func:`~jaxcourse.scaling.memory.compiled_memory` of :func:`gpipe_grad`'s
    program.

    Compiled from shapes alone (float32 layers, micro-batches of ``(batch,
    seq, d)``, GPipe's feed), per device: ``temp`` holds what the forward
    pass keeps for the backward pass, for every tick.
    """
    p = _stages(cfg, mesh)
    layers = jax.eval_shape(lambda: init_params(jax.random.key(0), cfg))["layers"]
    whole = NamedSharding(mesh, P())
    layers = jax.tree.map(lambda s: jax.ShapeDtypeStruct(
        s.shape, s.dtype, sharding=NamedSharding(mesh, P(STAGE))), layers)
    xs = jax.ShapeDtypeStruct((micro, batch, seq, cfg.d_model), jnp.float32,
                              sharding=whole)
    feed = jax.ShapeDtypeStruct((micro + p - 1,), jnp.bool_, sharding=whole)
    compiled = _grad_program(cfg, mesh, remat).lower(layers, xs, xs, feed).compile()
    return compiled_memory(compiled)


def micro_batch_residuals(cfg: Config, stages: int, batch: int, seq: int,
                          remat: str = "none") -> int:
    """Return the bytes JAX keeps for one micro-batch's backward pass through one stage.

    The residuals :func:`jaxcourse.scaling.memory.saved_residuals` lists for
    ``layers / stages`` blocks on a float32 micro-batch of ``(batch, seq,
    d)``, less those that are the weights or constants (kept once, whatever
    the number of micro-batches): what a stage holds per micro-batch in
    flight.
    """
    if cfg.layers % stages:
        raise ValueError(f"{cfg.layers} layers do not split into {stages} stages")
    shapes = jax.eval_shape(lambda: init_params(jax.random.key(0), cfg))["layers"]
    layers = jax.tree.map(lambda s: jnp.zeros((cfg.layers // stages, *s.shape[1:]),
                                              s.dtype), shapes)
    x = jnp.zeros((batch, seq, cfg.d_model), jnp.float32)
    kept = saved_residuals(lambda w, v: blocks(w, v, cfg, remat=remat).sum(), layers, x)
    shared = ("from the argument w", "from a constant")
    return residual_bytes([r for r in kept if not r[1].startswith(shared)])
