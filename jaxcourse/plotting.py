"""Matplotlib set-up shared by the chapters.

Matplotlib's default font, DejaVu Sans, has no Chinese glyphs: a label such
as "損失" is drawn as empty boxes, with only a ``UserWarning`` to say so.
:func:`use_cjk_font` picks an installed CJK font once, for the whole kernel,
so a chapter written in Chinese calls it right after importing matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib import font_manager, ft2font, rcParams

from jaxcourse import CourseError

__all__ = [
    "CJK_FONTS", "CJK_FONTS_SC", "FIGURE_TEXT_KEY", "FIGURE_TEXT_MIME",
    "FontNotFoundError", "export_figure_text", "figure_svg", "font_covers",
    "pack_svg", "unpack_svg", "use_cjk_font",
]

#: CJK font families, most wanted first: Traditional-Chinese faces before the
#: Simplified, Japanese and Korean ones (which draw some characters with other
#: regional glyph shapes). The first is Debian's ``fonts-noto-cjk``; the others
#: are what macOS, Windows and other Linux distributions ship.
CJK_FONTS: tuple[str, ...] = (
    "Noto Sans CJK TC",
    "Noto Sans TC",
    "Source Han Sans TC",
    "PingFang TC",
    "Microsoft JhengHei",
    "Heiti TC",
    "Noto Sans CJK HK",
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Microsoft YaHei",
    "WenQuanYi Zen Hei",
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
)

#: The same families with the Simplified-Chinese faces first, for the
#: Simplified-Chinese (zh-Hans) edition: ``use_cjk_font(CJK_FONTS_SC, script="SC")``.
CJK_FONTS_SC: tuple[str, ...] = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "PingFang SC",
    "Microsoft YaHei",
    "Heiti SC",
    "WenQuanYi Zen Hei",
    *(family for family in CJK_FONTS if not family.endswith(" SC")
      and family not in ("Microsoft YaHei", "WenQuanYi Zen Hei")),
)

# Characters a CJK font must draw for the course's figures (Traditional forms).
_SAMPLE = "資料平行裝置損失準確率梯度"
# The same words in Simplified forms, for the zh-Hans edition's figures.
_SAMPLE_SC = "数据并行设备损失准确率梯度"


class FontNotFoundError(CourseError):
    """No installed font can draw the Chinese text of a figure."""


def _font_file(family: str) -> str | None:
    """Return the file matplotlib would use for ``family``, or None."""
    try:
        return font_manager.findfont(
            font_manager.FontProperties(family=family), fallback_to_default=False
        )
    except ValueError:
        return None


def font_covers(family: str, text: str = _SAMPLE) -> bool:
    """Tell whether the installed font ``family`` has a glyph for every character.

    Parameters
    ----------
    family : str
        A font family name, e.g. ``"Noto Sans CJK TC"``.
    text : str, optional
        The characters to look up; by default a sample of Traditional Chinese.

    Returns
    -------
    bool
        False if the family is not installed or lacks a glyph (whitespace is
        not checked).
    """
    path = _font_file(family)
    if path is None:
        return False
    # The faces of a .ttc collection (TC, SC, JP...) cover the same
    # characters, so the first face answers for all of them.
    font = ft2font.FT2Font(path)
    return all(font.get_char_index(ord(c)) != 0 for c in text if not c.isspace())


def _register_new_system_fonts() -> None:
    """Add fonts installed after matplotlib wrote its font cache.

    Matplotlib lists the system fonts once and caches the list, so a font
    installed later (``apt-get install fonts-noto-cjk`` after the first plot)
    stays invisible until the cache is rebuilt. Adding the unknown files is
    enough, and cheaper than rebuilding.
    """
    known = {entry.fname for entry in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if path not in known:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):
                continue  # an unreadable file is not ours to report


def _use(family: str) -> str:
    rest = [f for f in rcParams["font.sans-serif"] if f != family]
    rcParams["font.sans-serif"] = [family, *rest]
    rcParams["font.family"] = ["sans-serif"]
    return family


def use_cjk_font(
    candidates: Sequence[str] = CJK_FONTS, fetch: bool = True, script: str = "TC"
) -> str:
    """Make matplotlib draw Chinese text with the first installed CJK font.

    Call it once per kernel, before drawing. Latin letters, digits and the
    minus sign still render (matplotlib falls back to DejaVu Sans for any
    glyph the CJK font lacks). Where no installed font can draw Chinese (Colab
    has none), a pinned Noto Sans is fetched once (:mod:`jaxcourse.fonts`).

    Parameters
    ----------
    candidates : sequence of str, optional
        Font families to try, in order; by default :data:`CJK_FONTS`.
    fetch : bool, optional
        Whether to fetch a font when none of ``candidates`` is installed.
    script : {"TC", "SC"}, optional
        The glyph shapes of the fetched font: Traditional or Simplified.

    Returns
    -------
    str
        The family now used for sans-serif text, e.g. ``"Noto Sans CJK TC"``.

    Raises
    ------
    FontNotFoundError
        If none of ``candidates`` is installed with Chinese glyphs; the
        message says how to install one.
    """
    sample = _SAMPLE if script == "TC" else _SAMPLE_SC
    for attempt in range(2):
        for family in candidates:
            if font_covers(family, sample):
                return _use(family)
        if attempt == 0:
            _register_new_system_fonts()
    fetched = ""
    if fetch:
        from jaxcourse.fonts import FontFetchError, fetch_cjk_font

        try:
            path, family = fetch_cjk_font(script)
        except FontFetchError as err:
            fetched = f" Fetching one failed too: {err}."
        else:
            font_manager.fontManager.addfont(str(path))
            if font_covers(family, sample):
                return _use(family)
            fetched = f" The fetched {path.name} cannot draw them either."
    raise FontNotFoundError(
        "No font that can draw Chinese text is installed (tried: "
        + ", ".join(candidates)
        + ")."
        + fetched
        + " On Debian or Ubuntu run `sudo apt-get install fonts-noto-cjk` "
        "(the course's `make setup` does it); on macOS or Windows the system "
        "CJK fonts are found by themselves. Then restart the kernel."
    )


# ---- figures whose text the Chinese editions translate -----------------------

#: The MIME type under which a kernel set up by :func:`export_figure_text`
#: displays each figure's SVG, next to its PNG. No front end renders it;
#: ``scripts/run_notebook.py`` moves it into the output's metadata.
FIGURE_TEXT_MIME = "application/vnd.jaxcourse.figure-text+svg"
#: Where a stored output keeps that SVG: gzip, then base64.
FIGURE_TEXT_KEY = "jaxcourse/figure-svg"


def figure_svg(fig: Any) -> str:
    """Return ``fig`` as an SVG whose text is text, not glyph outlines.

    The figure is cropped as the inline backend crops its PNG
    (``bbox_inches="tight"``), so the two show the same area; ids and dates
    are fixed, so the same figure gives the same SVG.
    """
    import io

    from matplotlib import rc_context

    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "jaxcourse"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight",
                    facecolor=fig.get_facecolor(), metadata={"Date": None})
    return buffer.getvalue()


def pack_svg(svg: str) -> str:
    """Compress an SVG for a notebook's metadata (gzip without a time stamp, base64)."""
    import base64
    import gzip

    return base64.b64encode(gzip.compress(svg.encode(), mtime=0)).decode("ascii")


def unpack_svg(packed: str) -> str:
    """Undo :func:`pack_svg`."""
    import base64
    import gzip

    return gzip.decompress(base64.b64decode(packed)).decode()


def export_figure_text(shell: Any = None) -> bool:
    """Make the kernel display each figure's SVG too, for the Chinese editions.

    The English chapters are the masters of every output; their Chinese
    editions are not executed again. So that an edition can still show a
    figure with Chinese labels, the master is executed (by
    ``scripts/run_notebook.py``) with this hook: each figure then also carries
    an SVG whose labels are ``<text>`` elements, which ``jaxcourse.i18n``
    translates.

    Parameters
    ----------
    shell : IPython shell, optional
        The running one by default.

    Returns
    -------
    bool
        False outside IPython, where there is nothing to hook.
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    from IPython.core.formatters import BaseFormatter
    from matplotlib.figure import FigureBase
    from traitlets import ObjectName, Unicode

    class _FigureText(BaseFormatter):
        format_type = Unicode(FIGURE_TEXT_MIME)
        print_method = ObjectName("_repr_jaxcourse_figure_text_")

    formatter = _FigureText(parent=shell.display_formatter)
    # On FigureBase, not Figure: the inline backend, once pyplot is imported,
    # removes every formatter's entry for Figure itself; lookups walk the MRO.
    formatter.for_type(FigureBase, lambda fig: pack_svg(figure_svg(fig)))
    shell.display_formatter.formatters[FIGURE_TEXT_MIME] = formatter
    return True
