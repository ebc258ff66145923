"""The editions: each English master in Simplified and Traditional Chinese.

An edition is its master with the Markdown cells, code comments and figure
labels of the catalog (:mod:`.catalogs`) in its language, every other
character of the code and every output the master's own. A cell whose
translation is missing or stale is shown in English, under a line saying so.
The Traditional-Chinese (Taiwan) text is the Simplified translation through
the course's term table (:data:`.layout.TERMS_FILE`) and OpenCC's ``s2twp``
(:func:`to_hant`). :func:`write` writes every catalog and edition, the exercise
panels' tables of texts, the Traditional twins of the hand-written pages and
the editions' part of the book's table of contents; :func:`out_of_date` says
which of them differ from what it would write.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path

import nbformat

from ..zh_hans import splice
from .catalogs import _comments, _exercise_texts, _text, merged
from .figures import _translate_figure
from .layout import (
    COMMENT,
    EDITIONS,
    EXERCISE,
    ROOT,
    Family,
    edition_path,
    families,
)
from .overrides import STALE_NOTE, merged_overrides, overridden, override_path
from .words import to_hant

#: Shown under a cell whose translation is missing or stale.
UNTRANSLATED = {
    "zh-Hans": "*（本段尚未翻译，以下是英文原文。）*",
    "zh-Hant": "*（本段尚未翻譯，以下是英文原文。）*",
}
#: Added to the first cell of every edition: where it comes from, what is
#: translated, and what a learner meets in English. JupyterLab's language
#: packs differ: zh-CN translates about 2,100 of JupyterLab's 2,125 strings,
#: zh-TW about 500 (counted in the packs' ``jupyterlab.json``).
EDITION_NOTE = {
    "zh-Hans": (
        "\n\n> 本页是英文版的简体中文版，译文来自 `book/locales/zh_Hans/` 的消息目录"
        "（`python -m jaxcourse.i18n`）。正文、代码注释、图中的文字、练习面板和探索器"
        "都已译成中文；代码和输出与英文版完全相同（输出已在英文版上重新运行验证），"
        "所以保存的输出（包括探索器运行前的静态画面）仍是英文，运行单元格后练习面板"
        "和探索器会以简体中文重新显示。在 Colab 中打开时，请先运行 "
        "`%env JAX_COURSE_LANGUAGE=zh-Hans`（JupyterLab 会按本页自动识别）。"
        "JupyterLab 本身的界面默认是英文：课程的安装脚本装好了中文语言包，在 "
        "JupyterLab 4 中选择 Settings → Language → 中文（简体，中国），页面重新载入后"
        "菜单和对话框即为简体中文（这个语言包翻译了 JupyterLab 约 2,100 条界面文字，"
        "几乎是全部）。"
    ),
    "zh-Hant": (
        "\n\n> 本頁是英文版的繁體中文（臺灣）版，由簡體中文譯文經 OpenCC 與課程的"
        "術語表轉換而成，部分段落經臺灣用語校訂（`python -m jaxcourse.i18n`）。"
        "正文、程式碼註解、圖中的文字、練習面板和探索器都已譯成中文；程式碼和輸出"
        "與英文版完全相同（輸出已在英文版上重新執行驗證），所以儲存的輸出（包括"
        "探索器執行前的靜態畫面）仍是英文，執行儲存格後練習面板和探索器會以繁體中文"
        "重新顯示。在 Colab 中開啟時，請先執行 `%env JAX_COURSE_LANGUAGE=zh-Hant`"
        "（JupyterLab 會依本頁自動辨識）。JupyterLab 本身的介面預設是英文，課程的"
        "安裝指令碼已裝好兩個中文語言套件，但涵蓋的範圍不同：簡體中文套件（Settings"
        " → Language → 中文（簡體，中國））翻譯了 JupyterLab 約 2,100 條介面文字，"
        "幾乎是全部；繁體中文套件（中文（繁體，臺灣））只翻譯了其中約 500 條，選擇它"
        "之後選單列仍是英文，選單也中英夾雜（例如「重新啟動核心 and 執行所有"
        "儲存格」）。"
    ),
}
#: An untitled note box is headed "Note" in English (by Sphinx, and by
#: JupyterLab's MyST renderer): an edition gives it its own title.
NOTE_TITLE = {"zh-Hans": "注意", "zh-Hant": "注意"}
_UNTITLED_NOTE = re.compile(r"^([ \t]*)(:{3,}|`{3,})\{note\}[ \t]*$", re.M)


def title_notes(text: str, language: str) -> str:
    """Return Markdown ``text`` with each untitled note box titled in ``language``."""
    return _UNTITLED_NOTE.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{{admonition}} {NOTE_TITLE[language]}\n"
                  f"{m.group(1)}:class: note", text)


def _translations(po, language: str, overrides=None
                  ) -> dict[tuple[str | None, str], str]:
    """Return (context, English) -> the text in ``language``.

    A zh-Hant text is the reviewed override where one is in force, else the
    generated one (under :data:`.overrides.STALE_NOTE` for a Markdown cell
    whose override is stale).
    """
    current, stale = overridden(overrides)
    done = {}
    for e in po:
        if e.obsolete or not e.msgstr or "fuzzy" in e.flags:
            continue
        key = (e.msgctxt, e.msgstr)
        if language == "zh-Hans":
            text = e.msgstr
        elif key in current:
            text = current[key]
        else:
            text = to_hant(e.msgstr)
            if key in stale and e.msgctxt is None:
                text = f"{STALE_NOTE}\n\n{text}"
        done[(e.msgctxt, e.msgid)] = text
    return done


def _translate_code(source: str, done: dict) -> str:
    edits = []
    for tok, text in _comments(source):
        new = done.get((COMMENT, text))
        if new is not None:
            edits.append((tok.start, tok.end, "# " + new))
    return splice(source, edits)


_LINK = re.compile(r"\]\(([^)\s#:]+)((?:#[^)\s]*)?)\)")


@functools.cache
def _twins() -> dict[tuple[str, str], str]:
    """(English or Chinese master, language) -> the page a reader of it gets."""
    from .. import course

    found = {}
    for family in families():
        for master in family.masters:
            for language in EDITIONS:
                found[(master, language)] = edition_path(master, language)
    # Chapter 9 is Chinese only: each script has its own notebook.
    chinese = [t for t in course.topics() if t.language != "en"]
    for topic in chinese:
        for twin in chinese:
            for kind in ("chapter", "exercises", "student"):
                found[(getattr(topic, kind), twin.language)] = getattr(twin, kind)
    return found


def _relink(text: str, master: str, language: str) -> str:
    """Point ``text``'s relative links (written from ``master``) at this edition."""
    here = Path(master).parent
    there = Path(edition_path(master, language)).parent

    def move(match: re.Match) -> str:
        target = Path(os.path.normpath(here / match.group(1))).as_posix()
        target = _twins().get((target, language), target)
        return f"]({os.path.relpath(target, there)}{match.group(2)})"

    return _LINK.sub(move, text)


#: The widget fields a reader sees as text (a button's label, a tooltip, a
#: dropdown's options, an HTML widget's value).
_WIDGET_TEXT = ("description", "tooltip", "placeholder", "value", "_options_labels")
#: A phrase shorter than this is replaced inside HTML only where it is the
#: whole text of a widget: "Check" is a button, not a word of a sentence.
_SHORTEST_PHRASE = 12


@functools.cache
def _widget_phrases(language: str) -> tuple[tuple[str, str], ...]:
    """Return (English, translation) for the fixed texts of panels and explorers.

    The messages without fields (:mod:`jaxcourse.messages`), longest first.
    """
    from ..messages import MESSAGES

    english, ours = MESSAGES["en"], MESSAGES[language]
    pairs = {text: ours[key] for key, text in english.items()
             if "{" not in text and key in ours and ours[key] != text}
    return tuple(sorted(pairs.items(), key=lambda pair: -len(pair[0])))


_FIELD = re.compile(r"\{(\w+)(?:[:!][^{}]*)?\}")


@functools.cache
def _widget_templates(language: str) -> tuple[tuple[re.Pattern, str], ...]:
    """Return (pattern, translation) for the messages with fields, as HTML shows them.

    A field matches any text; a message needs a fixed part of some length to be
    recognised (a bare "{n} {unit}" is never replaced). Longest first.
    """
    import html as html_module

    from ..messages import MESSAGES

    english, ours = MESSAGES["en"], MESSAGES[language]
    found = []
    for key, template in english.items():
        fields = _FIELD.findall(template)
        fixed = _FIELD.sub("", template)
        if (not fields or key not in ours or len(fixed.strip()) < _SHORTEST_PHRASE
                or set(_FIELD.findall(ours[key])) - set(fields)
                or "{{" in template):
            continue
        pattern, seen, last = "", set(), 0
        for m in _FIELD.finditer(template):
            pattern += re.escape(html_module.escape(template[last:m.start()]))
            name = m.group(1)
            pattern += f"(?P={name})" if name in seen else f"(?P<{name}>[^<]+?)"
            seen.add(name)
            last = m.end()
        pattern += re.escape(html_module.escape(template[last:]))
        found.append((len(fixed), re.compile(pattern), html_module.escape(ours[key])))
    found.sort(key=lambda item: -item[0])
    return tuple((pattern, translation) for _, pattern, translation in found)


def _fill(match: re.Match, translation: str) -> str:
    return _FIELD.sub(lambda m: match.group(m.group(1)), translation)


def translate_widgets(metadata: dict, done: dict, language: str) -> dict:
    """Return the notebook's stored widget state with its fixed texts in ``language``.

    A page of the book draws the panels and the explorers from this state (a
    still picture, the kernel is gone), which the master stored in English.
    Whole texts and, inside HTML, the longer phrases (the panel's and
    explorers' fixed messages and the exercise texts, from ``done``) are
    replaced, and the messages with values in them (a score, a measurement)
    where their fixed words are found around the values.
    An HTML value that changed says its language (``<div lang=...>``).
    """
    import html as html_module

    state = metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state")
    if not state:
        return metadata
    phrases = dict(_widget_phrases(language))
    phrases.update({text: new for (context, text), new in done.items()
                    if context == EXERCISE and new})
    whole = dict(phrases)
    # A long phrase anywhere in HTML; a short one as an element's whole text
    # (a table's heading: <th>process</th>).
    inside = [(html_module.escape(old), html_module.escape(new))
              if len(old) >= _SHORTEST_PHRASE else
              (f">{html_module.escape(old)}<", f">{html_module.escape(new)}<")
              for old, new in sorted(phrases.items(), key=lambda p: -len(p[0]))]

    def text(value: str) -> str:
        if value in whole:
            return whole[value]
        if "<" not in value:
            return value
        new = value
        for old, ours in inside:
            new = new.replace(old, ours)
        for pattern, translation in _widget_templates(language):
            new = pattern.sub(lambda m, t=translation: _fill(m, t), new)
        if new != value:
            new = new.replace('lang="en"', f'lang="{language}"')
        return new

    out = copy.deepcopy(metadata)
    models = out["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    for model in models.values():
        fields = model.get("state", {})
        for name in _WIDGET_TEXT:
            value = fields.get(name)
            if isinstance(value, str):
                fields[name] = text(value)
            elif isinstance(value, list):
                fields[name] = [text(v) if isinstance(v, str) else v for v in value]
    return out


def edition(master: nbformat.NotebookNode, po, language: str, path: str | None = None,
            overrides=None) -> nbformat.NotebookNode:
    """Return ``master`` in ``language``: prose from ``po``, code and outputs its own.

    ``path`` (the master's, relative to the root) lets relative links lead to
    the pages of the same edition; ``overrides`` (:mod:`.overrides`) are the
    reviewed zh-Hant corrections.
    """
    done = _translations(po, language, overrides)
    nb = copy.deepcopy(master)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            new = done.get((None, cell.source))
            cell.source = new if new is not None else (
                f"{UNTRANSLATED[language]}\n\n{cell.source}")
            if path is not None:
                cell.source = _relink(cell.source, path, language)
            cell.source = title_notes(cell.source, language)
        elif cell.cell_type == "code":
            cell.source = _translate_code(cell.source, done)
            cell.outputs = [_translate_figure(o, done, language)
                            for o in cell.get("outputs", [])]
    if nb.cells and nb.cells[0].cell_type == "markdown":
        nb.cells[0].source += EDITION_NOTE[language]
    nb.metadata = translate_widgets(nb.metadata, done, language)
    nb.metadata["jaxcourse"] = {"language": language}
    return nb


def code_of(nb: nbformat.NotebookNode) -> list[str]:
    """Return each code cell's source without its comments (what editions share)."""
    return [splice(cell.source, [(tok.start, tok.end, "")
                                 for tok, _ in _comments(cell.source)])
            for cell in nb.cells if cell.cell_type == "code"]


def _texts_table(family: Family, po, language: str, overrides=None
                 ) -> tuple[str, str]:
    """Where the topic's table of exercise texts in ``language`` goes, and its JSON.

    The exercise panels of an edition read it (:func:`registry.get`): each
    English text to its translation, and each shown solution to the same code
    with its comments translated.
    """
    from .. import course
    from ..exercises.checking.registry import _REGISTRY

    done = _translations(po, language, overrides)
    table = {}
    for exercise_id, _, texts in _exercise_texts(family):
        for text in texts:
            if (EXERCISE, text) in done:
                table[text] = done[(EXERCISE, text)]
        solution = _REGISTRY[exercise_id].solution_source()
        shown = _translate_code(solution, done)
        if shown != solution:
            table[solution] = shown
    module = Path(course.load(family.topic).__file__).resolve()
    path = module.with_name(f"{family.topic}_{EDITIONS[language]}_texts.json")
    text = json.dumps(table, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    return path.relative_to(ROOT).as_posix(), text


def _render(family: Family, root: Path = ROOT) -> dict[str, str]:
    """Every file ``family`` owns (its catalog, its editions) and its text."""
    po = merged(family, root)
    files = {str(family.catalog.relative_to(ROOT)): _text(po)}
    overrides = merged_overrides(family, po, root)
    if overrides is not None:
        where = override_path(family, root).relative_to(root).as_posix()
        files[where] = _text(overrides)
    for master in family.masters:
        nb = nbformat.read(root / master, as_version=4)
        for language in EDITIONS:
            text = nbformat.writes(edition(nb, po, language, master, overrides)) + "\n"
            files[edition_path(master, language)] = text
    if family.topic:
        for language in EDITIONS:
            path, text = _texts_table(family, po, language, overrides)
            files[path] = text
    return files


#: Pages written in Simplified Chinese, and their generated Traditional twins.
PAGES = (("book/zh_hans/index.md", "book/zh_hant/index.md"),)
#: Where a Traditional page points elsewhere than its Simplified source: chapter 9
#: and its glossary have a Traditional master.
HANT_LINKS = (("../09_dp_zh_hans)", "../09_dp_zh)"),
              ("../glossary_zh_hans)", "../glossary_zh)"))


def _pages(root: Path = ROOT) -> dict[str, str]:
    files = {}
    for source, target in PAGES:
        text = to_hant((root / source).read_text(encoding="utf-8"))
        for old, new in HANT_LINKS:
            text = text.replace(old, new)
        files[target] = text
    return files


TOC_FILE = "_toc.yml"
TOC_BEGIN = "  # >>> the Chinese editions: written by python -m jaxcourse.i18n\n"
TOC_END = "  # <<< the Chinese editions\n"
#: Each edition's parts in the book's table of contents: caption, and which
#: notebook of each family goes there ("chapter", "student", or "worked": the
#: solution notebook).
TOC_PARTS = {
    "zh-Hans": (("简体中文版", "chapter"), ("练习（简体中文）", "student"),
                ("解答（简体中文）", "worked")),
    "zh-Hant": (("繁體中文版", "chapter"), ("練習（繁體中文）", "student"),
                ("解答（繁體中文）", "worked")),
}


def _title(nb: nbformat.NotebookNode) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def _toc(root: Path, files: dict[str, str]) -> str:
    text = (root / TOC_FILE).read_text(encoding="utf-8")
    block = _toc_block_from(files, root)
    if TOC_BEGIN in text and TOC_END in text:
        head, rest = text.split(TOC_BEGIN, 1)
        _, tail = rest.split(TOC_END, 1)
        return head + block + tail
    return text.rstrip("\n") + "\n" + block


def _toc_block_from(files: dict[str, str], root: Path) -> str:
    # Titles come from the editions about to be written, not the stored ones.
    from .. import course

    lines = [TOC_BEGIN]
    english = [t for t in course.topics() if t.language == "en"]
    for language, parts in TOC_PARTS.items():
        for caption, kind in parts:
            lines.append(f"  - caption: {caption}\n    chapters:\n")
            if kind == "chapter":
                index = Path(edition_path("book/index.md", language)).with_suffix("")
                lines.append(f"      - file: {index}\n")
            for topic in english:
                master = {"chapter": topic.chapter, "worked": topic.exercises,
                          "student": topic.student}[kind]
                # A chapter's number is its file's ("10_fast_step"), not its
                # place among the English ones: chapter 9 is Chinese.
                number = int(Path(topic.chapter).stem.split("_")[0])
                path = edition_path(master, language)
                nb = nbformat.reads(files[path], as_version=4)
                # The sidebar shows a title as plain text: no code marks.
                title = _title(nb).replace('"', "'").replace("`", "")
                if kind == "chapter":
                    title = f"{number}. {title}"
                lines.append(f"      - file: {Path(path).with_suffix('')}\n"
                             f"        title: \"{title}\"\n")
    lines.append(TOC_END)
    return "".join(lines)


def _everything(root: Path = ROOT) -> dict[str, str]:
    files = _pages(root)
    for family in families():
        files.update(_render(family, root))
    files[TOC_FILE] = _toc(root, files)
    return files


def out_of_date(root: Path = ROOT) -> list[str]:
    """Return the catalogs and editions that differ from what :func:`write` writes."""
    stale = []
    for path, text in _everything(root).items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def write(root: Path = ROOT) -> list[str]:
    """Merge the English into the catalogs, write the editions; return what changed."""
    changed = []
    for path, text in _everything(root).items():
        target = root / path
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed
