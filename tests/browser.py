"""Headless Chromium for the browser tests (the static book and live JupyterLab)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = Path(__file__).resolve().parent / "_artifacts" / "screenshots"


@contextmanager
def chromium(window: str = "1280,2000", performance_log: bool = False) -> Iterator:
    """Start headless Chromium under Selenium; a missing browser fails, never skips."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found: the browser tests need Debian's "
            "`chromium` and `chromium-driver` packages (run `make setup`, which "
            "installs them, or `sudo apt-get install chromium chromium-driver`)."
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    # Without the background-networking flags Chromium keeps calling hosts this
    # offline machine cannot reach.
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--window-size={window}",
    ):
        options.add_argument(arg)
    logs = {"browser": "ALL"}
    if performance_log:
        logs["performance"] = "ALL"
    options.set_capability("goog:loggingPrefs", logs)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(predicate, what: str, timeout: float = 30.0, every: float = 0.2,
               fail: bool = True):
    """Poll ``predicate()`` until it returns something true; return that.

    Past ``timeout``, fail the test naming ``what``, or with ``fail=False``
    return the last (false) value.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            if fail:
                pytest.fail(f"{what} within {timeout:.0f} s")
            return value
        time.sleep(every)


def severe_log_entries(driver: object, ignore: tuple[str, ...] = ()) -> list[str]:
    """The browser console's errors since the last call, less the ignored ones."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and not any(i in entry["message"] for i in ignore)
    ]


def type_into_cell(driver: object, cell: object, text: str) -> None:
    """Replace a code cell's text with ``text``, typed as a learner types it."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", cell)
    editor = cell.find_element(By.CSS_SELECTOR, ".cm-content")
    editor.click()
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(
        Keys.CONTROL).send_keys(Keys.DELETE).perform()
    editor.send_keys(text)
    # The editor closes brackets itself; typing the closing one steps over it, so
    # what was typed and what the cell holds must agree.
    assert editor.text == text, f"the editor holds {editor.text!r}"
