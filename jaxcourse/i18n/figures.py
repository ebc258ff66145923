"""A figure's labels in an edition: read from the master's SVG, written translated.

``scripts/run_notebook.py`` stores, beside each figure's PNG, the figure's SVG
(:data:`jaxcourse.plotting.FIGURE_TEXT_KEY`), drawn with ``svg.fonttype``
``"none"`` so that each label is one ``<text>`` element. Its labels with words
in them are catalog entries (``msgctxt "figure"``); an edition shows the SVG
with them translated and drawn in the edition's CJK fonts, at the PNG's size.
"""

from __future__ import annotations

import copy
import html
import re

from .layout import FIGURE

# A label as matplotlib writes it with svg.fonttype "none" (mathtext, drawn as
# one <tspan> per glyph, is not matched: it stays as drawn).
_SVG_TEXT = re.compile(r"(<text\b[^>]*>)([^<]*)(</text>)")
_SVG_FONT = re.compile(r"font-family:[^;\"]*")
#: The fonts an edition's figure asks for, glyph shapes of its script first.
FIGURE_FONTS = {
    "zh-Hans": "'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', "
               "'Microsoft YaHei', 'DejaVu Sans', sans-serif",
    "zh-Hant": "'Noto Sans CJK TC', 'Source Han Sans TC', 'PingFang TC', "
               "'Microsoft JhengHei', 'DejaVu Sans', sans-serif",
}


def _figure_svg(output: dict) -> str | None:
    from ..plotting import FIGURE_TEXT_KEY, unpack_svg

    packed = output.get("metadata", {}).get(FIGURE_TEXT_KEY)
    return unpack_svg(packed) if packed else None


def _figure_texts(output: dict) -> list[str]:
    """Return the labels of an output's figure that have words to translate."""
    svg = _figure_svg(output)
    if svg is None:
        return []
    texts = (html.unescape(m.group(2)) for m in _SVG_TEXT.finditer(svg))
    # Tick labels and other numbers stay as they are.
    return list(dict.fromkeys(t for t in texts if re.search(r"[A-Za-z]{2}", t)))


def _translate_figure(output: dict, done: dict, language: str) -> dict:
    """Return ``output`` with its figure as an SVG whose labels are in ``language``.

    Labels without a translation stay English. The SVG is shown at the size of
    the PNG it replaces; its text asks for the edition's CJK fonts, so a browser
    draws the script's own glyph shapes.
    """
    svg = _figure_svg(output)
    if svg is None:
        return output

    def label(match: re.Match) -> str:
        opening, text, closing = match.groups()
        new = done.get((FIGURE, html.unescape(text)))
        opening = _SVG_FONT.sub("font-family: " + FIGURE_FONTS[language], opening)
        return opening + (html.escape(new, quote=False) if new else text) + closing

    svg = _SVG_TEXT.sub(label, svg)
    start = svg.index("<svg")
    end = svg.index(">", start)
    tag = svg[start:end]
    shown = output.get("metadata", {}).get("image/png", {})
    for name in ("width", "height"):
        if name in shown:
            tag = re.sub(rf'\b{name}="[^"]*"', f'{name}="{shown[name]}px"', tag)
    # From <svg> on, without the XML prolog: a notebook's SVG output is an element.
    svg = tag + f' xml:lang="{language}"' + svg[end:]
    out = copy.deepcopy(output)
    out["data"] = {k: v for k, v in out["data"].items() if not k.startswith("image/")}
    out["data"]["image/svg+xml"] = svg
    out["metadata"] = {}
    return out
