"""Chapter 9's exercises (Traditional Chinese) beyond the contract: every text a
learner reads is Chinese, and the explorer works headlessly.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook, grading) is checked for
every chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/dp_zh.py``. Four exercises and the explorer's full
size need 8 devices, and JAX in this process may already have started with
one, so the explorer is also driven in a fresh interpreter that calls
``use_cpu_devices(8)`` first, imports this very module, and prints what it
found as JSON (the ``eight`` fixture).
"""

from __future__ import annotations

import html
import os
import re
from collections import Counter
from pathlib import Path

import jax
import numpy as np
import pytest
from exercise_answers import right
from exercise_answers.dp_zh import split_swapped
from processes import MARK, run_script

from jaxcourse.exercises import check, get
from jaxcourse.numerics import sum_tolerance

IDS = ["dp_zh.global_normalize", "dp_zh.split_for_devices", "dp_zh.replicate",
       "dp_zh.pmap_step", "dp_zh.data_parallel_grads", "dp_zh.shard_map_normalize"]
NEEDS_8 = {"dp_zh.global_normalize", "dp_zh.pmap_step", "dp_zh.data_parallel_grads",
           "dp_zh.shard_map_normalize"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_exercise_has_three_alternatives() -> None:
    # More than the contract asks (one alternative), as in chapters 4 and 5.
    right_ones = Counter(r.exercise_id for r in right("dp_zh"))
    assert all(right_ones[exercise_id] >= 3 for exercise_id in IDS)


def test_eight_device_exercises_declare_their_devices() -> None:
    for exercise_id in IDS:
        assert get(exercise_id).devices == (8 if exercise_id in NEEDS_8 else 1)


# ---- everything a learner reads is Chinese -----------------------------------------


@pytest.mark.parametrize("exercise_id", IDS)
def test_texts_are_traditional_chinese(exercise_id) -> None:
    exercise = get(exercise_id)
    assert exercise.language == "zh-Hant"
    assert exercise.chapter == "09_dp_zh"
    texts = [exercise.title, *exercise.hints, *(m.message for m in exercise.mistakes),
             *(c.description for c in exercise.cases)]
    assert all(CJK.search(t) for t in texts), [t for t in texts if not CJK.search(t)]
    # Simplified forms that must not appear in Taiwan usage.
    simplified = "设备数据并参调试与为这个练习维轴组"
    assert not [t for t in texts if any(ch in t for ch in simplified)]


def test_panel_and_feedback_are_chinese() -> None:
    from jaxcourse.exercises.widgets.panel import CheckPanel

    def split_for_devices(array, num_devices):
        raise NotImplementedError()

    panel = CheckPanel("dp_zh.split_for_devices", split_for_devices)
    buttons = (panel.check_button, panel.hint_button, panel.solution_button)
    assert [b.description for b in buttons] == ["檢查", "提示", "顯示解答"]
    assert panel.text() == "dp_zh.split_for_devices：尚未作答（0/5 項測試）"
    panel.hint_button.click()
    assert "提示 1／3" in panel.hints.value
    panel.solution_button.click()
    assert panel.solution_button.description == "隱藏解答"
    assert "def split_for_devices(array, num_devices):" in html.unescape(
        re.sub(r"<[^>]+>", "", panel.solution.value))
    wrong = check("dp_zh.split_for_devices", split_swapped)
    assert wrong.summary() == "dp_zh.split_for_devices：2/5 項測試通過"
    assert "形狀錯誤：預期 (8, 32, 784)，得到 (32, 8, 784)" in wrong.messages[0]
    assert wrong.messages[2].endswith("：通過")


# ---- the explorer, headless ----------------------------------------------------------


def _gradient_terms(params, images, labels) -> float:
    """The largest term of loss_fn's gradient: the backward pass on absolute values."""
    (w1, b1), (w2, b2) = [(np.asarray(layer["w"], np.float64),
                           np.asarray(layer["b"], np.float64)) for layer in params]
    x = np.asarray(images, np.float64).reshape(-1, w1.shape[0])
    targets = np.eye(w2.shape[1])[np.asarray(labels).reshape(-1)]
    z1 = x @ w1 + b1
    gate = 1 / (1 + np.exp(-z1))
    z2 = (z1 * gate) @ w2 + b2
    p = np.exp(z2 - z2.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    out = np.abs(p - targets) / len(x)
    hidden = (out @ np.abs(w2).T) * np.abs(gate + z1 * gate * (1 - gate))  # swish'
    terms = np.abs(x) @ np.abs(w1) + np.abs(b1)
    return float(max((terms.T @ out).max(), out.sum(0).max(),
                     (np.abs(x).T @ hidden).max(), hidden.sum(0).max()))


def test_the_gradient_bound_the_tolerances_assume_holds() -> None:
    from solutions import dp_zh

    for case in get("dp_zh.pmap_step").cases:
        stacked, images, labels, _ = case.make_inputs()
        params = [{k: v[0] for k, v in layer.items()} for layer in stacked]
        assert _gradient_terms(params, images, labels) <= dp_zh.GRADIENT_TERMS
    for case in get("dp_zh.data_parallel_grads").cases:
        assert _gradient_terms(*case.make_inputs()) <= dp_zh.GRADIENT_TERMS


def test_explorer_functions_on_this_process_devices() -> None:
    from jaxcourse.exercises.widgets.explorers_dp_zh import (
        DataParallelExplorer,
        explore,
        plot_exploration,
        summary_html,
    )

    e = explore(1, 6)
    assert e.global_batch == 6 and e.shard_shape == (6, 28, 28)
    assert e.images_shape == (1, 6, 28, 28)
    # 1..6 sum exactly; each quotient rounds within u and their float32 sum
    # within gamma_6: within gamma_7 of 1. Each x / x is exactly 1.
    assert abs(e.total - 1.0) <= sum_tolerance(6 + 1)
    assert explore(1, 6, None).total == 6.0
    assert "全域批次" in summary_html(e)
    assert plot_exploration(e).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="num_devices must be between"):
        explore(jax.device_count() + 1, 2)

    explorer = DataParallelExplorer(run=False)
    assert explorer.exploration is None
    explorer.per_device.value = 7  # a slider's callback recomputes
    assert explorer.exploration.per_device == 7
    assert f"{explorer.num_devices.value * 7} 筆" in explorer.status.value
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert repr(explorer).startswith("資料平行探索器")
    assert explorer.num_devices.description == "裝置數"


_CHILD = """
import json, sys
from jaxcourse.devices import use_cpu_devices
use_cpu_devices(8)
sys.path.insert(0, {tests!r})
import test_exercises_dp_zh as t
print({mark!r} + json.dumps(t.explorer_on_8_devices()))
"""


def explorer_on_8_devices() -> dict:
    """Drive the explorer on 8 devices (run in the child)."""
    from jaxcourse.exercises.widgets.explorers_dp_zh import (
        AXES_CHOICES,
        DataParallelExplorer,
    )

    explorer = DataParallelExplorer()
    first = explorer.exploration
    states = {"initial": [first.num_devices, first.per_device, first.total,
                          first.result_devices, explorer.status.value,
                          explorer.image.value[:4].hex()]}
    explorer.num_devices.value = 3
    explorer.per_device.value = 5
    for label, axes in AXES_CHOICES.items():
        explorer.axes.value = label
        e = explorer.exploration
        states[str(axes)] = [e.global_batch, list(e.shard_shape),
                             [round(float(s), 4) for s in e.row_sums],
                             round(e.total, 4), e.result_devices,
                             explorer.status.value]
    return {"devices": jax.device_count(), "explorer": states}


@pytest.fixture(scope="module")
def eight() -> dict:
    return run_script(_CHILD.format(tests=str(Path(__file__).parent), mark=MARK),
                      timeout=300, env=dict(os.environ, JAX_PLATFORMS="cpu"))


def test_explorer_on_8_devices(eight) -> None:
    states = eight["explorer"]
    devices, per_device, total, on, status, png = states["initial"]
    assert (devices, per_device, on) == (8, 4, 8)
    # 32 quotients of an exact integer sum: within gamma_33 of 1 (as above).
    assert abs(total - 1.0) <= sum_tolerance(32 + 1) and png == b"\x89PNG".hex()
    assert "8 臺裝置 × 每臺 4 筆 = 32 筆" in status
    assert "(8, 4, 28, 28)" in status
    # The sums are rounded to 4 decimals, and float32 keeps them within
    # gamma_16 (below 1e-6) of whole numbers: they round to them exactly.
    both = states["('i', 'j')"]
    assert both[:2] == [15, [5, 28, 28]] and both[3] == 1.0
    assert both[4] == 3
    rows = states["('j',)"]
    assert rows[2] == [1.0, 1.0, 1.0] and rows[3] == 3.0
    assert states["('i',)"][3] == 5.0  # one per column
    assert states["None"][2] == [5.0, 5.0, 5.0] and states["None"][3] == 15.0
    assert "不求和" in states["None"][5]


def test_explorer_does_nothing_while_grading(monkeypatch) -> None:
    from jaxcourse.exercises.checking.judging import GRADING_ENV
    from jaxcourse.exercises.widgets.explorers_dp_zh import DataParallelExplorer

    monkeypatch.setenv(GRADING_ENV, "1")
    explorer = DataParallelExplorer()
    assert explorer.exploration is None
    assert repr(explorer) == "資料平行探索器：另行評分"
