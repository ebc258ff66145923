"""Chinese editions of the English chapters and their exercises, from gettext catalogs.

Usage::

    python -m jaxcourse.i18n             # merge the English in, write the editions
    python -m jaxcourse.i18n --check     # exit 1 if a catalog or edition is stale
    python -m jaxcourse.i18n --coverage  # translated, stale, missing per catalog
    python -m jaxcourse.i18n --lint      # translations keep code, math and links

One translation, two scripts. The Simplified-Chinese text is written by people
in one gettext catalog per notebook family (``book/locales/zh_Hans/LC_MESSAGES/``:
``01_mlp.po`` for the chapter, ``01_mlp_exercises.po`` for its solution and
student notebooks), which Poedit, Weblate, Babel and ``sphinx-intl`` read. The
Traditional-Chinese (Taiwan) text is generated from it: the course's term table
(:data:`TERMS_FILE`, mainland term, Taiwan term) first, then OpenCC's
Simplified-to-Taiwan phrase conversion (``s2twp``), the reverse of chapter 8's
pipeline (:mod:`jaxcourse.zh_hans`).

======================================  ===========================================
master (English)                        generated editions (and ``zh_hant/``)
======================================  ===========================================
``book/01_mlp.ipynb``                   ``book/zh_hans/01_mlp.ipynb``
``solutions/01_mlp_exercises.ipynb``    ``solutions/zh_hans/01_mlp_exercises.ipynb``
``exercises/01_mlp_exercises.ipynb``    ``exercises/zh_hans/01_mlp_exercises.ipynb``
======================================  ===========================================

An entry is one Markdown cell (its whole text is the ``msgid``), one code
comment (``msgctxt "comment"``) or one label of a figure (``msgctxt "figure"``).
Each entry lists the cells it comes from (``#: book/01_mlp.ipynb:<cell id>``).
When the English of a cell changes, the merge keeps the old translation beside
the new text, marked ``fuzzy`` with the old English as ``#| msgid``: a stale
entry. Until a translator updates it and removes the mark, the edition shows
that cell in English, under a line saying it is not translated yet; a stale
translation is never shown.

The editions' code is the master's, character for character, except comments;
their outputs are the master's, which nbval proves on the English notebook, so
the editions are not executed again (:func:`code_of` is what the tests compare).
A figure is the one exception: where the master's output keeps the figure's SVG
(``scripts/run_notebook.py`` stores it), the edition shows that SVG with its
labels translated and drawn in the edition's CJK font, at the PNG's size.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import functools
import html
import io
import json
import os
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .zh_hans import terms, through_table

__all__ = [
    "CATALOG_DIR",
    "EDITIONS",
    "TERMS_FILE",
    "Family",
    "code_of",
    "coverage",
    "edition_path",
    "families",
    "lint",
    "main",
    "out_of_date",
    "to_hant",
    "write",
]

ROOT = Path(__file__).resolve().parents[1]
CATALOG_DIR = ROOT / "book" / "locales" / "zh_Hans" / "LC_MESSAGES"
#: Mainland term -> Taiwan term, applied before OpenCC's ``s2twp``.
TERMS_FILE = ROOT / "book" / "glossary_zh_hans_terms.tsv"
#: Language tag -> the folder of its edition beside each master.
EDITIONS = {"zh-Hans": "zh_hans", "zh-Hant": "zh_hant"}
COMMENT = "comment"
EXERCISE = "exercise"
FIGURE = "figure"

#: Shown under a cell whose translation is missing or stale.
UNTRANSLATED = {
    "zh-Hans": "*（本段尚未翻译，以下是英文原文。）*",
    "zh-Hant": "*（本段尚未翻譯，以下是英文原文。）*",
}
#: Added to the first cell of every edition: where it comes from.
EDITION_NOTE = {
    "zh-Hans": (
        "\n\n> 本页是英文版的简体中文版。代码和输出与英文版完全相同（输出已在英文版上"
        "重新运行验证），只有图中的文字译成了中文；译文来自 `book/locales/zh_Hans/` "
        "的消息目录（`python -m jaxcourse.i18n`）。在 Colab 中打开时，请先运行 "
        "`%env JAX_COURSE_LANGUAGE=zh-Hans`，练习面板才会使用简体中文"
        "（JupyterLab 会自动识别）。"
    ),
    "zh-Hant": (
        "\n\n> 本頁是英文版的繁體中文（臺灣）版，由簡體中文譯文經 OpenCC 與課程的"
        "術語表轉換而成。程式碼和輸出與英文版完全相同（輸出已在英文版上重新執行"
        "驗證；`python -m jaxcourse.i18n`），只有圖中的文字譯成了中文。在 Colab "
        "中開啟時，請先執行 `%env JAX_COURSE_LANGUAGE=zh-Hant`，練習面板才會使用"
        "繁體中文（JupyterLab 會自動辨識）。"
    ),
}

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Family:
    """One catalog and the English notebooks it translates."""

    name: str
    masters: tuple[str, ...]
    #: The topic whose exercises' texts (titles, test descriptions, hints,
    #: mistake messages) this catalog also translates; "" for a chapter.
    topic: str = ""

    @property
    def catalog(self) -> Path:
        """The Simplified-Chinese catalog's path."""
        return CATALOG_DIR / f"{self.name}.po"


def families() -> list[Family]:
    """Return every English chapter's two families: the chapter, its exercises."""
    from . import course

    found = []
    for topic in course.topics():
        if topic.language != "en":
            continue
        found.append(Family(Path(topic.chapter).stem, (topic.chapter,)))
        found.append(Family(Path(topic.exercises).stem,
                            (topic.exercises, topic.student), topic.key))
    return found


def edition_path(master: str, language: str) -> str:
    """Return the edition of ``master`` (relative to the root) in ``language``."""
    path = Path(master)
    return str(path.parent / EDITIONS[language] / path.name)


# ---- what a notebook says: the entries -------------------------------------


def _comments(source: str) -> Iterator[tuple[tokenize.TokenInfo, str]]:
    """Yield each comment token of Python ``source`` and its text after ``#``."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            text = tok.string[1:].strip()
            # Tool directives, shebangs, a batch script's #SBATCH lines and
            # nbgrader's markers ("### BEGIN SOLUTION", "YOUR CODE HERE") are
            # read by tools: they stay as written.
            tool = r"(noqa|type:|fmt:|pragma|!|%%|NBVAL|#|YOUR CODE HERE|SBATCH)"
            if text and not re.match(tool, text) and tok.string[:7] != "#SBATCH":
                yield tok, text


@dataclass
class _Entry:
    msgid: str
    context: str | None
    occurrences: list[tuple[str, str]] = field(default_factory=list)


def _entries(family: Family, root: Path = ROOT) -> list[_Entry]:
    entries: dict[tuple[str | None, str], _Entry] = {}
    for master in family.masters:
        nb = nbformat.read(root / master, as_version=4)
        for cell in nb.cells:
            found: list[tuple[str | None, str]] = []
            if cell.cell_type == "markdown" and cell.source.strip():
                found.append((None, cell.source))
            elif cell.cell_type == "code":
                found.extend((COMMENT, text) for _, text in _comments(cell.source))
                for output in cell.get("outputs", []):
                    found.extend((FIGURE, text) for text in _figure_texts(output))
            for context, text in found:
                entry = entries.setdefault((context, text), _Entry(text, context))
                place = (master, cell.get("id", ""))
                if place not in entry.occurrences:
                    entry.occurrences.append(place)
    for exercise_id, module, texts in _exercise_texts(family):
        for text in texts:
            entry = entries.setdefault((EXERCISE, text), _Entry(text, EXERCISE))
            place = (module, exercise_id)
            if place not in entry.occurrences:
                entry.occurrences.append(place)
    return list(entries.values())


# A label as matplotlib writes it with svg.fonttype "none" (mathtext, drawn as
# one <tspan> per glyph, is not matched: it stays as drawn).
_SVG_TEXT = re.compile(r"(<text\b[^>]*>)([^<]*)(</text>)")
_SVG_FONT = re.compile(r"font-family:[^;\"]*")
#: The fonts an edition's figure asks for, glyph shapes of its script first.
FIGURE_FONTS = {
    "zh-Hans": "'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', "
               "'Microsoft YaHei', 'DejaVu Sans', sans-serif",
    "zh-Hant": "'Noto Sans CJK TC', 'Source Han Sans TC', 'PingFang TC', "
               "'Microsoft JhengHei', 'DejaVu Sans', sans-serif",
}


def _figure_svg(output: dict) -> str | None:
    from .plotting import FIGURE_TEXT_KEY, unpack_svg

    packed = output.get("metadata", {}).get(FIGURE_TEXT_KEY)
    return unpack_svg(packed) if packed else None


def _figure_texts(output: dict) -> list[str]:
    """Return the labels of an output's figure that have words to translate."""
    svg = _figure_svg(output)
    if svg is None:
        return []
    texts = (html.unescape(m.group(2)) for m in _SVG_TEXT.finditer(svg))
    # Tick labels and other numbers stay as they are.
    return list(dict.fromkeys(t for t in texts if re.search(r"[A-Za-z]{2}", t)))


def _translate_figure(output: dict, done: dict, language: str) -> dict:
    """Return ``output`` with its figure as an SVG whose labels are in ``language``.

    Labels without a translation stay English. The SVG is shown at the size of
    the PNG it replaces; its text asks for the edition's CJK fonts, so a browser
    draws the script's own glyph shapes.
    """
    svg = _figure_svg(output)
    if svg is None:
        return output

    def label(match: re.Match) -> str:
        opening, text, closing = match.groups()
        new = done.get((FIGURE, html.unescape(text)))
        opening = _SVG_FONT.sub("font-family: " + FIGURE_FONTS[language], opening)
        return opening + (html.escape(new, quote=False) if new else text) + closing

    svg = _SVG_TEXT.sub(label, svg)
    start = svg.index("<svg")
    end = svg.index(">", start)
    tag = svg[start:end]
    shown = output.get("metadata", {}).get("image/png", {})
    for name in ("width", "height"):
        if name in shown:
            tag = re.sub(rf'\b{name}="[^"]*"', f'{name}="{shown[name]}px"', tag)
    # From <svg> on, without the XML prolog: a notebook's SVG output is an element.
    svg = tag + f' xml:lang="{language}"' + svg[end:]
    out = copy.deepcopy(output)
    out["data"] = {k: v for k, v in out["data"].items() if not k.startswith("image/")}
    out["data"]["image/svg+xml"] = svg
    out["metadata"] = {}
    return out


def _exercise_texts(family: Family) -> list[tuple[str, str, list[str]]]:
    """Return (exercise id, module path, texts but the shown solution) per exercise."""
    if not family.topic:
        return []
    from . import course
    from .exercises.editions import texts_of
    from .exercises.registry import _REGISTRY

    module = course.load(family.topic)
    where = Path(module.__file__).resolve().relative_to(ROOT).as_posix()
    found = []
    for exercise_id, exercise in list(_REGISTRY.items()):
        if exercise_id.split(".", 1)[0] == family.topic:
            *texts, _solution = texts_of(exercise)
            found.append((exercise_id, where, [t for t in texts if t.strip()]))
    return found


def _texts_table(family: Family, po, language: str) -> tuple[str, str]:
    """Where the topic's table of exercise texts in ``language`` goes, and its JSON.

    The exercise panels of an edition read it (:func:`registry.get`): each
    English text to its translation, and each shown solution to the same code
    with its comments translated.
    """
    from . import course
    from .exercises.registry import _REGISTRY

    done = _translations(po, language)
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


# ---- the catalogs ------------------------------------------------------------


def _polib():
    try:
        import polib
    except ImportError as err:  # the editions' generator only, never the course
        raise ImportError(
            "the translation tools need polib: pip install the pin in requirements.txt"
        ) from err
    return polib


def _header(language: str = "zh_Hans") -> dict[str, str]:
    return {
        "Project-Id-Version": "jax-hands-on",
        "Language": language,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }


def _read(path: Path):
    polib = _polib()
    if path.is_file():
        return polib.pofile(str(path), wrapwidth=78)
    return polib.POFile(wrapwidth=78)


def merged(family: Family, root: Path = ROOT):
    """Return ``family``'s catalog merged with its English notebooks, as a POFile.

    Kept: every translation whose English is unchanged. Stale: a translation
    whose cell (by id) now has other English; it moves to the new text, marked
    ``fuzzy``, with the English it translated as ``previous_msgid``. Obsolete
    (``#~``): translations whose English is gone.
    """
    polib = _polib()
    old = _read(root / family.catalog.relative_to(ROOT))
    live = [e for e in old if not e.obsolete]
    # An obsolete entry whose English is back is revived as it was (as msgmerge
    # does); a live entry of the same English wins.
    by_key = {(e.msgctxt, e.msgid): e for e in old if e.obsolete}
    by_key.update({(e.msgctxt, e.msgid): e for e in live})
    by_place: dict[tuple[str | None, str], list] = {}
    # Obsolete entries too: their English is gone, their cell may still be there.
    for e in old:
        for path, line in e.occurrences:
            by_place.setdefault((e.msgctxt, _place(path, line)), []).append(e)
    new = polib.POFile(wrapwidth=78)
    new.metadata = _header()
    used = set()
    current = _entries(family, root)
    current_keys = {(e.context, e.msgid) for e in current}
    for entry in current:
        key = (entry.context, entry.msgid)
        item = polib.POEntry(msgid=entry.msgid, msgstr="", msgctxt=entry.context,
                             occurrences=list(entry.occurrences))
        previous = by_key.get(key)
        if previous is not None and previous.msgstr:
            item.msgstr = previous.msgstr
            item.flags = list(previous.flags)
            item.previous_msgid = previous.previous_msgid
            item.tcomment = previous.tcomment
            used.add(id(previous))
        else:
            # The same cell's old translation, if its English is gone.
            candidates = [e for path, line in entry.occurrences
                          for e in by_place.get((entry.context, _place(path, line)), [])
                          if e.msgstr and id(e) not in used
                          and (e.msgctxt, e.msgid) not in current_keys]
            if not candidates:
                # As msgmerge does: the closest gone English, if close enough
                # (an obsolete entry has lost the cell it came from).
                gone = [e for e in old if e.msgstr and id(e) not in used
                        and e.msgctxt == entry.context
                        and (e.msgctxt, e.msgid) not in current_keys]
                candidates = [e for e in gone if difflib.SequenceMatcher(
                    None, e.msgid, entry.msgid).ratio() >= 0.6]
            if candidates:
                best = max(candidates, key=lambda e: difflib.SequenceMatcher(
                    None, e.msgid, entry.msgid).ratio())
                item.msgstr = best.msgstr
                item.flags = ["fuzzy"]
                item.previous_msgid = best.previous_msgid or best.msgid
                item.tcomment = best.tcomment
                used.add(id(best))
        new.append(item)
    for e in list(old):
        if e.msgstr and id(e) not in used:
            e.obsolete = True
            new.append(e)
    return new


def _place(path: str, line: str) -> str:
    # polib reads "book/x.ipynb:<cell id>" as a path with no line number.
    return f"{path}:{line}" if line else path


def _text(po) -> str:
    return str(po) + "\n" if not str(po).endswith("\n") else str(po)


# ---- the editions ------------------------------------------------------------


@functools.cache
def _s2twp():
    try:
        import opencc
    except ImportError as err:
        raise ImportError(
            "the zh-Hant edition needs OpenCC: pip install the pin in requirements.txt"
        ) from err
    return opencc.OpenCC("s2twp")


def to_hant(text: str) -> str:
    """Convert Simplified-Chinese (mainland) text to Traditional (Taiwan).

    The term table's entries become placeholders, OpenCC's ``s2twp`` converts
    the rest, then the placeholders become the table's Taiwan terms. Code spans
    and fenced code are left as they are.
    """
    if not _CJK.search(text):
        return text
    parts = re.split(r"(```.*?```|`(?:[^`\n]|\n(?!\s*\n))*`)", text, flags=re.S)
    table = terms(TERMS_FILE)
    out = []
    for k, part in enumerate(parts):
        if k % 2 or not _CJK.search(part):
            out.append(part)
            continue
        out.append(through_table(part, table, _s2twp().convert))
    return "".join(out)


def _translations(po, language: str) -> dict[tuple[str | None, str], str]:
    done = {}
    for e in po:
        if e.obsolete or not e.msgstr or "fuzzy" in e.flags:
            continue
        text = e.msgstr if language == "zh-Hans" else to_hant(e.msgstr)
        done[(e.msgctxt, e.msgid)] = text
    return done


def _translate_code(source: str, done: dict) -> str:
    edits = []
    for tok, text in _comments(source):
        new = done.get((COMMENT, text))
        if new is not None:
            edits.append((tok.start, tok.end, "# " + new))
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for (srow, scol), (erow, ecol), new in reversed(edits):
        start, end = offsets[srow - 1] + scol, offsets[erow - 1] + ecol
        source = source[:start] + new + source[end:]
    return source


_LINK = re.compile(r"\]\(([^)\s#:]+)((?:#[^)\s]*)?)\)")


@functools.cache
def _twins() -> dict[tuple[str, str], str]:
    """(English or Chinese master, language) -> the page a reader of it gets."""
    from . import course

    found = {}
    for family in families():
        for master in family.masters:
            for language in EDITIONS:
                found[(master, language)] = edition_path(master, language)
    # Chapter 8 is Chinese only: each script has its own notebook.
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


def edition(master: nbformat.NotebookNode, po, language: str, path: str | None = None
            ) -> nbformat.NotebookNode:
    """Return ``master`` in ``language``: prose from ``po``, code and outputs its own.

    ``path`` (the master's, relative to the root) lets relative links lead to
    the pages of the same edition.
    """
    done = _translations(po, language)
    nb = copy.deepcopy(master)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            new = done.get((None, cell.source))
            cell.source = new if new is not None else (
                f"{UNTRANSLATED[language]}\n\n{cell.source}")
            if path is not None:
                cell.source = _relink(cell.source, path, language)
        elif cell.cell_type == "code":
            cell.source = _translate_code(cell.source, done)
            cell.outputs = [_translate_figure(o, done, language)
                            for o in cell.get("outputs", [])]
    if nb.cells and nb.cells[0].cell_type == "markdown":
        nb.cells[0].source += EDITION_NOTE[language]
    nb.metadata["jaxcourse"] = {"language": language}
    return nb


def code_of(nb: nbformat.NotebookNode) -> list[str]:
    """Return each code cell's source without its comments (what editions share)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = cell.source
        for tok, _ in reversed(list(_comments(source))):
            lines = source.splitlines(keepends=True)
            row, col = tok.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + line[tok.end[1]:]
            source = "".join(lines)
        out.append(source)
    return out


def _render(family: Family, root: Path = ROOT) -> dict[str, str]:
    """Every file ``family`` owns (its catalog, its editions) and its text."""
    po = merged(family, root)
    files = {str(family.catalog.relative_to(ROOT)): _text(po)}
    for master in family.masters:
        nb = nbformat.read(root / master, as_version=4)
        for language in EDITIONS:
            text = nbformat.writes(edition(nb, po, language, master)) + "\n"
            files[edition_path(master, language)] = text
    if family.topic:
        for language in EDITIONS:
            path, text = _texts_table(family, po, language)
            files[path] = text
    return files


#: Pages written in Simplified Chinese, and their generated Traditional twins.
PAGES = (("book/zh_hans/index.md", "book/zh_hant/index.md"),)
#: Where a Traditional page points elsewhere than its Simplified source: chapter 8
#: and its glossary have a Traditional master.
HANT_LINKS = (("../08_dp_zh_hans)", "../08_dp_zh)"),
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
    from . import course

    lines = [TOC_BEGIN]
    english = [t for t in course.topics() if t.language == "en"]
    for language, parts in TOC_PARTS.items():
        for caption, kind in parts:
            lines.append(f"  - caption: {caption}\n    chapters:\n")
            if kind == "chapter":
                index = Path(edition_path("book/index.md", language)).with_suffix("")
                lines.append(f"      - file: {index}\n")
            for number, topic in enumerate(english, start=1):
                master = {"chapter": topic.chapter, "worked": topic.exercises,
                          "student": topic.student}[kind]
                path = edition_path(master, language)
                nb = nbformat.reads(files[path], as_version=4)
                title = _title(nb).replace('"', "'")
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


# ---- reports -----------------------------------------------------------------


def coverage(root: Path = ROOT) -> list[dict]:
    """Return, per catalog and language, its cells translated, stale and missing."""
    rows = []
    for family in families():
        po = _read(root / family.catalog.relative_to(ROOT))
        cells = [e for e in po if not e.obsolete and e.msgctxt is None]
        comments = [e for e in po if not e.obsolete and e.msgctxt == COMMENT]
        texts = [e for e in po if not e.obsolete and e.msgctxt == EXERCISE]
        labels = [e for e in po if not e.obsolete and e.msgctxt == FIGURE]
        stale = sum(1 for e in cells if "fuzzy" in e.flags)
        done = _done(cells)
        for language in EDITIONS:  # one translation: both scripts cover the same
            rows.append({
                "catalog": family.name, "language": language, "cells": len(cells),
                "translated": done, "stale": stale,
                "missing": len(cells) - done - stale,
                "percent": 100.0 * done / len(cells) if cells else 100.0,
                "comments": f"{sum(1 for e in comments if e.msgstr)}/{len(comments)}",
                "exercise texts": (f"{_done(texts)}/{len(texts)}" if family.topic
                                   else ""),
                "figure labels": f"{_done(labels)}/{len(labels)}" if labels else "",
            })
    return rows


def _done(entries: list) -> int:
    """Count the entries translated and not stale."""
    return sum(1 for e in entries if e.msgstr and "fuzzy" not in e.flags)


def coverage_text(rows: list[dict]) -> str:
    """Return the coverage report as a fixed-width table."""
    lines = [f"{'catalog':28} {'language':8} {'cells':>5} {'done':>5} {'stale':>5} "
             f"{'missing':>7} {'%':>6} {'comments':>9} {'exercise texts':>14} "
             f"{'figure labels':>13}"]
    for r in rows:
        lines.append(f"{r['catalog']:28} {r['language']:8} {r['cells']:5d} "
                     f"{r['translated']:5d} {r['stale']:5d} {r['missing']:7d} "
                     f"{r['percent']:6.1f} {r['comments']:>9} "
                     f"{r['exercise texts']:>14} {r['figure labels']:>13}")
    return "\n".join(lines)


# A code span or inline math may wrap onto the next line (as CommonMark allows),
# never across a blank line; a translation may wrap it elsewhere.
_KEEP = {
    "code spans": re.compile(r"`(?:[^`\n]|\n(?!\s*\n))+`"),
    "math": re.compile(r"\$\$.+?\$\$|\$(?:[^$\n]|\n(?!\s*\n))+\$", re.S),
    "link targets": re.compile(r"\]\(([^)\s]+)\)"),
    "labels": re.compile(r"^\(([\w-]+)\)=", re.M),
    "fences": re.compile(r"^\s*(```|:::)", re.M),
    "html tags": re.compile(r"</?[a-zA-Z][^>]*>"),
}
_HEADING = re.compile(r"^(#{1,6}) ", re.M)


def lint_entry(msgid: str, msgstr: str) -> list[str]:
    """Return what ``msgstr`` lost of ``msgid``'s code, math, links and headings."""
    problems = []
    for what, pattern in _KEEP.items():
        want = sorted(" ".join((m.group(1) if m.groups() else m.group(0)).split())
                      for m in pattern.finditer(msgid))
        got = sorted(" ".join((m.group(1) if m.groups() else m.group(0)).split())
                     for m in pattern.finditer(msgstr))
        if want != got:
            lost = sorted(set(want) - set(got))
            added = sorted(set(got) - set(want))
            detail = "; ".join(filter(None, [lost and f"lost {lost[:3]}",
                                             added and f"added {added[:3]}"]))
            problems.append(f"{what} differ ({detail or 'counts differ'})")
    if [m.group(1) for m in _HEADING.finditer(msgid)] != [
            m.group(1) for m in _HEADING.finditer(msgstr)]:
        problems.append("headings differ in number or level")
    return problems


def lint(root: Path = ROOT, names: list[str] | None = None) -> list[str]:
    """Return a line per translation that lost code, math, links or headings."""
    found = []
    for family in families():
        if names and family.name not in names:
            continue
        po = _read(root / family.catalog.relative_to(ROOT))
        for e in po:
            if e.obsolete or not e.msgstr or e.msgctxt in (COMMENT, FIGURE):
                continue
            for problem in lint_entry(e.msgid, e.msgstr):
                where = e.occurrences[0] if e.occurrences else ("?", "?")
                found.append(f"{family.name}.po {where[0]}:{where[1]}: {problem}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true",
                       help="exit 1 if a catalog or an edition is out of date")
    group.add_argument("--coverage", action="store_true",
                       help="print translated, stale and missing entries per catalog")
    group.add_argument("--lint", nargs="*", metavar="CATALOG",
                       help="check that translations keep code, math, links, headings")
    args = parser.parse_args(argv)
    if args.check:
        stale = out_of_date()
        for name in stale:
            print(f"out of date: {name} (run python -m jaxcourse.i18n)")
        return 1 if stale else 0
    if args.coverage:
        print(coverage_text(coverage()))
        return 0
    if args.lint is not None:
        problems = lint(names=args.lint or None)
        print("\n".join(problems) or "every translation keeps its code, math and links")
        return 1 if problems else 0
    for name in write():
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
