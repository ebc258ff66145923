"""What a Chinese learner meets in JupyterLab: panels, explorers and Lab itself.

A panel or explorer speaks the language of the notebook it runs in: the one
its metadata names (``jaxcourse.language``, which a copy saved anywhere keeps),
else its edition folder's. An edition's Check judges against the stored
reference outputs, as the English one does (the same answers, the same time
limits). And JupyterLab's own menus come in both Chinese scripts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import ipywidgets as widgets
import numpy as np
import pytest

from jaxcourse import course
from jaxcourse.exercises import check
from jaxcourse.exercises.checking import judging, registry
from jaxcourse.exercises.checking.case_limits import case_time_limits
from jaxcourse.exercises.checking.references import stored_outputs

REPO = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u3400-\u9fff]")
EDITION = {"zh-Hans": "exercises/zh_hans/01_mlp_exercises.ipynb",
           "zh-Hant": "exercises/zh_hant/01_mlp_exercises.ipynb"}


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch):
    """Say which notebook this kernel runs, as Jupyter Server does."""
    monkeypatch.delenv(registry.READING_LANGUAGE_ENV, raising=False)

    def opened(path: str | os.PathLike) -> None:
        monkeypatch.setenv("JPY_SESSION_NAME", str(path))

    return opened


def _with_language(source: Path, target: Path, language: str | None) -> Path:
    notebook = json.loads(source.read_text(encoding="utf-8"))
    if language is None:
        notebook["metadata"].pop("jaxcourse", None)
    else:
        notebook["metadata"]["jaxcourse"] = {"language": language}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(notebook), encoding="utf-8")
    return target


# ---- the reading language: the notebook's metadata, then its folder -----------


def test_a_copied_edition_keeps_its_language(session, tmp_path: Path) -> None:
    # Saved into the learner's own folder, under a name of their own.
    copy = tmp_path / "my work" / "relu practice.ipynb"
    copy.parent.mkdir()
    shutil.copy(REPO / EDITION["zh-Hant"], copy)
    session(copy)
    assert registry.reading_language() == "zh-Hant"
    course.load("mlp")
    english = registry._REGISTRY["mlp.relu"]
    exercise = registry.get("mlp.relu")
    assert exercise.language == "zh-Hant"
    assert CJK.search(exercise.cases[0].description), exercise.cases[0].description
    assert exercise.cases[0].description != english.cases[0].description


def test_the_metadata_comes_before_the_folder(session, tmp_path: Path) -> None:
    source = REPO / EDITION["zh-Hans"]
    # A Simplified notebook saved into a Traditional edition's folder.
    moved = _with_language(source, tmp_path / "zh_hant" / "a.ipynb", "zh-Hans")
    session(moved)
    assert registry.reading_language() == "zh-Hans"
    # Without metadata, the folder still says it; elsewhere nothing does.
    bare = _with_language(source, tmp_path / "zh_hant" / "b.ipynb", None)
    session(bare)
    assert registry.reading_language() == "zh-Hant"
    session(_with_language(source, tmp_path / "c.ipynb", None))
    assert registry.reading_language() is None


def test_a_changed_notebook_is_read_again(session, tmp_path: Path) -> None:
    path = _with_language(REPO / EDITION["zh-Hans"], tmp_path / "n.ipynb", "zh-Hans")
    session(path)
    assert registry.reading_language() == "zh-Hans"
    _with_language(REPO / EDITION["zh-Hans"], path, "zh-Hant")
    os.utime(path, ns=(1, 1))  # a new stamp, even within the clock's resolution
    assert registry.reading_language() == "zh-Hant"


def test_a_server_path_is_found_from_the_kernels_folder(
        session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An older server names the notebook from its root and starts the kernel
    # in the notebook's folder.
    _with_language(REPO / EDITION["zh-Hant"], tmp_path / "n.ipynb", "zh-Hant")
    monkeypatch.chdir(tmp_path)
    session("course/somewhere/n.ipynb")
    assert registry.reading_language() == "zh-Hant"


@pytest.mark.parametrize("damage", ["missing", "not json", "odd metadata"])
def test_an_unreadable_notebook_falls_back_to_its_folder(
        session, tmp_path: Path, damage: str) -> None:
    path = tmp_path / "zh_hans" / "n.ipynb"
    path.parent.mkdir()
    if damage == "not json":
        path.write_text("{ not a notebook", encoding="utf-8")
    elif damage == "odd metadata":
        path.write_text(json.dumps({"metadata": {"jaxcourse": ["zh-Hant"]}}),
                        encoding="utf-8")
    session(path)
    assert registry.reading_language() == "zh-Hans"


# ---- every explorer's controls in the reader's language ------------------------


def _explorers() -> dict[str, object]:
    """Build every explorer as a chapter's cell does (no language given)."""
    from jaxcourse.exercises.widgets.explorers_bayes import ElboExplorer
    from jaxcourse.exercises.widgets.explorers_dp_zh import DataParallelExplorer
    from jaxcourse.exercises.widgets.explorers_mlp import LearningRateExplorer
    from jaxcourse.exercises.widgets.explorers_multiprocess import BatchSplitExplorer
    from jaxcourse.exercises.widgets.explorers_scaling import LayoutExplorer
    from jaxcourse.exercises.widgets.explorers_shard_map import CollectiveExplorer
    from jaxcourse.exercises.widgets.explorers_sharding import ShardingExplorer
    from jaxcourse.exercises.widgets.explorers_torch_data import LoaderExplorer
    from jaxcourse.exercises.widgets.explorers_transformer import TransformerExplorer

    images = np.zeros((8, 28, 28), np.uint8)
    return {
        "elbo": ElboExplorer(run=False),
        "learning rate": LearningRateExplorer(run=False),
        "loader": LoaderExplorer(images, np.zeros(8, np.int64), run=False),
        "sharding": ShardingExplorer(run=False),
        "collective": CollectiveExplorer(run=False),
        "layout": LayoutExplorer(run=False),
        "batch split": BatchSplitExplorer(run=False),
        "transformer": TransformerExplorer(run=False),
        # Chapter 9's explorer is Chinese already; given "en", it follows too.
        "data parallel": DataParallelExplorer(run=False, language="en"),
    }


def _labels(widget: widgets.Widget) -> list[str]:
    found = []
    for name in ("description", "tooltip", "placeholder"):
        text = getattr(widget, name, None)
        if isinstance(text, str) and text.strip():
            found.append(text)
    for child in getattr(widget, "children", ()):
        found += _labels(child)
    return found


@pytest.mark.parametrize("language", ["zh-Hans", "zh-Hant"])
def test_every_explorer_labels_its_controls_in_the_editions_language(
        session, language: str) -> None:
    session(REPO / EDITION[language])
    for name, explorer in _explorers().items():
        assert explorer.language == language, name
        labels = _labels(explorer.widget)
        # A label is English when it has a word and no Chinese ("\u200b", a
        # spacer, and "d" in "宽度 d" are not).
        english = [t for t in labels
                   if re.search(r"[A-Za-z]{2,}", t) and not CJK.search(t)]
        assert any(CJK.search(t) for t in labels) and not english, (name, english)
        assert CJK.search(explorer.live_text()), (name, explorer.live_text())


# ---- an edition's Check judges against the stored outputs ----------------------


@pytest.mark.parametrize("language", ["zh-Hans", "zh-Hant"])
def test_an_editions_check_uses_the_stored_outputs(
        session, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    session(REPO / EDITION[language])
    course.load("mlp")
    english = registry._REGISTRY["mlp.relu"]
    edition = registry.get("mlp.relu")
    assert edition.language == language and edition is not english
    stored, theirs = stored_outputs(edition), stored_outputs(english)
    assert stored is not None, f"the {language} edition computes its reference live"
    assert stored.limits == theirs.limits
    assert case_time_limits(edition) == case_time_limits(english) == stored.limits
    # Nothing runs the reference or a known mistake here: the store answers.
    monkeypatch.setattr(judging, "_REFERENCE_CACHE", {})
    monkeypatch.setattr(judging, "_MISTAKE_CACHE", {})

    def computed_live(function, case, *args):
        raise AssertionError(f"computed live: {function!r} on {case.description!r}")

    monkeypatch.setattr(judging, "observe", computed_live)
    import jax.numpy as jnp

    result = check("mlp.relu", lambda x: jnp.abs(x))
    assert result.language == language and not result.passed
    assert CJK.search(result.feedback[0].message), result.feedback[0].message


# ---- JupyterLab's own language ---------------------------------------------------


def test_jupyterlab_offers_both_chinese_scripts() -> None:
    # What Settings > Language lists: JupyterLab's server asks the installed
    # language packs (their entry points), as its translations API does.
    from jupyterlab_server.translation_utils import (
        get_language_pack,
        get_language_packs,
    )

    packs, problem = get_language_packs("en")
    assert problem == ""
    assert {"zh_CN", "zh_TW"} <= set(packs), sorted(packs)
    assert "简体" in packs["zh_CN"]["nativeName"]
    assert "繁體" in packs["zh_TW"]["nativeName"]
    simplified, _ = get_language_pack("zh_CN")
    traditional, _ = get_language_pack("zh_TW")
    assert simplified["jupyterlab"]["Settings"] == ["设置"]
    assert traditional["jupyterlab"]["Settings"] == ["設定"]
