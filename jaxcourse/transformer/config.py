"""The transformer's shape, and what follows from it alone: parameters and FLOPs.

:class:`Config` holds a decoder-only transformer's shape as LLaMA-3 publishes
it; :data:`LLAMA3_8B` and :data:`LLAMA3_70B` are the two published configs.
:func:`param_count` counts the parameters exactly, part by part, and
:func:`flops_per_token` the FLOPs of one training step per token.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

from .attention_forms import check_form

__all__ = ["LLAMA3_70B", "LLAMA3_8B", "PUBLISHED_PARAMS", "Config", "flops_per_token",
           "matmul_params", "param_count", "param_parts"]


@dataclass(frozen=True)
class Config:
    """A decoder-only transformer's shape.

    Attributes
    ----------
    vocab : int
        Tokens in the vocabulary.
    d_model : int
        Width of the residual stream.
    layers : int
        Transformer blocks.
    heads : int
        Query heads of attention.
    kv_heads : int
        Key and value heads (grouped-query attention: ``heads / kv_heads``
        query heads share each one; ``kv_heads == heads`` is plain multi-head).
    hidden : int
        Hidden units of the SwiGLU MLP.
    rope_theta : float
        The base of the rotary position embedding's frequencies.
    norm_eps : float
        RMSNorm's epsilon.
    name : str
        A label for tables.
    attention : str
        How attention is computed: a form of
        :data:`~.attention_forms.ATTENTION_FORMS` (``"plain"``, the chapter's
        whole score matrix; ``"chunked"``, ``"splash"``, ``"xla"``). The same
        maths in each, so it is not part of the model's shape: left out of
        the ``repr``.
    attention_block : int
        The form's block: the queries per chunk (``"chunked"``) or the
        kernel's tile (``"splash"``); 0 is the form's default
        (:data:`~.attention_forms.DEFAULT_BLOCKS`).
    """

    vocab: int
    d_model: int
    layers: int
    heads: int
    kv_heads: int
    hidden: int
    rope_theta: float = 10_000.0
    norm_eps: float = 1e-5
    name: str = "custom"
    # Not in the repr: a config prints as the shape it is (the chapter's
    # stored outputs print Config(...) and name the checks' calls by it),
    # whatever the form computing its attention. Still compared and hashed:
    # two forms compile two different programs, and a cache keyed by the
    # config must not hand one the other's.
    attention: str = dataclasses.field(default="plain", repr=False)
    attention_block: int = dataclasses.field(default=0, repr=False)

    def __post_init__(self) -> None:
        for field in ("vocab", "d_model", "layers", "heads", "kv_heads", "hidden"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, not {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model={self.d_model} does not split into "
                             f"{self.heads} heads")
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.heads} query heads do not share "
                             f"{self.kv_heads} key/value heads evenly")
        check_form(self.attention, self.attention_block)

    @property
    def head_dim(self) -> int:
        """Width of one head: ``d_model / heads``."""
        return self.d_model // self.heads

    def with_layers(self, layers: int) -> Config:
        """Return the same config with ``layers`` blocks (for a cheaper compile)."""
        return replace(self, layers=layers, name=f"{self.name}, {layers} layers")

    def with_attention(self, form: str, block: int = 0) -> Config:
        """Return the same config with attention computed by ``form`` (in ``block``).

        ``form`` is a key of :data:`~.attention_forms.ATTENTION_FORMS`;
        ``block`` its chunk or tile (0: the form's default).
        """
        return replace(self, attention=form, attention_block=block)


#: LLaMA-3 8B, from ``config.json`` of ``meta-llama/Meta-Llama-3-8B`` on Hugging
#: Face: hidden_size 4096, 32 layers, 32 heads, 8 key/value heads,
#: intermediate_size 14336, rope_theta 500000, rms_norm_eps 1e-5,
#: vocab_size 128256, tie_word_embeddings false.
LLAMA3_8B = Config(vocab=128_256, d_model=4096, layers=32, heads=32, kv_heads=8,
                   hidden=14_336, rope_theta=500_000.0, name="LLaMA-3 8B")
#: LLaMA-3 70B, from ``config.json`` of ``meta-llama/Meta-Llama-3-70B``:
#: hidden_size 8192, 80 layers, 64 heads, 8 key/value heads, intermediate_size
#: 28672, rope_theta 500000, vocab_size 128256, untied output layer.
LLAMA3_70B = Config(vocab=128_256, d_model=8192, layers=80, heads=64, kv_heads=8,
                    hidden=28_672, rope_theta=500_000.0, name="LLaMA-3 70B")

#: The published totals: ``metadata.total_size`` of each model's
#: ``model.safetensors.index.json`` on Hugging Face (``meta-llama/Meta-Llama-3-8B``:
#: 16,060,522,496 bytes; ``-70B``: 141,107,412,992 bytes), stored in bfloat16,
#: so half of each is the parameter count. The model cards round them to 8B
#: and 70B.
PUBLISHED_PARAMS = {"LLaMA-3 8B": 16_060_522_496 // 2,
                    "LLaMA-3 70B": 141_107_412_992 // 2}


def param_parts(cfg: Config) -> dict[str, int]:
    """Return the parameters of each part of the model.

    ``embed`` (the token table, ``vocab × d``), ``attention`` (per layer:
    queries ``d × heads·h``, keys and values ``d × kv_heads·h`` each, output
    ``heads·h × d``), ``mlp`` (per layer: gate and up ``d × hidden``, down
    ``hidden × d``), ``norms`` (two RMSNorm scales per layer and the final
    one, ``d`` each) and ``unembed`` (the output layer, ``d × vocab``, not
    tied to the embedding), with their ``total``.
    """
    d, h = cfg.d_model, cfg.head_dim
    attention = d * cfg.heads * h * 2 + d * cfg.kv_heads * h * 2
    mlp = 3 * d * cfg.hidden
    parts = {"embed": cfg.vocab * d, "attention": cfg.layers * attention,
             "mlp": cfg.layers * mlp, "norms": (2 * cfg.layers + 1) * d,
             "unembed": d * cfg.vocab}
    parts["total"] = sum(parts.values())
    return parts


def param_count(cfg: Config) -> int:
    """Return the exact number of parameters (see :func:`param_parts`)."""
    return param_parts(cfg)["total"]


def matmul_params(cfg: Config) -> int:
    """Return the parameters that multiply a matrix: all but the embedding and norms.

    The embedding is a lookup (no FLOPs) and a norm's scale an elementwise
    product: neither is in the ``6 P`` of a training step.
    """
    parts = param_parts(cfg)
    return parts["attention"] + parts["mlp"] + parts["unembed"]


def flops_per_token(cfg: Config, seq: int) -> dict[str, float]:
    """Return the FLOPs of one training step per token, by their source.

    ``weights``: ``6 P`` over the matrix parameters (a product costs 2 FLOPs
    per weight per token forward, 4 backward: the gradients for the input and
    for the weight). ``attention``: per layer, the scores ``q kᵀ`` and the
    weighted sum of values each cost ``2 · seq · heads · h`` forward per
    token, ``3 ×`` that for a training step: ``12 · layers · seq · heads · h``.
    The causal mask is applied to a full ``seq × seq`` score matrix here, as
    the model computes it (a kernel that skips the masked half does half).
    """
    weights = 6.0 * matmul_params(cfg)
    attention = 12.0 * cfg.layers * seq * cfg.heads * cfg.head_dim
    return {"weights": weights, "attention": attention, "total": weights + attention}
