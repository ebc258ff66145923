"""The CJK font set-up: Chinese labels render without missing-glyph boxes."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import matplotlib
import pytest
from matplotlib.figure import Figure

from jaxcourse import CourseError, plotting

NOTO_CJK = Path("/usr/share/fonts/opentype/noto")
LABELS = ("資料平行與模型平行", "步數", "損失", "準確率 (accuracy) −0.5")


def render_png(title: str, xlabel: str, ylabel: str) -> list[str]:
    """Draw a small figure to PNG; return the warnings raised while drawing."""
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [-0.5, 0.2, 1.0], label="pmap 與 shard_map")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.legend()
    buffer = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(buffer, format="png")
    assert buffer.getvalue().startswith(b"\x89PNG")
    return [str(w.message) for w in caught]


def missing_glyphs(messages: list[str]) -> list[str]:
    return [m for m in messages if "missing from font" in m]


def test_default_font_misses_chinese_glyphs() -> None:
    # Proves the check below can fail: DejaVu Sans has no Chinese glyphs.
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        assert missing_glyphs(render_png(*LABELS[:3]))


def test_use_cjk_font_renders_chinese_without_missing_glyphs() -> None:
    with matplotlib.rc_context():
        family = plotting.use_cjk_font()
        assert family in plotting.CJK_FONTS
        assert "CJK" in family or plotting.font_covers(family)
        assert plotting.font_covers(family, "".join(LABELS))
        assert matplotlib.rcParams["font.sans-serif"][0] == family
        assert missing_glyphs(render_png(*LABELS[:3])) == []
        assert missing_glyphs(render_png("α β", "x", LABELS[3])) == []


@pytest.mark.skipif(
    not NOTO_CJK.is_dir(), reason="Debian's fonts-noto-cjk is not installed"
)
def test_debian_noto_font_is_preferred() -> None:
    # Setup installs Debian's fonts-noto-cjk; the course then uses its TC face.
    with matplotlib.rc_context():
        assert plotting.use_cjk_font() == "Noto Sans CJK TC"


def test_no_cjk_font_raises_a_course_error() -> None:
    with matplotlib.rc_context(), pytest.raises(CourseError, match="fonts-noto-cjk"):
        plotting.use_cjk_font(candidates=("No Such Font Family",), fetch=False)


def test_latin_font_is_not_accepted_as_cjk() -> None:
    assert not plotting.font_covers("DejaVu Sans")
    assert not plotting.font_covers("No Such Font Family")
    with matplotlib.rc_context(), pytest.raises(plotting.FontNotFoundError):
        plotting.use_cjk_font(candidates=("DejaVu Sans",), fetch=False)
