"""The Chinese editions of chapters 1-8 and their exercises (``jaxcourse.i18n``).

Each edition is generated from its English master and one Simplified-Chinese
gettext catalog: the catalogs and editions are current; an edition's code is
its master's (comments aside) and its outputs are the master's, proven by
nbval on the master, except that each figure is the master's SVG with its
labels translated; zh-Hans holds no Traditional-only character and zh-Hant
no Simplified-only one; a changed English cell is shown in English, marked,
never with its stale translation; every catalog covers at least 95 % of its
Markdown cells, and no translation drops the English's code, math or links.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

opencc = pytest.importorskip("opencc", reason="the editions' generator needs OpenCC")
polib = pytest.importorskip("polib", reason="the editions' generator needs polib")

from course_copy import copy_family  # noqa: E402  (after the skips)

from jaxcourse import i18n  # noqa: E402
from jaxcourse.messages import MESSAGES  # noqa: E402
from jaxcourse.plotting import FIGURE_TEXT_KEY, figure_svg, pack_svg  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = i18n.families()
PAIRS = [(master, language) for family in FAMILIES for master in family.masters
         for language in i18n.EDITIONS]
CJK = re.compile(r"[\u3400-\u9fff]")
# Characters Taiwan writes too, although OpenCC's s2t maps them (its tables pick
# one reading): 干 in 若干, 干預, 相干; 划 in 划算; 峰 in 峰值 (s2t gives 峯).
SHARED_HANT = {"干", "划", "峰"}
MINIMUM_COVERAGE = 95.0


def _ids(pairs):
    return [f"{Path(m).stem}-{lang}" for m, lang in pairs]


def test_catalogs_and_editions_are_current() -> None:
    stale = i18n.out_of_date()
    assert stale == [], f"run python -m jaxcourse.i18n: {stale}"


@pytest.mark.parametrize(("master", "language"), PAIRS, ids=_ids(PAIRS))
def test_edition_code_and_outputs_are_the_masters(master: str, language: str) -> None:
    english = nbformat.read(ROOT / master, as_version=4)
    edition = nbformat.read(ROOT / i18n.edition_path(master, language), as_version=4)
    assert edition.metadata["jaxcourse"]["language"] == language
    assert i18n.code_of(edition) == i18n.code_of(english)
    assert [c.cell_type for c in edition.cells] == [c.cell_type for c in english.cells]
    for mine, theirs in zip(edition.cells, english.cells, strict=True):
        if mine.cell_type == "code":
            assert len(mine.outputs) == len(theirs.outputs)
            for out, master_out in zip(mine.outputs, theirs.outputs, strict=True):
                if FIGURE_TEXT_KEY in master_out.get("metadata", {}):
                    # A figure: the master's SVG, labels translated.
                    assert set(out.data) == {"image/svg+xml", "text/plain"}
                    assert out.data["text/plain"] == master_out.data["text/plain"]
                else:
                    assert out == master_out
            assert mine.execution_count == theirs.execution_count


CHAPTERS = sorted(master for family in FAMILIES for master in family.masters
                  if master.startswith("book/"))


@pytest.mark.parametrize("master", CHAPTERS, ids=lambda m: Path(m).stem)
def test_every_figure_of_a_chapter_is_drawn_in_the_editions_language(
        master: str) -> None:
    """Each stored figure keeps its SVG, every label is translated, in CJK fonts."""
    english = nbformat.read(ROOT / master, as_version=4)
    figures = [o for c in english.cells for o in c.get("outputs", [])
               if "image/png" in o.get("data", {})]
    bare = [o.data["text/plain"] for o in figures
            if FIGURE_TEXT_KEY not in o.get("metadata", {})]
    assert bare == [], (
        f"{len(bare)} figures of {master} have no SVG for the editions: execute it "
        "with scripts/run_notebook.py, then python -m jaxcourse.i18n")
    family = next(f for f in FAMILIES if master in f.masters)
    done = {e.msgid for e in polib.pofile(str(family.catalog))
            if e.msgctxt == i18n.FIGURE and e.msgstr and "fuzzy" not in e.flags
            and not e.obsolete}
    untranslated = sorted({t for o in figures for t in i18n._figure_texts(o)} - done)
    assert untranslated == [], f"figure labels of {master} with no translation"
    for language in i18n.EDITIONS:
        edition = nbformat.read(ROOT / i18n.edition_path(master, language),
                                as_version=4)
        svgs = [o.data["image/svg+xml"] for c in edition.cells
                for o in c.get("outputs", []) if "image/svg+xml" in o.get("data", {})]
        assert len(svgs) == len(figures)
        for svg in svgs:
            assert f'xml:lang="{language}"' in svg
            assert i18n.FIGURE_FONTS[language] in svg


def test_a_figures_labels_are_translated_and_it_keeps_its_size() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 2))
    ax.plot([1, 2, 3], label="loss")
    ax.set(xlabel="SGD step", title="Bytes & <messages>")
    ax.legend()
    output = {"output_type": "display_data",
              "data": {"image/png": "...", "text/plain": "<Figure size 400x200>"},
              "metadata": {"image/png": {"width": 362, "height": 238},
                           FIGURE_TEXT_KEY: pack_svg(figure_svg(fig))}}
    plt.close(fig)
    assert i18n._figure_texts(output) == ["SGD step", "Bytes & <messages>", "loss"]
    done = {(i18n.FIGURE, "SGD step"): "SGD 步数",
            (i18n.FIGURE, "Bytes & <messages>"): "字节与<消息>"}
    out = i18n._translate_figure(output, done, "zh-Hans")
    svg = out["data"]["image/svg+xml"]
    assert svg.startswith("<svg") and 'width="362px" height="238px"' in svg
    assert ">SGD 步数</text>" in svg and ">字节与&lt;消息&gt;</text>" in svg
    assert ">loss</text>" in svg  # no translation: English, not lost
    assert "image/png" not in out["data"] and out["metadata"] == {}


def _sources(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n".join(c.source for c in nb.cells)


@pytest.mark.parametrize(("master", "language"), PAIRS, ids=_ids(PAIRS))
def test_each_edition_is_in_its_own_script(master: str, language: str) -> None:
    text = _sources(ROOT / i18n.edition_path(master, language))
    # A character OpenCC changes towards the other script does not belong here.
    other = opencc.OpenCC("t2s" if language == "zh-Hans" else "s2t")
    shared = SHARED_HANT if language == "zh-Hant" else set()
    wrong = sorted(c for c in set(CJK.findall(text)) - shared if other.convert(c) != c)
    assert wrong == [], f"{language} edition of {master} has {''.join(wrong)}"


def test_taiwan_edition_uses_taiwan_terms() -> None:
    hant = i18n.to_hant("把数据按行切分到设备上，函数返回数组，内存里的参数。")
    assert hant == "把資料按列切分到裝置上，函式回傳陣列，記憶體裡的參數。"
    # Code spans and fenced code keep their characters.
    kept = "用 `数据` 和\n```\n数据\n```\n"
    assert i18n.to_hant(kept) == kept


def _where(entry) -> tuple[str, str]:
    # polib reads "book/x.ipynb:<cell id>" as a path with no line number.
    return tuple(entry.occurrences[0][0].rsplit(":", 1))


def test_a_changed_english_cell_is_shown_in_english_until_retranslated(
        tmp_path: Path) -> None:
    family = FAMILIES[0]
    catalog = copy_family(tmp_path, family)
    po = polib.pofile(str(catalog))
    done = next(e for e in po
                if e.msgctxt is None and e.msgstr and "fuzzy" not in e.flags)
    path, cell_id = _where(done)
    nb = nbformat.read(tmp_path / path, as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    cell.source = cell.source + "\n\nA sentence added in English."
    nbformat.write(nb, tmp_path / path)

    merged = i18n.merged(family, tmp_path)
    entry = merged.find(cell.source)
    assert entry is not None and "fuzzy" in entry.flags
    assert entry.msgstr == done.msgstr and entry.previous_msgid == done.msgid
    for language in i18n.EDITIONS:
        shown = i18n.edition(nb, merged, language)
        source = next(c for c in shown.cells if c.get("id") == cell_id).source
        assert source.startswith(i18n.UNTRANSLATED[language])
        assert "A sentence added in English." in source
    rows = _rows(tmp_path)
    assert rows[family.name]["stale"] == 0  # the catalog on disk is not merged yet
    catalog.write_text(str(merged), encoding="utf-8")
    rows = _rows(tmp_path)
    assert rows[family.name]["stale"] == 1


def test_a_removed_english_cell_leaves_an_obsolete_entry(tmp_path: Path) -> None:
    family = FAMILIES[0]
    catalog = copy_family(tmp_path, family)
    po = polib.pofile(str(catalog))
    done = next(e for e in po if e.msgctxt is None and e.msgstr)
    path, cell_id = _where(done)
    nb = nbformat.read(tmp_path / path, as_version=4)
    nb.cells = [c for c in nb.cells if c.get("id") != cell_id]
    nbformat.write(nb, tmp_path / path)
    merged = i18n.merged(family, tmp_path)
    before = {(e.msgctxt, e.msgid) for e in po.obsolete_entries()}
    assert [e.msgstr for e in merged.obsolete_entries()
            if (e.msgctxt, e.msgid) not in before] == [done.msgstr]


def test_an_obsolete_entry_whose_english_returns_is_revived(tmp_path: Path) -> None:
    # A figure's labels come and go with the run's data (the first mistakes it
    # shows, say): a label that comes back gets its old translation back.
    family = FAMILIES[0]
    catalog = copy_family(tmp_path, family)
    po = polib.pofile(str(catalog))
    done = next(e for e in po if e.msgctxt == i18n.FIGURE and e.msgstr)
    done.obsolete = True
    po.save(str(catalog))
    merged = i18n.merged(family, tmp_path)
    entry = merged.find(done.msgid, msgctxt=i18n.FIGURE)
    assert entry is not None and not entry.obsolete and "fuzzy" not in entry.flags
    assert entry.msgstr == done.msgstr


COVERAGE = i18n.coverage()


def _rows(root: Path) -> dict[str, dict]:
    return {r["catalog"]: r for r in i18n.coverage(root) if r["language"] == "zh-Hans"}


@pytest.mark.parametrize("row", COVERAGE,
                         ids=[f"{r['catalog']}-{r['language']}" for r in COVERAGE])
def test_coverage(row: dict) -> None:
    assert row["percent"] >= MINIMUM_COVERAGE, i18n.coverage_text([row])


def test_translations_keep_code_math_and_links() -> None:
    assert i18n.lint() == []


def test_lint_names_what_a_translation_lost() -> None:
    problems = i18n.lint_entry("Call `jax.jit` on $f$, see [docs](x.md).",
                               "调用 jax.jit，见[文档](y.md)。")
    assert any(p.startswith("code spans differ") for p in problems)
    assert any(p.startswith("math differ") for p in problems)
    assert any(p.startswith("link targets differ") for p in problems)


@pytest.mark.parametrize(("session", "language"), [
    ("exercises/zh_hans/01_mlp_exercises.ipynb", "zh-Hans"),
    ("solutions/zh_hant/01_mlp_exercises.ipynb", "zh-Hant"),
    ("exercises/01_mlp_exercises.ipynb", "en"),
])
def test_an_editions_panels_speak_its_language(
        monkeypatch: pytest.MonkeyPatch, session: str, language: str) -> None:
    from jaxcourse import course
    from jaxcourse.exercises import check
    from jaxcourse.exercises.checking import registry

    # JupyterLab tells a kernel its notebook's path; the edition's folder says
    # the language, and the exercise's texts come from the catalog's table.
    monkeypatch.delenv(registry.READING_LANGUAGE_ENV, raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", session)
    course.load("mlp")  # registers the chapter's exercises
    english = registry._REGISTRY["mlp.relu"]
    exercise = registry.get("mlp.relu")
    assert exercise.language == language
    assert exercise.cases == english.cases or language != "en"
    result = check("mlp.relu", lambda x: x)
    assert result.language == language and not result.passed
    if language != "en":
        described = registry.get("mlp.relu").cases[0].description
        assert described != english.cases[0].description, described
        assert CJK.search(described), described
        assert CJK.search(result.messages[0]), result.messages[0]


def test_the_reading_language_can_be_set_and_is_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxcourse.exercises.checking import registry

    monkeypatch.setenv(registry.READING_LANGUAGE_ENV, "zh-Hant")
    assert registry.reading_language() == "zh-Hant"
    monkeypatch.setenv(registry.READING_LANGUAGE_ENV, "fr")
    with pytest.raises(ValueError, match="JAX_COURSE_LANGUAGE must be one of"):
        registry.reading_language()


def test_an_english_explorer_opened_in_an_edition_speaks_its_language(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxcourse.exercises.checking import registry
    from jaxcourse.exercises.widgets.explorers_mlp import LearningRateExplorer

    english = LearningRateExplorer(run=False)
    monkeypatch.setenv("JPY_SESSION_NAME", "exercises/zh_hant/01_mlp_exercises.ipynb")
    assert registry.reading_language() == "zh-Hant"
    edition = LearningRateExplorer(run=False)
    assert (english.language, edition.language) == ("en", "zh-Hant")
    assert edition.learning_rate.description != english.learning_rate.description
    assert CJK.search(edition.learning_rate.description)


@pytest.mark.slow  # starts a kernel (through a script the marker cannot follow)
def test_run_notebook_stores_each_figures_svg_for_the_editions(tmp_path: Path) -> None:
    """The kernel run_notebook.py starts displays each figure's SVG too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "run_notebook", ROOT / "scripts" / "run_notebook.py")
    run_notebook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_notebook)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            'import matplotlib.pyplot as plt\n'
            '%config InlineBackend.figure_formats = ["retina"]'),
        nbformat.v4.new_code_cell(
            "fig, ax = plt.subplots(figsize=(3, 2))\n"
            'ax.set(xlabel="SGD step")\nplt.show()'),
    ]
    path = tmp_path / "figure.ipynb"
    nbformat.write(nb, path)
    assert run_notebook.execute(path, timeout=120) == []
    (output,) = nbformat.read(path, as_version=4).cells[1].outputs
    assert "image/png" in output.data and len(output.data) == 2  # the PNG, text/plain
    assert i18n._figure_texts(output) == ["SGD step"]


def test_an_untitled_note_box_gets_a_chinese_title() -> None:
    from jaxcourse.i18n import editions

    text = ("前言\n\n:::{note}\n一段说明。\n:::\n\n```{note}\n另一段。\n```\n\n"
            ":::{note} 已有标题\nx\n:::")
    titled = editions.title_notes(text, "zh-Hant")
    assert titled.count("{admonition} 注意\n:class: note") == 2
    assert ":::{note} 已有标题" in titled and "{note}\n" not in titled
    # In the editions themselves: no note box is headed "Note".
    for master in (m for f in i18n.families() for m in f.masters):
        for language in i18n.EDITIONS:
            path = ROOT / i18n.edition_path(master, language)
            for cell in nbformat.read(path, as_version=4).cells:
                assert not re.search(r"^[:`]{3,}\{note\}\s*$", cell.source, re.M), path


def test_the_sidebar_titles_of_the_editions_have_no_code_marks() -> None:
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    block = toc.split("# >>> the Chinese editions")[1]
    assert "`" not in block
    assert 'title: "5. 用 shard_map 手動平行"' in block


def test_the_first_cell_says_what_each_jupyterlab_language_pack_covers() -> None:
    # The packs the course installs, counted: zh-TW translates about a quarter
    # of what zh-CN does, and the editions' first cell says so.
    import importlib.util
    import json

    from jaxcourse.i18n.editions import EDITION_NOTE

    counts = {}
    for locale in ("zh_CN", "zh_TW"):
        spec = importlib.util.find_spec(f"jupyterlab_language_pack_{locale}")
        if spec is None:
            pytest.skip("the JupyterLab language packs are not installed")
        catalog = Path(spec.origin).parent / "locale" / locale / "LC_MESSAGES"
        strings = json.loads((catalog / "jupyterlab.json").read_text(encoding="utf-8"))
        counts[locale] = sum(1 for k, v in strings.items()
                             if k and (any(v) if isinstance(v, list) else v))
    for language, note in EDITION_NOTE.items():
        assert f"約 {round(counts['zh_CN'], -2):,} 條" in note or \
            f"约 {round(counts['zh_CN'], -2):,} 条" in note, (language, counts)
        assert "程式碼註解" in note or "代码注释" in note
    assert f"約 {round(counts['zh_TW'], -2):,} 條" in EDITION_NOTE["zh-Hant"], counts


@pytest.mark.parametrize("language", ["zh-Hant", "zh-Hans"])
def test_an_editions_stored_panels_and_explorers_speak_its_language(
        language: str) -> None:
    # The book draws them from the stored widget state: the master's English,
    # translated where the edition is written (the static note, the buttons,
    # the exercises' titles, the scores).
    import json

    from jaxcourse.messages import MESSAGES

    master = "solutions/08_multiprocess_exercises.ipynb"
    nb = nbformat.read(ROOT / i18n.edition_path(master, language), as_version=4)
    state = json.dumps(nb.metadata["widgets"], ensure_ascii=False)
    english = nbformat.read(ROOT / master, as_version=4).metadata["widgets"]
    assert MESSAGES["en"]["explorer_static"] in json.dumps(english, ensure_ascii=False)
    assert MESSAGES["en"]["explorer_static"] not in state
    assert MESSAGES[language]["explorer_static"] in state
    assert '"description": "Check"' not in state
    assert f'"description": "{MESSAGES[language]["check"]}"' in state
    assert "tests passed" not in state


def _stored_widgets(path: Path) -> str:
    widgets = nbformat.read(path, as_version=4).metadata.get("widgets", {})
    return json.dumps(widgets, ensure_ascii=False)


#: What an English explorer or panel stores: the still picture's notice, the
#: Check button, the score.
ENGLISH_MARKS = {"explorer_static": MESSAGES["en"]["explorer_static"],
                 "check": f'"description": "{MESSAGES["en"]["check"]}"',
                 "tests passed": "tests passed"}
#: The masters that store explorers (chapters) or panels (worked solutions); a
#: chapter's stored progress bar is an output of its code, which stays English.
WIDGET_MASTERS = [master for family in FAMILIES for master in family.masters
                  if any(mark in _stored_widgets(ROOT / master)
                         for mark in ENGLISH_MARKS.values())]


@pytest.mark.parametrize("master", WIDGET_MASTERS, ids=lambda m: Path(m).stem)
def test_no_stored_panel_or_explorer_on_a_chinese_page_is_english(master: str) -> None:
    # The English the master stores, none of it left in either edition, the
    # edition's own words in its place.
    english = _stored_widgets(ROOT / master)
    held = {key: mark for key, mark in ENGLISH_MARKS.items() if mark in english}
    for language in i18n.EDITIONS:
        state = _stored_widgets(ROOT / i18n.edition_path(master, language))
        for key, mark in held.items():
            assert mark not in state, (language, key)
        if "explorer_static" in held:
            assert MESSAGES[language]["explorer_static"] in state, language
        if "check" in held:
            assert f'"description": "{MESSAGES[language]["check"]}"' in state, language
