"""The teacher's whole path on a real JupyterHub, driven in headless Chromium.

``jaxcourse.hub.start`` runs JupyterHub on 127.0.0.1 (npm's
configurable-http-proxy, the dummy authenticator, SimpleLocalProcessSpawner)
with the class repository of chapter 3 served as a local git repository. A
student follows the nbgitpuller link, logs in, and the student notebook opens
in JupyterLab from their own clone; they answer the first exercise right and
the second wrong, and submit (Save Notebook As… into their outbox). The
teacher logs in, runs their notebook, which collects and grades with the
course's grader, and the table's row for the student is read. Then the book's
chapter 3 page, built with the local hub's address as ``launch_buttons:
jupyterhub_url``, has its JupyterHub button followed by another student to
the chapter, open in JupyterLab with an idle kernel. Nothing the hub started
may outlive ``jaxcourse.hub.stop`` (checked by pid and by the hub's tag).
Screenshots go to tests/_artifacts/screenshots/hub__*.png.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import psutil
import pytest
import yaml
from browser import SHOTS, chromium, type_into_cell, wait_until
from processes import alive

from jaxcourse import hub as course_hub
from jaxcourse.processes import tagged

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
CHAPTER = course_hub.CHAPTER
NOTEBOOK = f"exercises/{CHAPTER}_exercises.ipynb"
RIGHT = ("def batched_log_joint(beta, all_x, y): "
         "return jax.vmap(log_joint, in_axes=(0, None, None))(beta, all_x, y)")
# Both sums without an axis: the whole batch becomes one number.
WRONG = ("def vmapped_log_joint(betas, all_x, y, prior_scale=1.0): "
         "return jnp.sum(jsp.stats.norm.logpdf(betas, 0.0, prior_scale)) + "
         "jnp.sum(-jax.nn.softplus(-(2 * y - 1) * jnp.dot(all_x, betas.T).T))")
OPEN_S = 150.0
GRADE_S = 300.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _build_page(out: Path, hub_url: str, repo: str) -> subprocess.Popen:
    """Start building chapter 3's page alone, with the hub's address as the button's.

    The book's own ``_config.yml`` gives the launch buttons and the repository
    settings; only the hub and the repository (the local class repository)
    change. The repository's address is a ``file://`` one, whose host
    sphinx-book-theme cannot name, so the provider is given.
    """
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    page = {key: config[key] for key in ("title", "author", "execute", "parse",
                                         "launch_buttons", "repository")}
    page["launch_buttons"] = {**config["launch_buttons"], "jupyterhub_url": hub_url}
    page["repository"] = {**config["repository"], "url": repo, "path_to_book": "book"}
    page["sphinx"] = {"recursive_update": True, "config": {
        "html_theme_options": {"repository_provider": "github"}}}
    out.mkdir(parents=True)
    (out / "_config.yml").write_text(yaml.safe_dump(page), encoding="utf-8")
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter-book")), "build", "-W", "-q",
         str(REPO / "book" / f"{CHAPTER}.ipynb"), "--config", str(out / "_config.yml"),
         "--path-output", str(out)], cwd=out, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """A running hub over a private state folder, and chapter 3's page built for it."""
    state = tmp_path_factory.mktemp("hub")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    repo = (state / "git" / course_hub.CLASS_REPO).as_uri()
    build = _build_page(state / "book", url, repo)
    started = None
    try:
        started = course_hub.start(port, state)
        yield started, state, build
    finally:
        seen: set[int] = set()
        if started is not None:
            # Everything the hub started, found now, must be gone afterwards.
            seen = {p.pid for p in tagged(started.tag)} | {started.pid}
        course_hub.stop(state)
        if build.poll() is None:
            build.kill()
        if not build.stdout.closed:  # the button's test may have read it already
            build.communicate()
    if started is not None:
        assert not alive(seen), f"processes left after the hub stopped: {alive(seen)}"
        assert not tagged(started.tag), "a process with the hub's tag outlived it"


def _log_in(driver: object, user: str, password: str) -> None:
    from selenium.webdriver.common.by import By

    field = wait_until(lambda: driver.find_elements(By.ID, "username_input"),
                       "no login form", 30)[0]
    field.send_keys(user)
    driver.find_element(By.ID, "password_input").send_keys(password)
    driver.find_element(By.ID, "login_submit").click()


def _notebook_open(driver: object, notebook: Path) -> bool:
    """Whether ``notebook`` is open whole, with its kernel started and idle."""
    if not notebook.is_file():
        return False  # nbgitpuller has not cloned it yet
    cells = len(nbformat.read(notebook, as_version=4).cells)
    # The status bar says "No Kernel" until a kernel is attached, then
    # "Python 3 (ipykernel) | Idle" once it has started.
    return driver.execute_script(
        "const bar = document.querySelector('#jp-main-statusbar');"
        "const text = bar ? bar.innerText : '';"
        "return document.querySelectorAll('.jp-Notebook .jp-Cell').length"
        " >= arguments[0] && text.includes('| Idle') && !text.includes('No Kernel');",
        cells)


def _code_cell(driver: object, starts: str) -> object:
    from selenium.webdriver.common.by import By

    def find() -> list:
        return [c for c in driver.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")
                if c.find_element(By.CSS_SELECTOR, ".cm-content").text.startswith(
                    starts)]

    # The notebook's cells appear one batch after another once it opens.
    return wait_until(find, f"no code cell starting with {starts!r}", 30)[0]


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


def _run_all(driver: object) -> None:
    """Run → Run All Cells, until a cell has started.

    The kernel's indicator may read idle a moment before the page's connection
    to the kernel is up, and cells run then are never sent: a teacher would
    click again, and so does this.
    """
    started = "return [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]" \
        ".some(e => /\\[(\\*|\\d+)\\]/.test(e.textContent));"
    for _ in range(6):
        _menu(driver, "Run", "Run All Cells")
        if wait_until(lambda: driver.execute_script(started), "", 10, fail=False):
            return
    pytest.fail("Run All Cells ran nothing in a minute")


def _submit(driver: object, path: str) -> None:
    """Save, then File → Save Notebook As… ``path`` (the outbox): a submission."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    # Saved first, the notebook the student worked in asks nothing when Save
    # As closes it.
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(
        Keys.CONTROL).perform()
    wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR,
                                                ".lm-TabBar-tab.jp-mod-dirty"),
               "the notebook was not saved", 20)
    _menu(driver, "File", "Save Notebook As…")
    field = wait_until(
        lambda: driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog input"),
        "no Save As dialog", 10)[0]
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(path)
    field.send_keys(Keys.ENTER)
    wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog"),
               "the Save As dialog stayed open", 20)


def _row(text: str, student: str) -> dict[str, str]:
    """The grade table's row of ``student``, keyed by the table's header."""
    lines = text.splitlines()
    header = next((ln.split() for ln in lines if ln.startswith("submission")), None)
    row = next((ln.split() for ln in lines if ln.startswith(student + " ")), None)
    assert header and row, f"no row for {student} in the table:\n{text}"
    return dict(zip(header, row, strict=False))


def test_a_student_submits_and_the_teacher_grades(hub) -> None:
    started, state, _ = hub
    link = course_hub.hub_link(started.url, (state / "git" / course_hub.CLASS_REPO)
                               .as_uri(), NOTEBOOK)
    shot = SHOTS / "hub"
    with chromium(window="1280,1600") as driver:
        driver.get(link)
        _log_in(driver, "student1", started.password)
        clone = state / "homes" / "student1" / course_hub.CLASS_REPO
        wait_until(lambda: _notebook_open(driver, clone / NOTEBOOK),
                   "the nbgitpuller link did not open the notebook in JupyterLab",
                   OPEN_S)
        assert f"/user/student1/lab/tree/{course_hub.CLASS_REPO}/{NOTEBOOK}" in \
            driver.current_url, driver.current_url
        driver.save_screenshot(f"{shot}__student_opened.png")
        type_into_cell(driver, _code_cell(driver, "def batched_log_joint"), RIGHT)
        type_into_cell(driver, _code_cell(driver, "def vmapped_log_joint"), WRONG)
        _submit(driver, f"outbox/{CHAPTER}_exercises.ipynb")
        submitted = state / "homes" / "student1" / "outbox" / Path(NOTEBOOK).name
        wait_until(lambda: submitted.is_file() and RIGHT in submitted.read_text(),
                   "the submission did not reach the outbox", 20)
        # Save As opens the saved copy in place of the original.
        wait_until(lambda: "/outbox/" in driver.current_url
                   and _notebook_open(driver, submitted),
                   "the submitted copy did not open", 30, fail=False)
        driver.save_screenshot(f"{shot}__student_submitted.png")
    with chromium(window="1280,1600") as driver:  # the teacher's own browser
        driver.get(f"{started.url}/hub/login?next=/hub/user-redirect/lab/tree/"
                   f"grade_{CHAPTER}.ipynb")
        _log_in(driver, course_hub.TEACHER, started.password)
        grading = state / "homes" / course_hub.TEACHER / f"grade_{CHAPTER}.ipynb"
        wait_until(lambda: _notebook_open(driver, grading),
                   "the teacher's notebook did not open", OPEN_S)
        _run_all(driver)
        last = _code_cell(driver, "rows = hub.grade")
        # A row of the table, not the grader's progress line ("grading 1/1: ...").
        text = wait_until(lambda: "\nstudent1 " in last.text and last.text,
                          "", GRADE_S, fail=False)
        collected = _code_cell(driver, "from jaxcourse import hub").text
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", last)
        driver.save_screenshot(f"{shot}__teacher_graded.png")
        assert text, f"no grade table within {GRADE_S:.0f} s: {last.text!r}"
    assert "collected 1 of 3: student1;" in collected, collected
    row = _row(text, "student1")
    assert row["status"] == "graded", row
    # The table names the exercises without their chapter's prefix ("bayes.").
    assert row["batched_log_joint"] == "1.00", row
    # Every value test fails (a scalar for a batch); only "no Python loop over
    # the betas" passes: 1 of 5.
    assert row["vmapped_log_joint"] == "0.20", row
    assert row["sample_betas"] == row["ascent_step"] == "0.00", row  # untouched
    assert row["total"] == "1.20", row
    assert (state / "course" / "grades" / CHAPTER / "grades.csv").is_file()


def test_the_books_jupyterhub_button_opens_the_chapter(hub) -> None:
    from selenium.webdriver.common.by import By

    started, state, build = hub
    output, _ = build.communicate(timeout=120)
    assert build.returncode == 0, output[-3000:]
    page = state / "book" / "_build" / "_page" / CHAPTER / "html" / f"{CHAPTER}.html"
    shot = SHOTS / "hub"
    with chromium(window="1280,1600") as driver:
        driver.get(page.as_uri())
        buttons = driver.find_elements(
            By.CSS_SELECTOR, "a[href*='/hub/user-redirect/git-pull']")
        assert buttons, "the page has no JupyterHub launch button"
        href = buttons[0].get_attribute("href")
        repo = (state / "git" / course_hub.CLASS_REPO).as_uri()
        want = course_hub.hub_link(started.url, repo, f"book/{CHAPTER}.ipynb")
        assert href == want, href
        driver.get(href)
        _log_in(driver, "student2", started.password)
        chapter = state / "homes" / "student2" / course_hub.CLASS_REPO / "book" / \
            f"{CHAPTER}.ipynb"
        wait_until(lambda: _notebook_open(driver, chapter),
                   "the launch button did not open the chapter in JupyterLab", OPEN_S)
        assert f"/user/student2/lab/tree/{course_hub.CLASS_REPO}/book/{CHAPTER}.ipynb" \
            in driver.current_url, driver.current_url
        driver.save_screenshot(f"{shot}__book_button.png")
    assert psutil.pid_exists(started.pid)
