"""Chapter 3's explorer: Monte Carlo samples and step size in ELBO maximization.

:class:`ElboExplorer` refits chapter 3's variational posterior (a diagonal
Gaussian over the 10 logistic-regression coefficients, on the chapter's data
from ``RandomState(10009)``) whenever the number of Monte Carlo samples per
step or the step size changes. It redraws the ELBO curves of the last few
runs and, for the newest run, the fitted means with their ±2σ bars next to
the true coefficients.

The work is done by plain functions (:func:`fit_elbo`, :func:`plot_fits`);
the widget only wires the sliders to them. The ELBO is the course's own
(:func:`jaxcourse.bayes.elbo`), not the learner's, so the explorer works
before the exercises are done.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import jax
import jax.numpy as jnp
import numpy as np

from ...bayes import chapter_data, elbo
from ...messages import message
from .explorer_base import Explorer, LegendEntry, figure, png_bytes, slider_style

__all__ = [
    "SAMPLE_COUNTS",
    "ElboExplorer",
    "ElboFit",
    "elbo_explorer",
    "fit_elbo",
    "plot_fits",
]

SAMPLE_COUNTS = (1, 2, 8, 32, 128, 512)


@dataclass(frozen=True)
class ElboFit(LegendEntry):
    """One run of stochastic gradient ascent on the ELBO."""

    num_samples: int
    step_size: float
    elbos: np.ndarray  # (steps,) the Monte Carlo ELBO estimate at each step
    beta_loc: np.ndarray
    beta_scale: np.ndarray

    @property
    def plateau(self) -> float:
        """Mean ELBO estimate over the last fifth of the steps."""
        return float(np.mean(self.elbos[-max(1, len(self.elbos) // 5):]))

    def describe(self, language: str = "en") -> str:
        """Return the legend text in ``language``."""
        return message("elbo_fit", language, samples=self.num_samples,
                       step=self.step_size, elbo=self.plateau)


@functools.partial(jax.jit, static_argnames=("num_samples", "steps"))
def _ascend(key: jax.Array, all_x: jax.Array, y: jax.Array, step_size: float,
            num_samples: int, steps: int) -> tuple[Any, jax.Array]:
    features = all_x.shape[1]

    def step(state: tuple, key: jax.Array) -> tuple[tuple, jax.Array]:
        loc, log_scale = state
        epsilon = jax.random.normal(key, (num_samples, features))
        value, (loc_grad, log_scale_grad) = jax.value_and_grad(
            elbo, argnums=(0, 1))(loc, log_scale, epsilon, all_x, y)
        # Ascent: the ELBO is maximized.
        return (loc + step_size * loc_grad,
                log_scale + step_size * log_scale_grad), value

    start = (jnp.zeros(features), jnp.zeros(features))
    return jax.lax.scan(step, start, jax.random.split(key, steps))


def fit_elbo(all_x: np.ndarray, y: np.ndarray, num_samples: int, step_size: float,
             steps: int = 300, seed: int = 10003) -> ElboFit:
    """Maximize the ELBO by SGD from loc = log_scale = 0; return the curve and fit.

    One compiled ``lax.scan`` runs every step, so a refit takes well under a
    second on a CPU (the first one for a sample count also compiles).
    """
    (loc, log_scale), elbos = _ascend(
        jax.random.key(seed), jnp.asarray(all_x), jnp.asarray(y), step_size,
        num_samples=int(num_samples), steps=int(steps))
    return ElboFit(int(num_samples), float(step_size), np.asarray(elbos),
                   np.asarray(loc), np.exp(np.asarray(log_scale)))


#: The figure's size in CSS pixels (drawn at twice that many device pixels).
FIGURE_PX = (760, 320)


def plot_fits(fits: list[ElboFit], true_beta: np.ndarray,
              language: str = "en", title: str = "") -> bytes:
    """Draw the ELBO curves (newest bold) and the newest posterior; return a PNG.

    Parameters
    ----------
    fits : list of ElboFit
        Oldest first.
    true_beta : numpy.ndarray
        The coefficients the data was drawn with.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    title : str
        Above the figure: which data was fitted.
    """
    fig = figure(*FIGURE_PX, language)
    curves, posterior = fig.subplots(1, 2, width_ratios=(3, 2))
    finite = [f.elbos[np.isfinite(f.elbos)] for f in fits]
    for i, fit in enumerate(fits):
        newest = i == len(fits) - 1
        curves.plot(fit.elbos, lw=1.6 if newest else 0.8,
                    alpha=1.0 if newest else 0.45, label=fit.describe(language))
    values = np.concatenate(finite) if finite else np.zeros(0)
    if values.size:
        top = float(values.max()) + 10
        # Diverging runs reach huge negative values: keep the plateaus readable.
        curves.set_ylim(max(float(values.min()), top - 200) - 5, top)
    curves.set_xlabel(message("sgd_step", language))
    curves.set_ylabel(message("elbo_estimate", language))
    curves.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    if fits:
        curves.legend(fontsize=7, loc="lower right")
        fit = fits[-1]
        index = np.arange(len(true_beta))
        posterior.errorbar(index, fit.beta_loc, yerr=2 * fit.beta_scale, fmt="o",
                           capsize=3, label=message("elbo_mean", language))
        posterior.plot(index, true_beta, "rx", mew=2,
                       label=message("elbo_true_beta", language))
        posterior.set_xticks(index)
        posterior.set_xlabel(message("elbo_coefficient", language))
        posterior.legend(fontsize=7)
    return png_bytes(fig)


class ElboExplorer(Explorer):
    """Sliders for samples per step and step size; each change refits and redraws.

    Parameters
    ----------
    steps : int
        Gradient-ascent steps per fit (one compiled ``lax.scan``).
    keep : int
        The number of fits drawn at once: the oldest goes first.
    language : str
        ``"en"``, ``"zh-Hant"`` or ``"zh-Hans"``: the labels' language.
    run : bool
        Fit once right away with the chapter's settings (128 samples, 0.01).
    """

    def __init__(self, *, steps: int = 300, keep: int = 4, language: str = "en",
                 run: bool = True) -> None:
        super().__init__(language)
        self.true_beta, self.all_x, self.y, _ = chapter_data()
        self.steps = steps
        self.keep = keep
        self.runs: list[ElboFit] = []
        self.num_samples = widgets.SelectionSlider(
            options=SAMPLE_COUNTS, value=128, continuous_update=False,
            **slider_style(self.label("elbo_samples"), len(SAMPLE_COUNTS) - 1),
        )
        # 10^-4 to 10^-1 in quarter decades: 12 steps.
        self.step_size = widgets.FloatLogSlider(
            value=0.01, base=10, min=-4, max=-1, step=0.25, continuous_update=False,
            readout_format=".3g", **slider_style(self.label("elbo_step_size"), 12),
        )
        self._runs_layout(self.refit, [self.num_samples, self.step_size],
                          FIGURE_PX[0])
        self._start(run, self.refit)

    def title(self) -> str:
        """Say which data is fitted: the chapter's simulated points."""
        return self.label("elbo_title", points=len(self.y),
                          features=self.all_x.shape[1])

    def refit(self) -> ElboFit:
        """Fit with the sliders' values, keep the run, redraw (slider callback)."""
        fit = fit_elbo(self.all_x, self.y, self.num_samples.value,
                       self.step_size.value, steps=self.steps)
        self._show_run(fit)
        return fit

    def _redraw(self) -> None:
        self.image.value = plot_fits(self.runs, self.true_beta, self.language,
                                     self.title())

    def live_text(self) -> str:
        """Deterministic plain-text form (no numbers that vary across CPUs)."""
        return self.label("elbo_text", steps=self.steps)


def elbo_explorer(steps: int = 300, language: str = "en") -> ElboExplorer:
    """Build the samples / step-size explorer (fits once right away)."""
    return ElboExplorer(steps=steps, language=language)
