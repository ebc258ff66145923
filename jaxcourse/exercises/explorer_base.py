"""What every explorer widget shares: a stable text form beside the live view.

An explorer's live view (sliders, drawings) is an ipywidgets widget, whose
model ids change on every run; nbval compares the ``text/plain`` form of a
cell's output, so each explorer also gives a short text that depends on
nothing random (no timings, no numbers that vary across CPUs).
"""

from __future__ import annotations

import io
from typing import Any

import ipywidgets as widgets

__all__ = ["Explorer", "png_bytes"]


class Explorer:
    """Base of the course's explorers: ``widget`` to show, ``text()`` to check.

    Subclasses set ``self.widget`` and implement :meth:`text`.
    """

    widget: widgets.Widget

    def text(self) -> str:
        """Return the deterministic plain-text form of the explorer."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        # The live widget for a notebook front end, the stable text for
        # everything else (nbval, a terminal, the grader's logs).
        data = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        data["text/plain"] = self.text()
        return data


def png_bytes(figure: Any) -> bytes:
    """Render a matplotlib ``Figure`` to PNG bytes for an ``ipywidgets.Image``."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
