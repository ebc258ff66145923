"""A class on a local JupyterHub: the teacher's whole path, on one machine.

Usage::

    python -m jaxcourse.hub start [--port 8765]   # make hub
    python -m jaxcourse.hub stop                  # make hub-stop
    python -m jaxcourse.hub status
    python -m jaxcourse.hub link [NOTEBOOK]       # the nbgitpuller link of a notebook
    python -m jaxcourse.hub collect [CHAPTER]     # the teacher, on the hub
    python -m jaxcourse.hub grade [CHAPTER]

``start`` runs JupyterHub on 127.0.0.1 with npm's ``configurable-http-proxy``,
the dummy authenticator (one shared password, printed) and
``SimpleLocalProcessSpawner``: a teacher and three students, each server
running as the current user with a home under the hub's state folder
(``~/.jax-course/hub``; ``JAX_COURSE_HUB_DIR`` moves it). Before it starts the
hub it writes the *class repository*: the class release of chapter 3
(:mod:`jaxcourse.exercises.release`: the student notebooks without any
reference answer) and the chapter itself, as a local git repository that
nbgitpuller clones into each student's home, with no network. The link that
opens a notebook from it is the one the book's JupyterHub button makes
(:func:`hub_link`, from ``_config.yml``). Students submit by saving the
notebook into their ``outbox/`` (File → Save Notebook As…). The teacher's home
holds a notebook whose cells call :func:`collect` (each student's outbox into
the course folder's ``submitted/<chapter>/<student>.ipynb``) and :func:`grade`
(the course's grader, :func:`jaxcourse.exercises.grading.cli.grade`, which
prints the table). ``start`` runs JupyterHub in a PID namespace of its own
(util-linux's ``unshare``,
:func:`jaxcourse.exercises.grading.isolation.pid_namespace`), which every
process it starts inherits and none can leave. ``stop`` ends what ``start``
started and nothing else: the hub by its recorded pid (checked against its
start time, so a reused pid is never signalled), which stops the servers and
the proxy it started, then the namespace, which ends every process still in it,
even one that called ``setsid``, forked twice and cleared its environment;
then, as a last net, every process still carrying the hub's tag
(:data:`jaxcourse.processes.TAG_ENV`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlencode

import nbformat
import psutil

from . import CourseError
from . import cli as commandline
from .processes import TAG_ENV, end_namespace, new_tag, tagged

__all__ = [
    "CHAPTER",
    "STUDENTS",
    "TEACHER",
    "HubError",
    "HubToolMissingError",
    "HubState",
    "class_repository",
    "collect",
    "grade",
    "hub_link",
    "main",
    "running",
    "start",
    "state_dir",
    "stop",
]

ROOT = Path(__file__).resolve().parents[1]
TEACHER = "teacher"
STUDENTS = ("student1", "student2", "student3")
#: The chapter the hub releases, collects and grades.
CHAPTER = "03_bayes"
#: The class repository's folder name: nbgitpuller clones it into a folder of
#: the same name in each home.
CLASS_REPO = "jax-course-class"
CONFIG = ROOT / "scripts" / "jupyterhub_config.py"
DEFAULT_PORT = 8765
START_S = 90.0
STOP_S = 30.0
# JupyterLab settings in every home: no news pop-up (it reaches the internet),
# and every cell in the page (the browser test reads cells below the fold).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none"},
}


class HubError(CourseError):
    """The local hub cannot do what was asked; the message says why."""


class HubToolMissingError(HubError, commandline.MissingToolError):
    """A program the hub needs is not installed (exit code 3)."""


@dataclass(frozen=True)
class HubState:
    """A running hub, as ``start`` records it in ``<state>/hub.json``.

    Parameters
    ----------
    url : str
        The hub's address (``http://127.0.0.1:<port>``).
    pid : int
        JupyterHub's process.
    created : float
        That process's start time (psutil), to tell it from a reused pid.
    tag : str
        The value of :data:`~jaxcourse.processes.TAG_ENV` every process of
        the hub carries.
    password : str
        The class's shared password.
    """

    url: str
    pid: int
    created: float
    tag: str
    password: str


def state_dir() -> Path:
    """Return the hub's state folder (``JAX_COURSE_HUB_DIR``; ``~/.jax-course/hub``)."""
    folder = os.environ.get("JAX_COURSE_HUB_DIR")
    return Path(folder) if folder else Path.home() / ".jax-course" / "hub"


def _proxy() -> Path:
    """Return npm's configurable-http-proxy, which ``make setup`` installs.

    In ``JAX_COURSE_PROXY_DIR`` (``~/.jax-course/proxy`` by default), as
    ``scripts/setup.sh`` puts it there.
    """
    folder = os.environ.get("JAX_COURSE_PROXY_DIR")
    path = (Path(folder) if folder else Path.home() / ".jax-course" / "proxy") \
        / "node_modules" / ".bin" / "configurable-http-proxy"
    if not path.is_file():
        raise HubToolMissingError(
            f"configurable-http-proxy is not installed at {path}: run "
            "`make setup` (it installs it with npm).")
    return path


def _bin(name: str) -> Path:
    path = Path(sys.executable).with_name(name)
    if not path.is_file():
        raise HubToolMissingError(
            f"{name} is not installed beside {sys.executable}: run "
            "`make setup` (requirements.txt pins jupyterhub and nbgitpuller).")
    return path


def _unshare() -> str:
    """Return util-linux's ``unshare``, which gives the hub its own PID namespace.

    Without one, a process the hub started could leave every group, session
    and tag (``setsid``, a double fork, a cleared environment) and outlive
    ``make hub-stop``. Says why not where it cannot.
    """
    from .exercises.grading import isolation

    unshare = shutil.which("unshare")
    reason = isolation.pid_namespace_reason(unshare)
    if reason is not None or unshare is None:
        raise HubToolMissingError(
            f"the hub runs in a PID namespace of its own (util-linux's unshare), so "
            f"that `make hub-stop` ends everything it started: {reason}")
    return unshare


def _config() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def hub_link(hub_url: str, repo: str, path: str, branch: str | None = None,
             interface: str | None = None) -> str:
    """Return the nbgitpuller link that opens ``path`` of ``repo`` on a hub.

    The same link the book's JupyterHub launch button makes
    (sphinx-book-theme), with ``_config.yml``'s branch and notebook interface
    unless given.

    Parameters
    ----------
    hub_url : str
        The hub's address, e.g. ``https://hub.example.edu``.
    repo : str
        The git repository to clone (any URL git accepts, ``file://`` too).
    path : str
        The notebook's path in the repository.
    branch : str, optional
        The branch; by default ``repository: branch`` of ``_config.yml``.
    interface : str, optional
        ``jupyterlab`` or ``classic``; by default ``launch_buttons:
        notebook_interface``.
    """
    config = _config()
    branch = branch or config.get("repository", {}).get("branch", "main")
    interface = interface or config.get("launch_buttons", {}).get(
        "notebook_interface", "classic")
    prefix = {"jupyterlab": "lab/tree", "classic": "tree"}[interface]
    name = repo.strip("/").rsplit("/", 1)[-1]
    query = urlencode({"repo": repo, "urlpath": f"{prefix}/{name}/{path}",
                       "branch": branch}, safe="/")
    return f"{hub_url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def _git(folder: Path, *args: str) -> str:
    # A fixed identity: the machine's git may have none configured.
    return subprocess.run(["git", "-c", "user.name=JAX course", "-c",
                           "user.email=course@localhost", *args], cwd=folder,
                          check=True, capture_output=True, text=True).stdout


def class_repository(state: Path, chapter: str = CHAPTER) -> Path:
    """Write the class repository: the chapter's class release and the chapter.

    A git repository at ``<state>/git/<CLASS_REPO>``, on the branch that
    ``_config.yml``'s launch buttons name (``repository: branch``, the
    course's release tag: a class's own repository sets its own): what
    ``make release`` writes for ``chapter``, plus ``book/<chapter>.ipynb``,
    so that the book's launch button opens the chapter and the exercises
    page's button the student notebook. Written again at each start, as a
    new commit on the same history when anything changed, so that the
    students' clones pull it as nbgitpuller pulls a teacher's update.
    """
    repo = state / "git" / CLASS_REPO
    fresh = repo.with_name(CLASS_REPO + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    repo.parent.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        [sys.executable, "-m", "jaxcourse.exercises.release", str(fresh),
         "--chapters", chapter], capture_output=True, text=True, cwd=ROOT)
    if made.returncode:
        raise HubError(f"the class release of {chapter} failed:\n{made.stderr[-2000:]}")
    (fresh / "book").mkdir()
    shutil.copy2(ROOT / "book" / f"{chapter}.ipynb", fresh / "book")
    branch = _config().get("repository", {}).get("branch", "main")
    if (repo / ".git").is_dir():
        shutil.move(repo / ".git", fresh / ".git")
    else:
        _git(fresh, "init", "-q", "-b", branch)
    shutil.rmtree(repo, ignore_errors=True)
    fresh.rename(repo)
    # An earlier start's repository may be on another branch (the course's
    # tag before a release): the buttons' branch, at the same history.
    _git(repo, "checkout", "-q", "-B", branch)
    _git(repo, "add", "-A")
    if _git(repo, "status", "--porcelain").strip():
        _git(repo, "commit", "-q", "-m", f"The class release of {chapter}")
    return repo


def _homes(state: Path, chapter: str) -> None:
    """Each user's home: Lab settings, a student's outbox, the teacher's notebook."""
    for user in (TEACHER, *STUDENTS):
        home = state / "homes" / user
        for name, value in LAB_SETTINGS.items():
            path = home / ".jupyter" / "lab" / "user-settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value), encoding="utf-8")
        if user != TEACHER:
            (home / "outbox").mkdir(exist_ok=True)
    # A kernel named up front: without one, JupyterLab asks which to start.
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3 (ipykernel)",
        "language": "python"}})
    notebook.cells = [
        nbformat.v4.new_markdown_cell(
            f"# Collecting and grading {chapter}\n\nThe first cell copies each "
            "student's `outbox/` into the course folder; the second grades "
            "those notebooks with the course's grader and prints the table."),
        nbformat.v4.new_code_cell(
            f"from jaxcourse import hub\n\nhub.collect({chapter!r})"),
        nbformat.v4.new_code_cell(f"rows = hub.grade({chapter!r})"),
    ]
    nbformat.write(notebook, state / "homes" / TEACHER / f"grade_{chapter}.ipynb")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def running(state: Path | None = None) -> HubState | None:
    """Return the running hub recorded in ``state``, or None.

    A record whose pid is gone, or now names another process (its start time
    differs), is not a running hub.
    """
    record = (state or state_dir()) / "hub.json"
    try:
        hub = HubState(**json.loads(record.read_text(encoding="utf-8")))
        if abs(psutil.Process(hub.pid).create_time() - hub.created) < 0.01:
            return hub
    except (OSError, ValueError, TypeError, psutil.Error):
        pass
    return None


def start(port: int = DEFAULT_PORT, state: Path | None = None,
          chapter: str = CHAPTER) -> HubState:
    """Start the local hub (or return the one already running); wait until it answers.

    Parameters
    ----------
    port : int
        The hub's port on 127.0.0.1.
    state : Path, optional
        The state folder; by default :func:`state_dir`.
    chapter : str
        The chapter of the class repository.

    Raises
    ------
    HubError
        If JupyterHub, nbgitpuller or the proxy is missing, the port is taken,
        or the hub does not answer within ``START_S`` seconds (with its log).
    """
    state = state or state_dir()
    hub = running(state)
    if hub is not None:
        return hub
    proxy, jupyterhub = _proxy(), _bin("jupyterhub")
    singleuser = _bin("jupyterhub-singleuser")
    unshare = _unshare()
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            raise HubError(f"port {port} on 127.0.0.1 is taken: choose another "
                           "(make hub PORT=...).")
    state.mkdir(parents=True, exist_ok=True)
    class_repository(state, chapter)
    _homes(state, chapter)
    tag, password = new_tag(), secrets.token_urlsafe(12)
    env = {**os.environ, TAG_ENV: tag,
           "JAX_COURSE_HUB_DIR": str(state), "JAX_COURSE_HUB_PORT": str(port),
           "JAX_COURSE_HUB_API_PORT": str(_free_port()),
           "JAX_COURSE_HUB_PROXY_PORT": str(_free_port()),
           "JAX_COURSE_HUB_PROXY": str(proxy),
           "JAX_COURSE_HUB_SINGLEUSER": str(singleuser),
           "JAX_COURSE_HUB_PASSWORD": password,
           "JAX_COURSE_HUB_TEACHER": TEACHER,
           "JAX_COURSE_HUB_STUDENTS": " ".join(STUDENTS),
           # The proxy and the servers find the venv's commands first.
           "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                    os.environ.get("PATH", "")]),
           # The teacher's kernel grades with this checkout's course, whatever
           # the environment's editable install points at. A student's
           # notebook puts its release first on the path (its first cell).
           "PYTHONPATH": os.pathsep.join(filter(None, [
               str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    log = (state / "jupyterhub.log").open("w")
    # In a PID namespace of its own: everything the hub starts (the proxy,
    # the servers, their kernels, whatever those fork) stays in it, and
    # `stop` ends the namespace, not a list of processes it found.
    from .exercises.grading.isolation import pid_namespace

    process = subprocess.Popen(
        pid_namespace([str(jupyterhub), "-f", str(CONFIG)], unshare),
        cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    log.close()
    hub = HubState(f"http://127.0.0.1:{port}", process.pid,
                   psutil.Process(process.pid).create_time(), tag, password)
    record = state / "hub.json"
    record.write_text(json.dumps(asdict(hub)), encoding="utf-8")
    record.chmod(0o600)  # it holds the class's password
    deadline = time.monotonic() + START_S
    while not _answers(f"{hub.url}/hub/api/"):
        if process.poll() is not None or time.monotonic() > deadline:
            why = ("exited" if process.poll() is not None
                   else f"did not answer in {START_S:.0f} s")
            stop(state)
            tail = (state / "jupyterhub.log").read_text(errors="replace")[-3000:]
            raise HubError(f"JupyterHub {why}; its log ends:\n{tail}")
        time.sleep(0.3)
    return hub


def stop(state: Path | None = None) -> list[int]:
    """End the hub recorded in ``state`` and every process it started; return the pids.

    The hub runs in a PID namespace of its own (:func:`start`). JupyterHub
    gets SIGTERM and stops its servers and its proxy itself; after
    ``STOP_S`` seconds, or once it has gone, the namespace's init is killed,
    and with it every process still in the namespace, whatever session,
    parent or environment it gave itself
    (:func:`jaxcourse.processes.end_namespace`). Then whatever still carries
    the hub's tag (a hub started before the namespace) gets SIGTERM, then
    SIGKILL. Nothing else is signalled. The pids returned are those of the
    namespace's processes, the hub's recorded one, and every tagged one.
    """
    state = state or state_dir()
    record = state / "hub.json"
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    tag = data.get("tag") or ""
    # What the hub had started, found before anything is signalled: the proxy,
    # the users' servers and their kernels, all of which carry its tag.
    ended = [p.pid for p in tagged(tag)] if tag else []
    hub = running(state)
    if hub is not None:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(hub.pid)
            ended.append(hub.pid)
            if process.name() in ("unshare", "bwrap"):
                ended += end_namespace(process, grace=STOP_S)
            else:  # a hub that an earlier version started outside one
                process.send_signal(signal.SIGTERM)
                process.wait(STOP_S)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = tagged(tag) if tag else []
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
                ended.append(proc.pid)
        psutil.wait_procs(left, timeout=5)
    record.unlink(missing_ok=True)
    return sorted(set(ended))


def _submitted(state: Path, chapter: str) -> Path:
    return state / "course" / "submitted" / chapter


def collect(chapter: str = CHAPTER, state: Path | None = None) -> list[str]:
    """Copy each student's submitted notebook into the course folder; return whose.

    A student submits by saving ``<chapter>_exercises.ipynb`` into their
    ``outbox/``; it is copied to ``<state>/course/submitted/<chapter>/<student>.ipynb``
    (a later collect takes a resubmission). A student with nothing in the
    outbox is named as such.
    """
    state = state or state_dir()
    into = _submitted(state, chapter)
    into.mkdir(parents=True, exist_ok=True)
    found = []
    for student in STUDENTS:
        notebook = state / "homes" / student / "outbox" / f"{chapter}_exercises.ipynb"
        if notebook.is_file():
            shutil.copy2(notebook, into / f"{student}.ipynb")
            found.append(student)
    missing = [s for s in STUDENTS if s not in found]
    print(f"collected {len(found)} of {len(STUDENTS)}: {', '.join(found) or 'none'}"
          + (f"; nothing in the outbox of {', '.join(missing)}" if missing else ""))
    return found


def grade(chapter: str = CHAPTER, state: Path | None = None) -> list:
    """Grade the collected notebooks with the course's grader; print the table.

    The grades go to ``<state>/course/grades/<chapter>/`` (``grades.csv``,
    feedback for each student). Returns the grader's rows.
    """
    from .exercises.grading.cli import grade as grade_notebooks
    from .exercises.grading.cli import print_summary, write_feedback, write_tables

    state = state or state_dir()
    folder = _submitted(state, chapter)
    if not any(folder.glob("*.ipynb")):
        raise HubError(f"nothing collected for {chapter} in {folder}: collect first.")
    out = state / "course" / "grades" / chapter
    # As `python -m jaxcourse.exercises.grading` does: the tables, the
    # feedback to hand back, and the summary.
    rows = grade_notebooks([folder], chapter=chapter, out_dir=out)
    write_tables(rows, out)
    write_feedback(rows, out)
    print_summary(rows)
    return rows


#: Each command's line in ``--help``, and what its argument is.
_COMMANDS = {
    "start": ("start the hub with chapter 3's class release (make hub)", None),
    "stop": ("stop the hub and every process it started (make hub-stop)", None),
    "status": ("say whether the hub is running", None),
    "link": ("print the nbgitpuller link of a notebook of the class repository",
             "the notebook (default: chapter 3's exercises)"),
    "collect": ("copy each student's outbox into the course folder",
                f"the chapter (default: {CHAPTER})"),
    "grade": ("grade what was collected with the course's grader (needs "
              "bubblewrap)", f"the chapter (default: {CHAPTER})"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (``make hub``, ``make hub-stop``); return its status.

    Exit codes as every command of the course (:mod:`jaxcourse.cli`): 1 when
    the hub or the grading failed, 2 for a bad command line, 3 when a program
    it needs (JupyterHub, the proxy, unshare, bubblewrap) is missing.
    """
    parser = commandline.parser("python -m jaxcourse.hub", __doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (line, what) in _COMMANDS.items():
        sub = commands.add_parser(name, help=line, description=line)
        if what:
            sub.add_argument("what", nargs="?", help=what)
        if name in ("start", "link"):
            sub.add_argument("--port", type=int, default=DEFAULT_PORT,
                             help="the hub's port on 127.0.0.1 "
                                  f"(default {DEFAULT_PORT})")
    args = parser.parse_args(argv)
    return commandline.run(lambda: _command(args, state_dir()))


def _command(args, state: Path) -> None:
    if args.command == "start":
        hub = start(args.port, state)
        print(f"JupyterHub at {hub.url}: users {TEACHER} (admin) and "
              f"{', '.join(STUDENTS)}, password {hub.password}")
        print("chapter 3's exercises for a student: "
              + hub_link(hub.url, (state / "git" / CLASS_REPO).as_uri(),
                         f"exercises/{CHAPTER}_exercises.ipynb"))
        print(f"stop it with: make hub-stop (its state: {state})")
    elif args.command == "stop":
        ended = stop(state)
        others = max(len(ended) - 1, 0)
        print(f"stopped the hub and {others} process{'es' * (others != 1)} it "
              "had started (its proxy, the users' servers, their kernels)"
              if ended else "no hub of the course was running")
    elif args.command == "status":
        hub = running(state)
        print(f"running at {hub.url} (pid {hub.pid})" if hub else "not running")
    elif args.command == "link":
        hub = running(state)
        url = hub.url if hub else f"http://127.0.0.1:{args.port}"
        print(hub_link(url, (state / "git" / CLASS_REPO).as_uri(),
                       args.what or f"exercises/{CHAPTER}_exercises.ipynb"))
    elif args.command == "collect":
        collect(args.what or CHAPTER, state)
    else:
        grade(args.what or CHAPTER, state)


if __name__ == "__main__":
    sys.exit(main())
