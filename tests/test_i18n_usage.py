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

import polib  # after the skips
from course_copy import copy_family

from jaxcourse import i18n
from jaxcourse.i18n import overrides, usage, words
from jaxcourse.i18n.catalogs import _read

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
    ("在 `chips` 块 `hw` 型号的 GPU 上", "在 `chips` 張 `hw` 型號的 GPU 上"),  # measure
    ("有几块自己的 GPU", "有幾張自己的 GPU"),
    ("在一块 v5p 芯片上", "在一顆 v5p 晶片上"),
    ("各块被发给了上一个设备", "各塊被發給了上一個裝置"),  # 發 (send), not 髮 (hair)
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


def test_the_editions_rows_and_columns_agree_with_the_english() -> None:
    found = usage.axis_findings()
    assert found["zh-Hant"] == [], "\n".join(found["zh-Hant"][:20])
    assert found["zh-Hans"] == [], "\n".join(found["zh-Hans"][:20])


def test_the_lint_reads_every_string_a_learner_sees() -> None:
    texts = usage.edition_texts()
    for language, folder in (("zh-Hant", "zh_hant"), ("zh-Hans", "zh_hans")):
        wheres = [where for where, _ in texts[language]]
        for kind in (f"book/{folder}/0", f"solutions/{folder}/", f"exercises/{folder}/",
                     f"_{folder}_texts.json", f"book/{folder}/index.md:",
                     f"jaxcourse/messages/{folder}.py: explorer_static",
                     f"jaxcourse/messages/{folder}.py: EXCEPTIONS["):
            assert any(kind in where for where in wheres), (language, kind)
        # Code comments and the figures' labels are read too.
        prose = dict(texts[language])
        assert any(text.lstrip().startswith("#") for text in prose.values())
    figures = [t for where, t in texts["zh-Hant"] if "01_mlp.ipynb" in where]
    assert any("準確率" in t or "損失" in t for t in figures)
    # Chapter 9's own exercise texts (written in Traditional, no table of them).
    own = [t for where, t in texts["zh-Hant"] if where.startswith("dp_zh.")]
    assert len(own) > 50 and any("提示" in t or "正規化" in t for t in own)


#: One planted example of each kind the lint knows, with what it must say.
PLANTED_HANT = [
    ("請等到超時為止", "超時"), ("行程掛起了", "掛起"), ("蒙特卡羅估計", "蒙特卡羅"),
    ("編譯出的集體通訊", "集體通訊"), ("重算策略", "重算"), ("移動滑塊", "滑塊"),
    ("先克隆倉庫", "克隆倉庫"), ("新的會話", "會話"), ("當前的版本", "當前"),
    ("它呼叫的集合操作", "集合操作"), ("在 8 塊 H100 上", "塊 H100"),
    ("每塊晶片的記憶體", "塊晶片"), ("四塊 GPU", "塊 GPU"), ("請參考官方教程", "教程"),
    ("有幾塊自己的 GPU", "塊自己的 GPU"), ("在一塊 v5p 晶片上", "塊 v5p 晶片"),
    # Conversion damage (issue 54, item 3): bits, inference, "passes", an operator.
    ("它的 8 位尾數", "位尾數"), ("推理時的快取", "推理"),
    ("兩個測試都透過了", "透過了"), ("也能透過檢查", "透過檢查"),
    ("Megatron-LM 的「f」運算元", "」運算元"), ("把一塊髮給裝置 0", "髮給"),
    # The explorers' and the panel's terms against the chapters' (item 5).
    ("編譯出的集合通訊", "集合通訊"), ("每個 token 的位元組", "token"),
    ("畫出 roofline 圖", "roofline"),
]
PLANTED_HANS = [
    ("移动滑杆即重新训练", "滑杆"), ("控制项不会带动计算", "控制项"),
    ("每次量测读取", "量测"), ("把程式码载入记忆体", "程式码"),
    ("蒙地卡罗估计", "蒙地卡罗"), ("每个token的字节数", "token"),
    ("等这一步算完再送出下一步", "送出"),
]


@pytest.mark.parametrize(("text", "word"), PLANTED_HANT)
def test_the_usage_lint_fails_on_a_planted_taiwan_mistake(text: str, word: str) -> None:
    assert word in [found for found, _ in usage.scan_text(text, "zh-Hant")]


@pytest.mark.parametrize(("text", "word"), PLANTED_HANS)
def test_the_usage_lint_fails_on_a_planted_mainland_mistake(text: str,
                                                            word: str) -> None:
    assert word in [found for found, _ in usage.scan_text(text, "zh-Hans")]


def test_the_usage_lint_passes_the_right_words() -> None:
    for text in ("請等到逾時為止", "在 8 張 H100 上", "每顆晶片", "集體運算",
                 "重計算策略", "移動滑桿", "一塊記憶體", "分成了幾塊？",
                 "各塊沿給定的裝置對移動",
                 "它的 8 位元尾數", "推論時的快取", "兩個測試都通過了", "透過網路傳送",
                 "透過了解原理", "「f」運算子", "兩個運算元中", "詞元（token）",
                 "{per_token} × {tokens} 個詞元", "屋頂線（roofline）：",
                 "def count(tokens):  # 每個詞元"):
        assert usage.scan_text(text, "zh-Hant") == [], text
    for text in ("移动滑块即重新训练", "每次测量读取", "8 块 H100", "蒙特卡罗估计",
                 "词元（token）", "per_token 个"):
        assert usage.scan_text(text, "zh-Hans") == [], text


@pytest.mark.parametrize(("english", "text", "language", "wrong"), [
    # zh-Hant: 列 is a row, 欄 (or 行) a column.
    ("the last column holds a surprise", "最後一列藏著一個意外", "zh-Hant", True),
    ("the last column holds a surprise", "最後一欄藏著一個意外", "zh-Hant", False),
    ("the rows this process holds", "本行程持有的那些行", "zh-Hant", True),
    ("the rows this process holds", "本行程持有的那些列", "zh-Hant", False),
    # zh-Hans: 行 is a row, 列 a column.
    ("a mistake in each row", "每一列各自归一化", "zh-Hans", True),
    ("a mistake in each row", "每一行各自归一化", "zh-Hans", False),
    ("split by columns", "按行切分", "zh-Hans", True),
    ("split by columns", "按列切分", "zh-Hans", False),
    # Words that name no axis: an array, a process, to run; both axes named.
    ("the rows of an array", "陣列的列", "zh-Hant", False),
    ("rows and columns", "列和欄", "zh-Hant", False),
    ("one column per process", "每個行程執行一次", "zh-Hant", False),
])
def test_the_axis_lint_knows_rows_and_columns(english: str, text: str, language: str,
                                              wrong: bool) -> None:
    assert (usage.axis_problem(english, text, language) is not None) == wrong


@pytest.mark.parametrize(("text", "language", "wrong"), [
    # An edition names itself by its own script ...
    ("> 本页是英文版的繁体中文版，译文来自", "zh-Hans", True),
    ("> 本页是英文版的简体中文版，译文来自", "zh-Hans", False),
    ("> 本頁是英文版的簡體中文版", "zh-Hant", True),
    ("> 本頁是英文版的繁體中文（臺灣）版", "zh-Hant", False),
    # ... and chapter 9, which it links to in that script (zh-Hans: 09_dp_zh_hans).
    ("以及在第 9 章（繁体中文）中，做法是", "zh-Hans", True),
    ("以及第 9 章的相应内容，繁体中文）", "zh-Hans", True),
    ("以及在第 9 章中，做法是", "zh-Hans", False),
    ("第 9 章（簡體中文）會展示", "zh-Hant", True),
    # Where the Simplified chapter 9 says what it was generated from.
    ("本页由繁体中文（台湾用语）的原文自动生成", "zh-Hans", False),
])
def test_the_naming_lint_knows_which_edition_a_page_links_to(
        text: str, language: str, wrong: bool) -> None:
    assert (usage.naming_problem(text, language) is not None) == wrong


def test_each_edition_names_itself_and_the_others_correctly() -> None:
    found = usage.naming_findings()
    assert found["zh-Hant"] == [], "\n".join(found["zh-Hant"][:20])
    assert found["zh-Hans"] == [], "\n".join(found["zh-Hans"][:20])
    # Every page whose first cell names its edition was read.
    firsts = [t for _, t in usage.edition_texts()["zh-Hans"] if "本页是英文版的" in t]
    assert len(firsts) >= 16, len(firsts)


def test_the_lint_finds_a_planted_mistake_in_the_home_page_and_the_messages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxcourse import messages

    page = tmp_path / "book" / "zh_hant" / "index.md"
    page.parent.mkdir(parents=True)
    page.write_text("# 首頁\n\n先克隆倉庫。\n", encoding="utf-8")
    planted = dict(messages.MESSAGES["zh-Hant"], explorer_static="超時了")
    monkeypatch.setitem(messages.MESSAGES, "zh-Hant", planted)
    found = usage.usage_findings(tmp_path)["zh-Hant"]
    assert any("index.md" in line and "克隆" in line for line in found), found
    assert any("explorer_static" in line and "超時" in line for line in found), found


def test_the_simplified_edition_follows_its_style_sheet() -> None:
    found = usage.style_findings()
    assert found == [], "\n".join(found[:20])


def test_a_cell_shown_in_english_until_translated_is_not_linted(tmp_path: Path) -> None:
    # An English cell awaiting its translation (marked) holds English words the
    # style sheet rules out in Chinese prose (Roofline); a Chinese one is read.
    master = next(m for f in i18n.families() for m in f.masters
                  if m.startswith("book/"))
    path = tmp_path / i18n.edition_path(master, "zh-Hans")
    path.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            f"{i18n.UNTRANSLATED['zh-Hans']}\n\nThe roofline."),
        nbformat.v4.new_markdown_cell("画出 Roofline 图。"),
    ]
    nbformat.write(nb, path)
    found = [line for line in usage.style_findings(tmp_path) if str(path.name) in line]
    assert len(found) == 1 and "Roofline" in found[0], found


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
    # The lint names it until a reviewer rereads it (and names none before).
    assert i18n.stale_overrides(tmp_path) == []
    stale.save(str(where))
    (line,) = i18n.stale_overrides(tmp_path)
    assert family.name in line and "stale" in line


def test_no_reviewed_override_is_stale() -> None:
    # A stale override shows readers the generated text under a note that the
    # review is out of date (issue 54, item 7): none may be shipped.
    assert i18n.stale_overrides() == []
    assert any(i18n.override_path(f).is_file() for f in i18n.families())


#: Chapters 6-8's terms (issue 54, item 10): Taiwan's, and the mainland's.
CHAPTER_TERMS = [("屋頂線", "屋顶线"), ("微批次", "微批次"), ("重計算", "重计算"),
                 ("詞元", "词元"), ("逾時", "超时"), ("卡住", "挂起"),
                 ("管線平行", "流水线并行"), ("張量平行", "张量并行"),
                 ("臨界批次", "临界批次"), ("序列平行", "序列并行")]


@pytest.mark.parametrize(("hant", "hans"), CHAPTER_TERMS)
def test_the_glossaries_name_the_terms_of_chapters_6_to_8(hant: str, hans: str) -> None:
    # A headword of each glossary, and the word the editions of chapters 6-8 write.
    for glossary, term, folder in (("glossary_zh.md", hant, "zh_hant"),
                                   ("glossary_zh_hans.md", hans, "zh_hans")):
        text = (ROOT / "book" / glossary).read_text(encoding="utf-8")
        assert f"\n| {term} |" in text, (glossary, term)
        # The chapters, their exercises and the panels' texts.
        pages = [ROOT / where / folder / f"{name}.ipynb"
                 for where, suffix in (("book", ""), ("solutions", "_exercises"))
                 for name in (f"06_scaling{suffix}", f"07_transformer{suffix}",
                              f"08_multiprocess{suffix}")]
        pages += [ROOT / "solutions" / f"{topic}_{folder}_texts.json"
                  for topic in ("scaling", "transformer", "multiprocess")]
        used = "".join(page.read_text(encoding="utf-8") for page in pages)
        assert term in used, (folder, term)
