"""The built book's search finds every page on which a Chinese word stands.

Sphinx's English splitter kept each run of Chinese between two marks of
punctuation as one term, so a search for 裝置 missed the pages where it stood
inside a longer run. ``scripts/sphinx_search_cjk.py`` indexes Han characters
and their pairs, and cuts the query the same way. Checked on a small book built
here from real pages (the Chinese editions' home pages and four chapters in
both scripts, two English chapters), with the course's extensions: for each
word, the pages whose text holds it against the pages the index answers with
(every term of the query, as ``searchtools.js`` requires them).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The extension is a script of the book's build (as Sphinx loads it), not a module.
sys.path.insert(0, str(REPO / "scripts"))
from sphinx_search_cjk import split_text  # noqa: E402

#: Every word of the issue's table first, then words from the chapters'
#: running text in both scripts (terms, verbs, words inside longer runs).
WORDS = ["分片", "裝置", "梯度", "記憶體", "内存", "流水线", "管線",
         "设备", "集體運算", "集体运算", "佈局", "布局", "網格", "网格", "通訊",
         "通信", "參數", "参数", "編譯", "编译", "行程", "进程", "陣列", "数组",
         "批次", "精度", "損失", "损失", "傳送", "传输", "每個", "一个", "程式碼",
         "代码", "訓練", "训练", "歸約", "归约", "主機", "主机",
         "張量", "张量", "叢集", "集群"]
#: English words, found as before: Latin text is split as Sphinx always has.
ENGLISH = ["shard_map", "sharding", "mesh", "psum", "devices", "gradient"]
PAGES = [f"book/{edition}/{page}" for edition in ("zh_hant", "zh_hans")
         for page in ("index", "01_mlp", "04_sharding", "05_shard_map",
                      "08_multiprocess")] + ["book/04_sharding", "book/05_shard_map"]
CONFIG = """\
title: "Small"
author: "The authors"
only_build_toc_files: true
execute:
  execute_notebooks: "off"
parse:
  myst_enable_extensions: [colon_fence, dollarmath, deflist]
sphinx:
  local_extensions:
    sphinx_page_language: {scripts}
    sphinx_search_cjk: {scripts}
  config:
    language: en
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the small book from the checkout's pages (in this process)."""
    from jupyter_book.sphinx import build_sphinx

    source = tmp_path_factory.mktemp("search-book")
    (source / "_config.yml").write_text(CONFIG.format(scripts=REPO / "scripts"),
                                        encoding="utf-8")
    for page in PAGES:
        found = next(REPO.glob(f"{page}.*"))
        (source / found.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(found, source / found.relative_to(REPO))
    (source / "index.md").write_text("# Small\n\nThe start.\n", encoding="utf-8")
    chapters = "\n".join(f"      - file: {page}" for page in PAGES)
    (source / "_toc.yml").write_text(
        f"format: jb-book\nroot: index\nparts:\n  - caption: All\n    chapters:\n"
        f"{chapters}\n", encoding="utf-8")
    out = source / "_build" / "html"
    overrides = {"external_toc_path": (source / "_toc.yml").as_posix(),
                 "latex_individualpages": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Links to pages outside this small book warn: not what is tested here.
        result = build_sphinx(source, out, noconfig=True,
                              path_config=str(source / "_config.yml"),
                              confoverrides=overrides, warningiserror=False,
                              keep_going=True, really_quiet=True)
    assert result == 0, result
    return out


def _index(site: Path) -> dict:
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def _page_text(site: Path, doc: str) -> str:
    """What the reader sees in the page's article (scripts, the switcher out)."""
    page = (site / f"{doc}.html").read_text(encoding="utf-8")
    article = re.search(r"<article.*?</article>", page, re.S).group(0)
    article = re.sub(r"<(script|style)\b.*?</\1>", "", article, flags=re.S)
    article = re.sub(r'<nav class="jaxcourse-editions".*?</nav>', "", article,
                     flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", article))


def _found(index: dict, query: str) -> set[str]:
    """The pages that ``searchtools.js`` lists: each holding every query term."""
    pages = None
    for term in split_text(query, single=False):
        term = term.lower()
        docs = set()
        for table in ("terms", "titleterms"):
            hit = index[table].get(term, [])
            docs |= set([hit] if isinstance(hit, int) else hit)
        pages = docs if pages is None else pages & docs
    return {index["docnames"][i] for i in pages or ()}


@pytest.fixture(scope="module")
def texts(site: Path) -> dict[str, str]:
    return {doc: _page_text(site, doc) for doc in PAGES}


def test_the_words_are_from_both_scripts_and_on_pages(texts: dict[str, str]) -> None:
    # Not a vacuous check: each word stands on a page, both scripts are there.
    assert len(WORDS) >= 20
    for word in WORDS:
        assert any(word in text for text in texts.values()), word
    hant = "".join(texts[p] for p in PAGES if "zh_hant" in p)
    hans = "".join(texts[p] for p in PAGES if "zh_hans" in p)
    assert "記憶體" in hant and "内存" in hans


@pytest.mark.parametrize("word", WORDS)
def test_a_chinese_word_finds_every_page_that_holds_it(
        site: Path, texts: dict[str, str], word: str) -> None:
    containing = {doc for doc, text in texts.items() if word in text}
    found = _found(_index(site), word) & set(PAGES)
    assert found == containing, (word, sorted(containing - found),
                                 sorted(found - containing))


@pytest.mark.parametrize("word", ENGLISH)
def test_english_search_is_as_before(site: Path, texts: dict[str, str],
                                     word: str) -> None:
    # Sphinx's English index: the stemmed word, on every page where it stands.
    from sphinx.search.en import SearchEnglish

    index = _index(site)
    stemmed = SearchEnglish({}).stem(word)
    containing = {doc for doc, text in texts.items()
                  if re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text, re.I)}
    docs = set()
    for table in ("terms", "titleterms"):
        hit = index[table].get(stemmed, [])
        docs |= {index["docnames"][i] for i in ([hit] if isinstance(hit, int) else hit)}
    assert containing and containing <= docs, (word, sorted(containing - docs))


def test_the_splitter_leaves_text_without_han_as_english_splits_it() -> None:
    from sphinx.search.en import SearchEnglish
    text = "jax.shard_map(f, mesh=mesh) runs f per device; psum sums — 3.5 GB/s"
    assert split_text(text) == SearchEnglish({}).split(text)
    assert split_text("用shard_map分片") == ["用", "shard_map", "分", "片", "分片"]
    assert split_text("記憶體", single=False) == ["記憶", "憶體"]


@pytest.mark.skipif(shutil.which("node") is None,
                    reason="no Node.js to run the page's splitter")
def test_the_search_pages_splitter_cuts_a_query_as_the_index_does(site: Path) -> None:
    script = (site / "_static" / "language_data.js").read_text(encoding="utf-8")
    queries = [*WORDS, "shard_map 的分片", "一個裝置傳送多少位元組", "jax.numpy 𠀋字"]
    program = (script + "\nconsole.log(JSON.stringify("
               + json.dumps(queries) + ".map(splitQuery)));")
    out = subprocess.run(["node", "-e", program], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert json.loads(out) == [split_text(q, single=False) for q in queries]
