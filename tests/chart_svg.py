"""Read the explorers' bar charts back from SVG (exercises.widgets.explorer_charts).

The tests of the chapter 6 and 7 explorers and of the chart itself parse the
SVG an explorer shows and check it as geometry: every bar part's width is its
value times one scale, the parts of a bar follow each other from the axis's
origin, the line at the chip's HBM sits at the HBM's value on that scale.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

SVG = "{http://www.w3.org/2000/svg}"
#: Widths and positions are written to 0.01 px.
PX = 0.006


@dataclass
class Row:
    """One bar of a chart, as drawn."""

    parts: dict[str, float]        # kind -> value
    total: float
    over: bool                     # marked data-over="true"
    outlined: float | None         # the red outline's width, if any
    texts: list[str]
    fill: str | None               # the label's colour
    start: float | None            # x where the bar begins
    end: float | None              # x where it ends


@dataclass
class Chart:
    """A chart as drawn: its rows, scale, origin and line at the limit."""

    svg: ET.Element
    summary: str
    rows: list[Row]
    origin: float
    scale: float                   # CSS px per byte (or second)
    limit: float | None
    limit_x: float | None
    texts: list[str]
    most: float                    # the longest part's value (the scale's source)

    def near(self, x: float, want: float, value: float) -> bool:
        """Whether ``x`` is ``want``, an x or width made from ``value``, on screen."""
        return _near(x, want, value, self.most)


def _near(x: float, want: float, value: float, most: float) -> bool:
    # The scale is read from a width written to 0.01 px (the longest part's,
    # of value ``most``): its error grows with the value it multiplies.
    return abs(x - want) <= PX + value * PX / most


def charts(html: str) -> list[ET.Element]:
    """Return the ``<svg>`` elements of an explorer's HTML, parsed."""
    return [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", html, re.S)]


def svg_texts(html: str) -> list[str]:
    """Return the texts of every chart in ``html`` (each ``<text>`` whole)."""
    return [text for svg in charts(html) for text in _texts(svg)]


def _texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in element.iter(f"{SVG}text")]


def read(svg: ET.Element) -> Chart:
    """Parse a chart and check its geometry (proportional, stacked, one origin).

    Raises ``AssertionError`` where a part's width is not its value times the
    chart's scale, where a bar's parts do not follow each other from the
    origin, or where the line at the limit is not at the limit's value.
    """
    assert svg.get("class") == "jc-chart" and svg.get("role") == "img"
    title = svg.find(f"{SVG}title")
    assert title is not None and title.text == svg.get("aria-label") != ""
    rects = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "jc-bar"]
    assert rects, "a chart with no bar"
    longest = max(rects, key=lambda r: float(r.get("data-value")))
    most = float(longest.get("data-value"))
    scale = float(longest.get("width")) / most

    def near(x: float, want: float, value: float) -> bool:
        return _near(x, want, value, most)

    rows, origins = [], set()
    for group in svg.iter(f"{SVG}g"):
        if group.get("class") != "jc-row":
            continue
        parts, start, before, end = {}, None, 0.0, None
        for rect in group.iter(f"{SVG}rect"):
            if rect.get("class") != "jc-bar":
                continue
            value, left = float(rect.get("data-value")), float(rect.get("x"))
            assert value > 0, "a part of 0 is drawn"
            assert near(float(rect.get("width")), value * scale, value), (
                f"{rect.get('data-part')}: width {rect.get('width')} is not "
                f"{value} × {scale}")
            if start is None:
                start = left
                origins.add(round(left, 2))
            # Each part begins where the ones before it end.
            assert near(left - start, before * scale, before), (
                f"{rect.get('data-part')} begins at {left}, not after the parts "
                "before it")
            before += value
            end = left + float(rect.get("width"))
            parts[rect.get("data-part")] = parts.get(rect.get("data-part"), 0) + value
        total = float(group.get("data-total"))
        assert abs(sum(parts.values()) - total) <= 1e-9 * max(total, 1)
        outline = [r for r in group.iter(f"{SVG}rect") if r.get("class") == "jc-over"]
        label = next(group.iter(f"{SVG}text"))
        rows.append(Row(parts, total, group.get("data-over") == "true",
                        float(outline[0].get("width")) if outline else None,
                        _texts(group), label.get("fill"), start, end))
    assert len(origins) == 1, f"bars start at {origins}"
    origin = origins.pop()
    for row in rows:
        if row.start is None:          # a bar of 0: nothing drawn
            row.start = row.end = origin
    limit = limit_x = None
    lines = [ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "jc-limit"]
    if lines:
        limit, limit_x = float(lines[0].get("data-value")), float(lines[0].get("x1"))
        assert near(limit_x, origin + limit * scale, limit), (
            f"the line at {limit} is at x={limit_x}, not "
            f"{origin + limit * scale}")
    return Chart(svg, svg.get("aria-label"), rows, origin, scale, limit, limit_x,
                 _texts(svg), most)


def memory_and_time(html: str) -> tuple[Chart, Chart]:
    """Return an explorer's two charts, read: the memory's, then the time's."""
    found = charts(html)
    assert len(found) == 2, f"{len(found)} charts"
    return read(found[0]), read(found[1])


def check_flags(chart: Chart) -> None:
    """Check that a bar is flagged exactly when it runs past the chart's limit."""
    assert chart.limit is not None
    for row in chart.rows:
        past = row.total > chart.limit
        assert row.over == past, (row.total, chart.limit)
        # The bar's end is as far from the line as its value from the limit
        # (three positions written to 0.01 px, and the scale read from one).
        gap = (row.total - chart.limit) * chart.scale
        assert abs(row.end - chart.limit_x - gap) <= (
            3 * PX + (row.total + chart.limit) * PX / chart.most), (row.end, gap)
        if past:
            # Drawn past the line, outlined and marked in red.
            assert row.end > chart.limit_x - 2 * PX - row.total * PX / chart.most
            assert chart.near(row.outlined, row.total * chart.scale, row.total)
            assert row.fill == "#cf222e"
        else:
            assert row.end <= chart.limit_x + 2 * PX + row.total * PX / chart.most
            assert row.outlined is None and row.fill == "currentColor"


def translated(html: str, language: str) -> str:
    """Return ``html`` as the book's ``language`` edition stores it.

    The editions translate the English chapter's stored widget state
    (:func:`jaxcourse.i18n.editions.translate_widgets`).
    """
    from jaxcourse.i18n.editions import translate_widgets

    key = "application/vnd.jupyter.widget-state+json"
    metadata = {"widgets": {key: {"state": {"m": {"state": {"value": html}}}}}}
    return translate_widgets(metadata, {}, language)["widgets"][key]["state"]["m"][
        "state"]["value"]


def english_words(texts: list[str]) -> list[str]:
    """Return the texts with an English word: not a unit, chip, "HBM", "Adam", "XLA"."""
    allowed = re.compile(r"\b(?:HBM|Adam|XLA|SXM|GB|TB|MB|kB|ms|µs|ns|s|B|H100|"
                         r"A100|TPU|v5[ep]|80GB)\b")
    return [t for t in texts if re.search(r"[A-Za-z]{2,}", allowed.sub("", t))]
