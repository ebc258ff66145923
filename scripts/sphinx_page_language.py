"""Sphinx extension: each page's own language, and a switcher between editions.

The book is English with Chinese editions. Browsers pick a CJK font's glyph
variant from the page's language: under ``lang="en"`` Chinese is drawn with
the Japanese shapes of Noto Sans CJK. So every page declares its language in
``<html lang>``: a chapter's comes from the course's manifest
(:func:`jaxcourse.course.topics`: the chapter, its solution notebook and its
student notebook), an edition's from its folder (``zh_hans/``, ``zh_hant/``,
:mod:`jaxcourse.i18n`), other pages' from the ``jaxcourse_page_languages``
setting (``docname: language``).

Every page also starts with a line of links to the same page in the other
editions (English, 简体中文, 繁體中文). A page that has no such twin links to
that edition's index page instead.

One build holds every edition, and Sphinx translates a theme's labels into one
language, the book's (``language: en``). So a Chinese page gets its own: the
sidebar, search, contents and header buttons are looked up in the catalogs the
themes and Sphinx ship for that language (:func:`theme_translations`). And an
edition of a numbered chapter takes its English twin's number, for its title
and every section heading (:func:`number_sections`): the editions' parts of the
table of contents are not numbered, since Sphinx would count their pages on
from the English chapters' last number. Chapter 9, Chinese only, is numbered
the same way, from its file's name (:func:`chinese_chapters`).
"""

import functools
import gettext
from html import escape
from pathlib import Path, PurePosixPath
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

#: The editions, in the switcher's order, with the name each gives itself.
EDITIONS = {"en": "English", "zh-Hans": "简体中文", "zh-Hant": "繁體中文"}
INDEX = {"en": "book/index", "zh-Hans": "book/zh_hans/index",
         "zh-Hant": "book/zh_hant/index"}
FOLDERS = {"zh_hans": "zh-Hans", "zh_hant": "zh-Hant"}
#: Each edition's catalogs, most specific first. pydata-sphinx-theme's Chinese
#: is Simplified only (``zh``): Traditional pages do without it.
LOCALES = {"zh-Hans": ["zh_CN", "zh"], "zh-Hant": ["zh_TW"]}


def _doc(path: str) -> str:
    return str(PurePosixPath(path).with_suffix(""))


def page_languages(extra: dict[str, str]) -> dict[str, str]:
    """Return ``docname -> language`` for every page that is not in English."""
    from jaxcourse.course import topics

    found = {}
    for topic in topics():
        if topic.language != "en":
            for path in (topic.chapter, topic.exercises, topic.student):
                found[_doc(path)] = topic.language
    found.update(extra)
    return found


def twins(extra: dict[str, dict[str, str]]) -> list[dict[str, str]]:
    """Return each group of pages that are one page in several editions."""
    from jaxcourse import i18n
    from jaxcourse.course import topics

    groups = [dict(INDEX)]
    for family in i18n.families():
        for master in family.masters:
            group = {"en": _doc(master)}
            for language in i18n.EDITIONS:
                group[language] = _doc(i18n.edition_path(master, language))
            groups.append(group)
    # Chapter 9 is Chinese only: a Traditional master and its Simplified edition.
    chinese = {t.key: t for t in topics() if t.language != "en"}
    for key, topic in chinese.items():
        twin = chinese.get(f"{key}_hans")
        if twin is not None:
            for first, second in ((topic.chapter, twin.chapter),
                                  (topic.exercises, twin.exercises),
                                  (topic.student, twin.student)):
                groups.append({topic.language: _doc(first),
                               twin.language: _doc(second)})
    groups.extend(extra.values())
    return groups


def chinese_chapters(extra: dict[str, int]) -> dict[str, tuple[int]]:
    """Return ``docname -> (number,)`` for the chapters written in Chinese.

    Chapter 9 has no English twin to take a number from, and its part of the
    table of contents is not numbered: its number is its file's (``08_…``), as
    its title there says. ``extra`` adds pages (``docname: number``).
    """
    from jaxcourse.course import topics

    found = {_doc(t.chapter): (int(PurePosixPath(t.chapter).name.split("_")[0]),)
             for t in topics() if t.language != "en"}
    found.update({doc: (int(number),) for doc, number in extra.items()})
    return found


#: The themes' labels that their catalogs lack in a language, or give in the
#: other script, in the course's own words. Looked up first.
COURSE_LABELS = {
    "zh-Hans": {
        "Print to PDF": "打印为 PDF",
        "Search this book...": "搜索本书…",
        "Launch interactive content": "启动交互式环境",
        "Launch on %(service)s": "在 %(service)s 上启动",
        "© Copyright %(copyright)s.": "© 版权所有 %(copyright)s。",
        "Color mode": "颜色模式",
        "System Settings": "跟随系统设置",
        "Open issue": "创建议题",
        "Repository": "仓库",
        "Source repository": "源代码仓库",
        "Source repositories": "源代码仓库",
        "Link to this heading": "链接到此标题",
        "Breadcrumb": "导航路径",
    },
    "zh-Hant": {
        "© Copyright %(copyright)s.": "© 版權所有 %(copyright)s。",
        "Search this book...": "搜尋本書…",
        "Launch interactive content": "啟動互動式環境",
        "Launch on %(service)s": "在 %(service)s 上啟動",
        "Color mode": "色彩模式",
        "System Settings": "依系統設定",
        "Light": "淺色",
        "Dark": "深色",
        "Skip to main content": "跳到主要內容",
        "Back to top": "回到頁首",
        "On this page": "本頁內容",
        "Section Navigation": "章節導覽",
        "Site navigation": "網站導覽",
        "Home": "首頁",
        "Open issue": "開啟議題",
        "Repository": "儲存庫",
        "Source repository": "原始碼儲存庫",
        "Source repositories": "原始碼儲存庫",
        "Version warning": "版本警告",
        "Breadcrumb": "導覽路徑",
    },
}
#: Sphinx's writer titles each permalink in the build's language, in the body.
PERMALINK_TITLES = ("Link to this heading", "Link to this code", "Link to this image",
                    "Link to this table", "Link to this equation",
                    "Link to this definition", "Link to this term")


class _Labels(gettext.NullTranslations):
    """A catalog from a dict (the course's own labels), then its fallbacks."""

    def __init__(self, labels: dict[str, str]) -> None:
        super().__init__()
        self._labels = labels

    def gettext(self, message: str) -> str:
        """Return ``message`` translated, else what the fallbacks say."""
        if message in self._labels:
            return self._labels[message]
        return super().gettext(message)


def _chain(domains: list[tuple[str, Path]], language: str) -> gettext.NullTranslations:
    """Chain the course's labels and the catalogs of ``domains`` in ``language``.

    Only catalogs made for one of the language's own locales count: gettext's
    own search would also take ``zh`` (pydata-sphinx-theme's, Simplified) for
    ``zh_TW``.
    """
    first = _Labels(COURSE_LABELS.get(language, {}))
    for domain, folder in domains:
        for locale in LOCALES[language]:
            mo = folder / locale / "LC_MESSAGES" / f"{domain}.mo"
            if mo.is_file():
                with open(mo, "rb") as file:
                    first.add_fallback(gettext.GNUTranslations(file))
    return first


@functools.cache
def theme_translations(language: str) -> tuple[gettext.NullTranslations,
                                               gettext.NullTranslations]:
    """Return the themes' and Sphinx's labels in ``language``, as two catalogs.

    The first is what sphinx-book-theme's templates call ``translate``: its
    own catalog (``booktheme``) first. The second is what every template calls
    ``_`` (Sphinx's ``sphinx`` domain): pydata-sphinx-theme's catalog and
    Sphinx's own first. Each looks in :data:`COURSE_LABELS` before them and
    falls back on the others; a label none of them has stays English.
    """
    import pydata_sphinx_theme
    import sphinx
    import sphinx_book_theme

    book = ("booktheme", sphinx_book_theme.get_html_theme_path() / "static" / "locales")
    pydata = ("sphinx", Path(pydata_sphinx_theme.__file__).parent / "locale")
    core = ("sphinx", Path(sphinx.__file__).parent / "locale")
    return (_chain([book, pydata, core], language),
            _chain([pydata, core, book], language))


def _translated_buttons(buttons: list[dict], translate: Any) -> list[dict]:
    """Return the theme's header buttons with their labels in ``translate``'s language.

    The theme wrote them in English (the build's language), a launch button's
    as "Launch on" and the service's name, which Chinese puts in the middle.
    """
    out = []
    for button in buttons:
        button = dict(button)
        for key in ("tooltip", "text"):
            text = button.get(key)
            if isinstance(text, str) and text.startswith("Launch on "):
                button[key] = translate("Launch on %(service)s") % {
                    "service": text[len("Launch on "):]}
            elif isinstance(text, str):
                button[key] = translate(text)
        if isinstance(button.get("buttons"), list):
            button["buttons"] = _translated_buttons(button["buttons"], translate)
        out.append(button)
    return out


def translate_page(context: dict[str, Any], language: str) -> None:
    """Put a page's theme labels in ``language`` (its context, before rendering).

    Templates look ``_``/``gettext`` and ``translate`` up in the page's context
    before the build-wide ones, so replacing them there translates this page
    only.
    """
    book, pydata = theme_translations(language)
    context["translate"] = book.gettext
    context["gettext"] = pydata.gettext
    context["ngettext"] = pydata.ngettext
    # Jupyter Book sets the search box's text; where it is none the catalogs
    # know, the theme's own default, translated.
    searching = context.get("theme_search_bar_text", "")
    translated = book.gettext(searching) if searching else searching
    context["theme_search_bar_text"] = (translated if translated != searching
                                        else book.gettext("Search") + "…")
    if isinstance(context.get("body"), str):
        for title in PERMALINK_TITLES:
            context["body"] = context["body"].replace(
                f'title="{title}"', f'title="{escape(pydata.gettext(title))}"')
    if isinstance(context.get("header_buttons"), list):
        context["header_buttons"] = _translated_buttons(context["header_buttons"],
                                                        book.gettext)


def number_sections(toc: nodes.Node, chapter: tuple[int, ...]) -> dict[str, tuple]:
    """Return a page's section numbers, as chapter ``chapter``'s.

    Its title gets ``chapter`` (say 2), its sections 2.1, 2.2, 2.2.1 … ``toc`` is the
    page's own table of contents (``env.tocs``); each section's entry there gets
    its number too, for the page's contents list. The title's entry does not:
    the sidebar shows it under the table of contents' own title, which for an
    edition carries the number already. The numbers are returned by anchor, as
    ``env.toc_secnumbers`` holds them (``""``: the title).
    """
    numbers: dict[str, tuple] = {}

    def walk(bullets: nodes.Node, prefix: tuple[int, ...], top: bool) -> None:
        count = 0
        for item in bullets.children:
            if not isinstance(item, nodes.list_item):
                continue
            count += 1
            number = chapter if top else prefix + (count,)
            for child in item.children:
                if isinstance(child, addnodes.compact_paragraph):
                    numbers[child[0]["anchorname"]] = number
                    if not top:
                        child[0]["secnumber"] = list(number)
                elif isinstance(child, nodes.bullet_list):
                    walk(child, number, False)

    walk(toc, (), True)
    return numbers


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the settings and the handlers."""
    app.add_config_value("jaxcourse_page_languages", {}, "html")
    app.add_config_value("jaxcourse_page_twins", {}, "html")
    app.add_config_value("jaxcourse_chapter_numbers", {}, "html")
    languages: dict[str, str] = {}
    groups: dict[str, dict[str, str]] = {}
    chapters: dict[str, tuple[int]] = {}

    def collect(app: Sphinx) -> None:
        languages.update(page_languages(app.config.jaxcourse_page_languages))
        for group in twins(app.config.jaxcourse_page_twins):
            for docname in group.values():
                groups[docname] = group
        chapters.update(chinese_chapters(app.config.jaxcourse_chapter_numbers))

    def language_of(pagename: str) -> str:
        for folder, language in FOLDERS.items():
            if f"/{folder}/" in f"/{pagename}":
                return language
        return languages.get(pagename, "en")

    def switcher(app: Sphinx, pagename: str) -> str:
        here = language_of(pagename)
        group = groups.get(pagename, {})
        links = []
        for language, name in EDITIONS.items():
            if language == here:
                links.append(f'<strong lang="{language}">{escape(name)}</strong>')
                continue
            target = group.get(language, INDEX[language])
            if target not in app.env.all_docs:
                continue
            uri = app.builder.get_relative_uri(pagename, target)
            same = "same-page" if language in group else "index"
            links.append(f'<a href="{escape(uri)}" lang="{language}"'
                         f' hreflang="{language}"'
                         f' class="jaxcourse-edition {same}">{escape(name)}</a>')
        return ('<nav class="jaxcourse-editions" aria-label="Language / 语言 / 語言">'
                + " · ".join(links) + "</nav>\n")

    def on_page(app: Sphinx, pagename: str, templatename: str,
                context: dict[str, Any], doctree: Any) -> None:
        language = language_of(pagename)
        if language != "en":
            context["language"] = language
        if doctree is not None and "body" in context:
            context["body"] = switcher(app, pagename) + context["body"]

    def on_page_labels(app: Sphinx, pagename: str, templatename: str,
                       context: dict[str, Any], doctree: Any) -> None:
        language = language_of(pagename)
        if language in LOCALES:
            translate_page(context, language)

    def number_editions(app: Sphinx, env: BuildEnvironment) -> list[str]:
        # After Sphinx has numbered the English chapters (its own handler of
        # this event runs at the default priority).
        renumbered = []
        for docname in sorted(set(groups) | set(chapters)):
            master = groups.get(docname, {}).get("en")
            chapter = env.toc_secnumbers.get(master or "", {}).get("") \
                or chapters.get(docname)
            if docname == master or not chapter or docname not in env.tocs \
                    or env.toc_secnumbers.get(docname):
                continue
            env.toc_secnumbers[docname] = number_sections(env.tocs[docname],
                                                          tuple(chapter))
            if docname in env.titles:
                env.titles[docname]["secnumber"] = list(chapter)
            renumbered.append(docname)
        return renumbered

    app.connect("builder-inited", collect)
    app.connect("html-page-context", on_page)
    # After the themes' own handlers (the book theme's buttons come at 501).
    app.connect("html-page-context", on_page_labels, priority=900)
    app.connect("env-get-updated", number_editions, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
