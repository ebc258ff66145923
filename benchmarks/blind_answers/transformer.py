"""Answers written from the exercise texts alone (chapter 7, the transformer).

See benchmarks/named_mistakes.py. ``ANSWERS`` holds the wrong ones, as the
other files of this folder do; ``RIGHT`` holds answers that are right though
written unlike the references (floats, closed forms, the library's own
building blocks), which the benchmark expects the checks to accept: a
rejection among them is a false verdict.

Each answer reads only the exercise's text in
``exercises/07_transformer_exercises.ipynb``: a ``Config`` (``vocab``,
``d_model``, ``layers``, ``heads``, ``kv_heads``, ``hidden``,
``head_dim``), a ``Precision(name, compute, store, moments)``, ``WEIGHTS``,
``transformer.critical_batch`` and ``HARDWARE``'s GPUs.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxcourse import transformer

# ---------------------------------------------------------------------------
# transformer.count_params
# ---------------------------------------------------------------------------


def _attention_params(cfg, kv_heads):
    d, h = cfg.d_model, cfg.head_dim
    return d * cfg.heads * h * 2 + d * kv_heads * h * 2


def count_params__multi_head(cfg, tied=False):
    """Counts wk and wv as d × d, as in a plain multi-head transformer."""
    d = cfg.d_model
    per_block = 4 * d * d + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * per_block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__gpt2_width(cfg, tied=False):
    """Takes the MLP to be 4 d wide (GPT-2's rule), ignoring cfg.hidden."""
    d = cfg.d_model
    per_block = _attention_params(cfg, cfg.kv_heads) + 3 * d * 4 * d + 2 * d
    return cfg.layers * per_block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__two_mlp_matrices(cfg, tied=False):
    """An MLP of an up and a down projection: SwiGLU's gate left out."""
    d = cfg.d_model
    per_block = _attention_params(cfg, cfg.kv_heads) + 2 * d * cfg.hidden + 2 * d
    return cfg.layers * per_block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__no_final_norm(cfg, tied=False):
    """Counts the blocks' two norms but forgets the final norm."""
    d = cfg.d_model
    per_block = _attention_params(cfg, cfg.kv_heads) + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * per_block + cfg.vocab * d * (1 if tied else 2)


def count_params__no_norms(cfg, tied=False):
    """Leaves every norm out: 'they are tiny'."""
    d = cfg.d_model
    per_block = _attention_params(cfg, cfg.kv_heads) + 3 * d * cfg.hidden
    return cfg.layers * per_block + cfg.vocab * d * (1 if tied else 2)


def count_params__tied_ignored(cfg, tied=False):
    """Always counts two tables, whatever tied says."""
    d = cfg.d_model
    per_block = _attention_params(cfg, cfg.kv_heads) + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * per_block + d + 2 * cfg.vocab * d


def count_params__one_table(cfg, tied=False):
    """Counts one vocab × d table, tied or not."""
    d = cfg.d_model
    per_block = _attention_params(cfg, cfg.kv_heads) + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * per_block + d + cfg.vocab * d


def count_params__layers_plus_one(cfg, tied=False):
    """Loops over range(cfg.layers + 1) blocks."""
    d = cfg.d_model
    total = 0
    for _ in range(cfg.layers + 1):
        total += _attention_params(cfg, cfg.kv_heads) + 3 * d * cfg.hidden + 2 * d
    return total + d + cfg.vocab * d * (1 if tied else 2)


def count_params__layernorm(cfg, tied=False):
    """Gives each norm a weight and a bias, as LayerNorm has."""
    d = cfg.d_model
    norm = 2 * d
    per_block = _attention_params(cfg, cfg.kv_heads) + 3 * d * cfg.hidden + 2 * norm
    return cfg.layers * per_block + norm + cfg.vocab * d * (1 if tied else 2)


def count_params__kv_width_from_d(cfg, tied=False):
    """Takes the key/value width as d / kv_heads instead of kv_heads · head_dim."""
    d = cfg.d_model
    kv = d // cfg.kv_heads
    per_block = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * per_block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__right_by_parts(cfg, tied=False):
    """Right: each weight's shape written out."""
    d, h = cfg.d_model, cfg.head_dim
    shapes = [(d, cfg.heads * h), (d, cfg.kv_heads * h), (d, cfg.kv_heads * h),
              (cfg.heads * h, d), (d, cfg.hidden), (d, cfg.hidden), (cfg.hidden, d),
              (d,), (d,)]
    block = sum(math.prod(s) for s in shapes)
    outside = [(cfg.vocab, d), (d,)] + ([] if tied else [(d, cfg.vocab)])
    return cfg.layers * block + sum(math.prod(s) for s in outside)


def count_params__right_eval_shape(cfg, tied=False):
    """Right: the chapter's init_params, measured, less the output layer if tied."""
    shapes = jax.eval_shape(lambda: transformer.init_params(jax.random.key(0), cfg))
    total = sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(shapes))
    return total - (cfg.vocab * cfg.d_model if tied else 0)


def count_params__right_float(cfg, tied=False):
    """Right: in floats, the tables as a multiplier."""
    d = float(cfg.d_model)
    q_o = 2 * d * cfg.heads * cfg.head_dim
    k_v = 2 * d * cfg.kv_heads * cfg.head_dim
    block = q_o + k_v + 3.0 * d * cfg.hidden + 2 * d
    tables = 1 if tied else 2
    return cfg.layers * block + d + tables * cfg.vocab * d


def count_params__right_loop(cfg, tied=False):
    """Right: a loop over the layers, numpy integers."""
    d, h = np.int64(cfg.d_model), np.int64(cfg.head_dim)
    total = np.int64(cfg.vocab) * d
    for _ in range(cfg.layers):
        total += d * h * (cfg.heads + cfg.kv_heads) * 2
        total += 3 * d * cfg.hidden + 2 * d
    total += d
    if not tied:
        total += d * cfg.vocab
    return int(total)


# ---------------------------------------------------------------------------
# transformer.bytes_per_param
# ---------------------------------------------------------------------------


def _sizes(precision):
    return tuple(jnp.dtype(t).itemsize
                 for t in (precision.compute, precision.store, precision.moments))


def _master(precision):
    return 0 if jnp.dtype(precision.store) == jnp.dtype(precision.compute) else \
        jnp.dtype(precision.store).itemsize


def _bytes(w, master, g, adam, stored):
    return {"weights": w, "master": master, "grads": g, "adam": adam,
            "total": w + master + g + adam, "stored": stored}


def bytes_per_param__master_always(precision):
    """Always counts a master copy, even when store and compute agree."""
    c, s, m = _sizes(precision)
    return _bytes(c, s, c, 2 * m, s + 2 * m)


def bytes_per_param__master_never(precision):
    """Never counts a master copy: 'the stored weights are the weights'."""
    c, s, m = _sizes(precision)
    return _bytes(c, 0, c, 2 * m, s + 2 * m)


def bytes_per_param__one_moment(precision):
    """Adam as one moment per parameter."""
    c, s, m = _sizes(precision)
    master = _master(precision)
    return _bytes(c, master, c, m, s + m)


def bytes_per_param__bits(precision):
    """Reads the dtype's size in bits (finfo.bits)."""
    c, s, m = (jnp.finfo(t).bits
               for t in (precision.compute, precision.store, precision.moments))
    master = 8 * _master(precision)
    return _bytes(c, master, c, 2 * m, s + 2 * m)


def bytes_per_param__stored_is_total_less_grads(precision):
    """Stored: everything but the gradients, the compute copy included."""
    c, s, m = _sizes(precision)
    master = _master(precision)
    out = _bytes(c, master, c, 2 * m, 0)
    out["stored"] = out["total"] - out["grads"]
    return out


def bytes_per_param__stored_with_grads(precision):
    """Stored: the weights, the gradients and the moments."""
    c, s, m = _sizes(precision)
    master = _master(precision)
    return _bytes(c, master, c, 2 * m, s + c + 2 * m)


def bytes_per_param__grads_in_store_dtype(precision):
    """The gradients in the stored dtype ('they update the master')."""
    c, s, m = _sizes(precision)
    master = _master(precision)
    return _bytes(c, master, s, 2 * m, s + 2 * m)


def bytes_per_param__moments_like_compute(precision):
    """The moments in the compute dtype."""
    c, s, _ = _sizes(precision)
    master = _master(precision)
    return _bytes(c, master, c, 2 * c, s + 2 * c)


def bytes_per_param__total_without_master(precision):
    """The master in its own key, but left out of the total."""
    c, s, m = _sizes(precision)
    master = _master(precision)
    out = _bytes(c, master, c, 2 * m, s + 2 * m)
    out["total"] = c + c + 2 * m
    return out


def bytes_per_param__same_size_same_dtype(precision):
    """Decides the master copy by comparing the dtypes' sizes."""
    c, s, m = _sizes(precision)
    master = s if s != c else 0
    return _bytes(c, master, c, 2 * m, s + 2 * m)


def bytes_per_param__right_numpy(precision):
    """Right: numpy's itemsize, dtypes compared as dtypes."""
    c, s, m = (np.dtype(t).itemsize
               for t in (precision.compute, precision.store, precision.moments))
    separate = np.dtype(precision.store) != np.dtype(precision.compute)
    master = s if separate else 0
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": 2 * c + master + 2 * m, "stored": s + 2 * m}


def bytes_per_param__right_finfo(precision):
    """Right: finfo's bits over 8."""
    c, s, m = (jnp.finfo(t).bits // 8
               for t in (precision.compute, precision.store, precision.moments))
    master = 0 if jnp.dtype(precision.store) == jnp.dtype(precision.compute) else s
    out = {"weights": c, "master": master, "grads": c, "adam": m * 2}
    out["total"] = sum(out.values())
    out["stored"] = s + m * 2
    return out


def bytes_per_param__right_nbytes(precision):
    """Right: the nbytes of one number of each dtype, floats."""
    def size(t):
        return float(jnp.zeros((), t).nbytes)

    c, s, m = size(precision.compute), size(precision.store), size(precision.moments)
    master = 0.0 if jnp.dtype(precision.store).name == jnp.dtype(
        precision.compute).name else s
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": c + master + c + 2 * m, "stored": s + 2 * m}


def bytes_per_param__right_extra_keys(precision):
    """Right: extra keys beside the six asked for."""
    c, s, m = _sizes(precision)
    master = s if precision.store != precision.compute else 0
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": 2 * c + master + 2 * m, "stored": s + 2 * m,
            "peak": 2 * c + master + 2 * m, "name": precision.name}


# ---------------------------------------------------------------------------
# transformer.activation_bytes_per_token
# ---------------------------------------------------------------------------


def _b(precision):
    return 4 if precision == "float32" else 2


def _kept(cfg, remat):
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    if remat == "full":
        return d
    if remat == "names":
        return d + d + cfg.hidden
    return d + d + kv + kv + d + cfg.hidden + cfg.hidden


def activation_bytes_per_token__one_layer(cfg, remat, precision):
    """Counts one block: the layers axis forgotten."""
    return _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__four_bytes(cfg, remat, precision):
    """4 bytes per number whatever the scheme."""
    return cfg.layers * _kept(cfg, remat) * 4


def activation_bytes_per_token__full_nothing(cfg, remat, precision):
    """'full' keeps nothing at all."""
    if remat == "full":
        return 0
    return cfg.layers * _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__names_two_arrays(cfg, remat, precision):
    """'names' keeps only attn_out and mlp_hidden, not the block's input."""
    if remat == "names":
        return cfg.layers * (cfg.d_model + cfg.hidden) * _b(precision)
    return cfg.layers * _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__names_gate_up(cfg, remat, precision):
    """'names' keeps gate and up, both hidden wide."""
    if remat == "names":
        return cfg.layers * (2 * cfg.d_model + 2 * cfg.hidden) * _b(precision)
    return cfg.layers * _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__dots_mha(cfg, remat, precision):
    """'dots' with keys and values d wide."""
    if remat == "dots":
        d = cfg.d_model
        return cfg.layers * (5 * d + 2 * cfg.hidden) * _b(precision)
    return cfg.layers * _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__dots_every_matrix(cfg, remat, precision):
    """'dots' keeps all seven products' outputs, w_down's too."""
    if remat == "dots":
        d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
        return cfg.layers * (d + d + 2 * kv + d + 2 * cfg.hidden + d) * _b(precision)
    return cfg.layers * _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__numbers(cfg, remat, precision):
    """Counts the numbers kept, forgetting the bytes per number."""
    return cfg.layers * _kept(cfg, remat)


def activation_bytes_per_token__dots_no_input(cfg, remat, precision):
    """'dots' keeps only products: the block's input left out."""
    if remat == "dots":
        d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
        return cfg.layers * (2 * d + 2 * kv + 2 * cfg.hidden) * _b(precision)
    return cfg.layers * _kept(cfg, remat) * _b(precision)


def activation_bytes_per_token__right_table(cfg, remat, precision):
    """Right: a table of widths per policy."""
    d, kv, f = cfg.d_model, cfg.kv_heads * cfg.head_dim, cfg.hidden
    widths = {"full": [d], "names": [d, d, f], "dots": [d, d, kv, kv, d, f, f]}
    return cfg.layers * sum(widths[remat]) * _b(precision)


def activation_bytes_per_token__right_dtype(cfg, remat, precision):
    """Right: the scheme's compute dtype, from PRECISIONS."""
    size = jnp.dtype(transformer.PRECISIONS[precision].compute).itemsize
    return cfg.layers * _kept(cfg, remat) * size


def activation_bytes_per_token__right_float(cfg, remat, precision):
    """Right: floats, queries as heads · head_dim."""
    d, q = float(cfg.d_model), float(cfg.heads * cfg.head_dim)
    kv = float(cfg.kv_heads * cfg.head_dim)
    per = {"full": d, "names": d + q + cfg.hidden,
           "dots": d + q + 2 * kv + d + 2.0 * cfg.hidden}[remat]
    return per * cfg.layers * (4.0 if precision == "float32" else 2.0)


def activation_bytes_per_token__right_ifs(cfg, remat, precision):
    """Right: if/elif per policy."""
    nbytes = 2
    if precision == "float32":
        nbytes = 4
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    if remat == "full":
        width = d
    elif remat == "names":
        width = 2 * d + cfg.hidden
    else:
        width = 3 * d + 2 * kv + 2 * cfg.hidden
    return width * nbytes * cfg.layers


# ---------------------------------------------------------------------------
# transformer.flops_per_token
# ---------------------------------------------------------------------------


def _matmul_weights(cfg):
    d, h = cfg.d_model, cfg.head_dim
    block = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h + 3 * d * cfg.hidden
    return cfg.layers * block + d * cfg.vocab


def _attention_forward(cfg, seq):
    return cfg.layers * 2 * (2 * seq * cfg.heads * cfg.head_dim)


def flops_per_token__six_n(cfg, seq):
    """6 times every parameter (the embedding and norms too), plus attention."""
    d = cfg.d_model
    n = _matmul_weights(cfg) + cfg.vocab * d + (2 * cfg.layers + 1) * d
    return 6 * n + 3 * _attention_forward(cfg, seq)


def flops_per_token__forward(cfg, seq):
    """The forward pass only: 2 per weight."""
    return 2 * _matmul_weights(cfg) + _attention_forward(cfg, seq)


def flops_per_token__no_attention(cfg, seq):
    """6 per weight: attention's own products forgotten."""
    return 6 * _matmul_weights(cfg)


def flops_per_token__causal_half(cfg, seq):
    """Halves attention's products for the causal mask."""
    return 6 * _matmul_weights(cfg) + 3 * _attention_forward(cfg, seq) / 2


def flops_per_token__eight(cfg, seq):
    """8 FLOPs per weight, remat's recomputation counted."""
    return 8 * _matmul_weights(cfg) + 4 * _attention_forward(cfg, seq)


def flops_per_token__attention_forward(cfg, seq):
    """Attention's products forward only, the weights 6 each."""
    return 6 * _matmul_weights(cfg) + _attention_forward(cfg, seq)


def flops_per_token__kv_heads(cfg, seq):
    """Attention over the key/value heads (grouped-query)."""
    return 6 * _matmul_weights(cfg) + cfg.layers * 12 * seq * cfg.kv_heads * \
        cfg.head_dim


def flops_per_token__no_output_layer(cfg, seq):
    """The blocks' weights only."""
    return 6 * (_matmul_weights(cfg) - cfg.d_model * cfg.vocab) + \
        3 * _attention_forward(cfg, seq)


def flops_per_token__seq_squared(cfg, seq):
    """Attention's seq × seq products, not divided by the tokens."""
    return 6 * _matmul_weights(cfg) + 3 * _attention_forward(cfg, seq) * seq


def flops_per_token__scores_only(cfg, seq):
    """Counts q kᵀ but not the weighted sum of values."""
    return 6 * _matmul_weights(cfg) + cfg.layers * 3 * 2 * seq * cfg.heads * \
        cfg.head_dim


def flops_per_token__right_sum(cfg, seq):
    """Right: 6 per matrix weight and 3 times attention's forward."""
    return 6 * _matmul_weights(cfg) + 3 * _attention_forward(cfg, seq)


def flops_per_token__right_d_model(cfg, seq):
    """Right: attention with d for heads · head_dim (the same here), integers."""
    d = cfg.d_model
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden
    return 6 * (cfg.layers * per_layer + d * cfg.vocab) + 12 * cfg.layers * seq * \
        cfg.heads * cfg.head_dim


def flops_per_token__right_fwd_bwd(cfg, seq):
    """Right: forward, then backward as twice the forward."""
    forward = 2.0 * _matmul_weights(cfg) + _attention_forward(cfg, seq)
    return forward + 2 * forward


def flops_per_token__right_per_layer(cfg, seq):
    """Right: per layer in a loop, the output layer after."""
    d, h = cfg.d_model, cfg.head_dim
    total = 0.0
    for _ in range(cfg.layers):
        weights = d * h * (2 * cfg.heads + 2 * cfg.kv_heads) + 3 * d * cfg.hidden
        total += 6 * weights + 6 * 2 * seq * cfg.heads * h
    return total + 6 * d * cfg.vocab


# ---------------------------------------------------------------------------
# transformer.micro_batches
# ---------------------------------------------------------------------------


def micro_batches__ceil(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Rounds the needed split up, divisor or not."""
    room = budget_bytes - state_bytes
    if room <= 0:
        return None
    m = max(1, math.ceil(batch * seq * activation_bytes / room))
    return m if m <= batch else None


def micro_batches__no_state(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Gives the whole budget to the activations."""
    for m in range(1, batch + 1):
        if batch % m == 0 and batch // m * seq * activation_bytes <= budget_bytes:
            return m
    return None


def micro_batches__size(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Returns the sequences per micro-batch."""
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * seq * activation_bytes \
                <= budget_bytes:
            return batch // m
    return None


def micro_batches__strict(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Strictly below the budget."""
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * seq * activation_bytes \
                < budget_bytes:
            return m
    return None


def micro_batches__batch_when_none(batch, seq, activation_bytes, state_bytes,
                                   budget_bytes):
    """Falls back on one sequence per micro-batch when nothing fits."""
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * seq * activation_bytes \
                <= budget_bytes:
            return m
    return batch


def micro_batches__per_sequence(batch, seq, activation_bytes, state_bytes,
                                budget_bytes):
    """Reads activation_bytes as per sequence."""
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * activation_bytes \
                <= budget_bytes:
            return m
    return None


def micro_batches__doubling(batch, seq, activation_bytes, state_bytes,
                            budget_bytes):
    """Doubles m until it fits."""
    m = 1
    while m <= batch:
        if state_bytes + batch / m * seq * activation_bytes <= budget_bytes:
            return m
        m *= 2
    return None


def micro_batches__zero(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Returns 0 when nothing fits."""
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * seq * activation_bytes \
                <= budget_bytes:
            return m
    return 0


def micro_batches__most(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Keeps the last m that fits (the most micro-batches)."""
    best = None
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * seq * activation_bytes \
                <= budget_bytes:
            best = m
    return best


def micro_batches__right_divisors(batch, seq, activation_bytes, state_bytes,
                                  budget_bytes):
    """Right: the divisors listed first."""
    divisors = [m for m in range(1, batch + 1) if batch % m == 0]
    for m in divisors:
        if state_bytes + (batch / m) * seq * activation_bytes <= budget_bytes:
            return m
    return None


def micro_batches__right_room(batch, seq, activation_bytes, state_bytes,
                              budget_bytes):
    """Right: the room left for activations, compared per micro-batch."""
    room = budget_bytes - state_bytes
    per_sequence = seq * activation_bytes
    for m in range(1, batch + 1):
        if batch % m == 0 and (batch // m) * per_sequence <= room:
            return m
    return None


def micro_batches__right_sizes(batch, seq, activation_bytes, state_bytes,
                               budget_bytes):
    """Right: the largest micro-batch size that fits, turned into a count."""
    for size in range(batch, 0, -1):
        if batch % size == 0 and state_bytes + size * seq * activation_bytes \
                <= budget_bytes:
            return batch // size
    return None


def micro_batches__right_numpy(batch, seq, activation_bytes, state_bytes,
                               budget_bytes):
    """Right: numpy over the divisors."""
    m = np.arange(1, batch + 1)
    m = m[batch % m == 0]
    fits = state_bytes + (batch // m) * seq * activation_bytes <= budget_bytes
    return int(m[fits][0]) if fits.any() else None


# ---------------------------------------------------------------------------
# transformer.tp_specs
# ---------------------------------------------------------------------------

_COL, _ROW = P(None, None, "model"), P(None, "model", None)


def _divides(cfg, model):
    return (cfg.heads % model == 0, cfg.kv_heads % model == 0,
            cfg.hidden % model == 0)


_WHOLE = P()


def _table(q, kv, o, up, down, norm=_WHOLE):
    return {"wq": q, "wk": kv, "wv": kv, "wo": o, "w_gate": up, "w_up": up,
            "w_down": down, "attn_norm": norm, "mlp_norm": norm}


def tp_specs__all_columns(cfg, model):
    """Splits every matrix by its output columns."""
    q, kv, f = _divides(cfg, model)
    return _table(_COL if q else P(), _COL if kv else P(), _COL if q else P(),
                  _COL if f else P(), _COL if f else P())


def tp_specs__kv_with_q(cfg, model):
    """Splits the keys and values whenever the queries split."""
    q, _, f = _divides(cfg, model)
    return _table(_COL if q else P(), _COL if q else P(), _ROW if q else P(),
                  _COL if f else P(), _ROW if f else P())


def tp_specs__by_rows(cfg, model):
    """Splits q, k, v and gate/up by their input rows, the outputs by columns."""
    q, kv, f = _divides(cfg, model)
    return _table(_ROW if q else P(), _ROW if kv else P(), _COL if q else P(),
                  _ROW if f else P(), _COL if f else P())


def tp_specs__norms_split(cfg, model):
    """Splits the norms' scales over the model axis too."""
    q, kv, f = _divides(cfg, model)
    return _table(_COL if q else P(), _COL if kv else P(), _ROW if q else P(),
                  _COL if f else P(), _ROW if f else P(), norm=P(None, "model"))


def tp_specs__chapters_specs(cfg, model):
    """The chapter's TP specs, whatever divides."""
    specs = transformer.param_specs("TP")
    return {name: specs[name] for name in
            ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down", "attn_norm",
             "mlp_norm")}


def tp_specs__tp_axis(cfg, model):
    """Names the axis "tp"."""
    q, kv, f = _divides(cfg, model)
    col, row = P(None, None, "tp"), P(None, "tp", None)
    return _table(col if q else P(), col if kv else P(), row if q else P(),
                  col if f else P(), row if f else P())


def tp_specs__two_dims(cfg, model):
    """Specs for (in, out), forgetting the stacked layers axis."""
    q, kv, f = _divides(cfg, model)
    col, row = P(None, "model"), P("model", None)
    return _table(col if q else P(), col if kv else P(), row if q else P(),
                  col if f else P(), row if f else P())


def tp_specs__mlp_always(cfg, model):
    """Checks the heads but always splits the MLP."""
    q, kv, _ = _divides(cfg, model)
    return _table(_COL if q else P(), _COL if kv else P(), _ROW if q else P(),
                  _COL, _ROW)


def tp_specs__data_axis(cfg, model):
    """Splits over "data"."""
    q, kv, f = _divides(cfg, model)
    col, row = P(None, None, "data"), P(None, "data", None)
    return _table(col if q else P(), col if kv else P(), row if q else P(),
                  col if f else P(), row if f else P())


def tp_specs__kv_over_fewer(cfg, model):
    """Splits k and v when the devices divide kv_heads (the wrong way round)."""
    q, _, f = _divides(cfg, model)
    kv = model % cfg.kv_heads == 0
    return _table(_COL if q else P(), _COL if kv else P(), _ROW if q else P(),
                  _COL if f else P(), _ROW if f else P())


def tp_specs__right_explicit(cfg, model):
    """Right: spelled out weight by weight."""
    q, kv, f = _divides(cfg, model)
    return {"wq": P(None, None, "model") if q else P(None, None, None),
            "wk": P(None, None, "model") if kv else P(None, None, None),
            "wv": P(None, None, "model") if kv else P(None, None, None),
            "wo": P(None, "model", None) if q else P(None, None, None),
            "w_gate": P(None, None, "model") if f else P(None, None, None),
            "w_up": P(None, None, "model") if f else P(None, None, None),
            "w_down": P(None, "model", None) if f else P(None, None, None),
            "attn_norm": P(None, None), "mlp_norm": P(None, None)}


def tp_specs__right_short(cfg, model):
    """Right: trailing Nones left out, P() for whole."""
    q, kv, f = _divides(cfg, model)
    col, row = P(None, None, "model"), P(None, "model")
    return _table(col if q else P(), col if kv else P(), row if q else P(),
                  col if f else P(), row if f else P())


def tp_specs__right_from_chapter(cfg, model):
    """Right: the chapter's specs where whole heads or units divide."""
    specs = transformer.param_specs("TP")
    q, kv, f = _divides(cfg, model)
    keep = {"wq": q, "wk": kv, "wv": kv, "wo": q, "w_gate": f, "w_up": f,
            "w_down": f, "attn_norm": True, "mlp_norm": True}
    return {name: specs[name] if ok else P() for name, ok in keep.items()}


def tp_specs__right_tuple_axes(cfg, model):
    """Right: axes as one-name tuples, extra weights given too."""
    q, kv, f = _divides(cfg, model)
    col, row = P(None, None, ("model",)), P(None, ("model",), None)
    out = _table(col if q else P(), col if kv else P(), row if q else P(),
                 col if f else P(), row if f else P())
    out["embed"] = P()
    return out


# ---------------------------------------------------------------------------
# transformer.pipeline_micro_batches
# ---------------------------------------------------------------------------


def pipeline_micro_batches__over_m(stages, percent):
    """Bubble as (p - 1) / m."""
    m = 1
    while (stages - 1) / m > percent / 100:
        m += 1
    return m


def pipeline_micro_batches__p_over_m_plus_p(stages, percent):
    """Bubble as p / (m + p)."""
    m = 1
    while stages / (m + stages) > percent / 100:
        m += 1
    return m


def pipeline_micro_batches__strict(stages, percent):
    """Strictly below the target."""
    m = 1
    while 100 * (stages - 1) >= percent * (m + stages - 1):
        m += 1
    return m


def pipeline_micro_batches__ticks(stages, percent):
    """Returns the ticks of the step, m + p - 1."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m + stages - 1


def pipeline_micro_batches__doubling(stages, percent):
    """Doubles m."""
    m = 1
    while (stages - 1) / (m + stages - 1) > percent / 100:
        m *= 2
    return m


def pipeline_micro_batches__closed_form(stages, percent):
    """Solves for m, rounding up, no floor of one."""
    return math.ceil((stages - 1) * (100 - percent) / percent)


def pipeline_micro_batches__percent_raw(stages, percent):
    """Compares the bubble with percent itself."""
    m = 1
    while (stages - 1) / (m + stages - 1) > percent:
        m += 1
    return m


def pipeline_micro_batches__per_stage(stages, percent):
    """Returns micro-batches per stage."""
    m = 1
    while (stages - 1) / (m + stages - 1) > percent / 100:
        m += 1
    return math.ceil(m / stages)


def pipeline_micro_batches__rounded_percent(stages, percent):
    """Rounds the bubble to a whole percent before comparing."""
    m = 1
    while round(100 * (stages - 1) / (m + stages - 1)) > percent:
        m += 1
    return m


def pipeline_micro_batches__right_loop(stages, percent):
    """Right: whole numbers in a loop."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m


def pipeline_micro_batches__right_closed(stages, percent):
    """Right: closed form with ceiling division and a floor of one."""
    return max(1, -(-(stages - 1) * (100 - percent) // percent))


def pipeline_micro_batches__right_fraction(stages, percent):
    """Right: exact fractions."""
    m = 1
    while Fraction(stages - 1, m + stages - 1) > Fraction(percent, 100):
        m += 1
    return m


def pipeline_micro_batches__right_chapter(stages, percent):
    """Right: the chapter's bubble_fraction, tried upwards."""
    m = 1
    while transformer.bubble_fraction(stages, m) > percent / 100 + 1e-12:
        m += 1
    return m


# ---------------------------------------------------------------------------
# transformer.zero_bytes_per_device
# ---------------------------------------------------------------------------


def _state(cfg, precision):
    per = transformer.bytes_per_param(precision)
    n = transformer.param_count(cfg)
    return {k: per[k] * n for k in ("weights", "master", "grads", "adam")}


def zero_bytes_per_device__master_whole(cfg, stage, devices, precision):
    """Stage 1 splits Adam's moments only."""
    s = _state(cfg, precision)
    return (s["adam"] / devices + s["master"]
            + s["grads"] / (devices if stage >= 2 else 1)
            + s["weights"] / (devices if stage >= 3 else 1))


def zero_bytes_per_device__too_far(cfg, stage, devices, precision):
    """Stage k splits k + 1 kinds."""
    s = _state(cfg, precision)
    return ((s["adam"] + s["master"] + s["grads"]) / devices
            + s["weights"] / (devices if stage >= 2 else 1))


def zero_bytes_per_device__all_split(cfg, stage, devices, precision):
    """Everything over the devices, any stage."""
    return sum(_state(cfg, precision).values()) / devices


def zero_bytes_per_device__nothing_split(cfg, stage, devices, precision):
    """Reads the stage as a label: everything whole."""
    return sum(_state(cfg, precision).values())


def zero_bytes_per_device__no_master(cfg, stage, devices, precision):
    """Weights, gradients and moments: the master copy forgotten."""
    s = _state(cfg, precision)
    return (s["adam"] / devices + s["grads"] / (devices if stage >= 2 else 1)
            + s["weights"] / (devices if stage >= 3 else 1))


def zero_bytes_per_device__others(cfg, stage, devices, precision):
    """Divides by devices - 1."""
    s = _state(cfg, precision)
    k = devices - 1
    return ((s["adam"] + s["master"]) / k + s["grads"] / (k if stage >= 2 else 1)
            + s["weights"] / (k if stage >= 3 else 1))


def zero_bytes_per_device__behind(cfg, stage, devices, precision):
    """Stage 1 splits nothing, 2 the optimizer, 3 the gradients too."""
    s = _state(cfg, precision)
    return ((s["adam"] + s["master"]) / (devices if stage >= 2 else 1)
            + s["grads"] / (devices if stage >= 3 else 1) + s["weights"])


def zero_bytes_per_device__fsdp_weights_whole(cfg, stage, devices, precision):
    """Stage 3 splits the gradients, but the weights stay whole."""
    s = _state(cfg, precision)
    return ((s["adam"] + s["master"]) / devices
            + s["grads"] / (devices if stage >= 2 else 1) + s["weights"])


def zero_bytes_per_device__stored(cfg, stage, devices, precision):
    """Uses what is stored between steps, not the step's peak."""
    per = transformer.bytes_per_param(precision)
    n = transformer.param_count(cfg)
    return per["stored"] * n / devices


def zero_bytes_per_device__right_sum(cfg, stage, devices, precision):
    """Right: part by part."""
    s = _state(cfg, precision)
    split = {"master": 1, "adam": 1, "grads": 2, "weights": 3}
    return sum(v / devices if stage >= split[k] else v for k, v in s.items())


def zero_bytes_per_device__right_with_count(cfg, stage, devices, precision):
    """Right: Adam's step count (4 bytes) counted too."""
    s = _state(cfg, precision)
    split = {"master": 1, "adam": 1, "grads": 2, "weights": 3}
    return 4 + sum(v / devices if stage >= split[k] else v for k, v in s.items())


def zero_bytes_per_device__right_ifs(cfg, stage, devices, precision):
    """Right: one branch per stage."""
    s = _state(cfg, precision)
    opt = s["master"] + s["adam"]
    if stage == 1:
        return opt / devices + s["grads"] + s["weights"]
    if stage == 2:
        return (opt + s["grads"]) / devices + s["weights"]
    return (opt + s["grads"] + s["weights"]) / devices


def zero_bytes_per_device__right_per_param(cfg, stage, devices, precision):
    """Right: bytes per parameter first, then times the count."""
    per = transformer.bytes_per_param(precision)
    kept = per["total"]
    kept -= (per["master"] + per["adam"]) * (1 - 1 / devices)
    if stage >= 2:
        kept -= per["grads"] * (1 - 1 / devices)
    if stage >= 3:
        kept -= per["weights"] * (1 - 1 / devices)
    return kept * transformer.param_count(cfg)


# ---------------------------------------------------------------------------
# transformer.pick_mesh
# ---------------------------------------------------------------------------


def _tps(hw, chips, limit=None):
    top = hw.node_chips if limit is None else limit
    return [tp for tp in range(1, top + 1) if top % tp == 0 and chips % tp == 0]


def _bound(cfg, hw, chips, tokens, seq, tp, across, per=None):
    needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                        across_nodes=across)
    return (tokens / chips if per is None else per) >= needed


def pick_mesh__never_across(cfg, hw, chips, tokens, seq):
    """Leaves across_nodes at its default."""
    for tp in _tps(hw, chips):
        needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp)
        if tokens / chips >= needed:
            return chips // tp, tp
    return None


def pick_mesh__most_tp(cfg, hw, chips, tokens, seq):
    """Keeps the last (largest) tp that works."""
    found = None
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips):
            found = (chips // tp, tp)
    return found


def pick_mesh__tp_any_divisor(cfg, hw, chips, tokens, seq):
    """Any tp up to a node's size that divides the chips (3 and 6 too)."""
    for tp in range(1, hw.node_chips + 1):
        if chips % tp == 0 and _bound(cfg, hw, chips, tokens, seq, tp,
                                      chips > hw.node_chips):
            return chips // tp, tp
    return None


def pick_mesh__per_group(cfg, hw, chips, tokens, seq):
    """Tokens per FSDP group compared with the critical batch."""
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips,
                  per=tokens / (chips // tp)):
            return chips // tp, tp
    return None


def pick_mesh__swapped(cfg, hw, chips, tokens, seq):
    """Returns (tp, fsdp)."""
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips):
            return tp, chips // tp
    return None


def pick_mesh__always_across(cfg, hw, chips, tokens, seq):
    """across_nodes=True always: 'FSDP spans nodes'."""
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, True):
            return chips // tp, tp
    return None


def pick_mesh__total_tokens(cfg, hw, chips, tokens, seq):
    """The whole batch compared with the critical batch."""
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips,
                  per=tokens):
            return chips // tp, tp
    return None


def pick_mesh__fallback(cfg, hw, chips, tokens, seq):
    """Falls back on the most tensor parallelism when nothing is compute-bound."""
    tps = _tps(hw, chips)
    for tp in tps:
        if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips):
            return chips // tp, tp
    return chips // tps[-1], tps[-1]


def pick_mesh__across_from_fsdp(cfg, hw, chips, tokens, seq):
    """across_nodes when fsdp exceeds a node's GPUs."""
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, chips // tp > hw.node_chips):
            return chips // tp, tp
    return None


def pick_mesh__right_loop(cfg, hw, chips, tokens, seq):
    """Right: tp over the divisors of a node, least first."""
    across = chips > hw.node_chips
    for tp in _tps(hw, chips):
        if _bound(cfg, hw, chips, tokens, seq, tp, across):
            return chips // tp, tp
    return None


def pick_mesh__right_powers(cfg, hw, chips, tokens, seq):
    """Right: tp in 1, 2, 4, 8 (a node of 8), a list returned."""
    for tp in (1, 2, 4, 8):
        if tp > hw.node_chips or hw.node_chips % tp or chips % tp:
            continue
        if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips):
            return [chips // tp, tp]
    return None


def pick_mesh__right_min(cfg, hw, chips, tokens, seq):
    """Right: every mesh that is compute-bound, the least tp of them."""
    good = [tp for tp in _tps(hw, chips)
            if _bound(cfg, hw, chips, tokens, seq, tp, chips > hw.node_chips)]
    return (chips // min(good), min(good)) if good else None


def pick_mesh__right_nodes(cfg, hw, chips, tokens, seq):
    """Right: counts the nodes first."""
    nodes = math.ceil(chips / hw.node_chips)
    per_chip = tokens / chips
    for tp in _tps(hw, chips):
        needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                            across_nodes=nodes > 1)
        if per_chip >= needed:
            return (chips // tp, tp)
    return None


# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------

_PREFIX = "transformer."


def _rows(*functions) -> list[tuple[str, object, str]]:
    """(exercise id, function, what) for each, the id from the function's name."""
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        rows.append((_PREFIX + exercise, function,
                     function.__doc__.strip().rstrip(".")))
    return rows


_ALL = [value for name, value in dict(globals()).items()
        if callable(value) and "__" in name and not name.startswith("_")]

#: The wrong answers (the benchmark's table).
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])
#: The right answers: each must pass its check.
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])
