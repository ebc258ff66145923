"""Memory: the training state per device, ZeRO's stages, and activations per token.

:func:`state_bytes` counts, weight by weight, what one device stores between
steps under a layout and a precision scheme (the compiled step's arguments);
:func:`zero_bytes` tabulates ZeRO's three stages from
:func:`~.training.bytes_per_param`; :func:`activation_bytes` measures what a
step keeps per token for its backward pass, under each remat policy, from
the compiled program and from JAX's list of saved residuals. The readers of
XLA's analyses are chapter 6's (:mod:`jaxcourse.scaling.memory`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from jaxcourse.scaling.memory import compiled_memory, residual_bytes, saved_residuals

from .config import Config, param_count
from .layouts import DATA, MODEL, layout_switches, param_specs
from .model import init_params, loss
from .training import PRECISIONS, bytes_per_param, make_grad_fn

__all__ = ["activation_bytes", "state_bytes", "zero_bytes"]


def _itemsize(dtype: Any) -> int:
    return int(np.dtype(dtype).itemsize)


def state_bytes(cfg: Config, layout: str, precision: str = "float32", data: int = 1,
                model: int = 1) -> dict[str, int]:
    """Return the bytes of the training state one device stores between steps.

    Each weight is divided by the devices its spec splits it over
    (:func:`~.layouts.param_specs`); ``params`` are the stored weights (the
    master copy), ``adam`` the two moments, ``count`` Adam's step counter
    (an ``int32``), and ``total``.
    """
    layout_switches(layout)
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}")
    p = PRECISIONS[precision]
    specs = param_specs(layout)
    sizes = {DATA: data, MODEL: model, None: 1}
    shapes = jax.eval_shape(lambda: init_params(jax.random.key(0), cfg))
    leaves = dict(shapes["layers"]) | {k: v for k, v in shapes.items() if k != "layers"}
    numbers = 0
    for name, leaf in leaves.items():
        cut = math.prod(sizes[axis] for axis in tuple(specs[name]))
        numbers += math.prod(leaf.shape) // cut
    parts = {"params": numbers * _itemsize(p.store),
             "adam": numbers * (_itemsize(p.moments) + _itemsize(p.store)),
             "count": 4}
    parts["total"] = sum(parts.values())
    return parts


def zero_bytes(cfg: Config, stage: int, devices: int, precision: str = "mixed"
               ) -> dict[str, float]:
    """Return the bytes per device of ZeRO's ``stage`` (1, 2 or 3) over ``devices``.

    Stage 1 splits the optimizer's state (the master weights and Adam's
    moments) over the data-parallel devices, stage 2 the gradients too, and
    stage 3 (FSDP) the compute weights as well; what is not split is whole on
    every device. From :func:`~.training.bytes_per_param`, times the
    parameter count.
    """
    if stage not in (1, 2, 3):
        raise ValueError(f"ZeRO has stages 1, 2 and 3, not {stage!r}")
    per = bytes_per_param(precision)
    n = param_count(cfg)
    split = {"master": True, "adam": True, "grads": stage >= 2, "weights": stage >= 3}
    out = {part: per[part] * n / (devices if cut else 1) for part, cut in split.items()}
    out["total"] = sum(out.values())
    return out


def activation_bytes(cfg: Config, remat: str, batch: int, seq: int,
                     precision: str = "float32", measure_compiled: bool = True
                     ) -> dict[str, Any]:
    """Return what a training step keeps per token for its backward pass.

    ``compiled``: the growth of the compiled gradient's scratch memory
    (``temp`` of ``memory_analysis()``) from ``batch`` to ``2 batch``
    sequences, per token added: what grows with the tokens, the residuals
    kept across the blocks and the largest buffers alive inside one.
    ``residuals``: the bytes per token of the residuals JAX names
    (:func:`jaxcourse.scaling.saved_residuals`), and ``names``: those
    residuals, grouped. ``measure_compiled=False`` skips the two
    compilations (``compiled`` is then ``None``).
    """
    grad_fn = make_grad_fn(cfg, precision, remat=remat)
    params = jax.eval_shape(lambda: init_params(jax.random.key(0), cfg,
                                                PRECISIONS[precision].store))
    temps, kept = [], []
    compute = PRECISIONS[precision].compute
    real = init_params(jax.random.key(0), cfg, PRECISIONS[precision].store)
    for b in (batch, 2 * batch):
        if measure_compiled:
            tokens = jax.ShapeDtypeStruct((b, seq), np.int32)
            compiled = jax.jit(grad_fn).lower(params, tokens, tokens).compile()
            temps.append(compiled_memory(compiled)["temp"])
        zeros = np.zeros((b, seq), np.int32)
        kept.append(saved_residuals(
            lambda p, z=zeros: loss(jax.tree.map(lambda w: w.astype(compute), p), z, z,
                                    cfg, remat=remat), real))
    # What grows with the tokens: the weights (and their casts) are kept
    # whatever the batch, so the difference leaves them out.
    added = batch * seq
    grew = [r for r in kept[1] if r not in kept[0]]
    return {"compiled": (temps[1] - temps[0]) / added if measure_compiled else None,
            "residuals": (residual_bytes(kept[1]) - residual_bytes(kept[0])) / added,
            "names": grew}
