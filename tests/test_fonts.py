"""Fetching a CJK font where none is installed: once, checked, and never hanging.

A local HTTP server on 127.0.0.1 stands in for the npm registry; the pinned
package is replaced by a tarball made here, holding Debian's Noto CJK font
(which `make setup` installs) under the path the real package uses.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import matplotlib
import pytest

from jaxcourse import fonts, plotting

NOTO = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")


def _tarball(member: str, payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo(member)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


class Registry(http.server.ThreadingHTTPServer):
    """Serves one file and counts the requests for it."""

    requests = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # the http.server API's name
        self.server.requests += 1
        body = self.server.body
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Registry]:
    """A registry on 127.0.0.1 serving a pinned 'TC' package built from Noto CJK."""
    if not NOTO.is_file():
        pytest.fail(f"{NOTO} is missing: run `make setup` (fonts-noto-cjk)")
    member = "package/400Regular/NotoSansTC_400Regular.ttf"
    body = _tarball(member, NOTO.read_bytes())
    server = Registry(("127.0.0.1", 0), Handler)
    server.body = body
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    digest = base64.b64encode(hashlib.sha512(body).digest()).decode()
    url = f"http://127.0.0.1:{server.server_address[1]}/noto-sans-tc.tgz"
    pinned = fonts.PinnedFont("Noto Sans CJK JP", url, digest, member)
    monkeypatch.setitem(fonts.PINNED, "TC", pinned)
    monkeypatch.setenv(fonts.FONT_DIR_ENV, str(tmp_path / "fonts"))
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_the_pins_are_checksummed_fonts_of_the_npm_registry() -> None:
    for script, pinned in fonts.PINNED.items():
        assert pinned.url.startswith("https://registry.npmjs.org/"), script
        assert len(base64.b64decode(pinned.sha512)) == 64, script
        assert pinned.member.endswith(".ttf"), script


def test_fetch_keeps_the_font_and_fetches_once(registry: Registry) -> None:
    path, family = fonts.fetch_cjk_font("TC")
    assert path.read_bytes() == NOTO.read_bytes()
    assert family == "Noto Sans CJK JP"
    again, _ = fonts.fetch_cjk_font("TC")
    assert again == path and registry.requests == 1


def test_a_package_that_differs_from_its_checksum_is_refused(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.body = registry.body[:-1] + b"x"
    with pytest.raises(fonts.FontFetchError, match="checksum"):
        fonts.fetch_cjk_font("TC")
    assert not list(fonts.font_dir().glob("*"))


def test_an_unreachable_registry_fails_fast(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pinned = fonts.PinnedFont("X", f"http://127.0.0.1:{port}/x.tgz", "", "x.ttf")
    monkeypatch.setitem(fonts.PINNED, "TC", pinned)
    monkeypatch.setenv(fonts.FONT_DIR_ENV, str(tmp_path))
    started = time.monotonic()
    with pytest.raises(fonts.FontFetchError, match="fonts-noto-cjk"):
        fonts.fetch_cjk_font("TC", timeout=2)
    assert time.monotonic() - started < 5


def test_use_cjk_font_fetches_one_when_none_is_installed(registry: Registry) -> None:
    # None of the candidates exists, as on Colab: the fetched font is used.
    with matplotlib.rc_context():
        family = plotting.use_cjk_font(candidates=("No Such Font Family",))
        assert family == "Noto Sans CJK JP"
        assert matplotlib.rcParams["font.sans-serif"][0] == family
    assert registry.requests == 1


def test_use_cjk_font_explains_a_failed_fetch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise fonts.FontFetchError("no network here")

    monkeypatch.setattr(fonts, "fetch_cjk_font", refuse)
    with matplotlib.rc_context(), pytest.raises(
            plotting.FontNotFoundError, match="no network here.*fonts-noto-cjk"):
        plotting.use_cjk_font(candidates=("No Such Font Family",))
