"""The book's stored figures: sharp on high-density screens, never wider than the text.

A figure is stored as a PNG with, for ``%config InlineBackend.figure_formats =
["retina"]``, its display width in the output's metadata (half its pixels).
Without that metadata it displays at its pixel width. The book's figures are
drawn at most :data:`TEXT_COLUMN_IN` inches wide, which matplotlib's inline
backend turns into at most :data:`TEXT_COLUMN_PX` display pixels; the browser
test checks that the book's text column is at least that wide, so no figure is
shrunk, and that each displays at its stored size.
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The widest figure the chapters draw, in inches (matplotlib's default width).
TEXT_COLUMN_IN = 6.4
#: Its display width: the inline backend's 100 dots per inch, before cropping.
TEXT_COLUMN_PX = int(TEXT_COLUMN_IN * 100)
#: Pixels per display pixel a stored figure needs to stay sharp at 1.5x zoom
#: or on a high-density screen (retina figures have 2).
MIN_DENSITY = 1.5
BOOK = sorted((ROOT / "book").glob("*.ipynb"))


def figures(path: Path) -> list[tuple[int, int, int]]:
    """Return ``(cell index, pixel width, display width)`` of every stored PNG."""
    found = []
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png is None:
                continue
            raw = base64.b64decode(png)
            (pixels,) = struct.unpack(">I", raw[16:20])  # the IHDR chunk's width
            shown = output.get("metadata", {}).get("image/png", {}).get("width", pixels)
            found.append((i, pixels, int(shown)))
    return found


def problems(path: Path) -> list[str]:
    """Say what is wrong with each of a notebook's figures."""
    wrong = []
    for cell, pixels, shown in figures(path):
        if pixels < MIN_DENSITY * shown:
            wrong.append(f"cell {cell}: {pixels} pixels shown at {shown}: add "
                         "%config InlineBackend.figure_formats = ['retina']")
        if shown > TEXT_COLUMN_PX:
            wrong.append(f"cell {cell}: {shown} pixels wide, wider than the text "
                         f"column ({TEXT_COLUMN_PX}): draw it at most "
                         f"{TEXT_COLUMN_IN} inches wide")
    return wrong


@pytest.mark.parametrize("path", BOOK, ids=lambda p: p.name)
def test_figures_are_sharp_and_fit_the_text_column(path: Path) -> None:
    assert not problems(path)


def test_the_check_finds_a_1x_figure(tmp_path: Path) -> None:
    # A notebook whose figure is stored at 1x, 800 pixels wide: both problems.
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR"
                           + struct.pack(">II", 800, 300)).decode()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": png})])])
    path = tmp_path / "one_figure.ipynb"
    nbformat.write(nb, path)
    found = problems(path)
    assert len(found) == 2 and "retina" in found[0] and "6.4 inches" in found[1]
