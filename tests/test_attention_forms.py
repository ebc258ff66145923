"""Attention's forms (:mod:`jaxcourse.transformer.attention_forms`) against plain.

Each form is the chapter's causal grouped-query attention computed another
way, so each must give the plain form's loss, logits and gradients within
the course's gradient tolerance (:func:`jaxcourse.transformer.gradient_tolerance`,
normwise against :func:`~jaxcourse.transformer.per_example_grad_sum`, as
tests/transformer_cases.py compares layouts). One device is enough: these run
in the suite's own process (no process started, so ``make test-fast`` runs
them too).
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse import transformer
from jaxcourse.transformer import Config, attention_forms

GROUPS = (1, 2, 4)            # query heads per key/value head


def _case(seed: int) -> tuple[Config, int, int, int]:
    """A random small model (one block), a batch, a sequence and a chunk.

    The chunk is drawn first and the sequence is, by the seed's parity, a
    multiple of it or not, so that the padded last chunk is tried too.
    """
    rng = np.random.default_rng(seed)
    kv_heads = int(rng.choice([1, 2]))
    heads = kv_heads * GROUPS[seed % len(GROUPS)]
    head_dim = int(rng.choice([4, 8]))
    chunk = int(rng.choice([4, 8]))
    seq = chunk * int(rng.integers(2, 4))
    if seed % 2:
        seq += int(rng.integers(1, chunk))
    cfg = Config(vocab=int(rng.integers(20, 60)), d_model=heads * head_dim, layers=1,
                 heads=heads, kv_heads=kv_heads, hidden=int(rng.integers(8, 40)))
    return cfg, int(rng.integers(1, 4)), seq, chunk


def _tokens(cfg: Config, batch: int, seq: int, seed: int
            ) -> tuple[jax.Array, jax.Array]:
    tokens = jax.random.randint(jax.random.key(seed), (batch, seq + 1), 0, cfg.vocab)
    return tokens[:, :-1], tokens[:, 1:]


def _run(cfg: Config, params, inputs, targets):
    """Return the loss, the logits and every gradient, from one compiled program."""
    def loss_and_logits(p):
        logits = transformer.forward(p, inputs, cfg)
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1)), logits

    (value, logits), grads = jax.jit(jax.value_and_grad(loss_and_logits, has_aux=True))(
        params)
    return value, logits, grads


@functools.cache
def _reference(seed: int, batch: int | None = None, seq: int | None = None):
    """The plain form's results for case ``seed`` (or its model at ``batch × seq``)."""
    cfg, b, s, _ = _case(seed)
    batch, seq = batch or b, seq or s
    params = transformer.init_params(jax.random.key(seed), cfg)
    inputs, targets = _tokens(cfg, batch, seq, seed)
    # Compiled once rather than dispatched op by op: the most of a case's time.
    scale = jax.jit(transformer.per_example_grad_sum, static_argnums=3)(
        params, inputs, targets, cfg)
    return (cfg, params, inputs, targets, _run(cfg, params, inputs, targets), scale,
            transformer.gradient_tolerance(cfg, batch, seq))


def _worst(seed: int, form: str, block: int = 0, batch: int | None = None,
           seq: int | None = None) -> float:
    """Return the worst ratio of ``form``'s error to its bound (<= 1 passes).

    The loss against the tolerance times itself; the logits and each
    gradient normwise, as tests/transformer_cases.py's ``_within`` does: the
    gradients against ``Σ_e |g_e|``, the logits against their largest
    magnitude (the forward pass is a part of the chain the tolerance counts).
    """
    cfg, params, inputs, targets, (value, logits, grads), scale, tol = _reference(
        seed, batch, seq)
    got_value, got_logits, got = _run(cfg.with_attention(form, block), params, inputs,
                                      targets)
    biggest = jnp.max(jnp.abs(logits))
    ratios = [abs(float(got_value - value)) / (tol * float(value)),
              float(jnp.max(jnp.abs(got_logits - logits)) / (tol * biggest))]
    ratios += jax.tree.leaves(jax.tree.map(
        lambda g, w, s: float(jnp.max(jnp.abs(g - w)) / (tol * jnp.max(s))), got, grads,
        scale))
    return max(ratios)


@pytest.mark.parametrize("seed", range(3))
def test_the_chunked_form_is_the_plain_one(seed: int) -> None:
    # Chunks of 4 or 8 queries, the sequence a multiple of them or not.
    chunk = _case(seed)[3]
    assert _worst(seed, "chunked", chunk) <= 1


@pytest.mark.parametrize("seed", range(2))
def test_the_xla_form_is_the_plain_one(seed: int) -> None:
    assert _worst(seed, "xla") <= 1


def test_the_splash_kernel_is_the_plain_one_in_interpret_mode() -> None:
    # On this machine's CPU the Pallas kernel runs in interpret mode. Its
    # tiles are 128 wide: 256 positions in tiles of 128 (the causal mask's
    # diagonal tiles partial, one tile skipped), four query heads per
    # key/value head (seed 2).
    assert _worst(2, "splash", 128, batch=1, seq=256) <= 1


def _off_by_one(q, k, v, block=0):
    # Each query also sees the next key: the mask's diagonal one too high.
    b, t, _, h = q.shape
    q = q.reshape(b, t, k.shape[2], q.shape[2] // k.shape[2], h)
    scores = jnp.einsum("btkgh,bskh->bkgts", q, k).astype(jnp.float32) / np.sqrt(h)
    scores = jnp.where(np.tril(np.ones((t, t), bool), k=1), scores, -jnp.inf)
    weights = jax.nn.softmax(scores, axis=-1).astype(q.dtype)
    return jnp.einsum("bkgts,bskh->btkgh", weights, v).reshape(b, t, -1)


def _wrong_axis(q, k, v, block=0):
    # The softmax normalises over the queries instead of the keys.
    b, t, _, h = q.shape
    q = q.reshape(b, t, k.shape[2], q.shape[2] // k.shape[2], h)
    scores = jnp.einsum("btkgh,bskh->bkgts", q, k).astype(jnp.float32) / np.sqrt(h)
    scores = jnp.where(np.tril(np.ones((t, t), bool)), scores, -jnp.inf)
    weights = jax.nn.softmax(scores, axis=-2).astype(q.dtype)
    return jnp.einsum("bkgts,bskh->btkgh", weights, v).reshape(b, t, -1)


@pytest.mark.parametrize("wrong", [_off_by_one, _wrong_axis])
def test_a_wrong_form_is_caught(monkeypatch: pytest.MonkeyPatch, wrong) -> None:
    # The comparison can fail: a form that leaks the next token, or whose
    # softmax runs along the wrong axis, is far outside the bound.
    monkeypatch.setitem(attention_forms.ATTENTION_FORMS, "wrong", wrong)
    monkeypatch.setitem(attention_forms.DEFAULT_BLOCKS, "wrong", 0)
    assert _worst(0, "wrong") > 100


def test_an_unknown_form_is_named() -> None:
    cfg = _case(0)[0]
    with pytest.raises(ValueError, match=r"'flash'.*'plain', 'chunked', 'splash'"):
        cfg.with_attention("flash")
    with pytest.raises(ValueError, match="multiples of 128"):
        attention_forms.splash_block(200)
    # The form is left out of the config's repr (the chapter prints configs).
    assert repr(cfg.with_attention("chunked", 8)) == repr(cfg)
    assert cfg.with_attention("chunked", 8) != cfg


def _square_f32(hlo: str, seq: int) -> list[str]:
    """Return the float32 shapes in ``hlo`` with two dimensions equal to ``seq``."""
    shapes = re.findall(r"f32\[([\d,]+)\]", hlo)
    return [s for s in shapes if [int(d) for d in s.split(",")].count(seq) >= 2]


def test_the_chunked_program_holds_no_seq_by_seq_scores() -> None:
    # Compiled for this CPU, forward and backward: the plain form's program
    # has (seq, seq) float32 scores per head, the chunked one none at all,
    # not even inside a fusion (its chunks are 16 queries by 40 keys).
    cfg = Config(vocab=24, d_model=16, layers=1, heads=4, kv_heads=2, hidden=24)
    seq = 40
    params = jax.eval_shape(lambda: transformer.init_params(jax.random.key(0), cfg))
    tokens = jax.ShapeDtypeStruct((2, seq), np.int32)

    def hlo(c: Config) -> str:
        grad_fn = jax.jit(transformer.make_grad_fn(c))
        return grad_fn.lower(params, tokens, tokens).compile().as_text()

    assert _square_f32(hlo(cfg), seq)
    assert not _square_f32(hlo(cfg.with_attention("chunked", 16)), seq)


def test_the_scores_bytes_per_form() -> None:
    cfg = Config(vocab=24, d_model=64, layers=1, heads=8, kv_heads=2, hidden=24)
    plain = transformer.attention_bytes(cfg, batch=2, seq=4096)
    assert plain == 2 * 8 * 4096 * 4096 * 4
    assert transformer.attention_bytes(cfg.with_attention("xla"), 2, 4096) == plain
    # A chunk of 1,024 queries at a time: a quarter; tensor parallelism over
    # 4 devices holds 2 of the 8 heads.
    chunked = cfg.with_attention("chunked")
    assert transformer.attention_bytes(chunked, 2, 4096) == plain // 4
    assert transformer.attention_bytes(chunked, 2, 4096, model=4) == plain // 16
    # Splash: one 512 × 512 tile, in the chip's on-chip memory.
    splash = cfg.with_attention("splash")
    assert transformer.attention_bytes(splash, 2, 4096) == 512**2 * 4
