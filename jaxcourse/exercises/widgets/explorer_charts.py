"""Bar charts drawn beside an explorer's table: memory against the chip, and time.

The chapter 6 and 7 explorers (:mod:`.explorers_scaling`,
:mod:`.explorers_transformer`) show a table of numbers; "memory per device
against the chip's capacity" is read faster as bars. :func:`memory_chart`
draws the plan's memory per device, part by part (parameters, gradients,
optimizer, activations, ...), the compiled program's figure under it when
the explorer compiled, and a dashed line at the chip's HBM: a bar that does
not fit runs past the line, outlined in red and marked. :func:`time_chart`
draws the roofline's compute and communication time and the step.
:func:`beside` puts the charts beside the table (under it in a narrow output).

A chart is a small inline SVG written from the report's numbers, not a
matplotlib figure: it needs nothing installed, renders in JupyterLab, Colab
and the static book alike (an HTML widget's value), follows the notebook's
font and colour (``currentColor``), and a test reads it as text. Every bar
part is a ``<rect class="jc-bar">`` whose ``data-value`` is its number and
whose width is that number times one scale; the line is ``<line
class="jc-limit">`` at the chip's HBM; a row that does not fit is a ``<g
class="jc-row" data-over="true">``.

The labels are the catalogue's (:mod:`jaxcourse.messages`, keys ``chart_*``).
Each text of a chart is either a whole message or language-free (numbers and
units, a chip's name, "HBM"), and its summary (``<title>`` and
``aria-label``) a message whose fields are numbers: so the book's Chinese
editions, which translate the stored English widgets phrase by phrase
(:func:`jaxcourse.i18n.editions.translate_widgets`), show the chart the
Chinese kernel draws. Sizes are in decimal units, as the table writes them
(:func:`~.explorer_base.bytes_text`: 1 GB = 10⁹ bytes; the chips' HBM in
:data:`jaxcourse.scaling.HARDWARE` is given in the same GB).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...messages import LANGUAGES, message
from .explorer_base import _FAIL, _text_px, bytes_text, seconds_text

__all__ = ["CHART_CLASS", "CHART_COLOURS", "Bar", "bar_chart", "beside",
           "memory_chart", "time_chart"]

#: Class of a chart's ``<svg>`` element.
CHART_CLASS = "jc-chart"

#: Colour of each kind of bar part (Okabe and Ito's palette, which readers
#: with colour blindness tell apart too); its legend text is the message
#: ``chart_part_<kind>``. The compiled program's parts are greys: it is the
#: check, the plan's colours are what it checks.
CHART_COLOURS: dict[str, str] = {
    "params": "#0072B2", "grads": "#E69F00", "optimizer": "#009E73",
    "gathered": "#56B4E9", "activations": "#CC79A7", "scores": "#D55E00",
    "arguments": "#57606A", "temp": "#8C959F", "outputs": "#AFB8C1",
    "at_peak": "#AFB8C1",
    "compute": "#0072B2", "comm": "#E69F00", "step": "#57606A",
}

# Units of the axis, largest first (the table's: decimal, bytes_text's).
_UNITS = {"bytes": (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)),
          "seconds": (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))}
_VALUE_TEXT = {"bytes": bytes_text, "seconds": seconds_text}

# Geometry, in CSS pixels: the plot's width, a bar's height and a row's, the
# text size, and the legend's swatch.
_PLOT_PX, _BAR_PX, _ROW_PX, _FONT_PX, _SWATCH_PX = 300, 16, 26, 12, 10


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: its label and its parts, drawn end to end.

    Parameters
    ----------
    key : str
        The catalogue's key of the bar's label (:mod:`jaxcourse.messages`).
    parts : tuple of (str, float)
        ``(kind, value)``: a kind of :data:`CHART_COLOURS` and a value in the
        chart's unit (bytes or seconds). A part of 0 is not drawn.
    """

    key: str
    parts: tuple[tuple[str, float], ...]

    @property
    def total(self) -> float:
        """The bar's length: the sum of its parts."""
        return float(sum(value for _, value in self.parts))


def _axis(top: float) -> tuple[float, float]:
    """Return ``(step, end)`` of an axis from 0 past ``top``: 2 to 4 round steps."""
    if top <= 0:
        return 1.0, 1.0
    raw = top / 4
    power = 10.0 ** math.floor(math.log10(raw))
    # (20: where log10 rounded down past a power of ten.)
    step = next(m * power for m in (1, 2, 2.5, 5, 10, 20) if m * power >= raw)
    steps = math.ceil(top / step)
    if steps * step < top:                  # rounded below the top
        steps += 1
    return step, steps * step


def _tick_text(value: float, end: float, unit: str) -> str:
    name, size = next(((n, s) for n, s in _UNITS[unit] if end >= s), _UNITS[unit][-1])
    return f"{value / size:.4g} {name}"


def _widest(key: str) -> int:
    """Return the width of message ``key`` in its widest language, in CSS pixels.

    A chart is laid out the same in every language, so the book's editions,
    which translate the English chart's texts in place, draw the chart the
    Chinese kernel draws.
    """
    return max(_text_px(message(key, language)) for language in LANGUAGES)


def _num(x: float) -> str:
    return f"{x:.2f}"


def _text(x: float, y: float, text: str, anchor: str = "start", fill: str = "",
          extra: str = "") -> str:
    colour = f' fill="{fill}"' if fill else ' fill="currentColor"'
    return (f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}"{colour}{extra}>'
            f"{html.escape(text)}</text>")


def bar_chart(bars: Sequence[Bar], language: str, *, title: str, summary: str,
              unit: str, limit: float | None = None, limit_text: str = "",
              legend: bool = True) -> str:
    """Return an inline SVG of horizontal bars, with a line at ``limit``.

    Parameters
    ----------
    bars : sequence of Bar
        The bars, top to bottom.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the texts.
    title : str
        The catalogue's key of the text written above the bars.
    summary : str
        What the chart says, for a screen reader (``aria-label``) and as the
        chart's tooltip (``<title>``).
    unit : {"bytes", "seconds"}
        The values' unit: the axis and each bar's value are written in it.
    limit : float, optional
        A capacity (the chip's HBM): a dashed line there, labelled
        ``limit_text``; a bar longer than it is outlined in red, its value
        given as a share of it and flagged ("does not fit").
    legend : bool
        Name each kind of part under the axis (not needed when every bar is
        one part, named by its label).

    Returns
    -------
    str
        ``<svg class="jc-chart" role="img" ...>``, ``width`` CSS pixels wide
        (shrinking with a narrower output, ``max-width: 100%``).
    """
    value_text = _VALUE_TEXT[unit]
    over_text = message("chart_over", language)
    top_value = max([bar.total for bar in bars] + [limit or 0.0])
    step, end = _axis(top_value)
    scale = _PLOT_PX / end                     # CSS pixels per byte (or second)

    def over(bar: Bar) -> bool:
        return limit is not None and bar.total > limit

    def said(bar: Bar) -> str:
        share = f" ({bar.total / limit:.0%})" if limit else ""
        return value_text(bar.total) + share

    flag_px = _text_px("⚠ ") + _widest("chart_over")
    left = max(_widest(bar.key) for bar in bars) + 8
    # Room for each bar's value (and flag) past the plot's end.
    right = max(_text_px(said(bar)) + (flag_px if over(bar) else 0) for bar in bars)
    top = 22 + (18 if limit is not None else 0)
    axis_y = top + len(bars) * _ROW_PX
    kinds = list(dict.fromkeys(kind for bar in bars for kind, v in bar.parts if v > 0)
                 if legend else ())
    width = max(left + _PLOT_PX + right + 8, _widest(title))

    # The legend, wrapped to the chart's width.
    legend, x, y = [], 0.0, axis_y + 36
    for kind in kinds:
        name = message(f"chart_part_{kind}", language)
        item_px = _SWATCH_PX + 4 + _widest(f"chart_part_{kind}")
        if x and x + item_px > width:
            x, y = 0.0, y + 18
        legend.append(f'<rect x="{_num(x)}" y="{_num(y - _SWATCH_PX + 1)}" '
                      f'width="{_SWATCH_PX}" height="{_SWATCH_PX}" '
                      f'fill="{CHART_COLOURS[kind]}"/>'
                      + _text(x + _SWATCH_PX + 4, y, name))
        x += item_px + 8
    height = (y if kinds else axis_y + 16) + 8

    out = [_text(0, 14, message(title, language), extra=' font-weight="bold"')]
    for i, bar in enumerate(bars):
        y0 = top + i * _ROW_PX
        red = _FAIL if over(bar) else ""
        row = [_text(left - 8, y0 + 12, message(bar.key, language), "end", red)]
        start = 0.0
        for kind, value in bar.parts:
            if value <= 0:
                continue
            row.append(f'<rect class="jc-bar" data-part="{kind}" '
                       f'data-value="{float(value)!r}" '
                       f'x="{_num(left + start * scale)}" y="{y0}" '
                       f'width="{_num(value * scale)}" height="{_BAR_PX}" '
                       f'fill="{CHART_COLOURS[kind]}"/>')
            start += value
        end_x = left + bar.total * scale
        if over(bar):
            row.append(f'<rect class="jc-over" x="{_num(left)}" y="{y0 - 1}" '
                       f'width="{_num(bar.total * scale)}" height="{_BAR_PX + 2}" '
                       f'fill="none" stroke="{_FAIL}" stroke-width="2"/>')
        row.append(_text(end_x + 4, y0 + 12, said(bar), fill=red))
        if over(bar):
            # The word in a tspan of its own: the book's editions translate an
            # element's whole text.
            row.append(f'<text class="jc-flag" x="{_num(end_x + _text_px(said(bar)))}" '
                       f'y="{y0 + 12}" fill="{_FAIL}" font-weight="bold">'
                       f'<tspan>⚠ </tspan><tspan>{html.escape(over_text)}</tspan>'
                       "</text>")
        mark = ' data-over="true"' if over(bar) else ""
        out.append(f'<g class="jc-row" data-total="{bar.total!r}"{mark}>'
                   + "".join(row) + "</g>")

    # The axis: a line, and its ticks in the unit of its end.
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{_num(left + _PLOT_PX)}" '
               f'y2="{axis_y}" stroke="currentColor" stroke-opacity="0.5"/>')
    for k in range(round(end / step) + 1):
        tick_x = left + k * step * scale
        out.append(f'<line x1="{_num(tick_x)}" y1="{axis_y}" x2="{_num(tick_x)}" '
                   f'y2="{axis_y + 4}" stroke="currentColor" stroke-opacity="0.5"/>'
                   + _text(tick_x, axis_y + 16, _tick_text(k * step, end, unit),
                           "middle"))
    if limit is not None:
        limit_x = left + limit * scale
        label_px = _text_px(limit_text)
        anchor = ("end" if limit_x + label_px / 2 > width
                  else "start" if limit_x - label_px / 2 < 0 else "middle")
        out.append(f'<line class="jc-limit" data-value="{float(limit)!r}" '
                   f'x1="{_num(limit_x)}" y1="{top - 6}" x2="{_num(limit_x)}" '
                   f'y2="{axis_y}" stroke="currentColor" stroke-width="1.5" '
                   'stroke-dasharray="4 3"/>'
                   + _text(limit_x, top - 10, limit_text, anchor))
    out += legend
    label = html.escape(summary)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{CHART_CLASS}" '
            f'role="img" aria-label="{label}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-size="{_FONT_PX}" '
            'style="max-width:100%;height:auto;overflow:visible">'
            f"<title>{label}</title>{''.join(out)}</svg>")


def memory_chart(language: str, plan: Sequence[tuple[str, float]],
                 compiled: Sequence[tuple[str, float]] | None, hbm: float,
                 chip: str) -> str:
    """Return the chart of the memory per device against the chip's HBM.

    Parameters
    ----------
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    plan : sequence of (str, float)
        The plan's parts per device, in bytes (``(kind, bytes)``, kinds of
        :data:`CHART_COLOURS`).
    compiled : sequence of (str, float) or None
        The compiled program's parts, when the explorer compiled.
    hbm : float
        The chip's memory, in bytes.
    chip : str
        The chip's name (it labels the line at ``hbm``).
    """
    bars = [Bar("chart_plan", tuple(plan))]
    values = {"plan": bytes_text(bars[0].total), "pct": f"{bars[0].total / hbm:.0%}",
              "hbm": bytes_text(hbm)}
    key = "chart_memory_summary"
    if compiled is not None:
        bars.append(Bar("chart_compiled", tuple(compiled)))
        values["compiled"] = bytes_text(bars[1].total)
        key += "_compiled"
    return bar_chart(bars, language, title="chart_memory_title",
                     summary=message(key, language, **values), unit="bytes",
                     limit=hbm, limit_text=f"{chip} HBM {bytes_text(hbm)}")


def time_chart(language: str, time: Mapping[str, float]) -> str:
    """Return the chart of the roofline's compute and communication time per step.

    ``time`` holds ``compute``, ``communication`` and ``step`` (seconds), as
    :func:`jaxcourse.scaling.step_time` and
    :func:`jaxcourse.transformer.step_time` give them.
    """
    seconds = {"compute": time["compute"], "comm": time["communication"],
               "step": time["step"]}
    bars = [Bar(f"chart_part_{kind}", ((kind, value),))
            for kind, value in seconds.items()]
    summary = message("chart_time_summary", language,
                      **{k: seconds_text(v) for k, v in seconds.items()})
    return bar_chart(bars, language, title="chart_time_title",
                     summary=summary, unit="seconds", legend=False)


def beside(table: str, charts: Sequence[str]) -> str:
    """Return ``table`` with ``charts`` beside it (under it in a narrow output)."""
    return ("<div style='display:flex;flex-wrap:wrap;gap:12px 32px;"
            "align-items:flex-start'>"
            f"<div>{table}</div>"
            "<div style='display:flex;flex-direction:column;gap:16px'>"
            f"{''.join(charts)}</div></div>")
