"""The book's Chinese pages: the theme's labels in their language, chapters numbered.

One build holds every edition, in the book's language (English), so the page
extension (``scripts/sphinx_page_language.py``) gives each Chinese page the
themes' labels in its own language and each edition of a numbered chapter its
English twin's numbers. Checked on a small book built here with the course's
extension and theme (a few seconds); ``make book`` and the browser tests build
the real one.
"""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u3400-\u9fff]")

CONFIG = """\
title: "Small"
author: "The authors"
only_build_toc_files: true
execute:
  execute_notebooks: "off"
repository:
  url: https://github.com/example/small
  branch: main
launch_buttons:
  notebook_interface: jupyterlab
  binderhub_url: https://mybinder.org
html:
  use_repository_button: true
  use_issues_button: true
sphinx:
  local_extensions:
    sphinx_page_language: {scripts}
  config:
    language: en
    jaxcourse_page_languages:
      zh_s/two: zh-Hans
      zh_t/two: zh-Hant
      eight: zh-Hant
    jaxcourse_chapter_numbers:
      eight: 8
    jaxcourse_page_twins:
      two:
        en: two
        zh-Hans: zh_s/two
        zh-Hant: zh_t/two
"""
TOC = """\
format: jb-book
root: index
parts:
  - caption: First
    numbered: true
    chapters:
      - file: one
      - file: two
  - caption: 简体中文版
    chapters:
      - file: zh_s/two
        title: "2. 第二章"
  - caption: 繁體中文版
    chapters:
      - file: zh_t/two
        title: "2. 第二章"
  - caption: 中文
    chapters:
      - file: eight
        title: "8. 只有中文的一章"
"""
PAGES = {
    "index.md": "# Home\n\nThe start.\n",
    "one.md": "# One\n\nText.\n\n## Only part\n\nx\n",
    "two.md": "# Two\n\nText.\n\n## Part one\n\nx\n\n### Deeper\n\ny\n\n"
              "## Part two\n\nz\n",
    # The editions are notebooks, as in the book: they get the launch buttons.
    "zh_s/two.ipynb": "# 第二章\n\n文字。\n\n## 第一节\n\nx\n\n### 更深\n\ny\n\n"
                   "## 第二节\n\nz\n",
    "zh_t/two.ipynb": "# 第二章\n\n文字。\n\n## 第一節\n\nx\n\n### 更深\n\ny\n\n"
                   "## 第二節\n\nz\n",
    "eight.md": "# 只有中文的一章\n\n文字。\n\n## 唯一一節\n\nx\n",
}
# Labels the themes write outside the article, as a reader sees or hears them.
LABELS = {
    "contents": r'<h2>\s*([^<]*?)\s*</h2>',  # the "Contents" box's title
    "search": r'placeholder="([^"]*)"',
    "back to top": r'id="pst-back-to-top"[^>]*>.*?</i>\s*([^<]*?)\s*</button>',
    "skip": r'class="skip-link[^"]*"><a [^>]*>([^<]*)<',
    "print": r'class="[^"]*btn-download-pdf-button[^"]*"\s*title="([^"]*)"',
    "permalink": r'class="headerlink" href="[^"]*" title="([^"]*)"',
    "launch": r'title="([^"]*Binder[^"]*)"',
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the small book (in this process, as ``jupyter-book build`` does)."""
    from jupyter_book.sphinx import build_sphinx

    source = tmp_path_factory.mktemp("small-book")
    (source / "_config.yml").write_text(
        CONFIG.format(scripts=REPO / "scripts"), encoding="utf-8")
    (source / "_toc.yml").write_text(TOC, encoding="utf-8")
    for name, text in PAGES.items():
        path = source / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".ipynb":
            notebook = nbformat.v4.new_notebook(
                cells=[nbformat.v4.new_markdown_cell(text)])
            nbformat.write(notebook, path)
        else:
            path.write_text(text, encoding="utf-8")
    out = source / "_build" / "html"
    # What the command line passes (jupyter_book.cli.main.build), -W -n included.
    overrides = {"external_toc_path": (source / "_toc.yml").as_posix(),
                 "latex_individualpages": False, "nitpicky": True}
    with warnings.catch_warnings():
        # Python's deprecation warnings from the book's packages (docutils'
        # traverse() in sphinx-multitoc-numbering) are not Sphinx's warnings:
        # `jupyter-book build -W` does not fail on them, and neither does this.
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        # Nor a FutureWarning from a module this worker imported for another
        # test (torch.distributed.reduce_op, met while Sphinx inspects what is
        # loaded): under -W Sphinx would count it as its own.
        warnings.simplefilter("ignore", FutureWarning)
        result = build_sphinx(source, out, noconfig=True,
                              path_config=str(source / "_config.yml"),
                              confoverrides=overrides, warningiserror=True,
                              keep_going=True, really_quiet=True)
    assert result == 0, result
    return out


def _page(site: Path, doc: str) -> str:
    return (site / f"{doc}.html").read_text(encoding="utf-8")


def _headings(page: str) -> list[str]:
    article = re.search(r"<article.*?</article>", page, re.S).group(0)
    found = re.findall(r"<h([1-6])[^>]*>(.*?)<a class=\"headerlink\"", article, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", text)).strip() for _, text in found]


def _labels(page: str) -> dict[str, str]:
    outside = re.sub(r"<article.*?</article>", "", page, flags=re.S)
    found = {}
    for name, pattern in LABELS.items():
        match = re.search(pattern, page if name == "permalink" else outside, re.S)
        if match:  # an English page has no launch button (it is no notebook)
            found[name] = html.unescape(match.group(1)).strip()
    return found


def test_an_english_page_keeps_the_themes_english(site: Path) -> None:
    page = _page(site, "two")
    assert '<html lang="en"' in page
    assert _headings(page) == ["2. Two", "2.1. Part one", "2.1.1. Deeper",
                               "2.2. Part two"]
    assert _labels(page) == {
        "contents": "Contents", "search": "Search this book...",
        "back to top": "Back to top", "skip": "Skip to main content",
        "print": "Print to PDF",
        "permalink": "Link to this heading"}


@pytest.mark.parametrize(("doc", "language", "words"), [
    ("zh_s/two", "zh-Hans", ["第一节", "更深", "第二节"]),
    ("zh_t/two", "zh-Hant", ["第一節", "更深", "第二節"]),
])
def test_an_editions_page_is_numbered_as_its_english_twin(
        site: Path, doc: str, language: str, words: list[str]) -> None:
    page = _page(site, doc)
    assert f'<html lang="{language}"' in page
    assert _headings(page) == ["2. 第二章", f"2.1. {words[0]}", f"2.1.1. {words[1]}",
                               f"2.2. {words[2]}"]
    # The sidebar's entry keeps the table of contents' title, numbered once.
    assert "2. 2." not in page


def test_a_chapter_written_in_chinese_has_its_own_number(site: Path) -> None:
    page = _page(site, "eight")
    assert _headings(page) == ["8. 只有中文的一章", "8.1. 唯一一節"]
    assert "8. 8." not in page


@pytest.mark.parametrize(("doc", "expected"), [
    ("zh_s/two", {"contents": "目录", "search": "搜索本书…", "back to top": "回到顶部",
                  "skip": "跳转至主要内容", "print": "打印为 PDF",
                  "permalink": "链接到此标题", "launch": "在 Binder 上启动"}),
    ("zh_t/two", {"contents": "目錄", "search": "搜尋本書…", "back to top": "回到頁首",
                  "skip": "跳到主要內容", "print": "列印成 PDF",
                  "permalink": "連結到這個標頭", "launch": "在 Binder 上啟動"}),
])
def test_an_editions_page_labels_the_theme_in_its_language(
        site: Path, doc: str, expected: dict[str, str]) -> None:
    page = _page(site, doc)
    assert _labels(page) == expected
    # Nothing of the other script: Traditional pages use no Simplified catalog.
    other = "顶导录" if doc.startswith("zh_t") else "頂導錄"
    outside = re.sub(r"<article.*?</article>", "", page, flags=re.S)
    assert not set(other) & set(CJK.findall(outside)), doc
