"""Build the book and open every page of the toc in headless Chromium.

The static HTML must work offline: no JavaScript errors, every resource from the
book itself, images decoded, stored widget state rendered as widget views, math
typeset, and every internal link answered. Screenshots of each page go to
tests/_artifacts/screenshots/ for a person to look at.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import SHOTS, chromium, severe_log_entries, wait_until
from toc import book_config, toc_files

pytestmark = pytest.mark.slow


REPO = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WAIT_S = 30.0


def _has_widget_views(doc: str) -> bool:
    """Whether the page's notebook stored widget state and shows a widget view."""
    path = REPO / f"{doc}.ipynb"
    if not path.exists():
        return False
    nb = json.loads(path.read_text(encoding="utf-8"))
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state")
    views = any(
        WIDGET_VIEW in out.get("data", {})
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
    )
    return bool(state) and views


# The Chinese editions repeat their masters' pages: the build checks all of
# them (-W -n), the browser opens each edition's index and one chapter and one
# exercise page with links in each (their switcher and glyphs are tested below).
OPENED_EDITIONS = {f"{folder}/{lang}/{page}" for lang in ("zh_hans", "zh_hant")
                   for folder, page in (("book", "index"), ("book", "05_shard_map"),
                                        ("exercises", "04_sharding_exercises"))}
DOCS = [d for d in toc_files()
        if not any(f"/{lang}/" in d for lang in ("zh_hans", "zh_hant"))
        or d in OPENED_EDITIONS]


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    """Build the book from the checkout, as it is, and serve it on 127.0.0.1.

    The sources are the checkout in its own state, tool caches included (the
    output alone goes elsewhere): a fresh clone gets ``.pytest_cache`` only when
    pytest ends, so write it now, as a user's second run would find it.
    """
    request.config.cache.set("jaxcourse/book-build", True)
    subprocess.run(["bash", str(REPO / "scripts" / "fetch_widget_js.sh")], check=True)
    out = tmp_path_factory.mktemp("book")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    build = subprocess.run(
        [
            str(jupyter_book),
            "build",
            str(REPO),
            "--path-output",
            str(out),
            "-W",
            "-n",
            "--keep-going",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, f"book build failed:\n{build.stdout[-4000:]}"
    html = out / "_build" / "html"

    handler = functools.partial(Quiet, directory=str(html))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietServer(http.server.ThreadingHTTPServer):
    """Chromium drops connections it no longer needs; that is not an error."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Quiet(http.server.SimpleHTTPRequestHandler):
    """A static file server that does not log every request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium, logging the network so foreign requests can be found."""
    with chromium(performance_log=True) as driver:
        driver.set_page_load_timeout(WAIT_S)
        yield driver


def _wait(driver: object, script: str, what: str, url: str) -> None:
    """Poll a JavaScript predicate until it holds, or fail naming what is missing."""
    wait_until(lambda: driver.execute_script(script), f"{url}: {what}", WAIT_S)


def _requested_urls(driver: object) -> list[str]:
    """The URLs the page requested, from Chromium's network log."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


_IMAGES_DONE = "return [...document.images].every(i => i.complete);"
_WIDGETS_SHOWN = """
const views = [...document.querySelectorAll('.jupyter-widgets, [class*="widget-"]')]
  .filter(e => e.offsetWidth > 0 && e.offsetHeight > 0);
return views.length > 0;
"""
_NOTES_SHOWN = """
const shown = s => [...document.querySelectorAll(s)].map(e => e.offsetHeight > 0);
return {static: shown('.jc-static'), gone: shown('.jc-kernel-gone')};
"""
_MATH_DONE = """
const math = document.querySelectorAll('.math');
return math.length === 0 || document.querySelectorAll('mjx-container').length > 0;
"""


@pytest.mark.parametrize("doc", DOCS)
def test_page(browser: object, site: str, doc: str) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    url = urllib.parse.urljoin(site, f"{doc}.html")
    driver.get_log("performance")  # drop the previous page's entries
    driver.get(url)
    _wait(driver, "return document.readyState === 'complete';", "page not loaded", url)
    title = driver.execute_script(
        "const h = document.querySelector('main h1, article h1');"
        "return h ? h.textContent : '';"
    )
    assert title.strip(), f"{url}: no <h1>: the page has no visible content"
    _wait(driver, _IMAGES_DONE, "images did not finish loading", url)
    _wait(driver, _MATH_DONE, "MathJax did not typeset the math", url)
    if _has_widget_views(doc):
        _wait(driver, _WIDGETS_SHOWN, "no widget view rendered", url)

    # Screenshots: the top of the page, and the first widget where there is one.
    name = doc.replace("/", "__")
    driver.execute_script("window.scrollTo(0, 0);")
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    widgets = driver.find_elements(By.CSS_SELECTOR, ".jupyter-widgets")
    shown = [w for w in widgets if w.is_displayed() and w.size["height"] > 0]
    if shown:
        driver.execute_script(
            "arguments[0].scrollIntoView({block: 'center'});", shown[0]
        )
        time.sleep(0.3)
        driver.save_screenshot(str(SHOTS / f"{name}__widget.png"))
    if _has_widget_views(doc):
        assert shown, f"{url}: widget state stored, but no widget view visible"
        text = driver.execute_script("return document.body.innerText;")
        assert "Error displaying widget" not in text, f"{url}: a widget failed"
        # An explorer stored with its static note says, on this page, that it
        # needs a running notebook; the kernel-gone notice is for notebooks.
        notes = driver.execute_script(_NOTES_SHOWN)
        assert all(notes["static"]), f"{url}: an explorer's static note is hidden"
        assert not any(notes["gone"]), f"{url}: a kernel-gone notice is shown"

    broken = driver.execute_script(
        "return [...document.images].filter(i => i.naturalWidth === 0).map(i => i.src);"
    )
    assert not broken, f"{url}: images that did not load: {broken}"

    # Chromium asks every site for /favicon.ico by itself; the book has none.
    severe = severe_log_entries(driver, ignore=("/favicon.ico ",))
    assert not severe, f"{url}: browser errors:\n" + "\n".join(severe)

    host = urllib.parse.urlsplit(site).netloc
    foreign = sorted(
        {
            u
            for u in _requested_urls(driver)
            if urllib.parse.urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urllib.parse.urlsplit(u).netloc != host
        }
    )
    assert not foreign, f"{url}: requests to other hosts (offline they fail): {foreign}"

    hrefs = driver.execute_script(
        "return [...document.querySelectorAll('a[href]')].map(a => a.href);"
    )
    internal = sorted(
        {
            urllib.parse.urldefrag(h).url
            for h in hrefs
            if urllib.parse.urlsplit(h).netloc == host
        }
    )
    bad = [(h, s) for h in internal if (s := _status(h)) != 200]
    assert not bad, f"{url}: internal links that do not answer 200: {bad}"


def test_toc_documents_exist() -> None:
    # A typo in _toc.yml shows up here by name, not as a 404 in a page test.
    missing = [
        d
        for d in toc_files()
        if not any((REPO / f"{d}{suffix}").exists() for suffix in (".md", ".ipynb"))
    ]
    assert not missing, f"_toc.yml names documents that do not exist: {missing}"


def _redirects() -> dict[str, str]:
    return book_config()["sphinx"]["config"]["jaxcourse_redirects"]


def test_old_addresses_are_new_documents_or_none() -> None:
    redirects = _redirects()
    assert redirects, "no redirects configured"
    for old, new in redirects.items():
        assert new in toc_files(), f"{old} -> {new}: not a page of the toc"
        assert old not in toc_files() and not (REPO / f"{old}.ipynb").exists(), old
        # No chains: an address renamed twice leads straight to the last name.
        assert new not in redirects, f"{old} -> {new} -> {redirects[new]}"


@pytest.mark.parametrize("old", ["book/03_vmap_bayesian",
                                 "book/06_multiprocess",
                                 "exercises/07_zh_data_parallel_exercises",
                                 "solutions/01_mlp_tfds_exercises"])
def test_an_old_address_leads_to_its_new_page(browser: object, site: str,
                                              old: str) -> None:
    driver = browser
    new = urllib.parse.urljoin(site, f"{_redirects()[old]}.html")
    driver.get(urllib.parse.urljoin(site, f"{old}.html") + "#top")
    wait_until(lambda: driver.current_url.split("#")[0] == new,
               f"{old}: did not lead to {new} (at {driver.current_url})", WAIT_S)
    assert driver.current_url.endswith("#top")  # the fragment goes along
    _wait(driver, "return !!document.querySelector('main h1, article h1');",
          "the new page has no <h1>", new)


# Each Chinese page, its language, and the CJK font variant a browser must draw it
# with: under lang="en" Chromium picks Noto Sans CJK JP, whose glyphs differ.
CHINESE_PAGES = {
    "book/09_dp_zh": ("zh-Hant", "TC"),
    "book/09_dp_zh_hans": ("zh-Hans", "SC"),
    "book/glossary_zh": ("zh-Hant", "TC"),
    "book/glossary_zh_hans": ("zh-Hans", "SC"),
}
_MARK_CHINESE = """
const p = [...document.querySelectorAll('article p')]
    .find(e => /[\\u4e00-\\u9fff]/.test(e.textContent));
if (p) { p.id = 'jaxcourse-chinese-probe'; }
return Boolean(p);
"""


@pytest.mark.parametrize("doc", sorted(CHINESE_PAGES))
def test_chinese_pages_declare_their_language_and_get_its_glyphs(
    browser: object, site: str, doc: str
) -> None:
    driver = browser
    language, variant = CHINESE_PAGES[doc]
    url = urllib.parse.urljoin(site, f"{doc}.html")
    driver.get(url)
    _wait(driver, "return document.readyState === 'complete';", "page not loaded", url)
    assert driver.execute_script("return document.documentElement.lang;") == language
    assert driver.execute_script(_MARK_CHINESE), f"{url}: no Chinese paragraph"
    # The fonts Chromium really drew the paragraph with (not the CSS list).
    driver.execute_cdp_cmd("DOM.enable", {})
    driver.execute_cdp_cmd("CSS.enable", {})
    root = driver.execute_cdp_cmd("DOM.getDocument", {})["root"]["nodeId"]
    node = driver.execute_cdp_cmd(
        "DOM.querySelector", {"nodeId": root, "selector": "#jaxcourse-chinese-probe"}
    )["nodeId"]
    fonts = driver.execute_cdp_cmd("CSS.getPlatformFontsForNode", {"nodeId": node})
    cjk = [f["familyName"] for f in fonts["fonts"] if "CJK" in f["familyName"]]
    assert cjk and all(name.endswith(variant) for name in cjk), (url, fonts["fonts"])


# ---- the Chinese editions (jaxcourse.i18n): declared, drawn, and switched ------

EDITION_PAGES = {
    "book/zh_hans/01_mlp": ("zh-Hans", "SC"),
    "book/zh_hant/01_mlp": ("zh-Hant", "TC"),
    "exercises/zh_hans/04_sharding_exercises": ("zh-Hans", "SC"),
    "exercises/zh_hant/04_sharding_exercises": ("zh-Hant", "TC"),
}
CHINESE_PAGES.update(EDITION_PAGES)
_SWITCHER = """
const nav = 'nav.jaxcourse-editions';
return [...document.querySelectorAll(`${nav} a, ${nav} strong`)]
    .map(e => [e.tagName, e.getAttribute('lang'), e.href || '']);
"""
_HEADINGS = ("return [...document.querySelectorAll('article h1, article h2')]"
             ".map(h => h.textContent);")


@pytest.mark.parametrize("doc", sorted(EDITION_PAGES))
def test_an_edition_page_is_translated_and_drawn_with_its_own_glyphs(
    browser: object, site: str, doc: str
) -> None:
    driver = browser
    url = urllib.parse.urljoin(site, f"{doc}.html")
    driver.get(url)
    _wait(driver, "return document.readyState === 'complete';", "page not loaded", url)
    headings = driver.execute_script(_HEADINGS)
    untranslated = [h for h in headings if not re.search(r"[\u4e00-\u9fff]", h)]
    assert headings and not untranslated, f"{url}: untranslated headings {untranslated}"
    # No tofu: every font Chromium drew the article with is a real one, and the
    # CJK text came from the Noto CJK font of the page's own variant.
    driver.execute_cdp_cmd("DOM.enable", {})
    driver.execute_cdp_cmd("CSS.enable", {})
    root = driver.execute_cdp_cmd("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    nodes = driver.execute_cdp_cmd(
        "DOM.querySelectorAll", {"nodeId": root, "selector": "article h1, article p"}
    )["nodeIds"]
    variant = EDITION_PAGES[doc][1]
    for node in nodes[:40]:
        fonts = driver.execute_cdp_cmd("CSS.getPlatformFontsForNode", {"nodeId": node})
        names = [f["familyName"] for f in fonts["fonts"] if f["glyphCount"]]
        assert not any("LastResort" in n or not n for n in names), (url, names)
        cjk = [n for n in names if "CJK" in n]
        assert all(n.endswith(variant) for n in cjk), (url, names)


@pytest.mark.parametrize(("start", "language", "expected"), [
    ("book/zh_hans/01_mlp", "zh-Hant", "book/zh_hant/01_mlp"),
    ("book/zh_hant/01_mlp", "en", "book/01_mlp"),
    ("book/01_mlp", "zh-Hans", "book/zh_hans/01_mlp"),
    ("book/index", "zh-Hant", "book/zh_hant/index"),
    ("book/setup", "zh-Hans", "book/zh_hans/index"),  # no twin: the edition's index
])
def test_the_switcher_leads_to_the_same_page_in_another_edition(
    browser: object, site: str, start: str, language: str, expected: str
) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    url = urllib.parse.urljoin(site, f"{start}.html")
    driver.get(url)
    _wait(driver, "return document.readyState === 'complete';", "page not loaded", url)
    entries = driver.execute_script(_SWITCHER)
    assert [e[1] for e in entries] == ["en", "zh-Hans", "zh-Hant"], (url, entries)
    link = driver.find_element(
        By.CSS_SELECTOR, f'nav.jaxcourse-editions a[lang="{language}"]')
    link.click()
    target = urllib.parse.urljoin(site, f"{expected}.html")
    wait_until(lambda: driver.current_url.split("#")[0] == target,
               f"{start}: the {language} link led to {driver.current_url}", WAIT_S)
    _wait(driver, "return document.readyState === 'complete';", "page not loaded",
          target)
    assert driver.execute_script("return document.documentElement.lang;") == language
