"""Chapter 10's explorer: any two measured steps, side by side, part by part.

:class:`StepExplorer` puts two runs of the stored ladder
(:func:`jaxcourse.fast_step.load_ladder`: the rungs and the runs beside them,
measured on a TPU v5e) next to each other: a stacked bar each, the chip's
time per token by part of the step (:data:`jaxcourse.step_profile.PARTS`),
and a table of each part's microseconds per token, the change, and each
step's time and MFU as MaxText counts it. A refused run says what the
compiler needed. The work is done by :func:`describe` and :func:`draw`, plain
functions; the widget only wires the two dropdowns to them, so tests drive
it without a browser. It reads stored numbers only: nothing here runs on,
or stands in for, a chip.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from jaxcourse import fast_step
from jaxcourse.step_profile import PARTS

from ...messages import message
from .explorer_base import Explorer, controls_row, figure, figure_image, show_figure

__all__ = ["StepExplorer", "describe", "draw", "runs", "step_explorer"]


def runs(ladder: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Return the stored runs by key, the ladder's rungs first."""
    found = (ladder or fast_step.load_ladder())["runs"]
    return dict(found)


def _per_token(row: dict[str, Any]) -> dict[str, float]:
    """Microseconds per token of each part of a run."""
    tokens = fast_step.Recipe.from_dict(row["recipe"]).tokens
    return {part: row["parts"][part] / tokens * 1e6 for part in PARTS}


def _mfu(row: dict[str, Any], ladder: dict[str, Any]) -> float:
    from jaxcourse.measure import hardware_of

    chip = hardware_of(ladder["device_kind"])
    return fast_step.mfu(fast_step.Recipe.from_dict(row["recipe"]), row["step_seconds"],
                         chip.flops)


def describe(before: str, after: str, language: str = "en",
             ladder: dict[str, Any] | None = None) -> str:
    """Say how two stored runs compare, part by part (deterministic lines).

    Parameters
    ----------
    before, after : str
        Keys of the stored runs (``"today"``, ``"splash"``, ... ``"wide"``,
        and the runs beside the ladder).
    language : {"en", "zh-Hant", "zh-Hans"}
        The language of the lines.
    ladder : dict, optional
        A ladder file's content (the stored v5e one by default).
    """
    ladder = ladder or fast_step.load_ladder()
    found = runs(ladder)
    for key in (before, after):
        if key not in found:
            return message("step_unknown", language, key=key, known=", ".join(found))
    lines = [message("step_source", language, kind=ladder["device_kind"],
                     date=ladder["date"], jax=ladder["versions"]["jax"],
                     libtpu=ladder["versions"]["libtpu"])]
    for key in (before, after):
        row = found[key]
        if "refused" in row:
            needed, available = fast_step.refusal_bytes(row["refused"])
            lines.append(message("step_refused", language, key=key,
                                 needed=needed / 2**30, available=available / 2**30))
        else:
            recipe = fast_step.Recipe.from_dict(row["recipe"])
            lines.append(message("step_run", language, key=key,
                                 ms=row["step_seconds"] * 1e3, tokens=recipe.tokens,
                                 mfu=_mfu(row, ladder)))
    if any("refused" in found[key] for key in (before, after)):
        return "\n".join(lines)
    a, b = _per_token(found[before]), _per_token(found[after])
    lines.append(message("step_parts_head", language, before=before, after=after))
    a["Σ"], b["Σ"] = sum(a.values()), sum(b.values())
    for part in (*PARTS, "Σ"):
        change = b[part] - a[part]
        lines.append(f"  {part:10}{a[part]:8.1f}{b[part]:8.1f}{change:+8.1f}")
    return "\n".join(lines)


def draw(before: str, after: str, language: str = "en",
         ladder: dict[str, Any] | None = None) -> Any:
    """Return a figure: a stacked bar of µs per token by part for each run.

    A refused run has an empty bar. ``None`` if a key is unknown.
    """
    found = runs(ladder)
    if before not in found or after not in found:
        return None
    fig = figure(560, 200, language)
    ax = fig.add_subplot()
    colors = dict(zip(PARTS, _COLORS, strict=True))
    for y, key in enumerate((before, after)):
        row = found[key]
        if "refused" in row:
            continue
        left = 0.0
        for part, width in _per_token(row).items():
            ax.barh(y, width, left=left, color=colors[part],
                    label=part if y == 0 or "refused" in found[before] else None)
            left += width
    ax.set_yticks([0, 1], [before, after])
    ax.invert_yaxis()
    ax.set_xlabel(message("step_axis", language))
    ax.legend(ncols=len(PARTS), fontsize=7, loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    return fig


#: One color per part, in :data:`PARTS`' order (matplotlib's tab10).
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


class StepExplorer(Explorer):
    """Two stored runs of the fast step's ladder, compared part by part.

    Parameters
    ----------
    before, after : str
        The runs shown first (keys of the stored ladder).
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Draw once right away.
    """

    def __init__(self, before: str = "today", after: str = "wide", *,
                 language: str = "en", run: bool = True) -> None:
        super().__init__(language)
        self.summary_text = ""
        keys = list(runs())
        style = {"description_width": "initial"}
        self.before = widgets.Dropdown(options=keys, value=before,
                                       description=self.label("step_before"),
                                       style=style, layout=widgets.Layout(width="auto"))
        self.after = widgets.Dropdown(options=keys, value=after,
                                      description=self.label("step_after"),
                                      style=style, layout=widgets.Layout(width="auto"))
        self.drawing = figure_image()
        self.summary = widgets.HTML()
        self._on_change(self.redraw, self.before, self.after)
        self._assemble([controls_row(self.before, self.after)],
                       [self.drawing, self.summary])
        self._start(run, self.redraw)

    def redraw(self) -> str:
        """Redraw the bars and the table for the chosen runs; return the text."""
        before, after = self.before.value, self.after.value
        self.summary_text = describe(before, after, self.language)
        show_figure(self.drawing, draw(before, after, self.language))
        self.summary.value = "<pre>" + html.escape(self.summary_text) + "</pre>"
        return self.summary_text

    def live_text(self) -> str:
        """Return a deterministic plain-text form (for stored notebook outputs)."""
        return self.label("step_text")


def step_explorer(**initial: Any) -> StepExplorer:
    """Build the step explorer (drawn right away)."""
    return StepExplorer(**initial)
