"""The exercise system's message catalogue: English, Traditional and Simplified Chinese.

Every sentence and label a learner or teacher reads from a check, the check
panel, an explorer (its controls, figures, status lines and plain-text form)
or the grader comes from :data:`MESSAGES`, keyed by a short name and
formatted with :meth:`str.format`: one module per language (:mod:`.en`,
:mod:`.zh_hant`, :mod:`.zh_hans`), assembled here.
An exercise picks its language (``language="zh-Hant"``); a key missing from a
language falls back to English, so a new key never breaks a chapter. The
Traditional-Chinese texts use Taiwan's terms (引數 for a function's arguments,
參數 for a model's parameters, 行程 for a process); the Simplified-Chinese
ones (``"zh-Hans"``) are derived from them by ``python -m jaxcourse.zh_hans``.
"""

from __future__ import annotations

from . import en, zh_hans, zh_hant

__all__ = ["EXCEPTIONS", "LANGUAGES", "MESSAGES", "explain_error", "message",
           "ordinal"]

LANGUAGES = ("en", "zh-Hant", "zh-Hans")

MESSAGES: dict[str, dict[str, str]] = {
    "en": en.TEXTS,
    "zh-Hant": zh_hant.TEXTS,
    "zh-Hans": zh_hans.TEXTS,
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
