"""Regional usage in the Chinese editions: Taiwan words in zh-Hant, mainland in zh-Hans.

Two lints read the prose of every edition notebook (chapters 1-8 in both
scripts, chapter 9 and its Simplified edition) and their exercises' texts:

- :func:`usage_findings`: a mainland-only word in zh-Hant, or a Taiwan-only
  word in zh-Hans. The words come from OpenCC's own Taiwan dictionaries
  (``TWPhrases``: a mainland phrase and its Taiwan forms; ``TWVariants``:
  glyphs Taiwan writes otherwise), the course's term table and the course's
  list (:data:`USAGE_FILE`), which also holds the allowlist: phrases in which
  a listed word is right (文件 meaning documentation in Taiwan).
- :func:`style_findings`: a variant the Simplified style sheet
  (:data:`STYLE_FILE`) rules out, e.g. 台设备 where the course writes 个设备.

- :func:`axis_findings`: rows and columns the wrong way round. Taiwan's 列
  is a row and 欄 (or 行) a column, the mainland's 行 a row and 列 a column;
  a text whose English says only "row" (or only "column") is read against its
  English, and must not name the other axis.
- :func:`naming_findings`: an edition that names itself, or chapter 9 (which
  it links to in its own script), as written in the other script.

The usage lint also knows patterns (the course's ``pattern-`` rows): the
measure words for devices (Taiwan counts 張 GPU and 顆晶片, never 塊); English
terms the chapters translate, left in Chinese prose (token: 詞元, roofline:
屋頂線); a named operator that conversion made an operand (「f」運算元).

Prose is a Markdown cell without its code spans, fences, math, links' targets
and HTML; a code cell's comments and the Chinese string literals; a figure's
labels; an exercise text (translated, or a Chinese chapter's own); the
editions' home pages (``index.md``); and every string of the explorers and the
panel (:mod:`jaxcourse.messages`). Code,
identifiers and outputs are left out.
"""

from __future__ import annotations

import functools
import html
import json
import re
import tokenize
from pathlib import Path

import nbformat

from ..zh_hans import CJK, STYLE_FILE, code_tokens, opencc_converter, terms
from .editions import UNTRANSLATED
from .figures import _SVG_TEXT
from .layout import EDITIONS, ROOT, TERMS_FILE, edition_path, families
from .words import _tokenizer, opencc_dictionary, straddles, word_spans

#: The course's own regional words and allowlist: kind TAB word TAB preferred
#: TAB why; kind is ``mainland`` (not in zh-Hant), ``taiwan`` (not in
#: zh-Hans), ``allow-hant`` / ``allow-hans`` (a phrase in which listed words
#: are right), ``ignore-hant`` / ``ignore-hans`` (a dictionary word not linted),
#: ``pattern-hant`` / ``pattern-hans`` (a regular expression not to match).
USAGE_FILE = ROOT / "book" / "glossary_zh_usage.tsv"

#: A Taiwan form the mainland writes fewer times than this in jieba's word
#: frequencies (built from mainland text) is Taiwan-only.
RARE_ON_THE_MAINLAND = 100

_CODE = re.compile(
    r"```.*?```|`(?:[^`\n]|\n(?!\s*\n))+`|\$\$.+?\$\$|\$(?:[^$\n]|\n(?!\s*\n))+\$"
    r"|\]\([^)]*\)|<[^>]+>|https?://\S+", re.S)


def _rows(path: Path) -> list[list[str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(line.split("\t"))
    return rows


@functools.cache
def regional_words(language: str) -> dict[str, str]:
    """Return the words ``language``'s edition must not use, each with its fix.

    zh-Hant: OpenCC's mainland phrases that Taiwan does not write (in
    Traditional glyphs), its non-Taiwan glyph variants, the term table's
    mainland terms and the course's ``mainland`` rows. zh-Hans: the Taiwan
    forms of those, in Simplified glyphs, and the course's ``taiwan`` rows.
    The course's ``ignore-`` rows are left out.
    """
    s2t = opencc_converter("s2t", "the usage lint")
    t2s = opencc_converter("t2s", "the usage lint")
    course = _rows(USAGE_FILE)
    table = terms(TERMS_FILE)
    found: dict[str, str] = {}
    if language == "zh-Hant":
        for name in ("TWPhrases", "TWVariants"):
            for key, values in opencc_dictionary(name).items():
                if key not in values:
                    found[key] = values[0]
        # A mainland term that is also a Taiwan term of another row (按列:
        # mainland "by columns", Taiwan "by rows") is no mistake in itself.
        taiwan_terms = {taiwan for _, taiwan in table}
        for mainland, taiwan in table:
            old = s2t.convert(mainland)
            if (CJK.search(old) and old not in taiwan and old not in taiwan_terms
                    and old != s2t.convert(taiwan)):
                found.setdefault(old, taiwan)
        kind = "mainland"
    else:
        # OpenCC's Taiwan forms, where the mainland rarely writes them: jieba's
        # dictionary (word frequencies of mainland text) is the judge.
        frequency = _tokenizer().FREQ
        mainland_terms = {mainland for mainland, _ in table}
        candidates = [(t2s.convert(value), t2s.convert(key))
                      for key, values in opencc_dictionary("TWPhrases").items()
                      if key not in values for value in values]
        candidates += [(t2s.convert(taiwan), mainland) for mainland, taiwan in table]
        for new, fix in candidates:
            if (CJK.search(new) and new not in fix and new not in mainland_terms
                    and _rare(new, frequency)):
                found.setdefault(new, fix)
        kind = "taiwan"
    for row in course:
        if row[0] == kind:
            found[row[1]] = row[2]
    ignored = {row[1] for row in course if row[0] == f"ignore-{_short(language)}"}
    return {w: fix for w, fix in found.items() if w not in ignored and len(w) > 0}


def _rare(word: str, frequency: dict) -> bool:
    """Whether the mainland rarely writes ``word`` (by jieba's frequencies).

    A phrase jieba does not know is rare only if one of its words is, or if
    it falls apart into single characters (快取): 出错时 is 出错 and 时.
    """
    if (frequency.get(word) or 0) >= RARE_ON_THE_MAINLAND:
        return False
    if word in frequency:
        return True
    parts = list(_tokenizer().cut(word, HMM=False))
    if all(len(p) == 1 for p in parts):
        return True
    return any(len(p) > 1 and (frequency.get(p) or 0) < RARE_ON_THE_MAINLAND
               for p in parts)


def _short(language: str) -> str:
    return EDITIONS[language].split("_")[1]


@functools.cache
def _allowed(language: str) -> tuple[str, ...]:
    """Return the phrases in which no word is linted.

    They are the allowlist and the table's own terms in ``language`` (演算法
    holds 算法; 陣列 is no mistake in zh-Hant).
    """
    kind = f"allow-{_short(language)}"
    phrases = {row[1] for row in _rows(USAGE_FILE) if row[0] == kind}
    column = 1 if language == "zh-Hant" else 0
    phrases.update(row[column] for row in terms(TERMS_FILE)
                   if len(row[column]) > 1 and CJK.search(row[column]))
    return tuple(sorted(phrases, key=len, reverse=True))


def prose_of(text: str) -> str:
    """Return Markdown ``text`` without its code, math, link targets and HTML."""
    return _CODE.sub(" ", text)


#: How a shown solution's source starts (a table's key is the English text).
_SOURCES = ("def ", "class ", "@", "import ", "from ")


def _code_prose(source: str) -> list[str]:
    found = []
    for tok in code_tokens(source):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING
                                            and CJK.search(tok.string)):
            found.append(tok.string)
    return found


def _figure_labels(cell: dict) -> list[str]:
    """Return the labels of a code cell's translated figures (its SVG outputs)."""
    found = []
    for output in cell.get("outputs", []):
        svg = output.get("data", {}).get("image/svg+xml")
        if isinstance(svg, list):
            svg = "".join(svg)
        if svg:
            found.extend(html.unescape(m.group(2)) for m in _SVG_TEXT.finditer(svg))
    return [label for label in found if CJK.search(label)]


#: The editions' pages written as Markdown (the home pages), by language.
PAGES = {"zh-Hant": "book/zh_hant/index.md", "zh-Hans": "book/zh_hans/index.md"}
#: The message tables of the explorers, the panel and the checks, by language.
MESSAGE_TABLES = {"zh-Hant": "zh_hant", "zh-Hans": "zh_hans"}


def _messages(language: str) -> dict[str, str]:
    """Return the explorers' and the panel's strings in ``language``, by key."""
    from .. import messages

    table = dict(messages.MESSAGES[language])
    for name, text in messages.EXCEPTIONS.get(language, {}).items():
        table[f"EXCEPTIONS[{name}]"] = text
    return table


def edition_texts(root: Path = ROOT) -> dict[str, list[tuple[str, str]]]:
    """Return, per language, (where, prose) for every text a learner reads."""
    from .. import course

    notebooks: dict[str, list[str]] = {language: [] for language in EDITIONS}
    for family in families():
        for master in family.masters:
            for language in EDITIONS:
                notebooks[language].append(edition_path(master, language))
    for topic in course.topics():
        if topic.language in EDITIONS:
            notebooks[topic.language].extend(
                p for p in (topic.chapter, topic.exercises, topic.student) if p)
    texts: dict[str, list[tuple[str, str]]] = {language: [] for language in EDITIONS}
    for language, paths in notebooks.items():
        for path in dict.fromkeys(paths):
            if not (root / path).is_file():
                continue
            nb = nbformat.read(root / path, as_version=4)
            for cell in nb.cells:
                where = f"{path}:{cell.get('id', '')}"
                if cell.cell_type == "markdown":
                    # A cell not translated yet is shown in English, marked:
                    # no Chinese usage to lint (coverage counts it instead).
                    if language in UNTRANSLATED and cell.source.startswith(
                            UNTRANSLATED[language]):
                        continue
                    texts[language].append((where, prose_of(cell.source)))
                elif cell.cell_type == "code":
                    texts[language].extend((where, t) for t in _code_prose(cell.source))
                    texts[language].extend((where, t) for t in _figure_labels(cell))
        # The tables sit beside the topics' modules: found through the
        # manifest, never by the content package's name.
        folders = {Path(course.load(topic.key).__file__).resolve().parent
                   for topic in course.topics()}
        tables = {t for folder in folders
                  for t in folder.glob(f"*_{EDITIONS[language]}_texts.json")}
        for table in sorted(tables):
            for english, text in json.loads(table.read_text(encoding="utf-8")).items():
                where = f"{table.parent.name}/{table.name}: {english[:30]!r}"
                if english.startswith(_SOURCES):
                    # A shown solution's source, its comments translated: its
                    # names and docstrings are code, as in a code cell.
                    texts[language].extend((where, t) for t in _code_prose(text))
                else:
                    texts[language].append((where, prose_of(text)))
        # A chapter written in Chinese (chapter 9) holds its exercises' texts
        # (hints, named mistakes, cases) in its own module, not in a table.
        for topic in course.topics():
            if topic.language == language:
                texts[language].extend(_own_exercise_texts(topic.key))
        page = root / PAGES[language]
        if page.is_file():
            paragraphs = page.read_text(encoding="utf-8").split("\n\n")
            for n, paragraph in enumerate(paragraphs):
                texts[language].append((f"{PAGES[language]}:{n}", prose_of(paragraph)))
        module = f"jaxcourse/messages/{MESSAGE_TABLES[language]}.py"
        for key, text in _messages(language).items():
            texts[language].append((f"{module}: {key}", text))
    return texts


def _own_exercise_texts(key: str) -> list[tuple[str, str]]:
    """Return (where, text) for the texts of a Chinese topic's own exercises."""
    from .. import course
    from ..exercises.checking.editions import texts_of
    from ..exercises.checking.registry import _REGISTRY

    course.load(key)  # registers the topic's exercises
    found = []
    for exercise_id, exercise in list(_REGISTRY.items()):
        if exercise_id.split(".", 1)[0] == key:
            *shown, _solution = texts_of(exercise)
            found.extend((f"{exercise_id}: {text[:30]!r}", text) for text in shown
                         if CJK.search(text))
    return found


def paired_texts(root: Path = ROOT) -> list[tuple[str, str, dict[str, str]]]:
    """Return (where, English, {language: text}) for the texts with an English twin.

    A Markdown cell and its edition's (the same cell id), a code comment and
    the edition's (in order), an exercise text and its translation, a message
    and its table's.
    """
    from .. import course, messages

    pairs: list[tuple[str, str, dict[str, str]]] = []
    for family in families():
        for master in family.masters:
            nb = nbformat.read(root / master, as_version=4)
            editions = {}
            for language in EDITIONS:
                path = root / edition_path(master, language)
                if path.is_file():
                    editions[language] = {c.get("id"): c for c in
                                          nbformat.read(path, as_version=4).cells}
            for cell in nb.cells:
                twins = {lang: cells[cell.get("id")] for lang, cells in editions.items()
                         if cell.get("id") in cells}
                where = f"{master}:{cell.get('id', '')}"
                if cell.cell_type == "markdown":
                    pairs.append((where, prose_of(cell.source),
                                  {lang: prose_of(c.source)
                                   for lang, c in twins.items()}))
                elif cell.cell_type == "code":
                    comments = _comments_of(cell.source)
                    theirs = {lang: _comments_of(c.source) for lang, c in twins.items()}
                    for i, english in enumerate(comments):
                        pairs.append((where, english, {lang: found[i] for lang, found
                                                       in theirs.items()
                                                       if i < len(found)}))
    folders = {Path(course.load(topic.key).__file__).resolve().parent
               for topic in course.topics()}
    tables: dict[str, dict[str, str]] = {}
    for language in EDITIONS:
        for table in sorted(t for folder in folders
                            for t in folder.glob(f"*_{EDITIONS[language]}_texts.json")):
            for english, text in json.loads(table.read_text(encoding="utf-8")).items():
                tables.setdefault(f"{table.parent.name}/{table.stem.split('_')[0]}"
                                  f": {english[:30]!r}\0{english}", {})[language] = text
    for key, found in tables.items():
        where, english = key.split("\0", 1)
        pairs.append((where, prose_of(english),
                      {lang: prose_of(text) for lang, text in found.items()}))
    for key, english in messages.MESSAGES["en"].items():
        pairs.append((f"jaxcourse/messages: {key}", english,
                      {lang: table[key] for lang in EDITIONS
                       if key in (table := messages.MESSAGES[lang])}))
    return pairs


def _comments_of(source: str) -> list[str]:
    return [tok.string for tok in code_tokens(source) if tok.type == tokenize.COMMENT]


def _scan(text: str, words: dict[str, str], allowed: tuple[str, ...]
          ) -> list[tuple[str, str]]:
    """Return each listed word of ``text`` (and its fix) outside allowed phrases.

    A match that a word of the sentence straddles (快取 in 更快|取决于, 线上 in
    曲线|上) is no use of the word: jieba cuts the sentence (a Traditional one
    through its Simplified glyphs, when they keep its length).
    """
    for phrase in allowed:
        text = text.replace(phrase, "\u3000" * len(phrase))
    spans = None
    found = []
    longest = max(map(len, words))
    i = 0
    while i < len(text):
        for n in range(min(longest, len(text) - i), 0, -1):
            word = text[i:i + n]
            if word in words and spans is None:  # cut only a text with a hit
                simplified = opencc_converter("t2s", "the usage lint").convert(text)
                spans = word_spans(simplified) if len(simplified) == len(text) else ()
            if word in words and not straddles((i, i + n), spans):
                found.append((word, words[word]))
                i += n - 1
                break
        i += 1
    return found


@functools.cache
def usage_patterns(language: str) -> list[tuple[re.Pattern, str]]:
    """Return the course's ``pattern-`` rows for ``language``: (pattern, fix)."""
    kind = f"pattern-{_short(language)}"
    return [(re.compile(row[1]), row[2]) for row in _rows(USAGE_FILE) if row[0] == kind]


def scan_text(text: str, language: str) -> list[tuple[str, str]]:
    """Return each word or pattern of the other usage in ``text``, with its fix."""
    found = _scan(text, regional_words(language), _allowed(language))
    for pattern, fix in usage_patterns(language):
        found.extend((m.group(0), fix) for m in pattern.finditer(text))
    return found


def usage_findings(root: Path = ROOT) -> dict[str, list[str]]:
    """Return, per language, a line per word the other region's usage put there."""
    out: dict[str, list[str]] = {}
    for language, texts in edition_texts(root).items():
        lines = []
        for where, text in texts:
            if not CJK.search(text):
                continue
            for word, fix in scan_text(text, language):
                lines.append(f"{language} {where}: {word} (write {fix})")
        out[language] = lines
    return out


_ROW_EN = re.compile(r"\brows?\b", re.I)
_COLUMN_EN = re.compile(r"\bcolumns?\b", re.I)
#: 列 and 行 inside words that name no axis (an array, a queue; to run, a line).
_LIE_WORDS = ("陣列|串列|序列|佇列|隊列|队列|列出|列表|排列|列印|下列|系列|並列|并列|"
              "列舉|列举|行列|羅列|罗列|列為|列为|列入|數列|数列|條列|前列|如下列")
_HANG_WORDS = ("行程|執行|执行|平行|並行|并行|進行|进行|行為|行为|運行|运行|流行|發行|"
               "发行|銀行|银行|行動|行动|自行|另行|先行|同行|可行|實行|实行|行業|行业|"
               "例行|施行|通行|推行|現行|现行|行內|行内|換行|换行|行號|行号|行首|行尾|"
               "程式碼行|代码行|一行程式|一行代码|行星|旅行|行李|行政|行使|步行|試行|试行")
_LIE = re.compile(f"(?:{_LIE_WORDS})|(列)")
_HANG = re.compile(f"(?:{_HANG_WORDS})|(行)")
_LAN = re.compile("欄|栏")


def _axis_words(pattern: re.Pattern, text: str) -> int:
    return sum(1 for m in pattern.finditer(text) if m.group(1))


def axis_problem(english: str, text: str, language: str) -> str | None:
    """Return what is wrong with ``text``'s rows or columns against its ``english``.

    Only a text whose English names one axis is judged: zh-Hant writes a row
    列 and a column 欄 or 行, zh-Hans a row 行 and a column 列.
    """
    row, column = bool(_ROW_EN.search(english)), bool(_COLUMN_EN.search(english))
    if row == column or not CJK.search(text):
        return None
    lie, hang = _axis_words(_LIE, text), _axis_words(_HANG, text)
    lan = len(_LAN.findall(text))
    if language == "zh-Hant":
        if column and lie and not (lan or hang):
            return "a column written 列 (Taiwan: 欄 or 行; 列 is a row)"
        if row and hang and not lie:
            return "a row written 行 (Taiwan: 列; 行 is a column)"
    else:
        if row and lie and not hang:
            return "a row written 列 (mainland: 行; 列 is a column)"
        if column and hang and not lie:
            return "a column written 行 (mainland: 列; 行 is a row)"
    return None


def axis_findings(root: Path = ROOT) -> dict[str, list[str]]:
    """Return, per language, a line per text whose rows and columns are swapped."""
    out: dict[str, list[str]] = {language: [] for language in EDITIONS}
    for where, english, texts in paired_texts(root):
        for language, text in texts.items():
            problem = axis_problem(english, text, language)
            if problem:
                out[language].append(f"{language} {where}: {problem}: {text[:60]!r}")
    return out


@functools.cache
def style_rules() -> list[tuple[str, str, re.Pattern]]:
    """Return the style sheet's (concept, the course's form, variants' pattern)."""
    return [(concept, form, re.compile(variants))
            for concept, form, variants, *_ in _rows(STYLE_FILE)]


def style_findings(root: Path = ROOT) -> list[str]:
    """Return a line per variant of the Simplified style sheet in a zh-Hans text."""
    lines = []
    for where, text in edition_texts(root)["zh-Hans"]:
        for concept, form, pattern in style_rules():
            for m in pattern.finditer(text):
                lines.append(f"zh-Hans {where}: {m.group(0)!r} "
                             f"({concept}: write {form})")
    return lines


#: The other script's name, by language: an edition names itself by its own.
_OTHER_SCRIPT = {"zh-Hans": "(?:繁体|繁體)中文", "zh-Hant": "(?:简体|簡體)中文"}


@functools.cache
def _naming_patterns(language: str) -> tuple[re.Pattern, ...]:
    other = _OTHER_SCRIPT[language]
    # "本页是英文版的繁体中文版" in a Simplified page; "第 9 章（繁体中文）" where
    # the Simplified edition links to chapter 9's Simplified edition.
    return (re.compile(rf"本[页頁]是[^。\n]*?{other}[^。\n]*?版"),
            re.compile(rf"第\s*9\s*章[^。；\n]{{0,16}}?{other}"))


def naming_problem(text: str, language: str) -> str | None:
    """Return how ``text`` names its own edition or chapter 9 wrongly, or None.

    Each edition links to the pages of its own script (chapter 9 included:
    zh-Hans to its Simplified edition, zh-Hant to the Traditional original), so
    a page of one script that calls itself, or the chapter 9 it links to, the
    other script's is wrong.
    """
    for pattern in _naming_patterns(language):
        m = pattern.search(text)
        if m:
            return f"names the other script's edition: {m.group(0)!r}"
    return None


def naming_findings(root: Path = ROOT) -> dict[str, list[str]]:
    """Return, per language, a line per text that names the editions wrongly."""
    out: dict[str, list[str]] = {}
    for language, texts in edition_texts(root).items():
        out[language] = [f"{language} {where}: {problem}" for where, text in texts
                         if (problem := naming_problem(text, language))]
    return out
