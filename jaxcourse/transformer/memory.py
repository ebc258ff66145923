"""Memory: the state per device, ZeRO's stages, activations per token, and scores.

:func:`state_bytes` counts, weight by weight, what one device stores between
steps under a layout and a precision scheme (the compiled step's arguments);
:func:`zero_bytes` tabulates ZeRO's three stages from
:func:`~.training.bytes_per_param`; :func:`activation_bytes` measures what a
step keeps per token for its backward pass, under each remat policy, from
the compiled program and from JAX's list of saved residuals;
:func:`attention_bytes` counts the scores each attention form holds at once
(:func:`attention_hbm_bytes`: those in the chip's main memory), and
:func:`gathered_bytes` the weights FSDP gathers whole inside a step.
The readers of XLA's analyses are chapter 6's (:mod:`jaxcourse.scaling.memory`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from jaxcourse.scaling.memory import compiled_memory, residual_bytes, saved_residuals

from .attention_forms import DEFAULT_BLOCKS, splash_block
from .config import Config, param_count, param_parts
from .layouts import DATA, MODEL, layout_switches, param_specs
from .model import init_params, loss
from .training import PRECISIONS, bytes_per_param, make_grad_fn

__all__ = ["activation_bytes", "attention_bytes", "attention_hbm_bytes",
           "gathered_bytes", "residuals_per_token", "state_bytes", "zero_bytes"]


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


def residuals_per_token(cfg: Config, remat: str = "full", precision: str = "mixed",
                        chunked_loss: bool = False, layout: str = "data parallel",
                        model: int = 1) -> dict[str, int]:
    """Return the bytes per token of the residuals JAX lists for a step, by formula.

    What :func:`activation_bytes` reads from ``print_saved_residuals``, counted
    from the model's shapes, so that it holds for models too large to list
    (tested equal to the list). ``c`` is the compute dtype's itemsize (2 for
    ``"mixed"`` and ``"bfloat16"``, 4 for ``"float32"``); per layer, a block
    keeps

    - ``full``: its input, ``d`` numbers;
    - ``names``: its input, attention's output and the MLP's hidden units,
      ``2 d + hidden``;
    - ``dots``: the products without a batch dimension, ``3 d + 2 kv + 2
      hidden`` (the input, the query and output projections, the key and
      value projections ``kv = kv_heads · head_dim`` wide, the MLP's gate and
      up projections);

    and the head, once per token: the final norm's float32 input and output
    and its ``c``-byte cast (``(8 + c) d``), the loss's float32 log-softmax
    over the vocabulary (``4 vocab``, the largest part at LLaMA-3's 128,256
    words), and five 4-byte numbers (a target, the norm's two scalars, the
    log-softmax's maximum, the target's index). With ``chunked_loss`` (the
    loss computed a piece of the sequence at a time, each piece recomputed:
    :func:`~.model.loss`'s ``chunk``) the log-softmax is not kept: the head
    keeps the pieces' ``c``-byte inputs instead, and four 4-byte numbers.
    ``"none"`` keeps attention's scores too (``seq`` numbers per head per
    token, several copies): it is measured (:func:`activation_bytes`), not
    planned.

    Under a ``layout`` with tensor parallelism over ``model`` devices, per
    token of the sequences a device scores, the log-softmax is its slice of
    the vocabulary (``4 vocab / model``; :func:`~.layouts.vocab_target_logp`
    keeps the exponentials of its slice and ``1 / Σ exp``, and no maximum);
    with sequence parallelism too, the final norm runs on the device's slice
    of the sequence (its ``8 d`` and two numbers divided by ``model``, rounded
    down: exact where ``model`` divides ``8 (d + 1)``), and the output layer's
    input, gathered, is kept whole (``c d``). The blocks' part
    is per token of the blocks' input, whatever the layout
    (:func:`~.planning.memory_plan` divides it where the sequence is split).

    Returns
    -------
    dict
        ``blocks`` (all layers), ``head`` and ``total``, bytes per token.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}")
    lay = layout_switches(layout)
    c = _itemsize(PRECISIONS[precision].compute)
    d, kv = cfg.d_model, cfg.kv_heads * (cfg.d_model // cfg.heads)
    per_layer = {"full": d, "names": 2 * d + cfg.hidden,
                 "dots": 3 * d + 2 * kv + 2 * cfg.hidden}
    if remat not in per_layer:
        raise ValueError(f"residuals_per_token plans {sorted(per_layer)}, not "
                         f"{remat!r}: without remat a block keeps attention's scores, "
                         "which activation_bytes measures")
    blocks = cfg.layers * c * per_layer[remat]
    vocab_split = model if lay.tp else 1
    seq_split = model if lay.sp else 1
    # The final norm's float32 input and output and its two scalars; the
    # output layer's c-byte input; two 4-byte numbers (the lookup's and the
    # target's indices), then the log-softmax and one more number, or (in
    # chunks) none.
    norm = (8 * d + 2 * 4) // seq_split
    loss_part = 0 if chunked_loss else 4 * cfg.vocab // vocab_split + 4
    head = norm + c * d + 2 * 4 + loss_part
    return {"blocks": blocks, "head": head, "total": blocks + head}


def attention_bytes(cfg: Config, batch: int, seq: int, model: int = 1) -> int:
    """Return the bytes of float32 scores ``cfg.attention``'s form holds at once.

    Per device, in one block, for ``batch`` sequences of ``seq`` positions,
    with the heads split over ``model`` devices (tensor parallelism; pass 1
    otherwise). ``"plain"`` and ``"xla"`` write each head's whole scores:
    ``batch · heads/model · seq · seq · 4``; ``"chunked"`` one chunk's, its
    ``block`` queries (at most ``seq``) against every key: ``batch ·
    heads/model · block · seq · 4``; ``"splash"`` one tile of ``block ×
    block`` (:func:`~.attention_forms.splash_block`), and in the chip's
    on-chip memory (VMEM), not its HBM. One copy: a backward pass has the
    softmax's weights and their gradient beside the scores, a few such
    arrays, which the compiled program says (:func:`activation_bytes`).
    """
    heads = cfg.heads // model
    if cfg.attention == "splash":
        return splash_block(seq, cfg.attention_block) ** 2 * 4
    queries = seq
    if cfg.attention == "chunked":
        queries = min(cfg.attention_block or DEFAULT_BLOCKS["chunked"], seq)
    return batch * heads * queries * seq * 4


def attention_hbm_bytes(cfg: Config, batch: int, seq: int, model: int = 1) -> int:
    """Return the bytes of scores ``cfg.attention``'s form holds at once in HBM.

    :func:`attention_bytes`, but 0 for ``"splash"``: the kernel's one tile of
    scores lives in the chip's on-chip memory (VMEM), never in its HBM. What
    it writes to HBM is its output and a few float32 numbers per query row
    (the softmax's maximum and sum, which the backward pass reads), each the
    size of the queries or smaller: a memory plan has those already.
    """
    if cfg.attention == "splash":
        return 0
    return attention_bytes(cfg, batch, seq, model)


def gathered_bytes(cfg: Config, layout: str, data: int, model: int = 1,
                   itemsize: int = 2) -> int:
    """Return the bytes of the weights FSDP gathers whole inside a step, at most.

    :func:`~.layouts.layout_hooks` gathers each FSDP-cut weight over
    ``"data"`` where it is used, in the compute dtype (``itemsize`` bytes a
    number): the embedding, the final norm and the output layer (under
    tensor parallelism each device's slice of the vocabulary), alive from
    the forward pass into the backward one, and each block's weights (their
    tensor-parallel slice) while that block runs: one block's at a time.
    Nothing is gathered without FSDP, or when ``data`` is 1.
    """
    lay = layout_switches(layout)
    if not lay.fsdp or data == 1:
        return 0
    parts = param_parts(cfg)
    split = model if lay.tp else 1
    outer = (parts["embed"] + parts["unembed"]) // split + cfg.d_model
    one_block = (parts["attention"] + parts["mlp"]) // cfg.layers // split
    return (outer + one_block + 2 * cfg.d_model) * itemsize


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
