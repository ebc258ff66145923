"""The batch-split explorer: which process loads which rows, on which device.

:class:`BatchSplitExplorer` has three sliders (number of processes, devices
per process, global batch size) and shows how a global batch sharded by rows,
``NamedSharding(mesh, P("batch"))`` on a one-axis mesh of every device, falls
on the processes and their devices: a drawing and a table, plus a warning
when the batch does not split evenly (``jax.make_array_from_process_local_data``
would then refuse it). The work is done by plain functions
(:func:`row_layout`, :func:`split_problem`, :func:`layout_table`,
:func:`draw_layout`); the widget only wires the sliders to them, so tests
drive it without a browser.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ...messages import message
from .explorer_base import (
    Explorer,
    controls_row,
    figure,
    figure_image,
    show_figure,
    slider_style,
)

__all__ = [
    "BatchSplitExplorer",
    "Block",
    "batch_split_explorer",
    "draw_layout",
    "layout_table",
    "row_layout",
    "split_problem",
]


@dataclass(frozen=True)
class Block:
    """The rows of the global batch that one device holds."""

    process: int
    local_device: int
    mesh_position: int
    start: int
    stop: int

    @property
    def rows(self) -> int:
        """How many rows the device holds."""
        return self.stop - self.start


def split_problem(global_batch: int, processes: int, devices_per_process: int,
                  language: str = "en") -> str:
    """Say why the batch cannot be sharded evenly ("" when it can)."""
    devices = processes * devices_per_process
    if global_batch % devices == 0:
        return ""
    lower = global_batch - global_batch % devices
    return message("split_problem", language, batch=global_batch, devices=devices,
                   processes=processes, per_process=devices_per_process,
                   lower=lower, upper=lower + devices)


def row_layout(global_batch: int, processes: int,
               devices_per_process: int) -> list[Block]:
    """Return the block of rows on every device, in mesh order.

    The mesh lists the devices process by process (process 0's devices
    first), as ``jax.make_mesh`` does for a one-axis mesh of CPU processes,
    so process ``p`` loads one contiguous block of the batch and splits it
    over its own devices.

    Raises
    ------
    ValueError
        If the batch does not split evenly (see :func:`split_problem`).
    """
    problem = split_problem(global_batch, processes, devices_per_process)
    if problem:
        raise ValueError(problem)
    per_device = global_batch // (processes * devices_per_process)
    blocks = []
    for p in range(processes):
        for d in range(devices_per_process):
            k = p * devices_per_process + d
            blocks.append(Block(p, d, k, k * per_device, (k + 1) * per_device))
    return blocks


def layout_table(global_batch: int, processes: int, devices_per_process: int,
                 language: str = "en") -> str:
    """Return the layout as an HTML table, or the warning when it is uneven."""
    problem = split_problem(global_batch, processes, devices_per_process, language)
    if problem:
        return f"<b style='color:#cf222e'>⚠ {html.escape(problem)}</b>"
    blocks = row_layout(global_batch, processes, devices_per_process)
    per_process = global_batch // processes
    rows = []
    for b in blocks:
        first = b.local_device == 0
        loads = message("split_rows", language, start=b.process * per_process,
                        stop=(b.process + 1) * per_process)
        loads = (f"<td rowspan='{devices_per_process}'>{html.escape(loads)}</td>"
                 if first else "")
        proc = (f"<td rowspan='{devices_per_process}'>{b.process}</td>"
                if first else "")
        rows.append(f"<tr>{proc}{loads}<td>{b.local_device}</td>"
                    f"<td>{b.mesh_position}</td><td>{b.start}:{b.stop}</td></tr>")
    head = "".join(
        f"<th>{html.escape(message(key, language))}</th>"
        for key in ("split_head_process", "split_head_loads", "split_head_device",
                    "split_head_position", "split_head_holds"))
    summary = message("split_summary", language, per_process=per_process,
                      per_device=global_batch // len(blocks))
    return (f"<p>{html.escape(summary)}</p>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table>")


#: The drawing's size in CSS pixels (drawn at twice that many device pixels).
FIGURE_PX = (720, 170)


def draw_layout(global_batch: int, processes: int, devices_per_process: int,
                ax: Any = None, language: str = "en") -> Any:
    """Draw the rows of the global batch, coloured by process, one box per device.

    Returns the matplotlib figure (``None`` when the batch is uneven: then the
    rows that fit evenly are not what JAX would do, so nothing is drawn).
    Without ``ax``, a new figure of :data:`FIGURE_PX` CSS pixels (no pyplot
    state, so a notebook does not show it by itself).
    """
    from matplotlib import colormaps

    if split_problem(global_batch, processes, devices_per_process):
        return None
    blocks = row_layout(global_batch, processes, devices_per_process)
    if ax is None:
        fig = figure(*FIGURE_PX, language)
        ax = fig.subplots()
    else:
        fig = ax.figure
    colors = colormaps["tab10"].colors
    for b in blocks:
        ax.barh(0, b.rows, left=b.start, color=colors[b.process % 10],
                edgecolor="white", linewidth=2)
        if len(blocks) <= 16:
            ax.text((b.start + b.stop) / 2, 0, f"p{b.process}\nd{b.local_device}",
                    ha="center", va="center", fontsize=7)
    for p in range(min(processes, 10)):
        ax.barh(0, 0, color=colors[p], label=message("split_legend", language, p=p))
    ax.set_yticks([])
    ax.set_xlim(0, global_batch)
    ax.set_xlabel(message("split_xlabel", language, batch=global_batch))
    ax.legend(ncol=min(processes, 5), loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=8)
    return fig


class BatchSplitExplorer(Explorer):
    """Sliders for processes, devices per process and batch size; redraws.

    Parameters
    ----------
    processes, devices_per_process, global_batch : int
        Initial slider values.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Draw once right away.
    """

    def __init__(self, processes: int = 4, devices_per_process: int = 2,
                 global_batch: int = 32, *, language: str = "en",
                 run: bool = True) -> None:
        super().__init__(language)
        self.processes = widgets.IntSlider(
            value=processes, min=1, max=8,
            **slider_style(self.label("split_processes"), 7))
        self.devices = widgets.IntSlider(
            value=devices_per_process, min=1, max=4,
            **slider_style(self.label("split_devices"), 3))
        # 95 steps: the track stops at its widest; the readout takes a typed value.
        self.batch = widgets.IntSlider(
            value=global_batch, min=1, max=96,
            **slider_style(self.label("split_batch"), 95))
        self.drawing = figure_image(FIGURE_PX[0])
        self.table = widgets.HTML()
        self.figure: Any = None
        self._on_change(self.redraw, self.processes, self.devices, self.batch)
        self._assemble([controls_row(self.processes, self.devices), self.batch],
                       [self.drawing, self.table])
        self._start(run, self.redraw)

    @property
    def settings(self) -> tuple[int, int, int]:
        """``(global_batch, processes, devices_per_process)`` from the sliders."""
        return self.batch.value, self.processes.value, self.devices.value

    @property
    def even(self) -> bool:
        """Whether the batch splits evenly over every device."""
        return not split_problem(*self.settings)

    def redraw(self) -> str:
        """Redraw the picture and the table; return the table's HTML."""
        self.figure = draw_layout(*self.settings, language=self.language)
        show_figure(self.drawing, self.figure)
        self.table.value = layout_table(*self.settings, language=self.language)
        return self.table.value

    def live_text(self) -> str:
        """Return a deterministic plain-text form (for stored notebook outputs)."""
        return self.label("split_text")


def batch_split_explorer(**initial: Any) -> BatchSplitExplorer:
    """Build the batch-split explorer (drawn right away)."""
    return BatchSplitExplorer(**initial)
