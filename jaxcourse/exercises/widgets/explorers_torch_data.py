"""Chapter 2's explorer: how the batch size changes two loaders' throughput.

:class:`LoaderExplorer` times chapter 2's two `DataLoader` designs over the
same examples whenever its batch-size slider moves, and redraws examples per
second against batch size for every size measured so far:

* the **per-sample** loader, as torchvision does it: each example becomes a
  PIL image, goes through a transform, and ``numpy_collate`` stacks the batch;
* the **batched** loader: the images are flattened and cast once, and a
  ``BatchSampler`` hands the dataset a whole list of indices, fetched with one
  fancy index.

The figure's title names the dataset in use. The work is done by plain
functions (:func:`time_loaders`, :func:`plot_timings`); the widget only wires
the slider to them. The per-sample loader uses the explorer's own transform
and collate function (:func:`_flat_floats`, :func:`_stack_pairs`), not the
learner's, so the explorer works before the exercises are done.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np

from ...messages import message
from .explorer_base import Explorer, figure, finish_axes, slider_style

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
        """Status text, in English."""
        return self.describe()

    def describe(self, language: str = "en") -> str:
        """Return the status text in ``language``."""
        return message("loader_timing", language, batch=self.batch_size,
                       per_sample=self.num_examples / self.per_sample,
                       batched=self.num_examples / self.batched,
                       speedup=self.speedup)


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


def _flat_floats(picture: Any) -> np.ndarray:
    # The per-sample transform: one PIL image to a flat float32 vector. Written
    # otherwise than chapter 2's reference flatten_and_cast, so that a class
    # release (which ships this module) holds no reference answer's body.
    return np.asarray(picture, dtype=np.float32).reshape(-1)


def _stack_pairs(batch: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
    # The per-sample collate: (image, label) pairs to a batch of each.
    images, labels = zip(*batch, strict=True)
    return np.stack(images), np.asarray(labels)


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

    per_sample = DataLoader(PerSampleDataset(images, labels, _flat_floats),
                            batch_size=batch_size, collate_fn=_stack_pairs)
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


#: The figure's size in CSS pixels (drawn at twice that many device pixels).
FIGURE_PX = (720, 360)


def plot_timings(timings: list[LoaderTiming], newest: int | None = None,
                 language: str = "en", title: str = "") -> bytes:
    """Draw examples per second against batch size for both loaders; return a PNG.

    Parameters
    ----------
    timings : list of LoaderTiming
        One per batch size measured.
    newest : int, optional
        The batch size measured last, circled.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    title : str
        Above the axes: which data was loaded.
    """
    fig = figure(*FIGURE_PX, language)
    axes = fig.subplots()
    ordered = sorted(timings, key=lambda t: t.batch_size)
    sizes = [t.batch_size for t in ordered]
    for attribute, key, colour in (
        ("per_sample", "loader_per_sample", "tab:orange"),
        ("batched", "loader_batched", "tab:blue"),
    ):
        rates = [t.num_examples / getattr(t, attribute) for t in ordered]
        axes.plot(sizes, rates, "o-", color=colour, label=message(key, language))
        if newest is not None and newest in sizes:
            i = sizes.index(newest)
            axes.plot([newest], [rates[i]], "o", color=colour, markersize=11,
                      markerfacecolor="none", markeredgewidth=2)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel(message("batch_size", language))
    axes.set_ylabel(message("loader_rate", language))
    axes.grid(alpha=0.3, which="both")
    return finish_axes(fig, axes, title, legend=bool(ordered))


class LoaderExplorer(Explorer):
    """A batch-size slider; each change times both loaders and redraws.

    Parameters
    ----------
    images, labels : numpy.ndarray
        ``(n, height, width)`` uint8 images and their labels; each
        measurement reads all of them once with each loader.
    dataset : str
        The images' dataset, named in the figure's title ("" for other data).
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Measure once right away at the initial batch size (128).
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, *, dataset: str = "",
                 language: str = "en", run: bool = True) -> None:
        super().__init__(language)
        self.images = images
        self.labels = labels
        self.dataset = dataset
        self.timings: list[LoaderTiming] = []
        self.batch_size = widgets.SelectionSlider(
            options=BATCH_SIZES, value=128, continuous_update=False,
            **slider_style(self.label("batch_size"), len(BATCH_SIZES) - 1),
        )
        self._runs_layout(self.measure, [self.batch_size], FIGURE_PX[0])
        self._start(run, self.measure)

    def title(self) -> str:
        """Say which data is loaded: the dataset and how many images."""
        return self.label("loader_title",
                          dataset=self.dataset or self.label("synthetic_data"),
                          n=len(self.labels))

    def measure(self) -> LoaderTiming:
        """Time both loaders at the slider's batch size and redraw (the callback)."""
        timing = time_loaders(self.images, self.labels, self.batch_size.value)
        # A batch size measured again replaces its old point.
        self.timings = [t for t in self.timings
                        if t.batch_size != timing.batch_size] + [timing]
        self._redraw()
        self.status.value = html.escape(timing.describe(self.language))
        return timing

    def _redraw(self) -> None:
        newest = self.timings[-1].batch_size if self.timings else None
        self.image.value = plot_timings(self.timings, newest, self.language,
                                        self.title())

    def clear(self) -> None:
        """Forget the earlier measurements, keeping the newest (the Clear button)."""
        self.timings = self.timings[-1:]
        self._redraw()

    def live_text(self) -> str:
        """Deterministic plain-text form (timings vary, so none are shown)."""
        return self.label("loader_text", n=len(self.labels))


def loader_explorer(num_examples: int = 8192, language: str = "en") -> LoaderExplorer:
    """Build the explorer on the first training images of the course's dataset."""
    from jaxcourse import data

    info = data.require()
    images, labels = data.load_numpy("train", info.name)
    return LoaderExplorer(images[:num_examples], labels[:num_examples],
                          dataset=info.title, language=language)
