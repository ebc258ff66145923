"""Answers to the transformer chapter's exercises, as learners write them.

The topic is ``transformer``. What checking each must give is in
``transformer.toml``. Every exercise is a formula or a rule on plain numbers:
nothing here needs a device.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxcourse import transformer

# -- exercise 1: count_params


def count_mha(cfg, tied=False):  # keys and values as wide as the queries
    d = cfg.d_model
    block = 4 * d * d + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_gelu_mlp(cfg, tied=False):  # an MLP of two matrices
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 2 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_tied_ignored(cfg, tied=False):  # the library's count, tied or not
    return transformer.param_count(cfg)


def count_no_final_norm(cfg, tied=False):  # the final norm forgotten, and the blocks'
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden
    return cfg.layers * block + cfg.vocab * d * (1 if tied else 2)


def count_from_library(cfg, tied=False):  # correct: the chapter's count
    return transformer.param_count(cfg) - (cfg.vocab * cfg.d_model if tied else 0)


def count_by_parts(cfg, tied=False):  # correct: the chapter's parts, one left out
    parts = transformer.param_parts(cfg)
    return parts["total"] - (parts["unembed"] if tied else 0)


def count_float(cfg, tied=False):  # correct: a float is fine
    d, h = float(cfg.d_model), cfg.head_dim
    per_layer = d * h * (2 * cfg.heads + 2 * cfg.kv_heads) + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * per_layer + d + (1 + (not tied)) * cfg.vocab * d


# -- exercise 2: bytes_per_param


def _b(dtype):
    return jnp.dtype(dtype).itemsize


def bytes_always_master(precision):
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    return {"weights": c, "master": s, "grads": c, "adam": 2 * m,
            "total": c + s + c + 2 * m, "stored": s + 2 * m}


def bytes_single_moment(precision):
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    master = 0 if s == c else s
    return {"weights": c, "master": master, "grads": c, "adam": m,
            "total": c + master + c + m, "stored": s + m}


def bytes_grads_as_stored(precision):
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    master = 0 if precision.store == precision.compute else s
    return {"weights": c, "master": master, "grads": s, "adam": 2 * m,
            "total": c + master + s + 2 * m, "stored": s + 2 * m}


def bytes_tuple(precision):  # not a dict
    c = _b(precision.compute)
    return (c, 0, c, 8, 2 * c + 8, 12)


def bytes_numpy(precision):  # correct: NumPy's itemsize through jnp.dtype
    sizes = [np.dtype(jnp.dtype(d)).itemsize
             for d in (precision.compute, precision.store, precision.moments)]
    c, s, m = sizes
    master = s * (jnp.dtype(precision.store) != jnp.dtype(precision.compute))
    out = {"weights": c, "master": master, "grads": c, "adam": m + m}
    out["total"] = sum(out.values())
    out["stored"] = s + 2 * m
    return out


def bytes_floats_extra_key(precision):  # correct: floats, and an extra key
    c = float(_b(precision.compute))
    s, m = float(_b(precision.store)), float(_b(precision.moments))
    master = s if precision.store is not precision.compute else 0.0
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": 2 * c + master + 2 * m, "stored": s + 2 * m,
            "name": precision.name}


# -- exercise 3: activation_bytes_per_token


def _width(cfg, remat):
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    return {"full": d, "names": 2 * d + cfg.hidden,
            "dots": 3 * d + 2 * kv + 2 * cfg.hidden}[remat]


def act_per_layer(cfg, remat, precision):  # one block's
    return _width(cfg, remat) * (4 if precision == "float32" else 2)


def act_always_four_bytes(cfg, remat, precision):  # float32 whatever the scheme
    return cfg.layers * _width(cfg, remat) * 4


def act_dots_mha(cfg, remat, precision):  # keys and values d wide
    d = cfg.d_model
    width = 5 * d + 2 * cfg.hidden if remat == "dots" else _width(cfg, remat)
    return cfg.layers * width * (4 if precision == "float32" else 2)


def act_full_zero(cfg, remat, precision):  # full remat keeps nothing
    if remat == "full":
        return 0
    return cfg.layers * _width(cfg, remat) * (4 if precision == "float32" else 2)


def act_from_dtype(cfg, remat, precision):  # correct: the scheme's compute dtype
    itemsize = jnp.dtype(transformer.PRECISIONS[precision].compute).itemsize
    return float(cfg.layers * _width(cfg, remat) * itemsize)


def act_by_policy(cfg, remat, precision):  # correct: written out per policy
    b = 4 if precision == "float32" else 2
    d, kv, f, n = cfg.d_model, cfg.kv_heads * cfg.head_dim, cfg.hidden, cfg.layers
    if remat == "full":
        return n * d * b
    if remat == "names":
        return n * (d + cfg.heads * cfg.head_dim + f) * b
    return n * (d + cfg.heads * cfg.head_dim + kv + kv + d + f + f) * b


# -- exercise 4: flops_per_token


def flops_six_p(cfg, seq):  # 6 × every parameter, the embedding's too
    return 6 * transformer.param_count(cfg) + 12 * cfg.layers * seq * cfg.d_model


def flops_forward(cfg, seq):
    return 2 * transformer.matmul_params(cfg) + 4 * cfg.layers * seq * cfg.d_model


def flops_kv_attention(cfg, seq):
    return (6 * transformer.matmul_params(cfg)
            + 12 * cfg.layers * seq * cfg.kv_heads * cfg.head_dim)


def flops_blocks_only(cfg, seq):  # the output layer left out
    blocks = transformer.matmul_params(cfg) - cfg.d_model * cfg.vocab
    return 6 * blocks + 12 * cfg.layers * seq * cfg.d_model


def flops_from_library(cfg, seq):  # correct
    return transformer.flops_per_token(cfg, seq)["total"]


def flops_int(cfg, seq):  # correct: in integers, d for heads · head_dim
    return 6 * transformer.matmul_params(cfg) + 12 * cfg.layers * seq * cfg.d_model


# -- exercise 5: micro_batches


def micro_ceil(batch, seq, activation_bytes, state_bytes, budget_bytes):
    room = budget_bytes - state_bytes
    if room <= 0:
        return None
    m = math.ceil(batch * seq * activation_bytes / room)
    return m if m <= batch else None


def micro_no_state(batch, seq, activation_bytes, state_bytes, budget_bytes):
    for m in range(1, batch + 1):
        if batch % m == 0 and batch // m * seq * activation_bytes <= budget_bytes:
            return m
    return None


def micro_sequences_each(batch, seq, activation_bytes, state_bytes, budget_bytes):
    for size in range(batch, 0, -1):  # sequences per micro-batch, returned
        if batch % size == 0 and state_bytes + size * seq * activation_bytes \
                <= budget_bytes:
            return size
    return None


def micro_below(batch, seq, activation_bytes, state_bytes, budget_bytes):
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch / m * seq * activation_bytes \
                < budget_bytes:
            return m
    return None


def micro_divisors_list(batch, seq, activation_bytes, state_bytes, budget_bytes):
    # correct: the divisors first, then the first that fits
    divisors = [m for m in range(1, batch + 1) if batch % m == 0]
    fits = [m for m in divisors
            if state_bytes + batch / m * seq * activation_bytes <= budget_bytes]
    return fits[0] if fits else None


def micro_float(batch, seq, activation_bytes, state_bytes, budget_bytes):
    # correct: a float count is fine when it is whole
    for m in range(1, batch + 1):
        if batch % m == 0 and (budget_bytes - state_bytes) >= \
                (batch // m) * seq * activation_bytes:
            return float(m)
    return None


# -- exercise 6: tp_specs


def _flags(cfg, model):
    return (cfg.heads % model == 0, cfg.kv_heads % model == 0,
            cfg.hidden % model == 0)


def specs_all_columns(cfg, model):
    q, kv, mlp = _flags(cfg, model)
    c = P(None, None, "model")
    return {"wq": c if q else P(), "wk": c if kv else P(), "wv": c if kv else P(),
            "wo": c if q else P(), "w_gate": c if mlp else P(),
            "w_up": c if mlp else P(), "w_down": c if mlp else P(),
            "attn_norm": P(), "mlp_norm": P()}


def specs_split_kv_anyway(cfg, model):
    q, _, mlp = _flags(cfg, model)
    c, r = P(None, None, "model"), P(None, "model", None)
    return {"wq": c if q else P(), "wk": c if q else P(), "wv": c if q else P(),
            "wo": r if q else P(), "w_gate": c if mlp else P(),
            "w_up": c if mlp else P(), "w_down": r if mlp else P(),
            "attn_norm": P(), "mlp_norm": P()}


def specs_always_split(cfg, model):
    c, r = P(None, None, "model"), P(None, "model", None)
    return {"wq": c, "wk": c, "wv": c, "wo": r, "w_gate": c, "w_up": c, "w_down": r,
            "attn_norm": P(), "mlp_norm": P()}


def specs_missing_norms(cfg, model):
    q, kv, mlp = _flags(cfg, model)
    c, r = P(None, None, "model"), P(None, "model", None)
    return {"wq": c if q else P(), "wk": c if kv else P(), "wv": c if kv else P(),
            "wo": r if q else P(), "w_gate": c if mlp else P(),
            "w_up": c if mlp else P(), "w_down": r if mlp else P()}


def specs_short_forms(cfg, model):  # correct: trailing Nones left out, tuples
    q, kv, mlp = _flags(cfg, model)
    c, r = P(None, None, ("model",)), P(None, "model")
    return {"wq": c if q else P(None), "wk": c if kv else P(),
            "wv": c if kv else P(None, None), "wo": r if q else P(),
            "w_gate": c if mlp else P(), "w_up": c if mlp else P(),
            "w_down": r if mlp else P(), "attn_norm": P(None, None),
            "mlp_norm": P(), "final_norm": P()}


def specs_from_library(cfg, model):  # correct: the chapter's specs, checked
    specs = transformer.param_specs("TP")
    q, kv, mlp = _flags(cfg, model)
    keep = {"wq": q, "wk": kv, "wv": kv, "wo": q, "w_gate": mlp, "w_up": mlp,
            "w_down": mlp, "attn_norm": True, "mlp_norm": True}
    return {name: specs[name] if ok else P() for name, ok in keep.items()}


# -- exercise 7: pipeline_micro_batches


def bubble_ceil_over_m(stages, percent):
    return math.ceil(100 * (stages - 1) / percent)


def bubble_below(stages, percent):
    m = 1
    while (stages - 1) / (m + stages - 1) >= percent / 100:
        m += 1
    return m


def bubble_p_over(stages, percent):
    m = 1
    while stages / (m + stages) > percent / 100:
        m += 1
    return m


def bubble_float_closed_form(stages, percent):  # not whole
    return (stages - 1) * (100 - percent) / percent


def bubble_closed_form(stages, percent):  # correct: solved for m, in integers
    return max(1, -(-(stages - 1) * (100 - percent) // percent))


def bubble_loop_floats(stages, percent):  # correct: floats compare equal here
    m = 1
    while (stages - 1) / (m + stages - 1) > percent / 100:
        m += 1
    return m


# -- exercise 8: zero_bytes_per_device


def _parts(cfg, precision):
    per = transformer.bytes_per_param(precision)
    n = transformer.param_count(cfg)
    return {k: per[k] * n for k in ("weights", "master", "grads", "adam")}


def zero_adam_only(cfg, stage, devices, precision):
    b = _parts(cfg, precision)
    return (b["adam"] / devices + b["master"]
            + b["grads"] / (devices if stage >= 2 else 1)
            + b["weights"] / (devices if stage >= 3 else 1))


def zero_off_by_one(cfg, stage, devices, precision):
    b = _parts(cfg, precision)
    return ((b["adam"] + b["master"] + b["grads"]) / devices
            + b["weights"] / (devices if stage >= 2 else 1))


def zero_all_divided(cfg, stage, devices, precision):
    return sum(_parts(cfg, precision).values()) / devices


def zero_from_library(cfg, stage, devices, precision):  # correct
    return transformer.zero_bytes(cfg, stage, devices, precision)["total"]


def zero_loop(cfg, stage, devices, precision):  # correct: the parts in stage order
    b = _parts(cfg, precision)
    total = 0.0
    for k, part in enumerate((("master", "adam"), ("grads",), ("weights",)), start=1):
        for name in part:
            total += b[name] / devices if stage >= k else b[name]
    return total


# -- exercise 9: pick_mesh


def _meshes(cfg, hw, chips, tokens, seq, across, tps=(1, 2, 4, 8)):
    for tp in tps:
        if chips % tp == 0 and tokens / chips >= transformer.critical_batch(
                cfg, "FSDP + TP", hw, seq, chips // tp, tp, across_nodes=across):
            yield chips // tp, tp


def mesh_inside_node_always(cfg, hw, chips, tokens, seq):  # across_nodes forgotten
    return next(_meshes(cfg, hw, chips, tokens, seq, False), None)


def mesh_largest_tp(cfg, hw, chips, tokens, seq):  # the most TP that works
    found = list(_meshes(cfg, hw, chips, tokens, seq, chips > hw.node_chips))
    return found[-1] if found else None


def mesh_tp_order(cfg, hw, chips, tokens, seq):  # (tp, fsdp)
    found = next(_meshes(cfg, hw, chips, tokens, seq, chips > hw.node_chips), None)
    return None if found is None else (found[1], found[0])


def mesh_first(cfg, hw, chips, tokens, seq):  # correct: the least TP, in a loop
    return next(_meshes(cfg, hw, chips, tokens, seq, chips > hw.node_chips), None)


def mesh_list(cfg, hw, chips, tokens, seq):  # correct: plain FSDP at tp 1, a list
    across = chips > hw.node_chips
    for tp in (1, 2, 4, 8):
        if chips % tp:
            continue
        layout = "FSDP" if tp == 1 else "FSDP + TP"
        if tokens / chips >= transformer.critical_batch(
                cfg, layout, hw, seq, chips // tp, tp, across_nodes=across):
            return [chips // tp, tp]
    return None


# -- the named mistakes of issue #51, one answer each, written as learners do


def count_gpt2_mlp(cfg, tied=False):  # the MLP taken as 4 d wide
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 3 * d * (4 * d) + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_blocks_norms_only(cfg, tied=False):  # no final norm
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + cfg.vocab * d * (1 if tied else 2)


def count_layers_plus_one(cfg, tied=False):  # one block too many
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden + 2 * d
    return (cfg.layers + 1) * block + d + cfg.vocab * d * (1 if tied else 2)


def count_layernorm(cfg, tied=False):  # each norm a scale and a bias
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden + 2 * (2 * d)
    return cfg.layers * block + 2 * d + cfg.vocab * d * (1 if tied else 2)


def count_single_block_norm(cfg, tied=False):
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden + d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_with_biases(cfg, tied=False):  # nn.Linear's biases
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    weights = 2 * d * d + 2 * d * kv + 3 * d * cfg.hidden
    biases = d + 2 * kv + d + 2 * cfg.hidden + d
    return cfg.layers * (weights + biases + 2 * d) + d + \
        cfg.vocab * d * (1 if tied else 2)


def bytes_bits(precision):
    bits = [jnp.finfo(d).bits for d in (precision.compute, precision.store,
                                        precision.moments)]
    c, s, m = bits
    master = 0 if jnp.dtype(precision.store) == jnp.dtype(precision.compute) else s
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": 2 * c + master + 2 * m, "stored": s + 2 * m}


def bytes_master_if_sizes_differ(precision):  # bfloat16 vs float16: 2 bytes each
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    master = s if s != c else 0
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": 2 * c + master + 2 * m, "stored": s + 2 * m}


def bytes_no_master(precision):
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    return {"weights": c, "master": 0, "grads": c, "adam": 2 * m,
            "total": 2 * c + 2 * m, "stored": s + 2 * m}


def bytes_stored_two_copies(precision):
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    master = 0 if jnp.dtype(precision.store) == jnp.dtype(precision.compute) else s
    total = c + master + c + 2 * m
    return {"weights": c, "master": master, "grads": c, "adam": 2 * m,
            "total": total, "stored": total - c}


def act_elements(cfg, remat, precision):  # numbers, not bytes
    return cfg.layers * _width(cfg, remat)


def act_names_no_input(cfg, remat, precision):
    b = 4 if precision == "float32" else 2
    width = cfg.d_model + cfg.hidden if remat == "names" else _width(cfg, remat)
    return cfg.layers * width * b


def act_dots_every_product(cfg, remat, precision):  # w_down's output kept too
    b = 4 if precision == "float32" else 2
    width = _width(cfg, remat) + (cfg.d_model if remat == "dots" else 0)
    return cfg.layers * width * b


def flops_causal(cfg, seq):  # the mask taken to halve attention
    return 6 * transformer.matmul_params(cfg) + 6 * cfg.layers * seq * cfg.d_model


def flops_eight(cfg, seq):
    return 8 * transformer.matmul_params(cfg) + 16 * cfg.layers * seq * cfg.d_model


def flops_attention_forward(cfg, seq):
    return 6 * transformer.matmul_params(cfg) + 4 * cfg.layers * seq * cfg.d_model


def flops_seq_squared(cfg, seq):
    return 6 * transformer.matmul_params(cfg) + 12 * cfg.layers * seq * seq * \
        cfg.d_model


def micro_per_sequence(batch, seq, activation_bytes, state_bytes, budget_bytes):
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch // m * activation_bytes \
                <= budget_bytes:
            return m
    return None


def micro_doubling(batch, seq, activation_bytes, state_bytes, budget_bytes):
    m = 1
    while m <= batch:
        if batch % m == 0 and state_bytes + batch / m * seq * activation_bytes \
                <= budget_bytes:
            return m
        m *= 2
    return None


def micro_zero(batch, seq, activation_bytes, state_bytes, budget_bytes):
    for m in range(1, batch + 1):
        if batch % m == 0 and state_bytes + batch / m * seq * activation_bytes \
                <= budget_bytes:
            return m
    return 0


def _tp_specs(cfg, model, axis="model"):
    q, kv, mlp = _flags(cfg, model)
    c, r = P(None, None, axis), P(None, axis, None)
    return {"wq": c if q else P(), "wk": c if kv else P(), "wv": c if kv else P(),
            "wo": r if q else P(), "w_gate": c if mlp else P(),
            "w_up": c if mlp else P(), "w_down": r if mlp else P(),
            "attn_norm": P(), "mlp_norm": P()}


def specs_tp_axis(cfg, model):
    return _tp_specs(cfg, model, "tp")


def specs_two_dims(cfg, model):  # (in, out) without the layers axis
    q, kv, mlp = _flags(cfg, model)
    c, r = P(None, "model"), P("model", None)
    return {"wq": c if q else P(), "wk": c if kv else P(), "wv": c if kv else P(),
            "wo": r if q else P(), "w_gate": c if mlp else P(),
            "w_up": c if mlp else P(), "w_down": r if mlp else P(),
            "attn_norm": P(), "mlp_norm": P()}


def specs_heads_checked_only(cfg, model):
    specs = _tp_specs(cfg, model)
    c, r = P(None, None, "model"), P(None, "model", None)
    return specs | {"w_gate": c, "w_up": c, "w_down": r}


def bubble_step_ticks(stages, percent):
    m = 1
    while (stages - 1) / (m + stages - 1) > percent / 100:
        m += 1
    return m + stages - 1


def bubble_doubling(stages, percent):
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m *= 2
    return m


def bubble_closed_form_no_floor(stages, percent):  # 0 with one stage
    return -(-(stages - 1) * (100 - percent) // percent)


def bubble_fraction_vs_percent(stages, percent):
    m = 1
    while (stages - 1) / (m + stages - 1) > percent:
        m += 1
    return m


def zero_no_master(cfg, stage, devices, precision):
    b = _parts(cfg, precision)
    return (b["adam"] / devices + b["grads"] / (devices if stage >= 2 else 1)
            + b["weights"] / (devices if stage >= 3 else 1))


def zero_other_devices(cfg, stage, devices, precision):
    b = _parts(cfg, precision)
    others = devices - 1
    return ((b["adam"] + b["master"]) / others
            + b["grads"] / (others if stage >= 2 else 1)
            + b["weights"] / (others if stage >= 3 else 1))


def zero_stage_minus_one(cfg, stage, devices, precision):
    b = _parts(cfg, precision)
    return ((b["adam"] + b["master"]) / (devices if stage >= 2 else 1)
            + b["grads"] / (devices if stage >= 3 else 1) + b["weights"])


def zero_with_step_count(cfg, stage, devices, precision):  # correct: +4 bytes
    return transformer.zero_bytes(cfg, stage, devices, precision)["total"] + 4


def mesh_always_infiniband(cfg, hw, chips, tokens, seq):
    return next(_meshes(cfg, hw, chips, tokens, seq, True), None)


def mesh_whole_batch(cfg, hw, chips, tokens, seq):  # tokens, not tokens per chip
    for tp in (1, 2, 4, 8):
        if chips % tp == 0 and tokens >= transformer.critical_batch(
                cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                across_nodes=chips > hw.node_chips):
            return chips // tp, tp
    return None


def mesh_fallback_full_tp(cfg, hw, chips, tokens, seq):  # the most tp chips allow
    found = next(_meshes(cfg, hw, chips, tokens, seq, chips > hw.node_chips), None)
    tp = math.gcd(hw.node_chips, chips)
    return found or (chips // tp, tp)


def mesh_any_tp_dividing_chips(cfg, hw, chips, tokens, seq):  # tp of 3 or 6
    return next(_meshes(cfg, hw, chips, tokens, seq, chips > hw.node_chips,
                        tps=range(1, 9)), None)


# -- issue #51: what blind answers wrote, each named


def count_kv_d_per_head(cfg, tied=False):  # each key/value head d wide
    d = cfg.d_model
    block = 2 * d * d + 2 * d * (cfg.kv_heads * d) + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_wo_like_kv(cfg, tied=False):  # wo as narrow as the keys
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    block = d * d + d * kv + 2 * d * kv + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def count_kv_split_d(cfg, tied=False):  # keys d / kv_heads wide
    d = cfg.d_model
    block = 2 * d * d + 2 * d * (d // cfg.kv_heads) + 3 * d * cfg.hidden + 2 * d
    return cfg.layers * block + d + cfg.vocab * d * (1 if tied else 2)


def _bytes_row(precision, weights=None):
    c, s, m = _b(precision.compute), _b(precision.store), _b(precision.moments)
    master = s if jnp.dtype(precision.store) != jnp.dtype(precision.compute) else 0
    w = c if weights is None else weights
    return {"weights": w, "master": master, "grads": c, "adam": 2 * m,
            "total": w + master + c + 2 * m, "stored": s + 2 * m}


def bytes_stored_from_master(precision):  # stored = master + moments
    row = _bytes_row(precision)
    return row | {"stored": row["master"] + row["adam"]}


def bytes_total_no_grads(precision):
    row = _bytes_row(precision)
    return row | {"total": row["total"] - row["grads"]}


def bytes_weights_as_stored(precision):  # weights in the stored dtype
    return _bytes_row(precision, weights=_b(precision.store))


def bytes_total_of_everything(precision):  # stored added to the total
    row = _bytes_row(precision)
    return row | {"total": row["total"] + row["stored"]}


def act_dots_gate_only(cfg, remat, precision):  # one hidden-wide product
    size = 4 if precision == "float32" else 2
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    kept = {"full": d, "names": 2 * d + cfg.hidden,
            "dots": 3 * d + 2 * kv + cfg.hidden}[remat]
    return cfg.layers * kept * size


def flops_embedding_too(cfg, seq):  # the lookup counted as a product
    return transformer.flops_per_token(cfg, seq)["total"] + 6 * cfg.vocab * cfg.d_model


def flops_eight_remat(cfg, seq):  # 8 per weight, attention as usual
    d, h = cfg.d_model, cfg.head_dim
    weights = cfg.layers * (2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
                            + 3 * d * cfg.hidden) + d * cfg.vocab
    return 8.0 * weights + 12.0 * cfg.layers * seq * cfg.heads * h


def micro_all_at_once(batch, seq, activation_bytes, state_bytes, budget_bytes):
    whole = state_bytes + batch * seq * activation_bytes
    return 1 if whole <= budget_bytes else None


def bubble_ceil_of_float(stages, percent):  # (p - 1)(100 / percent - 1), floats
    return max(1, math.ceil((stages - 1) * (100 / percent - 1)))


def bubble_floor(stages, percent):  # rounded down
    return max(1, (stages - 1) * (100 - percent) // percent)


def bubble_m_plus_p(stages, percent):  # (p - 1) / (m + p)
    m = 1
    while (stages - 1) / (m + stages) > percent / 100:
        m += 1
    return m


def zero_tied(cfg, stage, devices, precision):  # one vocab table
    per = transformer.bytes_per_param(precision)
    n = transformer.param_count(cfg) - cfg.vocab * cfg.d_model
    split = {"master": 1, "adam": 1, "grads": stage >= 2, "weights": stage >= 3}
    return sum(per[k] * n / (devices if split[k] else 1) for k in split)


def zero_exercise2_grads(cfg, stage, devices, precision):  # 2-byte gradients
    per = transformer.bytes_per_param(precision)
    grads = jnp.dtype(transformer.PRECISIONS[precision].compute).itemsize
    per = {**per, "grads": grads}
    n = transformer.param_count(cfg)
    split = {"master": 1, "adam": 1, "grads": stage >= 2, "weights": stage >= 3}
    return sum(per[k] * n / (devices if split[k] else 1) for k in split)


def _exercise2_parts(cfg, precision):  # exercise 2's bytes: ZeRO's gradients
    p = transformer.PRECISIONS[precision]
    size = {k: jnp.dtype(getattr(p, k)).itemsize
            for k in ("compute", "store", "moments")}
    master = size["store"] if p.store != p.compute else 0
    n = transformer.param_count(cfg)
    return {"weights": size["compute"] * n, "master": master * n,
            "grads": size["compute"] * n, "adam": 2 * size["moments"] * n}


def zero_no_master_exercise2(cfg, stage, devices, precision):
    b = _exercise2_parts(cfg, precision)
    return (b["adam"] / devices + b["grads"] / (devices if stage >= 2 else 1)
            + b["weights"] / (devices if stage >= 3 else 1))


def zero_other_devices_exercise2(cfg, stage, devices, precision):
    b = _exercise2_parts(cfg, precision)
    others = devices - 1
    return ((b["adam"] + b["master"]) / others
            + b["grads"] / (others if stage >= 2 else 1)
            + b["weights"] / (others if stage >= 3 else 1))


def zero_tied_exercise2(cfg, stage, devices, precision):
    untied = transformer.param_count(cfg)
    tied = (untied - cfg.vocab * cfg.d_model) / untied
    b = _exercise2_parts(cfg, precision)
    split = {"master": 1, "adam": 1, "grads": stage >= 2, "weights": stage >= 3}
    return sum(b[k] * tied / (devices if split[k] else 1) for k in split)


def zero_gb_exercise2(cfg, stage, devices, precision):
    b = _exercise2_parts(cfg, precision)
    split = {"master": 1, "adam": 1, "grads": stage >= 2, "weights": stage >= 3}
    return sum(b[k] / (devices if split[k] else 1) for k in split) / 1e9


def zero_gb(cfg, stage, devices, precision):  # as the chapter's table prints
    return zero_from_library(cfg, stage, devices, precision) / 1e9


def mesh_all_chips_on_data(cfg, hw, chips, tokens, seq):  # data = every chip
    for tp in (1, 2, 4, 8):
        if hw.node_chips % tp or chips % tp:
            continue
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips, tp,
                                          across_nodes=chips > hw.node_chips)
        if tokens / chips >= need:
            return chips // tp, tp
    return None


def mesh_one_or_whole_node(cfg, hw, chips, tokens, seq):  # the notebook's two tps
    return next(_meshes(cfg, hw, chips, tokens, seq, chips > hw.node_chips,
                        tps=(1, hw.node_chips)), None)


def mesh_least_critical(cfg, hw, chips, tokens, seq):  # the smallest critical batch
    options = []
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp == 0 and chips % tp == 0:
            need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp,
                                              tp, across_nodes=chips > hw.node_chips)
            if tokens / chips >= need:
                options.append((need, (chips // tp, tp)))
    return min(options)[1] if options else None


def mesh_sequences_not_tokens(cfg, hw, chips, tokens, seq):  # sequences per chip
    for tp in (1, 2, 4, 8):
        if hw.node_chips % tp or chips % tp:
            continue
        need = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                          across_nodes=chips > hw.node_chips)
        if tokens / seq / chips >= need:
            return chips // tp, tp
    return None


def mesh_fsdp_critical(cfg, hw, chips, tokens, seq):  # plain FSDP's critical batch
    for tp in (1, 2, 4, 8):
        if hw.node_chips % tp or chips % tp:
            continue
        need = transformer.critical_batch(cfg, "FSDP", hw, seq, chips // tp, tp,
                                          across_nodes=chips > hw.node_chips)
        if tokens / chips >= need:
            return chips // tp, tp
    return None
