"""The exercise system's message catalogue, in English and Traditional Chinese.

Every sentence a learner reads from a check, a panel or the grader comes from
:data:`MESSAGES`, keyed by a short name and formatted with :meth:`str.format`.
An exercise picks its language (``language="zh-Hant"``); a key missing from a
language falls back to English, so a new key never breaks a chapter.
"""

from __future__ import annotations

__all__ = ["LANGUAGES", "MESSAGES", "message"]

LANGUAGES = ("en", "zh-Hant")

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        # Buttons and panel text.
        "check": "Check",
        "hint": "Hint",
        "show_solution": "Show solution",
        "hide_solution": "Hide solution",
        "hint_n": "Hint {n} of {total}",
        "no_hints": "This exercise has no hints.",
        "no_more_hints": "No more hints.",
        "solution_heading": "Reference solution",
        "solution_unavailable": "The reference source is not available.",
        # Summaries.
        "summary": "{id}: {passed}/{total} tests passed",
        "summary_not_attempted": "{id}: not attempted yet (0/{total} tests)",
        "summary_deferred": "{id}: graded separately",
        "all_passed": "All tests passed.",
        # One test's verdict.
        "ok": "{test}: ok",
        "failed": "{test}: {problem}",
        "expected_got": "expected {expected}, got {got}",
        "not_attempted": "not attempted yet (the function still raises "
        "NotImplementedError)",
        "missing_function": "no function named `{name}` was found",
        "not_callable": "`{name}` is a {type}, not a function",
        "raised": "raised {error}",
        "raised_under": "under {transform}, raised {error}",
        "jit_advice": "the code needs a concrete value where JAX only has a "
        "traced one: use jnp functions and jnp.where instead of NumPy, "
        "Python `if`, int() or float() on arrays",
        "tracer_leak": "a JAX tracer escaped a transformation (did you store a "
        "value computed inside jit/grad/vmap in a global?)",
        "timeout": "did not finish within {seconds:g} s (an endless loop, or far "
        "too slow?)",
        "skipped_after_timeout": "skipped: an earlier test ran out of time",
        "returned_none": "returned None: did you forget `return`?",
        "returned_type": "returned a {type} where {expected} was expected",
        "returned_tracer": "returned a JAX tracer that escaped a transformation",
        "wrong_structure": "wrong structure: expected {expected}, got {got}",
        "wrong_shape": "wrong shape: expected {expected}, got {got}",
        "wrong_dtype": "wrong dtype: expected {expected}, got {got}",
        "wrong_kind": "wrong dtype: expected a {expected} type, got {got}",
        "has_nan": "the result contains NaN in {count} of {size} entries",
        "wrong_values": "wrong values: expected {expected}, got {got} (largest "
        "difference {diff:.3g} at index {index})",
        "wrong_values_large": "wrong values in {count} of {size} entries (largest "
        "difference {diff:.3g} at index {index}: expected {expected:.4g}, got "
        "{got:.4g})",
        "mutated_input": "changed its input in place (argument {arg}); return a "
        "new value instead",
        "transposed": "the axes look swapped",
        "not_vectorized": "the traced program grows with the batch "
        "({small} operations for {n_small} examples, {large} for {n_large}): "
        "a Python loop over the examples? Use array operations or jax.vmap",
        "printed": "(its printed output, {chars} characters, was hidden)",
        "array": "an array",
        "float_kind": "floating-point",
        "int_kind": "integer",
        # Transform names.
        "under_jit": "jax.jit",
        "under_grad": "jax.grad",
        "under_vmap": "jax.vmap",
        "under_trace": "jax.make_jaxpr",
        # Grading.
        "grading_timeout": "the notebook ran past the {seconds:g} s time limit",
        "grading_crash": "the notebook process died ({how})",
        "grading_unreadable": "its results could not be read ({why})",
        "grading_cell_errors": "cells that raised: {cells}",
    },
    "zh-Hant": {
        "check": "檢查",
        "hint": "提示",
        "show_solution": "顯示解答",
        "hide_solution": "隱藏解答",
        "hint_n": "提示 {n}／{total}",
        "no_hints": "這題沒有提示。",
        "no_more_hints": "沒有更多提示了。",
        "solution_heading": "參考解答",
        "solution_unavailable": "找不到參考解答的原始碼。",
        "summary": "{id}：{passed}/{total} 項測試通過",
        "summary_not_attempted": "{id}：尚未作答（0/{total} 項測試）",
        "summary_deferred": "{id}：另行評分",
        "all_passed": "全部測試通過。",
        "ok": "{test}：通過",
        "failed": "{test}：{problem}",
        "expected_got": "預期 {expected}，得到 {got}",
        "not_attempted": "尚未作答（函式仍然拋出 NotImplementedError）",
        "missing_function": "找不到名為 `{name}` 的函式",
        "not_callable": "`{name}` 是 {type}，不是函式",
        "raised": "拋出 {error}",
        "raised_under": "在 {transform} 之下拋出 {error}",
        "jit_advice": "程式在 JAX 只有追蹤值（tracer）的地方需要具體數值："
        "請改用 jnp 函式與 jnp.where，"
        "不要對陣列使用 NumPy、Python 的 if、int() 或 float()",
        "tracer_leak": "有 JAX tracer 逃出了轉換"
        "（是否把 jit/grad/vmap 內算出的值存進全域變數？）",
        "timeout": "未在 {seconds:g} 秒內完成（無窮迴圈，或是太慢？）",
        "skipped_after_timeout": "略過：先前的測試已超時",
        "returned_none": "回傳了 None：是不是忘了 `return`？",
        "returned_type": "回傳了 {type}，預期是 {expected}",
        "returned_tracer": "回傳了逃出轉換的 JAX tracer",
        "wrong_structure": "結構錯誤：預期 {expected}，得到 {got}",
        "wrong_shape": "形狀錯誤：預期 {expected}，得到 {got}",
        "wrong_dtype": "資料型別錯誤：預期 {expected}，得到 {got}",
        "wrong_kind": "資料型別錯誤：預期{expected}型別，得到 {got}",
        "has_nan": "結果的 {size} 個元素中有 {count} 個是 NaN",
        "wrong_values": "數值錯誤：預期 {expected}，得到 {got}（最大差異 {diff:.3g}，"
        "位於索引 {index}）",
        "wrong_values_large": "{size} 個元素中有 {count} 個數值錯誤"
        "（最大差異 {diff:.3g}，"
        "位於索引 {index}：預期 {expected:.4g}，得到 {got:.4g}）",
        "mutated_input": "直接修改了輸入（第 {arg} 個參數）；請回傳新的值",
        "transposed": "兩個軸似乎對調了",
        "not_vectorized": "追蹤出的程式隨批次變大（{n_small} 筆時 {small} 個運算，"
        "{n_large} 筆時 {large} 個）：是不是用 Python 迴圈逐筆處理？"
        "請改用陣列運算或 jax.vmap",
        "printed": "（已隱藏其輸出的 {chars} 個字元）",
        "array": "陣列",
        "float_kind": "浮點數",
        "int_kind": "整數",
        "under_jit": "jax.jit",
        "under_grad": "jax.grad",
        "under_vmap": "jax.vmap",
        "under_trace": "jax.make_jaxpr",
        "grading_timeout": "筆記本執行超過 {seconds:g} 秒的時間限制",
        "grading_crash": "筆記本的程序終止了（{how}）",
        "grading_unreadable": "無法讀取結果（{why}）",
        "grading_cell_errors": "出錯的儲存格：{cells}",
    },
}


def message(key: str, language: str = "en", /, **values: object) -> str:
    """Return the catalogue's text for ``key`` in ``language``, formatted.

    Parameters
    ----------
    key : str
        A key of :data:`MESSAGES` (e.g. ``"check"``).
    language : {"en", "zh-Hant"}
        The language; a key this language lacks falls back to English.
    **values
        Fields substituted into the text.

    Returns
    -------
    str
        The formatted message.
    """
    if language not in MESSAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, not {language!r}")
    text = MESSAGES[language].get(key, MESSAGES["en"][key])
    return text.format(**values) if values else text
