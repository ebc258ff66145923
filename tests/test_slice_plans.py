"""Chapter 7's plans beside the TPU compiler: the stored compiles and the levers.

The compiles themselves ran once on a TPU host (``python -m
jaxcourse.transformer.slice_plans``); these tests check that what the chapter
reads from them still matches today's plan, that every refusal is read as the
compiler said it, and that the loss computed in chunks (one of the levers the
chapter tries) is the same loss. ``tests/test_slices.py`` compiles a step for
a slice here, with donation and the chunked loss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse import transformer
from jaxcourse.scaling.memory import residual_bytes, saved_residuals
from jaxcourse.slices import SLICES
from jaxcourse.transformer import slice_plans


def test_every_run_is_stored_with_todays_plan_and_the_compilers_versions():
    stored = slice_plans.load()
    assert stored["versions"]["libtpu"] is not None and stored["versions"]["jax"]
    assert set(stored["runs"]) == {run.name for run in slice_plans.RUNS}
    for run in slice_plans.RUNS:
        row = stored["runs"][run.name]
        assert slice_plans.Run(**row["run"]) == run
        assert row["plan"] == slice_plans.plan_of(run), run.name
        assert ("memory" in row) != ("refused" in row), run.name


def test_every_plan_holds_within_a_quarter_and_predicts_every_refusal():
    # The plan counts the attention in use: the splash kernel's runs and the
    # chapter's own attention's alike. An accepted run's peak is within 1.25
    # times its plan, either way; a refused run's plan is over the chip's HBM.
    rows = slice_plans.verdicts(slice_plans.load())
    forms = {slice_plans.Run(**slice_plans.load()["runs"][row.name]["run"]).attention
             for row in rows}
    assert forms == {"splash", "plain"}
    for row in rows:
        if row.refused:
            assert row.plan > row.usable, row.name
        else:
            assert 1 / 1.25 <= row.compiled / row.plan <= 1.25, row.name
            assert row.plan <= row.usable, row.name


def test_a_refusal_is_read_as_the_compiler_said_it():
    said = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required "
            "for HLO temporaries (18.85G) exceeds available HBM (15.75G).")
    assert slice_plans.needed_bytes(said) == (18.85 * 2**30, 15.75 * 2**30)
    assert slice_plans.needed_bytes("no figures here") is None
    for row in slice_plans.verdicts(slice_plans.load()):
        if row.refused:
            # What the compiler said it had is the slice's usable HBM.
            assert row.compiled > row.usable
        run = next(r for r in slice_plans.RUNS if r.name == row.name)
        assert row.usable == SLICES[run.slice_name].usable_hbm


def test_the_plan_is_the_chapters_formula():
    cfg = transformer.LLAMA3_8B
    plan = transformer.memory_plan(cfg, "FSDP", 8, 1, 8192)
    state = 12 * transformer.param_count(cfg) // 8 + 4
    assert plan["state"] == state and plan["step"] == state // 2
    # Full remat: each block's bfloat16 input, and the head's residuals (the
    # final norm's, the float32 log-softmax over the vocabulary, five numbers).
    head = 10 * cfg.d_model + 4 * cfg.vocab + 20
    blocks = cfg.layers * cfg.d_model * 2
    assert plan["activations"] == (blocks + head) * 8192
    # FSDP gathers, in bfloat16, the embedding, the output layer and the
    # final norm whole, and one block's weights at a time (its two norms too).
    parts = transformer.param_parts(cfg)
    one_block = (parts["attention"] + parts["mlp"]) // cfg.layers + 2 * cfg.d_model
    assert plan["gathered"] == 2 * (2 * cfg.vocab * cfg.d_model + cfg.d_model
                                    + one_block)
    # The chapter's attention writes each head's whole float32 scores.
    assert plan["attention"] == cfg.heads * 8192 * 8192 * 4
    assert plan["outputs"] == 0      # the state donated, as a training loop does
    assert plan["total"] == sum(plan[k] for k in ("state", "step", "gathered",
                                                  "activations", "attention"))
    kept = transformer.memory_plan(cfg, "FSDP", 8, 1, 8192, donate=False)
    assert kept["outputs"] == state and kept["total"] == plan["total"] + state
    # The splash kernel's tiles stay on chip; a chunk of queries is in HBM.
    splash = transformer.memory_plan(cfg.with_attention("splash"), "FSDP", 8, 1, 8192)
    assert splash["attention"] == 0
    assert splash["total"] == plan["total"] - plan["attention"]
    chunked = transformer.memory_plan(cfg.with_attention("chunked", 2048), "FSDP", 8, 1,
                                      8192, sequences=3)
    assert chunked["attention"] == 3 * cfg.heads * 2048 * 8192 * 4
    # Under tensor parallelism a device gathers its slice of the vocabulary
    # and of each block, and holds its heads' scores.
    both = transformer.memory_plan(cfg, "FSDP + TP", 4, 4, 8192)
    block_weights = (parts["attention"] + parts["mlp"]) // cfg.layers
    assert both["gathered"] == 2 * (2 * cfg.vocab * cfg.d_model // 4 + cfg.d_model
                                    + block_weights // 4 + 2 * cfg.d_model)
    assert both["attention"] == plan["attention"] // 4
    # Nothing is gathered without FSDP.
    assert transformer.memory_plan(cfg, "TP", 1, 8, 8192)["gathered"] == 0
    # Sequence parallelism splits the blocks' residuals over "model"; in the
    # head, the split vocabulary its log-softmax (4 vocab / 8) and the split
    # sequence the final norm's float32 part ((8 d + 8) / 8); the output
    # layer's gathered bfloat16 input (2 d) and three numbers stay whole.
    sp = transformer.memory_plan(cfg, "TP + SP", 1, 8, 8192, sequences=2)
    sp_head = (8 * cfg.d_model + 8) // 8 + 2 * cfg.d_model + 4 * cfg.vocab // 8 + 12
    assert sp["activations"] == blocks * 8192 * 2 // 8 + sp_head * 8192 * 2
    # Tensor parallelism alone splits the log-softmax only.
    tp = transformer.memory_plan(cfg, "TP", 1, 8, 8192)
    assert tp["activations"] == (blocks + head - 4 * cfg.vocab * 7 // 8) * 8192
    dots = transformer.memory_plan(cfg, "FSDP", 8, 1, 8192, remat="dots")
    assert dots["activations"] > plan["activations"]
    with pytest.raises(ValueError, match="scores"):
        transformer.memory_plan(cfg, "FSDP", 8, 1, 8192, remat="none")


def _random_configs(count: int) -> list[transformer.Config]:
    # Widths, heads, hidden units and vocabularies that differ from one
    # another, so that a formula that confuses two of them fails.
    rng = np.random.default_rng(56)
    found = []
    for _ in range(count):
        kv_heads = int(rng.choice([1, 2]))
        heads = kv_heads * int(rng.choice([2, 3]))
        head_dim = int(rng.choice([8, 12]))
        found.append(transformer.Config(
            vocab=int(rng.integers(40, 130)), d_model=heads * head_dim,
            layers=int(rng.integers(1, 4)), heads=heads, kv_heads=kv_heads,
            hidden=int(rng.integers(20, 90))))
    return found


@pytest.mark.parametrize("cfg", _random_configs(3), ids=lambda c: f"d{c.d_model}")
def test_the_residual_formula_is_the_list_jax_prints(cfg):
    # residuals_per_token counts from shapes what print_saved_residuals lists
    # (activation_bytes reads the list): equal, byte for byte, for every
    # planned policy and precision.
    for precision in ("mixed", "bfloat16", "float32"):
        for remat in ("full", "names", "dots"):
            listed = transformer.activation_bytes(cfg, remat, 2, 8, precision,
                                                  measure_compiled=False)
            planned = transformer.residuals_per_token(cfg, remat, precision)
            assert planned["total"] == listed["residuals"], (precision, remat)
    # The loss in chunks keeps each piece's input instead of the log-softmax.
    params = transformer.init_params(jax.random.key(0), cfg)
    kept = []
    for batch in (2, 4):
        tokens = np.zeros((batch, 8), np.int32)
        kept.append(saved_residuals(lambda p, t=tokens: transformer.loss(
            jax.tree.map(lambda w: w.astype(jnp.bfloat16), p), t, t, cfg,
            remat="full", chunk=4), params))
    per_token = (residual_bytes(kept[1]) - residual_bytes(kept[0])) / (2 * 8)
    assert per_token == transformer.residuals_per_token(cfg, chunked_loss=True)["total"]


@pytest.mark.parametrize("chunk", [1, 4, 16])
def test_the_loss_in_chunks_is_the_same_loss_and_gradient(chunk):
    cfg = transformer.Config(vocab=96, d_model=64, layers=2, heads=4, kv_heads=2,
                             hidden=128)
    params = transformer.init_params(jax.random.key(0), cfg)
    tokens = jax.random.randint(jax.random.key(1), (2, 17), 0, cfg.vocab)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def value_and_grad(c):
        return jax.value_and_grad(
            lambda p: transformer.loss(p, inputs, targets, cfg, chunk=c))(params)

    (whole, g_whole), (pieces, g_pieces) = value_and_grad(0), value_and_grad(chunk)
    # The chapter's derived tolerance for two summation orders of one float32
    # gradient, applied normwise per array against Σ_e |g_e|
    # (transformer.gradient_tolerance).
    tolerance = transformer.gradient_tolerance(cfg, *inputs.shape)
    assert abs(float(pieces - whole)) <= tolerance * float(whole)
    scale = transformer.per_example_grad_sum(params, inputs, targets, cfg)
    for a, b, s in zip(jax.tree.leaves(g_whole), jax.tree.leaves(g_pieces),
                       jax.tree.leaves(scale), strict=True):
        assert float(jnp.max(jnp.abs(b - a))) <= tolerance * float(jnp.max(s))
    # The bound is not vacuous: a loss that added the chunks' means (as many
    # times too large as there are chunks) would fail it.
    chunks = inputs.shape[1] // chunk
    if chunks > 1:
        assert abs(float(pieces * chunks - whole)) > tolerance * float(whole)


def test_a_sequence_that_does_not_split_into_chunks_is_refused():
    cfg = transformer.Config(vocab=32, d_model=32, layers=1, heads=2, kv_heads=1,
                             hidden=64)
    params = transformer.init_params(jax.random.key(0), cfg)
    tokens = jax.random.randint(jax.random.key(1), (1, 10), 0, cfg.vocab)
    with pytest.raises(ValueError, match="does not split into chunks of 4"):
        transformer.loss(params, tokens, tokens, cfg, chunk=4)
