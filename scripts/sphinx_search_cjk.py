"""Sphinx extension: a search index in which every Chinese word can be found.

The book is one English build, so Sphinx indexes every page with its English
splitter, which keeps a whole run of Chinese characters between two marks of
punctuation as one term (「一個裝置傳送多少位元組」): a search for 裝置 found
only the pages where it stood alone. Sphinx's own Chinese splitter
(``sphinx.search.zh``) cuts runs into jieba's words instead, but a reader's
word is often not jieba's (jieba's dictionary is Simplified and knows few of
the course's terms: 分片數 is one word there, so 分片 would be missed), and
the browser cannot run jieba on the query to cut it the same way.

So Chinese is indexed as Lucene's CJK analyzer does: each run of Han
characters becomes its single characters and its overlapping pairs
(裝置傳送 → 裝 置 傳 送 裝置 置傳 傳送), and the search page cuts a query
the same way (:data:`JS_SPLITTER`, in ``language_data.js``): 記憶體 is
searched as 記憶 and 憶體, which a page must both hold (Sphinx requires every
term). Every page that contains a word is then found. Text without Han
characters is split exactly as before, so English search is unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.search import languages
from sphinx.search.en import SearchEnglish

#: Han characters: the unified ideographs, extension A, the compatibility
#: ideographs and the supplementary planes' extensions (B and after).
HAN_RANGES = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAN = re.compile(f"([{HAN_RANGES}\U00020000-\U0003ffff]+)")
#: The name under which the builder finds this splitter (html_search_language).
LANGUAGE = "en_jaxcourse_cjk"


def han_terms(run: str, *, single: bool = True) -> list[str]:
    """Return a run of Han characters as its index terms.

    Its characters (when ``single``) and its overlapping pairs; a run of one
    character is that character. A query is cut without ``single``: its pairs
    are what a page must hold.
    """
    if len(run) == 1:
        return [run]
    pairs = [run[i:i + 2] for i in range(len(run) - 1)]
    return (list(run) + pairs) if single else pairs


def split_text(text: str, *, single: bool = True) -> list[str]:
    r"""Split text as the index does: words (``\w+``), Han runs by :func:`han_terms`."""
    words = []
    for word in re.findall(r"\w+", text):
        if not HAN.search(word):
            words.append(word)
            continue
        for piece in HAN.split(word):
            if not piece:
                continue
            words.extend(han_terms(piece, single=single) if HAN.fullmatch(piece)
                         else [piece])
    return words


#: The search page's splitter, the JavaScript twin of :func:`split_text` for a
#: query: Sphinx's own split (``searchtools.js``), then each Han run as pairs.
JS_SPLITTER = """
var splitQuery = (query) => {
  const han = /([HAN\\u{20000}-\\u{3ffff}]+)/u;
  const terms = [];
  query.split(/[^\\p{Letter}\\p{Number}_\\p{Emoji_Presentation}]+/gu)
    .filter((word) => word)
    .forEach((word) => word.split(han).forEach((piece) => {
      if (!piece) return;
      if (!han.test(piece) || [...piece].length === 1) { terms.push(piece); return; }
      const chars = [...piece];
      for (let i = 0; i + 1 < chars.length; i++) terms.push(chars[i] + chars[i + 1]);
    }));
  return terms;
};
""".replace("HAN", HAN_RANGES)


class SearchEnglishHan(SearchEnglish):
    """Sphinx's English search, with Han runs cut into characters and pairs."""

    lang = LANGUAGE
    js_splitter_code = JS_SPLITTER

    def split(self, input: str) -> list[str]:
        """Return the index terms of ``input`` (see :func:`split_text`)."""
        return split_text(input)


def _use_splitter(app: Sphinx, config: Config) -> None:
    # Only a build that loads this extension finds the splitter under its name.
    languages[LANGUAGE] = SearchEnglishHan
    config.html_search_language = LANGUAGE


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the splitter as the build's search language."""
    app.connect("config-inited", _use_splitter)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
