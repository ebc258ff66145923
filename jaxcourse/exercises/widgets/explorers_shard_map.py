"""Chapter 5's explorer: pick a collective, a mesh size and a block size.

:class:`CollectiveExplorer` runs the chosen collective inside ``shard_map`` on
a one-axis mesh of 2, 4 or 8 devices, each holding a block of consecutive
numbers, and shows what every device holds before and after (a drawing by
:func:`jaxcourse.collectives.draw_collective`), which collective XLA compiled,
whether the result matches the NumPy model of the collective, and about how
many bytes each device sends. The work is done by :func:`describe`, a plain
function; the widget only wires the controls to it, so tests drive it without
a browser.

It needs 8 devices: call ``jaxcourse.devices.use_cpu_devices(8)`` first.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np

from jaxcourse.collectives import (
    NAMES,
    bytes_sent,
    draw_collective,
    line_mesh,
    per_device_program,
    run_collective,
    simulate,
)

from ...messages import message
from .explorer_base import (
    Explorer,
    controls_row,
    figure_image,
    show_figure,
    slider_style,
)
from .explorers_sharding import collectives

__all__ = ["DEVICE_COUNTS", "CollectiveExplorer", "collective_explorer", "describe",
           "example_blocks", "problem"]

DEVICE_COUNTS = (2, 4, 8)
MAX_LENGTH = 16
_SHOWN = 8  # entries of a block written out in the text; more are elided


def example_blocks(n: int, length: int) -> np.ndarray:
    """Return ``(n, length)`` float32 blocks: device ``d`` holds d*length, ..."""
    return np.arange(n * length, dtype=np.float32).reshape(n, length)


def problem(name: str, n: int, length: int, language: str = "en") -> str:
    """Say why ``name`` cannot run on these blocks ("" when it can)."""
    if name in ("psum_scatter", "all_to_all") and length % n:
        return message("collective_problem", language, name=name, n=n, length=length)
    return ""


def _entries(values: np.ndarray, language: str) -> str:
    shown = ", ".join(f"{v:g}" for v in values[:_SHOWN])
    more = (message("collective_more", language, n=len(values))
            if len(values) > _SHOWN else "")
    return f"[{shown}{more}]"


def describe(name: str, n: int, length: int, language: str = "en") -> str:
    """Run collective ``name`` on ``n`` devices; say what every device held.

    Returns
    -------
    str
        Deterministic lines: what the program compiled to, whether it agrees
        with the NumPy model, the bytes each device sends, and every device's
        block before and after (or why the settings are impossible).
    """
    why = problem(name, n, length, language)
    if why:
        return why
    blocks = example_blocks(n, length)
    mesh = line_mesh(n)
    got = run_collective(name, blocks, mesh)
    expected, _ = simulate(name, blocks)
    compiled = collectives(per_device_program(name, mesh), blocks)
    sent = bytes_sent(name, n, length)
    matches = np.array_equal(got, expected)
    lines = [
        message("collective_head", language, name=name, n=n, length=length,
                size=4 * length),
        message("collective_compiled", language, collectives=", ".join(compiled)
                or message("collective_none", language)),
        message("collective_matches", language,
                answer=message("yes" if matches else "no", language)),
        message("collective_sends", language, sent=sent, blocks=sent / (4 * length)),
    ]
    for d in range(n):
        lines.append(message("collective_device", language, d=d,
                             before=_entries(blocks[d], language),
                             after=_entries(got[d], language)))
    return "\n".join(lines)


class CollectiveExplorer(Explorer):
    """A collective, a mesh size and a block length; redraws on every change.

    Parameters
    ----------
    collective : str
        Initial collective, one of :data:`jaxcourse.collectives.NAMES`.
    devices : int
        Initial number of devices, one of :data:`DEVICE_COUNTS`.
    length : int
        Initial block length (entries per device), 1 to 16.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels (the drawing's own are English).
    run : bool
        Draw once right away.
    """

    def __init__(self, collective: str = "psum", devices: int = 4, length: int = 4,
                 *, language: str = "en", run: bool = True) -> None:
        super().__init__(language)
        self.figure: Any = None
        self.summary_text = ""
        style = {"description_width": "initial"}
        self.collective = widgets.Dropdown(
            options=list(NAMES), value=collective, description=self.label("collective"),
            style=style, layout=widgets.Layout(width="auto"))
        self.devices = widgets.Dropdown(
            options=list(DEVICE_COUNTS), value=devices,
            description=self.label("devices"), style=style,
            layout=widgets.Layout(width="auto"))
        self.length = widgets.IntSlider(
            value=length, min=1, max=MAX_LENGTH,
            **slider_style(self.label("collective_entries"), MAX_LENGTH - 1))
        self.drawing = figure_image()
        self.summary = widgets.HTML()
        self._on_change(self.redraw, self.collective, self.devices, self.length)
        self._assemble([controls_row(self.collective, self.devices, self.length)],
                       [self.drawing, self.summary])
        self._start(run, self.redraw)

    @property
    def settings(self) -> tuple[str, int, int]:
        """``(collective, devices, length)`` from the controls."""
        return self.collective.value, self.devices.value, self.length.value

    def redraw(self) -> str:
        """Run the collective, redraw the picture and the text; return the text."""
        import matplotlib.pyplot as plt

        name, n, length = self.settings
        if self.figure is not None:
            plt.close(self.figure)
            self.figure = None
        self.summary_text = describe(name, n, length, self.language)
        if not problem(name, n, length):
            self.figure = draw_collective(name, example_blocks(n, length),
                                          language=self.language)
        show_figure(self.drawing, self.figure)
        if self.figure is not None:
            # Kept as PNG bytes in the widget; closed so a notebook shows it once.
            plt.close(self.figure)
        self.summary.value = "<pre>" + html.escape(self.summary_text) + "</pre>"
        return self.summary_text

    def live_text(self) -> str:
        """Return a deterministic plain-text form (for stored notebook outputs)."""
        return self.label("collective_text")


def collective_explorer(**initial: Any) -> CollectiveExplorer:
    """Build the collective explorer (drawn right away)."""
    return CollectiveExplorer(**initial)
