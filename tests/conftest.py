"""Shared fixtures: every test gets its own data folder and no network."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from pathlib import Path

import pytest
from foreign_job import NOTEBOOKS as FOREIGN_JOB_NOTEBOOKS
from foreign_job import ForeignJob
from processes import forbid_processes, starts_a_process

# Quiet TensorFlow's C++ start-up logs in test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Launched Checks use the course's launcher in every test and notebook kernel,
# even once a Slurm test has brought the cluster up (it stays up for the
# session): their stored messages and time limits do not depend on test
# order. tests/test_slurm.py checks the srun path explicitly.
os.environ.setdefault("JAX_COURSE_CHECK_LAUNCHER", "course")
# A check panel starts nothing ahead of its next Check (a launched exercise's
# processes) in tests and their notebook kernels: the tests that do it ask
# for it (tests/test_exercises_multiprocess.py).
os.environ.setdefault("JAX_COURSE_WARM_UP", "0")
# The stored outputs are the English panels': a reading language chosen in the
# shell (or a JupyterLab session's notebook path) must not change them.
for _name in ("JAX_COURSE_LANGUAGE", "JPY_SESSION_NAME"):
    os.environ.pop(_name, None)

from jaxcourse import compile_cache  # noqa: E402

# JAX's persistent compilation cache, for this process and every kernel and
# process the tests start: a second run compiles little. JAX_COURSE_COMPILE_CACHE=off
# measures the suite without it.
if os.environ.get("JAX_COURSE_COMPILE_CACHE", "on") != "off":
    compile_cache.enable()

from jaxcourse import data  # noqa: E402


def _closed_port() -> int:
    # Bind, read the port and close: nothing listens there afterwards.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def hermetic_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point the course at a fresh data folder and an unreachable download site."""
    root = tmp_path / "data"
    monkeypatch.setenv(data.DATA_DIR_ENV, str(root))
    for var in (data.DATASET_ENV, data.MNIST_DIR_ENV, data.FASHION_DIR_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(data.sources, "MNIST_HOST", ("127.0.0.1", _closed_port()))
    # A fetched CJK font goes to the test's folder, never to the user's.
    monkeypatch.setenv("JAX_COURSE_FONT_DIR", str(tmp_path / "fonts"))
    return root


@pytest.fixture(scope="session")
def fashion_source() -> Path:
    """Debian's Fashion-MNIST folder; the suite needs it (setup installs it)."""
    folder = data.DEBIAN_FASHION_DIR
    if not all(
        (folder / f"{stem}.gz").is_file()
        for pair in data.IDX_FILES.values()
        for stem in pair
    ):
        pytest.fail(
            "Debian's dataset-fashion-mnist is not installed; run `make setup`."
        )
    return folder


@pytest.fixture(scope="session")
def raw_template(
    tmp_path_factory: pytest.TempPathFactory, fashion_source: Path
) -> Path:
    """A raw-only provisioned data folder, written once per session."""
    root = tmp_path_factory.mktemp("raw-template")
    data.provision(
        root=root,
        fashion_dir=fashion_source,
        tfds=False,
        quiet=True,
        network_timeout=0.1,
    )
    return root


@pytest.fixture()
def raw_root(raw_template: Path, hermetic_data: Path) -> Path:
    """A private copy of the raw-only data folder, free to corrupt."""
    shutil.copytree(raw_template, hermetic_data)
    return hermetic_data


@pytest.fixture()
def execute_notebook():
    """Run a notebook in a fresh kernel; return the text of every output.

    Fails the test if any cell raised.
    """

    def run(path: Path) -> list[str]:
        import nbformat
        from nbclient import NotebookClient

        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        errors = [o for o in outputs if o.output_type == "error"]
        assert not errors, errors
        return [o.get("data", {}).get("text/plain", "") + o.get("text", "")
                for o in outputs]

    return run


# ---- markers: what a test needs, and which tests are slow ---------------------

# Exercises whose checks need a package that the light job (Colab's packages)
# lacks: every test parametrized with one is marked with the package's name,
# so that the job can leave it out. An entry ending in "." is a whole topic.
NEEDS = {"tensorflow": ("mlp.tf_batches",), "torch": ("torch_data.",)}


def _names(value: str, entries: tuple[str, ...]) -> bool:
    return any(value == e or (e.endswith(".") and value.startswith(e))
               for e in entries)


def _is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` runs a notebook or, by its code, starts a process."""
    if item.path.suffix == ".ipynb":
        return True  # nbval executes the notebook in a kernel
    functions = [getattr(item, "function", None)]
    fixtures = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        definitions = fixtures.name2fixturedefs.get(name) if fixtures else None
        functions += [d.func for d in definitions or ()]
    return any(starts_a_process(f) for f in functions if f is not None)


# ---- two workers: make test runs pytest-xdist with --dist loadgroup -----------

# Files that use the course's Slurm cluster run on one worker, one after the
# other: one of them may start the cluster and stop it at its end, and
# test_slurm expects an empty queue.
SLURM_FILES = ("tests/test_grading.py", "tests/test_grading_borrowed.py",
               "tests/test_slurm.py", "book/08_multiprocess.ipynb")
# The browser tests drive Chromium and a local server (the hub's, a JupyterHub);
# one at a time.
BROWSER_FILES = ("tests/test_book_browser.py", "tests/test_lab_browser.py",
                 "tests/test_hub_browser.py")
ROOT = Path(__file__).resolve().parents[1]
# Each chapter's run under a second instruction set is a group of its own
# (tests/test_instruction_sets.py: one long test per chapter, in a process of
# its own), chapter 8's in the Slurm group; the group is the chapter's path
# with this prefix.
SECOND_ISA_FILE = "tests/test_instruction_sets.py"
SECOND_ISA = "second-isa:"
# The groups that take longest (seconds on a 2-core machine, from a run's
# --durations): xdist hands groups out in collection order, so the long ones
# go first and the short ones fill the gaps at the end. A group not named
# here is short; the numbers only order, they limit nothing. A long group left
# out would be handed out last, and its worker would finish long after the
# other: name every group of a minute or more (a new chapter's notebook too).
GROUP_SECONDS = {
    "slurm": 1180, "tests/test_exercise_contract.py": 670, "browser": 320,
    "tests/test_transformer.py": 260, "tests/test_nbgrader.py": 250,
    "tests/test_release.py": 230, "tests/test_release_search.py": 150,
    "book/01_mlp.ipynb": 185, "book/07_transformer.ipynb": 165,
    "book/02_torch_data.ipynb": 120, "book/09_dp_zh.ipynb": 70,
    "book/09_dp_zh_hans.ipynb": 65, "tests/test_references.py": 65,
    "tests/test_launch.py": 65, "tests/test_data.py": 55,
    "tests/test_under_load.py": 50, "tests/test_exercises_notebooks.py": 50,
    "tests/test_exercises_multiprocess.py": 45, "book/06_scaling.ipynb": 35,
    "book/04_sharding.ipynb": 35, "solutions/08_multiprocess_exercises.ipynb": 30,
    "tests/test_exercise_time_limits.py": 25, "book/05_shard_map.ipynb": 20,
    "tests/test_explorers_transformer.py": 20, "book/03_bayes.ipynb": 20,
    "tests/test_pipeline.py": 80,
    # A chapter under a second instruction set: its nbval run, with its start
    # (chapters 1, 2, 7, 9 and 6 as measured in the fresh-clone runs of
    # 2026-12-07; 4, 5 and 3, under a minute, estimated).
    **{SECOND_ISA + chapter: seconds for chapter, seconds in (
        ("book/01_mlp.ipynb", 283), ("book/02_torch_data.ipynb", 229),
        ("book/07_transformer.ipynb", 88), ("book/09_dp_zh.ipynb", 61),
        ("book/06_scaling.ipynb", 58), ("book/04_sharding.ipynb", 45),
        ("book/05_shard_map.ipynb", 30), ("book/03_bayes.ipynb", 30))},
}


def _group_of(nodeid: str) -> str:
    """The worker group of a test (its node id, from the root): its file, so
    that a notebook's cells run in order in one kernel and a module's fixtures
    are built once, or the group of files that share something."""
    path, _, rest = nodeid.partition("::")
    if path == SECOND_ISA_FILE and rest.endswith(".ipynb]"):
        chapter = rest[rest.index("[") + 1:-1]
        return "slurm" if chapter in SLURM_FILES else SECOND_ISA + chapter
    if path in SLURM_FILES:
        return "slurm"
    if path in BROWSER_FILES:
        return "browser"
    return path


def _group(item: pytest.Item) -> str:
    return _group_of(item.nodeid)


# optionalhook: the light job's environment has no pytest-xdist, and no such hook.
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``--dist loadgroup``, send each group of files whole to one worker.

    pytest-xdist's own groups (``xdist_group`` marks) rename node ids, which
    pytest 9 no longer lets a plugin do, so this scheduler groups by file
    instead: xdist's scope scheduler, with the scope of a test its group.
    """
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group_of(nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects, and before xdist reads groups
def pytest_collection_modifyitems(config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Mark what needs TensorFlow or PyTorch, what is slow, and (under xdist) groups."""
    # xdist's workers see --dist loadgroup as option.loadgroup (their own dist
    # is "no"); neither option exists where xdist is not installed.
    grouped = bool(getattr(config.option, "loadgroup", False))
    if grouped:  # longest groups first (a stable sort keeps each group's order)
        items.sort(key=lambda item: -GROUP_SECONDS.get(_group(item), 0))
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for package, exercises in NEEDS.items():
            if any(_names(v, exercises) for v in params.values()
                   if isinstance(v, str)):
                item.add_marker(package)
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


# ---- the fast loop starts no process: --forbid-processes -------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--forbid-processes", action="store_true", default=False,
        help="fail whatever starts a process (make test-fast: prove it starts none)",
    )


_GUARD = contextlib.ExitStack()


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("--forbid-processes"):
        _GUARD.enter_context(forbid_processes(
            "this run starts no process (--forbid-processes); a test that "
            "starts one is slow: see STARTS_A_PROCESS in tests/processes.py"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    _GUARD.close()




# ---- another clone's job in the queue while chapter 8 runs (tests/foreign_job.py) ----

_FOREIGN = ForeignJob()


def _notebook_of(item: pytest.Item | None) -> str | None:
    if item is None or not item.path.is_relative_to(ROOT):
        return None
    return item.path.relative_to(ROOT).as_posix()


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the notebook's first cell (its kernel is already up, and does
    # not care); the job stays queued until its last cell has run.
    if _notebook_of(item) in FOREIGN_JOB_NOTEBOOKS and _FOREIGN.job is None:
        _FOREIGN.submit()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if (_notebook_of(item) in FOREIGN_JOB_NOTEBOOKS
            and _notebook_of(nextitem) != _notebook_of(item)):
        _FOREIGN.cancel()
