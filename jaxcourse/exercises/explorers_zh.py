"""Chapter 7's explorer: devices, per-device batch and the span of a psum.

:class:`DataParallelExplorer` lets the learner choose the number of devices,
the per-device batch size and the named axes a ``lax.psum`` spans, and shows
the global batch, the shape each device receives, and the result of the
chapter's global normalization ``pmap(vmap(x / psum(x, axes)))`` over
``arange(global_batch)``: with both axes the whole grid sums to 1, with one
axis each row (or column) does, with none every entry is 1. The work is done
by plain functions (:func:`explore`, :func:`plot_exploration`,
:func:`summary_html`); the widget only wires its controls to them. Labels are
in Traditional Chinese, or Simplified with ``language="zh-Hans"`` (the
generated edition's; :data:`LABELS` holds both, and a test checks that the
Simplified ones are what ``python -m jaxcourse.zh_hans`` derives).
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
    "LABELS",
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

#: Every Chinese label of the explorer, per language (format fields in braces).
LABELS: dict[str, dict[str, str]] = {
    "zh-Hant": {
        "devices": "裝置數",
        "per_device": "每臺裝置的批次",
        "collective": "集體運算",
        "device_k": "裝置 {k}",
        "xlabel": "每臺裝置上的第幾筆（vmap 的軸 \"j\"）",
        "title": "正規化之後的值：全部的總和 = {total}",
        "no_sum": "不求和",
        "psum_over": "psum 跨 {axes}",
        "more": "，…",
        "summary": "<b>全域批次</b> = {d} 臺裝置 × 每臺 {b} 筆 = {n} 筆<br>"
        "<b>切給裝置後的影像</b>：({n}, 28, 28) → {images}；每臺裝置拿到 {shard}<br>"
        "<b>{axes}</b>：每臺裝置上的總和 [{sums}]，"
        "全部的總和 {total}（結果分布在 {on} 臺裝置上）",
        "name": "資料平行探索器",
        "text": "資料平行探索器：改變裝置數、每臺裝置的批次或 psum 的軸，"
        "看全域批次、每臺裝置的形狀與總和。",
    },
    "zh-Hans": {
        "devices": "设备数",
        "per_device": "每台设备的批次",
        "collective": "集体运算",
        "device_k": "设备 {k}",
        "xlabel": "每台设备上的第几条（vmap 的轴 \"j\"）",
        "title": "归一化之后的值：全部的总和 = {total}",
        "no_sum": "不求和",
        "psum_over": "psum 跨 {axes}",
        "more": "，…",
        "summary": "<b>全局批次</b> = {d} 台设备 × 每台 {b} 条 = {n} 条<br>"
        "<b>切给设备后的图像</b>：({n}, 28, 28) → {images}；每台设备拿到 {shard}<br>"
        "<b>{axes}</b>：每台设备上的总和 [{sums}]，"
        "全部的总和 {total}（结果分布在 {on} 台设备上）",
        "name": "数据并行探索器",
        "text": "数据并行探索器：改变设备数、每台设备的批次或 psum 的轴，"
        "看全局批次、每台设备的形状与总和。",
    },
}
#: The dropdown's choices in each language (same order as :data:`AXES_CHOICES`).
AXES_LABELS: dict[str, tuple[str, ...]] = {
    "zh-Hant": tuple(AXES_CHOICES),
    "zh-Hans": ('psum(x, ("i", "j"))：跨两个轴', 'psum(x, "j")：只跨每台设备内',
                'psum(x, "i")：只跨设备之间', "不用 psum（x / x）"),
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
    """Describe one setting in Chinese: batch sizes, shapes and sums."""
    e, text = exploration, LABELS[language]
    sums = ", ".join(f"{s:.3g}" for s in e.row_sums[:8])
    more = text["more"] if e.num_devices > 8 else ""
    axes = text["no_sum"] if e.axes is None else text["psum_over"].format(axes=e.axes)
    return text["summary"].format(
        d=e.num_devices, b=e.per_device, n=e.global_batch, images=e.images_shape,
        shard=e.shard_shape, axes=html.escape(axes), sums=sums + more,
        total=f"{e.total:.4g}", on=e.result_devices,
    )


def plot_exploration(exploration: Exploration, language: str = "zh-Hant") -> bytes:
    """Draw the normalized grid, one row per device, and return a PNG."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from jaxcourse.plotting import CJK_FONTS, CJK_FONTS_SC, use_cjk_font

    if language == "zh-Hans":
        use_cjk_font(CJK_FONTS_SC, script="SC")
    else:
        use_cjk_font(CJK_FONTS)
    e, text = exploration, LABELS[language]
    figure = Figure(figsize=(7.0, 0.9 + 0.35 * e.num_devices), dpi=80,
                    layout="constrained")
    axes = figure.subplots()
    image = axes.imshow(e.result, aspect="auto", cmap="viridis")
    axes.set_yticks(range(e.num_devices),
                    [text["device_k"].format(k=k) for k in range(e.num_devices)])
    if e.result.size <= 96:  # 格子不多時，把數值寫在格子裡
        for (row, col), value in np.ndenumerate(e.result):
            axes.text(col, row, f"{value:.2g}", ha="center", va="center",
                      fontsize=7, color="white")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # 第幾筆只有整數
    axes.set_xlabel(text["xlabel"])
    axes.set_title(text["title"].format(total=f"{e.total:.4g}"))
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
    language : {"zh-Hant", "zh-Hans"}
        Traditional or Simplified Chinese labels.
    """

    def __init__(self, *, max_per_device: int = 32, run: bool = True,
                 language: str = "zh-Hant") -> None:
        if language not in LABELS:
            raise ValueError(f"language must be one of {tuple(LABELS)}, "
                             f"not {language!r}")
        self.language = language
        text = LABELS[language]
        self._choices = dict(zip(AXES_LABELS[language], AXES_CHOICES.values(),
                                 strict=True))
        self.deferred = grading_mode()
        self.exploration: Exploration | None = None
        style = {"description_width": "initial"}
        devices = jax.device_count() if not self.deferred else 1
        self.num_devices = widgets.IntSlider(
            value=devices, min=1, max=devices, description=text["devices"],
            continuous_update=False, style=style,
        )
        self.per_device = widgets.IntSlider(
            value=min(4, max_per_device), min=1, max=max_per_device,
            description=text["per_device"], continuous_update=False, style=style,
        )
        self.axes = widgets.Dropdown(
            options=list(self._choices), value=next(iter(self._choices)),
            description=text["collective"], style=style,
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
                                   self._choices[self.axes.value])
        self.status.value = summary_html(self.exploration, self.language)
        self.image.value = plot_exploration(self.exploration, self.language)
        return self.exploration

    def text(self) -> str:
        """Deterministic plain-text form (the same on every machine)."""
        text = LABELS[self.language]
        if self.deferred:
            return message("summary_deferred", self.language, id=text["name"])
        return text["text"]


def data_parallel_explorer(max_per_device: int = 32,
                           language: str = "zh-Hant") -> DataParallelExplorer:
    """Build the data-parallel explorer (computes once right away)."""
    return DataParallelExplorer(max_per_device=max_per_device, language=language)
