"""The transformer chapter's engine (jaxcourse.transformer) and its text corpus.

Run by tests/test_transformer.py in a pytest process of its own: these cases
need eight CPU devices, and JAX fixes its device count when it starts.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.devices import use_cpu_devices

use_cpu_devices(8)  # before any array: the layouts need a mesh of 8

from jax.sharding import AxisType  # noqa: E402

from jaxcourse import data, numerics, transformer  # noqa: E402
from jaxcourse.scaling import HARDWARE, axis_bandwidth, compiled_collectives  # noqa: E402
from jaxcourse.transformer import DATA, MODEL, STAGE, Config  # noqa: E402

SMALL = Config(vocab=96, d_model=32, layers=3, heads=4, kv_heads=2, hidden=80)
BATCH, SEQ = 8, 16


def _tokens(cfg: Config = SMALL, batch: int = BATCH, seq: int = SEQ, seed: int = 1):
    tokens = jax.random.randint(jax.random.key(seed), (batch, seq + 1), 0, cfg.vocab)
    return tokens[:, :-1], tokens[:, 1:]


def _within(got, want, scale, tolerance: float) -> float:
    """Return the worst ratio of error to its bound over every array (≤ 1 passes).

    Normwise per array: ``max |got - want| <= tolerance · max Σ_e |g_e|``. An
    entrywise bound fails where an entry is a sum that nearly cancels along
    the backward chain (the embedding's rows), which its own scale ignores.
    """
    ratios = jax.tree.map(
        lambda g, w, s: float(jnp.max(jnp.abs(g - w)) / (tolerance * jnp.max(s))),
        got, want, scale)
    return max(jax.tree.leaves(ratios))


# ---- counting ---------------------------------------------------------------


def test_llama3_parameter_counts_equal_the_published_totals() -> None:
    for cfg in (transformer.LLAMA3_8B, transformer.LLAMA3_70B):
        assert transformer.param_count(cfg) == transformer.PUBLISHED_PARAMS[cfg.name]
    assert transformer.param_count(transformer.LLAMA3_8B) == 8_030_261_248
    assert transformer.param_count(transformer.LLAMA3_70B) == 70_553_706_496
    # The count is the shapes' sizes, the same as the model's own arrays.
    shapes = jax.eval_shape(lambda: transformer.init_params(jax.random.key(0), SMALL))
    counted = sum(x.size for x in jax.tree.leaves(shapes))
    assert counted == transformer.param_count(SMALL)
    with pytest.raises(ValueError, match="do not share"):
        Config(vocab=8, d_model=32, layers=1, heads=4, kv_heads=3, hidden=8)


def test_flops_per_token_match_the_compiled_steps_cost_analysis() -> None:
    cfg = Config(vocab=96, d_model=128, layers=1, heads=4, kv_heads=2, hidden=256)
    state = transformer.init_state(jax.random.key(0), cfg)
    inputs, targets = _tokens(cfg, 4, 64)
    # unroll: XLA's cost analysis counts a loop's body once.
    step = jax.jit(transformer.make_step(cfg, unroll=True))
    measured = step.lower(state, inputs, targets).compile().cost_analysis()["flops"]
    predicted = transformer.flops_per_token(cfg, 64)["total"] * inputs.size
    # The formula counts the matrix products only, and XLA counts each as
    # 2 m n k too, so the step can only be above it. The rest is elementwise
    # (norms, rotary, softmax, SiLU, the loss, Adam's ~15 per parameter): a
    # fixed number per width unit per token, so about 1/d of the products'
    # 6 d per width unit. Measured: 2.9 % at d = 128; 6 % is the bound.
    assert 1.0 <= measured / predicted <= 1.06


# ---- precision and memory -----------------------------------------------------


def test_bytes_per_parameter_of_each_scheme() -> None:
    table = {name: transformer.bytes_per_param(name) for name in transformer.PRECISIONS}
    assert table["float32"]["total"] == 16 and table["float32"]["stored"] == 12
    # Mixed, as this course's step runs it: 2 bytes of bfloat16 weights, 4 for
    # the master copy, 4 for the gradients (of the float32 master), 8 for Adam.
    # Not ZeRO's 16, which keeps the gradients in the 2-byte compute dtype.
    assert (table["mixed"]["weights"], table["mixed"]["master"],
            table["mixed"]["grads"], table["mixed"]["adam"]) == (2, 4, 4, 8)
    assert table["mixed"]["total"] == 18 and table["mixed"]["stored"] == 12
    assert table["bfloat16"]["total"] == 8 and table["bfloat16"]["stored"] == 6
    # The table's gradients are the step's: their dtype is its gradients'.
    key = jax.random.key(0)
    state = jax.eval_shape(lambda: {name: transformer.init_state(key, SMALL, name)
                                    for name in transformer.PRECISIONS})
    tokens = jax.ShapeDtypeStruct((2, SEQ), jnp.int32)
    for name, per in table.items():
        _, grads = jax.eval_shape(transformer.make_grad_fn(SMALL, name),
                                  state[name]["params"], tokens, tokens)
        assert {g.dtype.itemsize for g in jax.tree.leaves(grads)} == {per["grads"]}
    n = transformer.param_count(transformer.LLAMA3_8B)
    zero = {s: transformer.zero_bytes(transformer.LLAMA3_8B, s, 8) for s in (1, 2, 3)}
    assert zero[1]["total"] == 6 * n + 12 * n / 8
    assert zero[2]["total"] == 2 * n + 16 * n / 8
    assert zero[3]["total"] == 18 * n / 8


@pytest.mark.parametrize(("layout", "shape", "precision"), [
    ("data parallel", (8, 1), "float32"), ("FSDP", (8, 1), "mixed"),
    ("FSDP + TP", (4, 2), "bfloat16")])
def test_the_state_per_device_is_the_compiled_steps_arguments(
        layout: str, shape: tuple[int, int], precision: str) -> None:
    compiled = transformer.compile_step(SMALL, layout, *shape, BATCH, SEQ, precision,
                                        remat="none")
    memory = transformer.compile_report(compiled)["memory"]
    state = transformer.state_bytes(SMALL, layout, precision, *shape)
    tokens = 2 * BATCH * SEQ * 4 // shape[0]   # inputs and targets, int32
    assert memory["arguments"] == state["total"] + tokens
    # The table's stored bytes per parameter, each part over the devices it
    # is split over: the matrices and the embedding tables over all of them
    # (data parallelism: none; tensor parallelism splits the tables by the
    # vocabulary), the norms over "data" only.
    stored = transformer.bytes_per_param(precision)["stored"]
    parts = transformer.param_parts(SMALL)
    matrices = parts["attention"] + parts["mlp"] + 2 * SMALL.vocab * SMALL.d_model
    rest = parts["total"] - matrices
    split = {"data parallel": (1, 1), "FSDP": (8, 8), "FSDP + TP": (8, 4)}[layout]
    assert state["params"] + state["adam"] == stored * (matrices // split[0]
                                                        + rest // split[1])


def test_activation_memory_per_token_under_each_remat_policy() -> None:
    cfg = Config(vocab=96, d_model=64, layers=2, heads=4, kv_heads=2, hidden=160)
    # Compiled for three policies (two compilations each); JAX's list of
    # residuals for all four.
    found = {policy: transformer.activation_bytes(cfg, policy, 4, 32,
                                                  measure_compiled=policy != "dots")
             for policy in ("none", "dots", "names", "full")}
    compiled = [found[p]["compiled"] for p in ("none", "names", "full")]
    assert compiled[0] > compiled[1] > compiled[2] > 0
    residuals = [found[p]["residuals"] for p in ("none", "dots", "names", "full")]
    assert residuals[0] > residuals[1] > residuals[2] > residuals[3] > 0
    # "names" keeps, per block, the two tensors named in the model
    # (attention's output, d wide, and the MLP's hidden units) beyond what
    # full remat keeps: the block's input, and what lies outside the blocks.
    extra = found["names"]["residuals"] - found["full"]["residuals"]
    assert extra == cfg.layers * (cfg.d_model + cfg.hidden) * 4


# ---- accumulation, layouts, pipeline ------------------------------------------------


@pytest.fixture(scope="module")
def reference():
    params = transformer.init_params(jax.random.key(0), SMALL)
    inputs, targets = _tokens()
    value, grads = jax.jit(transformer.make_grad_fn(SMALL))(params, inputs, targets)
    scale = transformer.per_example_grad_sum(params, inputs, targets, SMALL)
    return params, inputs, targets, value, grads, scale


def test_accumulated_micro_batches_equal_the_full_batch(reference) -> None:
    params, inputs, targets, value, grads, scale = reference
    tolerance = transformer.gradient_tolerance(SMALL, BATCH, SEQ)
    got_value, got = jax.jit(transformer.make_grad_fn(SMALL, micro=4))(
        params, inputs, targets)
    assert _within(got, grads, scale, tolerance) <= 1
    assert abs(float(got_value - value)) <= tolerance * float(value)
    # Summing the micro-batches' means instead of averaging them is caught.
    doubled = jax.tree.map(lambda g: 4 * g, got)
    assert _within(doubled, grads, scale, tolerance) > 1


@pytest.mark.parametrize(("layout", "shape"), [
    ("data parallel", (4, 1)), ("FSDP", (4, 1)), ("TP", (1, 2)), ("TP + SP", (2, 2)),
    ("FSDP + TP", (2, 2))])
def test_each_layout_equals_one_device_with_the_predicted_collectives(
        reference, layout: str, shape: tuple[int, int]) -> None:
    params, inputs, targets, value, grads, scale = reference
    devices = jax.devices()[:shape[0] * shape[1]]
    mesh = jax.make_mesh(shape, (DATA, MODEL), devices=devices,
                         axis_types=(AxisType.Explicit,) * 2)
    args = (transformer.place(params, layout, mesh),
            transformer.place(inputs, layout, mesh, tokens=True),
            transformer.place(targets, layout, mesh, tokens=True))
    compiled = jax.jit(transformer.sharded_grad_fn(SMALL, layout, mesh)).lower(
        *args).compile()
    got_value, got = compiled(*args)
    tolerance = transformer.gradient_tolerance(SMALL, BATCH, SEQ)
    assert _within(got, grads, scale, tolerance) <= 1
    assert abs(float(got_value - value)) <= tolerance * float(value)
    predicted = transformer.predicted_collectives(SMALL, layout, BATCH, SEQ, *shape)
    assert Counter(compiled_collectives(compiled)) == Counter(predicted)


@pytest.mark.parametrize("stage", [1, 2])
def test_zero_splits_adams_state_and_keeps_the_one_device_step(reference,
                                                               stage: int) -> None:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    params, inputs, targets, value, grads, scale = reference
    mesh = jax.make_mesh((4,), (DATA,), devices=jax.devices()[:4],
                         axis_types=(AxisType.Explicit,))
    state = transformer.init_state(jax.random.key(0), SMALL)
    placed = jax.device_put(state, jax.tree.map(lambda s: NamedSharding(mesh, s),
                                                transformer.zero_specs(state)))
    tokens = NamedSharding(mesh, P(DATA, None))
    args = (placed, jax.device_put(inputs, tokens), jax.device_put(targets, tokens))
    compiled = jax.jit(transformer.zero_step(SMALL, stage, mesh)).lower(*args).compile()
    new, got_value = compiled(*args)
    tolerance = transformer.gradient_tolerance(SMALL, BATCH, SEQ)
    assert abs(float(got_value - value)) <= tolerance * float(value)
    # Adam's first moment after one step is (1 - 0.9) of the gradient.
    first = jax.tree.map(lambda m: m / 0.1, new["opt"][0].mu)
    assert _within(first, grads, scale, tolerance) <= 1
    # Stored: every weight whole, Adam's moments in 4 pieces (float32).
    table = transformer.zero_bytes(SMALL, stage, 4, "float32")
    memory = transformer.compile_report(compiled)["memory"]
    stored = table["weights"] + table["adam"] + 4          # + Adam's count
    assert memory["arguments"] == stored + 2 * inputs.nbytes // 4
    found = Counter(compiled_collectives(compiled))
    assert found == Counter(transformer.zero_collectives(SMALL, stage, 4))


def test_gpipe_equals_the_unpipelined_blocks_and_its_bubble_is_the_formulas() -> None:
    cfg = Config(vocab=96, d_model=32, layers=8, heads=4, kv_heads=2, hidden=80)
    layers = transformer.init_params(jax.random.key(0), cfg)["layers"]
    mesh = jax.make_mesh((4,), (STAGE,), devices=jax.devices()[:4],
                         axis_types=(AxisType.Explicit,))
    run = transformer.gpipe(cfg, mesh)
    # Each micro-batch goes through the same blocks in the same order; only
    # how XLA tiles each product may differ. The residual stream does not
    # cancel, so a normwise bound on a chain of the blocks' sums applies.
    chain = cfg.layers * (cfg.d_model + cfg.heads * cfg.head_dim + cfg.hidden + 16)
    tolerance = 2 * numerics.sum_tolerance(chain)
    for micro in (2, 6):
        xs = jax.random.normal(jax.random.key(micro), (micro, 2, 16, cfg.d_model))
        ys, busy = run(layers, xs)
        want = jax.vmap(lambda x: transformer.blocks(layers, x, cfg))(xs)
        error = float(jnp.max(jnp.abs(ys - want)))
        assert error <= tolerance * float(jnp.max(jnp.abs(want)))
        busy = np.asarray(busy)
        assert busy.shape == (4, micro + 3) and busy.sum() == 4 * micro
        assert 1 - busy.mean() == pytest.approx(transformer.bubble_fraction(4, micro),
                                                abs=1e-12)


# ---- planning -----------------------------------------------------------------------


def test_the_fsdp_critical_batch_is_the_chips_flops_per_byte() -> None:
    hw, cfg, seq = HARDWARE["H100 SXM"], transformer.LLAMA3_8B, 8192
    n = transformer.param_count(cfg)
    flops = transformer.flops_per_token(cfg, seq)["total"]
    for across, chips in ((False, 8), (True, 64)):
        beta = axis_bandwidth(hw, across)
        # Per pass: gathering 2 n bytes ((p-1)/p of them sent) against a
        # third (forward) or two thirds (backward, twice the bytes) of the FLOPs.
        want = 6 * n * (chips - 1) / chips * hw.flops / (beta * flops)
        got = transformer.critical_batch(cfg, "FSDP", hw, seq, chips,
                                         across_nodes=across)
        assert got == pytest.approx(want, rel=1e-9)
    inside = transformer.critical_batch(cfg, "FSDP", hw, seq, 8)
    t = transformer.step_time(cfg, "FSDP", 8 * 1.1 * inside, hw, seq, 8)
    assert t["step"] == pytest.approx(t["compute"])


def test_time_and_critical_batch_are_priced_per_micro_batch() -> None:
    """FSDP gathers the weights again for each micro-batch: m cost m times one."""
    rng = np.random.default_rng(56)
    cfg, seq = transformer.LLAMA3_70B, 8192
    h100, v5p = HARDWARE["H100 SXM"], HARDWARE["TPU v5p"]
    for _ in range(8):
        micro = int(rng.choice((1, 2, 8, 64)))
        layout, (data, model) = [("FSDP", (64, 1)), ("FSDP + TP", (8, 8)),
                                 ("TP + SP", (8, 8))][int(rng.integers(3))]
        tokens = float(micro * data * seq * int(rng.integers(1, 5)))
        whole = transformer.step_time(cfg, layout, tokens, h100, seq, data, model,
                                      across_nodes=True, micro=micro)
        one = transformer.step_time(cfg, layout, tokens / micro, h100, seq, data, model,
                                    across_nodes=True)
        for key, value in one.items():
            assert whole[key] == pytest.approx(micro * value, rel=1e-12)
    with pytest.raises(ValueError, match="micro-batches"):
        transformer.step_time(cfg, "FSDP", 1.0, h100, seq, 8, micro=0)
    # The plan of chapter 7: across 8 nodes FSDP shares each node's 8 cards
    # (400 GB/s a GPU) and needs fewer tokens per GPU than FSDP + TP 8 x 8,
    # whose rings hold one GPU a node (50 GB/s).
    fsdp = transformer.critical_batch(cfg, "FSDP", h100, seq, 64, across_nodes=True)
    mixed = transformer.critical_batch(cfg, "FSDP + TP", h100, seq, 8, 8,
                                       across_nodes=True)
    assert 2_000 < fsdp < 2_475 < mixed
    # FSDP + TP's micro-batch of one sequence per data group is 1,024 tokens a
    # GPU, below its critical batch: the step waits on the network.
    t = transformer.step_time(cfg, "FSDP + TP", 4 * 2**20, h100, seq, 8, 8,
                              across_nodes=True, micro=64)
    assert t["step"] > 1.5 * t["compute"]
    # On a v5p cube: FSDP over its three axes (540 GB/s), meshes of whole axes.
    cube = transformer.critical_batch(cfg, "FSDP", v5p, seq, 64, data_axes=3)
    line = transformer.critical_batch(cfg, "FSDP", v5p, seq, 64, data_axes=3,
                                      wraparound=False)
    assert cube < 850 and line == pytest.approx(2 * cube)
    assert transformer.critical_batch(cfg, "FSDP + TP", v5p, seq, 16, 4,
                                      data_axes=2) < cube


def test_llama3_8b_compiles_from_shapes_for_8_devices() -> None:
    cfg = transformer.LLAMA3_8B
    started = time.perf_counter()
    compiled = transformer.compile_step(cfg, "FSDP", 8, 1, 8, 4096, "mixed", "full")
    seconds = time.perf_counter() - started
    report = transformer.compile_report(compiled)
    state = transformer.state_bytes(cfg, "FSDP", "mixed", 8)
    assert state["total"] == 12 * transformer.param_count(cfg) // 8 + 4
    assert report["memory"]["arguments"] == state["total"] + 2 * 8 * 4096 * 4 // 8
    kinds = {kind for kind, *_ in report["collectives"]}
    assert kinds == {"all-gather", "reduce-scatter", "all-reduce"}
    # The MLP's matrices, gathered whole over the 8 devices (CPU's XLA moves
    # the bfloat16 cast after the gather: 4 bytes a number).
    mlp = cfg.d_model * cfg.hidden
    assert any(k == "all-gather" and b in (2 * mlp, 4 * mlp) and g == 8
               for k, b, g, _ in report["collectives"])
    print(f"LLaMA-3 8B, FSDP on 8 devices: compiled in {seconds:.1f} s")


@pytest.mark.slow  # starts a Python with 64 devices (compile_in_subprocess)
def test_llama3_70b_compiles_for_64_devices_in_a_subprocess() -> None:
    report = transformer.compile_in_subprocess("LLaMA-3 70B", "FSDP + TP", 8, 8, 64,
                                               4096)
    cfg = transformer.LLAMA3_70B
    state = transformer.state_bytes(cfg, "FSDP + TP", "mixed", 8, 8)
    # The tokens are split over "data" only: each of a data row's 8 devices
    # reads the same ones.
    assert report["memory"]["arguments"] == state["total"] + 2 * 64 * 4096 * 4 // 8
    kinds = set(report["summary"]["counts"])
    assert {"all-gather", "reduce-scatter", "all-reduce"} <= kinds
    print(f"LLaMA-3 70B, FSDP + TP on 8 × 8 devices: compiled in "
          f"{report['seconds']:.1f} s")


# ---- the corpus and training on it --------------------------------------------------


def test_the_corpus_is_provisioned_offline_and_checked(tmp_path: Path) -> None:
    with pytest.raises(data.DataNotProvisionedError, match="python -m jaxcourse.data"):
        data.load_corpus()
    with pytest.raises(data.DataNotProvisionedError,
                       match="apt-get install fortunes-min"):
        data.provision_corpus(source=tmp_path, quiet=True)
    path = data.provision_corpus(quiet=True)
    text = data.load_corpus()
    assert len(text) == 98_399 and text.startswith("A day for firm decisions")
    path.write_bytes(path.read_bytes()[:-1] + b"?")
    with pytest.raises(data.DataCorruptError, match="corrupt"):
        data.load_corpus()
    data.provision_corpus(quiet=True)             # written again
    assert data.load_corpus() == text


def test_a_small_model_learns_the_corpus() -> None:
    data.provision_corpus(quiet=True)
    text = data.load_corpus()
    tokenizer = transformer.CharTokenizer.from_text(text)
    assert tokenizer.decode(tokenizer.encode(text[:500])) == text[:500]
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.encode("é")
    cfg = Config(vocab=96, d_model=32, layers=2, heads=4, kv_heads=2, hidden=80)
    run = transformer.train(text, cfg, steps=80, batch=8, seq=32, learning_rate=1e-2)
    losses = run["losses"]
    # From about ln(96) = 4.6 nats (a guess among the characters) to below
    # the text's entropy of one character alone (3.28 nats: the best a model
    # can do that knows only how often each character occurs), so the model
    # reads the context.
    counts = np.unique(tokenizer.encode(text), return_counts=True)[1]
    freq = counts / counts.sum()
    unigram = float(-(freq * np.log(freq)).sum())
    assert np.mean(losses[:5]) > 4.0 and np.mean(losses[-10:]) < unigram
    print(f"80 steps in {run['seconds']:.1f} s: {losses[0]:.2f} -> {losses[-1]:.2f}")
