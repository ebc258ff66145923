"""The transformer explorer (jaxcourse.exercises.widgets.explorers_transformer).

Its figures are the transformer library's formulas for the learner's choice;
the compiled rows need a simulated device per chip, so that test runs in a
fresh interpreter with eight (``run_script``), as the scaling explorer's does.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from chart_svg import (
    charts,
    check_flags,
    english_words,
    memory_and_time,
    svg_texts,
    translated,
)
from processes import MARK, run_script

from jaxcourse import transformer
from jaxcourse.exercises.widgets import explorers_transformer as tfx
from jaxcourse.exercises.widgets.explorer_base import bytes_text, seconds_text
from jaxcourse.scaling import HARDWARE

SMALL = transformer.Config(vocab=96, d_model=32, layers=3, heads=4, kv_heads=2,
                           hidden=80)

# (config, chip, nodes, mesh, precision, remat, micro, batch, seq): one node
# and many, GPU and TPU, FSDP alone and with TP, each precision and policy.
# The 16-layer config runs on 16 chips, more devices than any test process has,
# so none of these compiles.
CHOICES = [
    ("LLaMA-3 8B", "H100 SXM", 1, "8×1", "mixed", "full", 1, 16, 8192),
    ("LLaMA-3 70B", "H100 SXM", 8, "8×8", "mixed", "dots", 2, 64, 4096),
    ("LLaMA-3 70B", "TPU v5p", 16, "16×4", "bfloat16", "none", 4, 256, 2048),
    ("LLaMA-3 8B, 16 layers", "A100 SXM 80GB", 2, "4×4", "float32", "names", 1, 32,
     1024),
]


def _rows(report: dict) -> dict[str, str]:
    return dict(re.findall(r"<th[^>]*>([^<]*)</th><td>([^<]*)</td>", report["html"]))


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}")
def test_the_report_is_the_librarys_formulas(choice: tuple) -> None:
    config, chip, nodes, mesh, precision, remat, micro, batch, seq = choice
    report = tfx.transformer_report(*choice)
    cfg, hw = tfx.CONFIGS[config], HARDWARE[chip]
    data, model = map(int, mesh.split("×"))
    layout = "FSDP" if model == 1 else "FSDP + TP"
    assert report["layout"] == layout and report["source"] == "formula"
    p = transformer.PRECISIONS[precision]
    stored = transformer.state_bytes(cfg, layout, precision, data, model)
    assert report["state"] == stored["total"]
    numbers = stored["params"] // np.dtype(p.store).itemsize
    assert report["step_state"] == (numbers * transformer.bytes_per_param(precision)
                                    ["total"] + 4)
    # Per micro-batch of tokens / micro; the network only between GPU nodes.
    tokens, itemsize = batch * seq / micro, np.dtype(p.compute).itemsize
    across = nodes > 1 and chip != "TPU v5p"
    placement = tfx.torus_placement(chip, data, model)
    passes = transformer.phase_bytes(cfg, layout, tokens, data, model, itemsize)
    assert report["sent"] == pytest.approx(
        micro * sum(sum(axes.values()) for axes in passes.values()), rel=1e-12)
    one = transformer.step_time(cfg, layout, tokens, hw, seq, data, model, itemsize,
                                across, **placement)
    assert report["time"]["step"] == pytest.approx(micro * one["step"], rel=1e-12)
    assert report["critical"] == transformer.critical_batch(
        cfg, layout, hw, seq, data, model, itemsize, across, **placement)
    sequences = batch // data // micro
    assert report["activations"] == sequences * tfx.activation_bytes_per_sequence(
        config, remat, seq, precision, model)
    assert report["scores"] == sequences * cfg.heads // model * seq * seq * 4
    assert report["memory"] == (report["step_state"] + report["gathered"]
                                + report["activations"] + report["scores"])
    assert report["fits"] == (report["memory"] <= hw.hbm)
    assert f"{transformer.param_count(cfg):,}" in report["html"]


def test_a_v5p_mesh_lies_on_whole_axes_and_wraps_only_in_whole_cubes() -> None:
    # A 4 x 4 x 4 cube: axes of 4, 16 and 64 chips lie on 1, 2 and 3 axes of 4.
    assert tfx.torus_placement("TPU v5p", 64, 1) == {
        "data_axes": 3, "model_axes": 1, "wraparound": None}
    assert tfx.torus_placement("TPU v5p", 16, 4) == {
        "data_axes": 2, "model_axes": 1, "wraparound": None}
    # Smaller than a cube: no wraparound at all (the scaling book).
    assert tfx.torus_placement("TPU v5p", 8, 1)["wraparound"] is False
    assert tfx.torus_placement("H100 SXM", 64, 1) == {}
    # Across GPU nodes FSDP shares the node's cards: it needs the fewest tokens.
    critical = {mesh: tfx.transformer_report("LLaMA-3 70B", "H100 SXM", 8, mesh,
                                             "mixed", "full", 1, 64, 8192)["critical"]
                for mesh in ("64×1", "16×4", "8×8")}
    assert critical["64×1"] < critical["16×4"] < critical["8×8"]


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}")
def test_the_chart_draws_each_part_of_the_memory_against_the_chip(
        choice: tuple) -> None:
    config, chip, _, mesh, precision, *_ = choice
    report = tfx.transformer_report(*choice)
    memory, time = memory_and_time(report["html"])
    [plan] = memory.rows                 # none of CHOICES compiles here
    # The plan's parts are the table's: the state during the step, the
    # gathered weights, the activations and one block's scores.
    data, model = map(int, mesh.split("×"))
    layout = "FSDP" if model == 1 else "FSDP + TP"
    p = transformer.PRECISIONS[precision]
    stored = transformer.state_bytes(tfx.CONFIGS[config], layout, precision, data,
                                     model)
    numbers = stored["params"] // np.dtype(p.store).itemsize
    per = transformer.bytes_per_param(precision)
    want = {"params": numbers * (per["weights"] + per["master"]),
            "grads": numbers * per["grads"], "optimizer": numbers * per["adam"] + 4,
            "gathered": report["gathered"], "activations": report["activations"],
            "scores": report["scores"]}
    assert plan.parts == {k: v for k, v in want.items() if v > 0}
    assert plan.total == pytest.approx(report["memory"], rel=1e-12)
    assert memory.limit == report["hbm"] == HARDWARE[chip].hbm
    check_flags(memory)
    assert plan.over == (not report["fits"])
    assert f"{chip} HBM {bytes_text(report['hbm'])}" in memory.texts
    assert bytes_text(report["memory"]) in memory.summary
    assert [row.parts for row in time.rows] == [
        {"compute": report["time"]["compute"]},
        {"comm": report["time"]["communication"]}, {"step": report["time"]["step"]}]
    assert seconds_text(report["time"]["step"]) in time.summary


def test_the_chart_of_a_plan_too_big_is_flagged_in_every_edition() -> None:
    choice = ("LLaMA-3 70B", "H100 SXM", 1, "8×1", "float32", "none", 1, 64, 4096)
    english = tfx.transformer_report(*choice)
    memory, _ = memory_and_time(english["html"])
    check_flags(memory)
    assert memory.rows[0].over and "⚠ does not fit" in memory.texts
    words = {
        "zh-Hant": (["參數", "梯度", "最佳化器（Adam）", "收集的權重", "啟動值",
                     "注意力分數（一個塊）", "每個裝置的記憶體與晶片的 HBM",
                     "⚠ 放不下", "計算時間", "通訊時間"], ["内存", "设备", "芯片"]),
        "zh-Hans": (["参数", "梯度", "优化器（Adam）", "收集的权重", "激活值",
                     "注意力分数（一个块）", "每个设备的内存与芯片的 HBM",
                     "⚠ 放不下", "计算时间", "通信时间"], ["記憶體", "裝置", "晶片"]),
    }
    for language, (present, foreign) in words.items():
        ours = tfx.transformer_report(*choice, language=language)["html"]
        texts = svg_texts(ours)
        assert all(word in texts for word in present), (language, texts)
        assert not any(word in text for text in texts for word in foreign), texts
        assert not english_words(texts), english_words(texts)
        assert memory_and_time(ours)[0].rows[0].over
        # The book's edition, translated from the English chapter's stored
        # widgets, shows this very chart.
        assert [ET.tostring(svg) for svg in charts(translated(english["html"],
                                                              language))] == [
            ET.tostring(svg) for svg in charts(ours)], language


def test_activations_are_the_librarys_saved_residuals() -> None:
    # The library reads them with real weights; the explorer from shapes alone.
    for remat in ("none", "names"):
        want = transformer.activation_bytes(SMALL, remat, 1, 16, "mixed",
                                            measure_compiled=False)["residuals"]
        assert tfx.activation_bytes_per_sequence(SMALL, remat, 16) == 16 * want, remat
    # Tensor parallelism keeps a slice of the heads' and hidden units' residuals.
    whole = tfx.activation_bytes_per_sequence(SMALL, "none", 16)
    assert 0 < tfx.activation_bytes_per_sequence(SMALL, "none", 16, model=2) < whole


def test_an_over_memory_choice_is_flagged_in_every_language() -> None:
    choice = ("LLaMA-3 70B", "H100 SXM", 1, "8×1", "float32", "none", 1, 64, 4096)
    for language, verdict in (("en", "does not fit"), ("zh-Hant", "放不下"),
                              ("zh-Hans", "放不下")):
        report = tfx.transformer_report(*choice, language=language)
        assert not report["fits"] and report["memory"] > HARDWARE["H100 SXM"].hbm
        red = re.search(r"<tr style='color:#cf222e'><th[^>]*>([^<]*)</th><td>([^<]*)",
                        report["html"])
        assert red and verdict in red.group(2), (language, report["html"])
    assert tfx.transformer_report(*CHOICES[0])["fits"]
    # A batch that does not split is said, not raised.
    odd = tfx.transformer_report("LLaMA-3 8B", "H100 SXM", 8, "64×1", batch=32)
    assert not odd["valid"] and "does not split over 64" in odd["html"]
    with pytest.raises(ValueError, match="mesh '3×1' is not one of"):
        tfx.transformer_report("LLaMA-3 8B", "H100 SXM", 1, "3×1")


def test_the_attention_form_sets_the_scores_in_hbm_and_nothing_else() -> None:
    # 8B on 16 v5p chips, 4-way TP: 4 sequences a device of 8,192 tokens.
    args = ("LLaMA-3 8B", "TPU v5p", 4, "4×4", "mixed", "full", 1, 16, 8192)
    reports = {form: tfx.transformer_report(*args, attention=form)
               for form in tfx.ATTENTIONS}
    heads = transformer.LLAMA3_8B.heads // 4
    assert reports["plain"]["scores"] == 4 * heads * 8192 * 8192 * 4
    assert reports["chunked"]["scores"] == 4 * heads * 1024 * 8192 * 4
    assert reports["splash"]["scores"] == 0          # its tiles stay on chip
    for form, report in reports.items():
        assert f"attention {form}" in report["html"]
        # Only the scores differ: the state, residuals and traffic do not.
        for key in ("step_state", "gathered", "activations", "sent"):
            assert report[key] == reports["plain"][key], (form, key)
        assert report["memory"] == reports["plain"]["memory"] - (
            reports["plain"]["scores"] - report["scores"])
    assert reports["splash"]["why"] == "splash"
    assert "splash kernel is compiled for a TPU" in reports["splash"]["html"]
    with pytest.raises(ValueError, match="unknown attention 'flash'"):
        tfx.transformer_report(*args, attention="flash")
    explorer = tfx.transformer_explorer(seq=2048, run=False)
    explorer.attention.value = "splash"       # as a learner would: the table follows
    assert explorer.report["scores"] == 0 and "attention splash" in explorer.choice()


def test_the_widget_recomputes_when_a_control_changes() -> None:
    explorer = tfx.transformer_explorer(seq=2048)
    first = explorer.report
    assert first == tfx.transformer_report("LLaMA-3 8B", "H100 SXM", 1, "8×1",
                                           seq=2048)
    explorer.remat.value = "none"  # as a learner would: the table follows
    assert explorer.report["activations"] > first["activations"]
    assert explorer.table.value.endswith(explorer.report["html"] + "</div>")
    assert len(charts(explorer.table.value)) == 2    # the charts, beside the table
    # Another cluster has other meshes; the tensor-parallel size is kept.
    explorer.mesh.value = "4×2"
    explorer.nodes.value = 2
    assert list(explorer.mesh.options) == ["16×1", "8×2", "4×4", "2×8"]
    assert explorer.mesh.value == "8×2" and explorer.report["layout"] == "FSDP + TP"
    assert explorer.report["state"] == transformer.state_bytes(
        transformer.LLAMA3_8B, "FSDP + TP", "mixed", 8, 2)["total"]
    explorer.chip.value = "TPU v5p"
    assert explorer.mesh.value == "4×2" and explorer.cue.layout.display == "none"
    explorer.micro.value = 16                 # 16 sequences over 4 × 16: no
    assert not explorer.report["valid"] and "does not split" in explorer.table.value
    assert not charts(explorer.table.value)
    assert "LLaMA-3" in explorer.live_text()


def test_the_explorer_compiles_small_configs_and_says_why_not_otherwise() -> None:
    found = run_script(f"""
        import json
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        from jaxcourse import transformer
        from jaxcourse.exercises.widgets import explorers_transformer as tfx

        small = tfx.transformer_report("LLaMA-3 8B, 2 layers", "H100 SXM", 1, "8×1",
                                       "mixed", "full", 1, 8, 1024)
        direct = transformer.compile_report(transformer.compile_step(
            tfx.CONFIGS["LLaMA-3 8B, 2 layers"], "FSDP", 8, 1, 8, 1024, "mixed",
            "full"))
        deep = tfx.transformer_report("LLaMA-3 8B", "H100 SXM", 1, "8×1",
                                      seq=1024, language="zh-Hans")
        many = tfx.transformer_report("LLaMA-3 8B, 2 layers", "H100 SXM", 2, "16×1",
                                      seq=1024)
        small_zh = tfx.transformer_report("LLaMA-3 8B, 2 layers", "H100 SXM", 1,
                                          "8×1", "mixed", "full", 1, 8, 1024,
                                          language="zh-Hant")
        print({MARK!r} + json.dumps({{
            "small": [small["source"], small["compiled"], small["html"],
                      small["state"], small["memory"]], "small_zh": small_zh["html"],
            "direct": direct, "deep": [deep["why"], deep["html"]],
            "many": [many["why"], many["html"]]}}))
    """)
    source, compiled, text, state, planned = found["small"]
    assert source == "compiled" and compiled == found["direct"]
    # The chart: the plan, and under it XLA's peak (the table's headline),
    # the arguments first.
    memory, _ = memory_and_time(text)
    plan, built = memory.rows
    peak, arguments = compiled["memory"]["peak"], compiled["memory"]["arguments"]
    assert plan.total == pytest.approx(planned, rel=1e-12)
    assert built.parts == {"arguments": arguments, "at_peak": peak - arguments}
    assert built.total == peak and bytes_text(peak) in memory.summary
    check_flags(memory)
    # In zh-Hant, and as the book's edition translates the English chart.
    zh = found["small_zh"]
    assert {"編譯後（XLA）", "引數（狀態與批次）", "XLA 峰值時的其他緩衝區"} <= set(
        svg_texts(zh))
    assert [ET.tostring(svg) for svg in charts(translated(text, "zh-Hant"))] == [
        ET.tostring(svg) for svg in charts(zh)]
    assert "compiled program" in text and "transformer.compile_step" in text
    # The arguments: the stored state and this device's int32 tokens, twice.
    assert compiled["memory"]["arguments"] == state + 2 * 8 * 1024 * 4 // 8
    assert found["deep"][0] == "deep" and "超过 16 层" in found["deep"][1]
    assert found["many"][0] == "devices" and "fewer than 16" in found["many"][1]
