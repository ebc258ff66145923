"""Reference code for the transformer chapter's exercises: counting and planning.

Importing this module registers nine exercises with :mod:`jaxcourse.exercises`,
in the chapter's order: ``count_params`` (a LLaMA-shaped config's parameters,
grouped-query attention and tied embeddings), ``bytes_per_param`` (what a
precision scheme keeps per parameter), ``activation_bytes_per_token`` (what
the blocks keep for the backward pass under a remat policy),
``flops_per_token`` (a training step's FLOPs per token), ``micro_batches``
(the fewest micro-batches that fit a memory budget), ``tp_specs`` (Megatron's
tensor-parallel specs for a block), ``pipeline_micro_batches`` (the
micro-batches that keep GPipe's bubble under a target),
``zero_bytes_per_device`` (the state per device at each ZeRO stage) and
``pick_mesh`` (the FSDP + TP mesh for a cluster of GPUs and a batch).

Each answer is a formula or a rule on plain numbers, so no exercise needs a
device. The formulas are those of :mod:`jaxcourse.transformer`, which the
chapter shares; the references restate them so that the shown solution is the
reasoning, not a call, and ``tests/test_exercises_transformer.py`` holds them
to the library (the activations to JAX's own list of saved residuals). Each is
checked on the cases shown and on at least 24 random calls, keyed by the call
(:mod:`exercise_kit.transformer_checks`); the known wrong answers are in
:mod:`exercise_kit.transformer_mistakes`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from exercise_kit import transformer_mistakes as wrong
from exercise_kit.transformer_checks import (
    RANDOM,
    WEIGHTS,
    activation_calls,
    bubble_calls,
    bytes_row,
    choice_number,
    count_calls,
    flops_calls,
    mesh_calls,
    mesh_choice,
    micro_calls,
    numbers,
    precision_calls,
    spec_table,
    specs_calls,
    zero_calls,
)
from jaxcourse import transformer
from jaxcourse.exercises import Case, Exercise, Mistake, each_call, register
from jaxcourse.scaling import HARDWARE
from jaxcourse.transformer import LLAMA3_8B, LLAMA3_70B, PRECISIONS, Config, Precision

__all__ = ["activation_bytes_per_token", "bytes_per_param", "count_params",
           "flops_per_token", "micro_batches", "pick_mesh", "pipeline_micro_batches",
           "tp_specs", "zero_bytes_per_device"]

CHAPTER = "07_transformer"


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def count_params(cfg: Config, tied: bool = False) -> int:
    """Return the exact number of parameters of a LLaMA-shaped ``cfg``."""
    d, h = cfg.d_model, cfg.head_dim
    # Queries and the output projection are heads * h wide; keys and values
    # only kv_heads * h (grouped-query attention).
    attention = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h
    mlp = 3 * d * cfg.hidden  # SwiGLU: gate, up and down
    block = attention + mlp + 2 * d  # and two RMSNorm scales
    tables = cfg.vocab * d * (1 if tied else 2)  # embedding, output layer
    return cfg.layers * block + d + tables  # d: the final norm's scale


def bytes_per_param(precision: Precision) -> dict[str, int]:
    """Return what a precision scheme keeps per parameter, part by part."""
    def size(dtype):
        return jnp.dtype(dtype).itemsize

    compute, store = size(precision.compute), size(precision.store)
    # A separate master copy only when the step computes in another dtype.
    master = store if jnp.dtype(precision.store) != jnp.dtype(precision.compute) else 0
    adam = 2 * size(precision.moments)  # two moments
    return {"weights": compute, "master": master, "grads": compute, "adam": adam,
            "total": compute + master + compute + adam,
            "stored": store + adam}  # the step's arguments: no gradients


def activation_bytes_per_token(cfg: Config, remat: str, precision: str) -> int:
    """Return the bytes per token the blocks keep for the backward pass."""
    itemsize = 4 if precision == "float32" else 2  # the compute dtype
    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim
    per_layer = {
        "full": d,  # the block's input: the rest is recomputed from it
        "names": d + d + cfg.hidden,  # input, attn_out and mlp_hidden
        # Input, queries and the attention's output projection (d each),
        # keys and values (kv each), the gate and up projections.
        "dots": 3 * d + 2 * kv + 2 * cfg.hidden,
    }[remat]
    return cfg.layers * per_layer * itemsize


def flops_per_token(cfg: Config, seq: int) -> float:
    """Return a training step's FLOPs per token: 6 per weight, and attention's."""
    d, h = cfg.d_model, cfg.head_dim
    per_block = 2 * d * cfg.heads * h + 2 * d * cfg.kv_heads * h + 3 * d * cfg.hidden
    weights = cfg.layers * per_block + d * cfg.vocab  # the embedding is a lookup
    # Per layer, q k^T and the weighted sum of values: 2 seq heads h FLOPs
    # each forward, three times that for forward and backward.
    attention = cfg.layers * 3 * 2 * (2 * seq * cfg.heads * h)
    return 6.0 * weights + attention


def micro_batches(batch: int, seq: int, activation_bytes: float, state_bytes: float,
                  budget_bytes: float) -> int | None:
    """Return the fewest micro-batches that split ``batch`` evenly and fit."""
    for m in range(1, batch + 1):
        if batch % m:
            continue  # every micro-batch must be the same size
        # The state stays; the activations are one micro-batch's at a time.
        if state_bytes + batch // m * seq * activation_bytes <= budget_bytes:
            return m
    return None


def tp_specs(cfg: Config, model: int) -> dict[str, P]:
    """Return Megatron's specs for a block's weights over the "model" axis."""
    columns = P(None, None, "model")  # (layers, d, out): split the outputs
    rows = P(None, "model", None)  # (layers, in, d): split the inputs
    whole = P()
    # Only whole heads (and whole hidden units) go to a device.
    q = cfg.heads % model == 0
    kv = cfg.kv_heads % model == 0
    mlp = cfg.hidden % model == 0
    return {"wq": columns if q else whole, "wk": columns if kv else whole,
            "wv": columns if kv else whole, "wo": rows if q else whole,
            "w_gate": columns if mlp else whole, "w_up": columns if mlp else whole,
            "w_down": rows if mlp else whole,
            "attn_norm": whole, "mlp_norm": whole}  # a norm needs all of d


def pipeline_micro_batches(stages: int, percent: int) -> int:
    """Return the fewest micro-batches whose GPipe bubble is at most ``percent`` %."""
    m = 1
    # m micro-batches take m + p - 1 ticks; each stage idles p - 1 of them.
    while 100 * (stages - 1) > percent * (m + stages - 1):
        m += 1
    return m


def pick_mesh(cfg: Config, hw: Any, chips: int, tokens: float,
              seq: int) -> tuple[int, int] | None:
    """Return the FSDP + TP mesh with the least TP whose step is compute-bound.

    ``tokens`` are those of one micro-batch, between two gathers of the weights.
    """
    across = chips > hw.node_chips  # then the "data" axis spans nodes
    for tp in range(1, hw.node_chips + 1):
        if hw.node_chips % tp or chips % tp:
            continue  # tensor parallelism stays inside a node
        fsdp = chips // tp
        needed = transformer.critical_batch(cfg, "FSDP + TP", hw, seq, fsdp, tp,
                                            across_nodes=across)
        if tokens / chips >= needed:  # the critical batch is per chip too
            return fsdp, tp
    return None


def zero_bytes_per_device(cfg: Config, stage: int, devices: int,
                          precision: str) -> float:
    """Return the training state's bytes per device at a ZeRO stage."""
    per = transformer.bytes_per_param(precision)
    n = transformer.param_count(cfg)
    # Stage 1 splits the optimizer's state, 2 the gradients too, 3 the weights.
    split = {"master": True, "adam": True, "grads": stage >= 2, "weights": stage >= 3}
    return sum(per[part] * n / (devices if cut else 1) for part, cut in split.items())


# ---- the exercises -------------------------------------------------------

#: LLaMA-3.2 1B's shape (``config.json`` of ``meta-llama/Llama-3.2-1B``): its
#: output layer is the embedding (``tie_word_embeddings`` true).
LLAMA32_1B = Config(vocab=128_256, d_model=2048, layers=16, heads=32, kv_heads=8,
                    hidden=8192, rope_theta=500_000.0, name="LLaMA-3.2 1B")
#: A small config of the chapter's kind.
SMALL = Config(vocab=256, d_model=128, layers=4, heads=8, kv_heads=2, hidden=384)
#: Where a rule's mistakes are named: on its random case, the last.
ON_RANDOM = (-1,)
# Where two slips give the same number on a shown case, neither is named
# there (each is named on the others): each must hear its own name only.
#: count_params: on LLaMA-3 8B, a 4 d MLP adds what multi-head keys and
#: values add (3 · d · 2048 = 2 · d · 3072).
NOT_8B = (1, 2, -1)
#: bytes_per_param: in 'mixed', one float32 moment is two bfloat16 ones, and
#: the gradients stored take what a second copy of the weights takes.
NOT_MIXED = (0, 2, -1)
#: activation_bytes_per_token: the small config has 4 layers, float32 4 bytes.
NOT_SMALL_FLOAT32 = (0, 1, 2, -1)
#: flops_per_token: on the small config at seq 64, the causal half of
#: attention is the size of the output layer.
NOT_SMALL_SEQ = (0, 1, -1)
#: zero_bytes_per_device: at stage 2, splitting everything is one stage too far.
STAGE_1 = (0, -1)
#: zero_bytes_per_device: at stage 3 in 'mixed', the state without the master
#: copy is what is stored between steps (12 bytes per parameter), split.
NOT_STAGE_3 = (0, 1, -1)
#: zero_bytes_per_device: one stage behind splits nothing at stage 1 and
#: keeps the weights whole at stage 3: only stage 2 tells it from those.
NOT_STAGE_1 = (1, 2, -1)
#: zero_bytes_per_device: at stage 2 in 'mixed' the master (4 bytes) and the
#: float32 gradients (4 bytes) weigh the same, so keeping the master whole and
#: being one stage behind give one number there: each is named elsewhere.
NOT_STAGE_2 = (0, 2, -1)
SPEC_CODES = "each spec compared by its mesh axes' names"


def _config_case(text: str, *args: Any, **kw: Any) -> Case:
    return Case(text, numbers(*args), dtype="any", **kw)



#: zero_bytes_per_device: the learner's gradients against the course's step's.
GRADS_OF_THE_STEP = ("the state is the course's step's (transformer.bytes_per_param): "
                     "in mixed precision its gradients are float32, 4 bytes, not "
                     "exercise 2's 2 bytes of ZeRO's accounting")
#: zero_bytes_per_device's slips, each alone.
ZERO_MISTAKES = [
    Mistake("stage 1 splits the optimizer's whole state: Adam's moments "
            "and the master weights", wrong.zero_master_not_split,
            cases=NOT_STAGE_2),
    Mistake("one stage too far: stage 1 splits the optimizer's state, 2 "
            "the gradients too, 3 the weights too", wrong.zero_stage_too_far,
            cases=STAGE_1),
    Mistake("stage 3 (FSDP) splits the weights too",
            wrong.zero_stage3_weights_whole, cases=ON_RANDOM),
    Mistake("at stages 1 and 2 the weights stay whole on every device",
            wrong.zero_everything_split, cases=STAGE_1),
    Mistake("every stage splits part of the state over the devices",
            wrong.zero_nothing_split, cases=NOT_STAGE_1),
    Mistake("the master copy is part of the state: bytes_per_param's "
            "'master' (0 when the step computes in the stored dtype)",
            wrong.zero_without_master, cases=NOT_STAGE_3),
    Mistake("a split part is shared by all the devices, this one included: "
            "divide by devices, not devices - 1", wrong.zero_devices_minus_one),
    Mistake("the state at a step's peak includes the weights it computes "
            "with and the gradients, not only what is stored between steps",
            wrong.zero_stored_only, cases=NOT_STAGE_3),
    Mistake("one stage behind: stage 1 already splits the optimizer's state "
            "(master and moments), 2 the gradients, 3 the weights",
            wrong.zero_stage_behind, cases=ON_RANDOM),
    Mistake("LLaMA-3's output layer is a table of its own (untied): count "
            "both vocab × d tables", wrong.zero_tied_tables),
    Mistake("these are gigabytes: the answer is in bytes",
            wrong.zero_in_gigabytes),
    Mistake(GRADS_OF_THE_STEP, wrong.zero_zero_paper_grads),
]


def paper_grads(mistake: Mistake) -> Mistake:
    """Return ``mistake`` made with exercise 2's 2-byte gradients as well.

    A learner who reuses exercise 2 here counts ZeRO's paper's gradients;
    the slip and that one together are named together.
    """
    return Mistake(mistake.message + "; and " + GRADS_OF_THE_STEP,
                   wrong.with_paper_grads(mistake.function), cases=mistake.cases)


register(
    Exercise(
        id="transformer.count_params",
        title="Count a LLaMA-shaped model's parameters",
        chapter=CHAPTER,
        reference=count_params,
        cases=[
            _config_case("LLaMA-3 8B, untied", LLAMA3_8B, False, rtol=0.0, atol=0.0),
            _config_case("LLaMA-3 70B, untied", LLAMA3_70B, False, rtol=0.0,
                         atol=0.0),
            _config_case("LLaMA-3.2 1B's shape, tied", LLAMA32_1B, True, rtol=0.0,
                         atol=0.0),
            Case("24 random configs, tied and untied; " + RANDOM, count_calls(),
                 runner=each_call(), dtype="any", rtol=0.0, atol=0.0),
        ],
        hints=[
            "Go through one block weight by weight: its attention's four "
            "projections, its MLP's matrices and its norms. Which of them are "
            "narrower with grouped-query attention?",
            "SwiGLU has three matrices, not two: a gate, an up projection and a "
            "down projection.",
            "Outside the blocks: the token table, the final norm, and the output "
            "layer, which tied embeddings share with the token table.",
        ],
        mistakes=[
            Mistake("the keys and values were counted as wide as the queries: "
                    "with grouped-query attention they have kv_heads heads, not "
                    "heads", wrong.count_without_gqa,
                    cases=NOT_8B),
            Mistake("SwiGLU's MLP has three matrices (gate, up, down), not two",
                    wrong.count_two_matrix_mlp),
            Mistake("the RMSNorm scales are parameters too: two per block and the "
                    "final one, d each", wrong.count_without_norms),
            Mistake("with tied embeddings the output layer is the token table: "
                    "count it once", wrong.count_always_untied),
            Mistake("an untied output layer is a second vocab × d table",
                    wrong.count_without_output_layer),
            Mistake("the MLP is cfg.hidden wide (14336 in LLaMA-3 8B, 3.5 d), not "
                    "4 d as in GPT-2", wrong.count_mlp_4d, cases=NOT_8B),
            Mistake("the final norm, after the last block, has a scale too: d "
                    "parameters", wrong.count_without_final_norm),
            Mistake("there are cfg.layers blocks: the token table and the output "
                    "layer are counted apart, not as one more block",
                    wrong.count_extra_layer),
            Mistake("RMSNorm has a scale and no bias: d parameters per norm, not 2 d "
                    "as LayerNorm", wrong.count_layernorm_biases),
            Mistake("each block has two RMSNorms, one before attention and one "
                    "before the MLP", wrong.count_one_norm_per_block),
            Mistake("LLaMA's projections have no biases: only the weight matrices",
                    wrong.count_projection_biases),
            Mistake("a key or value head is as wide as a query head, head_dim "
                    "(d / heads), not d", wrong.count_kv_heads_d_wide),
            Mistake("the output projection takes in every query head's output: "
                    "it is as wide as the queries, not as the keys and values",
                    wrong.count_output_as_narrow_as_kv),
            Mistake("grouped-query attention keeps the heads' width: the keys are "
                    "kv_heads heads of head_dim each, not d cut into kv_heads "
                    "pieces", wrong.count_kv_width_d_over_kv),
        ],
    ),
    Exercise(
        id="transformer.bytes_per_param",
        title="What a precision scheme keeps per parameter",
        chapter=CHAPTER,
        reference=bytes_per_param,
        cases=[
            Case(f"the scheme {name!r} (compared in the order weights, master, "
                 "grads, adam, total, stored)", numbers(PRECISIONS[name]),
                 extract=bytes_row, dtype="any")
            for name in ("float32", "mixed", "bfloat16")
        ] + [
            Case("all 27 schemes of float32, bfloat16 and float16; " + RANDOM,
                 precision_calls(), runner=each_call(bytes_row), dtype="any"),
        ],
        hints=[
            "A dtype knows how many bytes one of its numbers takes: look for the "
            "attribute of jnp.dtype(...) that says it.",
            "The step computes with a copy in the compute dtype, and in ZeRO's "
            "accounting its gradients come in that dtype. A master copy is needed "
            "only when the stored dtype differs from it.",
            "Adam keeps two moments per parameter. Between two steps, what "
            "survives is the stored weights and the moments: the step's "
            "arguments.",
        ],
        mistakes=[
            Mistake("a master copy exists only when the stored dtype differs from "
                    "the compute dtype: otherwise the weights are the master",
                    wrong.bytes_master_always),
            Mistake("Adam keeps two moments per parameter (a mean and a mean of "
                    "squares)", wrong.bytes_one_moment, cases=NOT_MIXED),
            Mistake("in ZeRO's accounting, which this exercise asks for, the "
                    "gradients are in the dtype the step computes in (the course's "
                    "own step keeps float32 ones: the chapter's 18 bytes)",
                    wrong.bytes_grads_stored),
            Mistake("Adam's moments have a dtype of their own: precision.moments",
                    wrong.bytes_moments_compute, cases=ON_RANDOM),
            Mistake("the gradients do not live between steps: what is stored is "
                    "the weights and Adam's moments", wrong.bytes_stored_with_grads,
                    cases=NOT_MIXED),
            Mistake("itemsize is in bytes: these are bits, 8 times as many",
                    wrong.bytes_in_bits),
            Mistake("when the stored dtype differs from the compute dtype, the "
                    "step keeps a master copy in the stored dtype",
                    wrong.bytes_master_never),
            Mistake("between steps only the stored weights live: the step makes "
                    "its compute copy from them", wrong.bytes_stored_both_copies,
                    cases=ON_RANDOM),
            Mistake("a master copy is needed whenever the dtypes differ, even of "
                    "one size: bfloat16 and float16 are both 2 bytes",
                    wrong.bytes_master_by_size, cases=ON_RANDOM),
            Mistake("the total counts every part: the master copy too",
                    wrong.bytes_total_without_master),
            Mistake("without a separate master copy the weights themselves are "
                    "what is stored: between steps there is always one copy of "
                    "the weights, besides Adam's moments",
                    wrong.bytes_stored_master_and_adam),
            Mistake("the gradients are alive during the step (made by the "
                    "backward pass, read by the update): the total counts them",
                    wrong.bytes_total_without_grads),
            Mistake("'weights' is the copy the step computes with, in its dtype; "
                    "the stored dtype is the master copy's",
                    wrong.bytes_weights_in_store_dtype),
            Mistake("'stored' is not one more array: it is the part of the total "
                    "that lives between steps", wrong.bytes_total_with_stored),
        ],
    ),
    Exercise(
        id="transformer.activation_bytes_per_token",
        title="What the blocks keep per token under a remat policy",
        chapter=CHAPTER,
        reference=activation_bytes_per_token,
        cases=[
            _config_case("LLaMA-3 8B, 'full', 'mixed'", LLAMA3_8B, "full", "mixed"),
            _config_case("LLaMA-3 8B, 'names', 'mixed'", LLAMA3_8B, "names",
                         "mixed"),
            _config_case("LLaMA-3 8B, 'dots', 'mixed'", LLAMA3_8B, "dots", "mixed"),
            _config_case("a small config, 'dots', 'float32'", SMALL, "dots",
                         "float32"),
            Case("24 random configs, policies and precisions; " + RANDOM,
                 activation_calls(), runner=each_call(), dtype="any"),
        ],
        hints=[
            "Print the residuals for a tiny config and match each array's last "
            "dimension to a width of the model: d, kv_heads · head_dim, hidden.",
            "Every residual of the blocks has the layers axis first: the scan "
            "keeps one per block. Per token, drop the batch and sequence axes.",
            "The arrays are in the compute dtype: 4 bytes in 'float32', 2 in "
            "'mixed'.",
        ],
        mistakes=[
            Mistake("this is one block's: the scan keeps the residuals of every "
                    "layer", wrong.activations_one_layer, cases=NOT_SMALL_FLOAT32),
            Mistake("mixed precision computes in bfloat16: its activations take 2 "
                    "bytes, not 4", wrong.activations_float32),
            Mistake("with grouped-query attention the keys and values are "
                    "kv_heads · head_dim wide, narrower than d",
                    wrong.activations_dots_without_gqa),
            Mistake("full remat still keeps each block's input, to recompute the "
                    "block from", wrong.activations_full_keeps_nothing),
            Mistake("'names' keeps mlp_hidden, SwiGLU's product (one hidden-wide "
                    "array), not the gate and up projections",
                    wrong.activations_names_gate_and_up),
            Mistake("these are numbers, not bytes: multiply by the compute "
                    "dtype's bytes (4 in 'float32', 2 in 'mixed')",
                    wrong.activations_numbers_not_bytes, cases=NOT_SMALL_FLOAT32),
            Mistake("'names' keeps each block's input too, besides attn_out and "
                    "mlp_hidden", wrong.activations_names_without_input),
            Mistake("w_down's output is not kept: the backward pass never needs it "
                    "(the sum it feeds is the next block's input, which the scan "
                    "keeps)", wrong.activations_dots_with_down),
            Mistake("'dots' keeps each block's input too (to recompute the norms "
                    "from), besides the products' outputs",
                    wrong.activations_dots_without_input),
            Mistake("'dots' keeps both of SwiGLU's hidden-wide products, the "
                    "gate's and the up projection's",
                    wrong.activations_dots_one_hidden),
        ],
    ),
    Exercise(
        id="transformer.flops_per_token",
        title="A training step's FLOPs per token",
        chapter=CHAPTER,
        reference=flops_per_token,
        cases=[
            _config_case("LLaMA-3 8B, seq 8192", LLAMA3_8B, 8192),
            _config_case("LLaMA-3 70B, seq 8192", LLAMA3_70B, 8192),
            _config_case("a small config, seq 64", SMALL, 64),
            Case("24 random configs and sequence lengths; " + RANDOM, flops_calls(),
                 runner=each_call(), dtype="any"),
        ],
        hints=[
            "A product with a weight matrix costs 2 FLOPs per weight per token "
            "forward, and 4 backward (one product for the input's gradient, one "
            "for the weight's).",
            "Which parameters multiply a matrix? The embedding is a lookup, and a "
            "norm's scale multiplies elementwise.",
            "Attention adds products that involve no weight: the scores q kᵀ and "
            "the weighted sum of values, each 2 · seq FLOPs per query head "
            "dimension per token forward.",
        ],
        mistakes=[
            Mistake("the embedding is a lookup and a norm's scale no matrix "
                    "product: count 6 FLOPs only for the matrices' weights",
                    wrong.flops_all_params),
            Mistake("this is the forward pass: the backward pass costs twice as "
                    "much, 6 FLOPs per weight in all", wrong.flops_forward_only),
            Mistake("attention's scores and weighted sum cost FLOPs too, growing "
                    "with seq", wrong.flops_without_attention),
            Mistake("every query head scores the keys: attention's term counts "
                    "heads, not kv_heads", wrong.flops_attention_kv_heads),
            Mistake("the output layer is a d × vocab product: count its weights",
                    wrong.flops_without_output_layer, cases=NOT_SMALL_SEQ),
            Mistake("both of attention's products (q kᵀ and the weighted sum of "
                    "values) are on the full seq × seq matrix: the causal mask does "
                    "not halve them here", wrong.flops_causal_half,
                    cases=NOT_SMALL_SEQ),
            Mistake("a training step is 6 FLOPs per weight (2 forward, 4 "
                    "backward), not 8: remat's second forward pass is not asked "
                    "for", wrong.flops_eight_per_weight),
            Mistake("attention's products have a backward pass too: 3 times their "
                    "forward FLOPs, as for the weights",
                    wrong.flops_attention_forward_only),
            Mistake("per token, each of attention's products is 2 · seq FLOPs per "
                    "query dimension: seq × seq is the whole sequence's",
                    wrong.flops_attention_seq_squared),
            Mistake("the embedding is a lookup, not a matrix product: its table "
                    "costs no FLOPs", wrong.flops_with_embedding),
            Mistake("a training step is 6 FLOPs per weight (2 forward, 4 "
                    "backward), not 8: remat's second forward pass is not asked "
                    "for", wrong.flops_eight_per_weight_only),
        ],
    ),
    Exercise(
        id="transformer.micro_batches",
        title="How many micro-batches fit a memory budget?",
        chapter=CHAPTER,
        reference=micro_batches,
        cases=[
            Case("32 sequences of 8192 tokens, 72 KiB per token, 60 GB of state, "
                 "a budget of 80 GB",
                 numbers(32, 8192, 73_728.0, 60e9, 80e9), extract=choice_number,
                 dtype="any"),
            Case("the same with a budget of 65 GB", numbers(32, 8192, 73_728.0,
                                                            60e9, 65e9),
                 extract=choice_number, dtype="any"),
            Case("the same with a budget of 60.2 GB", numbers(32, 8192, 73_728.0,
                                                              60e9, 60.2e9),
                 extract=choice_number, dtype="any"),
            Case("24 random batches, activations, states and budgets; " + RANDOM,
                 micro_calls(), runner=each_call(choice_number), dtype="any"),
        ],
        hints=[
            "With m micro-batches, the step holds the state and the activations "
            "of one micro-batch at a time: batch / m sequences of seq tokens.",
            "Gradient accumulation needs micro-batches of one size: only the m "
            "that divide the batch are allowed.",
            "Try m from 1 upwards and keep the first that fits (at most the "
            "budget). If not even one sequence at a time fits, say None.",
        ],
        mistakes=[
            Mistake("the micro-batches must split the batch evenly: take the "
                    "fewest that divide it", wrong.micro_not_a_divisor,
                    cases=ON_RANDOM),
            Mistake("the state (weights, Adam's moments) takes its share of the "
                    "budget too", wrong.micro_without_state, cases=ON_RANDOM),
            Mistake("this is the size of a micro-batch: the answer is how many "
                    "micro-batches", wrong.micro_size_not_count, cases=ON_RANDOM),
            Mistake("when not even one sequence at a time fits, the answer is "
                    "None", wrong.micro_never_none, cases=ON_RANDOM),
            Mistake("a step that needs exactly the budget fits: at most, not "
                    "below", wrong.micro_strictly_below, cases=ON_RANDOM),
            Mistake("activation_bytes is per token: a sequence takes seq times "
                    "as much", wrong.micro_without_seq, cases=ON_RANDOM),
            Mistake("try every m that divides the batch, not only powers of 2: 3 "
                    "or 6 may be the fewest that fit", wrong.micro_powers_of_two,
                    cases=ON_RANDOM),
            Mistake("when not even one sequence at a time fits, return None, not 0",
                    wrong.micro_zero_for_none, cases=ON_RANDOM),
            Mistake("doubling m skips counts (3, 6) and tries some that do not "
                    "divide the batch: try every m that divides it",
                    wrong.micro_doubling_any_size, cases=ON_RANDOM),
            Mistake("take the fewest micro-batches that fit: more only run the "
                    "step in smaller, slower pieces", wrong.micro_most,
                    cases=ON_RANDOM),
            Mistake("the micro-batches run one after another: only one "
                    "micro-batch's activations are alive at a time",
                    wrong.micro_whole_batch, cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="transformer.tp_specs",
        title="Megatron's specs for a block's weights",
        chapter=CHAPTER,
        reference=tp_specs,
        cases=[
            Case(f"LLaMA-3 8B on a 'model' axis of 8 (one row per weight, "
                 f"{', '.join(WEIGHTS)}; {SPEC_CODES})", numbers(LLAMA3_8B, 8),
                 extract=spec_table),
            Case("LLaMA-3 70B on a 'model' axis of 16",
                 numbers(LLAMA3_70B, 16), extract=spec_table),
            Case("24 random configs and 'model' sizes; " + RANDOM, specs_calls(),
                 runner=each_call(spec_table)),
        ],
        hints=[
            "A device can run attention for whole heads alone: split the "
            "projections that make the heads along their output columns.",
            "The output projections take the heads in: split them along their "
            "input rows, so that each device's product is one term of a sum and "
            "a single all-reduce completes the sub-block. The MLP splits the same "
            "way by hidden units.",
            "A weight whose heads (or units) do not divide evenly over the "
            "devices stays whole on each; a norm's scale acts on all of d.",
        ],
        mistakes=[
            Mistake("the output projections wo and w_down split by rows, the "
                    "heads (hidden units) they take in: then each device holds "
                    "one term of the sum", wrong.specs_wo_by_columns,
                    cases=ON_RANDOM),
            Mistake("fewer key/value heads than devices (or heads that do not "
                    "divide evenly): keep wk and wv whole, a device cannot hold a "
                    "piece of a head", wrong.specs_kv_always_split, cases=ON_RANDOM),
            Mistake("splitting q, k and v by their input rows leaves a partial "
                    "sum after each projection: split their output columns",
                    wrong.specs_by_input_rows, cases=ON_RANDOM),
            Mistake("a norm's scale acts on all of d on every device: keep it "
                    "whole", wrong.specs_norms_split, cases=ON_RANDOM),
            Mistake("a weight is split only when its heads or hidden units divide "
                    "evenly over the devices", wrong.specs_ignore_divisibility,
                    cases=ON_RANDOM),
            Mistake("tensor parallelism splits over the 'model' axis, not 'data'",
                    wrong.specs_over_data, cases=ON_RANDOM),
            Mistake("the mesh's tensor-parallel axis is called 'model': a spec "
                    "names it so", wrong.specs_other_axis_name, cases=ON_RANDOM),
            Mistake("the weights are stacked: each spec starts with the layers "
                    "axis (None), then the weight's own (in, out)",
                    wrong.specs_without_layers_axis, cases=ON_RANDOM),
            Mistake("the MLP splits by hidden units only when hidden divides "
                    "evenly over the devices", wrong.specs_mlp_always_split,
                    cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="transformer.pipeline_micro_batches",
        title="Enough micro-batches for a small pipeline bubble",
        chapter=CHAPTER,
        reference=pipeline_micro_batches,
        cases=[
            Case("4 stages, at most 10 %", numbers(4, 10), dtype="any"),
            Case("4 stages, at most 20 % (met exactly)", numbers(4, 20), dtype="any"),
            Case("8 stages, at most 5 %", numbers(8, 5), dtype="any"),
            Case("24 random stages and targets; " + RANDOM, bubble_calls(),
                 runner=each_call(choice_number), dtype="any"),
        ],
        hints=[
            "Draw the schedule for p stages and m micro-batches: how many ticks "
            "does the last micro-batch need to leave the last stage?",
            "In those ticks each stage is busy m times: the idle share is the "
            "bubble.",
            "Try m from 1 upwards; compare in whole numbers (multiply both sides "
            "by 100 and the denominator) so that no rounding decides.",
        ],
        mistakes=[
            Mistake("the step lasts m + p - 1 ticks, so the bubble is (p - 1) / "
                    "(m + p - 1), not (p - 1) / m", wrong.bubble_over_m,
                    cases=ON_RANDOM),
            Mistake("the step lasts m + p - 1 ticks, so the bubble is (p - 1) / "
                    "(m + p - 1), not (p - 1) / m", wrong.bubble_over_m_closed_form,
                    cases=ON_RANDOM),
            Mistake("each stage idles p - 1 ticks, not p: the bubble is (p - 1) / "
                    "(m + p - 1)", wrong.bubble_all_stages, cases=ON_RANDOM),
            Mistake("a bubble exactly at the target is allowed: at most, not "
                    "below", wrong.bubble_strictly_below, cases=ON_RANDOM),
            Mistake("this counts micro-batches per stage: every micro-batch "
                    "flows through all the stages", wrong.bubble_micro_per_stage,
                    cases=ON_RANDOM),
            Mistake("one short: with this many micro-batches the bubble is still "
                    "above the target", wrong.bubble_one_less, cases=ON_RANDOM),
            Mistake("this is the step's length in ticks, m + p - 1: the answer is "
                    "m, the micro-batches", wrong.bubble_ticks, cases=ON_RANDOM),
            Mistake("try every m, not only powers of 2: the fewest may be 3 or 5",
                    wrong.bubble_powers_of_two, cases=ON_RANDOM),
            Mistake("a step has at least one micro-batch: with one stage, or a "
                    "target of 100 %, the answer is 1", wrong.bubble_no_micro_batch,
                    cases=ON_RANDOM),
            Mistake("percent is in per cent: compare the bubble, a fraction, with "
                    "percent / 100", wrong.bubble_percent_as_fraction,
                    cases=ON_RANDOM),
            Mistake("compare the bubble exactly: rounded to a whole percent, "
                    "a bubble of 10.4 % passes a target of 10 %",
                    wrong.bubble_rounded, cases=ON_RANDOM),
            Mistake("floating point decided: where the bubble is exactly the "
                    "target, 100 / percent is a hair off and ceil takes one more; "
                    "compare in whole numbers", wrong.bubble_float_ceil,
                    cases=ON_RANDOM),
            Mistake("rounded down, the bubble is still above the target: take the "
                    "smallest m whose bubble is within it", wrong.bubble_rounded_down,
                    cases=ON_RANDOM),
            Mistake("m micro-batches take m + p - 1 ticks, not m + p: count them "
                    "on the chapter's GPipe schedule", wrong.bubble_over_m_plus_p,
                    cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="transformer.zero_bytes_per_device",
        title="The state per device at each ZeRO stage",
        chapter=CHAPTER,
        reference=zero_bytes_per_device,
        cases=[
            _config_case(f"LLaMA-3 8B, stage {stage}, 8 devices, 'mixed'", LLAMA3_8B,
                         stage, 8, "mixed")
            for stage in (1, 2, 3)
        ] + [
            Case("24 random configs, stages, device counts and schemes; " + RANDOM,
                 zero_calls(), runner=each_call(), dtype="any"),
        ],
        hints=[
            "Start from the bytes per parameter of each part of the scheme "
            "(transformer.bytes_per_param) times the parameter count.",
            "Each stage splits more of the state over the data-parallel devices: "
            "first the optimizer's own arrays, then the gradients, then the "
            "weights the step computes with.",
            "The master weights belong to the optimizer: it updates them.",
        ],
        mistakes=ZERO_MISTAKES + [
            paper_grads(m) for m in ZERO_MISTAKES
            if m.function in (wrong.zero_without_master, wrong.zero_devices_minus_one,
                              wrong.zero_tied_tables, wrong.zero_in_gigabytes)
        ],
    ),
    Exercise(
        id="transformer.pick_mesh",
        title="Pick the mesh for a cluster of GPUs",
        chapter=CHAPTER,
        reference=pick_mesh,
        cases=[
            Case("LLaMA-3 8B on one node of 8 H100s, a micro-batch of one "
                 "sequence of 8192",
                 numbers(LLAMA3_8B, HARDWARE["H100 SXM"], 8, 8_192.0, 8192),
                 extract=mesh_choice, dtype="any"),
            Case("LLaMA-3 70B on 8 nodes of H100s, a micro-batch of 64 sequences "
                 "of 8192",
                 numbers(LLAMA3_70B, HARDWARE["H100 SXM"], 64, 524_288.0, 8192),
                 extract=mesh_choice, dtype="any"),
            Case("LLaMA-3 70B on 1024 H100s, 4M tokens of 8192",
                 numbers(LLAMA3_70B, HARDWARE["H100 SXM"], 1024, 4_194_304.0, 8192),
                 extract=mesh_choice, dtype="any"),
            Case("LLaMA-3 70B on 1024 H100s, 2M tokens of 8192",
                 numbers(LLAMA3_70B, HARDWARE["H100 SXM"], 1024, 2_097_152.0, 8192),
                 extract=mesh_choice, dtype="any"),
            Case("24 random configs, clusters and batches; " + RANDOM, mesh_calls(),
                 runner=each_call(mesh_choice), dtype="any"),
        ],
        hints=[
            "List the candidates first: a tp that divides the node's GPUs and the "
            "chips, and fsdp for the rest. Which mesh axis leaves the node?",
            "transformer.critical_batch gives the tokens per chip above which a "
            "mesh's step is compute-bound; its across_nodes says which network "
            "the 'data' axis uses.",
            "Tensor parallelism all-reduces activations in every block: take the "
            "least of it that makes the step compute-bound, or None.",
        ],
        mistakes=[
            Mistake("when the chips fill more than one node, the 'data' axis "
                    "crosses nodes: across_nodes=True, the slower network",
                    wrong.mesh_never_across, cases=ON_RANDOM),
            Mistake("take the least tensor parallelism that is compute-bound: "
                    "more only adds all-reduces of activations",
                    wrong.mesh_most_tp, cases=ON_RANDOM),
            Mistake("tensor parallelism stays inside a node: tp divides the GPUs "
                    "of one node (a tp of 3 or 6, with nodes of 8, straddles two)",
                    wrong.mesh_tp_across_nodes, cases=ON_RANDOM),
            Mistake("the critical batch is per chip: compare the tokens per chip, "
                    "not per FSDP group", wrong.mesh_tokens_per_group,
                    cases=ON_RANDOM),
            Mistake("the answer is (fsdp, tp), in that order",
                    wrong.mesh_swapped, cases=ON_RANDOM),
            Mistake("on one node the 'data' axis stays inside it: across_nodes is "
                    "True only when the chips fill more than one node",
                    wrong.mesh_always_across, cases=ON_RANDOM),
            Mistake("the critical batch is per chip: divide the batch's tokens by "
                    "the chips", wrong.mesh_tokens_total, cases=ON_RANDOM),
            Mistake("when no mesh is compute-bound, the answer is None",
                    wrong.mesh_never_none, cases=ON_RANDOM),
            Mistake("the 'data' axis leaves the node as soon as the chips fill "
                    "more than one node, however small fsdp is",
                    wrong.mesh_across_from_fsdp, cases=ON_RANDOM),
            Mistake("the 'data' axis of an fsdp × tp mesh has fsdp chips, not all "
                    "of them: that is what critical_batch's data is",
                    wrong.mesh_data_is_chips, cases=ON_RANDOM),
            Mistake("try every tp that divides a node, in order: between 1 and a "
                    "whole node, 2 or 4 may be the least that is compute-bound",
                    wrong.mesh_tp_one_or_node, cases=ON_RANDOM),
            Mistake("the smallest critical batch is not what is asked: of the "
                    "compute-bound meshes, the one with the fewest tp",
                    wrong.mesh_smallest_critical, cases=ON_RANDOM),
            Mistake("the critical batch is in tokens: compare the tokens per "
                    "chip, not the sequences", wrong.mesh_sequences_per_chip,
                    cases=ON_RANDOM),
            Mistake("the mesh splits the weights over both axes: ask for the "
                    "critical batch of 'FSDP + TP', not of plain FSDP",
                    wrong.mesh_fsdp_layout, cases=ON_RANDOM),
        ],
    ),
)
