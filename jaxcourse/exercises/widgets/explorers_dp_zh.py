"""Chapter 9's explorer: devices, per-device batch and the span of a psum.

:class:`DataParallelExplorer` lets the learner choose the number of devices,
the per-device batch size and the named axes a ``lax.psum`` spans, and shows
the global batch, the shape each device receives, and the result of the
chapter's global normalization ``pmap(vmap(x / psum(x, axes)))`` over
``arange(global_batch)``: with both axes the whole grid sums to 1, with one
axis each row (or column) does, with none every entry is 1. The work is done
by plain functions (:func:`explore`, :func:`plot_exploration`,
:func:`summary_html`); the widget only wires its controls to them. Labels are
in Traditional Chinese, or Simplified with ``language="zh-Hans"`` (the
generated edition's), or English; they live in
:mod:`jaxcourse.messages` (``dp_*``), whose Simplified texts are what
``python -m jaxcourse.zh_hans`` derives. :data:`LABELS` and
:data:`AXES_LABELS` read both Chinese sets from there.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets
import jax
import numpy as np
from jax import lax

from ...messages import MESSAGES, message
from .explorer_base import (
    Explorer,
    controls_row,
    figure,
    figure_image,
    png_bytes,
    slider_style,
)

__all__ = [
    "AXES_CHOICES",
    "DataParallelExplorer",
    "Exploration",
    "LABELS",
    "data_parallel_explorer",
    "explore",
    "plot_exploration",
    "summary_html",
]

#: The dropdown's choices, by catalogue key, and the axes each one's psum spans
#: (None: no psum).
_AXES_KEYS: dict[str, tuple[str, ...] | None] = {
    "dp_axes_both": ("i", "j"),
    "dp_axes_j": ("j",),
    "dp_axes_i": ("i",),
    "dp_axes_none": None,
}
#: The Traditional-Chinese label shown in the dropdown -> the axes the psum spans.
AXES_CHOICES: dict[str, tuple[str, ...] | None] = {
    message(key, "zh-Hant"): axes for key, axes in _AXES_KEYS.items()
}
IMAGE_SHAPE = (28, 28)

# The explorer's labels, by their short name here and their catalogue key.
_LABEL_KEYS = {
    "devices": "dp_devices",
    "per_device": "dp_per_device",
    "collective": "dp_collective",
    "device_k": "dp_device_k",
    "xlabel": "dp_xlabel",
    "title": "dp_title",
    "no_sum": "dp_no_sum",
    "psum_over": "dp_psum_over",
    "more": "dp_more",
    "summary": "dp_summary",
    "name": "dp_name",
    "text": "dp_text",
}
#: Every label of the explorer, per Chinese edition (format fields in braces),
#: read from :mod:`jaxcourse.messages`, where they are kept.
LABELS: dict[str, dict[str, str]] = {
    language: {name: MESSAGES[language][key] for name, key in _LABEL_KEYS.items()}
    for language in ("zh-Hant", "zh-Hans")
}
#: The dropdown's choices in each Chinese edition (same order as
#: :data:`AXES_CHOICES`).
AXES_LABELS: dict[str, tuple[str, ...]] = {
    language: tuple(message(key, language) for key in _AXES_KEYS)
    for language in ("zh-Hant", "zh-Hans")
}


@dataclass(frozen=True)
class Exploration:
    """One setting and what it gives.

    ``result`` is the ``(num_devices, per_device)`` output of the normalization
    of ``arange(global_batch)``; ``row_sums`` its sum on each device.
    """

    num_devices: int
    per_device: int
    axes: tuple[str, ...] | None
    result: np.ndarray
    result_devices: int

    @property
    def global_batch(self) -> int:
        """Examples in one global batch: devices × per-device batch."""
        return self.num_devices * self.per_device

    @property
    def images_shape(self) -> tuple[int, ...]:
        """Shape of a global batch of images after splitting it for the devices."""
        return (self.num_devices, self.per_device, *IMAGE_SHAPE)

    @property
    def shard_shape(self) -> tuple[int, ...]:
        """Shape of the images one device receives."""
        return (self.per_device, *IMAGE_SHAPE)

    @property
    def row_sums(self) -> np.ndarray:
        """Sum of the normalized values on each device."""
        return self.result.sum(axis=1)

    @property
    def total(self) -> float:
        """Sum of every normalized value (1 for a global normalization)."""
        return float(self.result.sum())


def explore(num_devices: int, per_device: int,
            axes: tuple[str, ...] | None = ("i", "j")) -> Exploration:
    """Normalize ``arange(num_devices * per_device)`` with ``pmap`` around ``vmap``.

    Parameters
    ----------
    num_devices : int
        Devices the outer ``pmap`` uses (the first ones of ``jax.devices()``).
    per_device : int
        Elements each device vectorizes with the inner ``vmap``.
    axes : tuple of str, optional
        Axis names the ``psum`` spans: ``("i", "j")``, ``("i",)``, ``("j",)``;
        None divides each value by itself.

    Returns
    -------
    Exploration
        The setting, the normalized grid and on how many devices it lives.
    """
    available = jax.device_count()
    if not 1 <= num_devices <= available:
        raise ValueError(
            f"num_devices must be between 1 and {available} (the devices JAX has), "
            f"not {num_devices}"
        )
    grid = np.arange(num_devices * per_device, dtype=np.float32).reshape(
        num_devices, per_device
    ) + 1.0  # 1, 2, …：不讓 0 / 0 出現

    def normalize_one(x: jax.Array) -> jax.Array:
        return x / (lax.psum(x, axes) if axes else x)

    out = jax.pmap(jax.vmap(normalize_one, axis_name="j"), axis_name="i",
                   devices=jax.devices()[:num_devices])(grid)
    return Exploration(num_devices, per_device, axes, np.asarray(out),
                       len(out.devices()))


def summary_html(exploration: Exploration, language: str = "zh-Hant") -> str:
    """Describe one setting: batch sizes, shapes and sums."""
    e = exploration
    sums = ", ".join(f"{s:.3g}" for s in e.row_sums[:8])
    more = message("dp_more", language) if e.num_devices > 8 else ""
    axes = (message("dp_no_sum", language) if e.axes is None
            else message("dp_psum_over", language, axes=e.axes))
    return message(
        "dp_summary", language,
        d=e.num_devices, b=e.per_device, n=e.global_batch, images=e.images_shape,
        shard=e.shard_shape, axes=html.escape(axes), sums=sums + more,
        total=f"{e.total:.4g}", on=e.result_devices,
    )


#: The figure's width in CSS pixels; its height grows with the devices.
FIGURE_WIDTH_PX = 700


def plot_exploration(exploration: Exploration, language: str = "zh-Hant") -> bytes:
    """Draw the normalized grid, one row per device, and return a PNG."""
    from matplotlib.ticker import MaxNLocator

    e = exploration
    fig = figure(FIGURE_WIDTH_PX, 90 + 35 * e.num_devices, language)
    axes = fig.subplots()
    image = axes.imshow(e.result, aspect="auto", cmap="viridis")
    axes.set_yticks(range(e.num_devices),
                    [message("dp_device_k", language, k=k)
                     for k in range(e.num_devices)])
    if e.result.size <= 96:  # 格子不多時，把數值寫在格子裡
        for (row, col), value in np.ndenumerate(e.result):
            axes.text(col, row, f"{value:.2g}", ha="center", va="center",
                      fontsize=7, color="white")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # 第幾筆只有整數
    axes.set_xlabel(message("dp_xlabel", language))
    axes.set_title(message("dp_title", language, total=f"{e.total:.4g}"))
    fig.colorbar(image, ax=axes)
    return png_bytes(fig)


class DataParallelExplorer(Explorer):
    """Sliders for devices and per-device batch, a dropdown for the psum axes.

    Parameters
    ----------
    max_per_device : int
        Largest per-device batch on the slider.
    run : bool
        Compute and draw once right away.
    language : {"zh-Hant", "zh-Hans", "en"}
        Traditional or Simplified Chinese labels (or English).
    """

    def __init__(self, *, max_per_device: int = 32, run: bool = True,
                 language: str = "zh-Hant") -> None:
        super().__init__(language)
        self._choices = {self.label(key): axes for key, axes in _AXES_KEYS.items()}
        self.exploration: Exploration | None = None
        devices = jax.device_count() if not self.deferred else 1
        self.num_devices = widgets.IntSlider(
            value=devices, min=1, max=devices, continuous_update=False,
            **slider_style(self.label("dp_devices"), devices - 1),
        )
        self.per_device = widgets.IntSlider(
            value=min(4, max_per_device), min=1, max=max_per_device,
            continuous_update=False,
            **slider_style(self.label("dp_per_device"), max_per_device - 1),
        )
        self.axes = widgets.Dropdown(
            options=list(self._choices), value=next(iter(self._choices)),
            description=self.label("dp_collective"),
            style={"description_width": "initial"},
            layout=widgets.Layout(width="auto"),
        )
        self.image = figure_image(FIGURE_WIDTH_PX)
        self.status = widgets.HTML()
        self._on_change(self.update, self.num_devices, self.per_device, self.axes)
        self._assemble(
            [controls_row(self.num_devices, self.per_device), self.axes],
            [self.status, self.image],
        )
        self._start(run, self.update)

    def update(self) -> Exploration:
        """Recompute with the controls' values and redraw (every control's callback)."""
        self.exploration = explore(self.num_devices.value, self.per_device.value,
                                   self._choices[self.axes.value])
        self.status.value = summary_html(self.exploration, self.language)
        self.image.value = plot_exploration(self.exploration, self.language)
        return self.exploration

    def deferred_id(self) -> str:
        """Name the explorer while grading defers it."""
        return self.label("dp_name")

    def live_text(self) -> str:
        """Deterministic plain-text form (the same on every machine)."""
        return self.label("dp_text")


def data_parallel_explorer(max_per_device: int = 32,
                           language: str = "zh-Hant") -> DataParallelExplorer:
    """Build the data-parallel explorer (computes once right away)."""
    return DataParallelExplorer(max_per_device=max_per_device, language=language)
