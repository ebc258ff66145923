"""Short error reports in notebooks: the learner's own lines and the message.

An error raised deep inside JAX, NumPy or TensorFlow prints, by default,
thirty frames of library code between the line of the notebook that caused it
and the message that explains it. :func:`short_tracebacks` keeps what a
reader acts on: the frames of the notebook's own cells, the exception's type
and its message, and one line saying how many library frames were left out
and how to see them (:func:`full_tracebacks`). The chapters call it in their
first cells, so their stored error outputs are short too.

Outside IPython both functions do nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["full_tracebacks", "library_frame", "short_tracebacks"]

# A frame of an installed package, as IPython prints it (colours aside):
# "File ~/.../site-packages/jax/_src/api.py:2116, in device_put(...)".
_LIBRARY = re.compile(r"(site|dist)-packages[/\\]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ORIGINAL = "_jaxcourse_full_structured_traceback"


def library_frame(entry: str) -> bool:
    """Say whether one entry of IPython's structured traceback is library code."""
    text = _ANSI.sub("", entry).lstrip()
    return text.startswith("File ") and bool(_LIBRARY.search(text.splitlines()[0]))


def _shortened(full: Callable[..., list[str]]) -> Callable[..., list[str]]:
    def structured_traceback(*args: Any, **kwargs: Any) -> list[str]:
        entries = full(*args, **kwargs)
        kept = [e for e in entries if not library_frame(e)]
        hidden = len(entries) - len(kept)
        if hidden and kept:
            note = (f"[{hidden} frame{'s' if hidden > 1 else ''} inside JAX and other "
                    "libraries hidden; jaxcourse.tracebacks.full_tracebacks() shows "
                    "them]")
            kept.insert(len(kept) - 1, note)
        return kept

    return structured_traceback


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to configure
        return None
    return get_ipython()


def short_tracebacks() -> None:
    """Show errors without the frames of installed libraries (idempotent)."""
    shell = _shell()
    if shell is None:
        return
    formatter = shell.InteractiveTB
    if getattr(formatter, _ORIGINAL, None) is None:
        full = formatter.structured_traceback
        setattr(formatter, _ORIGINAL, full)
        formatter.structured_traceback = _shortened(full)


def full_tracebacks() -> None:
    """Show every frame again, as IPython does by default."""
    shell = _shell()
    if shell is None:
        return
    formatter = shell.InteractiveTB
    full = getattr(formatter, _ORIGINAL, None)
    if full is not None:
        formatter.structured_traceback = full
        setattr(formatter, _ORIGINAL, None)
