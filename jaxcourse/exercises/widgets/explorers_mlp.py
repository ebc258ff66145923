"""Interactive explorers: sliders that retrain a small model and redraw it.

:class:`LearningRateExplorer` retrains chapter 1's MLP (:mod:`jaxcourse.mlp`)
for a few hundred SGD steps on a subset of the training set whenever the
learning rate or the batch size changes, and redraws the loss curves of the
last few runs, so their effect can be seen side by side, under a title that
names the dataset in use (MNIST or Fashion-MNIST, whichever
:mod:`jaxcourse.data` provisioned). The work is done by plain functions
(:func:`load_subset`, :func:`train_curve`, :func:`plot_runs`); the widget only
wires the sliders to them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import jax
import jax.numpy as jnp
import numpy as np

from ...messages import message
from ...mlp import batched_predict, init_params, loss
from .explorer_base import Explorer, LegendEntry, figure, finish_axes, slider_style

__all__ = [
    "LearningRateExplorer",
    "Run",
    "Subset",
    "learning_rate_explorer",
    "load_subset",
    "plot_runs",
    "train_curve",
]

BATCH_SIZES = (8, 32, 128, 512)


@dataclass(frozen=True)
class Subset:
    """A small, flattened, scaled slice of the dataset for quick retraining."""

    train_images: np.ndarray  # (n, 784) float32 in [0, 1]
    train_labels: np.ndarray  # (n,) int
    test_images: np.ndarray
    test_labels: np.ndarray
    #: The dataset's name for people ("Fashion-MNIST"); "" for synthetic data.
    dataset: str = ""


@dataclass(frozen=True)
class Run(LegendEntry):
    """One retraining: its settings, loss per step and final test accuracy."""

    learning_rate: float
    batch_size: int
    losses: np.ndarray
    test_accuracy: float

    def describe(self, language: str = "en") -> str:
        """Return the legend text in ``language``."""
        return message("lr_run", language, lr=self.learning_rate,
                       batch=self.batch_size, accuracy=self.test_accuracy)


def load_subset(n_train: int = 4096, n_test: int = 1024) -> Subset:
    """Load the first examples of the course's dataset, scaled to [0, 1].

    The subset carries the provisioned dataset's name (MNIST or
    Fashion-MNIST), which the explorer shows.
    """
    from jaxcourse import data

    info = data.require()
    train_x, train_y = data.load_numpy("train", info.name)
    test_x, test_y = data.load_numpy("test", info.name)

    def prep(x: np.ndarray) -> np.ndarray:
        return (x.reshape(len(x), -1) / 255.0).astype(np.float32)

    return Subset(prep(train_x[:n_train]), train_y[:n_train].astype(np.int32),
                  prep(test_x[:n_test]), test_y[:n_test].astype(np.int32),
                  dataset=info.title)


def synthetic_subset(n_train: int = 512, n_test: int = 128, seed: int = 0) -> Subset:
    """Draw a learnable stand-in for the dataset (for tests, or with no data)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(10, 784)).astype(np.float32)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, 10, size=n)
        images = centres[labels] + rng.normal(scale=2.0, size=(n, 784))
        return images.astype(np.float32), labels.astype(np.int32)

    return Subset(*draw(n_train), *draw(n_test))


@functools.partial(jax.jit, static_argnames=("batch_size", "steps"))
def _train(params: Any, images: jax.Array, targets: jax.Array, learning_rate: float,
           key: jax.Array, batch_size: int, steps: int) -> tuple[Any, jax.Array]:
    batches = jax.random.randint(key, (steps, batch_size), 0, images.shape[0])

    def step(p: Any, index: jax.Array) -> tuple[Any, jax.Array]:
        value, grads = jax.value_and_grad(loss)(p, images[index], targets[index])
        return jax.tree.map(lambda w, g: w - learning_rate * g, p, grads), value

    return jax.lax.scan(step, params, batches)


def train_curve(
    subset: Subset,
    learning_rate: float,
    batch_size: int,
    steps: int = 300,
    hidden: int = 32,
    seed: int = 0,
) -> Run:
    """Train a fresh ``[784, hidden, 10]`` MLP with SGD; return its loss curve.

    One compiled ``lax.scan`` runs all the steps, so a retrain costs about a
    second on two CPU cores (the first one per batch size also compiles).
    """
    params = init_params([subset.train_images.shape[1], hidden, 10],
                         jax.random.key(seed), scale=0.1)
    targets = jax.nn.one_hot(subset.train_labels, 10)
    params, losses = _train(params, jnp.asarray(subset.train_images), targets,
                            learning_rate, jax.random.key(seed + 1),
                            batch_size=batch_size, steps=steps)
    predicted = jnp.argmax(batched_predict(params, subset.test_images), axis=1)
    accuracy = float(jnp.mean(predicted == subset.test_labels))
    return Run(float(learning_rate), int(batch_size), np.asarray(losses), accuracy)


#: The figure's size in CSS pixels (drawn at twice that many device pixels).
FIGURE_PX = (720, 360)


def plot_runs(runs: list[Run], language: str = "en", title: str = "") -> bytes:
    """Draw the runs' loss curves (the newest bold) and return a PNG.

    Parameters
    ----------
    runs : list of Run
        Oldest first.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    title : str
        Above the axes: which data the runs trained on.
    """
    fig = figure(*FIGURE_PX, language)
    axes = fig.subplots()
    for i, run in enumerate(runs):
        newest = i == len(runs) - 1
        axes.plot(run.losses, lw=2.0 if newest else 1.0,
                  alpha=1.0 if newest else 0.45, label=run.describe(language))
    axes.set_xlabel(message("sgd_step", language))
    axes.set_ylabel(message("lr_training_loss", language))
    axes.set_yscale("log")
    return finish_axes(fig, axes, title, legend=bool(runs))


class LearningRateExplorer(Explorer):
    """Sliders for learning rate and batch size; each change retrains and redraws.

    Parameters
    ----------
    subset : Subset, optional
        The data; by default :func:`load_subset` (tests pass a small one).
    steps : int
        SGD steps per retrain.
    keep : int
        How many runs stay on the plot.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Train once right away with the initial settings.
    """

    def __init__(self, subset: Subset | None = None, *, steps: int = 300,
                 keep: int = 4, language: str = "en", run: bool = True) -> None:
        super().__init__(language)
        self.subset = subset
        self.steps = steps
        self.keep = keep
        self.runs: list[Run] = []
        # 10^-3 to 10^1 in quarter decades: 16 steps, each STEP_PX wide.
        self.learning_rate = widgets.FloatLogSlider(
            value=0.1, base=10, min=-3, max=1, step=0.25, continuous_update=False,
            readout_format=".3g",
            **slider_style(self.label("lr_learning_rate"), 16),
        )
        self.batch_size = widgets.SelectionSlider(
            options=BATCH_SIZES, value=128, continuous_update=False,
            **slider_style(self.label("batch_size"), len(BATCH_SIZES) - 1),
        )
        self._runs_layout(self.retrain, [self.learning_rate, self.batch_size],
                          FIGURE_PX[0])
        self._start(run, self.retrain)

    def title(self) -> str:
        """Say which data the runs train on: the dataset and how many images."""
        if self.subset is None:
            return ""
        return self.label(
            "lr_title",
            dataset=self.subset.dataset or self.label("synthetic_data"),
            train=len(self.subset.train_labels), test=len(self.subset.test_labels))

    def retrain(self) -> Run:
        """Train with the sliders' values, keep the run, redraw (slider callback)."""
        if self.subset is None:
            self.subset = load_subset()
        run = train_curve(self.subset, self.learning_rate.value,
                          self.batch_size.value, steps=self.steps)
        self._show_run(run)
        return run

    def _redraw(self) -> None:
        self.image.value = plot_runs(self.runs, self.language, self.title())

    def live_text(self) -> str:
        """Deterministic plain-text form (no numbers that vary across CPUs)."""
        return self.label("lr_text", steps=self.steps)


def learning_rate_explorer(subset: Subset | None = None, steps: int = 300,
                           language: str = "en") -> LearningRateExplorer:
    """Build the learning-rate / batch-size explorer (trains once right away)."""
    return LearningRateExplorer(subset, steps=steps, language=language)
