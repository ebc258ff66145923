"""Training the transformer: precision schemes, the step, and gradient accumulation.

A :class:`Precision` says in which dtype the step computes, what it stores
between steps and in which dtype Adam keeps its moments;
:func:`bytes_per_param` tabulates each scheme. :func:`init_state` and
:func:`make_grad_fn` / :func:`make_step` build a training step on one device
(the layouts of :mod:`.layouts` reuse them per device); ``micro`` splits the
batch into micro-batches run by ``jax.lax.scan`` (gradient accumulation).
:func:`gradient_tolerance` says how far two correct gradients may differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxcourse.numerics import sum_tolerance

from .config import Config
from .model import PLAIN, Hooks, Params, init_params, loss

__all__ = ["PRECISIONS", "Precision", "bytes_per_param", "gradient_tolerance",
           "init_state", "make_grad_fn", "make_step", "optimizer_for",
           "per_example_grad_sum"]


class Precision(NamedTuple):
    """A mixed-precision scheme.

    Attributes
    ----------
    name : str
        Its name in tables.
    compute : dtype
        The dtype of the parameters and activations inside the step.
    store : dtype
        The dtype of the weights kept between steps (the master copy).
    moments : dtype
        The dtype of Adam's two moments.
    """

    name: str
    compute: Any
    store: Any
    moments: Any


#: The schemes compared in the chapter. ``mixed`` is what large runs use:
#: bfloat16 inside the step, float32 master weights and moments, so that an
#: update smaller than bfloat16's resolution (8 bits of mantissa) still moves
#: the weight; this course's step returns its gradients in float32 (those of
#: the float32 master: :func:`bytes_per_param`). bfloat16 has float32's
#: exponent range, so no gradient underflows to zero and no loss scaling is
#: needed (float16 needs it). ``float32`` computes and stores everything in
#: float32; ``bfloat16`` computes, stores and keeps Adam's moments in it.
PRECISIONS: dict[str, Precision] = {
    "float32": Precision("float32", jnp.float32, jnp.float32, jnp.float32),
    "mixed": Precision("mixed", jnp.bfloat16, jnp.float32, jnp.float32),
    "bfloat16": Precision("bfloat16", jnp.bfloat16, jnp.bfloat16, jnp.bfloat16),
}


def _precision(name: str) -> Precision:
    if name not in PRECISIONS:
        raise ValueError(f"unknown precision {name!r}; expected one of "
                         f"{sorted(PRECISIONS)}")
    return PRECISIONS[name]


def bytes_per_param(name: str) -> dict[str, int]:
    """Return the bytes per parameter of each part of a scheme's training state.

    ``weights`` (the copy the step computes with), ``master`` (a separate
    stored copy, when it differs from the compute dtype), ``grads``, ``adam``
    (two moments), their ``total`` at the peak of a step, and ``stored``: what
    lives between steps (the stored weights and Adam's moments, the
    arguments of the compiled step). The compute copy and the gradients are
    made inside the step.

    The gradients are those of this course's step (:func:`make_grad_fn`):
    it casts the stored weights to the compute dtype inside the loss, so the
    gradient with respect to them comes back in the stored dtype. In
    ``"mixed"`` that is float32: 2 + 4 + 4 + 8 = 18 bytes. The 16 bytes of
    ZeRO's accounting (Rajbhandari et al. 2020, section 3.1: float16 weights
    and gradients, float32 master weights and Adam's two moments) keep the
    gradients in the 2-byte compute dtype, which this step does not.
    """
    p = _precision(name)
    size = lambda dtype: int(np.dtype(dtype).itemsize)  # noqa: E731
    master = size(p.store) if p.store != p.compute else 0
    parts = {"weights": size(p.compute), "master": master, "grads": size(p.store),
             "adam": 2 * size(p.moments)}
    parts["total"] = sum(parts.values())
    parts["stored"] = size(p.store) + parts["adam"]
    return parts


def optimizer_for(name: str, learning_rate: float = 1e-3
                  ) -> optax.GradientTransformation:
    """Return Adam with its moments in the scheme's dtype."""
    p = _precision(name)
    # optax keeps the first moment in mu_dtype and the second in the
    # parameters' dtype (the stored weights').
    return optax.adam(learning_rate, mu_dtype=p.moments)


def init_state(key: jax.Array, cfg: Config, precision: str = "float32",
               learning_rate: float = 1e-3) -> dict[str, Any]:
    """Return ``{"params", "opt"}``: stored weights and Adam's state."""
    p = _precision(precision)
    params = init_params(key, cfg, p.store)
    opt = optimizer_for(precision, learning_rate).init(params)
    return {"params": params, "opt": opt}


def make_grad_fn(cfg: Config, precision: str = "float32", hooks: Hooks = PLAIN,
                 remat: str = "none", micro: int = 1,
                 reduce: Callable[[jax.Array], jax.Array] = lambda v: v,
                 unroll: bool = False, loss_chunk: int = 0) -> Callable:
    """Return ``grad_fn(params, inputs, targets) -> (loss, grads)``.

    The stored weights are cast to the compute dtype inside the loss, so the
    gradients come back in the stored dtype. ``micro > 1`` splits the batch
    into that many equal micro-batches and accumulates their gradients in a
    ``scan``: the same mean, with the activations of one micro-batch alive at
    a time. ``reduce`` is applied to each micro-batch's loss (a layout's mean
    over devices). ``unroll`` is :func:`~.model.blocks`'; ``loss_chunk`` is
    :func:`~.model.loss`'s ``chunk``.
    """
    p = _precision(precision)

    def one(params: Params, inputs: jax.Array, targets: jax.Array):
        def local(stored: Params) -> jax.Array:
            weights = jax.tree.map(lambda w: w.astype(p.compute), stored)
            return reduce(loss(weights, inputs, targets, cfg, hooks, remat, unroll,
                               loss_chunk))
        return jax.value_and_grad(local)(params)

    if micro == 1:
        return one

    def accumulated(params: Params, inputs: jax.Array, targets: jax.Array):
        if inputs.shape[0] % micro:
            raise ValueError(f"a batch of {inputs.shape[0]} does not split into "
                             f"{micro} micro-batches")
        split = lambda a: a.reshape(micro, a.shape[0] // micro, *a.shape[1:])  # noqa: E731

        def add(carry, batch):
            value, grads = one(params, *batch)
            return jax.tree.map(jnp.add, carry, (value, grads)), None

        zero = (jnp.zeros((), jnp.float32), jax.tree.map(jnp.zeros_like, params))
        (value, grads), _ = jax.lax.scan(add, zero, (split(inputs), split(targets)))
        return value / micro, jax.tree.map(lambda g: g / micro, grads)

    return accumulated


def make_step(cfg: Config, precision: str = "float32", hooks: Hooks = PLAIN,
              remat: str = "none", micro: int = 1, learning_rate: float = 1e-3,
              reduce: Callable[[jax.Array], jax.Array] = lambda v: v,
              unroll: bool = False, loss_chunk: int = 0) -> Callable:
    """Return ``step(state, inputs, targets) -> (state, loss)`` with Adam."""
    grad_fn = make_grad_fn(cfg, precision, hooks, remat, micro, reduce, unroll,
                           loss_chunk)
    optimizer = optimizer_for(precision, learning_rate)

    def step(state: dict[str, Any], inputs: jax.Array, targets: jax.Array):
        value, grads = grad_fn(state["params"], inputs, targets)
        updates, opt = optimizer.update(grads, state["opt"], state["params"])
        params = optax.apply_updates(state["params"], updates)
        return {"params": params, "opt": opt}, value

    return step


def per_example_grad_sum(params: Params, inputs: jax.Array, targets: jax.Array,
                         cfg: Config) -> Params:
    """Return ``Σ_e |g_e|``: the absolute gradients of each example's share, summed.

    The batch's gradient is ``Σ_e g_e`` with ``g_e`` the gradient of example
    ``e``'s loss divided by the batch size; this is the scale its rounding
    error is measured against (:func:`gradient_tolerance`).
    """
    n = inputs.shape[0]

    def share(i, t):
        return jax.grad(lambda p: loss(p, i[None], t[None], cfg) / n)(params)

    grads = jax.vmap(share)(inputs, targets)
    return jax.tree.map(lambda g: jnp.sum(jnp.abs(g), axis=0), grads)


def gradient_tolerance(cfg: Config, batch: int, seq: int) -> float:
    """Return the relative error two correct float32 gradients may show.

    A weight's gradient is a sum over the ``batch · seq`` tokens, and each
    token's term comes through a chain of sums: per layer, forward and
    backward, the products over ``d``, the attention's ``heads · h``, the
    MLP's ``hidden`` and attention's ``seq``; and the output layer's ``d``
    and softmax's ``vocab``. To first order the errors of chained sums add,
    so two evaluations in different orders (another micro-batching, another
    split over devices) differ by at most ``2 γ_n`` of ``Σ_e |g_e|``
    (:func:`per_example_grad_sum`), with ``n`` the sum of those lengths
    (:func:`jaxcourse.numerics.sum_tolerance`). Apply it normwise, per array
    (the largest error against the largest ``Σ_e |g_e|``): an entry that is
    a sum cancelling along the backward chain (a row of the embedding's
    gradient) can be off by more than its own ``Σ_e |g_e|`` allows.
    """
    chain = 2 * cfg.layers * (cfg.d_model + cfg.heads * cfg.head_dim + cfg.hidden + seq)
    return 2 * sum_tolerance(batch * seq + chain + cfg.d_model + cfg.vocab)
