"""Held-out answers written from the exercise texts alone (chapters 7 and 8), writer W4.

Written as a learner would write them: from the texts of the two student notebooks
(exercises/07_transformer_exercises.ipynb, exercises/08_multiprocess_exercises.ipynb),
the two chapters they follow (book/07_transformer.ipynb, book/08_multiprocess.ipynb)
and the source of the public library modules those chapters use
(jaxcourse/transformer/, jaxcourse/processes.py, jaxcourse/launch/), plus what the
names the notebooks import print on small inputs (the tiny config's block residuals,
a few job logs and sacct lines). No checker, hint, reference solution, stored
output, test or other benchmark was read or run; every wrong answer is a mistake a
reader of those texts could make, and every right answer was reasoned from them.
"""
from __future__ import annotations

# ruff: noqa: E501  (each docstring is one line naming the mistake)

# --------------------------------------------------------------------------------
# transformer.count_params
# --------------------------------------------------------------------------------


def count_params__kv_as_query_heads(cfg, tied=False):
    """Counts the key and value projections as wide as the queries (d x d), forgetting GQA."""
    d = cfg.d_model
    attention = 4 * d * d
    mlp = 3 * d * cfg.hidden
    block = attention + mlp + 2 * d
    output = 0 if tied else cfg.vocab * d
    return cfg.layers * block + cfg.vocab * d + d + output


def count_params__tied_ignored(cfg, tied=False):
    """Always counts the output layer as a separate vocab x d matrix, even when tied."""
    d, h = cfg.d_model, cfg.head_dim
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + 2 * cfg.vocab * d + d


def count_params__tied_drops_both(cfg, tied=False):
    """When tied, leaves out both the token table and the output layer."""
    d, h = cfg.d_model, cfg.head_dim
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 3 * d * cfg.hidden + 2 * d
    tables = 0 if tied else 2 * cfg.vocab * d
    return cfg.layers * block + tables + d


def count_params__no_final_norm(cfg, tied=False):
    """Counts the two norms in each block but forgets the final norm's scale."""
    d, h = cfg.d_model, cfg.head_dim
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + cfg.vocab * d * (1 if tied else 2)


def count_params__one_norm_per_block(cfg, tied=False):
    """Counts one RMSNorm scale per block instead of two."""
    d, h = cfg.d_model, cfg.head_dim
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 3 * d * cfg.hidden + d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__two_mlp_matrices(cfg, tied=False):
    """Counts the MLP as a plain MLP with two d x hidden matrices, not SwiGLU's three."""
    d, h = cfg.d_model, cfg.head_dim
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 2 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__kv_width_times_d(cfg, tied=False):
    """Takes the key/value projections as d x (kv_heads * d) instead of kv_heads * head_dim."""
    d = cfg.d_model
    attention = 2 * d * d + 2 * d * cfg.kv_heads * d
    block = attention + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_params__no_norms(cfg, tied=False):
    """Leaves out every RMSNorm scale (they are not matrices)."""
    d, h = cfg.d_model, cfg.head_dim
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 3 * d * cfg.hidden
    return cfg.layers * block + cfg.vocab * d * (1 if tied else 2)


def count_params__right_by_parts(cfg, tied=False):
    """Right: per block q, o (d x heads*h), k, v (d x kv_heads*h), 3 MLP matrices, 2 norms; table, final norm, untied output."""
    d = cfg.d_model
    h = d // cfg.heads
    queries_and_out = 2 * d * (cfg.heads * h)
    keys_and_values = 2 * d * (cfg.kv_heads * h)
    swiglu = 3 * d * cfg.hidden
    norms = 2 * d
    per_block = queries_and_out + keys_and_values + swiglu + norms
    table = cfg.vocab * d
    output = 0 if tied else d * cfg.vocab
    return cfg.layers * per_block + table + d + output


def count_params__right_shapes(cfg, tied=False):
    """Right: sums the sizes of the listed weight shapes, stacked over the layers."""
    d, h = cfg.d_model, cfg.head_dim
    L = cfg.layers
    shapes = [
        (L, d, cfg.heads * h),       # wq
        (L, d, cfg.kv_heads * h),    # wk
        (L, d, cfg.kv_heads * h),    # wv
        (L, cfg.heads * h, d),       # wo
        (L, d, cfg.hidden),          # w_gate
        (L, d, cfg.hidden),          # w_up
        (L, cfg.hidden, d),          # w_down
        (L, d),                      # attn_norm
        (L, d),                      # mlp_norm
        (cfg.vocab, d),              # embed
        (d,),                        # final_norm
    ]
    if not tied:
        shapes.append((d, cfg.vocab))  # unembed
    total = 0
    for shape in shapes:
        size = 1
        for n in shape:
            size *= n
        total += size
    return total


# --------------------------------------------------------------------------------
# transformer.bytes_per_param
# --------------------------------------------------------------------------------


def _size(dtype):
    import numpy as np

    return int(np.dtype(dtype).itemsize)


def bytes_per_param__grads_in_store_dtype(precision):
    """Keeps the gradients in the stored dtype, like the course's step (18 in mixed), not ZeRO's compute dtype."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    master = s if s != c else 0
    out = {"weights": c, "master": master, "grads": s, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = s + 2 * m
    return out


def bytes_per_param__master_always(precision):
    """Always counts a master copy, even when it is stored in the compute dtype."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    out = {"weights": c, "master": s, "grads": c, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = s + 2 * m
    return out


def bytes_per_param__one_moment(precision):
    """Counts Adam's moments as one number per parameter, not two."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    master = s if s != c else 0
    out = {"weights": c, "master": master, "grads": c, "adam": m}
    out["total"] = sum(out.values())
    out["stored"] = s + m
    return out


def bytes_per_param__stored_only_moments(precision):
    """Counts as stored only Adam's moments, forgetting the stored weights."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    master = s if s != c else 0
    out = {"weights": c, "master": master, "grads": c, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = 2 * m
    return out


def bytes_per_param__stored_is_total(precision):
    """Takes what lives between steps to be the whole total."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    master = s if s != c else 0
    out = {"weights": c, "master": master, "grads": c, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = out["total"]
    return out


def bytes_per_param__weights_in_store_dtype(precision):
    """Gives the weights the step computes with the stored dtype's bytes."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    master = s if s != c else 0
    out = {"weights": s, "master": master, "grads": c, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = s + 2 * m
    return out


def bytes_per_param__bits_not_bytes(precision):
    """Reads each dtype's size in bits (32, 16) instead of bytes."""
    import numpy as np

    def bits(dtype):
        return int(np.dtype(dtype).itemsize * 8)

    c, s, m = bits(precision.compute), bits(precision.store), bits(precision.moments)
    master = s if s != c else 0
    out = {"weights": c, "master": master, "grads": c, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = s + 2 * m
    return out


def bytes_per_param__stored_with_grads(precision):
    """Counts the gradients among what lives between two steps."""
    c, s, m = _size(precision.compute), _size(precision.store), _size(precision.moments)
    master = s if s != c else 0
    out = {"weights": c, "master": master, "grads": c, "adam": 2 * m}
    out["total"] = sum(out.values())
    out["stored"] = s + c + 2 * m
    return out


def bytes_per_param__right_itemsizes(precision):
    """Right: compute-dtype weights and grads, a master only if stored differently, two moments; stored = store + moments."""
    import numpy as np

    compute = np.dtype(precision.compute)
    store = np.dtype(precision.store)
    moments = np.dtype(precision.moments)
    parts = {
        "weights": compute.itemsize,
        "master": store.itemsize if store != compute else 0,
        "grads": compute.itemsize,
        "adam": 2 * moments.itemsize,
    }
    parts = {k: int(v) for k, v in parts.items()}
    parts["total"] = parts["weights"] + parts["master"] + parts["grads"] + parts["adam"]
    parts["stored"] = int(store.itemsize) + parts["adam"]
    return parts


def bytes_per_param__right_jnp(precision):
    """Right: the same accounting with jnp.dtype sizes, total summed from the four parts."""
    import jax.numpy as jnp

    c = jnp.dtype(precision.compute).itemsize
    s = jnp.dtype(precision.store).itemsize
    m = jnp.dtype(precision.moments).itemsize
    same = jnp.dtype(precision.store) == jnp.dtype(precision.compute)
    result = {"weights": int(c), "master": 0 if same else int(s),
              "grads": int(c), "adam": int(2 * m)}
    result["total"] = sum(result.values())
    result["stored"] = int(s + 2 * m)
    return result


# --------------------------------------------------------------------------------
# transformer.activation_bytes_per_token
# --------------------------------------------------------------------------------

_COMPUTE_BYTES = {"float32": 4, "mixed": 2, "bfloat16": 2}


def activation_bytes_per_token__full_keeps_nothing(cfg, remat, precision):
    """Reads full remat ("nothing saveable") as keeping nothing at all per block."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": 0, "names": 2 * d + hidden, "dots": 3 * d + 2 * kv + 2 * hidden}
    return cfg.layers * c * per_layer[remat]


def activation_bytes_per_token__names_without_input(cfg, remat, precision):
    """Counts only the two named arrays for "names", forgetting the block's input."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": d, "names": d + hidden, "dots": 3 * d + 2 * kv + 2 * hidden}
    return cfg.layers * c * per_layer[remat]


def activation_bytes_per_token__dots_kv_as_d(cfg, remat, precision):
    """Takes the key and value projections as d wide under "dots" (GQA forgotten)."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    per_layer = {"full": d, "names": 2 * d + hidden, "dots": 5 * d + 2 * hidden}
    return cfg.layers * c * per_layer[remat]


def activation_bytes_per_token__always_float32(cfg, remat, precision):
    """Counts 4 bytes a number whatever the precision (the master weights are float32)."""
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": d, "names": 2 * d + hidden, "dots": 3 * d + 2 * kv + 2 * hidden}
    return cfg.layers * 4 * per_layer[remat]


def activation_bytes_per_token__one_layer(cfg, remat, precision):
    """Gives one block's bytes per token, not multiplied by the layers."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": d, "names": 2 * d + hidden, "dots": 3 * d + 2 * kv + 2 * hidden}
    return c * per_layer[remat]


def activation_bytes_per_token__dots_all_seven_products(cfg, remat, precision):
    """Counts every weight product under "dots", the MLP's down projection too, plus the input."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": d, "names": 2 * d + hidden, "dots": 4 * d + 2 * kv + 2 * hidden}
    return cfg.layers * c * per_layer[remat]


def activation_bytes_per_token__adds_log_softmax(cfg, remat, precision):
    """Adds the loss's float32 log-softmax (4 x vocab a token) to the blocks' bytes."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": d, "names": 2 * d + hidden, "dots": 3 * d + 2 * kv + 2 * hidden}
    return cfg.layers * c * per_layer[remat] + 4 * cfg.vocab


def activation_bytes_per_token__dots_no_input(cfg, remat, precision):
    """Counts under "dots" the six projections' outputs but not the block's input."""
    c = _COMPUTE_BYTES[precision]
    d, hidden = cfg.d_model, cfg.hidden
    kv = cfg.kv_heads * cfg.head_dim
    per_layer = {"full": d, "names": 2 * d + hidden, "dots": 2 * d + 2 * kv + 2 * hidden}
    return cfg.layers * c * per_layer[remat]


def activation_bytes_per_token__right_widths(cfg, remat, precision):
    """Right: per layer full d, names 2d + hidden, dots 3d + 2 kv + 2 hidden, in the compute dtype's bytes."""
    bytes_per_number = {"float32": 4, "mixed": 2}[precision]
    d = cfg.d_model
    kv = cfg.kv_heads * (cfg.d_model // cfg.heads)
    if remat == "full":
        width = d
    elif remat == "names":
        width = d + d + cfg.hidden          # input, attn_out, mlp_hidden
    elif remat == "dots":
        width = d + d + d + 2 * kv + 2 * cfg.hidden   # input, q, o, k, v, gate, up
    else:
        raise ValueError(remat)
    return width * bytes_per_number * cfg.layers


def activation_bytes_per_token__right_from_precisions(cfg, remat, precision):
    """Right: lists the kept arrays' widths per policy, times layers and the compute itemsize from PRECISIONS."""
    import jax.numpy as jnp

    from jaxcourse.transformer import PRECISIONS

    c = jnp.dtype(PRECISIONS[precision].compute).itemsize
    d, kv, hidden = cfg.d_model, cfg.kv_heads * cfg.head_dim, cfg.hidden
    kept = {"full": [d], "names": [d, d, hidden],
            "dots": [d, d, d, kv, kv, hidden, hidden]}[remat]
    return int(sum(kept) * c * cfg.layers)


# --------------------------------------------------------------------------------
# transformer.flops_per_token
# --------------------------------------------------------------------------------


def _matmul_weights(cfg):
    d, h = cfg.d_model, cfg.head_dim
    per_layer = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h + 3 * d * cfg.hidden
    return cfg.layers * per_layer + d * cfg.vocab


def flops_per_token__embedding_counted(cfg, seq):
    """Takes 6 FLOPs per weight of every parameter, the embedding lookup and norms too."""
    d, h = cfg.d_model, cfg.head_dim
    per_layer = (2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
                 + 3 * d * cfg.hidden + 2 * d)
    params = cfg.layers * per_layer + 2 * cfg.vocab * d + d
    return 6 * params + 12 * cfg.layers * seq * cfg.heads * h


def flops_per_token__no_output_layer(cfg, seq):
    """Counts the blocks' products but leaves out the output layer's d x vocab."""
    d, h = cfg.d_model, cfg.head_dim
    per_layer = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h + 3 * d * cfg.hidden
    return 6 * cfg.layers * per_layer + 12 * cfg.layers * seq * cfg.heads * h


def flops_per_token__causal_half(cfg, seq):
    """Halves attention's term for the causal mask (6 instead of 12 per layer, seq, d)."""
    return 6 * _matmul_weights(cfg) + 6 * cfg.layers * seq * cfg.heads * cfg.head_dim


def flops_per_token__attention_forward_only(cfg, seq):
    """Counts attention's two products forward only (2 x 2 seq heads h), not the backward."""
    return 6 * _matmul_weights(cfg) + 4 * cfg.layers * seq * cfg.heads * cfg.head_dim


def flops_per_token__attention_kv_heads(cfg, seq):
    """Counts attention's scores and sum over the kv_heads instead of the query heads."""
    return 6 * _matmul_weights(cfg) + 12 * cfg.layers * seq * cfg.kv_heads * cfg.head_dim


def flops_per_token__weights_forward_only(cfg, seq):
    """Counts 2 FLOPs per weight (the forward pass) for the products, forgetting the backward 4."""
    return 2 * _matmul_weights(cfg) + 12 * cfg.layers * seq * cfg.heads * cfg.head_dim


def flops_per_token__attention_one_layer(cfg, seq):
    """Adds attention's term once for the model, not once per layer."""
    return 6 * _matmul_weights(cfg) + 12 * seq * cfg.heads * cfg.head_dim


def flops_per_token__attention_seq_squared(cfg, seq):
    """Counts attention per sequence (seq x seq) rather than per token."""
    return 6 * _matmul_weights(cfg) + 12 * cfg.layers * seq * seq * cfg.heads * cfg.head_dim


def flops_per_token__right_six_p_plus_attention(cfg, seq):
    """Right: 6 per weight of q, k, v, o, the three MLP matrices and the output layer, plus 12 layers seq heads h."""
    d = cfg.d_model
    h = d // cfg.heads
    attn_weights = d * cfg.heads * h * 2 + d * cfg.kv_heads * h * 2
    mlp_weights = 3 * d * cfg.hidden
    output_weights = d * cfg.vocab
    weights = cfg.layers * (attn_weights + mlp_weights) + output_weights
    attention = cfg.layers * 2 * (2 * seq * cfg.heads * h) * 3
    return 6 * weights + attention


def flops_per_token__right_forward_times_three(cfg, seq):
    """Right: forward FLOPs per token (2 per weight, 2 seq heads h per attention product), times 3."""
    d, h = cfg.d_model, cfg.head_dim
    forward = 0
    for _ in range(cfg.layers):
        forward += 2 * d * (cfg.heads * h)            # queries
        forward += 2 * 2 * d * (cfg.kv_heads * h)     # keys, values
        forward += 2 * (cfg.heads * h) * d            # output projection
        forward += 2 * 3 * d * cfg.hidden             # gate, up, down
        forward += 2 * 2 * seq * cfg.heads * h        # q k^T and weights @ v
    forward += 2 * d * cfg.vocab                      # output layer
    return 3 * forward


# --------------------------------------------------------------------------------
# transformer.micro_batches
# --------------------------------------------------------------------------------


def micro_batches__state_forgotten(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Compares only one micro-batch's activations with the budget, forgetting the state."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (batch // m) * seq * activation_bytes <= budget_bytes:
            return m
    return None


def micro_batches__strict_less(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Requires the state plus activations to be strictly below the budget."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (state_bytes + (batch // m) * seq * activation_bytes
                               < budget_bytes):
            return m
    return None


def micro_batches__not_a_divisor(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Rounds the needed micro-batches up, without asking that m divide the batch."""
    import math

    room = budget_bytes - state_bytes
    per_sequence = seq * activation_bytes
    if room < per_sequence:
        return None
    return max(1, math.ceil(batch * per_sequence / room))


def micro_batches__returns_size(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Returns the sequences in each micro-batch (batch / m) instead of m."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (state_bytes + (batch // m) * seq * activation_bytes
                               <= budget_bytes):
            return batch // m
    return None


def micro_batches__per_sequence_bytes(batch, seq, activation_bytes, state_bytes,
                                      budget_bytes):
    """Takes activation_bytes per sequence, forgetting to multiply by seq."""
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + (batch // m) * activation_bytes <= budget_bytes:
            return m
    return None


def micro_batches__state_split_too(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Divides the state by m as well, as if accumulation split it too."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (state_bytes / m + (batch // m) * seq * activation_bytes
                               <= budget_bytes):
            return m
    return None


def micro_batches__no_none(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Falls back to one sequence per micro-batch (m = batch) when nothing fits, never None."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (state_bytes + (batch // m) * seq * activation_bytes
                               <= budget_bytes):
            return m
    return batch


def micro_batches__misses_m_equals_batch(batch, seq, activation_bytes, state_bytes,
                                         budget_bytes):
    """Tries m from 1 to batch - 1, so one sequence at a time is never tried."""
    for m in range(1, batch):
        if batch % m == 0 and (state_bytes + (batch // m) * seq * activation_bytes
                               <= budget_bytes):
            return m
    return None


def micro_batches__right_divisors(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Right: the first divisor m of batch, from 1 up, with state + batch/m x seq x activation <= budget."""
    divisors = [m for m in range(1, batch + 1) if batch % m == 0]
    for m in divisors:
        peak = state_bytes + (batch // m) * seq * activation_bytes
        if peak <= budget_bytes:
            return m
    return None


def micro_batches__right_sequences_that_fit(batch, seq, activation_bytes, state_bytes,
                                            budget_bytes):
    """Right: how many sequences fit beside the state, then the fewest m dividing batch with batch/m at most that."""
    per_sequence = seq * activation_bytes
    fit = 0
    while state_bytes + (fit + 1) * per_sequence <= budget_bytes and fit < batch:
        fit += 1
    if fit == 0:
        return None
    m = 1
    while batch % m or batch // m > fit:
        m += 1
    return m


# --------------------------------------------------------------------------------
# transformer.tp_specs
# --------------------------------------------------------------------------------


def tp_specs__wo_by_columns(cfg, model):
    """Splits the output projection by its columns, like the queries."""
    from jax.sharding import PartitionSpec as P

    col, whole = P(None, None, "model"), P(None, None, None)
    heads = cfg.heads % model == 0
    kv = cfg.kv_heads % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if heads else whole, "wk": col if kv else whole,
            "wv": col if kv else whole, "wo": col if heads else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": P(None, "model", None) if units else whole,
            "attn_norm": P(None, None), "mlp_norm": P(None, None)}


def tp_specs__norms_split(cfg, model):
    """Splits the two norms' scales over "model" along d as well."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, None, "model"), P(None, "model", None), P()
    heads = cfg.heads % model == 0
    kv = cfg.kv_heads % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if heads else whole, "wk": col if kv else whole,
            "wv": col if kv else whole, "wo": row if heads else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": row if units else whole,
            "attn_norm": P(None, "model"), "mlp_norm": P(None, "model")}


def tp_specs__kv_follow_query_heads(cfg, model):
    """Splits the keys and values whenever the query heads divide, counting kv heads as query heads."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, None, "model"), P(None, "model", None), P()
    heads = cfg.heads % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if heads else whole, "wk": col if heads else whole,
            "wv": col if heads else whole, "wo": row if heads else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": row if units else whole, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__columns_divide(cfg, model):
    """Checks that the columns (heads x head_dim) divide over the devices, not the heads."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, None, "model"), P(None, "model", None), P()
    h = cfg.head_dim
    q = (cfg.heads * h) % model == 0
    kv = (cfg.kv_heads * h) % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if q else whole, "wk": col if kv else whole,
            "wv": col if kv else whole, "wo": row if q else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": row if units else whole, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__mlp_rows_and_columns_swapped(cfg, model):
    """Splits gate and up by their rows and down by its columns."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, None, "model"), P(None, "model", None), P()
    heads = cfg.heads % model == 0
    kv = cfg.kv_heads % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if heads else whole, "wk": col if kv else whole,
            "wv": col if kv else whole, "wo": row if heads else whole,
            "w_gate": row if units else whole, "w_up": row if units else whole,
            "w_down": col if units else whole, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__always_split(cfg, model):
    """Splits every projection over "model" whether or not the heads and units divide."""
    from jax.sharding import PartitionSpec as P

    col, row = P(None, None, "model"), P(None, "model", None)
    return {"wq": col, "wk": col, "wv": col, "wo": row, "w_gate": col, "w_up": col,
            "w_down": row, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__attention_whole_if_kv_short(cfg, model):
    """Keeps all of attention whole (queries and output too) when the kv heads do not divide."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, None, "model"), P(None, "model", None), P()
    attn = cfg.heads % model == 0 and cfg.kv_heads % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if attn else whole, "wk": col if attn else whole,
            "wv": col if attn else whole, "wo": row if attn else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": row if units else whole, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__no_layers_axis(cfg, model):
    """Writes the specs for (d, out) matrices, forgetting the leading layers axis."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, "model"), P("model", None), P()
    heads = cfg.heads % model == 0
    kv = cfg.kv_heads % model == 0
    units = cfg.hidden % model == 0
    return {"wq": col if heads else whole, "wk": col if kv else whole,
            "wv": col if kv else whole, "wo": row if heads else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": row if units else whole, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__kv_at_least_devices(cfg, model):
    """Splits the keys and values when there are at least as many kv heads as devices (>=, not divides)."""
    from jax.sharding import PartitionSpec as P

    col, row, whole = P(None, None, "model"), P(None, "model", None), P()
    heads = cfg.heads % model == 0
    kv = cfg.kv_heads >= model
    units = cfg.hidden % model == 0
    return {"wq": col if heads else whole, "wk": col if kv else whole,
            "wv": col if kv else whole, "wo": row if heads else whole,
            "w_gate": col if units else whole, "w_up": col if units else whole,
            "w_down": row if units else whole, "attn_norm": P(), "mlp_norm": P()}


def tp_specs__right_by_role(cfg, model):
    """Right: heads-producing projections by columns, heads-consuming by rows, only when whole heads/units divide; norms whole."""
    from jax.sharding import PartitionSpec as P

    def out_cols(ok):
        return P(None, None, "model") if ok else P(None, None, None)

    def in_rows(ok):
        return P(None, "model", None) if ok else P(None, None, None)

    q_ok = cfg.heads % model == 0
    kv_ok = cfg.kv_heads % model == 0
    mlp_ok = cfg.hidden % model == 0
    specs = {}
    for name in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down",
                 "attn_norm", "mlp_norm"):
        if name == "wq":
            specs[name] = out_cols(q_ok)
        elif name in ("wk", "wv"):
            specs[name] = out_cols(kv_ok)
        elif name == "wo":
            specs[name] = in_rows(q_ok)
        elif name in ("w_gate", "w_up"):
            specs[name] = out_cols(mlp_ok)
        elif name == "w_down":
            specs[name] = in_rows(mlp_ok)
        else:
            specs[name] = P(None, None)
    return specs


def tp_specs__right_table(cfg, model):
    """Right: a table of which axis each weight splits and on what count it must divide."""
    from jax.sharding import PartitionSpec as P

    rule = {"wq": (2, cfg.heads), "wk": (2, cfg.kv_heads), "wv": (2, cfg.kv_heads),
            "wo": (1, cfg.heads), "w_gate": (2, cfg.hidden), "w_up": (2, cfg.hidden),
            "w_down": (1, cfg.hidden)}
    specs = {"attn_norm": P(), "mlp_norm": P()}
    for name, (axis, count) in rule.items():
        parts = [None, None, None]
        if count % model == 0:
            parts[axis] = "model"
        specs[name] = P(*parts)
    return specs


# --------------------------------------------------------------------------------
# transformer.pipeline_micro_batches
# --------------------------------------------------------------------------------


def pipeline_micro_batches__p_not_p_minus_1(stages, percent):
    """Takes the bubble as p / (m + p - 1), p idle ticks where p - 1 was meant."""
    m = 1
    while 100 * stages > percent * (m + stages - 1):
        m += 1
    return m


def pipeline_micro_batches__returns_ticks(stages, percent):
    """Finds the right m but returns the ticks, m + p - 1."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m + stages - 1


def pipeline_micro_batches__strictly_under(stages, percent):
    """Asks for a bubble strictly under the target (< where at most was meant)."""
    if stages == 1:
        return 1
    m = 1
    while 100 * (stages - 1) >= percent * (m + stages - 1):
        m += 1
    return m


def pipeline_micro_batches__rounds(stages, percent):
    """Solves (p - 1)(100 - percent) / percent and rounds it to the nearest integer."""
    m = (stages - 1) * (100 - percent) / percent
    return max(1, round(m))


def pipeline_micro_batches__floors(stages, percent):
    """Solves for m and truncates it with int() instead of rounding up."""
    m = (stages - 1) * (100 - percent) / percent
    return max(1, int(m))


def pipeline_micro_batches__bubble_over_m(stages, percent):
    """Takes the bubble as (p - 1) / m, the idle ticks over the micro-batches."""
    import math

    return max(1, math.ceil(100 * (stages - 1) / percent))


def pipeline_micro_batches__zero_for_one_stage(stages, percent):
    """Uses the ceiling formula as is, so one stage (or 100 %) gives 0 micro-batches."""
    return -(-(stages - 1) * (100 - percent) // percent)


def pipeline_micro_batches__percent_as_fraction(stages, percent):
    """Compares the bubble fraction with the percent itself, not percent / 100."""
    m = 1
    while (stages - 1) / (m + stages - 1) > percent:
        m += 1
    return m


def pipeline_micro_batches__ticks_m_plus_p(stages, percent):
    """Counts m + p ticks in a step, one too many, for a bubble of (p - 1) / (m + p)."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages):
        m += 1
    return m


def pipeline_micro_batches__right_integer_ceiling(stages, percent):
    """Right: (p - 1) / (m + p - 1) <= percent / 100 gives m >= (p - 1)(100 - percent) / percent, rounded up, at least 1."""
    idle = stages - 1
    needed = -(-idle * (100 - percent) // percent)
    return max(1, needed)


def pipeline_micro_batches__right_search(stages, percent):
    """Right: tries m = 1, 2, ... until 100 x (p - 1) <= percent x (m + p - 1), in integers."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m


# --------------------------------------------------------------------------------
# transformer.zero_bytes_per_device
# --------------------------------------------------------------------------------


def _untied_params(cfg):
    d, h = cfg.d_model, cfg.head_dim
    per_layer = (2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
                 + 3 * d * cfg.hidden + 2 * d)
    return cfg.layers * per_layer + 2 * cfg.vocab * d + d


def zero_bytes_per_device__stage1_only_adam(cfg, stage, devices, precision):
    """Stage 1 splits only Adam's moments and leaves the master copy whole."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    n = _untied_params(cfg)
    split = {"adam": True, "master": stage >= 2, "grads": stage >= 2,
             "weights": stage >= 3}
    return sum(per[k] * n / (devices if cut else 1) for k, cut in split.items())


def zero_bytes_per_device__stages_shifted(cfg, stage, devices, precision):
    """Splits the gradients only from stage 3 on, the weights never."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    n = _untied_params(cfg)
    split = {"master": True, "adam": True, "grads": stage >= 3, "weights": False}
    return sum(per[k] * n / (devices if cut else 1) for k, cut in split.items())


def zero_bytes_per_device__zero_paper_16(cfg, stage, devices, precision):
    """Uses ZeRO's own accounting (gradients in the compute dtype, 16 bytes), not the step's."""
    import numpy as np

    from jaxcourse.transformer import PRECISIONS

    p = PRECISIONS[precision]
    c = np.dtype(p.compute).itemsize
    s = np.dtype(p.store).itemsize
    per = {"weights": c, "master": s if s != c else 0, "grads": c,
           "adam": 2 * np.dtype(p.moments).itemsize}
    n = _untied_params(cfg)
    split = {"master": True, "adam": True, "grads": stage >= 2, "weights": stage >= 3}
    return float(sum(per[k] * n / (devices if cut else 1) for k, cut in split.items()))


def zero_bytes_per_device__tied_embedding(cfg, stage, devices, precision):
    """Counts the embedding once, as if the output layer were tied to it."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    n = _untied_params(cfg) - cfg.vocab * cfg.d_model
    split = {"master": True, "adam": True, "grads": stage >= 2, "weights": stage >= 3}
    return sum(per[k] * n / (devices if cut else 1) for k, cut in split.items())


def zero_bytes_per_device__all_split(cfg, stage, devices, precision):
    """Divides the whole state by the devices at every stage."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    return per["total"] * _untied_params(cfg) / devices


def zero_bytes_per_device__stage2_splits_weights(cfg, stage, devices, precision):
    """Has stage 2 split the compute weights as well as the gradients."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    n = _untied_params(cfg)
    split = {"master": True, "adam": True, "grads": stage >= 2, "weights": stage >= 2}
    return sum(per[k] * n / (devices if cut else 1) for k, cut in split.items())


def zero_bytes_per_device__stored_only(cfg, stage, devices, precision):
    """Counts only the state stored between steps (master and moments), not the peak."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    n = _untied_params(cfg)
    return per["stored"] * n / devices


def zero_bytes_per_device__minus_one_devices(cfg, stage, devices, precision):
    """Divides each split part by devices - 1, as a ring's (n - 1)/n would suggest."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    n = _untied_params(cfg)
    shards = max(devices - 1, 1)
    split = {"master": True, "adam": True, "grads": stage >= 2, "weights": stage >= 3}
    return sum(per[k] * n / (shards if cut else 1) for k, cut in split.items())


def zero_bytes_per_device__right_by_parts(cfg, stage, devices, precision):
    """Right: master and Adam split from stage 1, gradients from 2, compute weights at 3; the rest whole."""
    from jaxcourse import transformer

    per = transformer.bytes_per_param(precision)
    d, h = cfg.d_model, cfg.d_model // cfg.heads
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    block = attention + 3 * d * cfg.hidden + 2 * d
    n = cfg.layers * block + cfg.vocab * d + d + d * cfg.vocab
    whole = 0.0
    split = 0.0
    for part in ("weights", "master", "grads", "adam"):
        is_split = (part in ("master", "adam")
                    or (part == "grads" and stage >= 2)
                    or (part == "weights" and stage == 3))
        if is_split:
            split += per[part] * n
        else:
            whole += per[part] * n
    return whole + split / devices


def zero_bytes_per_device__right_stage_table(cfg, stage, devices, precision):
    """Right: per parameter, (weights whole below stage 3) + (grads whole at stage 1) + the rest over devices."""
    from jaxcourse import transformer

    b = transformer.bytes_per_param(precision)
    n = _untied_params(cfg)
    if stage == 1:
        per_param = b["weights"] + b["grads"] + (b["master"] + b["adam"]) / devices
    elif stage == 2:
        per_param = b["weights"] + (b["grads"] + b["master"] + b["adam"]) / devices
    elif stage == 3:
        per_param = b["total"] / devices
    else:
        raise ValueError(f"ZeRO has stages 1, 2 and 3, not {stage}")
    return per_param * n


# --------------------------------------------------------------------------------
# transformer.pick_mesh
# --------------------------------------------------------------------------------


def pick_mesh__most_tp_first(cfg, hw, chips, tokens, seq):
    """Tries the largest tensor parallelism first and returns the first compute-bound mesh."""
    from jaxcourse import transformer

    across = chips > hw.node_chips
    for tp in range(hw.node_chips, 0, -1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=across)
        if tokens / chips >= need:
            return (fsdp, tp)
    return None


def pick_mesh__never_across(cfg, hw, chips, tokens, seq):
    """Leaves across_nodes at False, pricing the data axis on NVLink even across nodes."""
    from jaxcourse import transformer

    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp)
        if tokens / chips >= need:
            return (fsdp, tp)
    return None


def pick_mesh__across_if_fsdp_exceeds_node(cfg, hw, chips, tokens, seq):
    """Says the data axis leaves the node only when fsdp alone is longer than a node."""
    from jaxcourse import transformer

    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=fsdp > hw.node_chips)
        if tokens / chips >= need:
            return (fsdp, tp)
    return None


def pick_mesh__tokens_per_data_group(cfg, hw, chips, tokens, seq):
    """Compares the tokens of each data group (tokens / fsdp) with the critical batch per chip."""
    from jaxcourse import transformer

    across = chips > hw.node_chips
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=across)
        if tokens / fsdp >= need:
            return (fsdp, tp)
    return None


def pick_mesh__across_at_full_node(cfg, hw, chips, tokens, seq):
    """Says the data axis leaves the node once the chips fill a node (>= where more than was meant)."""
    from jaxcourse import transformer

    across = chips >= hw.node_chips
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=across)
        if tokens / chips >= need:
            return (fsdp, tp)
    return None


def pick_mesh__tp_any_divisor_of_chips(cfg, hw, chips, tokens, seq):
    """Lets tp be any divisor of chips, even larger than a node."""
    from jaxcourse import transformer

    across = chips > hw.node_chips
    for tp in range(1, chips + 1):
        if chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=across)
        if tokens / chips >= need:
            return (fsdp, tp)
    return None


def pick_mesh__returns_tp_first(cfg, hw, chips, tokens, seq):
    """Finds the right mesh but returns it as (tp, fsdp)."""
    from jaxcourse import transformer

    across = chips > hw.node_chips
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=across)
        if tokens / chips >= need:
            return (tp, fsdp)
    return None


def pick_mesh__no_none(cfg, hw, chips, tokens, seq):
    """Falls back to the most tensor parallelism when no mesh is compute-bound, never None."""
    from jaxcourse import transformer

    across = chips > hw.node_chips
    last = None
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        last = (fsdp, tp)
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                          across_nodes=across)
        if tokens / chips >= need:
            return (fsdp, tp)
    return last


def pick_mesh__right_least_tp(cfg, hw, chips, tokens, seq):
    """Right: tp from 1 up over the divisors of the node and chips; first with tokens/chips >= critical batch."""
    from jaxcourse import transformer

    per_chip = tokens / chips
    candidates = [tp for tp in range(1, hw.node_chips + 1)
                  if hw.node_chips % tp == 0 and chips % tp == 0]
    for tp in candidates:
        fsdp = chips // tp
        leaves_node = fsdp * tp > hw.node_chips
        critical = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                              across_nodes=leaves_node)
        if per_chip >= critical:
            return (fsdp, tp)
    return None


def pick_mesh__right_meshes_listed(cfg, hw, chips, tokens, seq):
    """Right: lists the (fsdp, tp) meshes by growing tp, data axis across nodes when chips exceed a node."""
    from jaxcourse import transformer

    meshes = []
    tp = 1
    while tp <= min(hw.node_chips, chips):
        if hw.node_chips % tp == 0 and chips % tp == 0:
            meshes.append((chips // tp, tp))
        tp += 1
    across = chips > hw.node_chips
    for fsdp, tp in meshes:
        if tokens / chips >= transformer.critical_batch(
                cfg, "FSDP + TP", hw, seq, fsdp, tp, across_nodes=across):
            return fsdp, tp
    return None


# --------------------------------------------------------------------------------
# multiprocess.process_rows
# --------------------------------------------------------------------------------


def process_rows__remainder_to_last(num_records, process_index, process_count):
    """Gives every process the floor share and all the leftover records to the last one."""
    import numpy as np

    share = num_records // process_count
    start = process_index * share
    stop = num_records if process_index == process_count - 1 else start + share
    return np.arange(start, stop)


def process_rows__ceil_blocks(num_records, process_index, process_count):
    """Cuts blocks of ceil(n / p) records, so the last processes get fewer or none."""
    import math

    import numpy as np

    size = math.ceil(num_records / process_count)
    start = min(process_index * size, num_records)
    return np.arange(start, min(start + size, num_records))


def process_rows__strided(num_records, process_index, process_count):
    """Takes every process_count-th record (strided shares) instead of a contiguous block."""
    import numpy as np

    return np.arange(process_index, num_records, process_count)


def process_rows__drops_remainder(num_records, process_index, process_count):
    """Gives each process n // p records and leaves the leftover ones out."""
    import numpy as np

    share = num_records // process_count
    return np.arange(process_index * share, (process_index + 1) * share)


def process_rows__extra_to_last_processes(num_records, process_index, process_count):
    """Hands the leftover records one each to the last processes instead of the first."""
    import numpy as np

    base, extra = divmod(num_records, process_count)
    first_long = process_count - extra
    size = base + (1 if process_index >= first_long else 0)
    start = process_index * base + max(0, process_index - first_long)
    return np.arange(start, start + size)


def process_rows__extra_off_by_one(num_records, process_index, process_count):
    """Gives one more record to processes 0 to n % p inclusive (<= where < was meant)."""
    import numpy as np

    base, extra = divmod(num_records, process_count)
    size = base + (1 if process_index <= extra else 0)
    start = process_index * base + min(process_index, extra)
    return np.arange(start, min(start + size, num_records))


def process_rows__rounded_share(num_records, process_index, process_count):
    """Gives every process round(n / p) records, the last one taking what is left."""
    import numpy as np

    share = round(num_records / process_count)
    start = min(process_index * share, num_records)
    stop = num_records if process_index == process_count - 1 else min(start + share,
                                                                      num_records)
    return np.arange(start, stop)


def process_rows__start_ignores_extra(num_records, process_index, process_count):
    """Sizes the shares right but starts each at index x (n // p), overlapping the leftovers."""
    import numpy as np

    base, extra = divmod(num_records, process_count)
    size = base + (1 if process_index < extra else 0)
    start = process_index * base
    return np.arange(start, start + size)


def process_rows__right_divmod(num_records, process_index, process_count):
    """Right: base, extra = divmod(n, p); the first extra processes take base + 1; contiguous starts."""
    import numpy as np

    base, extra = divmod(num_records, process_count)
    start = process_index * base + min(process_index, extra)
    size = base + (1 if process_index < extra else 0)
    return np.arange(start, start + size, dtype=np.int64)


def process_rows__right_array_split(num_records, process_index, process_count):
    """Right: the process's piece of np.array_split over all record indices."""
    import numpy as np

    pieces = np.array_split(np.arange(num_records), process_count)
    return np.asarray(pieces[process_index], dtype=np.int64)


def process_rows__right_boundaries(num_records, process_index, process_count):
    """Right: boundaries at floor(k x n / p) with the extra records front-loaded, built by counting shares."""
    import numpy as np

    sizes = [num_records // process_count] * process_count
    for p in range(num_records % process_count):
        sizes[p] += 1
    start = sum(sizes[:process_index])
    return np.arange(start, start + sizes[process_index])


# --------------------------------------------------------------------------------
# multiprocess.common_num_steps
# --------------------------------------------------------------------------------


def common_num_steps__max(local_sizes, batch_size):
    """Runs as many steps as the process with the most full batches."""
    return int(max(local_sizes) // batch_size)


def common_num_steps__ceil(local_sizes, batch_size):
    """Counts a last partial batch as a step (ceiling instead of floor)."""
    import math

    return int(min(math.ceil(size / batch_size) for size in local_sizes))


def common_num_steps__total_over_global_batch(local_sizes, batch_size):
    """Divides all the records by one global batch (batch_size x processes)."""
    return int(sum(local_sizes) // (batch_size * len(local_sizes)))


def common_num_steps__own_count(local_sizes, batch_size):
    """Uses process 0's own number of full batches."""
    return int(local_sizes[0] // batch_size)


def common_num_steps__at_least_one(local_sizes, batch_size):
    """Never goes below one step, even for a process with less than one batch."""
    return max(1, int(min(local_sizes) // batch_size))


def common_num_steps__true_division(local_sizes, batch_size):
    """Divides with / instead of //, returning a fraction of a step."""
    return min(local_sizes) / batch_size


def common_num_steps__rounded(local_sizes, batch_size):
    """Rounds each process's records over the batch size to the nearest whole step."""
    return int(min(round(size / batch_size) for size in local_sizes))


def common_num_steps__mean(local_sizes, batch_size):
    """Takes the mean count of full batches over the processes."""
    counts = [size // batch_size for size in local_sizes]
    return int(sum(counts) // len(counts))


def common_num_steps__right_min_of_floors(local_sizes, batch_size):
    """Right: each process's full batches, size // batch_size; the smallest of them."""
    return int(min(size // batch_size for size in local_sizes))


def common_num_steps__right_smallest_share(local_sizes, batch_size):
    """Right: the smallest share, floor-divided by the batch size, as an int."""
    smallest = min(int(size) for size in local_sizes)
    return smallest // int(batch_size)


# --------------------------------------------------------------------------------
# multiprocess.sum_metrics
# --------------------------------------------------------------------------------


def sum_metrics__dict_order(local_metrics, allreduce):
    """Issues one allreduce per metric in the dict's own order."""
    return {name: allreduce(value) for name, value in local_metrics.items()}


def sum_metrics__set_order(local_metrics, allreduce):
    """Iterates over a set of the names to be sure each metric is reduced once."""
    names = set(local_metrics)
    return {name: allreduce(local_metrics[name]) for name in names}


def sum_metrics__sorted_by_value(local_metrics, allreduce):
    """Sorts the metrics by their values to get a fixed order."""
    ordered = sorted(local_metrics.items(), key=lambda item: item[1])
    return {name: allreduce(value) for name, value in ordered}


def sum_metrics__sorted_by_length(local_metrics, allreduce):
    """Sorts the names by their length, ties left in the dict's order."""
    ordered = sorted(local_metrics, key=len)
    return {name: allreduce(local_metrics[name]) for name in ordered}


def sum_metrics__array_in_dict_order(local_metrics, allreduce):
    """Reduces one array of the values in dict order, then names the sums in sorted order."""
    import numpy as np

    values = np.array(list(local_metrics.values()), dtype=np.float64)
    sums = allreduce(values)
    return {name: float(s) for name, s in zip(sorted(local_metrics), sums, strict=True)}


def sum_metrics__sorted_by_hash(local_metrics, allreduce):
    """Sorts the names by hash(name), thinking a hash is the same everywhere."""
    ordered = sorted(local_metrics, key=hash)
    return {name: allreduce(local_metrics[name]) for name in ordered}


def sum_metrics__skips_zeros(local_metrics, allreduce):
    """Skips the metrics that are zero in this process (nothing to add), in sorted order."""
    out = {}
    for name in sorted(local_metrics):
        value = local_metrics[name]
        out[name] = allreduce(value) if value else 0.0
    return out


def sum_metrics__values_sorted_separately(local_metrics, allreduce):
    """Sorts the names and the values separately and pairs them up."""
    names = sorted(local_metrics)
    values = sorted(local_metrics.values())
    return {name: allreduce(value) for name, value in zip(names, values, strict=True)}


def sum_metrics__right_sorted_names(local_metrics, allreduce):
    """Right: one allreduce per metric, in sorted name order, the same in every process."""
    sums = {}
    for name in sorted(local_metrics):
        sums[name] = allreduce(local_metrics[name])
    return sums


def sum_metrics__right_one_array(local_metrics, allreduce):
    """Right: one allreduce of an array of the values in sorted name order, unpacked by the same order."""
    import numpy as np

    names = sorted(local_metrics)
    totals = allreduce(np.array([local_metrics[n] for n in names], dtype=np.float64))
    totals = np.asarray(totals)
    return {name: float(totals[i]) for i, name in enumerate(names)}


# --------------------------------------------------------------------------------
# multiprocess.run_epoch
# --------------------------------------------------------------------------------


def run_epoch__largest_count(local_data, batch_size, step):
    """Agrees with process_allgather but takes the largest count of batches."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = len(local_data) // batch_size
    counts = multihost_utils.process_allgather(np.int32(mine))
    steps = int(np.max(counts))
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(steps)]


def run_epoch__partial_last_batch(local_data, batch_size, step):
    """Agrees on the smallest count, counting a last partial batch as a batch."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = -(-len(local_data) // batch_size)
    steps = int(np.min(multihost_utils.process_allgather(np.int32(mine))))
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(steps)]


def run_epoch__truncates_results(local_data, batch_size, step):
    """Runs all of this process's batches, then keeps only the results of the common count."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = len(local_data) // batch_size
    results = [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(mine)]
    steps = int(np.min(multihost_utils.process_allgather(np.int32(mine))))
    return results[:steps]


def run_epoch__mean_count(local_data, batch_size, step):
    """Runs the mean number of batches over the processes."""
    import numpy as np
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    steps = int(np.sum(counts) // np.size(counts))
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(steps)]


def run_epoch__drops_last_agreed(local_data, batch_size, step):
    """Takes the smallest count and runs one batch fewer, to be safe."""
    import numpy as np
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    steps = int(np.min(counts)) - 1
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(max(steps, 0))]


def run_epoch__last_batches(local_data, batch_size, step):
    """Runs the agreed number of batches, but this process's last full batches, not its first."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = len(local_data) // batch_size
    steps = int(np.min(multihost_utils.process_allgather(np.int32(mine))))
    first = mine - steps
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(first, mine)]


def run_epoch__overlapping_windows(local_data, batch_size, step):
    """Agrees on the count, but slices batch i from record i (local_data[i:i + batch_size])."""
    import numpy as np
    from jax.experimental import multihost_utils

    steps = int(np.min(multihost_utils.process_allgather(
        np.int32(len(local_data) // batch_size))))
    return [step(local_data[i:i + batch_size]) for i in range(steps)]


def run_epoch__own_count(local_data, batch_size, step):
    """Takes the smallest of a list holding only this process's own count (no collective)."""
    counts = [len(local_data) // batch_size]
    steps = min(counts)
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(steps)]


def run_epoch__right_allgather_min(local_data, batch_size, step):
    """Right: gathers every process's count of full batches and runs the smallest, in order."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = np.int32(len(local_data) // batch_size)
    counts = np.asarray(multihost_utils.process_allgather(mine))
    steps = int(counts.min())
    out = []
    for i in range(steps):
        batch = local_data[i * batch_size:(i + 1) * batch_size]
        out.append(step(batch))
    return out


def run_epoch__right_gather_lengths(local_data, batch_size, step):
    """Right: gathers the record counts, the smallest over the batch size, then batches cut by reshape."""
    import numpy as np
    from jax.experimental import multihost_utils

    lengths = multihost_utils.process_allgather(np.int32(len(local_data)))
    steps = int(np.min(np.asarray(lengths))) // batch_size
    batches = np.asarray(local_data)[:steps * batch_size].reshape(steps, batch_size)
    return [step(batches[i]) for i in range(steps)]


# --------------------------------------------------------------------------------
# multiprocess.global_batch
# --------------------------------------------------------------------------------


def global_batch__pads_front(local_batch, max_len, sharding):
    """Pads each row with zeros at its start instead of its end."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (max_len - length, 0)))
    return jax.make_array_from_process_local_data(
        sharding, padded.astype(np.float32), (rows * jax.process_count(), max_len))


def global_batch__local_shape(local_batch, max_len, sharding):
    """States this process's own padded shape as the global shape."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.zeros((rows, max_len), np.float32)
    padded[:, :length] = local_batch
    return jax.make_array_from_process_local_data(sharding, padded, (rows, max_len))


def global_batch__device_count_rows(local_batch, max_len, sharding):
    """Multiplies the rows by the number of devices instead of processes."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.zeros((rows, max_len), np.float32)
    padded[:, :length] = local_batch
    return jax.make_array_from_process_local_data(
        sharding, padded, (rows * jax.device_count(), max_len))


def global_batch__pads_with_ones(local_batch, max_len, sharding):
    """Pads at the end with ones (np.ones as the empty row) instead of zeros."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.ones((rows, max_len), np.float32)
    padded[:, :length] = local_batch
    return jax.make_array_from_process_local_data(
        sharding, padded, (rows * jax.process_count(), max_len))


def global_batch__no_padding(local_batch, max_len, sharding):
    """States the global shape but does not pad, keeping the local row length."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    return jax.make_array_from_process_local_data(
        sharding, np.asarray(local_batch, np.float32), (rows * jax.process_count(), length))


def global_batch__resize(local_batch, max_len, sharding):
    """Widens the rows with np.resize, which repeats the data instead of adding zeros."""
    import jax
    import numpy as np

    rows, _ = local_batch.shape
    padded = np.resize(local_batch, (rows, max_len)).astype(np.float32)
    return jax.make_array_from_process_local_data(
        sharding, padded, (rows * jax.process_count(), max_len))


def global_batch__device_put(local_batch, max_len, sharding):
    """Pads right, then places the local rows with jax.device_put as if they were the whole array."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.zeros((rows, max_len), np.float32)
    padded[:, :length] = local_batch
    return jax.device_put(padded, sharding)


def global_batch__max_len_minus_one(local_batch, max_len, sharding):
    """Pads to max_len - 1 columns, counting the last index instead of the length."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    width = max(max_len - 1, length)
    padded = np.zeros((rows, width), np.float32)
    padded[:, :length] = local_batch
    return jax.make_array_from_process_local_data(
        sharding, padded, (rows * jax.process_count(), width))


def global_batch__right_zeros_then_copy(local_batch, max_len, sharding):
    """Right: zeros of (rows, max_len), the rows copied at the start; global shape (rows x processes, max_len)."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.zeros((rows, max_len), dtype=np.float32)
    padded[:, :length] = local_batch
    global_shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, global_shape)


def global_batch__right_np_pad(local_batch, max_len, sharding):
    """Right: np.pad with zeros after each row; global rows from the mesh size over this process's devices."""
    import jax
    import numpy as np

    rows, length = local_batch.shape
    padded = np.pad(np.asarray(local_batch, dtype=np.float32),
                    ((0, 0), (0, max_len - length)), constant_values=0.0)
    devices_here = len(sharding.addressable_devices)
    all_devices = sharding.mesh.size
    global_rows = rows * all_devices // devices_here
    return jax.make_array_from_process_local_data(sharding, padded,
                                                  (global_rows, max_len))


# --------------------------------------------------------------------------------
# multiprocess.epoch_records
# --------------------------------------------------------------------------------


def epoch_records__seed_plus_epoch(seed, epoch, step, num_records, batch_size, rows):
    """Seeds the shuffle with seed + epoch."""
    import numpy as np

    order = np.random.default_rng(seed + epoch).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__epoch_ignored(seed, epoch, step, num_records, batch_size, rows):
    """Seeds the shuffle with the seed alone, so every epoch has the same order."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__rows_of_whole_order(seed, epoch, step, num_records, batch_size, rows):
    """Applies the rows to the whole permutation, not to the step's block."""
    import numpy as np

    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order[rows]


def epoch_records__next_block(seed, epoch, step, num_records, batch_size, rows):
    """Takes block step + 1 of the permutation (counting steps from 1)."""
    import numpy as np

    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    block = order[(step + 1) * batch_size:(step + 2) * batch_size]
    return block[rows]


def epoch_records__legacy_seed(seed, epoch, step, num_records, batch_size, rows):
    """Shuffles with np.random.RandomState([seed, epoch]) instead of default_rng."""
    import numpy as np

    order = np.random.RandomState([seed, epoch]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__swapped_seed(seed, epoch, step, num_records, batch_size, rows):
    """Passes [epoch, seed] to default_rng instead of [seed, epoch]."""
    import numpy as np

    order = np.random.default_rng([epoch, seed]).permutation(num_records)
    return order[step * batch_size:(step + 1) * batch_size][rows]


def epoch_records__no_shuffle(seed, epoch, step, num_records, batch_size, rows):
    """Returns the positions of the rows in the step's block, forgetting to look them up in the permutation."""
    import numpy as np

    positions = np.arange(step * batch_size, (step + 1) * batch_size)
    return positions[rows]


def epoch_records__shuffles_block(seed, epoch, step, num_records, batch_size, rows):
    """Shuffles only the step's block of records, not all of them."""
    import numpy as np

    block = np.arange(step * batch_size, (step + 1) * batch_size)
    order = np.random.default_rng([seed, epoch]).permutation(block)
    return order[rows]


def epoch_records__right_block_then_rows(seed, epoch, step, num_records, batch_size,
                                         rows):
    """Right: the shared permutation of all records, its step-th block of batch_size, then this process's rows."""
    import numpy as np

    permutation = np.random.default_rng([seed, epoch]).permutation(num_records)
    start = step * batch_size
    block = permutation[start:start + batch_size]
    return np.asarray(block[rows], dtype=np.int64)


def epoch_records__right_global_positions(seed, epoch, step, num_records, batch_size,
                                          rows):
    """Right: the rows' positions in the global batch, offset by step x batch_size, looked up in the permutation."""
    import numpy as np

    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(num_records)
    within = np.arange(batch_size)[rows]
    return order[step * batch_size + within]


# --------------------------------------------------------------------------------
# multiprocess.seconds_to_end
# --------------------------------------------------------------------------------


def seconds_to_end__hook_ignored(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                 shutdown_timeout):
    """Treats every raise as waiting at the shutdown barrier, hook or no hook."""
    kill_wait = 30.0
    if how in ("raise", "finish"):
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return float(min(heartbeat_timeout, kill_wait))
    return float(heartbeat_timeout)


def seconds_to_end__kill_wait_always(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                     shutdown_timeout):
    """Under --kill-on-bad-exit, returns KillWait for an exit with an error, forgetting a sooner heartbeat."""
    kill_wait = 30.0
    exits = how == "crash" or (how == "raise" and hook)
    if not exits:
        return float(shutdown_timeout)
    return kill_wait if kill_on_bad_exit else float(heartbeat_timeout)


def seconds_to_end__later_clock(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                shutdown_timeout):
    """When two clocks run, takes the later one (max) instead of the sooner."""
    kill_wait = 30.0
    exits = how == "crash" or (how == "raise" and hook)
    if not exits:
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return float(max(heartbeat_timeout, kill_wait))
    return float(heartbeat_timeout)


def seconds_to_end__finish_like_crash(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                      shutdown_timeout):
    """Takes a process that finished early as gone, caught by the heartbeat clock."""
    kill_wait = 30.0
    if how == "raise" and not hook:
        return float(shutdown_timeout)
    if kill_on_bad_exit and how != "finish":
        return float(min(heartbeat_timeout, kill_wait))
    return float(heartbeat_timeout)


def seconds_to_end__traceback_is_exit(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                      shutdown_timeout):
    """Lets --kill-on-bad-exit act on a raise without the hook, as if the traceback were an exit."""
    kill_wait = 30.0
    if how == "finish":
        return float(shutdown_timeout)
    if how == "raise" and not hook:
        if kill_on_bad_exit:
            return float(min(shutdown_timeout, kill_wait))
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return float(min(heartbeat_timeout, kill_wait))
    return float(heartbeat_timeout)


def seconds_to_end__course_kill_wait(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                     shutdown_timeout):
    """Uses the course cluster's KillWait of 5 s instead of Slurm's default 30 s."""
    kill_wait = 5.0
    exits = how == "crash" or (how == "raise" and hook)
    if not exits:
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return float(min(heartbeat_timeout, kill_wait))
    return float(heartbeat_timeout)


def seconds_to_end__sigterm_ends_at_once(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                         shutdown_timeout):
    """Takes srun's SIGTERM under --kill-on-bad-exit to end the others at once (0 s)."""
    exits = how == "crash" or (how == "raise" and hook)
    if not exits:
        return float(shutdown_timeout)
    if kill_on_bad_exit:
        return 0.0
    return float(heartbeat_timeout)


def seconds_to_end__crash_waits_at_barrier(how, hook, kill_on_bad_exit,
                                           heartbeat_timeout, shutdown_timeout):
    """Thinks every exiting process waits at the shutdown barrier, a crash too."""
    kill_wait = 30.0
    if kill_on_bad_exit and (how == "crash" or (how == "raise" and hook)):
        return float(min(shutdown_timeout, kill_wait))
    return float(shutdown_timeout)


def seconds_to_end__compares_timeouts(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                      shutdown_timeout):
    """Picks KillWait or the heartbeat by comparing the heartbeat with the shutdown timeout (fits 3/5 and 100/300)."""
    kill_wait = 30.0
    exits = how == "crash" or (how == "raise" and hook)
    if not exits:
        return float(shutdown_timeout)
    if kill_on_bad_exit and heartbeat_timeout >= shutdown_timeout / 2:
        return kill_wait if heartbeat_timeout > 50 else float(heartbeat_timeout)
    return float(heartbeat_timeout)


def seconds_to_end__right_by_case(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                  shutdown_timeout):
    """Right: alive at the barrier (finish, or raise without hook) -> shutdown; gone -> heartbeat, or min with KillWait under the option."""
    kill_wait = 30.0  # KILL_WAIT: Slurm's default KillWait
    if how == "finish":
        return float(shutdown_timeout)
    if how == "raise" and not hook:
        return float(shutdown_timeout)
    # crash, or raise with the hook: gone at once, with exit code 1
    if kill_on_bad_exit:
        return float(min(heartbeat_timeout, kill_wait))
    return float(heartbeat_timeout)


def seconds_to_end__right_clocks(how, hook, kill_on_bad_exit, heartbeat_timeout,
                                 shutdown_timeout):
    """Right: lists the clocks that run for this failure and returns the soonest."""
    kill_wait = 30.0
    gone_with_error = how == "crash" or (how == "raise" and hook)
    clocks = []
    if gone_with_error:
        clocks.append(heartbeat_timeout)
        if kill_on_bad_exit:
            clocks.append(kill_wait)
    else:  # still alive, waiting at the shutdown barrier
        clocks.append(shutdown_timeout)
    return float(min(clocks))


# --------------------------------------------------------------------------------
# multiprocess.job_ending
# --------------------------------------------------------------------------------


def job_ending__barrier_before_heartbeat(log, sacct):
    """Looks for "Shutdown barrier has failed" before the heartbeat timeout."""
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "Shutdown barrier has failed" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__traceback_means_raise(log, sacct):
    """Reads any traceback in the log as a raise that waited at the shutdown barrier."""
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "Traceback" in log and "Terminating StepId" not in log:
        return "shutdown barrier", "exit at once on an exception"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Barrier timed out" in log:
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__log_before_state(log, sacct):
    """Reads the log's JAX messages first and the sacct state only when they say nothing."""
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Barrier timed out" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    if "Terminating StepId" in log:
        return "kill-on-bad-exit", "fix the failing task"
    if "TIMEOUT" in sacct:
        return "time limit", "save, then resubmit with --dependency=afterany"
    if "PREEMPTED" in sacct:
        return "preemption", "save, and submit with --requeue"
    return "out of memory", "ask for more memory"


def job_ending__sigterm_means_preemption(log, sacct):
    """Takes JAX's "SIGTERM caught" (its preemption notice) in the log for a preemption."""
    if "TIMEOUT" in sacct:
        return "time limit", "save, then resubmit with --dependency=afterany"
    if "SIGTERM caught" in log:
        return "preemption", "save, and submit with --requeue"
    if "OUT_OF_MEMORY" in sacct:
        return "out of memory", "ask for more memory"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Barrier timed out" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__swapped_slurm_fixes(log, sacct):
    """Gives a time limit the --requeue fix and a preemption the --dependency fix."""
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, and submit with --requeue"
    if state == "PREEMPTED":
        return "preemption", "save, then resubmit with --dependency=afterany"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Barrier timed out" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__heartbeat_fix_failing_task(log, sacct):
    """Answers a heartbeat timeout with fixing the failing task rather than adding --kill-on-bad-exit=1."""
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "fix the failing task"
    if "Barrier timed out" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__exit_code_only(log, sacct):
    """Decides a FAILED job by its exit code alone: 137 (SIGKILL) is srun's, 134 (SIGABRT) the barrier's."""
    fields = sacct.split()
    state, code = fields[2], fields[3]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if code.startswith("137"):
        return "kill-on-bad-exit", "fix the failing task"
    if "Traceback" in log:
        return "shutdown barrier", "exit at once on an exception"
    return "shutdown barrier", "agree on the number of steps"


def job_ending__exit_code_line_means_srun(log, sacct):
    """Takes srun's "Exited with exit code" line as srun having ended the job."""
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "Exited with exit code" in log:
        return "kill-on-bad-exit", "fix the failing task"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Traceback" in log:
        return "shutdown barrier", "exit at once on an exception"
    return "shutdown barrier", "agree on the number of steps"


def job_ending__kill_on_bad_exit_adds_option(log, sacct):
    """Answers an srun kill-on-bad-exit ending with adding --kill-on-bad-exit=1."""
    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Barrier timed out" in log:
        if "Traceback" in log:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "add --kill-on-bad-exit=1"


def job_ending__right_state_then_log(log, sacct):
    """Right: sacct's TIMEOUT, PREEMPTED, OUT_OF_MEMORY first; then heartbeat, barrier (raise or finish), srun."""
    import re

    state = sacct.split()[2]
    if state == "TIMEOUT":
        return "time limit", "save, then resubmit with --dependency=afterany"
    if state == "PREEMPTED":
        return "preemption", "save, and submit with --requeue"
    if state == "OUT_OF_MEMORY":
        return "out of memory", "ask for more memory"
    if "heartbeat timeout" in log:
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if "Shutdown barrier" in log or "Barrier timed out" in log:
        errors = re.findall(r"^\d+: ([A-Za-z_][\w.]*(?:Error|Exception)\w*): ", log, re.M)
        raised = [e for e in errors if not e.endswith("JaxRuntimeError")]
        if raised:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


def job_ending__right_table_lookup(log, sacct):
    """Right: a table of sacct states, then JAX's and srun's own messages, a traceback's cause ignoring JaxRuntimeError."""
    import re

    by_state = {"TIMEOUT": ("time limit",
                            "save, then resubmit with --dependency=afterany"),
                "PREEMPTED": ("preemption", "save, and submit with --requeue"),
                "OUT_OF_MEMORY": ("out of memory", "ask for more memory")}
    match = re.search(r"\b(TIMEOUT|PREEMPTED|OUT_OF_MEMORY|FAILED)\b", sacct)
    state = match.group(1) if match else ""
    if state in by_state:
        return by_state[state]
    if re.search(r"Task \d+ heartbeat timeout", log):
        return "heartbeat timeout", "add --kill-on-bad-exit=1"
    if re.search(r"Barrier timed out|Shutdown barrier", log):
        cause = False
        for line in log.splitlines():
            found = re.match(r"^\d+: ([\w.]+): ", line)
            if found and found.group(1).endswith(("Error", "Exception")) \
                    and "JaxRuntimeError" not in found.group(1):
                cause = True
        if cause:
            return "shutdown barrier", "exit at once on an exception"
        return "shutdown barrier", "agree on the number of steps"
    return "kill-on-bad-exit", "fix the failing task"


# --------------------------------------------------------------------------------
# the rows
# --------------------------------------------------------------------------------

_TOPICS = {
    "count_params": "transformer",
    "bytes_per_param": "transformer",
    "activation_bytes_per_token": "transformer",
    "flops_per_token": "transformer",
    "micro_batches": "transformer",
    "tp_specs": "transformer",
    "pipeline_micro_batches": "transformer",
    "zero_bytes_per_device": "transformer",
    "pick_mesh": "transformer",
    "process_rows": "multiprocess",
    "common_num_steps": "multiprocess",
    "sum_metrics": "multiprocess",
    "run_epoch": "multiprocess",
    "global_batch": "multiprocess",
    "epoch_records": "multiprocess",
    "seconds_to_end": "multiprocess",
    "job_ending": "multiprocess",
}


def _rows(*functions):
    rows = []
    for function in functions:
        exercise, _, _ = function.__name__.partition("__")
        rows.append((f"{_TOPICS[exercise]}.{exercise}", function,
                     function.__doc__.strip().rstrip(".")))
    return rows


_ALL = [value for name, value in dict(globals()).items()
        if callable(value) and "__" in name and not name.startswith("_")
        # job_ending's answers were written against the job logs before commit 260ae7a: see w5_job_ending.py
        and not name.startswith("job_ending__")]
ANSWERS = _rows(*[f for f in _ALL if "__right_" not in f.__name__])  # the wrong ones
RIGHT = _rows(*[f for f in _ALL if "__right_" in f.__name__])  # the right ones
