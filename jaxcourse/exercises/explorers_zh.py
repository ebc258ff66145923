"""Chapter 7's explorer: devices, per-device batch and the span of a psum.

:class:`DataParallelExplorer` lets the learner choose the number of devices,
the per-device batch size and the named axes a ``lax.psum`` spans, and shows
the global batch, the shape each device receives, and the result of the
chapter's global normalization ``pmap(vmap(x / psum(x, axes)))`` over
``arange(global_batch)``: with both axes the whole grid sums to 1, with one
axis each row (or column) does, with none every entry is 1. The work is done
by plain functions (:func:`explore`, :func:`plot_exploration`,
:func:`summary_html`); the widget only wires its controls to them. Labels are
in Traditional Chinese.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets
import jax
import numpy as np
from jax import lax

from .core import grading_mode
from .explorer_base import Explorer, png_bytes
from .messages import message

__all__ = [
    "AXES_CHOICES",
    "DataParallelExplorer",
    "Exploration",
    "data_parallel_explorer",
    "explore",
    "plot_exploration",
    "summary_html",
]

#: What the psum spans: label shown in the dropdown -> axis names (None: no psum).
AXES_CHOICES: dict[str, tuple[str, ...] | None] = {
    'psum(x, ("i", "j"))：跨兩個軸': ("i", "j"),
    'psum(x, "j")：只跨每臺裝置內': ("j",),
    'psum(x, "i")：只跨裝置之間': ("i",),
    "不用 psum（x / x）": None,
}
IMAGE_SHAPE = (28, 28)


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


def summary_html(exploration: Exploration) -> str:
    """Describe one setting in Chinese: batch sizes, shapes and sums."""
    e = exploration
    sums = ", ".join(f"{s:.3g}" for s in e.row_sums[:8])
    more = "，…" if e.num_devices > 8 else ""
    axes = "不求和" if e.axes is None else f"psum 跨 {e.axes}"
    return (
        f"<b>全域批次</b> = {e.num_devices} 臺裝置 × 每臺 {e.per_device} 筆 = "
        f"{e.global_batch} 筆<br>"
        f"<b>切給裝置後的影像</b>：({e.global_batch}, 28, 28) → "
        f"{e.images_shape}；每臺裝置拿到 {e.shard_shape}<br>"
        f"<b>{html.escape(axes)}</b>：每臺裝置上的總和 [{sums}{more}]，"
        f"全部的總和 {e.total:.4g}（結果分布在 {e.result_devices} 臺裝置上）"
    )


def plot_exploration(exploration: Exploration) -> bytes:
    """Draw the normalized grid, one row per device, and return a PNG."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from jaxcourse.plotting import use_cjk_font

    use_cjk_font()
    e = exploration
    figure = Figure(figsize=(7.0, 0.9 + 0.35 * e.num_devices), dpi=80,
                    layout="constrained")
    axes = figure.subplots()
    image = axes.imshow(e.result, aspect="auto", cmap="viridis")
    axes.set_yticks(range(e.num_devices),
                    [f"裝置 {k}" for k in range(e.num_devices)])
    if e.result.size <= 96:  # 格子不多時，把數值寫在格子裡
        for (row, col), value in np.ndenumerate(e.result):
            axes.text(col, row, f"{value:.2g}", ha="center", va="center",
                      fontsize=7, color="white")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # 第幾筆只有整數
    axes.set_xlabel("每臺裝置上的第幾筆（vmap 的軸 \"j\"）")
    axes.set_title(f"正規化之後的值：全部的總和 = {e.total:.4g}")
    figure.colorbar(image, ax=axes)
    return png_bytes(figure)


class DataParallelExplorer(Explorer):
    """Sliders for devices and per-device batch, a dropdown for the psum axes.

    Parameters
    ----------
    max_per_device : int
        Largest per-device batch on the slider.
    run : bool
        Compute and draw once right away.
    """

    def __init__(self, *, max_per_device: int = 32, run: bool = True) -> None:
        self.deferred = grading_mode()
        self.exploration: Exploration | None = None
        style = {"description_width": "initial"}
        devices = jax.device_count() if not self.deferred else 1
        self.num_devices = widgets.IntSlider(
            value=devices, min=1, max=devices, description="裝置數",
            continuous_update=False, style=style,
        )
        self.per_device = widgets.IntSlider(
            value=min(4, max_per_device), min=1, max=max_per_device,
            description="每臺裝置的批次", continuous_update=False, style=style,
        )
        self.axes = widgets.Dropdown(
            options=list(AXES_CHOICES), value=next(iter(AXES_CHOICES)),
            description="集體運算", style=style,
        )
        self.image = widgets.Image(format="png")
        self.status = widgets.HTML()
        for control in (self.num_devices, self.per_device, self.axes):
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.num_devices, self.per_device]),
            self.axes,
            self.status,
            self.image,
        ])
        if run and not self.deferred:
            self.update()

    def _on_change(self, change: dict) -> None:
        self.update()

    def update(self) -> Exploration:
        """Recompute with the controls' values and redraw (every control's callback)."""
        self.exploration = explore(self.num_devices.value, self.per_device.value,
                                   AXES_CHOICES[self.axes.value])
        self.status.value = summary_html(self.exploration)
        self.image.value = plot_exploration(self.exploration)
        return self.exploration

    def text(self) -> str:
        """Deterministic plain-text form (the same on every machine)."""
        if self.deferred:
            return message("summary_deferred", "zh-Hant", id="資料平行探索器")
        return ("資料平行探索器：改變裝置數、每臺裝置的批次或 psum 的軸，"
                "看全域批次、每臺裝置的形狀與總和。")


def data_parallel_explorer(max_per_device: int = 32) -> DataParallelExplorer:
    """Build the data-parallel explorer (computes once right away)."""
    return DataParallelExplorer(max_per_device=max_per_device)
