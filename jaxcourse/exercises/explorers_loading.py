"""Chapter 2's explorer: how the batch size changes two loaders' throughput.

:class:`LoaderExplorer` times chapter 2's two `DataLoader` designs over the
same examples whenever its batch-size slider moves, and redraws examples per
second against batch size for every size measured so far:

* the **per-sample** loader, as torchvision does it: each example becomes a
  PIL image, goes through a transform, and ``numpy_collate`` stacks the batch;
* the **batched** loader: the images are flattened and cast once, and a
  ``BatchSampler`` hands the dataset a whole list of indices, fetched with one
  fancy index.

The work is done by plain functions (:func:`time_loaders`,
:func:`plot_timings`); the widget only wires the slider to them. The
reference ``numpy_collate`` and ``flatten_and_cast`` of ``solutions.torch_data``
are used, so the explorer works before the exercises are done.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np

from .core import grading_mode
from .explorer_base import Explorer, png_bytes
from .messages import message

__all__ = [
    "BATCH_SIZES",
    "ArrayDataset",
    "LoaderExplorer",
    "LoaderTiming",
    "PerSampleDataset",
    "loader_explorer",
    "plot_timings",
    "time_loaders",
]

BATCH_SIZES = (1, 4, 16, 64, 128, 256, 1024)


@dataclass(frozen=True)
class LoaderTiming:
    """One measurement: seconds for one pass of each loader at one batch size."""

    batch_size: int
    num_examples: int
    per_sample: float
    batched: float

    @property
    def speedup(self) -> float:
        """How many times faster the batched loader was."""
        return self.per_sample / self.batched

    @property
    def label(self) -> str:
        """Status text."""
        return (f"batch size {self.batch_size}: per-sample "
                f"{self.num_examples / self.per_sample:,.0f} examples/s, batched "
                f"{self.num_examples / self.batched:,.0f} examples/s "
                f"({self.speedup:.0f}x)")


class PerSampleDataset:
    """Images held as uint8 arrays, served one PIL image at a time (torchvision's way).

    Parameters
    ----------
    images : numpy.ndarray
        ``(n, height, width)`` uint8.
    labels : numpy.ndarray
        ``(n,)`` integers.
    transform : callable
        Applied to each PIL image, like a torchvision ``transform``.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray,
                 transform: Callable[[Any], Any]) -> None:
        self.images = images
        self.labels = labels
        self.transform = transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        from PIL import Image

        return self.transform(Image.fromarray(self.images[index])), int(
            self.labels[index])


class ArrayDataset:
    """Whole arrays; indexing with a list of indices returns a whole batch."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images = images
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, indices: Any) -> tuple[np.ndarray, np.ndarray]:
        return self.images[indices], self.labels[indices]


def _keep(batch: Any) -> Any:
    return batch


def _one_pass(loader: Any) -> float:
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def time_loaders(images: np.ndarray, labels: np.ndarray,
                 batch_size: int) -> LoaderTiming:
    """Time one pass of the per-sample and of the batched loader.

    Parameters
    ----------
    images : numpy.ndarray
        ``(n, height, width)`` uint8 images.
    labels : numpy.ndarray
        ``(n,)`` labels.
    batch_size : int
        Examples per batch (the last batch may be smaller).

    Returns
    -------
    LoaderTiming
        Seconds for each loader to yield every batch once. The batched
        loader's one-off flatten-and-cast is not included: it is paid once,
        not every epoch.
    """
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    from solutions.torch_data import flatten_and_cast, numpy_collate

    per_sample = DataLoader(PerSampleDataset(images, labels, flatten_and_cast),
                            batch_size=batch_size, collate_fn=numpy_collate)
    flat = ArrayDataset(images.reshape(len(images), -1).astype(np.float32), labels)
    batched = DataLoader(
        flat,
        sampler=BatchSampler(SequentialSampler(flat), batch_size=batch_size,
                             drop_last=False),
        batch_size=None,
        collate_fn=_keep,
    )
    return LoaderTiming(int(batch_size), len(labels), _one_pass(per_sample),
                        _one_pass(batched))


def plot_timings(timings: list[LoaderTiming], newest: int | None = None,
                 language: str = "en") -> bytes:
    """Draw examples per second against batch size for both loaders; return a PNG."""
    from matplotlib.figure import Figure

    zh = language == "zh-Hant"
    figure = Figure(figsize=(6.4, 3.4), dpi=90, layout="constrained")
    axes = figure.subplots()
    ordered = sorted(timings, key=lambda t: t.batch_size)
    sizes = [t.batch_size for t in ordered]
    for attribute, name, colour in (
        ("per_sample", "逐筆轉換 + numpy_collate" if zh else
         "per-sample transform + numpy_collate", "tab:orange"),
        ("batched", "整批陣列 + BatchSampler" if zh else
         "whole arrays + BatchSampler", "tab:blue"),
    ):
        rates = [t.num_examples / getattr(t, attribute) for t in ordered]
        axes.plot(sizes, rates, "o-", color=colour, label=name)
        if newest is not None and newest in sizes:
            i = sizes.index(newest)
            axes.plot([newest], [rates[i]], "o", color=colour, markersize=11,
                      markerfacecolor="none", markeredgewidth=2)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("批次大小" if zh else "batch size")
    axes.set_ylabel("每秒筆數" if zh else "examples per second")
    axes.grid(alpha=0.3, which="both")
    if ordered:
        axes.legend(fontsize=8)
    return png_bytes(figure)


class LoaderExplorer(Explorer):
    """A batch-size slider; each change times both loaders and redraws.

    Parameters
    ----------
    images, labels : numpy.ndarray
        ``(n, height, width)`` uint8 images and their labels; each
        measurement reads all of them once with each loader.
    language : {"en", "zh-Hant"}
        Language of the labels.
    run : bool
        Measure once right away at the initial batch size (128).
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, *,
                 language: str = "en", run: bool = True) -> None:
        self.deferred = grading_mode()
        self.images = images
        self.labels = labels
        self.language = language
        self.timings: list[LoaderTiming] = []
        zh = language == "zh-Hant"
        self.batch_size = widgets.SelectionSlider(
            options=BATCH_SIZES, value=128,
            description="批次大小" if zh else "batch size",
            continuous_update=False, style={"description_width": "initial"},
        )
        self.clear_button = widgets.Button(description="清除" if zh else "Clear")
        self.image = widgets.Image(format="png")
        self.status = widgets.HTML()
        self.batch_size.observe(self._on_change, names="value")
        self.clear_button.on_click(lambda _: self.clear())
        self.widget = widgets.VBox([
            widgets.HBox([self.batch_size, self.clear_button]),
            self.image,
            self.status,
        ])
        if run and not self.deferred:
            self.measure()

    def _on_change(self, change: dict) -> None:
        self.measure()

    def measure(self) -> LoaderTiming:
        """Time both loaders at the slider's batch size and redraw (the callback)."""
        timing = time_loaders(self.images, self.labels, self.batch_size.value)
        # A batch size measured again replaces its old point.
        self.timings = [t for t in self.timings
                        if t.batch_size != timing.batch_size] + [timing]
        self._redraw()
        self.status.value = html.escape(timing.label)
        return timing

    def _redraw(self) -> None:
        newest = self.timings[-1].batch_size if self.timings else None
        self.image.value = plot_timings(self.timings, newest, self.language)

    def clear(self) -> None:
        """Forget the earlier measurements, keeping the newest (the Clear button)."""
        self.timings = self.timings[-1:]
        self._redraw()

    def text(self) -> str:
        """Deterministic plain-text form (timings vary, so none are shown)."""
        if self.deferred:
            return message("summary_deferred", self.language, id="explorer")
        if self.language == "zh-Hant":
            return (f"載入器探索器：每次量測讀取 {len(self.labels)} 筆；"
                    "移動滑桿以量測另一個批次大小。")
        return (f"Loader explorer: {len(self.labels)} examples per measurement; "
                "move the slider to time another batch size.")


def loader_explorer(num_examples: int = 8192, language: str = "en") -> LoaderExplorer:
    """Build the explorer on the first training images of the course's dataset."""
    from jaxcourse import data

    images, labels = data.load_numpy("train")
    return LoaderExplorer(images[:num_examples], labels[:num_examples],
                          language=language)
