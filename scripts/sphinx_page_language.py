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
"""

from html import escape
from pathlib import PurePosixPath
from typing import Any

from sphinx.application import Sphinx

#: The editions, in the switcher's order, with the name each gives itself.
EDITIONS = {"en": "English", "zh-Hans": "简体中文", "zh-Hant": "繁體中文"}
INDEX = {"en": "book/index", "zh-Hans": "book/zh_hans/index",
         "zh-Hant": "book/zh_hant/index"}
FOLDERS = {"zh_hans": "zh-Hans", "zh_hant": "zh-Hant"}


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
    # Chapter 8 is Chinese only: a Traditional master and its Simplified edition.
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


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the settings and the handlers."""
    app.add_config_value("jaxcourse_page_languages", {}, "html")
    app.add_config_value("jaxcourse_page_twins", {}, "html")
    languages: dict[str, str] = {}
    groups: dict[str, dict[str, str]] = {}

    def collect(app: Sphinx) -> None:
        languages.update(page_languages(app.config.jaxcourse_page_languages))
        for group in twins(app.config.jaxcourse_page_twins):
            for docname in group.values():
                groups[docname] = group

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

    app.connect("builder-inited", collect)
    app.connect("html-page-context", on_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
