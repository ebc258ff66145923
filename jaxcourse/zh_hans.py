"""Generate the Simplified-Chinese (zh-Hans) edition of chapter 9.

Usage::

    python -m jaxcourse.zh_hans            # write the edition
    python -m jaxcourse.zh_hans --check    # exit 1 if it is out of date

The Traditional-Chinese (Taiwan) masters are the only sources; this module
derives from them, the way student notebooks derive from solution notebooks:

==========================================  ============================================
master (zh-Hant)                            generated (zh-Hans)
==========================================  ============================================
``book/09_dp_zh.ipynb``                     ``book/09_dp_zh_hans.ipynb``
``solutions/09_dp_zh_exercises.ipynb``      ``solutions/09_dp_zh_hans_exercises.ipynb``
``solutions/dp_zh.py`` (its texts)          ``solutions/dp_zh_hans_texts.json``
``book/glossary_zh.md``                     ``book/glossary_zh_hans.md``
==========================================  ============================================

The exercises of the edition are not a second module: :mod:`solutions.dp_zh`
registers them from its own, with every text a learner reads (titles, test
descriptions, hints, mistake messages, the shown solution's comments) looked
up in a generated table of texts (:func:`texts_table`), so that checking
needs no OpenCC and the edition can never check something else.

Text goes through the course's term table (:data:`TERMS_FILE`, beside the
glossary) and then OpenCC's Taiwan-to-mainland phrase conversion (``tw2sp``).
The table's terms are swapped for placeholders before OpenCC runs, so OpenCC
cannot change them again. Code is not converted, except its comments and the
string literals that contain Chinese (found with :mod:`tokenize`); a few
explicit rewrites (:data:`CODE_REWRITES`) point the edition at its own
exercises (``dp_zh_hans.*``), its Simplified-Chinese font and its explorer
language.

The Simplified glossary ends with the Simplified edition's style sheet
(:data:`STYLE_FILE`, :func:`style_sheet`): one name for each thing, which
``python -m jaxcourse.i18n --lint`` checks in every Simplified edition.

Outputs are not converted: a notebook whose sources changed is written with
its outputs cleared and must be executed
(``python scripts/run_notebook.py <notebook>``), after which nbval checks it
like every notebook. A cell whose generated source equals the stored one
keeps its stored outputs, so rewriting an up-to-date edition changes nothing,
and ``--check`` compares sources only (cell types, sources and tags).

:mod:`jaxcourse.i18n` converts the other way (Simplified to Taiwan) with the
same parts, which live here: :func:`terms`, :func:`through_table`,
:func:`opencc_converter`, :data:`CJK`, :func:`code_tokens` and :func:`splice`
(a token-exact edit of code), and :func:`report_stale` (``--check``'s report).
"""

from __future__ import annotations

import argparse
import copy
import functools
import io
import json
import re
import sys
import tokenize
from pathlib import Path

import nbformat

from jaxcourse.cli import add_version

__all__ = [
    "CJK",
    "CODE_REWRITES",
    "EDITION_NOTE",
    "MASTER_NOTE",
    "PAIRS",
    "STYLE_FILE",
    "TERMS_FILE",
    "TEXT_REWRITES",
    "TEXT_TABLES",
    "code_tokens",
    "convert_code",
    "convert_notebook",
    "convert_text",
    "generate",
    "main",
    "opencc_converter",
    "out_of_date",
    "report_stale",
    "splice",
    "style_sheet",
    "terms",
    "texts_table",
    "through_table",
]

ROOT = Path(__file__).resolve().parents[1]
TERMS_FILE = ROOT / "book" / "glossary_zh_terms.tsv"
#: The Simplified edition's style sheet (one name for each thing), shown at the
#: end of the Simplified glossary and checked by ``python -m jaxcourse.i18n
#: --lint``: concept TAB the course's form TAB its variants (a regular
#: expression) TAB why.
STYLE_FILE = ROOT / "book" / "glossary_zh_hans_style.tsv"
#: Heading of the style sheet's section in the Simplified glossary.
STYLE_HEADING = "## 简体中文版的用语规范"
#: (master, generated) paths, relative to the repository root.
PAIRS: tuple[tuple[str, str], ...] = (
    ("book/09_dp_zh.ipynb", "book/09_dp_zh_hans.ipynb"),
    ("solutions/09_dp_zh_exercises.ipynb",
     "solutions/09_dp_zh_hans_exercises.ipynb"),
    ("book/glossary_zh.md", "book/glossary_zh_hans.md"),
)
#: Exact substitutions in code (never in Chinese text): the edition's
#: exercise ids, its chapter, its language and its font.
CODE_REWRITES: tuple[tuple[str, str], ...] = (
    ('"dp_zh.', '"dp_zh_hans.'),
    ("``dp_zh.", "``dp_zh_hans."),
    ('CHAPTER = "09_dp_zh"', 'CHAPTER = "09_dp_zh_hans"'),
    ('language="zh-Hant"', 'language="zh-Hans"'),
    ("(Traditional Chinese)", "(Simplified Chinese)"),
    ("Traditional Chinese (``language", "Simplified Chinese (``language"),
    ("``language=\"zh-Hant\"``", "``language=\"zh-Hans\"``"),
    ("from jaxcourse.plotting import use_cjk_font\n",
     "from jaxcourse.plotting import CJK_FONTS_SC, use_cjk_font\n"),
    ("use_cjk_font()", 'use_cjk_font(CJK_FONTS_SC, script="SC")'),
    ("data_parallel_explorer()", 'data_parallel_explorer(language="zh-Hans")'),
)
#: Exact substitutions in Markdown: links to the edition's own pages.
TEXT_REWRITES: tuple[tuple[str, str], ...] = (
    ("本书中文章节使用台湾惯用的术语（繁体中文）。",
     "本页由繁体中文版的术语对照表生成（`python -m jaxcourse.zh_hans`："
     "OpenCC 加上课程的术语表 `glossary_zh_terms.tsv`）；"
     "繁体中文的原文使用台湾惯用的术语，这里换成了大陆的用语。"),
    ("glossary_zh.md", "glossary_zh_hans.md"),
    # Whole names: "09_dp_zh" alone is the start of "09_dp_zh_hans".
    ("09_dp_zh.ipynb", "09_dp_zh_hans.ipynb"),
    ("09_dp_zh_exercises.ipynb", "09_dp_zh_hans_exercises.ipynb"),
)
#: The note at the end of the first cell of chapter 9's Traditional masters
#: (the chapter and its exercises): what JupyterLab shows in Chinese. Their
#: Simplified editions drop it for :data:`EDITION_NOTE`, which speaks of the
#: Simplified pack.
MASTER_NOTE = (
    "\n\n> 本章以中文寫成，沒有英文版；簡體中文版由本頁自動產生。JupyterLab 本身的"
    "介面預設是英文：課程的安裝指令碼已裝好兩個中文語言套件，但涵蓋的範圍不同："
    "繁體中文套件（Settings → Language → 中文（繁體，臺灣））只翻譯了 JupyterLab "
    "約 500 條介面文字，選擇它之後選單列仍是英文，選單也中英夾雜（例如「重新啟動"
    "核心 and 執行所有儲存格」）；簡體中文套件（中文（簡體，中國））翻譯了約 2,100 "
    "條，幾乎是全部。"
)
#: Appended to the first Markdown cell of each generated notebook.
EDITION_NOTE = (
    "\n\n> 简体中文版：本页由繁体中文（台湾用语）的原文自动生成"
    "（`python -m jaxcourse.zh_hans`：OpenCC 的台湾到大陆用语转换，"
    "加上课程的术语表 `book/glossary_zh_terms.tsv`）。JupyterLab 本身的菜单默认是"
    "英文：课程的安装脚本装好了中文语言包，在 JupyterLab 4 中选择 Settings → "
    "Language → 中文（简体，中国），页面重新载入后即为简体中文。"
)
#: (topic, edition): the topic whose exercises' texts the edition's table
#: translates, and the edition's topic key (its table: ``<edition>_texts.json``
#: beside the topic's module).
TEXT_TABLES: tuple[tuple[str, str], ...] = (("dp_zh", "dp_zh_hans"),)
#: A CJK ideograph (the unified ideographs, extension A, the compatibility block).
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_PLACEHOLDER = 0xE000  # private-use code points OpenCC leaves alone


def terms(path: Path = TERMS_FILE) -> list[tuple[str, str]]:
    """Return a term table's (first column, second column) pairs, longest first.

    This module's table is (Traditional, Simplified); :mod:`jaxcourse.i18n`'s
    is (Simplified, Traditional).
    """
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            hant, hans, *_ = line.split("\t")
            rows.append((hant, hans))
    return sorted(rows, key=lambda row: -len(row[0]))


@functools.cache
def opencc_converter(config: str, needed_by: str = "the zh-Hans generator"):
    """Return OpenCC's converter ``config`` (``"tw2sp"``, ``"s2twp"``), made once.

    ``needed_by`` names the tool in the error raised when OpenCC is missing:
    the generators need it, the course never does.
    """
    try:
        import opencc
    except ImportError as err:  # the generators only; the course never needs it
        raise ImportError(
            f"{needed_by} needs OpenCC: pip install the pin in "
            "requirements.txt (opencc)"
        ) from err
    return opencc.OpenCC(config)


def convert_text(text: str) -> str:
    """Convert Traditional-Chinese (Taiwan) text to Simplified (mainland).

    The term table's entries become placeholders, OpenCC's ``tw2sp`` converts
    the rest, then the placeholders become the table's Simplified terms.
    """
    if not CJK.search(text):
        return text
    return through_table(text, terms(), opencc_converter("tw2sp").convert)


def through_table(text: str, table: list[tuple[str, str]], convert) -> str:
    """Convert ``text`` with ``convert``, except the table's terms (source, target).

    The terms become private-use placeholders, which OpenCC leaves alone, and
    then the table's targets.
    """
    for k, (source, _) in enumerate(table):
        text = text.replace(source, chr(_PLACEHOLDER + k))
    text = convert(text)
    for k, (_, target) in enumerate(table):
        text = text.replace(chr(_PLACEHOLDER + k), target)
    return text


#: A token's span, as :mod:`tokenize` gives it: (row, column) of its start and
#: of its end (rows from 1), and the text that replaces it.
Edit = tuple[tuple[int, int], tuple[int, int], str]


def code_tokens(source: str) -> list[tokenize.TokenInfo]:
    """Return the tokens of Python ``source``; none if it does not tokenize."""
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):  # IndentationError included
        return []


def splice(source: str, edits: list[Edit]) -> str:
    """Return ``source`` with each span of ``edits`` (in source order) replaced."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for (srow, scol), (erow, ecol), new in reversed(edits):
        start = offsets[srow - 1] + scol
        end = offsets[erow - 1] + ecol
        source = source[:start] + new + source[end:]
    return source


def _rewrite(source: str, rewrites: tuple = CODE_REWRITES) -> str:
    for old, new in rewrites:
        source = source.replace(old, new)
    return source


def convert_code(source: str) -> str:
    """Convert the Chinese comments and string literals of Python ``source``.

    Identifiers, numbers and every other token are left as they are; only
    COMMENT tokens and STRING tokens containing CJK characters change, at
    their exact positions. IPython syntax (``%magic``, ``!cmd``) tokenizes
    well enough, as its lines hold no Chinese strings.
    """
    edits = [(tok.start, tok.end, convert_text(tok.string))
             for tok in code_tokens(source)
             if tok.type in (tokenize.COMMENT, tokenize.STRING)
             and CJK.search(tok.string)]
    return _rewrite(splice(source, edits))


def _tags(cell: dict) -> list:
    return list(cell.get("metadata", {}).get("tags", []))


def convert_notebook(master: nbformat.NotebookNode,
                     previous: nbformat.NotebookNode | None = None
                     ) -> nbformat.NotebookNode:
    """Return the zh-Hans notebook of ``master``.

    Markdown goes through :func:`convert_text`, code through
    :func:`convert_code`. A code cell whose new source equals the same cell
    of ``previous`` (the stored edition) keeps ``previous``'s outputs and
    execution count; every other code cell starts without outputs.
    """
    nb = copy.deepcopy(master)
    old = {}
    if previous is not None:
        old = {(c.cell_type, c.source): c for c in previous.cells}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = convert_code(cell.source)
            kept = old.get(("code", cell.source))
            cell.outputs = copy.deepcopy(kept.outputs) if kept else []
            cell.execution_count = kept.execution_count if kept else None
        else:
            cell.source = _rewrite(convert_text(cell.source), TEXT_REWRITES)
            cell.pop("attachments", None)
    if nb.cells and nb.cells[0].cell_type == "markdown":
        first = nb.cells[0].source
        master_note = _rewrite(convert_text(MASTER_NOTE), TEXT_REWRITES)
        if first.endswith(master_note):
            first = first[:-len(master_note)]
        nb.cells[0].source = first + EDITION_NOTE
    nb.metadata.pop("widgets", None)
    if previous is not None and "widgets" in previous.metadata:
        nb.metadata["widgets"] = copy.deepcopy(previous.metadata["widgets"])
    return nb


def _sources(nb: nbformat.NotebookNode) -> list[tuple[str, str, list]]:
    return [(c.cell_type, c.source, _tags(c)) for c in nb.cells]


def _render(master: str, target: Path, root: Path) -> str | nbformat.NotebookNode:
    path = root / master
    if path.suffix == ".ipynb":
        previous = nbformat.read(target, as_version=4) if target.exists() else None
        return convert_notebook(nbformat.read(path, as_version=4), previous)
    text = path.read_text(encoding="utf-8")
    text = _rewrite(convert_text(text), TEXT_REWRITES)
    if master == "book/glossary_zh.md":
        # The course's style sheet, as the term table is the course's (ROOT).
        text = text.rstrip("\n") + "\n\n" + style_sheet()
    return text


def style_sheet(path: Path = STYLE_FILE) -> str:
    """Return the Simplified style sheet as a Markdown section of the glossary."""
    lines = [STYLE_HEADING, "",
             "简体中文版（第 1–9 章及其练习）对下列事物只用一种写法；"
             "`python -m jaxcourse.i18n --lint` 会检查各版本中是否出现了其他写法。", "",
             "| 事物 | 本课程的写法 | 不用的写法（正则表达式） |", "|---|---|---|"]
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            concept, form, variants, *_ = line.split("\t")
            variants = variants.replace("|", "\\|")
            lines.append(f"| {concept} | {form} | `{variants}` |")
    return "\n".join(lines) + "\n"


def texts_table(topic: str) -> tuple[Path, str]:
    """Return where topic ``topic``'s edition table goes, and its JSON text.

    The table maps every text of the topic's exercises that a learner reads
    to its zh-Hans form: Markdown-like texts through :func:`convert_text`, the
    shown solution (code) through :func:`convert_code`.
    """
    from . import course
    from .exercises.checking.editions import texts_of
    from .exercises.checking.registry import exercise_ids, get

    edition = dict(TEXT_TABLES)[topic]
    module = course.load(topic)
    table = {}
    for exercise_id in exercise_ids():
        if exercise_id.split(".", 1)[0] != topic:
            continue
        *texts, solution = texts_of(get(exercise_id))
        pairs = [(t, convert_text(t)) for t in texts]
        pairs.append((solution, convert_code(solution)))
        table.update((old, new) for old, new in pairs if old != new)
    path = Path(module.__file__).with_name(f"{edition}_texts.json")
    return path, json.dumps(table, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def out_of_date(root: Path = ROOT) -> list[str]:
    """Return the generated files whose sources differ from the masters'."""
    stale = []
    for topic, _ in TEXT_TABLES:
        path, text = texts_table(topic)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(_shown(path, root))
    for master, generated in PAIRS:
        target = root / generated
        if not target.exists():
            stale.append(generated)
            continue
        new = _render(master, target, root)
        if isinstance(new, str):
            if target.read_text(encoding="utf-8") != new:
                stale.append(generated)
        elif _sources(new) != _sources(nbformat.read(target, as_version=4)):
            stale.append(generated)
    return stale


def generate(root: Path = ROOT) -> list[str]:
    """Write the edition; return the notebooks that now need executing."""
    to_run = []
    for topic, _ in TEXT_TABLES:
        path, text = texts_table(topic)
        path.write_text(text, encoding="utf-8")
    for master, generated in PAIRS:
        target = root / generated
        new = _render(master, target, root)
        if isinstance(new, str):
            target.write_text(new, encoding="utf-8")
            continue
        master_nb = nbformat.read(root / master, as_version=4)
        if any(c.cell_type == "code" and m.outputs and not c.outputs
               for c, m in zip(new.cells, master_nb.cells, strict=True)):
            to_run.append(generated)
        nbformat.write(new, target)
    return to_run


def report_stale(stale: list[str], command: str) -> int:
    """Print each file of ``stale`` and the ``command`` that rewrites it.

    Return the exit status of a generator's ``--check``: 1 if any is stale.
    """
    for name in stale:
        print(f"out of date: {name} (run {command})")
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    """Command line: write the edition, or with ``--check`` only verify it."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.zh_hans",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a generated file is out of date")
    add_version(parser)
    args = parser.parse_args(argv)
    if args.check:
        return report_stale(out_of_date(), "python -m jaxcourse.zh_hans")
    for name in generate():
        print(f"execute it: python scripts/run_notebook.py {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
