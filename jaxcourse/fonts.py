"""A CJK font fetched once, for machines that have none (Colab, a bare container).

Chapter 9 labels its figures in Chinese. Where no installed font can draw
Chinese (Colab ships none), :func:`fetch_cjk_font` downloads Noto Sans from a
pinned package of the npm registry, checks the archive against the checksum
recorded here, keeps one face (the regular weight) under
``~/.jax-course/fonts`` and registers it with matplotlib. Later calls find the
file and download nothing. Without a network it fails within seconds with a
clear message; it never waits for long.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from jaxcourse import CourseError

__all__ = ["FONT_DIR_ENV", "PINNED", "FontFetchError", "PinnedFont", "fetch_cjk_font"]

#: Where fetched fonts are kept (default ``~/.jax-course/fonts``).
FONT_DIR_ENV = "JAX_COURSE_FONT_DIR"


@dataclass(frozen=True)
class PinnedFont:
    """One face inside a pinned npm package, and how to check the package."""

    family: str  # the family name inside the font file
    url: str  # the package's tarball on the npm registry
    sha512: str  # the registry's "integrity" of that tarball, base64
    member: str  # the font's path inside the tarball


_REGISTRY = "https://registry.npmjs.org/@expo-google-fonts"
#: The fonts the course can fetch, by script: Traditional and Simplified Chinese.
PINNED: dict[str, PinnedFont] = {
    "TC": PinnedFont(
        family="Noto Sans TC",
        url=f"{_REGISTRY}/noto-sans-tc/-/noto-sans-tc-0.4.3.tgz",
        sha512="69XAOTLPz0WlAxL6qJEKlDMxHsBd4J1M39HjV0gPF2o1xWVALOsVWvDgistnecVock"
               "A9wbU/tH5C/gyS2PdnHg==",
        member="package/400Regular/NotoSansTC_400Regular.ttf",
    ),
    "SC": PinnedFont(
        family="Noto Sans SC",
        url=f"{_REGISTRY}/noto-sans-sc/-/noto-sans-sc-0.4.3.tgz",
        sha512="9rAwdFTFHbO/u6Cs0gj2jZbW74TGIiaFNQnXYH2s5wA1bzVkwbaviL4t8YUV642eGY"
               "jg86eH6DkAEQmfNHDncQ==",
        member="package/400Regular/NotoSansSC_400Regular.ttf",
    ),
}


class FontFetchError(CourseError):
    """The pinned font could not be fetched or did not match its checksum."""


def font_dir() -> Path:
    """Return the folder fetched fonts are kept in (``JAX_COURSE_FONT_DIR``)."""
    return Path(os.environ.get(FONT_DIR_ENV) or Path.home() / ".jax-course" / "fonts")


def _download(url: str, timeout: float) -> bytes:
    # The timeout bounds the connection and every read: an unreachable or
    # silent registry fails fast instead of hanging the notebook.
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def fetch_cjk_font(script: str = "TC", timeout: float = 10.0) -> tuple[Path, str]:
    """Return a CJK font file for ``script``, fetching it once if needed.

    Parameters
    ----------
    script : {"TC", "SC"}
        Traditional or Simplified Chinese glyph shapes.
    timeout : float
        Seconds to wait for the registry to answer (per connection and read).

    Returns
    -------
    (Path, str)
        The font file and its family name, e.g. ``"Noto Sans TC"``.

    Raises
    ------
    FontFetchError
        If the registry cannot be reached or the archive's checksum differs.
    """
    pinned = PINNED[script]
    target = font_dir() / Path(pinned.member).name
    if target.is_file():
        return target, pinned.family
    try:
        archive = _download(pinned.url, timeout)
    except OSError as err:
        raise FontFetchError(
            f"could not download the {pinned.family} font from the npm registry "
            f"({err}); connect to the internet once, or install a CJK font "
            "(`sudo apt-get install fonts-noto-cjk`), then run the cell again"
        ) from None
    digest = base64.b64encode(hashlib.sha512(archive).digest()).decode()
    if digest != pinned.sha512:
        raise FontFetchError(
            f"the downloaded {pinned.family} package does not match its pinned "
            "checksum; nothing was kept"
        )
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        member = tar.extractfile(pinned.member)
        if member is None:
            raise FontFetchError(f"{pinned.member} is missing from {pinned.url}")
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the target, then rename: an interrupted fetch leaves no
        # half font that a later call would take for a whole one.
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as out:
            shutil.copyfileobj(member, out)
        Path(out.name).replace(target)
    return target, pinned.family
