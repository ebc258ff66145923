"""Simplified-Chinese text to Taiwan's, word by word.

The course's term table (:data:`.layout.TERMS_FILE`) names mainland terms and
their Taiwan forms. Replacing them as substrings breaks words that merely
contain them: 「连续数组成」 is 数|组成 ("made of numbers"), not 数组 ("array");
「其实现在」 is 其实|现在, not 实现. So a row of the table applies only where its
term starts and ends on word boundaries: the text is segmented by jieba (its
dictionary alone, no guessed words, so the cut is reproducible), and a match
that a word straddles (starts before it and ends inside it, or the reverse) is
left to OpenCC. A match inside a longer word (函数 in 调用函数) or spanning
several words (错误信息) is a whole-word match and applies.

Rows whose sense depends on context are written with their context in the
table (通过测试 → 通過測試, 循环移位 → 循環移位); the bare word is then left to
OpenCC's own phrase dictionary (通过 → 透過) or to a reviewed override
(:mod:`.overrides`).
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path

from ..zh_hans import CJK, opencc_converter, terms
from .layout import TERMS_FILE

#: The private-use code points that stand for the table's terms while OpenCC
#: converts the rest (OpenCC leaves them alone).
_PLACEHOLDER = 0xE000
#: 只 ("only") is never the measure word 隻 in this course; OpenCC's ``s2twp``
#: sometimes picks 隻 (「這隻算了」, 「最多隻能」), so 只 keeps its form.
_KEEP = "只"
_KEPT = 0xF8FF  # the last private-use code point stands for it
#: Marks a word boundary OpenCC must not match across (removed afterwards).
_SEPARATOR = 0xF8FE


@functools.cache
def _tokenizer():
    try:
        import jieba
    except ImportError as err:  # the editions' generator only, never the course
        raise ImportError(
            "the zh-Hant editions need jieba to find word boundaries: "
            "pip install the pin in requirements.txt (jieba)"
        ) from err
    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


@functools.cache
def word_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Return the (start, end) of each word of ``text``, as jieba cuts it."""
    spans = []
    start = 0
    for word in _tokenizer().cut(text, HMM=False):
        spans.append((start, start + len(word)))
        start += len(word)
    return tuple(spans)


def straddles(span: tuple[int, int], words: tuple[tuple[int, int], ...]) -> bool:
    """Whether a word crosses an end of ``span`` (overlaps, neither holds the other)."""
    start, end = span
    for w_start, w_end in words:
        if w_end <= start or w_start >= end:
            continue
        inside = start <= w_start and w_end <= end
        around = w_start <= start and end <= w_end
        if not (inside or around):
            return True
    return False


def table_matches(text: str, table: list[tuple[str, str]]
                  ) -> list[tuple[int, int, int]]:
    """Return (start, end, row) for each whole-word match of ``table`` in ``text``.

    Longer rows win; a match never overlaps another, never splits a word,
    and a one-character row matches only a word of its own.
    """
    words = word_spans(text)
    taken = [False] * len(text)
    found = []
    for k, (source, _) in enumerate(table):
        for m in re.finditer(re.escape(source), text):
            span = (m.start(), m.end())
            if any(taken[m.start():m.end()]) or straddles(span, words):
                continue
            # A one-character row is a word only where jieba cuts it alone
            # (库 alone is a library; 数据库 and 仓库 are not).
            if len(source) == 1 and span not in words:
                continue
            taken[m.start():m.end()] = [True] * (m.end() - m.start())
            found.append((m.start(), m.end(), k))
    return sorted(found)


def opencc_dictionary(name: str) -> dict[str, tuple[str, ...]]:
    """Return one of the dictionaries shipped with OpenCC (``"TWPhrases"`` ...).

    Each key (OpenCC's standard Traditional) maps to its candidates, the
    preferred one first. The package ships them compiled (``.ocd2``); its own
    ``opencc_dict`` tool writes them out as text, once per OpenCC version,
    into the course's cache folder (:func:`dictionary_text`), so that later
    runs start no process.
    """
    return _opencc_dictionary(name)


#: The OpenCC dictionaries the conversion and the usage lint read.
DICTIONARIES = ("TWPhrases", "TWVariants")


def dictionary_text(name: str) -> Path:
    """Return OpenCC's dictionary ``name`` as a text file, writing it if missing.

    The file is ``<cache>/opencc/<version>/<name>.txt`` (``<cache>`` is
    ``JAX_COURSE_CACHE_DIR``, by default ``~/.jax-course/cache``); ``make
    setup`` writes it, and the first use writes it where setup did not.
    """
    import os
    import subprocess
    import tempfile

    opencc_converter("s2twp", "the zh-Hant edition")  # a clear error if missing
    import opencc as package

    version = getattr(package, "__version__", "unknown")
    root = Path(os.environ.get("JAX_COURSE_CACHE_DIR")
                or Path.home() / ".jax-course" / "cache")
    target = root / "opencc" / version / f"{name}.txt"
    if target.is_file():
        return target
    base = Path(package.__file__).parent / "clib"
    tool = base / "bin" / "opencc_dict"
    source = base / "share" / "opencc" / f"{name}.ocd2"
    if not tool.is_file() or not source.is_file():
        raise FileNotFoundError(
            f"OpenCC's {name} dictionary or its opencc_dict tool is missing under "
            f"{base}: reinstall the pin in requirements.txt (opencc)")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed: a reader never sees half a file.
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        subprocess.run([str(tool), "-i", str(source), "-o", str(out), "-f", "ocd2",
                        "-t", "text"], check=True, capture_output=True, timeout=60)
        os.replace(out, target)
    return target


@functools.cache
def _opencc_dictionary(name: str) -> dict[str, tuple[str, ...]]:
    lines = dictionary_text(name).read_text(encoding="utf-8").splitlines()
    found = {}
    for line in lines:
        key, _, values = line.partition("\t")
        if key and values:
            found[key] = tuple(values.split())
    return found


@functools.cache
def _phrase_keys() -> tuple[str, ...]:
    """OpenCC's Taiwan phrases (``TWPhrases``' keys) as Simplified text."""
    t2s = opencc_converter("t2s", "the zh-Hant edition")
    return tuple(sorted({t2s.convert(k) for k in opencc_dictionary("TWPhrases")
                         if len(k) > 1}, key=len, reverse=True))


@functools.cache
def _phrase_set() -> frozenset[str]:
    return frozenset(_phrase_keys())


def _cuts(text: str, words: tuple[tuple[int, int], ...]) -> set[int]:
    """Word boundaries inside an OpenCC phrase that a word of ``text`` straddles.

    OpenCC matches its phrases as substrings too (数组 in 数|组成); a
    separator at these boundaries keeps it from matching across them.
    """
    starts = {start for start, _ in words}
    keys = _phrase_set()
    longest = max(map(len, keys))
    cuts = set()
    for i in range(len(text)):
        for n in range(2, min(longest, len(text) - i) + 1):
            if text[i:i + n] in keys and straddles((i, i + n), words):
                cuts.update(b for b in starts if i < b < i + n)
    return cuts


def through_words(text: str, table: list[tuple[str, str]], convert) -> str:
    """Convert ``text`` with ``convert``, except the table's whole-word terms.

    Each whole-word match becomes a private-use placeholder, which OpenCC
    leaves alone, and then the table's target; no OpenCC phrase is matched
    across a word it would split; 只 stays 只.
    """
    words = word_spans(text)
    matches = table_matches(text, table)
    covered = set()
    for start, end, _ in matches:
        covered.update(range(start, end))
    cuts = sorted(b for b in _cuts(text, words) if b not in covered)
    pieces = []
    last = 0
    events = sorted([(start, end, k) for start, end, k in matches]
                    + [(b, b, -1) for b in cuts])
    for start, end, k in events:
        pieces.append(text[last:start])
        pieces.append(chr(_SEPARATOR) if k < 0 else chr(_PLACEHOLDER + k))
        last = end
    pieces.append(text[last:])
    masked = "".join(pieces).replace(_KEEP, chr(_KEPT))
    out = convert(masked).replace(chr(_KEPT), _KEEP).replace(chr(_SEPARATOR), "")
    for k, (_, target) in enumerate(table):
        out = out.replace(chr(_PLACEHOLDER + k), target)
    return out


#: Measure words: the mainland counts GPUs and chips with 块, Taiwan a GPU
#: with 張 (a card) and a chip with 顆. A pattern, since the count comes
#: between the words (8 块 H100, 每块芯片, 全部四块 GPU, `chips` 块 `hw` 型号的
#: GPU, 一块 v5p 芯片); applied to the whole converted text, code spans included
#: in the match but never changed.
#: Between the measure word and the device: a code span, a model (v5p, SXM)
#: or a short modifier ending in 的 (幾块自己的 GPU, `hw` 型号的 GPU).
_BETWEEN = r"\s*(?:`[^`\n]*`\s*)?(?:[A-Za-z0-9-]+\s+)?(?:[\u4e00-\u9fff]{1,4}的\s*)?"
MEASURE_WORDS = (
    (re.compile(rf"塊({_BETWEEN}(?:GPU|[ABHV]\d{{2,3}}|顯示卡))"), r"張\1"),
    (re.compile(rf"塊({_BETWEEN}(?:晶片|TPU))"), r"顆\1"),
)


def to_hant(text: str) -> str:
    """Convert Simplified-Chinese (mainland) text to Traditional (Taiwan).

    The term table's whole-word entries become placeholders, OpenCC's
    ``s2twp`` converts the rest, then the placeholders become the table's
    Taiwan terms. Code spans and fenced code are left as they are.
    """
    if not CJK.search(text):
        return text
    parts = re.split(r"(```.*?```|`(?:[^`\n]|\n(?!\s*\n))*`)", text, flags=re.S)
    table = terms(TERMS_FILE)
    out = []
    for k, part in enumerate(parts):
        if k % 2 or not CJK.search(part):
            out.append(part)
            continue
        s2twp = opencc_converter("s2twp", "the zh-Hant edition")
        out.append(through_words(part, table, s2twp.convert))
    converted = "".join(out)
    for pattern, measure in MEASURE_WORDS:
        converted = pattern.sub(measure, converted)
    return converted
