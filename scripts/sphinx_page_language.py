"""Sphinx extension: declare each page's own language in ``<html lang>``.

The book is English with Chinese chapters. Browsers pick a CJK font's glyph
variant from the page's language: under ``lang="en"`` Chinese is drawn with
the Japanese shapes of Noto Sans CJK. Each chapter's language comes from the
course's manifest (:func:`jaxcourse.course.topics`: the chapter, its solution
notebook and its student notebook); other pages from the
``jaxcourse_page_languages`` setting (``docname: language``).
"""

from pathlib import PurePosixPath
from typing import Any

from sphinx.application import Sphinx


def page_languages(extra: dict[str, str]) -> dict[str, str]:
    """Return ``docname -> language`` for every page that is not in English."""
    from jaxcourse.course import topics

    found = {}
    for topic in topics():
        if topic.language != "en":
            for path in (topic.chapter, topic.exercises, topic.student):
                found[str(PurePosixPath(path).with_suffix(""))] = topic.language
    found.update(extra)
    return found


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the setting and the handler."""
    app.add_config_value("jaxcourse_page_languages", {}, "html")
    languages: dict[str, str] = {}

    def collect(app: Sphinx) -> None:
        languages.update(page_languages(app.config.jaxcourse_page_languages))

    def set_language(app: Sphinx, pagename: str, templatename: str,
                     context: dict[str, Any], doctree: Any) -> None:
        if pagename in languages:
            context["language"] = languages[pagename]

    app.connect("builder-inited", collect)
    app.connect("html-page-context", set_language)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
