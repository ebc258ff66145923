"""Taiwan's words in zh-Hant, the mainland's in zh-Hans, one voice in zh-Hans.

The term table is applied to whole words only (``jaxcourse.i18n.words``);
the editions use no word of the other region (``jaxcourse.i18n.usage``, from
OpenCC's Taiwan dictionaries, the term table and the course's list) and no
variant the Simplified style sheet rules out; a reviewed zh-Hant override
replaces the generated text, and goes stale when its Simplified source
changes (``jaxcourse.i18n.overrides``).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

pytest.importorskip("opencc", reason="the editions' generator needs OpenCC")
pytest.importorskip("polib", reason="the editions' generator needs polib")
pytest.importorskip("jieba", reason="the zh-Hant editions need jieba")

import polib  # noqa: E402  (after the skips)
from course_copy import copy_family  # noqa: E402

from jaxcourse import i18n  # noqa: E402
from jaxcourse.i18n import overrides, usage, words  # noqa: E402
from jaxcourse.i18n.catalogs import _read  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# Sentences where a row of the table, matched as a substring, would cut a word
# in two: (Simplified, the Traditional edition's text).
ACROSS_WORDS = [
    ("由 4 个连续数组成的块", "由 4 個連續數組成的塊"),        # 数|组成, not 数组
    ("于是全局数组循环移位了", "於是全域陣列循環移位了"),        # a cyclic shift
    ("其实现在就能运行", "其實現在就能執行"),                  # 其实|现在, not 实现
    ("参数组成的树", "參數組成的樹"),                          # 参数|组成
    ("一个由十个数组成的向量", "一個由十個數組成的向量"),
    ("它会在追踪时报错", "它會在追蹤時丟出錯誤"),              # 时报 is a newspaper
]
# The table where it should apply, and the context rows around it.
WHOLE_WORDS = [
    ("这些数组合起来是", "這些陣列合起來是"),
    ("两个测试都通过了", "兩個測試都通過了"),                  # passing a test
    ("通过网络发送", "透過網路傳送"),                          # "by way of"
    ("调用函数", "呼叫函式"),
    ("这只有训练状态", "這只有訓練狀態"),                      # 只 is "only", not 隻
    ("最多只能相差一条", "最多只能相差一條"),
]


@pytest.mark.parametrize(("hans", "hant"), ACROSS_WORDS + WHOLE_WORDS)
def test_the_term_table_applies_to_whole_words(hans: str, hant: str) -> None:
    assert i18n.to_hant(hans) == hant


def test_no_table_row_ever_matches_across_a_word_boundary() -> None:
    table = words.terms(i18n.TERMS_FILE)
    checked = 0
    for family in i18n.families():
        for entry in _read(family.catalog):
            if entry.obsolete or not entry.msgstr:
                continue
            spans = words.word_spans(entry.msgstr)
            for start, end, _ in words.table_matches(entry.msgstr, table):
                assert not words.straddles((start, end), spans), (
                    family.name, entry.msgstr[max(0, start - 5):end + 5])
                checked += 1
    assert checked > 1000  # the catalogs use the table everywhere


def test_the_editions_use_their_own_regions_words() -> None:
    found = usage.usage_findings()
    assert found["zh-Hant"] == [], "\n".join(found["zh-Hant"][:20])
    assert found["zh-Hans"] == [], "\n".join(found["zh-Hans"][:20])


def test_the_simplified_edition_follows_its_style_sheet() -> None:
    found = usage.style_findings()
    assert found == [], "\n".join(found[:20])


def test_the_simplified_glossary_shows_the_style_sheet() -> None:
    from jaxcourse import zh_hans

    glossary = (ROOT / "book" / "glossary_zh_hans.md").read_text(encoding="utf-8")
    assert glossary.endswith(zh_hans.style_sheet())
    for concept, form, _ in usage.style_rules():
        assert f"| {concept} | {form} |" in glossary


def test_the_usage_lint_finds_the_other_regions_words() -> None:
    hant = usage.regional_words("zh-Hant")
    allowed = usage._allowed("zh-Hant")
    assert [w for w, _ in usage._scan("請參考官方教程中的示例", hant, allowed)] == [
        "教程", "示例"]
    assert usage._scan("JAX 文件說明了演算法", hant, allowed) == []  # allowlisted
    assert usage._scan("由十個數組成", hant, allowed) == []           # 數|組成
    hans = usage.regional_words("zh-Hans")
    found = usage._scan("把程式码载入记忆体", hans, usage._allowed("zh-Hans"))
    assert [w for w, _ in found] == ["程式码", "记忆体"]
    assert usage._scan("这更快取决于硬件", hans, usage._allowed("zh-Hans")) == []
    rules = usage.style_rules()
    hits = [concept for concept, _, pattern in rules
            for text in ("每台设备", "蒙特卡洛", "**Check**", "Roofline 图")
            if pattern.search(text)]
    assert sorted(hits) == sorted(["device measure word", "Monte Carlo",
                                   "panel buttons", "roofline"])


def test_a_reviewed_override_is_shown_until_its_simplified_source_changes(
        tmp_path: Path) -> None:
    family = i18n.families()[0]
    catalog = copy_family(tmp_path, family)
    po = polib.pofile(str(catalog))
    done = next(e for e in po if e.msgctxt is None and e.msgstr
                and "fuzzy" not in e.flags and not e.obsolete)
    # polib reads "book/x.ipynb:<cell id>" as a path without a line number.
    path, cell_id = ":".join(filter(None, done.occurrences[0])).rsplit(":", 1)
    reviewed = "# 臺灣讀者校訂過的段落\n\n這一段由人工潤飾。"
    ours = polib.POFile()
    ours.append(polib.POEntry(msgid=done.msgstr, msgstr=reviewed,
                              occurrences=list(done.occurrences)))
    where = overrides.override_path(family, tmp_path)
    where.parent.mkdir(parents=True)
    ours.save(str(where))
    nb = nbformat.read(tmp_path / path, as_version=4)

    def shown(hans) -> str:
        merged = overrides.merged_overrides(family, hans, tmp_path)
        edition = i18n.edition(nb, hans, "zh-Hant", overrides=merged)
        return next(c for c in edition.cells if c.get("id") == cell_id).source

    hans = i18n.merged(family, tmp_path)
    assert shown(hans).startswith(reviewed)
    assert overrides.STALE_NOTE not in shown(hans)

    # The Simplified translation changes: the override goes stale (fuzzy, the
    # text it corrected kept as #| msgid) and the generated text is shown.
    entry = hans.find(done.msgid)
    entry.msgstr = done.msgstr + "\n\n新加的一句话。"
    stale = overrides.merged_overrides(family, hans, tmp_path)
    moved = stale.find(entry.msgstr)
    assert moved is not None and "fuzzy" in moved.flags
    assert moved.previous_msgid == done.msgstr and moved.msgstr == reviewed
    text = shown(hans)
    assert text.startswith(overrides.STALE_NOTE)
    assert reviewed not in text and "新加的一句話。" in text
