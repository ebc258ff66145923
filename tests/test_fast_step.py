"""The fast step: its parts hold on a CPU; its stored ladder is whole and honest.

The ladder itself is measured on a TPU v5e (``python -m jaxcourse.measure
--ladder``); here the same program runs in ``--quick`` mode, its pieces are
checked against the chapter's (the bfloat16 loss, Adam with bfloat16 moments,
MaxText's FLOP count, the profile's reader), and the stored file is held to
what the chapter says of it.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxcourse import fast_step, transformer
from jaxcourse.fast_step import Recipe
from jaxcourse.scaling import HARDWARE
from jaxcourse.step_profile import PARTS, _own_times, instructions, part_of

STORED = fast_step.load_ladder()
RUNS = STORED["runs"]
#: Losses of two correct steps on the same tokens may differ by a bfloat16's
#: unit roundoff (2⁻⁹, relative): the fast step keeps its logits, gradients
#: and moments in bfloat16.
LOSS_TOLERANCE = 2.0 ** -9


# --- the pieces, on a CPU --------------------------------------------------------

def test_bf16_logits_give_the_float32_loss_within_bfloat16_rounding():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(2, 64, 32)), jnp.bfloat16)
    w = jnp.asarray(rng.normal(size=(32, 1000)) / 6, jnp.bfloat16)
    t = jnp.asarray(rng.integers(0, 1000, size=(2, 64)))
    exact = transformer.model._target_logp(x, w, t)
    fast = fast_step.bf16_target_logp(x, w, t)
    assert fast.dtype == jnp.float32
    # Each logit is rounded once to bfloat16 (the chapter's is rounded once
    # too, before its cast): the two differ by a few units of bfloat16.
    scale = float(jnp.max(jnp.abs(x.astype(jnp.float32) @ w.astype(jnp.float32))))
    assert float(jnp.max(jnp.abs(fast - exact))) <= 4 * 2.0 ** -8 * scale
    mean = abs(float(jnp.mean(exact)))
    assert abs(float(jnp.mean(fast) - jnp.mean(exact))) < 2.0 ** -9 * mean


def test_adam_in_float32_is_optax_adam():
    rng = np.random.default_rng(1)
    params = {"a": jnp.asarray(rng.normal(size=(5, 3)), jnp.float32),
              "b": jnp.asarray(rng.normal(size=(7,)), jnp.float32)}
    ours, theirs = fast_step.adam_in(jnp.float32, 1e-3), optax.adam(1e-3)
    s1, s2 = ours.init(params), theirs.init(params)
    for i in range(4):
        grads = jax.tree.map(lambda p, i=i: jnp.sin(p * (i + 1)), params)
        u1, s1 = ours.update(grads, s1, params)
        u2, s2 = theirs.update(grads, s2, params)
        for a, b in zip(jax.tree.leaves(u1), jax.tree.leaves(u2), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-9)


def test_adam_in_bfloat16_keeps_its_moments_in_bfloat16():
    params = {"w": jnp.ones((4, 4), jnp.float32)}
    opt = fast_step.adam_in(jnp.bfloat16, 1e-3)
    state = opt.init(params)
    grads = {"w": jnp.full((4, 4), 0.5, jnp.bfloat16)}
    updates, state = opt.update(grads, state, params)
    assert state["mu"]["w"].dtype == state["nu"]["w"].dtype == jnp.bfloat16
    assert updates["w"].dtype == jnp.float32
    # The first step of Adam moves every weight by the learning rate.
    np.testing.assert_allclose(updates["w"], -1e-3, rtol=1e-3)


def test_model_flops_count_half_the_causal_scores():
    recipe = Recipe(**fast_step.WIDE, batch=2)
    cfg = recipe.config()
    per_token = transformer.flops_per_token(cfg, recipe.seq)
    found = fast_step.model_flops(recipe)
    assert found["weights"] == per_token["weights"] * recipe.tokens
    assert found["attention"] == per_token["attention"] * recipe.tokens / 2
    # MaxText's formula, written out: ((ffn + qkv + projection) L + embedding) 3
    # plus causal attention, 4 B S² heads h / 2, L, 3.
    b, s, e, f, v = recipe.batch, recipe.seq, cfg.d_model, cfg.hidden, cfg.vocab
    h, nq, nkv, layers = cfg.head_dim, cfg.heads, cfg.kv_heads, cfg.layers
    ffn = 2 * b * s * f * e * 2 + 2 * b * s * f * e
    qkv = 2 * b * s * e * (nq + 2 * nkv) * h
    projection = 2 * b * s * e * nq * h
    embedding = 2 * b * s * e * v
    attention = 4 * b * s * s * nq * h / 2
    maxtext = (((ffn + qkv + projection) * layers + embedding) * 3
               + attention * layers * 3)
    assert math.isclose(found["total"], maxtext, rel_tol=1e-12)


def test_a_step_of_each_recipe_computes_the_same_loss():
    # The quick ladder's first and last settings at one shape: the same
    # loss before any update (the step returns the loss of the weights it
    # was given), within bfloat16's rounding.
    base = Recipe(d_model=64, layers=2, heads=2, kv_heads=1, hidden=224, vocab=512,
                  seq=128, batch=2)
    fast = Recipe(**{**base.as_dict(), "options": (), "attention": "chunked",
                     "attention_block": 64, "logits": "bfloat16", "loss_chunk": 64,
                     "moments": "bfloat16", "grads": "bfloat16", "remat": "dots"})
    tokens = fast_step._tokens(base, 1)[0]
    losses = []
    for recipe in (base, fast):
        init, step = fast_step.make_fast_step(recipe)
        _, value = jax.jit(step)(init(jax.random.key(0)), tokens[:, :-1], tokens[:, 1:])
        losses.append(float(value))
    assert abs(losses[1] - losses[0]) <= LOSS_TOLERANCE * losses[0]


def test_a_bad_recipe_is_refused_by_name():
    with pytest.raises(ValueError, match="'float32' or 'bfloat16'"):
        fast_step.make_fast_step(Recipe(moments="float16"))


# --- the profile's reader ----------------------------------------------------------

def test_operations_are_sorted_into_the_parts():
    assert part_of("copy.3", "copy", "jit(step)/attention/x") == "copies"
    assert part_of("splash_mha_fwd_residuals.17", "custom-call", "") == "attention"
    path = "transpose(jvp())/while/body/checkpoint/attention/scores/dot"
    assert part_of("fusion.1", "fusion", path) == "attention"
    assert part_of("fusion.2", "fusion", "jvp()/while/body/mlp/dot_general") == "mlp"
    assert part_of("fusion.3", "fusion", "transpose(jvp(vocab))/dot_general") == "vocab"
    assert part_of("fusion.4", "fusion", "optimizer/add") == "optimizer"
    # A scope's name inside another word is not the scope.
    assert part_of("fusion.5", "fusion", "jvp()/my_mlp_thing/add") == "other"
    assert part_of("custom-call.9", "custom-call", "") == "other"


def test_nested_events_count_only_their_own_time():
    # A loop (0-100) holding two bodies (10-30, 40-90): the loop's own time
    # is what its bodies leave, 30.
    own = _own_times([("while.1", 0, 100), ("fusion.1", 10, 30), ("fusion.2", 40, 90),
                      ("fusion.1", 120, 140)])
    assert own == {"while.1": [30, 1], "fusion.1": [40, 2], "fusion.2": [50, 1]}


def test_instructions_are_read_from_a_compiled_program():
    compiled = jax.jit(lambda x: jnp.sin(x @ x.T).sum()).lower(
        jnp.ones((8, 8))).compile()
    found = instructions(compiled.as_text())
    assert found and all(set(v) == {"opcode", "op_name"} for v in found.values())
    assert any(v["opcode"] in ("dot", "fusion", "custom-call") for v in found.values())


def test_the_program_runs_quick_on_a_cpu(tmp_path):
    out = tmp_path / "ladder.json"
    keys = [key for key, _, _ in fast_step.LADDER]
    done = subprocess.run([sys.executable, "-m", "jaxcourse.measure", "--ladder",
                           str(out), "--quick", "--only", ",".join(["kernels", *keys])],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(out.read_text(encoding="utf-8"))
    assert found["quick"] and list(found["runs"]) == keys
    for key, row in found["runs"].items():
        assert "refused" not in row, key
        assert len(row["losses"]) == 8 and all(math.isfinite(v) for v in row["losses"])
        assert set(row["parts"]) == set(PARTS) and sum(row["parts"].values()) > 0
        recounted = fast_step.run_parts(row)
        assert row["parts"] == pytest.approx(recounted, rel=1e-9, abs=1e-12)
    for form, errors in found["kernels"].items():
        if form not in ("shape", "reference"):
            assert errors["output"] < 1e-5 and errors["grads"] < 1e-4, form


# --- the stored ladder -------------------------------------------------------------

def test_the_ladder_was_measured_on_a_tpu_v5e_with_its_versions():
    assert STORED["device_kind"] == "TPU v5 lite" and STORED["platform"] == "tpu"
    assert not STORED["quick"] and STORED["date"]
    assert STORED["versions"]["jax"] and STORED["versions"]["libtpu"]


def test_every_rung_and_extra_is_stored_with_todays_recipe():
    expected = {key: recipe for key, _, recipe in fast_step.rungs()}
    expected |= {key: recipe for key, _, recipe in fast_step.extras()}
    assert list(RUNS) == list(expected)
    for key, recipe in expected.items():
        assert Recipe.from_dict(RUNS[key]["recipe"]) == recipe, key


def test_the_stored_parts_are_recounted_by_todays_reader():
    for key, row in RUNS.items():
        if "refused" in row:
            continue
        assert row["parts"] == pytest.approx(fast_step.run_parts(row), rel=1e-9), key
        # The profile accounts for the step: its operations fill the step's
        # time to within a tenth (the rest is the host between steps).
        busy = sum(row["parts"].values())
        assert 0.9 * row["step_seconds"] < busy <= 1.05 * row["step_seconds"], key


def _mfu(key: str) -> float:
    row = RUNS[key]
    return fast_step.mfu(Recipe.from_dict(row["recipe"]), row["step_seconds"],
                         HARDWARE["TPU v5e"].flops)


def test_the_fast_step_runs_at_half_the_chips_peak():
    assert _mfu("wide") >= 0.5
    # Where it started: chapter 7's step, under a quarter.
    assert _mfu("today") < 0.25


@pytest.mark.parametrize("fast,slow", [
    ("splash", "today"), ("logits", "today"), ("optimizer", "today"),
    ("remat", "today"), ("batch-full", "batch"), ("wide-1", "wide-1-today")])
def test_the_fast_steps_losses_are_the_slow_steps(fast, slow):
    a, b = RUNS[fast]["losses"], RUNS[slow]["losses"]
    assert len(a) == len(b) == 8
    worst = max(abs(x - y) / abs(y) for x, y in zip(a, b, strict=True))
    assert worst <= LOSS_TOLERANCE, (fast, slow, worst)


def test_the_refusals_are_the_compilers_own_words():
    for key in ("wide-today", "wide-batch-8"):
        assert RUNS[key]["refused"].startswith("RESOURCE_EXHAUSTED"), key


def test_the_splash_kernel_agrees_with_the_plain_form_on_the_chip():
    kernels = STORED["kernels"]
    # At the chip's default precision float32 products are made of bfloat16
    # passes: the plain form itself is off the float32 reference by about a
    # unit of bfloat16 (2⁻⁸), and the kernel no further.
    for form in ("plain", "chunked", "splash", "xla"):
        assert kernels[form]["output"] < 2.0 ** -7, form
        assert kernels[form]["grads"] < 2.0 ** -7, form


def test_the_benchmark_prints_the_mfu_beside_maxtexts():
    root = fast_step.STORED.parents[4]
    done = subprocess.run([sys.executable, "benchmarks/fast_step.py"],
                          capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    wide = next(line for line in done.stdout.splitlines() if line.startswith("wide"))
    ratios = [float(v) for v in wide.split()[3:]]
    published = list(fast_step.MAXTEXT_V5E.values())
    assert ratios == [round(_mfu("wide") / p, 2) for p in published]


def test_a_refusal_is_read_in_gib_and_anything_else_is_refused():
    needed, available = fast_step.refusal_bytes(RUNS["wide-today"]["refused"])
    assert needed > available == 15.75 * 2**30
    with pytest.raises(ValueError, match="not a refusal for memory"):
        fast_step.refusal_bytes("INTERNAL: something else")


def test_what_moved_names_the_largest_changes_per_token():
    said = fast_step.moved(RUNS["today"], RUNS["splash"])
    assert said.startswith("attention -") and said.endswith("µs/token")
    # The scores' own operations are most of today's attention.
    scores = fast_step.scope_seconds(RUNS["today"], "scores")
    assert 0.8 * RUNS["today"]["parts"]["attention"] < scores
    assert scores < RUNS["today"]["parts"]["attention"]


# --- the chapter's explorer ---------------------------------------------------------

@pytest.mark.parametrize("language", ["en", "zh-Hans", "zh-Hant"])
def test_the_explorer_compares_two_runs_part_by_part(language):
    from jaxcourse.exercises.widgets.explorers_fast_step import describe

    text = describe("today", "splash", language).splitlines()
    assert len(text) == 4 + len(PARTS) + 1
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in text[4:]}
    today = RUNS["today"]["parts"]["attention"] / 2048 * 1e6
    splash = RUNS["splash"]["parts"]["attention"] / 2048 * 1e6
    assert rows["attention"] == pytest.approx([today, splash, splash - today], abs=0.06)
    assert rows["Σ"][0] == pytest.approx(sum(r[0] for k, r in rows.items() if k != "Σ"),
                                         abs=0.3)
    assert "22.6%" in text[1] and "29.3%" in text[2]


def test_the_explorer_says_what_a_refused_run_needed_and_names_the_runs():
    from jaxcourse.exercises.widgets.explorers_fast_step import describe, draw

    text = describe("wide", "wide-today")
    assert "16.62 GiB" in text and "15.75 GiB" in text and "Σ" not in text
    unknown = describe("today", "fastest")
    assert "fastest" in unknown and "wide-1-today" in unknown
    assert draw("today", "fastest") is None


def test_the_explorer_redraws_when_a_run_is_chosen():
    from jaxcourse.exercises.widgets.explorers_fast_step import StepExplorer

    explorer = StepExplorer(before="today", after="splash")
    first = explorer.summary_text
    explorer.after.value = "wide"
    assert explorer.summary_text != first and "wide:" in explorer.summary_text
    assert explorer.drawing.value  # a PNG was drawn
