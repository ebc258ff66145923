"""The known wrong answers to the transformer chapter's exercises.

Written as learners write them. :mod:`solutions.transformer` names each of
these in a :class:`jaxcourse.exercises.Mistake`, with the message a learner
reads when an answer gives the same output; one section per exercise, in the
chapter's order. Each takes the arguments of the exercise's reference.
"""

from __future__ import annotations

import contextvars
import functools
import math

import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from jaxcourse import transformer

# ---- count_params -----------------------------------------------------------


def _layer(cfg, kv_heads=None, mlp_mats=3, norms=2):
    d, h = cfg.d_model, cfg.head_dim
    kv = cfg.kv_heads if kv_heads is None else kv_heads
    return (2 * d * cfg.heads * h + 2 * d * kv * h + mlp_mats * d * cfg.hidden
            + norms * d)


def count_without_gqa(cfg, tied=False):
    """Keys and values as wide as the queries: multi-head, not grouped-query."""
    return (cfg.layers * _layer(cfg, kv_heads=cfg.heads) + cfg.d_model
            + cfg.vocab * cfg.d_model * (1 if tied else 2))


def count_two_matrix_mlp(cfg, tied=False):
    """Count a classic MLP of two matrices: SwiGLU's gate forgotten."""
    return (cfg.layers * _layer(cfg, mlp_mats=2) + cfg.d_model
            + cfg.vocab * cfg.d_model * (1 if tied else 2))


def count_without_norms(cfg, tied=False):
    """Leave the RMSNorm scales out."""
    return cfg.layers * _layer(cfg, norms=0) + cfg.vocab * cfg.d_model * (
        1 if tied else 2)


def count_always_untied(cfg, tied=False):
    """Count the output layer even when it is the embedding."""
    return transformer.param_count(cfg)


def count_without_output_layer(cfg, tied=False):
    """Never count the output layer: one table of vocab × d, tied or not."""
    return transformer.param_count(cfg) - cfg.vocab * cfg.d_model


def _count(cfg, tied):
    """Give what the slips below depart from."""
    return transformer.param_count(cfg) - (cfg.vocab * cfg.d_model if tied else 0)


def count_mlp_4d(cfg, tied=False):
    """Take the MLP as 4d wide, as in GPT-2: LLaMA's width is cfg.hidden."""
    return _count(cfg, tied) + cfg.layers * 3 * cfg.d_model * (4 * cfg.d_model
                                                               - cfg.hidden)


def count_without_final_norm(cfg, tied=False):
    """Count the blocks' two norms but not the final norm after the last block."""
    return _count(cfg, tied) - cfg.d_model


def count_extra_layer(cfg, tied=False):
    """Count layers + 1 blocks (the embedding taken for a block)."""
    return _count(cfg, tied) + _layer(cfg)


def count_layernorm_biases(cfg, tied=False):
    """Give every norm a bias, as LayerNorm has: RMSNorm has a scale alone."""
    return _count(cfg, tied) + (2 * cfg.layers + 1) * cfg.d_model


def count_one_norm_per_block(cfg, tied=False):
    """One norm per block: a LLaMA block has two, before attention and the MLP."""
    return _count(cfg, tied) - cfg.layers * cfg.d_model


def count_projection_biases(cfg, tied=False):
    """Give every projection a bias: LLaMA's linear layers have none."""
    d, h = cfg.d_model, cfg.head_dim
    biases = cfg.heads * h + 2 * cfg.kv_heads * h + d + 2 * cfg.hidden + d
    return _count(cfg, tied) + cfg.layers * biases


def count_kv_heads_d_wide(cfg, tied=False):
    """Make each key/value head d wide, not head_dim: kv_heads · d columns."""
    d = cfg.d_model
    return _count(cfg, tied) + cfg.layers * 2 * d * cfg.kv_heads * (d - cfg.head_dim)


def count_output_as_narrow_as_kv(cfg, tied=False):
    """Make the output projection kv_heads · head_dim × d, as narrow as the keys."""
    d, h = cfg.d_model, cfg.head_dim
    return _count(cfg, tied) - cfg.layers * d * (cfg.heads - cfg.kv_heads) * h


def count_kv_width_d_over_kv(cfg, tied=False):
    """Take the key/value width as d / kv_heads, not kv_heads · head_dim."""
    d = cfg.d_model
    return _count(cfg, tied) + cfg.layers * 2 * d * (
        d // cfg.kv_heads - cfg.kv_heads * cfg.head_dim)


# ---- bytes_per_param -------------------------------------------------------


def _size(dtype) -> int:
    return jnp.dtype(dtype).itemsize


def _master(precision) -> int:
    """Give the master copy's bytes: the stored dtype's, if not the compute dtype."""
    separate = jnp.dtype(precision.store) != jnp.dtype(precision.compute)
    return _size(precision.store) if separate else 0


def _row(weights, master, grads, adam, stored):
    return {"weights": weights, "master": master, "grads": grads, "adam": adam,
            "total": weights + master + grads + adam, "stored": stored}


def bytes_master_always(precision):
    """Count a master copy even when the step computes in the stored dtype."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    return _row(c, s, c, 2 * m, s + 2 * m)


def bytes_one_moment(precision):
    """Adam's state counted as one moment: it keeps two (mean and variance)."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    master = _master(precision)
    return _row(c, master, c, m, s + m)


def bytes_grads_stored(precision):
    """Gradients counted in the stored dtype, not in the dtype the step computes in."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    master = _master(precision)
    return _row(c, master, s, 2 * m, s + 2 * m)


def bytes_moments_compute(precision):
    """Adam's moments counted in the compute dtype, not in their own."""
    c, s = _size(precision.compute), _size(precision.store)
    master = _master(precision)
    return _row(c, master, c, 2 * c, s + 2 * c)


def bytes_stored_with_grads(precision):
    """Count the gradients as stored between steps: they live inside one."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    master = _master(precision)
    return _row(c, master, c, 2 * m, s + c + 2 * m)


def bytes_in_bits(precision):
    """Count bits, not bytes: a float32 is 4 bytes (32 bits)."""
    c, s, m = (8 * _size(precision.compute), 8 * _size(precision.store),
               8 * _size(precision.moments))
    master = 8 * _master(precision)
    return _row(c, master, c, 2 * m, s + 2 * m)


def bytes_master_never(precision):
    """No master copy ever: mixed precision keeps float32 weights beside bfloat16."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    return _row(c, 0, c, 2 * m, s + 2 * m)


def bytes_stored_both_copies(precision):
    """Store the compute copy and the master: between steps only the master lives."""
    c, m = _size(precision.compute), _size(precision.moments)
    master = _master(precision)
    return _row(c, master, c, 2 * m, c + master + 2 * m)


def bytes_master_by_size(precision):
    """Compare the dtypes' sizes: bfloat16 and float16, both 2 bytes, still differ."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    master = s if s != c else 0
    return _row(c, master, c, 2 * m, s + 2 * m)


def bytes_total_without_master(precision):
    """Leave the master copy out of the total, though it has its own key."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    return _row(c, _master(precision), c, 2 * m, s + 2 * m) | {"total": 2 * c + 2 * m}


def _bytes(precision):
    """Give what the slips below depart from, as :func:`_row` takes it."""
    c, s, m = (_size(precision.compute), _size(precision.store),
               _size(precision.moments))
    return c, _master(precision), c, 2 * m, s + 2 * m


def bytes_stored_master_and_adam(precision):
    """Take "stored" as the master copy and Adam's moments: 0 master, no weights."""
    weights, master, grads, adam, _ = _bytes(precision)
    return _row(weights, master, grads, adam, master + adam)


def bytes_total_without_grads(precision):
    """Leave the gradients out of the total."""
    row = _row(*_bytes(precision))
    return row | {"total": row["total"] - row["grads"]}


def bytes_weights_in_store_dtype(precision):
    """Read "weights" in the stored dtype, not the dtype the step computes in."""
    _, master, grads, adam, stored = _bytes(precision)
    return _row(_size(precision.store), master, grads, adam, stored)


def bytes_total_with_stored(precision):
    """Add the stored bytes into the total, as if another array."""
    row = _row(*_bytes(precision))
    return row | {"total": row["total"] + row["stored"]}


# ---- activation_bytes_per_token ---------------------------------------------


def _itemsize(precision):
    return 4 if precision == "float32" else 2


def _activations(cfg, remat, precision):
    """Give what the slips below depart from."""
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    kept = {"full": d, "names": 2 * d + cfg.hidden,
            "dots": 3 * d + 2 * kv + 2 * cfg.hidden}[remat]
    return cfg.layers * kept * _itemsize(precision)


def activations_one_layer(cfg, remat, precision):
    """One block's residuals: the scan keeps them for every layer."""
    return _activations(cfg, remat, precision) / cfg.layers


def activations_float32(cfg, remat, precision):
    """Count float32 whatever the scheme: mixed precision keeps bfloat16."""
    return _activations(cfg, remat, "float32")


def activations_dots_without_gqa(cfg, remat, precision):
    """Count keys and values d wide: grouped-query attention narrows them."""
    if remat != "dots":
        return _activations(cfg, remat, precision)
    d = cfg.d_model
    return cfg.layers * (5 * d + 2 * cfg.hidden) * _itemsize(precision)


def activations_full_keeps_nothing(cfg, remat, precision):
    """Full remat keeps nothing: the block's input is kept to recompute it from."""
    if remat == "full":
        return 0
    return _activations(cfg, remat, precision)


def activations_names_gate_and_up(cfg, remat, precision):
    """Keep gate and up under "names": it keeps their product, mlp_hidden."""
    if remat != "names":
        return _activations(cfg, remat, precision)
    d = cfg.d_model
    return cfg.layers * (2 * d + 2 * cfg.hidden) * _itemsize(precision)


def activations_numbers_not_bytes(cfg, remat, precision):
    """Count the numbers kept, not their bytes: times the compute dtype's size."""
    return _activations(cfg, remat, precision) // _itemsize(precision)


def activations_names_without_input(cfg, remat, precision):
    """Keep only the named arrays under "names": the block's input is kept too."""
    if remat != "names":
        return _activations(cfg, remat, precision)
    return cfg.layers * (cfg.d_model + cfg.hidden) * _itemsize(precision)


def activations_dots_with_down(cfg, remat, precision):
    """Keep w_down's output under "dots" too: it is the next block's input."""
    if remat != "dots":
        return _activations(cfg, remat, precision)
    return _activations(cfg, remat, precision) + cfg.layers * cfg.d_model * \
        _itemsize(precision)


def activations_dots_without_input(cfg, remat, precision):
    """Keep only the products under "dots": the block's input is kept too."""
    if remat != "dots":
        return _activations(cfg, remat, precision)
    return _activations(cfg, remat, precision) - cfg.layers * cfg.d_model * \
        _itemsize(precision)


def activations_dots_one_hidden(cfg, remat, precision):
    """Keep one hidden-wide product under "dots" (the gate), not two."""
    if remat != "dots":
        return _activations(cfg, remat, precision)
    return _activations(cfg, remat, precision) - cfg.layers * cfg.hidden * \
        _itemsize(precision)


# ---- flops_per_token ---------------------------------------------------------


def _attention(cfg, seq):
    return 12.0 * cfg.layers * seq * cfg.heads * cfg.head_dim


def flops_all_params(cfg, seq):
    """6 × every parameter: the embedding is a lookup and a norm's scale no product."""
    return 6.0 * transformer.param_count(cfg) + _attention(cfg, seq)


def flops_forward_only(cfg, seq):
    """Count the forward pass alone: the backward pass costs twice as much."""
    return (2.0 * transformer.matmul_params(cfg) + _attention(cfg, seq) / 3)


def flops_without_attention(cfg, seq):
    """6 P alone: attention's scores and weighted sum cost FLOPs that grow with seq."""
    return 6.0 * transformer.matmul_params(cfg)


def flops_attention_kv_heads(cfg, seq):
    """Attention's term with the key/value heads: every query head scores the keys."""
    return (6.0 * transformer.matmul_params(cfg)
            + 12.0 * cfg.layers * seq * cfg.kv_heads * cfg.head_dim)


def flops_without_output_layer(cfg, seq):
    """Leave out the output layer: a d × vocab product, the largest of all."""
    return (6.0 * (transformer.matmul_params(cfg) - cfg.d_model * cfg.vocab)
            + _attention(cfg, seq))


def flops_causal_half(cfg, seq):
    """Halve attention for the causal mask: the chapter's model computes it all."""
    return 6.0 * transformer.matmul_params(cfg) + _attention(cfg, seq) / 2


def flops_eight_per_weight(cfg, seq):
    """8 FLOPs per weight, as with full remat's second forward pass: a step is 6."""
    return 8.0 * transformer.matmul_params(cfg) + _attention(cfg, seq) * 4 / 3


def flops_attention_forward_only(cfg, seq):
    """Attention's products counted forward only: backward they cost twice more."""
    return 6.0 * transformer.matmul_params(cfg) + _attention(cfg, seq) / 3


def flops_attention_seq_squared(cfg, seq):
    """Attention's seq × seq products taken per token: per token they grow with seq."""
    return 6.0 * transformer.matmul_params(cfg) + _attention(cfg, seq) * seq


def flops_with_embedding(cfg, seq):
    """Count 6 FLOPs per weight of the embedding table too: it is a lookup."""
    return (6.0 * (transformer.matmul_params(cfg) + cfg.vocab * cfg.d_model)
            + _attention(cfg, seq))


def flops_eight_per_weight_only(cfg, seq):
    """8 FLOPs per weight (full remat's second forward pass), attention left at 12."""
    return 8.0 * transformer.matmul_params(cfg) + _attention(cfg, seq)


# ---- micro_batches ------------------------------------------------------------


def _micro(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Give what the slips below depart from."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (state_bytes + batch // m * seq * activation_bytes
                               <= budget_bytes):
            return m
    return None


def micro_not_a_divisor(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Round a quotient up: the micro-batches must split the batch evenly."""
    room = budget_bytes - state_bytes
    if room <= 0:
        return None
    m = max(1, math.ceil(batch * seq * activation_bytes / room))
    return m if m <= batch else None


def micro_without_state(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Forget the state: the weights and Adam's moments share the budget."""
    return _micro(batch, seq, activation_bytes, 0.0, budget_bytes)


def micro_size_not_count(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Return the size of a micro-batch, not how many there are."""
    m = _micro(batch, seq, activation_bytes, state_bytes, budget_bytes)
    return None if m is None else batch // m


def micro_never_none(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """When nothing fits, the answer is None, not the whole batch one by one."""
    m = _micro(batch, seq, activation_bytes, state_bytes, budget_bytes)
    return batch if m is None else m


def micro_strictly_below(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Strictly below the budget: a step that needs exactly the budget fits."""
    for m in range(1, batch + 1):
        if batch % m == 0 and (state_bytes + batch // m * seq * activation_bytes
                               < budget_bytes):
            return m
    return None


def micro_without_seq(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Take activation_bytes per sequence: it is per token, seq of them a sequence."""
    return _micro(batch, 1, activation_bytes, state_bytes, budget_bytes)


def micro_powers_of_two(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Double m until it fits: 3 or 6 micro-batches may be the fewest that divide."""
    m = 1
    while m <= batch:
        if batch % m == 0 and (state_bytes + batch // m * seq * activation_bytes
                               <= budget_bytes):
            return m
        m *= 2
    return None


def micro_zero_for_none(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Return 0 when nothing fits: the text asks for None."""
    m = _micro(batch, seq, activation_bytes, state_bytes, budget_bytes)
    return 0 if m is None else m


def micro_doubling_any_size(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Double m, whether or not it divides the batch."""
    m = 1
    while m <= batch:
        if state_bytes + batch / m * seq * activation_bytes <= budget_bytes:
            return m
        m *= 2
    return None


def micro_most(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Keep the most micro-batches that fit, not the fewest."""
    fits = [m for m in range(1, batch + 1) if batch % m == 0
            and state_bytes + batch // m * seq * activation_bytes <= budget_bytes]
    return fits[-1] if fits else None


def micro_whole_batch(batch, seq, activation_bytes, state_bytes, budget_bytes):
    """Keep every micro-batch's activations alive at once: 1 if all fit, else None."""
    if state_bytes + batch * seq * activation_bytes <= budget_bytes:
        return 1
    return None


# ---- tp_specs ---------------------------------------------------------------

_COLS, _ROWS, _WHOLE = P(None, None, "model"), P(None, "model", None), P()


def _specs(q, kv, o, gate_up, down, norm=_WHOLE):
    return {"wq": q, "wk": kv, "wv": kv, "wo": o, "w_gate": gate_up, "w_up": gate_up,
            "w_down": down, "attn_norm": norm, "mlp_norm": norm}


def _tp(cfg, model):
    """Give what the slips below depart from."""
    heads, kv, mlp = (cfg.heads % model == 0, cfg.kv_heads % model == 0,
                      cfg.hidden % model == 0)
    return _specs(_COLS if heads else _WHOLE, _COLS if kv else _WHOLE,
                  _ROWS if heads else _WHOLE, _COLS if mlp else _WHOLE,
                  _ROWS if mlp else _WHOLE)


def specs_wo_by_columns(cfg, model):
    """Split the output projections by columns too: by rows, to add up."""
    heads, kv, mlp = (cfg.heads % model == 0, cfg.kv_heads % model == 0,
                      cfg.hidden % model == 0)
    return _specs(_COLS if heads else _WHOLE, _COLS if kv else _WHOLE,
                  _COLS if heads else _WHOLE, _COLS if mlp else _WHOLE,
                  _COLS if mlp else _WHOLE)


def specs_kv_always_split(cfg, model):
    """Keys and values split even when their heads do not divide evenly."""
    heads, mlp = cfg.heads % model == 0, cfg.hidden % model == 0
    return _specs(_COLS if heads else _WHOLE, _COLS if heads else _WHOLE,
                  _ROWS if heads else _WHOLE, _COLS if mlp else _WHOLE,
                  _ROWS if mlp else _WHOLE)


def specs_by_input_rows(cfg, model):
    """q, k, v split by their input rows (d): each device then has a partial sum."""
    heads, kv, mlp = (cfg.heads % model == 0, cfg.kv_heads % model == 0,
                      cfg.hidden % model == 0)
    return _specs(_ROWS if heads else _WHOLE, _ROWS if kv else _WHOLE,
                  _COLS if heads else _WHOLE, _ROWS if mlp else _WHOLE,
                  _COLS if mlp else _WHOLE)


def specs_norms_split(cfg, model):
    """Split the norms' scales: a norm needs all of d on every device."""
    specs = _tp(cfg, model)
    return specs | {"attn_norm": P(None, "model"), "mlp_norm": P(None, "model")}


def specs_ignore_divisibility(cfg, model):
    """Every weight split, whether or not its heads (or units) divide evenly."""
    return _specs(_COLS, _COLS, _ROWS, _COLS, _ROWS)


def specs_over_data(cfg, model):
    """Split over "data": tensor parallelism splits over "model"."""
    return {name: P(*["data" if e == "model" else e for e in spec])
            for name, spec in _tp(cfg, model).items()}


def specs_other_axis_name(cfg, model):
    """Name the axis "tp": the mesh's tensor-parallel axis is called "model"."""
    return {name: P(*["tp" if e == "model" else e for e in spec])
            for name, spec in _tp(cfg, model).items()}


def specs_without_layers_axis(cfg, model):
    """Write (d, out) specs: the weights are stacked, the layers axis first."""
    return {name: P(*tuple(spec)[1:]) for name, spec in _tp(cfg, model).items()}


def specs_mlp_always_split(cfg, model):
    """Check whole heads but split the MLP whatever its width."""
    return _tp(cfg, model) | {"w_gate": _COLS, "w_up": _COLS, "w_down": _ROWS}


# ---- pipeline_micro_batches ------------------------------------------------


def bubble_over_m(stages, percent):
    """Bubble taken as (p - 1) / m: the step lasts m + p - 1 ticks, not m."""
    m = 1
    while 100 * (stages - 1) > percent * m:
        m += 1
    return m


def bubble_over_m_closed_form(stages, percent):
    """Solve the same bubble for m: ceil(100 (p - 1) / percent), 0 for one stage."""
    return math.ceil(100 * (stages - 1) / percent)


def bubble_all_stages(stages, percent):
    """Bubble taken as p / (m + p): p - 1 ticks idle of m + p - 1."""
    m = 1
    while 100 * stages > percent * (m + stages):
        m += 1
    return m


def bubble_strictly_below(stages, percent):
    """Strictly below the target: a bubble exactly at it is allowed."""
    m = 1
    while 100 * (stages - 1) >= percent * (m + stages - 1):
        m += 1
    return m


def bubble_micro_per_stage(stages, percent):
    """Micro-batches per stage: the answer is how many in all flow through."""
    per_stage = 1
    while 100 * (stages - 1) > percent * (per_stage * stages + stages - 1):
        per_stage += 1
    return per_stage


def bubble_one_less(stages, percent):
    """One micro-batch short: the largest m whose bubble is still too big."""
    m = 0
    while 100 * (stages - 1) > percent * (m + stages):  # tests m + 1, returns m
        m += 1
    return m


def bubble_ticks(stages, percent):
    """Return the step's ticks, m + p - 1, not the micro-batches m."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m + stages - 1


def bubble_powers_of_two(stages, percent):
    """Double m until the bubble is small enough: the fewest may be no power of 2."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m *= 2
    return m


def bubble_no_micro_batch(stages, percent):
    """Solve m >= (p - 1)(100 - percent) / percent without taking at least one."""
    return math.ceil((stages - 1) * (100 - percent) / percent)


def bubble_percent_as_fraction(stages, percent):
    """Compare the bubble, a fraction, with the percent itself: it is per cent."""
    m = 1
    while (stages - 1) / (m + stages - 1) > percent:
        m += 1
    return m


def bubble_rounded(stages, percent):
    """Round the bubble to a whole percent before comparing it with the target."""
    m = 1
    while round(100 * (stages - 1) / (m + stages - 1)) > percent:
        m += 1
    return m


def bubble_float_ceil(stages, percent):
    """Solve for m in floating point: ceil((p - 1)(100 / percent - 1)), at least 1."""
    return max(1, math.ceil((stages - 1) * (100 / percent - 1)))


def bubble_rounded_down(stages, percent):
    """Solve for m and round down: (p - 1)(100 - percent) // percent, at least 1."""
    return max(1, (stages - 1) * (100 - percent) // percent)


def bubble_over_m_plus_p(stages, percent):
    """Bubble taken as (p - 1) / (m + p): one tick too many, m from 1."""
    m = 1
    while 100 * (stages - 1) > percent * (m + stages):
        m += 1
    return m


# ---- zero_bytes_per_device --------------------------------------------------

#: Set while a slip runs "with ZeRO's gradients": the bytes per parameter of
#: exercise 2 (the ZeRO paper's accounting, gradients in the compute dtype),
#: as a learner who reuses exercise 2 here counts them.
_PAPER_GRADS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "paper_grads", default=False)


def _per_param(precision):
    """Give the bytes per parameter: the course's step's, or ZeRO's paper's."""
    per = dict(transformer.bytes_per_param(precision))
    if _PAPER_GRADS.get():
        grads = jnp.dtype(transformer.PRECISIONS[precision].compute).itemsize
        per["total"] += grads - per["grads"]
        per["grads"] = grads
    return per


def with_paper_grads(slip):
    """Return ``slip`` made by a learner who counts the gradients as exercise 2."""
    @functools.wraps(slip)
    def both(cfg, stage, devices, precision):
        token = _PAPER_GRADS.set(True)
        try:
            return slip(cfg, stage, devices, precision)
        finally:
            _PAPER_GRADS.reset(token)

    both.__name__ = both.__qualname__ = f"{slip.__name__}_paper_grads"
    both.__doc__ = f"{slip.__doc__} And the gradients in the compute dtype."
    return both


def _zero(cfg, devices, precision, split):
    per = _per_param(precision)
    n = transformer.param_count(cfg)
    return float(sum(per[part] * n / (devices if split.get(part) else 1)
                     for part in ("weights", "master", "grads", "adam")))


def zero_master_not_split(cfg, stage, devices, precision):
    """Only Adam's moments split: the master weights belong to the optimizer too."""
    return _zero(cfg, devices, precision, {"adam": True, "grads": stage >= 2,
                                           "weights": stage >= 3})


def zero_stage_too_far(cfg, stage, devices, precision):
    """Stage 1 split the gradients too: that is stage 2 (and 2 the weights, 3)."""
    return _zero(cfg, devices, precision, {"master": True, "adam": True,
                                           "grads": True, "weights": stage >= 2})


def zero_stage3_weights_whole(cfg, stage, devices, precision):
    """Stage 3 kept the weights whole: it is FSDP, which splits them too."""
    return _zero(cfg, devices, precision, {"master": True, "adam": True,
                                           "grads": stage >= 2})


def zero_everything_split(cfg, stage, devices, precision):
    """Everything divided by the devices, whatever the stage."""
    return _per_param(precision)["total"] * \
        transformer.param_count(cfg) / devices


def zero_nothing_split(cfg, stage, devices, precision):
    """Nothing divided: each stage splits part of the state over the devices."""
    return float(_per_param(precision)["total"]
                 * transformer.param_count(cfg))


def zero_without_master(cfg, stage, devices, precision):
    """Leave the master copy out: it is a part of the state (0 when not separate)."""
    return _zero(cfg, devices, precision, {"adam": True, "grads": stage >= 2,
                                           "weights": stage >= 3}) - \
        _per_param(precision)["master"] * \
        transformer.param_count(cfg)


def zero_devices_minus_one(cfg, stage, devices, precision):
    """Divide by devices - 1, the others: a device keeps 1/devices of a split part."""
    return _zero(cfg, devices - 1, precision, {"master": True, "adam": True,
                                               "grads": stage >= 2,
                                               "weights": stage >= 3})


def zero_stage_behind(cfg, stage, devices, precision):
    """One stage behind: stage 1 already splits the optimizer's state."""
    return _zero(cfg, devices, precision, {"master": stage >= 2, "adam": stage >= 2,
                                           "grads": stage >= 3})


def zero_stored_only(cfg, stage, devices, precision):
    """Count what is stored between steps, split: the peak of a step holds more."""
    per = _per_param(precision)
    return float(per["stored"] * transformer.param_count(cfg) / devices)


def zero_tied_tables(cfg, stage, devices, precision):
    """Count the parameters as if the embeddings were tied: one vocab × d table."""
    untied = transformer.param_count(cfg)
    return _zero_stages(cfg, stage, devices, precision) * (
        untied - cfg.vocab * cfg.d_model) / untied


def zero_in_gigabytes(cfg, stage, devices, precision):
    """Return gigabytes (1e9 bytes), as the chapter's table prints them."""
    return _zero_stages(cfg, stage, devices, precision) / 1e9


def _zero_stages(cfg, stage, devices, precision):
    """Give what the slips above depart from."""
    return _zero(cfg, devices, precision, {"master": True, "adam": True,
                                           "grads": stage >= 2, "weights": stage >= 3})



#: The course's step's state counted with ZeRO's 2-byte gradients.
zero_zero_paper_grads = with_paper_grads(_zero_stages)


# ---- pick_mesh -----------------------------------------------------------------


def _mesh(cfg, hw, chips, tokens, seq, across=None, most=False, tp_limit=None,
          per="chip"):
    limit = tp_limit or hw.node_chips
    found = []
    for tp in range(1, limit + 1):
        if limit % tp or chips % tp:
            continue
        crossing = chips > hw.node_chips if across is None else across
        needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                            across_nodes=crossing)
        have = {"chip": tokens / chips, "group": tokens / (chips // tp),
                "batch": tokens}[per]
        if have >= needed:
            found.append((chips // tp, tp))
    if not found:
        return None
    return found[-1] if most else found[0]


def mesh_never_across(cfg, hw, chips, tokens, seq):
    """Price every axis inside a node, even the one that crosses nodes."""
    return _mesh(cfg, hw, chips, tokens, seq, across=False)


def mesh_most_tp(cfg, hw, chips, tokens, seq):
    """Take the most tensor parallelism that is compute-bound."""
    return _mesh(cfg, hw, chips, tokens, seq, most=True)


def mesh_tp_across_nodes(cfg, hw, chips, tokens, seq):
    """Let tensor parallelism span nodes: tp up to every chip."""
    return _mesh(cfg, hw, chips, tokens, seq, tp_limit=chips)


def mesh_tokens_per_group(cfg, hw, chips, tokens, seq):
    """Compare the tokens of an FSDP group (of tp chips) with a per-chip batch."""
    return _mesh(cfg, hw, chips, tokens, seq, per="group")


def mesh_swapped(cfg, hw, chips, tokens, seq):
    """Return (tp, fsdp): the order swapped."""
    found = _mesh(cfg, hw, chips, tokens, seq)
    return None if found is None else found[::-1]


def mesh_always_across(cfg, hw, chips, tokens, seq):
    """Price the "data" axis across nodes even when the chips fit in one node."""
    return _mesh(cfg, hw, chips, tokens, seq, across=True)


def mesh_tokens_total(cfg, hw, chips, tokens, seq):
    """Compare the whole batch's tokens with a per-chip critical batch."""
    return _mesh(cfg, hw, chips, tokens, seq, per="batch")


def mesh_never_none(cfg, hw, chips, tokens, seq):
    """Fall back on the most tensor parallelism when no mesh is compute-bound."""
    found = _mesh(cfg, hw, chips, tokens, seq)
    tp = math.gcd(hw.node_chips, chips)
    return found if found is not None else (chips // tp, tp)


def mesh_across_from_fsdp(cfg, hw, chips, tokens, seq):
    """Say across_nodes when fsdp alone exceeds a node: tp shares the node too."""
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                            across_nodes=chips // tp > hw.node_chips)
        if tokens / chips >= needed:
            return chips // tp, tp
    return None


def _mesh_with(cfg, hw, chips, tokens, seq, tps=None, layout="FSDP + TP",
               data=None, have=None):
    """Try ``tps`` in order: the first mesh whose step is compute-bound, by a slip."""
    across = chips > hw.node_chips
    for tp in tps or range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        fsdp = chips // tp
        needed = transformer.critical_batch(cfg, layout, hw, seq,
                                            fsdp if data is None else data, tp,
                                            across_nodes=across)
        if (tokens / chips if have is None else have) >= needed:
            return fsdp, tp
    return None


def mesh_data_is_chips(cfg, hw, chips, tokens, seq):
    """Give critical_batch every chip as the "data" axis, not chips // tp."""
    return _mesh_with(cfg, hw, chips, tokens, seq, data=chips)


def mesh_tp_one_or_node(cfg, hw, chips, tokens, seq):
    """Try tp = 1 and a whole node only: the tps between are skipped."""
    return _mesh_with(cfg, hw, chips, tokens, seq, tps=sorted({1, hw.node_chips}))


def mesh_smallest_critical(cfg, hw, chips, tokens, seq):
    """Take the compute-bound mesh of the smallest critical batch, not the least tp."""
    best = None
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue
        needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                            across_nodes=chips > hw.node_chips)
        if tokens / chips >= needed and (best is None or needed < best[0]):
            best = needed, (chips // tp, tp)
    return None if best is None else best[1]


def mesh_sequences_per_chip(cfg, hw, chips, tokens, seq):
    """Compare sequences per chip (tokens / chips / seq) with tokens per chip."""
    return _mesh_with(cfg, hw, chips, tokens, seq, have=tokens / chips / seq)


def mesh_fsdp_layout(cfg, hw, chips, tokens, seq):
    """Ask critical_batch for plain FSDP's critical batch, not FSDP + TP's."""
    return _mesh_with(cfg, hw, chips, tokens, seq, layout="FSDP")
