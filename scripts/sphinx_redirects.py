"""Sphinx extension: keep the book's old page addresses working.

The chapters were renamed so that one key names each chapter everywhere
(``book/03_vmap_bayesian`` became ``book/03_bayes``). Links to the old
addresses live on in bookmarks, slides and course pages, so for each old page
named in the configuration value ``jaxcourse_redirects`` (old document name to
new one, without suffix) the HTML build writes a small page at the old
address that sends the reader on to the new one, and tells search engines
which address is canonical.

Why not sphinx-reredirects, the maintained extension that writes such pages:
it is not in the course's pinned environment, and this file is short and does
two things that extension's pages do not: it carries the old address's
``#fragment`` on to the new page (a link to a section keeps working), and it
names the canonical address and keeps the old one out of search engines
(``rel=canonical``, ``noindex``). Adopting the extension means pinning it in
requirements.txt and moving ``jaxcourse_redirects`` to its ``redirects``
setting (with ``.html`` targets); tests/test_book_browser.py follows the
old addresses in a browser either way.
"""

from __future__ import annotations

import html
import posixpath
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Moved: {title}</title>
<link rel="canonical" href="{target}">
<meta http-equiv="refresh" content="0; url={target}">
<meta name="robots" content="noindex">
</head>
<body>
<p>This page has moved to <a href="{target}">{title}</a>.</p>
<script>location.replace({target_js} + location.hash);</script>
</body>
</html>
"""


def write_redirects(app: Sphinx, exception: Exception | None) -> None:
    """Write one page per old address once an HTML build has finished."""
    if exception is not None or app.builder.format != "html":
        return
    known = set(app.env.found_docs)
    for old, new in app.config.jaxcourse_redirects.items():
        if new not in known:
            raise ValueError(f"jaxcourse_redirects: {old} -> {new}: no page {new}")
        if old in known:
            raise ValueError(f"jaxcourse_redirects: {old} is still a page")
        target = posixpath.relpath(new, posixpath.dirname(old) or ".") + ".html"
        path = Path(app.outdir, old + ".html")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PAGE.format(title=html.escape(new), target=html.escape(target),
                                    target_js=repr(target)), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the configuration value and the handler."""
    app.add_config_value("jaxcourse_redirects", {}, "html", dict)
    app.connect("build-finished", write_redirects)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
