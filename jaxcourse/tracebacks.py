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


_CHAINED = ("The above exception was the direct cause", "During handling of the above")


def _own_frame(entry: str) -> bool:
    text = _ANSI.sub("", entry).lstrip()
    return text.startswith("Cell In") or (text.startswith("File ") and
                                          not library_frame(entry))


def _sections(entries: list[str]) -> list[list[str]]:
    """Split a chained traceback into one list of entries per exception.

    Each section but the first starts with the line that joins it to the one
    before ("The above exception was the direct cause...").
    """
    sections: list[list[str]] = [[]]
    for entry in entries:
        if any(marker in _ANSI.sub("", entry) for marker in _CHAINED):
            sections.append([])
        sections[-1].append(entry)
    return [s for s in sections if s]


def _count(key: str, n: int, language: str) -> str:
    from jaxcourse.messages import message

    return message(f"traceback_{key}_{'1' if n == 1 else 'n'}", language, n=n)


def _shortened(full: Callable[..., list[str]], language: str = "en"
               ) -> Callable[..., list[str]]:
    def structured_traceback(*args: Any, **kwargs: Any) -> list[str]:
        entries = full(*args, **kwargs)
        sections = _sections(entries)
        # Earlier exceptions of a chain raised and caught inside libraries say
        # nothing about the reader's code: keep the last one, and any other
        # that passes through the reader's own lines.
        kept_sections = [s for s in sections[:-1] if any(map(_own_frame, s))]
        kept_sections.append(sections[-1] if sections else [])
        dropped = len(sections) - len(kept_sections)
        kept: list[str] = []
        for section in kept_sections:
            kept += [e for e in section if not library_frame(e)]
        if kept and any(marker in _ANSI.sub("", kept[0]) for marker in _CHAINED):
            kept.pop(0)  # the first exception kept needs no joining line
        hidden = sum(library_frame(e) for s in kept_sections for e in s)
        notes = []
        if hidden:
            notes.append(_count("frames", hidden, language))
        if dropped:
            notes.append(_count("chain", dropped, language))
        if notes and kept:
            from jaxcourse.messages import message

            parts = message("traceback_and", language).join(notes)
            note = message("traceback_hidden", language, parts=parts)
            kept.insert(len(kept) - 1, note)
        return kept or entries

    return structured_traceback


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to configure
        return None
    return get_ipython()


def short_tracebacks(language: str = "en") -> None:
    """Show errors without the frames of installed libraries (idempotent).

    Parameters
    ----------
    language : {"en", "zh-Hant", "zh-Hans"}
        The language of the line that says what was left out.
    """
    shell = _shell()
    if shell is None:
        return
    formatter = shell.InteractiveTB
    full = getattr(formatter, _ORIGINAL, None)
    if full is None:
        full = formatter.structured_traceback
        setattr(formatter, _ORIGINAL, full)
    formatter.structured_traceback = _shortened(full, language)


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
