"""Chapter 6's formulas (jaxcourse.scaling) and derived tolerances (numerics)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import numpy as np
import optax
import pytest
from processes import MARK, run_script

from jaxcourse import numerics, scaling
from jaxcourse.scaling import Collective, Size

SIZE = Size(width=32, layers=2)


class _Text:
    """Stands in for a compiled program where only its HLO text is read."""

    def __init__(self, text: str) -> None:
        self.text = text

    def as_text(self) -> str:
        return self.text


def test_state_is_16_bytes_per_parameter_split_by_the_layout() -> None:
    n = scaling.param_count(SIZE)
    assert n == 2 * 2 * 32 * 128
    assert scaling.state_bytes(SIZE, "data parallel", 8)["total"] == 16 * n
    assert scaling.state_bytes(SIZE, "FSDP", 8)["total"] == 16 * n // 8
    assert scaling.state_bytes(SIZE, "tensor parallel", 4, 2)["total"] == 16 * n // 2
    assert scaling.state_bytes(SIZE, "FSDP + TP", 4, 2)["total"] == 16 * n // 8
    with pytest.raises(ValueError, match="unknown layout"):
        scaling.state_bytes(SIZE, "pipeline")


def test_ring_costs() -> None:
    assert scaling.ring_bytes("all-gather", 800, 8) == 700
    assert scaling.ring_bytes("reduce-scatter", 800, 8) == 700
    assert scaling.ring_bytes("all-reduce", 800, 8) == 1400
    assert scaling.ring_bytes("all-reduce", 800, 1) == 0
    assert scaling.ring_bytes("collective-permute", 800, 8) == 800
    assert scaling.ring_bytes("all-to-all", 800, 8) == 800 * 7 / 2  # forwarded


def test_collectives_are_read_from_every_spelling_of_replica_groups() -> None:
    text = "\n".join([
        "  %a = f32[256,1024]{1,0} all-gather(%p), replica_groups=mesh['data'=4,"
        "'model'=2] {'data'}, dimensions={0}",
        "  %b = f32[64,1024]{1,0} reduce-scatter(%q), "
        "replica_groups={{0,1,2,3},{4,5,6,7}}",
        "  %c = (f32[16,256]{1,0}, f32[]) all-reduce(%r, %s), "
        "replica_groups=[4,2]<=[8]",
        "  %d = f32[8]{0} all-reduce(%t), replica_groups=[8,1]<=[8]",  # groups of 1
        '  %e = f32[8]{0} add(%u, %v), metadata={op_name="all-gather("}',
    ])
    found = scaling.compiled_collectives(_Text(text))
    assert found == [Collective("all-gather", 256 * 1024 * 4, 4),
                     Collective("reduce-scatter", 64 * 1024 * 4 * 4, 4),
                     Collective("all-reduce", 16 * 256 * 4, 2),
                     Collective("all-reduce", 4, 2)]


def test_collectives_are_read_when_xla_prints_the_devices_order() -> None:
    # What XLA 0.10 prints for the all-gathers it inserts itself (a reshard of
    # weights split over "model"): the mesh, the devices' order, then the axes.
    # Read as a group of 1, such a gather was skipped, and a tp_mlp answer that
    # gathered its weights looked collective-free.
    text = "\n".join([
        "  %all-gather.1 = f32[64,16]{1,0} all-gather(%param.5), channel_id=3, "
        "replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], "
        "device_ids=([2,4]T(1,0)) {'axis_0'}, dimensions={0}, "
        "use_global_device_ids=true",
        "  %all-gather = f32[16,64]{0,1} all-gather(%wrapped_copy), channel_id=2, "
        "replica_groups=mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], "
        "device_ids=([2,4]T(1,0)) {'axis_1', 'axis_2'}, dimensions={1}",
        "  %g = f32[8]{0} all-reduce(%t), replica_groups=[2,4]<=[4,2]T(1,0)",
    ])
    found = scaling.compiled_collectives(_Text(text))
    assert found == [Collective("all-gather", 64 * 16 * 4, 4),
                     Collective("all-gather", 16 * 64 * 4, 8),
                     Collective("all-reduce", 8 * 4, 4)]


def test_predicted_collectives_per_layout() -> None:
    kinds = lambda found: sorted(c.kind for c in found)  # noqa: E731
    dp = scaling.predicted_collectives(SIZE, "data parallel", 64, 8)
    assert kinds(dp) == ["all-reduce"] * 5  # 4 weights + the loss
    fsdp = scaling.predicted_collectives(SIZE, "FSDP", 64, 8, regather=True)
    assert kinds(fsdp) == ["all-gather"] * 8 + ["all-reduce"] + ["reduce-scatter"] * 4
    tp = scaling.predicted_collectives(SIZE, "tensor parallel", 64, 1, 8)
    assert kinds(tp) == ["all-reduce"] * 3  # 2 forward, 1 backward
    assert {c.nbytes for c in tp} == {64 * 32 * 4}


def test_a_data_parallel_step_compiles_to_the_predicted_memory() -> None:
    optimizer = optax.adam(1e-3)
    params = scaling.init_params(jax.random.key(0), SIZE)
    opt_state = optimizer.init(params)
    x, y = scaling.make_batch(jax.random.key(1), SIZE, 16)
    step = scaling.make_step("data parallel", optimizer)
    compiled = jax.jit(step).lower(params, opt_state, x, y).compile()
    memory = scaling.compiled_memory(compiled)
    state = scaling.state_bytes(SIZE, "data parallel")
    batch = x.nbytes + y.nbytes
    assert memory["arguments"] == state["params"] + state["adam"] + batch + 4
    assert memory["sum"] == memory["arguments"] + memory["outputs"] + memory["temp"]
    # XLA's own estimate: never above the sum, never below what is passed in and out.
    assert memory["arguments"] + memory["outputs"] <= memory["peak"] <= memory["sum"]


def test_the_fsdp_critical_batch_is_the_chips_flops_per_byte() -> None:
    hw = scaling.HARDWARE["TPU v5p"]
    big = Size(4096, 8)
    value = scaling.critical_batch(big, "FSDP", hw, 8)
    assert np.isclose(value, hw.flops / scaling.axis_bandwidth(hw) * 7 / 8)
    # Data parallelism's all-reduce can hide only behind the backward pass
    # (4 of the 6 FLOPs): it needs the same batch per chip as FSDP, not 2/3.
    data_parallel = scaling.critical_batch(big, "data parallel", hw, 8)
    assert np.isclose(data_parallel, value)
    # Above it, computation sets the step time of each pass; below, communication.
    for factor, compute_bound in ((1.1, True), (0.9, False)):
        t = scaling.step_time(big, "FSDP", int(8 * value * factor), hw, 8)
        for phase in ("forward", "backward"):
            faster = t[f"{phase}_compute"] > t[f"{phase}_communication"]
            assert faster == compute_bound


def test_bandwidth_per_mesh_axis() -> None:
    v5e, v5p, h100 = (scaling.HARDWARE[c] for c in ("TPU v5e", "TPU v5p", "H100 SXM"))
    # A torus axis that wraps around: two links, one each way round; a line: one.
    assert scaling.axis_bandwidth(v5p) == 2 * v5p.link_bandwidth == 180e9
    assert scaling.axis_bandwidth(v5e, wraparound=False) == v5e.link_bandwidth
    # The scaling book: a v5e axis wraps only over the full 16 chips of its pod.
    assert scaling.axis_bandwidth(v5e, chips=8) == 45e9
    assert scaling.axis_bandwidth(v5e, chips=16) == 90e9
    # A v5p cube's axes of 4 wrap; a mesh axis over 2 or 3 of them adds their links.
    assert scaling.axis_bandwidth(v5p, chips=4) == 180e9
    assert scaling.axis_bandwidth(v5p, chips=16, axes=2) == 360e9
    assert scaling.axis_bandwidth(v5p, chips=64, axes=3) == 540e9
    assert scaling.axis_bandwidth(v5p, chips=2) == 90e9
    # NVSwitch: all of a GPU's links inside a node. Across nodes: the node's
    # egress, one card per GPU of the axis in the node, at most NVLink's.
    assert scaling.axis_bandwidth(h100) == 18 * 25e9
    assert scaling.axis_bandwidth(h100, across_nodes=True) == 8 * 50e9
    assert scaling.axis_bandwidth(h100, across_nodes=True, per_node=1) == 50e9
    assert scaling.axis_bandwidth(h100, across_nodes=True, per_node=16) == 450e9
    with pytest.raises(ValueError, match="no network"):
        scaling.axis_bandwidth(v5e, across_nodes=True)
    with pytest.raises(ValueError, match="at least 1"):
        scaling.axis_bandwidth(h100, across_nodes=True, per_node=0)
    # A mesh: "model" inside the node, "data" with node / model GPUs a node.
    assert scaling.mesh_bandwidths(h100, 64, 1, across_nodes=True) == {
        "data": 400e9, "model": 450e9}
    assert scaling.mesh_bandwidths(h100, 8, 8, across_nodes=True)["data"] == 50e9
    assert scaling.mesh_bandwidths(h100, 16, 4, across_nodes=True)["data"] == 100e9
    assert scaling.mesh_bandwidths(h100, 4, 16)["model"] == 400e9  # TP over 2 nodes
    assert scaling.mesh_bandwidths(v5p, 16, 4, data_axes=2) == {"data": 360e9,
                                                                "model": 180e9}


def test_across_nodes_fsdp_pays_the_nodes_egress() -> None:
    h100, big = scaling.HARDWARE["H100 SXM"], Size(8192, 32)
    inside = scaling.critical_batch(big, "FSDP", h100, 8)
    across = scaling.critical_batch(big, "FSDP", h100, 64, across_nodes=True)
    # 450 against 400 GB/s, a ring of 8 against one of 64.
    assert np.isclose(across / inside, 450 / 400 * (63 / 64) / (7 / 8))
    # The scaling book's H100 figures without the rings' (n - 1) / n: C / W,
    # 2,200 inside a node and 2,475 across nodes (with its 990 TFLOP/s).
    for across_nodes, chips, book in ((False, 8, 2200), (True, 1024, 2475)):
        value = scaling.critical_batch(big, "FSDP", h100, chips,
                                       across_nodes=across_nodes, exact_rings=False)
        assert np.isclose(value, h100.flops / (990e12 / book), rtol=1e-9)
    # Its Pop Quiz 3: 8-way tensor parallelism inside each node leaves the
    # gather across nodes as long as pure FSDP's, up to the rings' (n - 1) / n.
    fsdp = scaling.step_time(big, "FSDP", 64 * 4096, h100, 64, 1, across_nodes=True)
    mixed = scaling.step_time(big, "FSDP + TP", 64 * 4096, h100, 8, 8,
                              across_nodes=True)
    gather = {name: scaling.phase_bytes(big, layout, 64 * 4096, d, m)["forward"]["data"]
              / scaling.mesh_bandwidths(h100, d, m, across_nodes=True)["data"]
              for name, layout, d, m in (("fsdp", "FSDP", 64, 1),
                                         ("mixed", "FSDP + TP", 8, 8))}
    assert np.isclose(gather["mixed"] / gather["fsdp"], (7 / 8) / (63 / 64))
    # So across nodes, TP adds its all-reduces and lowers nothing.
    assert mixed["forward_communication"] > gather["mixed"]
    assert scaling.critical_batch(big, "FSDP + TP", h100, 8, 8, across_nodes=True) > \
        across
    assert fsdp["step"] > 0


def test_random_axes_in_every_regime() -> None:
    """Random meshes across nodes and on tori: β and FSDP's batch as the book says."""
    rng = np.random.default_rng(56)
    h100, a100 = scaling.HARDWARE["H100 SXM"], scaling.HARDWARE["A100 SXM 80GB"]
    v5e, v5p = scaling.HARDWARE["TPU v5e"], scaling.HARDWARE["TPU v5p"]
    for _ in range(24):
        size = Size(int(rng.integers(1, 17)) * 512, int(rng.integers(1, 49)))
        # GPUs: nodes of 8, a "model" axis of 1 to 8 inside each, 2 to 64 nodes.
        hw = (h100, a100)[int(rng.integers(2))]
        model = int(rng.choice((1, 2, 4, 8)))
        nodes = int(rng.choice((2, 3, 8, 64)))
        data = nodes * 8 // model
        beta = min(8 // model * hw.network_bandwidth, hw.links * hw.link_bandwidth)
        got = scaling.mesh_bandwidths(hw, data, model, across_nodes=True)
        assert got == {"data": beta, "model": hw.links * hw.link_bandwidth}
        fsdp = scaling.critical_batch(size, "FSDP", hw, data, 1, across_nodes=True,
                                      node_chips=8 // model)
        assert np.isclose(fsdp, hw.flops / beta * (data - 1) / data)
        # TPUs: an axis of n chips over k physical axes wraps when n is a
        # multiple of wrap_at ** k (v5e: 16; v5p: whole cubes of 4).
        tpu = (v5e, v5p)[int(rng.integers(2))]
        k = int(rng.integers(1, tpu.axes + 1))
        side = int(rng.choice((2, 4, 8, 16)))
        n = side ** k
        closes = side % tpu.wrap_at == 0
        beta = k * tpu.link_bandwidth * (2 if closes else 1)
        assert scaling.axis_bandwidth(tpu, chips=n, axes=k) == beta
        fsdp = scaling.critical_batch(size, "FSDP", tpu, n, data_axes=k)
        assert np.isclose(fsdp, tpu.flops / beta * (n - 1) / n)


def test_the_scaling_books_figures() -> None:
    v5p = scaling.HARDWARE["TPU v5p"]
    # "C / W_ici = 2550" for a TPU v5p in bfloat16.
    assert round(v5p.flops / scaling.axis_bandwidth(v5p)) == 2550
    # FSDP over all three axes of the torus: "2550 / n_axes" = 850 per chip.
    three = scaling.critical_batch(Size(8192, 4), "FSDP", v5p, 4096, data_axes=3,
                                   exact_rings=False)
    assert np.isclose(three, 850)
    # Mixed FSDP + model parallelism (FSDP over 2 axes, TP over 1): down to
    # 2 * 2550**2 / F per chip, F = 30,000 (LLaMA-3 70B's, as the book rounds it).
    # The book's figures take every axis of a pod, which wraps around.
    best, (data, model) = scaling.best_fsdp_tp(Size(7500, 4), v5p, 6144, data_axes=2,
                                               exact_rings=False, wraparound=True)
    assert abs(best / (2 * 2550**2 / 30_000) - 1) < 0.01 and model == 6
    # Its example: F = 32,768 on 64 chips, X = 32 (FSDP, 2 axes) by Y = 2, is
    # just compute-bound at a global batch of about 48,000 (the book: X = 31.7).
    per_chip = scaling.critical_batch(Size(8192, 4), "FSDP + TP", v5p, 32, 2,
                                      data_axes=2, exact_rings=False, wraparound=True)
    assert abs(per_chip * 64 / 48_000 - 1) < 0.01


def test_fsdp_and_tp_together_need_the_smallest_batch_per_chip() -> None:
    big = Size(8192, 32)
    for hw in scaling.HARDWARE.values():
        fsdp = scaling.critical_batch(big, "FSDP", hw, 8)
        mixed = scaling.critical_batch(big, "FSDP + TP", hw, 4, 2)
        best, (data, model) = scaling.best_fsdp_tp(big, hw, 8)
        assert best <= mixed < fsdp
        assert data * model == 8
        # Tensor parallelism alone: compute-bound at any batch, or never.
        assert scaling.critical_batch(big, "tensor parallel", hw, 1, 8) in (0, np.inf)


def test_products_are_checked_within_float32_rounding() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(64, 512)).astype(np.float32)
    b = rng.normal(size=(512, 32)).astype(np.float32)
    product = jax.numpy.asarray(a) @ jax.numpy.asarray(b)
    assert numerics.within_rounding(product, a, b)
    numerics.assert_product_close(product, a, b)
    # One term of one sum left out: far outside the bound, and the message says where.
    wrong = np.asarray(product).copy()
    wrong[3, 5] -= a[3, 7] * b[7, 5]
    assert not numerics.within_rounding(wrong, a, b)
    with pytest.raises(AssertionError, match=r"entry \(3, 5\)"):
        numerics.assert_product_close(wrong, a, b)


def test_the_layout_explorer_reports_the_formulas() -> None:
    from jaxcourse.exercises.widgets.explorers_scaling import (
        layout_explorer,
        layout_report,
    )

    explorer = layout_explorer(width=8192, layers=32, batch=8192, mesh="8×1",
                               layout="FSDP", chip="H100 SXM")
    big = Size(8192, 32)
    assert explorer.report["state"] == scaling.state_bytes(big, "FSDP", 8)["total"]
    assert explorer.report["fits"]
    explorer.layout.value = "data parallel"  # as a learner would: the table follows
    assert not explorer.report["fits"]
    assert "does not fit" in explorer.table.value
    small = layout_report(256, 4, 64, "1×8", "tensor parallel", "TPU v5e", "zh-Hans")
    assert small["sent"] == 7 * 2 * (64 * 256 * 2) * 7 / 8  # 7 all-reduces, bf16
    assert "芯片" in small["html"] and "芯片" not in layout_report(
        256, 4, 64, "1×8", "tensor parallel", "TPU v5e", "zh-Hant")["html"]


# Chart texts in each edition: Taiwan's terms in zh-Hant, the mainland's in zh-Hans.
CHART_WORDS = {
    "zh-Hant": (["參數", "梯度", "最佳化器（Adam）", "每個裝置的記憶體與晶片的 HBM",
                 "規劃（公式）", "計算時間", "通訊時間", "⚠ 放不下"],
                ["内存", "设备", "芯片", "记忆体"]),
    "zh-Hans": (["参数", "梯度", "优化器（Adam）", "每个设备的内存与芯片的 HBM",
                 "规划（公式）", "计算时间", "通信时间", "⚠ 放不下"],
                ["記憶體", "裝置", "晶片", "内存体"]),
}


@pytest.mark.parametrize("layout", ["FSDP", "data parallel", "tensor parallel"])
def test_the_layout_explorer_draws_memory_against_the_chip(layout: str) -> None:
    from chart_svg import check_flags, memory_and_time

    from jaxcourse.exercises.widgets.explorer_base import bytes_text, seconds_text
    from jaxcourse.exercises.widgets.explorers_scaling import layout_report

    # 32 blocks: not compiled (deeper than COMPILE_LAYERS), in any process.
    report = layout_report(8192, 32, 8192, "8×1", layout, "H100 SXM")
    memory, time = memory_and_time(report["html"])
    state = scaling.state_bytes(Size(8192, 32), layout, 8)
    [plan] = memory.rows
    assert plan.parts == {"params": state["params"], "grads": state["grads"],
                          "optimizer": state["adam"]}
    assert plan.total == report["state"] == state["total"]
    # The line at the chip's 80 GB (decimal, as the table writes it).
    assert memory.limit == scaling.HARDWARE["H100 SXM"].hbm == 80e9
    assert "H100 SXM HBM 80.00 GB" in memory.texts
    check_flags(memory)
    assert plan.over == (not report["fits"]) == (layout != "FSDP")
    assert ("⚠ does not fit" in memory.texts) == plan.over
    assert f"{bytes_text(plan.total)} ({plan.total / 80e9:.0%})" in memory.texts
    assert bytes_text(plan.total) in memory.summary and "80.00 GB" in memory.summary
    # Time: compute, communication and the step, on one scale.
    assert [row.parts for row in time.rows] == [
        {"compute": report["time"]["compute"]},
        {"comm": report["time"]["communication"]}, {"step": report["time"]["step"]}]
    for key in ("compute", "communication", "step"):
        assert seconds_text(report["time"][key]) in time.summary, key


@pytest.mark.parametrize("language", ["zh-Hant", "zh-Hans"])
def test_the_layout_explorer_s_chart_speaks_the_edition_s_language(
        language: str) -> None:
    from chart_svg import charts, english_words, svg_texts, translated

    from jaxcourse.exercises.widgets.explorers_scaling import layout_report

    choice = (8192, 32, 8192, "8×1", "data parallel", "H100 SXM")   # too big
    ours = layout_report(*choice, language)["html"]
    texts = svg_texts(ours)
    present, foreign = CHART_WORDS[language]
    assert all(word in texts for word in present), (language, texts)
    assert not any(word in text for text in texts for word in foreign), texts
    assert not english_words(texts), english_words(texts)
    # The book's edition translates the English chapter's stored chart: it
    # must be the chart this language's kernel draws, to the character.
    english = layout_report(*choice)["html"]
    assert [ET.tostring(svg) for svg in charts(translated(english, language))] == [
        ET.tostring(svg) for svg in charts(ours)]


def test_the_layout_explorer_says_what_it_computes_until_it_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A learner picks 32 blocks where 2 were shown: while the step compiles
    # (seconds), the old table must not read as the new choice's.
    from jaxcourse.exercises.widgets import explorers_scaling
    from jaxcourse.exercises.widgets.explorer_base import STALE_CLASS

    explorer = explorers_scaling.layout_explorer(layers=2, language="zh-Hant")
    sent: list[tuple[str, dict]] = []
    for name, part in (("cue", explorer.cue), ("cue layout", explorer.cue.layout),
                       ("table", explorer.table)):
        monkeypatch.setattr(part, "_send", lambda msg, buffers=None, name=name:
                            sent.append((name, msg["state"])))
    seen = {}
    report = explorers_scaling.layout_report

    def slow_report(*args: object) -> dict:
        # What the front end has been sent when the computation starts.
        seen["sent"] = list(sent)
        return report(*args)

    monkeypatch.setattr(explorers_scaling, "layout_report", slow_report)
    explorer.layers.value = 32
    before = seen["sent"]
    assert ("cue layout", {"display": None}) in before
    cue = next(state["value"] for name, state in before
               if name == "cue" and state.get("value"))
    assert "正在計算" in cue and "、32 個塊" in cue and "、2 個塊" not in cue
    assert any(name == "table" and STALE_CLASS in state.get("_dom_classes", ())
               for name, state in before)
    # Done: the cue is gone and the table, now the new choice's, is plain.
    assert explorer.cue.layout.display == "none"
    assert STALE_CLASS not in explorer.table._dom_classes
    assert explorer.report["params"] == scaling.param_count(Size(8192, 32))


def test_the_layout_explorer_names_the_type_its_bytes_are_counted_in() -> None:
    import re

    from jaxcourse.exercises.widgets.explorers_scaling import layout_report

    for language in ("en", "zh-Hant", "zh-Hans"):
        rows = dict(re.findall(r"<th[^>]*>([^<]*)</th><td>([^<]*)</td>",
                               layout_report(256, 4, 64, "8×1", "FSDP", "H100 SXM",
                                             language)["html"]))
        labels = list(rows)
        # The state in float32 (state_bytes' default), the bytes sent and the
        # roofline in bfloat16 (itemsize=2), as layout_report computes them.
        assert "float32" in labels[1], (language, labels)
        assert "bfloat16" in labels[2] and "bfloat16" in labels[4], (language, labels)


def test_the_layout_explorer_s_labels_read_whole() -> None:
    from jaxcourse.exercises.widgets.explorer_base import _text_px
    from jaxcourse.exercises.widgets.explorers_scaling import LayoutExplorer

    for language in ("en", "zh-Hant", "zh-Hans"):
        explorer = LayoutExplorer(language=language, run=False)
        for control in (explorer.width, explorer.layers, explorer.batch,
                        explorer.mesh, explorer.layout, explorer.chip):
            assert control.style.description_width == "initial", control.description
            longest = max(_text_px(str(option)) for option in control.options)
            width = int(control.layout.width.removesuffix("px"))
            assert width >= _text_px(control.description) + longest, control.description


def test_compiling_from_shapes_gives_the_formulas_arguments() -> None:
    # One device: a 1×1 mesh, so this runs in any test process.
    compiled = scaling.compile_from_shapes(SIZE, "data parallel", 16)
    state = scaling.state_bytes(SIZE, "data parallel")
    batch = 2 * 16 * SIZE.width * 4
    assert scaling.compiled_memory(compiled)["arguments"] == (
        state["params"] + state["adam"] + batch + 4)
    with pytest.raises(ValueError, match="needs 64 devices"):
        scaling.compile_from_shapes(SIZE, "FSDP", 64, 64)


def test_collective_steps_count_the_predicted_operands() -> None:
    steps = scaling.collective_steps(Size(256, 4), "FSDP + TP", 64, 4, 2)
    assert [(name, what) for name, what, _ in steps] == [
        ("all_gather", "weight × 8"), ("psum", "activation × 7"),
        ("psum_scatter", "gradient × 8")]
    data_parallel = scaling.collective_steps(SIZE, "data parallel", 16, 8)
    assert [what for _, what, _ in data_parallel] == ["gradient × 4"]


def test_the_explorer_compiles_small_models_and_says_so() -> None:
    found = run_script(f"""
        import json
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        from jaxcourse import scaling
        from jaxcourse.exercises.widgets.explorers_scaling import layout_report

        small = layout_report(256, 4, 64, "1×8", "tensor parallel", "H100 SXM")
        small_zh = layout_report(256, 4, 64, "1×8", "tensor parallel", "H100 SXM",
                                 "zh-Hans")
        deep = layout_report(256, 32, 64, "1×8", "tensor parallel", "H100 SXM")
        print({MARK!r} + json.dumps({{
            "small": [small["source"], small["compiled"], small["html"]],
            "small_zh": small_zh["html"],
            "deep": [deep["source"], deep["html"]]}}))
    """)
    source, compiled, text = found["small"]
    assert source == "compiled" and "compiled program" in text
    # The chart shows the compiled program's "in all" under the plan.
    from chart_svg import check_flags, memory_and_time

    memory, _ = memory_and_time(text)
    plan, built = memory.rows
    m = compiled["memory"]
    assert built.parts == {"arguments": m["arguments"], "temp": m["temp"],
                           "outputs": m["outputs"] - m["alias"]}
    assert built.total == m["sum"] and not built.over
    assert "compiled (XLA)" in built.texts and "(XLA)." in memory.summary
    check_flags(memory)
    # In zh-Hans, and as the book's edition translates the English chart.
    from chart_svg import charts, svg_texts, translated

    zh = found["small_zh"]
    assert {"编译后（XLA）", "参数（状态与批次）", "临时缓冲区", "输出"} <= set(
        svg_texts(zh))
    assert [ET.tostring(svg) for svg in charts(translated(text, "zh-Hans"))] == [
        ET.tostring(svg) for svg in charts(zh)]
    predicted = scaling.predicted_collectives(Size(256, 4), "tensor parallel", 64, 1, 8)
    assert compiled["counts"] == {"all-reduce": 7}
    assert compiled["bytes"] == scaling.collective_summary(predicted)["bytes"]
    state = scaling.state_bytes(Size(256, 4), "tensor parallel", 1, 8)
    assert compiled["memory"]["arguments"] == (state["params"] + state["adam"]
                                               + 2 * 64 * 256 * 4 + 4)
    assert found["deep"][0] == "formula" and "not compiled" in found["deep"][1]


def test_the_explorer_says_why_it_did_not_compile() -> None:
    from jaxcourse.exercises.widgets.explorers_scaling import layout_report

    report = layout_report(256, 4, 64, "8×1", "FSDP", "H100 SXM")
    if len(jax.devices()) < 8:
        assert report["source"] == "formula" and "fewer than 8" in report["html"]
    else:
        assert report["source"] == "compiled"


def test_the_bytes_per_pass_add_up_to_the_predicted_collectives() -> None:
    # phase_bytes splits by pass what predicted_collectives lists (ZeRO-3's
    # re-gather included); only the loss's one-number sum is left out.
    size = Size(256, 4)
    for layout, (data, model) in (("data parallel", (8, 1)), ("FSDP", (8, 1)),
                                  ("tensor parallel", (2, 4)), ("FSDP + TP", (4, 2))):
        passes = scaling.phase_bytes(size, layout, 64, data, model, itemsize=2)
        total = sum(sum(axes.values()) for axes in passes.values())
        listed = sum(scaling.ring_bytes(c.kind, c.nbytes, c.group) for c in
                     scaling.predicted_collectives(size, layout, 64, data, model,
                                                   itemsize=2, regather=True))
        loss = scaling.ring_bytes("all-reduce", 2, data)
        assert np.isclose(total, listed - loss), layout
