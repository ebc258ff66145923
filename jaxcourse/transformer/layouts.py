"""The transformer's layouts: where each weight lives, and the step per device.

A layout (:data:`LAYOUTS`) is three switches: ``fsdp`` cuts every weight
over the ``"data"`` axis and gathers it where it is used (ZeRO-3); ``tp``
splits attention by heads and the MLP by hidden units over ``"model"``
(Megatron-LM), and the embedding and the output layer by the vocabulary
(:func:`vocab_lookup`, :func:`vocab_target_logp`); ``sp`` keeps the
activations between the sub-blocks (the norms' inputs and outputs) split
along the sequence over ``"model"`` too.
The batch is always split over ``"data"``. :func:`param_specs` says where
each weight lives, :func:`layout_hooks` gives :class:`~.model.Hooks` that
put in the collectives, and :func:`sharded_grad_fn` / :func:`sharded_step`
run the one-device code of :mod:`.model` and :mod:`.training` per device
with ``jax.shard_map``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from .config import Config
from .model import Hooks, Params
from .training import make_grad_fn, optimizer_for

__all__ = ["DATA", "LAYOUTS", "MODEL", "Layout", "batch_spec", "layout_hooks",
           "layout_switches",
           "check_vocab", "param_specs", "place", "sharded_grad_fn", "sharded_step",
           "spec_tree", "vocab_lookup", "vocab_target_logp"]

DATA, MODEL = "data", "model"
_COLUMNS = ("wq", "wk", "wv", "w_gate", "w_up")   # (layers, d, out): split out
_ROWS = ("wo", "w_down")                          # (layers, in, d): split in
_NORMS = ("attn_norm", "mlp_norm")


class Layout(NamedTuple):
    """A layout's switches (see the module's docstring)."""

    fsdp: bool = False
    tp: bool = False
    sp: bool = False


#: The layouts the chapter compares.
LAYOUTS: dict[str, Layout] = {
    "data parallel": Layout(),
    "FSDP": Layout(fsdp=True),
    "TP": Layout(tp=True),
    "TP + SP": Layout(tp=True, sp=True),
    "FSDP + TP": Layout(fsdp=True, tp=True),
}


def layout_switches(name: str) -> Layout:
    """Return ``name``'s :class:`Layout`, or raise a ``ValueError`` listing them."""
    if name not in LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; expected one of {list(LAYOUTS)}")
    return LAYOUTS[name]


def param_specs(layout: str) -> dict[str, P]:
    """Return the ``PartitionSpec`` of each weight, by its name.

    Tensor parallelism splits the queries, keys, values, gate and up
    projections by their output columns (heads, hidden units) and the two
    output projections by their input rows, so that each device computes a
    partial sum of each sub-block's output; it splits the embedding (vocab ×
    d) and the output layer (d × vocab) by the vocabulary, as Megatron-LM's
    ``VocabParallelEmbedding`` and its output layer do. FSDP cuts the other
    dimension of each matrix, and every norm's scale, over ``"data"``; the
    embedding tables along the vocabulary, or along ``d`` where tensor
    parallelism has the vocabulary.
    """
    lay = layout_switches(layout)
    f = DATA if lay.fsdp else None
    m = MODEL if lay.tp else None
    specs = {name: P(None, f, m) for name in _COLUMNS}
    specs |= {name: P(None, m, f) for name in _ROWS}
    specs |= {name: P(None, f) for name in _NORMS}
    if lay.tp:
        specs |= {"embed": P(m, f), "final_norm": P(f), "unembed": P(f, m)}
    else:
        specs |= {"embed": P(f, None), "final_norm": P(f), "unembed": P(f, None)}
    return specs


def check_vocab(cfg: Config, layout: str, model: int) -> None:
    """Refuse a vocabulary that ``model`` devices cannot split evenly.

    Megatron-LM pads the vocabulary instead (``--make-vocab-size-divisible-by``,
    128 by default, times the tensor-parallel size), adding rows no token
    uses. The course refuses: padding would change the model's parameters
    (their count, their init, the state's bytes), and a split step would no
    longer equal the one-device step it is tested against. LLaMA-3's 128,256
    words are 2^8 · 501: any power of two up to 256 splits them.

    Raises
    ------
    ValueError
        If ``layout`` splits the vocabulary and ``model`` does not divide it.
    """
    if layout_switches(layout).tp and cfg.vocab % model:
        raise ValueError(f"tensor parallelism splits the vocabulary over {model} "
                         f"devices; {cfg.vocab} words do not split evenly (Megatron "
                         "pads the vocabulary; the course does not: pick a model "
                         "axis that divides it)")


def _mine(tokens: jax.Array, local: int) -> tuple[jax.Array, jax.Array]:
    """Return ``tokens`` as rows of this device's slice, and where they are not mine.

    Slice ``i`` of the vocabulary holds the words ``[i·local, (i+1)·local)``;
    a word outside it becomes row ``local``, one past the end.
    """
    rows = tokens - jax.lax.axis_index(MODEL) * local
    outside = (rows < 0) | (rows >= local)
    return jnp.where(outside, local, rows), outside


def vocab_lookup(embed: jax.Array, tokens: jax.Array, sequence: bool = False
                 ) -> jax.Array:
    """Embed ``tokens`` (batch, seq) from this device's rows of a split table.

    Run inside ``shard_map``: ``embed`` is this device's ``vocab / model``
    rows. Each device looks up the tokens in its range and writes zeros for
    the others; the sum over ``"model"`` (``psum``) is then the whole lookup
    (Megatron-LM, ``megatron/core/tensor_parallel/layers.py``,
    ``VocabParallelEmbedding.forward``: ``output_parallel[input_mask, :] =
    0.0``, then ``reduce_from_tensor_model_parallel_region``). With
    ``sequence`` (sequence parallelism) the sum is scattered along the
    sequence instead (``psum_scatter``; Megatron's
    ``reduce_scatter_to_sequence_parallel_region``). Backward, the ``psum``
    needs no communication (each device's rows take the whole gradient,
    masked) and the ``psum_scatter`` becomes an all-gather.
    """
    rows, _ = _mine(tokens, embed.shape[0])
    # A row past the end reads as zeros, and its gradient is dropped: the
    # mask costs no (batch, seq, d) array kept for the backward pass.
    x = jnp.take(embed, rows, axis=0, mode="fill", fill_value=0)
    if sequence:
        return jax.lax.psum_scatter(x, MODEL, scatter_dimension=1, tiled=True)
    return jax.lax.psum(x, MODEL)


def vocab_target_logp(x: jax.Array, unembed: jax.Array, targets: jax.Array
                      ) -> jax.Array:
    """Return each target's log-probability, from this device's slice of the logits.

    Run inside ``shard_map``: ``unembed`` is this device's ``vocab / model``
    columns, so ``x @ unembed`` is its slice of the logits, in float32. The
    log-softmax over the whole vocabulary takes three collectives over
    ``"model"``, of one number per token each (Megatron-LM,
    ``megatron/core/tensor_parallel/cross_entropy.py``,
    ``vocab_parallel_cross_entropy``): the row's maximum (``pmax``, for a
    stable exponential; a constant for the gradient), the sum of the
    exponentials (``psum``), and the target's logit, which one device holds
    and the others write as zero (``psum``): ``log p = logit_target - max -
    log Σ exp(logit - max)``. Backward, each device's gradient of ``x`` is a
    partial sum over its slice of the vocabulary; JAX sums it over
    ``"model"`` (the transpose of the implicit ``pcast`` of ``x`` to
    varying: Megatron's ``copy_to_tensor_model_parallel_region``).
    """
    logits = (x @ unembed).astype(jnp.float32)
    top = jax.lax.pmax(jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True)),
                       MODEL)
    shifted = logits - top
    total = jax.lax.psum(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True), MODEL)
    rows, _ = _mine(targets, unembed.shape[-1])
    picked = jnp.take_along_axis(shifted, rows[..., None], axis=-1, mode="fill",
                                 fill_value=0)
    picked = jax.lax.psum(picked, MODEL)
    return picked - jnp.log(total)


def spec_tree(tree: Any, layout: str) -> Any:
    """Return the spec of every leaf of ``tree`` (weights, or Adam's state of them).

    A leaf is placed by its dict key (:func:`param_specs`); any other leaf
    (Adam's step count) is replicated.
    """
    specs = param_specs(layout)

    def spec_of(path, leaf):
        key = getattr(path[-1], "key", None) if path else None
        return specs.get(key, P())

    return jax.tree_util.tree_map_with_path(spec_of, tree)


def place(tree: Any, layout: str, mesh: Any, tokens: bool = False) -> Any:
    """Put ``tree`` on ``mesh`` as ``layout`` says (``tokens=True``: as a batch)."""
    from jax.sharding import NamedSharding

    specs = (jax.tree.map(lambda _: batch_spec(layout), tree) if tokens
             else spec_tree(tree, layout))
    return jax.device_put(tree, jax.tree.map(lambda s: NamedSharding(mesh, s), specs))


def batch_spec(layout: str) -> P:
    """Return the tokens' spec: batch over "data", sequence over "model" (SP)."""
    return P(DATA, MODEL if layout_switches(layout).sp else None)


def layout_hooks(layout: str) -> Hooks:
    """Return the hooks that put ``layout``'s collectives into the model.

    ``use`` all-gathers each FSDP-cut weight over ``"data"`` (its transpose in
    the backward pass is a reduce-scatter of the gradient). ``leave`` sums a
    sub-block's partial output over ``"model"`` (``psum``), or with sequence
    parallelism sums and scatters it along the sequence (``psum_scatter``),
    and ``enter`` then gathers the normed sequence back (``all_gather``).
    Under tensor parallelism ``lookup`` is :func:`vocab_lookup` and
    ``target_logp`` :func:`vocab_target_logp` (the split vocabulary); with
    sequence parallelism ``head`` gathers the sequence (the hidden states
    and the targets) before the output layer.
    """
    lay = layout_switches(layout)
    specs = param_specs(layout)

    def use(weights: Params) -> Params:
        if not lay.fsdp:
            return weights
        out = {}
        for name, w in weights.items():
            spec = tuple(specs[name])
            # Inside the scan a block's weights have lost the layers axis.
            axis = spec.index(DATA) - (len(spec) - w.ndim)
            out[name] = jax.lax.all_gather(w, DATA, axis=axis, tiled=True)
        return out

    if lay.sp:
        gather = lambda x: jax.lax.all_gather(x, MODEL, axis=1, tiled=True)  # noqa: E731
        leave = lambda x: jax.lax.psum_scatter(x, MODEL, scatter_dimension=1,  # noqa: E731
                                               tiled=True)
        # The embedding needs every position's token (a gather of int32s,
        # small); the output layer every position's hidden state, as
        # Megatron gathers the sequence before its output layer.
        lookup = lambda e, t: vocab_lookup(e, gather(t), sequence=True)  # noqa: E731
        return Hooks(use, gather, leave, lookup, gather, vocab_target_logp)
    if lay.tp:
        # Megatron-LM's pair: entering, the same activation on every device,
        # marked as about to vary (no communication forward; backward, one
        # all-reduce of its gradient, rather than one per projection that
        # reads it); leaving, the partial outputs summed.
        return Hooks(use, enter=lambda x: jax.lax.pcast(x, MODEL, to="varying"),
                     leave=lambda x: jax.lax.psum(x, MODEL), lookup=vocab_lookup,
                     target_logp=vocab_target_logp)
    return Hooks(use)


def _reduce(layout: str) -> Callable[[jax.Array], jax.Array]:
    # The loss is a mean over the tokens: each device's mean, averaged over
    # the devices holding different tokens. With a split vocabulary every
    # "model" device scores the same tokens (sequence parallelism gathers
    # the sequence before the output layer): the mean is the same on each.
    layout_switches(layout)
    return lambda value: jax.lax.pmean(value, DATA)


def _checks_vma(cfg: Config) -> bool:
    """Whether ``shard_map`` may check how each value varies across the mesh.

    JAX 0.10.2's splash kernel declares its outputs' shapes without saying
    how they vary over the mesh's manual axes, which the check requires
    ("manual_axis_type ... must not be None"), so a step that uses it runs
    unchecked. The collectives are the same either way (the layouts name
    them); the check only proves them consistent, which the other forms do.
    """
    return cfg.attention != "splash"


def sharded_grad_fn(cfg: Config, layout: str, mesh: Any, precision: str = "float32",
                    remat: str = "none", micro: int = 1) -> Callable:
    """Return ``grad_fn(params, inputs, targets) -> (loss, grads)`` for ``layout``.

    The one-device :func:`~.training.make_grad_fn`, run per device by
    ``jax.shard_map`` on ``mesh`` (axes ``"data"`` and ``"model"``); the
    gradients come back laid out as the weights.
    """
    check_vocab(cfg, layout, mesh.shape[MODEL])
    per_device = make_grad_fn(cfg, precision, layout_hooks(layout), remat, micro,
                              _reduce(layout))

    def grad_fn(params: Params, inputs: jax.Array, targets: jax.Array):
        specs = spec_tree(params, layout)
        tokens = batch_spec(layout)
        return jax.shard_map(per_device, mesh=mesh, in_specs=(specs, tokens, tokens),
                             out_specs=(P(), specs), check_vma=_checks_vma(cfg)
                             )(params, inputs, targets)

    return grad_fn


def sharded_step(cfg: Config, layout: str, mesh: Any, precision: str = "float32",
                 remat: str = "none", micro: int = 1, learning_rate: float = 1e-3,
                 loss_chunk: int = 0) -> Callable:
    """Return ``step(state, inputs, targets) -> (state, loss)`` for ``layout``.

    Adam updates each device's piece of the weights with its piece of the
    moments: with FSDP nothing of the state is stored twice. ``loss_chunk``
    is :func:`~.model.loss`'s ``chunk``.
    """
    check_vocab(cfg, layout, mesh.shape[MODEL])
    per_device_grads = make_grad_fn(cfg, precision, layout_hooks(layout), remat, micro,
                                    _reduce(layout), loss_chunk=loss_chunk)
    optimizer = optimizer_for(precision, learning_rate)

    def per_device(state: dict[str, Any], inputs: jax.Array, targets: jax.Array):
        value, grads = per_device_grads(state["params"], inputs, targets)
        updates, opt = optimizer.update(grads, state["opt"], state["params"])
        params = jax.tree.map(lambda p, u: p + u.astype(p.dtype), state["params"],
                              updates)
        return {"params": params, "opt": opt}, value

    def step(state: dict[str, Any], inputs: jax.Array, targets: jax.Array):
        specs = spec_tree(state, layout)
        tokens = batch_spec(layout)
        return jax.shard_map(per_device, mesh=mesh, in_specs=(specs, tokens, tokens),
                             out_specs=(specs, P()), check_vma=_checks_vma(cfg)
                             )(state, inputs, targets)

    return step
