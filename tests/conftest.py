"""Shared fixtures: every test gets its own data folder and no network."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

# Quiet TensorFlow's C++ start-up logs in test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

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
    monkeypatch.setattr(data, "MNIST_HOST", ("127.0.0.1", _closed_port()))
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


# Exercises whose checks need TensorFlow: their tests are marked, so that the
# light job (Colab's packages, no TensorFlow) can leave them out.
NEEDS_TENSORFLOW = {"mlp.tf_batches"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test parametrized with an exercise that needs TensorFlow."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(value in NEEDS_TENSORFLOW for value in params.values()
               if isinstance(value, str)):
            item.add_marker(pytest.mark.tensorflow)
