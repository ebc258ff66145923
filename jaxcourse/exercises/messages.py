"""The exercise system's message catalogue: English, Traditional and Simplified Chinese.

Every sentence a learner reads from a check, a panel or the grader comes from
:data:`MESSAGES`, keyed by a short name and formatted with :meth:`str.format`.
An exercise picks its language (``language="zh-Hant"``); a key missing from a
language falls back to English, so a new key never breaks a chapter. The
Traditional-Chinese texts use Taiwan's terms (引數 for a function's arguments,
參數 for a model's parameters, 行程 for a process); the Simplified-Chinese
ones (``"zh-Hans"``) are derived from them by ``python -m jaxcourse.zh_hans``.
"""

from __future__ import annotations

__all__ = ["EXCEPTIONS", "LANGUAGES", "MESSAGES", "explain_error", "message",
           "ordinal"]

LANGUAGES = ("en", "zh-Hant", "zh-Hans")

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
        "checking": "Checking…",
        "attempt": "check {n}",
        # Where in a returned value a problem is (see core.where).
        "structure_array": "array",
        "path_first_item": "the {ordinal} returned value",
        "path_first_key": "the returned entry {key}",
        "path_item": "the {ordinal} item of {whole}",
        "path_key": "entry {key} of {whole}",
        "at_path": "{where}: {problem}",
        # Between a label and its text (Chinese uses the full-width colon).
        "label_sep": ": ",
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
        "checking": "檢查中……",
        "attempt": "第 {n} 次檢查",
        "structure_array": "陣列",
        "path_first_item": "第 {n} 個回傳值",
        "path_first_key": "回傳的 {key} 項",
        "path_item": "{whole}的第 {n} 項",
        "path_key": "{whole}的 {key} 項",
        "at_path": "{where}：{problem}",
        "label_sep": "：",
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
        "mutated_input": "直接修改了輸入（第 {arg} 個引數）；請回傳新的值",
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
        "grading_crash": "筆記本的行程終止了（{how}）",
        "grading_unreadable": "無法讀取結果（{why}）",
        "grading_cell_errors": "出錯的儲存格：{cells}",
    },
    "zh-Hans": {
        # Generated from "zh-Hant" by python -m jaxcourse.zh_hans (OpenCC tw2sp and
        # book/glossary_zh_terms.tsv), then read; tests/test_zh_hans.py keeps it so.
        "check": "检查",
        "hint": "提示",
        "show_solution": "显示解答",
        "hide_solution": "隐藏解答",
        "hint_n": "提示 {n}／{total}",
        "no_hints": "这题没有提示。",
        "no_more_hints": "没有更多提示了。",
        "solution_heading": "参考解答",
        "solution_unavailable": "找不到参考解答的源代码。",
        "summary": "{id}：{passed}/{total} 项测试通过",
        "summary_not_attempted": "{id}：尚未作答（0/{total} 项测试）",
        "summary_deferred": "{id}：另行评分",
        "checking": "检查中……",
        "attempt": "第 {n} 次检查",
        "structure_array": "数组",
        "path_first_item": "第 {n} 个返回值",
        "path_first_key": "返回的 {key} 项",
        "path_item": "{whole}的第 {n} 项",
        "path_key": "{whole}的 {key} 项",
        "at_path": "{where}：{problem}",
        "label_sep": "：",
        "all_passed": "全部测试通过。",
        "ok": "{test}：通过",
        "failed": "{test}：{problem}",
        "expected_got": "预期 {expected}，得到 {got}",
        "not_attempted": "尚未作答（函数仍然抛出 NotImplementedError）",
        "missing_function": "找不到名为 `{name}` 的函数",
        "not_callable": "`{name}` 是 {type}，不是函数",
        "raised": "抛出 {error}",
        "raised_under": "在 {transform} 之下抛出 {error}",
        "jit_advice": "程序在 JAX 只有追踪值（tracer）的地方需要具体数值："
        "请改用 jnp 函数与 jnp.where，"
        "不要对数组使用 NumPy、Python 的 if、int() 或 float()",
        "tracer_leak": "有 JAX tracer 逃出了转换"
        "（是否把 jit/grad/vmap 内算出的值存进全局变量？）",
        "timeout": "未在 {seconds:g} 秒内完成（无限循环，或是太慢？）",
        "skipped_after_timeout": "略过：先前的测试已超时",
        "returned_none": "返回了 None：是不是忘了 `return`？",
        "returned_type": "返回了 {type}，预期是 {expected}",
        "returned_tracer": "返回了逃出转换的 JAX tracer",
        "wrong_structure": "结构错误：预期 {expected}，得到 {got}",
        "wrong_shape": "形状错误：预期 {expected}，得到 {got}",
        "wrong_dtype": "数据类型错误：预期 {expected}，得到 {got}",
        "wrong_kind": "数据类型错误：预期{expected}类型，得到 {got}",
        "has_nan": "结果的 {size} 个元素中有 {count} 个是 NaN",
        "wrong_values": "数值错误：预期 {expected}，得到 {got}（最大差异 {diff:.3g}，"
        "位于索引 {index}）",
        "wrong_values_large": "{size} 个元素中有 {count} 个数值错误"
        "（最大差异 {diff:.3g}，"
        "位于索引 {index}：预期 {expected:.4g}，得到 {got:.4g}）",
        "mutated_input": "直接修改了输入（第 {arg} 个参数）；请返回新的值",
        "transposed": "两个轴似乎对调了",
        "not_vectorized": "追踪出的程序随批次变大（{n_small} 条时 {small} 个运算，"
        "{n_large} 条时 {large} 个）：是不是用 Python 循环逐条处理？"
        "请改用数组运算或 jax.vmap",
        "printed": "（已隐藏其输出的 {chars} 个字符）",
        "array": "数组",
        "float_kind": "浮点数",
        "int_kind": "整数",
        "under_jit": "jax.jit",
        "under_grad": "jax.grad",
        "under_vmap": "jax.vmap",
        "under_trace": "jax.make_jaxpr",
        "grading_timeout": "笔记本运行超过 {seconds:g} 秒的时间限制",
        "grading_crash": "笔记本的进程终止了（{how}）",
        "grading_unreadable": "无法读取结果（{why}）",
        "grading_cell_errors": "出错的单元格：{cells}",
    },
}


def message(key: str, language: str = "en", /, **values: object) -> str:
    """Return the catalogue's text for ``key`` in ``language``, formatted.

    Parameters
    ----------
    key : str
        A key of :data:`MESSAGES` (e.g. ``"check"``).
    language : {"en", "zh-Hant", "zh-Hans"}
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


#: What common exceptions mean, for learners who read Chinese: the name stays
#: (it is what Python prints and what a search finds), the gloss follows it.
#: The Simplified texts are derived from the Traditional ones like MESSAGES'.
EXCEPTIONS: dict[str, dict[str, str]] = {
    "zh-Hant": {
        "TypeError": "型別錯誤",
        "ValueError": "值不合要求",
        "IndexError": "索引超出範圍",
        "KeyError": "找不到這個鍵",
        "NameError": "名稱未定義",
        "AttributeError": "沒有這個屬性",
        "ZeroDivisionError": "除以零",
        "NotImplementedError": "尚未實作",
        "RuntimeError": "執行時錯誤",
        "AssertionError": "斷言不成立",
        "MemoryError": "記憶體不足",
        "RecursionError": "遞迴太深",
        "OverflowError": "數值溢位",
        "UnboundLocalError": "區域變數在賦值前被使用",
        "SyntaxError": "語法錯誤",
        "ConcretizationTypeError": "追蹤時需要具體的值",
        "TracerBoolConversionError": "追蹤中的值不能轉成 bool",
        "TracerIntegerConversionError": "追蹤中的值不能轉成整數",
        "TracerArrayConversionError": "追蹤中的值不能轉成 NumPy 陣列",
        "UnexpectedTracerError": "追蹤中的值洩漏到函式之外",
        "ShardingTypeError": "分片型別錯誤",
    },
    "zh-Hans": {
        "TypeError": "类型错误",
        "ValueError": "值不合要求",
        "IndexError": "索引超出范围",
        "KeyError": "找不到这个键",
        "NameError": "名称未定义",
        "AttributeError": "没有这个属性",
        "ZeroDivisionError": "除以零",
        "NotImplementedError": "尚未实现",
        "RuntimeError": "运行时错误",
        "AssertionError": "断言不成立",
        "MemoryError": "内存不足",
        "RecursionError": "递归太深",
        "OverflowError": "数值溢出",
        "UnboundLocalError": "局部变量在赋值前被使用",
        "SyntaxError": "语法错误",
        "ConcretizationTypeError": "追踪时需要具体的值",
        "TracerBoolConversionError": "追踪中的值不能转成 bool",
        "TracerIntegerConversionError": "追踪中的值不能转成整数",
        "TracerArrayConversionError": "追踪中的值不能转成 NumPy 数组",
        "UnexpectedTracerError": "追踪中的值泄漏到函数之外",
        "ShardingTypeError": "分片类型错误",
    },
}


def explain_error(error: str, language: str = "en") -> str:
    """Return ``error`` ("TypeError: ...") with its name explained in ``language``.

    English text is returned as it is; in Chinese a known exception name gets
    its meaning in brackets, e.g. "TypeError（型別錯誤）：...".
    """
    name, sep, rest = error.partition(":")
    gloss = EXCEPTIONS.get(language, {}).get(name.strip())
    if gloss is None:
        return error
    return f"{name.strip()}（{gloss}）" + (f"：{rest.strip()}" if sep else "")


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh",
             "eighth", "ninth", "tenth")


def ordinal(n: int) -> str:
    """Return the English ordinal of ``n`` >= 1: "first", ..., "tenth", "11th"."""
    if 1 <= n <= len(_ORDINALS):
        return _ORDINALS[n - 1]
    teens = 10 <= n % 100 <= 20
    suffix = "th" if teens else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
