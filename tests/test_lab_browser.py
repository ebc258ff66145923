"""Exercise notebooks in a live JupyterLab, driven in headless Chromium like a learner.

A real JupyterLab server starts on 127.0.0.1 with a token, over a private
folder holding copies of two student notebooks (the English one of chapter 3
and the Traditional-Chinese one of chapter 9). For each: open it, Run All, type
a correct answer into the first exercise, run it and press Check (every test
must pass), type a wrong answer and press Check (the panel must name the
mistake), press Hint and Show solution (their text must appear), and move a
slider of the explorer (its output must change). Then restart the kernel
(Kernel → Restart Kernel…): the old panel must say, in place, that the kernel
restarted, and a click on its Check button must send nothing (before, it
raised "Uncaught Error: Cannot send" in the console). The browser console must
stay free of errors. A chapter notebook opened beside them must show its MyST
admonitions rendered, as the book does (jupyterlab-myst), never as raw
":::{admonition}" text. Screenshots go to tests/_artifacts/screenshots/lab__*.png.
The server is shut down at the end, and no process it started may outlive it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from browser import SHOTS, chromium, severe_log_entries, type_into_cell, wait_until
from processes import alive

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
RUN_ALL_S = 240.0
CHECK_S = 60.0
# Console entries that are not the course's: the favicon the server lacks.
IGNORED = ("/favicon.ico ",)
# A chapter whose MyST admonitions (a titled one with a :class:) must render in Lab.
CHAPTER = "06_scaling.ipynb"
# A MyST admonition's opening fence, as the chapters write them: the kind, then
# (for the generic ``admonition``) its title.
ADMONITION = re.compile(
    r"^(?::{3,}|`{3,})\{(admonition|attention|caution|danger|error|hint|important"
    r"|note|seealso|tip|warning)\}[ \t]*(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Learner:
    """What a learner types and reads in one exercise notebook."""

    notebook: str
    function: str  # the first exercise's function, as its cell defines it
    right: str  # a correct answer, typed as one line
    wrong: str  # a wrong answer, typed as one line
    mistake: str  # words of the panel's message for the wrong answer
    summary: str  # the panel summary's words after "passed/total"
    buttons: tuple[str, str, str]  # Check, Hint, Show solution
    hint_header: str  # what the Hint button reveals first
    solution_words: str  # words of the reference the Show-solution button reveals
    kernel_gone: str  # what an old panel says once its kernel has restarted


LEARNERS = [
    Learner(
        notebook="03_bayes_exercises.ipynb",
        function="batched_log_joint",
        right="def batched_log_joint(beta, all_x, y): "
              "return jax.vmap(log_joint, in_axes=(0, None, None))(beta, all_x, y)",
        # Both sums without an axis: the whole batch becomes one number.
        wrong="def batched_log_joint(beta, all_x, y): "
              "return jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0)) + "
              "jnp.sum(-jax.nn.softplus(-(2 * y - 1) * jnp.dot(all_x, beta.T).T))",
        mistake="the sums have no axis",
        summary="tests passed",
        buttons=("Check", "Hint", "Show solution"),
        hint_header="Hint 1",
        solution_words="def batched_log_joint",
        kernel_gone="The kernel restarted: run the cells above again.",
    ),
    Learner(
        notebook="09_dp_zh_exercises.ipynb",
        function="global_normalize",
        right="def global_normalize(grid): return jax.pmap(jax.vmap("
              "lambda x: x / lax.psum(x, ('i', 'j')), axis_name='j'), "
              "axis_name='i')(grid)",
        # Normalizes each device's row on its own: psum over "j" only.
        wrong="def global_normalize(grid): return jax.pmap(jax.vmap("
              "lambda x: x / lax.psum(x, 'j'), axis_name='j'), axis_name='i')(grid)",
        mistake="只跨內層的",
        summary="項測試通過",
        buttons=("檢查", "提示", "顯示解答"),
        hint_header="提示",
        solution_words="def global_normalize",
        kernel_gone="核心（kernel）已重新啟動：請重新執行上面的儲存格。",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(folder: Path) -> None:
    """JupyterLab settings for a test: every cell in the page, no news pop-up."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
            {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
            {"fetchNews": "false", "checkForUpdates": False},
    }
    for name, value in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")


@dataclass
class Lab:
    """A running JupyterLab server."""

    url: str
    token: str
    root: Path
    process: subprocess.Popen


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Start JupyterLab on 127.0.0.1 over copies of the student notebooks."""
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    root.mkdir()
    for learner in LEARNERS:
        shutil.copy(REPO / "exercises" / learner.notebook, root / learner.notebook)
    shutil.copy(REPO / "book" / CHAPTER, root / CHAPTER)
    _settings(home / "settings")
    token, port = secrets.token_hex(16), _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "IPYTHONDIR": str(home / "ipython"), "JUPYTER_RUNTIME_DIR": str(home / "rt")}
    command = [
        str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")  # CI runs as root
    log = (home / "lab.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    started = Lab(url, token, root, process)
    descendants: set[int] = set()
    try:
        wait_until(lambda: _answers(f"{url}/api/status?token={token}") or
                   process.poll() is not None, "JupyterLab did not start", 90)
        assert process.poll() is None, (home / "lab.log").read_text()[-3000:]
        yield started
        descendants = {p.pid for p in psutil.Process(process.pid).children(True)}
    finally:
        _shutdown(started)
        log.close()
    left = alive(descendants | {process.pid})
    assert not left, f"processes left after JupyterLab's shutdown: {left}"


def _answers(url: str, data: bytes | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, data=data, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _shutdown(lab: Lab) -> None:
    """Ask the server to stop (it stops its kernels), then make sure it has."""
    _answers(f"{lab.url}/api/shutdown?token={lab.token}", data=b"")
    try:
        lab.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    # Whatever did not stop in time goes, with everything it started.
    try:
        for child in psutil.Process(lab.process.pid).children(recursive=True):
            child.kill()
        lab.process.kill()
        lab.process.wait(timeout=10)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass


# ---- driving the notebook --------------------------------------------------------


def _cells(driver: object) -> list:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")


def _menu(driver: object, top: str, item: str) -> None:
    from selenium.webdriver.common.by import By

    bar = [e for e in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel")
           if e.text == top]
    assert bar, f"no {top} menu"
    bar[0].click()
    entry = wait_until(
        lambda: [e for e in driver.find_elements(By.CSS_SELECTOR, ".lm-Menu-itemLabel")
                 if e.text == item], f"no {item!r} in the {top} menu", 10)
    entry[0].click()


def _busy(driver: object) -> bool:
    # A cell waiting or running shows [*] in its prompt.
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-InputPrompt')]"
        ".some(e => e.textContent.includes('*'));")


def _all_ran(driver: object) -> bool:
    # Every code cell's prompt holds an execution count, as in "[12]:".
    return driver.execute_script(
        "const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];"
        "return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent));")


def _modified(driver: object) -> bool:
    return driver.execute_script(
        "return !!document.querySelector('.lm-TabBar-tab.jp-mod-dirty');")


def _kernel_idle(driver: object) -> bool:
    return driver.execute_script(
        "const s = document.querySelector('.jp-Notebook-ExecutionIndicator');"
        "return !!s && s.getAttribute('data-status') === 'idle';")


def _type_into(driver: object, cell: object, text: str) -> None:
    """Replace a code cell's text with ``text``, typed, and run the cell."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    type_into_cell(driver, cell, text)
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(
        Keys.SHIFT).perform()
    wait_until(lambda: not _busy(driver) and _kernel_idle(driver),
               "the cell did not finish", CHECK_S)


def _output_text(cell: object) -> str:
    from selenium.webdriver.common.by import By

    areas = cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea")
    return areas[0].text if areas else ""


def _button(cell: object, label: str) -> object:
    from selenium.webdriver.common.by import By

    buttons = [b for b in cell.find_elements(By.CSS_SELECTOR, ".widget-button")
               if b.text.strip() == label]
    assert buttons, f"no {label!r} button in {_output_text(cell)[:200]!r}"
    return buttons[0]


def _all_passed(text: str, summary: str) -> bool:
    counts = re.search(rf"(\d+)/(\d+) {summary}", text)
    return bool(counts) and counts[1] == counts[2]


def _restart_kernel(driver: object) -> None:
    """Kernel → Restart Kernel…, confirmed, as a learner does; wait until idle."""
    from selenium.webdriver.common.by import By

    _menu(driver, "Kernel", "Restart Kernel…")
    confirm = wait_until(
        lambda: [b for b in driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog-button")
                 if b.text.strip() == "Restart"], "no Restart button in the dialog", 10)
    confirm[0].click()
    wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog"),
               "the restart dialog stayed open", 10)
    wait_until(lambda: _kernel_idle(driver), "the kernel did not restart", 90)


def _click_and_read(driver: object, cell: object, label: str, wanted: str) -> str:
    """Click a panel's button; return its output once ``wanted`` appears in it."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", cell)
    _button(cell, label).click()
    def shown() -> str:
        text = _output_text(cell)
        return text if wanted in text else ""

    return wait_until(shown, f"{label}: the panel never showed {wanted!r}", CHECK_S)


@pytest.mark.parametrize("learner", LEARNERS, ids=lambda x: x.notebook.split("_")[0])
def test_a_learner_works_through_the_first_exercise(lab: Lab, learner: Learner) -> None:
    shot = SHOTS / f"lab__{Path(learner.notebook).stem}"
    with _browser(lab, shot) as driver:
        _work_through(driver, lab, learner, shot)


@contextlib.contextmanager
def _browser(lab: Lab, shot: Path) -> Iterator[object]:
    """Open chromium; on a failure keep a screenshot; stop the kernels after."""
    with chromium(window="1400,1000") as driver:
        try:
            yield driver
        except BaseException:
            driver.save_screenshot(f"{shot}__failed.png")
            raise
        finally:
            _stop_kernels(lab)


def _stop_kernels(lab: Lab) -> None:
    """Shut down every kernel, so the next notebook has the CPU to itself."""
    with urllib.request.urlopen(f"{lab.url}/api/kernels?token={lab.token}",
                                timeout=10) as response:
        kernels = json.load(response)
    for kernel in kernels:
        request = urllib.request.Request(
            f"{lab.url}/api/kernels/{kernel['id']}?token={lab.token}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


def _work_through(driver: object, lab: Lab, learner: Learner, shot: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    # A workspace of its own: the notebook opened by another test stays closed.
    workspace = Path(learner.notebook).stem
    driver.get(f"{lab.url}/lab/workspaces/{workspace}/tree/{learner.notebook}"
               f"?reset&token={lab.token}")
    wait_until(lambda: len(_cells(driver)) > 5 and _kernel_idle(driver),
               "the notebook did not open with an idle kernel", 90)
    # JupyterLab fills in the kernel's metadata once the kernel answers; stored
    # as it writes them, the untouched notebook stays unmodified (no ● on its tab).
    assert not wait_until(lambda: _modified(driver), "", 3, fail=False), (
        "opening the notebook modified it: its stored kernelspec or language_info "
        "differ from what JupyterLab writes")

    # A Run All sent while the kernel is still connecting can be dropped: try
    # again if nothing starts.
    for _ in range(3):
        _menu(driver, "Run", "Run All Cells")
        if wait_until(lambda: _busy(driver) or _all_ran(driver), "", 20, fail=False):
            break
    wait_until(lambda: _all_ran(driver) and _kernel_idle(driver),
               "Run All did not finish", RUN_ALL_S)
    errors = driver.execute_script(
        "return [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".filter(e => e.getAttribute('data-mime-type') === "
        "'application/vnd.jupyter.stderr' && e.innerText.includes('Error'))"
        ".map(e => e.innerText.slice(0, 300));")
    assert not errors, f"Run All raised: {errors}"

    cells = _cells(driver)
    index = next(i for i, c in enumerate(cells)
                 if f"def {learner.function}(" in c.text)
    code, panel = cells[index], cells[index + 1]
    # Widget views render a moment after their output arrives.
    wait_until(lambda: any(w in _output_text(panel)
                           for w in ("not attempted", "尚未作答")),
               "the panel does not say the exercise is not attempted", CHECK_S)

    _type_into(driver, code, learner.right)
    text = _click_and_read(driver, panel, learner.buttons[0], learner.summary)
    assert _all_passed(text, learner.summary) and "✗" not in text, text
    driver.save_screenshot(f"{shot}__right.png")

    # The same answer again: the result is the same, yet the click must be
    # visibly answered at once ("checking", then a new attempt number).
    before = _output_text(panel)
    started = time.monotonic()
    _button(panel, learner.buttons[0]).click()
    wait_until(lambda: _output_text(panel) != before,
               "a repeated Check left the panel unchanged", CHECK_S, every=0.02)
    answered = time.monotonic() - started
    again = wait_until(lambda: (t := _output_text(panel)) != before and
                       _all_passed(t, learner.summary) and t,
                       "the repeated Check never showed its result", CHECK_S)
    assert again != text, "the repeated result looks exactly like the first"
    # 0.2 s is the aim on a learner's laptop; a loaded CI machine gets slack.
    assert answered < 2.0, f"the panel answered a click after {answered:.2f} s"

    _type_into(driver, code, learner.wrong)
    text = _click_and_read(driver, panel, learner.buttons[0], learner.mistake)
    assert not _all_passed(text, learner.summary), text
    driver.save_screenshot(f"{shot}__wrong.png")

    _click_and_read(driver, panel, learner.buttons[1], learner.hint_header)
    _click_and_read(driver, panel, learner.buttons[2], learner.solution_words)
    driver.save_screenshot(f"{shot}__hint_solution.png")

    # The explorer: the last output with a slider; move it with the keyboard.
    explorer = [c for c in _cells(driver)
                if c.find_elements(By.CSS_SELECTOR, ".noUi-handle")][-1]
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'});",
                          explorer)
    before = _output_text(explorer)
    handle = explorer.find_elements(By.CSS_SELECTOR, ".noUi-handle")[0]
    handle.click()
    # A slider may start at its maximum: then the step that moves it is left.
    for key in (Keys.ARROW_RIGHT, Keys.ARROW_LEFT):
        handle.send_keys(key)
        if wait_until(lambda: _output_text(explorer) != before, "", CHECK_S / 2,
                      fail=False):
            break
    assert _output_text(explorer) != before, (
        "the explorer's output did not change when its slider moved")
    wait_until(lambda: not _busy(driver) and _kernel_idle(driver),
               "the explorer did not finish", CHECK_S)
    driver.save_screenshot(f"{shot}__explorer.png")
    severe = severe_log_entries(driver, ignore=IGNORED)
    assert not severe, "browser errors:\n" + "\n".join(severe)

    # The kernel restarts: the old panel says so where the learner looks, and
    # its Check button, clicked where it stands, sends nothing to a dead comm.
    _restart_kernel(driver)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", panel)
    gone = wait_until(lambda: learner.kernel_gone in (t := _output_text(panel)) and t,
                      "the old panel never said that its kernel restarted", CHECK_S)
    check_button = _button(panel, learner.buttons[0])
    ActionChains(driver).move_to_element(check_button).click().perform()
    # A click on a dead comm throws at once; give the console a moment to log it.
    errors = wait_until(lambda: severe_log_entries(driver, ignore=IGNORED),
                        "", 2, fail=False)
    assert not errors, "clicking Check after the restart:\n" + "\n".join(errors)
    assert _output_text(panel) == gone, "the old panel changed after the restart"
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", panel)
    driver.save_screenshot(f"{shot}__restarted.png")


# ---- a chapter's MyST markup -----------------------------------------------------


def _admonitions(notebook: Path) -> list[tuple[str, str]]:
    """The MyST admonitions of a notebook's Markdown cells, in order.

    Parameters
    ----------
    notebook : Path
        The ``.ipynb`` file.

    Returns
    -------
    list of tuple of str
        ``(kind, title)`` for each admonition: the title the generic
        ``admonition`` directive writes on its fence, "" for the other kinds
        (their title is their kind, "Note" for ``note``).
    """
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        for kind, title in ADMONITION.findall(source):
            found.append((kind, title.strip() if kind == "admonition" else ""))
    return found


def _straight(text: str) -> str:
    """``text`` with MyST's typographic quotes made straight, as sources write them."""
    return text.translate(str.maketrans("‘’“”", "''\"\""))


def _rendered_admonitions(driver: object) -> list[str]:
    """The titles of the admonitions jupyterlab-myst rendered (each an <aside>)."""
    return driver.execute_script(
        "return [...document.querySelectorAll("
        "'.jp-MarkdownCell aside.myst-admonition')].map(a => (a.querySelector("
        "'.myst-admonition-header') || {innerText: ''}).innerText.trim());")


def _raw_markup(driver: object) -> list[str]:
    """Visible text of rendered Markdown cells that still shows a MyST fence."""
    # A rendered cell's editor is hidden (display: none): innerText leaves it out.
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-MarkdownCell')]"
        ".map(c => c.innerText).filter(t => /(:::|```)\\{/.test(t))"
        ".map(t => t.slice(0, 120));")


def test_a_chapter_shows_its_admonitions_rendered(lab: Lab) -> None:
    wanted = _admonitions(lab.root / CHAPTER)
    assert any(kind == "admonition" and title for kind, title in wanted), (
        f"{CHAPTER} has no titled admonition left: point CHAPTER at one that has")
    shot = SHOTS / f"lab__{Path(CHAPTER).stem}"
    with _browser(lab, shot) as driver:
        _read_admonitions(driver, lab, wanted, shot)


def _read_admonitions(driver: object, lab: Lab, wanted: list[tuple[str, str]],
                      shot: Path) -> None:
    driver.get(f"{lab.url}/lab/workspaces/{Path(CHAPTER).stem}/tree/{CHAPTER}"
               f"?reset&token={lab.token}")
    wait_until(lambda: len(_cells(driver)) > 5 and _kernel_idle(driver),
               "the chapter did not open with an idle kernel", 90)
    # Markdown cells render one by one after the notebook opens.
    wait_until(lambda: len(_rendered_admonitions(driver)) >= len(wanted), "", 30,
               fail=False)
    raw = _raw_markup(driver)
    assert not raw, (
        "MyST markup shows as raw text in JupyterLab (is jupyterlab-myst installed "
        f"and enabled? `jupyter labextension list`): {raw}")
    shown = _rendered_admonitions(driver)
    assert len(shown) == len(wanted), (
        f"{len(wanted)} admonitions in {CHAPTER}, {len(shown)} rendered: {shown}")
    titles = {_straight(title) for title in shown}
    missing = [title for kind, title in wanted if title and title not in titles]
    assert not missing, f"admonitions without their title {missing}; shown: {shown}"
    assert not wait_until(lambda: _modified(driver), "", 3, fail=False), (
        "opening the chapter modified it")
    severe = severe_log_entries(driver, ignore=IGNORED)
    assert not severe, "browser errors:\n" + "\n".join(severe)
    driver.execute_script(
        "document.querySelector('.jp-MarkdownCell aside.myst-admonition')"
        ".scrollIntoView({block: 'start'});")
    driver.save_screenshot(f"{shot}__admonition.png")
