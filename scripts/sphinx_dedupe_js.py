"""Sphinx extension: drop duplicate inline scripts from the book's pages.

Sphinx 7.4 registers a script added after the builder started (as sphinx-thebe
and sphinx-togglebutton do) twice, once with ``None`` and once with ``""`` as its
file name, so each page declared ``const THEBE_JS_URL`` twice and the browser
raised ``SyntaxError: Identifier 'THEBE_JS_URL' has already been declared``.
Sphinx 8 fixes this; until the book moves to it, this keeps the first copy.
"""

from typing import Any

from sphinx.application import Sphinx


def _dedupe_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Keep the first of scripts with the same file name, attributes and body."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    kept = []
    for script in scripts:
        key = (
            getattr(script, "filename", None) or "",
            tuple(sorted(getattr(script, "attributes", {}).items())),
        )
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept  # in place: later handlers may still add page scripts


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the handler late, after every extension has added its scripts."""
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
