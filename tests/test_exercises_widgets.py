"""Widgets, headless: build them, set values, click, assert on state."""

from __future__ import annotations

import html
import re

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.exercises import Case, Exercise, check_panel, register, unregister
from jaxcourse.exercises.widgets.explorers_mlp import (
    LearningRateExplorer,
    plot_runs,
    synthetic_subset,
    train_curve,
)
from jaxcourse.exercises.widgets.panel import CheckPanel, hints_html, result_html

PNG = b"\x89PNG"


def relu(x):
    return jnp.maximum(0, x)


def test_panel_checks_at_once_and_shows_the_summary() -> None:
    panel = check_panel("mlp.relu", relu)
    assert panel.result.passed
    assert "mlp.relu: 5/5 tests passed" in panel.summary.value
    assert [b.description for b in (panel.check_button, panel.hint_button,
                                     panel.solution_button)] == [
        "Check", "Hint", "Show solution"]


def test_text_form_is_deterministic() -> None:
    panel = check_panel("mlp.relu", relu)
    bundle = panel._repr_mimebundle_()
    assert bundle["text/plain"] == "mlp.relu: 5/5 tests passed"
    assert repr(panel) == "mlp.relu: 5/5 tests passed"


def test_check_button_picks_up_the_edited_function() -> None:
    namespace = {"relu": lambda x: jnp.minimum(0, x)}
    namespace["relu"].__name__ = "relu"
    panel = CheckPanel("mlp.relu", namespace["relu"], namespace=namespace)
    assert not panel.result.passed
    assert "minimum instead of maximum" in panel.summary.value

    def relu(x):  # the learner edits and re-runs the cell
        return jnp.maximum(0, x)

    namespace["relu"] = relu
    panel.check_button.click()
    assert panel.result.passed
    assert "5/5" in panel.summary.value


def test_every_check_is_visibly_answered() -> None:
    # The same answer twice: the summary is the same, the attempt number is not,
    # and while a check runs the panel says so with its button disabled.
    seen = []

    def relu(x):
        seen.append((panel.summary.value, panel.check_button.disabled))
        return jnp.maximum(0, x)

    panel = CheckPanel("mlp.relu", relu, run=False)
    panel.check_button.click()
    first = panel.summary.value
    panel.check_button.click()
    second = panel.summary.value
    assert "5/5 tests passed" in first and "5/5 tests passed" in second
    assert "(check 1)" in first and "(check 2)" in second and first != second
    assert seen and all("Checking…" in value and disabled for value, disabled in seen)
    assert not panel.check_button.disabled


def test_check_panel_finds_the_function_by_name() -> None:
    panel = check_panel("mlp.relu")  # looks up `relu` in this module's globals
    assert panel.result.passed


def test_hint_button_reveals_hints_one_at_a_time() -> None:
    panel = check_panel("mlp.relu", relu, run=False)
    assert panel.result is None and panel.hints.value == ""
    hints = panel.exercise.hints
    for shown in range(1, len(hints) + 1):
        panel.hint_button.click()
        assert panel.hints_shown == shown
        assert hints[shown - 1].replace("'", "&#x27;") in panel.hints.value
        assert f"Hint {shown} of {len(hints)}" in panel.hints.value
        if shown < len(hints):
            assert hints[shown].replace("'", "&#x27;") not in panel.hints.value
    panel.hint_button.click()
    assert "No more hints." in panel.hints.value


def test_solution_button_toggles_the_reference_source() -> None:
    panel = check_panel("mlp.one_hot", run=False)
    panel.solution_button.click()
    assert panel.solution_visible
    # Highlighted: the code reads as written once the markup is taken away.
    shown = html.unescape(re.sub(r"<[^>]+>", "", panel.solution.value))
    assert "def one_hot(x, k, dtype=jnp.float32):" in shown
    assert "<span style=" in panel.solution.value
    assert panel.solution_button.description == "Hide solution"
    panel.solution_button.click()
    assert panel.solution.value == ""
    assert panel.solution_button.description == "Show solution"


def test_not_attempted_panel() -> None:
    def relu(x):
        raise NotImplementedError()

    panel = CheckPanel("mlp.relu", relu)
    assert panel.text() == "mlp.relu: not attempted yet (0/5 tests)"
    assert "not attempted" in result_html(panel.result)


def test_traditional_chinese_panel() -> None:
    def triple(x):
        return 3 * x

    register(Exercise(
        id="demo.triple", title="三倍", reference=triple, language="zh-Hant",
        hints=["乘以 3。"],
        cases=[Case("triple([1, 2])", lambda rng: (np.array([1.0, 2.0]),))],
    ))
    try:
        panel = CheckPanel("demo.triple", lambda x: 2 * x)
        labels = [b.description for b in (panel.check_button, panel.hint_button,
                                          panel.solution_button)]
        assert labels == ["檢查", "提示", "顯示解答"]
        assert panel.text() == "demo.triple：0/1 項測試通過"
        panel.hint_button.click()
        assert "提示 1／1" in panel.hints.value
        panel.solution_button.click()
        assert panel.solution_button.description == "隱藏解答"
        assert hints_html(panel.exercise, 2).endswith("<i>沒有更多提示了。</i>")
    finally:
        unregister("demo.triple")


def test_panels_defer_while_grading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXCOURSE_GRADING", "1")
    panel = check_panel("mlp.relu", relu)
    assert panel.result is None
    assert panel.text() == "mlp.relu: graded separately"
    explorer = LearningRateExplorer()
    assert explorer.runs == [] and explorer.subset is None


# ---- the learning-rate explorer ------------------------------------------------


@pytest.fixture(scope="module")
def subset():
    return synthetic_subset(n_train=256, n_test=64)


def test_train_curve_learns(subset) -> None:
    run = train_curve(subset, 0.1, 128, steps=40)
    assert run.losses.shape == (40,)
    assert run.losses[-10:].mean() < run.losses[:10].mean()
    assert 0.0 <= run.test_accuracy <= 1.0
    assert plot_runs([run]).startswith(PNG)


def test_sliders_retrain_and_redraw(subset) -> None:
    explorer = LearningRateExplorer(subset, steps=40)
    assert len(explorer.runs) == 1 and bytes(explorer.image.value).startswith(PNG)
    first = explorer.image.value
    explorer.learning_rate.value = 0.01
    assert len(explorer.runs) == 2 and explorer.runs[-1].learning_rate == 0.01
    assert explorer.image.value != first
    explorer.batch_size.value = 8
    assert explorer.runs[-1].batch_size == 8 and len(explorer.runs) == 3
    assert "lr=0.01, batch=8" in explorer.status.value
    explorer.clear_button.click()
    assert len(explorer.runs) == 1
    assert explorer._repr_mimebundle_()["text/plain"] == (
        "Learning-rate explorer: 40 SGD steps per run; move a slider to retrain."
    )


def test_explorer_keeps_the_last_runs(subset) -> None:
    explorer = LearningRateExplorer(subset, steps=40, keep=2)
    for value in (0.02, 0.05, 0.2):
        explorer.learning_rate.value = value
    assert [r.learning_rate for r in explorer.runs] == [0.05, 0.2]


# ---- one display base: the notice, the figures, the sliders, the labels ------------


def _png_size(png: bytes) -> tuple[int, int]:
    # The IHDR chunk: width and height as big-endian 32-bit integers.
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_panel_and_explorers_share_one_display_base(subset) -> None:
    from jaxcourse.exercises.widgets.explorer_base import DISPLAY_CLASS, Display

    panel = check_panel("mlp.relu", relu, run=False)
    explorer = LearningRateExplorer(subset, steps=10, run=False)
    for display in (panel, explorer):
        assert isinstance(display, Display)
        assert DISPLAY_CLASS in display.widget._dom_classes
        assert display.notice in display.widget.children


def test_kernel_gone_notice_is_hidden_until_the_front_end_disconnects() -> None:
    from jaxcourse.exercises.widgets.explorer_base import NOTICE_CLASS
    from jaxcourse.messages import message

    panel = check_panel("mlp.relu", relu, run=False)
    notice = panel.notice
    # Hidden by an inline style everywhere; only the rule inside a notebook's
    # output area, for a view marked disconnected, shows it.
    assert notice.layout.display == "none" and NOTICE_CLASS in notice._dom_classes
    assert message("kernel_gone", "en") in notice.value
    assert ".jp-OutputArea .jc-display.jupyter-widgets-disconnected > " \
        ".jc-kernel-gone{display:flex !important}" in notice.value
    assert "pointer-events:none" in notice.value
    # Just below the buttons, where the learner clicks.
    children = panel.widget.children
    assert children.index(notice) == 2 and panel.check_button in children[1].children


def test_notice_speaks_the_panel_language() -> None:
    from jaxcourse.exercises.widgets.explorer_base import notice_html

    assert "核心（kernel）已重新啟動" in notice_html("zh-Hant")
    assert "内核（kernel）已重新启动" in notice_html("zh-Hans")
    with pytest.raises(ValueError, match="language"):
        LearningRateExplorer(language="fr", run=False)


def _explorer_classes() -> list[type]:
    """Every explorer the package defines (each explorers_<key> module's)."""
    import importlib
    import pkgutil

    import jaxcourse.exercises.widgets as package
    from jaxcourse.exercises.widgets.explorer_base import Explorer

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("explorers_"):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            found += [c for c in vars(module).values() if isinstance(c, type)
                      and issubclass(c, Explorer) and c.__module__ == module.__name__]
    return found


def test_every_explorer_says_on_a_static_page_that_it_needs_a_kernel(subset) -> None:
    from ipywidgets.embed import embed_data

    from jaxcourse.exercises.widgets.explorer_base import (
        EXPLORER_CLASS,
        NOTICE_CLASS,
        STATIC_CLASS,
    )
    from jaxcourse.messages import message

    classes = _explorer_classes()
    assert len(classes) >= 8 and all(c.static_note for c in classes)
    for language in ("en", "zh-Hant", "zh-Hans"):
        explorer = LearningRateExplorer(subset, steps=10, language=language,
                                        run=False)
        note = explorer.static
        children = explorer.widget.children
        # Right under the controls that invite the reader to try them, hidden
        # inline until the static book's rule shows it.
        assert children.index(note) == children.index(explorer.notice) + 1
        assert STATIC_CLASS in note._dom_classes and note.layout.display == "none"
        assert EXPLORER_CLASS in explorer.widget._dom_classes
        assert message("explorer_static", language) in note.value
        assert f'lang="{language}"' in note.value
        # The stored state the book renders carries the note and the rule that
        # shows it: a disconnected explorer (html-manager's views have no comm)
        # outside a notebook's output area, where the kernel-gone notice wins.
        stored = str(embed_data(views=[explorer.widget])["manager_state"])
        assert message("explorer_static", language) in stored
        css = explorer.notice.value
        assert (".jc-explorer.jupyter-widgets-disconnected > .jc-static"
                "{display:flex !important}") in css
        assert (".jp-OutputArea .jc-explorer.jupyter-widgets-disconnected > "
                ".jc-static{display:none !important}") in css
        assert f".{NOTICE_CLASS}{{display:flex !important}}" in css
    # The check panel is not an explorer: its stored view stays as it was.
    panel = check_panel("mlp.relu", relu, run=False)
    assert not panel.static_note and EXPLORER_CLASS not in panel.widget._dom_classes
    assert not any(STATIC_CLASS in c._dom_classes for c in panel.widget.children)


def test_an_explorer_greys_its_result_while_it_computes(subset) -> None:
    from jaxcourse.exercises.widgets.explorer_base import STALE_CLASS

    explorer = LearningRateExplorer(subset, steps=10, run=False)
    with explorer._computing("computing for 32 blocks", explorer.status):
        assert explorer.cue.layout.display is None
        assert "computing for 32 blocks" in explorer.cue.value
        assert STALE_CLASS in explorer.status._dom_classes
    assert explorer.cue.layout.display == "none" and explorer.cue.value == ""
    assert STALE_CLASS not in explorer.status._dom_classes
    # A computation that fails leaves the old result greyed: it is still not
    # the controls' result.
    with pytest.raises(RuntimeError), explorer._computing("again", explorer.status):
        raise RuntimeError("compilation failed")
    assert explorer.cue.layout.display == "none"
    assert STALE_CLASS in explorer.status._dom_classes
    assert ".jc-display .jc-stale{opacity:0.35" in explorer.notice.value


def test_dropdowns_show_their_labels_whole() -> None:
    from jaxcourse.exercises.widgets.explorer_base import _text_px, dropdown_style

    style = dropdown_style("mesh (data×model)", ["8×1", "tensor parallel"])
    # ipywidgets cuts a label at 80 px ("global bat…") unless told otherwise.
    assert style["style"] == {"description_width": "initial"}
    width = int(style["layout"].width.removesuffix("px"))
    assert width >= _text_px("mesh (data×model)") + _text_px("tensor parallel")


def test_figures_are_drawn_for_their_css_width_at_twice_the_pixels(subset) -> None:
    from jaxcourse.exercises.widgets.explorer_base import PIXEL_RATIO
    from jaxcourse.exercises.widgets.explorers_mlp import FIGURE_PX

    explorer = LearningRateExplorer(subset, steps=20)
    width, height = _png_size(bytes(explorer.image.value))
    assert (width, height) == (FIGURE_PX[0] * PIXEL_RATIO, FIGURE_PX[1] * PIXEL_RATIO)
    # Shown exactly that wide (never stretched), shrinking only in a narrow output.
    assert explorer.image.layout.width == f"{FIGURE_PX[0]}px"
    assert explorer.image.layout.max_width == "100%"


def test_show_figure_sets_the_width_from_the_figure() -> None:
    from jaxcourse.exercises.widgets.explorer_base import (
        figure,
        figure_image,
        show_figure,
    )

    image = figure_image()
    show_figure(image, figure(300, 120))
    assert image.layout.width == "300px" and _png_size(bytes(image.value)) == (600, 240)
    show_figure(image, None)
    assert image.value == b"" and image.layout.display == "none"


def test_sliders_give_every_step_room(subset) -> None:
    from jaxcourse.exercises.widgets.explorer_base import STEP_PX

    explorer = LearningRateExplorer(subset, run=False)
    slider = explorer.learning_rate
    steps = round((slider.max - slider.min) / slider.step)
    assert steps == 16
    width = int(slider.layout.width.removesuffix("px"))
    label = int(slider.style.description_width.removesuffix("px"))
    # What is left for the track once the label and the readout are placed.
    assert width - label - 72 - 32 >= steps * STEP_PX >= 20 * steps


def test_learning_rate_explorer_names_the_dataset(raw_root) -> None:
    from jaxcourse.exercises.widgets.explorers_mlp import load_subset

    data = load_subset(n_train=64, n_test=16)
    assert data.dataset == "Fashion-MNIST"  # what conftest provisions
    explorer = LearningRateExplorer(data, steps=10, run=False)
    assert explorer.title().startswith("Fashion-MNIST: 64 training images")


def test_synthetic_data_is_named_as_such(subset) -> None:
    explorer = LearningRateExplorer(subset, steps=10, run=False, language="zh-Hant")
    assert explorer.title().startswith("合成資料：256 張訓練影像")


def test_explorer_labels_come_from_the_catalogue(subset) -> None:
    from jaxcourse.messages import LANGUAGES, message

    for language in LANGUAGES:
        explorer = LearningRateExplorer(subset, steps=10, run=False,
                                        language=language)
        assert explorer.learning_rate.description == message("lr_learning_rate",
                                                             language)
        assert explorer.batch_size.description == message("batch_size", language)
        assert explorer.clear_button.description == message("clear", language)
        assert explorer.text() == message("lr_text", language, steps=10)
    assert LearningRateExplorer(subset, steps=10, run=False,
                                language="zh-Hans").text().startswith("学习率探索器")


def test_grader_sentences_live_in_the_catalogue() -> None:
    from jaxcourse.exercises.grading import runner
    from jaxcourse.messages import message

    assert not hasattr(runner, "_TEXT")
    assert runner.text("oom", "zh-Hant", mb=512, where="") == message(
        "grading_oom", "zh-Hant", mb=512, where="")
    assert runner.text("feedback_title", "fr", name="x") == "Feedback: x"
    assert runner.text("exited", "zh-Hant", how="SIGKILL").endswith("行程（SIGKILL）")


@pytest.mark.parametrize(("exercise_id", "language"), [
    ("mlp.one_hot", "en"), ("dp_zh.replicate", "zh-Hant")])
def test_every_text_of_a_panel_says_its_language(exercise_id, language) -> None:
    # A Chinese panel in an English page must say so, or the browser may draw
    # its characters with Japanese glyphs.
    panel = check_panel(exercise_id, run=False)
    panel.hint_button.click()
    panel.solution_button.click()
    panel.summary.value = "<b>a result</b>"  # as run_check sets it
    texts = [panel.title, panel.notice, panel.summary, panel.hints, panel.solution]
    for widget in texts:
        assert widget.value.startswith(f'<div lang="{language}">'), widget.value[:80]
        assert widget.value.count("<div lang=") == 1  # marked once, not again
    panel.solution_button.click()
    assert panel.solution.value == ""  # empty stays empty


def test_advice_is_marked_apart_and_code_is_shown_as_code() -> None:
    from jaxcourse.exercises.checking.result import Feedback, Result

    result = Result("demo.x", "failed", (
        Feedback("a", False, "a: no function named `f` was found"),
        Feedback("b (advice)", True, "b: passes, but note: no `jax.jit`", advice=True),
    ))
    page = result_html(result)
    assert "0/1 tests passed" in page  # advice is not counted...
    assert "ⓘ" in page and "advice, not counted" in page  # ...and says so
    assert page.count("✗") == 1 and "✓" not in page
    assert "<code>f</code>" in page and "`" not in page
    assert "建議，不計分" in result_html(Result("demo.x", "failed", result.feedback,
                                               language="zh-Hant"))


def test_a_single_number_has_no_index_and_a_vector_index_is_a_number() -> None:
    from jaxcourse.exercises.checking.comparison import compare

    case = Case("one", lambda rng: (), rtol=0.0, atol=0.0)
    one = compare(np.array(2.0, np.float32), np.array(3.0, np.float32), case)
    assert one.startswith("wrong values: expected 2") and "index" not in one
    vector = compare(np.arange(3.0), np.array([0.0, 1.0, 5.0]), case)
    assert "at index 2)" in vector
