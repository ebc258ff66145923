"""A decoder-only transformer in plain JAX, LLaMA-3's shape.

Each part is one short function: :func:`init_params`, :func:`rms_norm`,
:func:`rope`, :func:`attention` (causal, grouped-query; its scores computed
by the config's form, :mod:`.attention_forms`), :func:`mlp`
(SwiGLU), :func:`block`, :func:`forward` (the blocks run by
``jax.lax.scan``) and :func:`loss`. The parameters of the blocks are stacked
along a leading ``layers`` axis, so that ``scan`` runs one compiled block
``layers`` times.

The parallel layouts (:mod:`.layouts`) run this very code per device; they
pass :class:`Hooks`, three functions the model calls where a layout needs a
collective: ``use`` on a dict of weights before they are used (FSDP gathers
them: each block's at the top of the block), ``enter`` on a
sub-block's normed input (sequence parallelism gathers the sequence) and
``leave`` on its output (tensor parallelism sums the partial outputs).
Three more steer the ends of the model, where tensor parallelism splits the
vocabulary (Megatron-LM's vocabulary-parallel embedding and cross-entropy):
``lookup`` turns tokens into vectors, ``head`` prepares the last hidden
states (and the targets) for the output layer, ``target_logp`` gives each
target's log-probability.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from .attention_forms import attend
from .config import Config

__all__ = ["PLAIN", "REMAT_POLICIES", "Hooks", "attention", "block", "blocks",
           "forward",
           "init_params", "loss", "mlp", "rms_norm", "rope"]

Params = dict[str, Any]


def _same(x: jax.Array) -> jax.Array:
    return x


def _lookup(embed: jax.Array, tokens: jax.Array) -> jax.Array:
    """Return the rows of ``embed`` that ``tokens`` name."""
    return jnp.take(embed, tokens, axis=0)


def _target_logp(x: jax.Array, unembed: jax.Array, targets: jax.Array) -> jax.Array:
    """Return each target's log-probability under ``x @ unembed``, in float32."""
    logp = jax.nn.log_softmax((x @ unembed).astype(jnp.float32), axis=-1)
    return jnp.take_along_axis(logp, targets[..., None], axis=-1)


class Hooks(NamedTuple):
    """Where a layout steps into the model (see the module's docstring)."""

    use: Callable[[Params], Params] = _same
    enter: Callable[[jax.Array], jax.Array] = _same
    leave: Callable[[jax.Array], jax.Array] = _same
    lookup: Callable[[jax.Array, jax.Array], jax.Array] = _lookup
    head: Callable[[jax.Array], jax.Array] = _same
    target_logp: Callable[[jax.Array, jax.Array, jax.Array], jax.Array] = _target_logp


#: One device, no collectives.
PLAIN = Hooks()

#: What a block's backward pass may keep, by name. ``None``: everything
#: (no remat); ``"full"``: nothing but the block's input; ``"dots"``: the
#: outputs of matrix products without a batch dimension (the projections,
#: not attention's scores); ``"names"``: the two tensors tagged with
#: ``checkpoint_name`` that feed the output projections.
REMAT_POLICIES: dict[str, Any] = {
    "none": None,
    "full": jax.checkpoint_policies.nothing_saveable,
    "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "names": jax.checkpoint_policies.save_only_these_names("attn_out", "mlp_hidden"),
}


def init_params(key: jax.Array, cfg: Config, dtype: Any = jnp.float32) -> Params:
    """Return the parameters, each block's stacked along a leading ``layers`` axis.

    Matrices are drawn with standard deviation ``1 / sqrt(fan_in)``; norm
    scales start at one.
    """
    d, h, f, n = cfg.d_model, cfg.head_dim, cfg.hidden, cfg.layers
    shapes = {"wq": (n, d, cfg.heads * h), "wk": (n, d, cfg.kv_heads * h),
              "wv": (n, d, cfg.kv_heads * h), "wo": (n, cfg.heads * h, d),
              "w_gate": (n, d, f), "w_up": (n, d, f), "w_down": (n, f, d)}
    keys = jax.random.split(key, len(shapes) + 2)
    layers = {name: (jax.random.normal(k, shape) / np.sqrt(shape[1])).astype(dtype)
              for k, (name, shape) in zip(keys, shapes.items(), strict=False)}
    layers["attn_norm"] = jnp.ones((n, d), dtype)
    layers["mlp_norm"] = jnp.ones((n, d), dtype)
    return {"embed": jax.random.normal(keys[-2], (cfg.vocab, d)).astype(dtype),
            "layers": layers,
            "final_norm": jnp.ones((d,), dtype),
            "unembed": (jax.random.normal(keys[-1], (d, cfg.vocab))
                        / np.sqrt(d)).astype(dtype)}


def rms_norm(x: jax.Array, scale: jax.Array, eps: float = 1e-5) -> jax.Array:
    """Scale ``x`` to unit root-mean-square over its last axis (in float32)."""
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (normed * scale.astype(jnp.float32)).astype(x.dtype)


def rope(x: jax.Array, theta: float) -> jax.Array:
    """Rotate each pair of features of ``x`` (batch, seq, heads, h) by its position.

    Pair ``i`` of the position ``t`` turns by the angle ``t · theta^(-2i/h)``,
    so that ``q · k`` depends only on how far apart the two tokens are.
    """
    seq, h = x.shape[1], x.shape[-1]
    freqs = theta ** (-np.arange(0, h, 2) / h)                  # (h/2,)
    angles = np.arange(seq)[:, None] * freqs[None, :]           # (seq, h/2)
    cos = jnp.asarray(np.cos(angles), x.dtype)[None, :, None, :]
    sin = jnp.asarray(np.sin(angles), x.dtype)[None, :, None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = jnp.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)
    return turned.reshape(x.shape)


def attention(x: jax.Array, layer: Params, cfg: Config) -> jax.Array:
    """Causal grouped-query attention of ``x`` (batch, seq, d), without the residual.

    The heads are counted from the weights' shapes, so a device holding a
    slice of the heads (tensor parallelism) runs this same code. The scores
    are computed by ``cfg.attention``'s form (:func:`~.attention_forms.attend`):
    ``"plain"``, the chapter's, writes each head's whole ``(seq, seq)``
    matrix; the others compute the same numbers without it.
    """
    b, t, _ = x.shape
    h = cfg.head_dim
    q = checkpoint_name(x @ layer["wq"], "q").reshape(b, t, -1, h)
    k = checkpoint_name(x @ layer["wk"], "k").reshape(b, t, -1, h)
    v = checkpoint_name(x @ layer["wv"], "v").reshape(b, t, -1, h)
    q, k = rope(q, cfg.rope_theta), rope(k, cfg.rope_theta)
    with jax.named_scope("scores"):
        out = attend(q, k, v, cfg.attention, cfg.attention_block)
    return checkpoint_name(out, "attn_out") @ layer["wo"]


def mlp(x: jax.Array, layer: Params) -> jax.Array:
    """SwiGLU: ``(silu(x W_gate) * (x W_up)) W_down``, without the residual."""
    gate = checkpoint_name(x @ layer["w_gate"], "gate")
    up = checkpoint_name(x @ layer["w_up"], "up")
    hidden = checkpoint_name(jax.nn.silu(gate) * up, "mlp_hidden")
    return hidden @ layer["w_down"]


def block(x: jax.Array, layer: Params, cfg: Config, hooks: Hooks = PLAIN
          ) -> jax.Array:
    """One pre-norm block: ``x + attention(norm(x))``, then ``+ mlp(norm(·))``."""
    layer = hooks.use(layer)
    # The scopes name each part in the compiled program's metadata, so that a
    # profile of the step can say which part each operation belongs to
    # (jaxcourse.profile); they change nothing that is computed.
    with jax.named_scope("attention"):
        normed = hooks.enter(rms_norm(x, layer["attn_norm"], cfg.norm_eps))
        x = x + hooks.leave(attention(normed, layer, cfg))
    with jax.named_scope("mlp"):
        normed = hooks.enter(rms_norm(x, layer["mlp_norm"], cfg.norm_eps))
        return x + hooks.leave(mlp(normed, layer))


def blocks(layers: Params, x: jax.Array, cfg: Config, hooks: Hooks = PLAIN,
           remat: str = "none", unroll: bool = False) -> jax.Array:
    """Run the stacked blocks ``layers`` over ``x`` with ``jax.lax.scan``.

    ``remat`` names a policy of :data:`REMAT_POLICIES`; each block is then
    wrapped in ``jax.checkpoint`` with it. ``unroll`` copies the block
    instead of looping: XLA's ``cost_analysis()`` counts a loop's body once,
    whatever its trip count.
    """
    if remat not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {remat!r}; expected one of "
                         f"{sorted(REMAT_POLICIES)}")
    step = lambda x, layer: block(x, layer, cfg, hooks)  # noqa: E731
    if remat != "none":
        step = jax.checkpoint(step, policy=REMAT_POLICIES[remat])
    x, _ = jax.lax.scan(lambda x, layer: (step(x, layer), None), x, layers,
                        unroll=unroll)
    return x


def _final(params: Params, tokens: jax.Array, cfg: Config, hooks: Hooks,
           remat: str, unroll: bool) -> tuple[jax.Array, jax.Array]:
    """Return the last hidden states, normalised, and the output layer's weight."""
    outer = hooks.use({k: v for k, v in params.items() if k != "layers"})
    x = hooks.lookup(outer["embed"], tokens)
    x = blocks(params["layers"], x, cfg, hooks, remat, unroll)
    return rms_norm(x, outer["final_norm"], cfg.norm_eps), outer["unembed"]


def forward(params: Params, tokens: jax.Array, cfg: Config, hooks: Hooks = PLAIN,
            remat: str = "none", unroll: bool = False) -> jax.Array:
    """Return the logits (batch, seq, vocab) for ``tokens`` (batch, seq).

    ``remat`` and ``unroll`` are :func:`blocks`'. Under a layout that splits
    the vocabulary, each device returns its slice of the vocabulary.
    """
    x, unembed = _final(params, tokens, cfg, hooks, remat, unroll)
    return hooks.head(x) @ unembed


def loss(params: Params, inputs: jax.Array, targets: jax.Array, cfg: Config,
         hooks: Hooks = PLAIN, remat: str = "none", unroll: bool = False,
         chunk: int = 0) -> jax.Array:
    """Return the mean cross-entropy of the next token (in float32).

    With ``chunk``, the output layer, the log-softmax and their gradients are
    computed ``chunk`` positions of the sequence at a time, each piece
    recomputed in the backward pass (``jax.checkpoint``): the logits of the
    whole batch, ``vocab`` numbers per token in float32, are then never alive
    at once. The same mean, summed in another order. (MaxText calls this
    vocabulary tiling; the course splits positions, not the vocabulary.)

    Raises
    ------
    ValueError
        If the sequence does not split into chunks of ``chunk``.
    """
    x, unembed = _final(params, inputs, cfg, hooks, remat, unroll)
    with jax.named_scope("vocab"):
        return _vocab_loss(x, unembed, targets, hooks, chunk)


def _vocab_loss(x: jax.Array, unembed: jax.Array, targets: jax.Array, hooks: Hooks,
                chunk: int) -> jax.Array:
    """Return :func:`loss` from the last hidden states (the output layer onward)."""
    # Sequence parallelism with a split vocabulary gathers the sequence here:
    # every device then scores every position, for its slice of the words.
    x, targets = hooks.head(x), hooks.head(targets)
    if not chunk:
        return -jnp.mean(hooks.target_logp(x, unembed, targets))
    batch, seq = targets.shape
    if seq % chunk:
        raise ValueError(f"a sequence of {seq} does not split into chunks of {chunk}")
    pieces = seq // chunk
    xs = x.reshape(batch, pieces, chunk, x.shape[-1]).swapaxes(0, 1)
    ts = targets.reshape(batch, pieces, chunk).swapaxes(0, 1)
    piece = jax.checkpoint(lambda xc, tc: -jnp.sum(hooks.target_logp(xc, unembed, tc)))
    return jnp.sum(jax.lax.map(lambda a: piece(*a), (xs, ts))) / targets.size
