"""The Simplified-Chinese (zh-Hans) edition of chapter 9, generated from the
Traditional-Chinese masters by ``python -m jaxcourse.zh_hans``.

The edition is up to date (``--check``); no Traditional-only character or
Taiwan-only term is left in it, and no Simplified-only character has crept
into the masters; the message catalogue and the explorer's labels in zh-Hans
are what the generator derives; the edition's exercises are registered twins
that answer in Simplified Chinese; its figures use a Simplified-Chinese font.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

opencc = pytest.importorskip("opencc", reason="the zh-Hans generator needs OpenCC")

from jaxcourse import zh_hans  # noqa: E402  (after the skip: it needs OpenCC)

ROOT = Path(__file__).resolve().parents[1]
GENERATED = [ROOT / generated for _, generated in zh_hans.PAIRS] + [
    ROOT / "exercises" / "09_dp_zh_hans_exercises.ipynb"
]
MASTERS = [ROOT / master for master, _ in zh_hans.PAIRS] + [
    ROOT / "jaxcourse" / "exercises" / "widgets" / "explorers_dp_zh.py",
]
CJK = re.compile(r"[\u3400-\u9fff]")
# Characters both scripts share although OpenCC maps them (its tables pick
# one regional form): none is needed so far; add one here with a reason.
SHARED: set[str] = set()


def _text(path: Path) -> str:
    """Every text a reader sees: sources and, for notebooks, stored outputs and
    the stored widget state (the panels and the explorer as the book shows them)."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.extend(str(v) for k, v in output.get("data", {}).items()
                         if k.startswith("text/"))
            parts.extend(output.get("traceback", []))
    parts.append(json.dumps(nb.metadata.get("widgets", {}), ensure_ascii=False))
    return "\n".join(parts)


def _changed_by(converter, text: str) -> list[str]:
    chars = sorted(set(CJK.findall(text)) - SHARED)
    return [c for c in chars if converter.convert(c) != c]


def test_generator_check_passes() -> None:
    proc = subprocess.run([sys.executable, "-m", "jaxcourse.zh_hans", "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_fails_when_a_master_changes(tmp_path: Path) -> None:
    for master, generated in zh_hans.PAIRS:
        for name in (master, generated):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    assert zh_hans.out_of_date(tmp_path) == []
    glossary = tmp_path / "book" / "glossary_zh.md"
    glossary.write_text(glossary.read_text(encoding="utf-8") + "\n新的裝置。\n",
                        encoding="utf-8")
    nb_path = tmp_path / "book" / "09_dp_zh.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[0].source += "\n新增的一句。"
    nbformat.write(nb, nb_path)
    assert sorted(zh_hans.out_of_date(tmp_path)) == [
        "book/09_dp_zh_hans.ipynb", "book/glossary_zh_hans.md"]


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_no_traditional_characters_left(path: Path) -> None:
    assert path.exists(), f"generate it: python -m jaxcourse.zh_hans ({path.name})"
    left = _changed_by(opencc.OpenCC("t2s"), _text(path))
    assert not left, f"Traditional-only characters in {path.name}: {''.join(left)}"


def _taiwan_terms() -> list[str]:
    """The table's Taiwan terms, in Simplified characters, that mainland text
    must not contain (row/column words and notes in brackets are context-bound
    and left out: mainland text uses 行 and 列 too)."""
    t2s = opencc.OpenCC("t2s")
    targets = "".join(hans for _, hans in zh_hans.terms())
    out = []
    for hant, hans in zh_hans.terms():
        term = t2s.convert(hant)
        if term != hans and term not in targets and not re.search("[列行栏（]", term):
            out.append(term)
    return out


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.name)
def test_no_taiwan_only_terms_left(path: Path) -> None:
    # The glossary's style sheet names the variants it rules out (蒙地卡罗).
    text = _text(path).replace(zh_hans.style_sheet(), "")
    left = [term for term in _taiwan_terms() if term in text]
    assert not left, f"Taiwan-only terms in {path.name}: {left}"


@pytest.mark.parametrize("path", MASTERS, ids=lambda p: p.name)
def test_masters_have_no_simplified_characters(path: Path) -> None:
    text = _text(path)
    if path.name == "explorers_dp_zh.py":  # it holds both label sets
        text = text.split('"zh-Hans": {')[0]
    left = _changed_by(opencc.OpenCC("s2twp"), text)
    assert not left, f"Simplified-only characters in {path.name}: {''.join(left)}"


def test_convert_code_touches_only_chinese_comments_and_strings() -> None:
    source = (
        'def 資料(x):  # 資料平行\n'
        '    return f"{x} 臺裝置", "device", 記憶體\n'
    )
    out = zh_hans.convert_code(source)
    assert out == (
        'def 資料(x):  # 数据并行\n'
        '    return f"{x} 个设备", "device", 記憶體\n'
    )


def test_term_table_wins_over_opencc() -> None:
    assert zh_hans.convert_text("預設的平行行程") == "默认的并行进程"
    assert zh_hans.convert_text("中文字型") == "中文字体"
    # Taiwan's 列 is a row: mainland's 行; devices are counted with 个 (the
    # Simplified style sheet).
    assert zh_hans.convert_text("每臺裝置一列") == "每个设备一行"


def test_messages_in_simplified_chinese_are_generated() -> None:
    from jaxcourse.messages import LANGUAGES, MESSAGES, message

    assert "zh-Hans" in LANGUAGES
    assert set(MESSAGES["zh-Hans"]) == set(MESSAGES["zh-Hant"])
    stale = {k: zh_hans.convert_text(v) for k, v in MESSAGES["zh-Hant"].items()
             if zh_hans.convert_text(v) != MESSAGES["zh-Hans"][k]}
    assert not stale, f"paste these into messages/zh_hans.py: {stale}"
    assert message("check", "zh-Hans") == "检查"
    assert "引數" in MESSAGES["zh-Hant"]["mutated_input"]
    assert "行程" in MESSAGES["zh-Hant"]["grading_crash"]


def test_exception_glosses_in_simplified_chinese_are_generated() -> None:
    from jaxcourse.messages import EXCEPTIONS

    assert set(EXCEPTIONS["zh-Hans"]) == set(EXCEPTIONS["zh-Hant"])
    for name, text in EXCEPTIONS["zh-Hant"].items():
        assert EXCEPTIONS["zh-Hans"][name] == zh_hans.convert_text(text), name


def test_explorer_labels_in_simplified_chinese_are_generated() -> None:
    from jaxcourse.exercises.widgets.explorers_dp_zh import AXES_LABELS, LABELS

    assert set(LABELS["zh-Hans"]) == set(LABELS["zh-Hant"])
    for key, text in LABELS["zh-Hant"].items():
        assert LABELS["zh-Hans"][key] == zh_hans.convert_text(text), key
    assert AXES_LABELS["zh-Hans"] == tuple(
        zh_hans.convert_text(t) for t in AXES_LABELS["zh-Hant"])


def test_explorer_speaks_simplified_chinese() -> None:
    from jaxcourse.exercises.widgets.explorers_dp_zh import (
        DataParallelExplorer,
        explore,
        summary_html,
    )

    e = explore(1, 3)
    assert "全局批次" in summary_html(e, "zh-Hans")
    explorer = DataParallelExplorer(language="zh-Hans", run=False)
    assert explorer.num_devices.description == "设备数"
    assert explorer.text().startswith("数据并行探索器")
    with pytest.raises(ValueError, match="language"):
        DataParallelExplorer(language="fr", run=False)


def test_edition_exercises_are_simplified_twins() -> None:
    from jaxcourse.exercises import by_chapter, check, get

    hant = by_chapter()["09_dp_zh"]
    hans = by_chapter()["09_dp_zh_hans"]
    assert [i.replace("dp_zh_hans.", "dp_zh.") for i in hans] == hant
    t2s = opencc.OpenCC("t2s")
    for exercise_id in hans:
        exercise = get(exercise_id)
        twin = get(exercise_id.replace("dp_zh_hans.", "dp_zh."))
        assert exercise.language == "zh-Hans"
        assert exercise.devices == twin.devices
        assert len(exercise.cases) == len(twin.cases)
        assert len(exercise.mistakes) == len(twin.mistakes)
        texts = [exercise.title, *exercise.hints,
                 *(m.message for m in exercise.mistakes),
                 *(c.description for c in exercise.cases),
                 exercise.solution_source()]
        assert not [t for t in texts if t2s.convert(t) != t]
    result = check("dp_zh_hans.split_for_devices",
                   get("dp_zh_hans.split_for_devices").reference)
    assert result.passed and result.summary().endswith("项测试通过")
    wrong = check("dp_zh_hans.split_for_devices",
                  lambda a, n: a.reshape(a.shape[0] // n, n, *a.shape[1:]))
    assert any("轴的顺序反了" in m for m in wrong.messages)


def test_edition_figures_use_a_simplified_chinese_font() -> None:
    from jaxcourse.plotting import CJK_FONTS, CJK_FONTS_SC, font_covers, use_cjk_font

    assert CJK_FONTS_SC[0].endswith(" SC")
    assert set(CJK_FONTS) <= set(CJK_FONTS_SC)
    family = use_cjk_font(CJK_FONTS_SC, fetch=False, script="SC")
    assert font_covers(family, "数据并行设备损失准确率梯度")
    if font_covers("Noto Sans CJK SC"):
        assert family == "Noto Sans CJK SC"
    nb = nbformat.read(ROOT / "book" / "09_dp_zh_hans.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert 'use_cjk_font(CJK_FONTS_SC, script="SC")' in code


# Taiwan phrasings a reviewer found in the generated edition, as OpenCC leaves
# them in simplified characters; the term table now rewrites each one.
TAIWAN_PHRASINGS = {
    "无条件进位": "向上取整",
    "加总": "求和",
    r"替[^。，；\n]{0,12}取一个名字": "给…取一个名字",
    r"2 核心": "两个核心 / 双核",
    r"(?<!打)印出": "输出 / 打印",
}


def _zh_hans_files() -> list[Path]:
    root = Path(__file__).resolve().parents[1]
    # Chapter 9's edition, and the zh_hans/ editions of chapters 1-8 (jaxcourse.i18n).
    found = [p for folder in ("book", "exercises", "solutions")
             for p in sorted((root / folder).glob("*zh_hans*"))
             + sorted((root / folder).glob("zh_hans/*"))
             if p.is_file() and p.suffix != ".tsv"]  # the term tables list both
    return found + [root / "jaxcourse" / "messages" / "zh_hans.py"]


@pytest.mark.parametrize("pattern", list(TAIWAN_PHRASINGS))
def test_no_taiwan_phrasing_survives_in_zh_hans(pattern: str) -> None:
    files = _zh_hans_files()
    assert len(files) >= 5, files
    # Keyed by folder and name: exercises/ and solutions/ share file names.
    hits = {f"{p.parent.name}/{p.name}": re.findall(f".{{0,12}}{pattern}.{{0,6}}",
                                                     p.read_text("utf-8"))
            for p in files}
    hits = {name: found for name, found in hits.items() if found}
    assert not hits, f"write {TAIWAN_PHRASINGS[pattern]!r} instead: {hits}"


def test_the_term_table_rewrites_the_taiwan_phrasings() -> None:
    assert zh_hans.convert_text("60,000 / 256 無條件進位") == "60,000 / 256 向上取整"
    assert zh_hans.convert_text("先在裝置上加總") == "先在设备上求和"
    assert zh_hans.convert_text("要替對映軸取一個名字") == "要给映射轴取一个名字"
    assert zh_hans.convert_text("在 2 核心的 CPU 上") == "在双核 CPU 上"
    assert zh_hans.convert_text("印出結果") == "打印出结果"


def test_chapter_9s_first_cells_say_what_jupyterlab_shows_in_chinese() -> None:
    # The Traditional masters (chapter 9 and its exercises) say how little of
    # JupyterLab the Taiwan pack translates; their Simplified editions speak of
    # the Simplified pack instead, never of themselves as generated twice.
    from jaxcourse.i18n.editions import EDITION_NOTE

    # The same counts as the English chapters' editions (checked there against
    # the installed packs).
    for count in ("約 500 條", "約 2,100 條"):
        assert count in zh_hans.MASTER_NOTE and count in EDITION_NOTE["zh-Hant"]
    masters = ("book/09_dp_zh.ipynb", "solutions/09_dp_zh_exercises.ipynb",
               "exercises/09_dp_zh_exercises.ipynb")
    editions = ("book/09_dp_zh_hans.ipynb", "solutions/09_dp_zh_hans_exercises.ipynb",
                "exercises/09_dp_zh_hans_exercises.ipynb")
    for master, edition in zip(masters, editions, strict=True):
        first = nbformat.read(ROOT / master, as_version=4).cells[0].source
        assert first.endswith(zh_hans.MASTER_NOTE), master
        first = nbformat.read(ROOT / edition, as_version=4).cells[0].source
        assert first.endswith(zh_hans.EDITION_NOTE), edition
        assert "繁体中文套件" not in first and first.count("> ") == 1, edition
