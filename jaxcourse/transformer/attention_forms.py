"""Attention's forms: the same causal grouped-query attention, computed four ways.

The chapter's form, ``"plain"``, writes out each head's whole ``(seq, seq)``
matrix of scores in float32: the right first lesson, and the wrong thing to
plan a chip with, since at LLaMA-3's 8,192 positions that is 256 MiB per head
per sequence. The other forms compute the same numbers without it:

* ``"chunked"``: the queries split into chunks of ``block`` (1,024 by
  default); each chunk's scores against every key are computed, masked and
  softmaxed in float32 inside ``jax.checkpoint``, and ``jax.lax.map`` runs the
  chunks one after another, so one chunk's scores are alive at a time and the
  backward pass recomputes them instead of keeping them. Any sequence: the
  last chunk is padded with zero queries whose outputs are dropped.
* ``"splash"``: JAX's Pallas TPU kernel (``jax.experimental.pallas.ops.tpu.
  splash_attention``), MaxText's attention on TPU: tiles of ``block`` queries
  by ``block`` keys in the chip's on-chip memory, with an online softmax and
  the fully masked tiles skipped. On TPU it is compiled by Mosaic; on any
  other platform the same kernel runs in Pallas's interpret mode (slow, for
  tests on small shapes). The sequence must be a multiple of 128 (the
  kernel's tiles are whole 128-wide lanes).
* ``"xla"``: ``jax.nn.dot_product_attention(..., implementation="xla")``,
  the library's own call. Its XLA implementation writes the whole score
  matrix too (in float32): it is here to show that the library's one line
  is the chapter's maths, not to save memory.

Every form takes the queries ``(batch, seq, heads, h)``, already rotated
(:func:`~.model.rope`), and the keys and values ``(batch, seq, kv_heads, h)``,
and returns ``(batch, seq, heads · h)`` in the queries' dtype; query head
``i`` reads key/value head ``i // (heads / kv_heads)``, as in the chapter.
:func:`attend` picks one by name; :class:`~.config.Config`'s ``attention``
and ``attention_block`` name it for the whole model.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["ATTENTION_FORMS", "DEFAULT_BLOCKS", "attend", "check_form", "chunked",
           "plain", "splash", "splash_block", "xla"]

#: The block each form uses when ``block`` is 0: the queries per chunk
#: (``"chunked"``; MaxText's default for its chunked attention is 1,024 too)
#: and the splash kernel's tile (``"splash"``: MaxText's ``sa_block_*``
#: defaults, 512), never more than the sequence.
DEFAULT_BLOCKS: dict[str, int] = {"plain": 0, "chunked": 1024, "splash": 512, "xla": 0}

#: The splash kernel's tiles are whole vector registers: 128 lanes wide.
_LANES = 128


def plain(q: jax.Array, k: jax.Array, v: jax.Array, block: int = 0) -> jax.Array:
    """Return attention as the chapter computes it: each head's whole scores.

    Each head's ``(seq, seq)`` scores are written out in float32, masked and
    softmaxed.

    ``block`` is unused (every form takes it).
    """
    b, t, _, h = q.shape
    groups = q.shape[2] // k.shape[2]                     # query heads per kv head
    q = q.reshape(b, t, k.shape[2], groups, h)
    scores = jnp.einsum("btkgh,bskh->bkgts", q, k).astype(jnp.float32) / np.sqrt(h)
    causal = np.tril(np.ones((t, t), bool))               # t attends to s <= t
    scores = jnp.where(causal, scores, -jnp.inf)
    weights = jax.nn.softmax(scores, axis=-1).astype(q.dtype)
    return jnp.einsum("bkgts,bskh->btkgh", weights, v).reshape(b, t, -1)


def chunked(q: jax.Array, k: jax.Array, v: jax.Array, block: int = 0) -> jax.Array:
    """Return attention computed ``block`` queries at a time (0: 1,024).

    Each chunk's scores are ``(batch, kv_heads, groups, block, seq)``: the
    chunk's queries against every key, masked where the key comes after the
    query, softmaxed in float32 as :func:`plain` does, row by row the same
    numbers. ``jax.checkpoint`` keeps none of them for the backward pass (it
    keeps the chunk's queries, and the keys and values once), and
    ``jax.lax.map`` runs the chunks in a loop, so the compiled program holds
    one chunk's scores, never a ``(seq, seq)`` matrix when ``seq > block``.
    A sequence that ``block`` does not divide has its last chunk padded with
    zero queries; their outputs are dropped (and get no gradient).
    """
    b, t, heads, h = q.shape
    size = min(block or DEFAULT_BLOCKS["chunked"], t)
    pieces = -(-t // size)
    padded = jnp.pad(q, ((0, 0), (0, pieces * size - t), (0, 0), (0, 0)))
    kv = k.shape[2]
    # (pieces, batch, size, kv_heads, groups, h): the chunks lead, for lax.map.
    qs = jnp.moveaxis(padded.reshape(b, pieces, size, kv, heads // kv, h), 1, 0)

    @jax.checkpoint
    def piece(qc: jax.Array, start: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        scores = jnp.einsum("bckgh,bskh->bkgcs", qc, k).astype(jnp.float32) / np.sqrt(h)
        # Query start + c attends to key s <= start + c.
        causal = (start + jnp.arange(size))[:, None] >= jnp.arange(t)[None, :]
        scores = jnp.where(causal, scores, -jnp.inf)
        weights = jax.nn.softmax(scores, axis=-1).astype(qc.dtype)
        return jnp.einsum("bkgcs,bskh->bckgh", weights, v)

    starts = jnp.arange(pieces) * size
    out = jax.lax.map(lambda a: piece(a[0], a[1], k, v), (qs, starts))
    out = jnp.moveaxis(out, 0, 1).reshape(b, pieces * size, heads * h)
    return out[:, :t]


def splash_block(seq: int, block: int = 0) -> int:
    """Return the splash kernel's tile for ``seq`` positions (``block``; 0: 512).

    The tile is ``block`` queries by ``block`` keys, at most the sequence.

    Raises
    ------
    ValueError
        If the tile is not a multiple of 128 or does not divide ``seq``: the
        kernel's tiles are whole 128-lane registers, and it has no partial
        tile.
    """
    size = min(block or DEFAULT_BLOCKS["splash"], seq)
    if size % _LANES or seq % size:
        raise ValueError(f"splash attention tiles the sequence in blocks that are "
                         f"multiples of {_LANES} and divide it: a block of {size} "
                         f"does not fit a sequence of {seq} (use a sequence that is "
                         f"a multiple of {_LANES}, or the \"chunked\" form)")
    return size


def splash(q: jax.Array, k: jax.Array, v: jax.Array, block: int = 0) -> jax.Array:
    """Return attention by JAX's Pallas splash kernel, in tiles of ``block`` (0: 512).

    ``make_splash_mha`` takes grouped-query attention as it is: queries
    ``(heads, seq, h)`` and keys and values ``(kv_heads, seq, h)``, query head
    ``i`` reading key head ``i // (heads / kv_heads)`` (its index maps divide
    the head by ``q_heads_per_kv_head``), the chapter's grouping. The kernel
    has no batch axis (``jax.vmap`` adds it) and does not scale the scores:
    the queries are divided by ``sqrt(h)`` first. Every tile, forward and
    backward (``BlockSizes``'s ``block_q``, ``block_kv``, their ``_compute``,
    ``_dkv`` and ``_dq`` sizes) is ``block`` wide (:func:`splash_block`).

    On TPU the kernel is compiled by Mosaic; any other platform runs it in
    Pallas's interpret mode (the kernel's ``interpret=True``), chosen when
    the program is lowered (``jax.lax.platform_dependent``), not when it is
    traced: a step compiled on this machine for a TPU slice's compile-only
    devices gets the TPU kernel. Mosaic refuses bfloat16 queries under
    ``jax.default_matmul_precision("highest")`` ("Bad lhs type": a float32
    contraction asked of bfloat16 tiles; JAX 0.10.2 on a v5e): leave the
    precision at its default there.
    """
    from jax.experimental.pallas.ops.tpu import splash_attention as sa

    b, t, heads, h = q.shape
    size = splash_block(t, block)
    sizes = sa.BlockSizes(block_q=size, block_kv=size, block_kv_compute=size,
                          block_q_dkv=size, block_kv_dkv=size,
                          block_kv_dkv_compute=size, block_q_dq=size, block_kv_dq=size)
    # One causal mask per query head; the kernel finds the tiles that are
    # wholly masked (skipped) or wholly visible (no mask applied).
    mask = sa.MultiHeadMask([sa.CausalMask((t, t)) for _ in range(heads)])

    def kernel(interpret: bool) -> Callable[..., jax.Array]:
        run = sa.make_splash_mha(mask, block_sizes=sizes, head_shards=1, q_seq_shards=1,
                                 interpret=interpret)
        return jax.vmap(run)

    heads_first = lambda a: jnp.swapaxes(a, 1, 2)  # noqa: E731  (b, heads, t, h)
    args = (heads_first(q / np.sqrt(h).astype(q.dtype)), heads_first(k), heads_first(v))
    out = jax.lax.platform_dependent(*args, tpu=kernel(False), default=kernel(True))
    return heads_first(out).reshape(b, t, heads * h)


def xla(q: jax.Array, k: jax.Array, v: jax.Array, block: int = 0) -> jax.Array:
    """Return attention by ``jax.nn.dot_product_attention`` (XLA's implementation).

    It takes the chapter's layout and grouping as they are (``(batch, seq,
    heads, h)``, heads a multiple of the key heads) and scales by
    ``1 / sqrt(h)``; it computes the scores in float32 and writes them all:
    ``(batch, heads, seq, seq)``, as :func:`plain` does. ``block`` is unused.
    """
    b, t, heads, h = q.shape
    out = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
    return out.reshape(b, t, heads * h)


#: Each form, by its name (the module's docstring says what each keeps).
ATTENTION_FORMS: dict[str, Callable[..., jax.Array]] = {
    "plain": plain, "chunked": chunked, "splash": splash, "xla": xla}


def check_form(name: str, block: int = 0) -> None:
    """Raise a ``ValueError`` naming the known forms if ``name`` is not one.

    Also if ``block`` is negative, or given to a form that has no block.
    """
    if name not in ATTENTION_FORMS:
        raise ValueError(f"unknown attention form {name!r}; expected one of "
                         f"{list(ATTENTION_FORMS)}")
    if not isinstance(block, int) or block < 0:
        raise ValueError(f"an attention block is a positive number of positions "
                         f"(or 0, the form's default), not {block!r}")
    if block and not DEFAULT_BLOCKS[name]:
        raise ValueError(f"the {name!r} form has no block; {block} was given")


def attend(q: jax.Array, k: jax.Array, v: jax.Array, form: str = "plain",
           block: int = 0) -> jax.Array:
    """Return causal grouped-query attention of ``q``, ``k``, ``v`` by ``form``.

    Parameters
    ----------
    q : jax.Array
        Rotated queries, ``(batch, seq, heads, h)``.
    k, v : jax.Array
        Rotated keys and the values, ``(batch, seq, kv_heads, h)``.
    form : str
        A key of :data:`ATTENTION_FORMS`.
    block : int
        The form's block (0: :data:`DEFAULT_BLOCKS`).

    Returns
    -------
    jax.Array
        ``(batch, seq, heads · h)``, in ``q``'s dtype.
    """
    check_form(form, block)
    return ATTENTION_FORMS[form](q, k, v, block)
