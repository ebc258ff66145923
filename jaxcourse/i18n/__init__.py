"""Chinese editions of the English chapters and their exercises, from gettext catalogs.

Usage::

    python -m jaxcourse.i18n             # merge the English in, write the editions
    python -m jaxcourse.i18n --check     # exit 1 if a catalog or edition is stale
    python -m jaxcourse.i18n --coverage  # translated, stale, missing per catalog
    python -m jaxcourse.i18n --lint      # code, math, links; regional usage; style

One translation, two scripts. The Simplified-Chinese text is written by people
in one gettext catalog per notebook family (``book/locales/zh_Hans/LC_MESSAGES/``:
``01_mlp.po`` for the chapter, ``01_mlp_exercises.po`` for its solution and
student notebooks), which Poedit, Weblate, Babel and ``sphinx-intl`` read. The
Traditional-Chinese (Taiwan) text is generated from it: the course's term table
(:data:`TERMS_FILE`, mainland term, Taiwan term) applied to whole words (jieba
cuts the sentence: :mod:`.words`), then OpenCC's Simplified-to-Taiwan phrase
conversion (``s2twp``), the reverse of chapter 9's pipeline
(:mod:`jaxcourse.zh_hans`). A Taiwan reader's corrections are reviewed
overrides in ``book/locales/zh_Hant/LC_MESSAGES/`` (:mod:`.overrides`), which
go stale when the Simplified text they corrected changes. The lint also checks
the editions for the other region's words and the Simplified style sheet
(:mod:`.usage`).

======================================  ===========================================
master (English)                        generated editions (and ``zh_hant/``)
======================================  ===========================================
``book/01_mlp.ipynb``                   ``book/zh_hans/01_mlp.ipynb``
``solutions/01_mlp_exercises.ipynb``    ``solutions/zh_hans/01_mlp_exercises.ipynb``
``exercises/01_mlp_exercises.ipynb``    ``exercises/zh_hans/01_mlp_exercises.ipynb``
======================================  ===========================================

An entry is one Markdown cell (its whole text is the ``msgid``), one code
comment (``msgctxt "comment"``) or one label of a figure (``msgctxt "figure"``).
Each entry lists the cells it comes from (``#: book/01_mlp.ipynb:<cell id>``).
When the English of a cell changes, the merge keeps the old translation beside
the new text, marked ``fuzzy`` with the old English as ``#| msgid``: a stale
entry. Until a translator updates it and removes the mark, the edition shows
that cell in English, under a line saying it is not translated yet; a stale
translation is never shown.

The editions' code is the master's, character for character, except comments;
their outputs are the master's, which nbval proves on the English notebook, so
the editions are not executed again (:func:`code_of` is what the tests compare).
A figure is the one exception: where the master's output keeps the figure's SVG
(``scripts/run_notebook.py`` stores it), the edition shows that SVG with its
labels translated and drawn in the edition's CJK font, at the PNG's size.

The package's modules follow its concerns, each importing only those before
it: :mod:`.layout` (the families, their catalogs and their editions' paths),
:mod:`.figures` (a figure's labels), :mod:`.catalogs` (reading, merging and
writing the ``.po`` files), :mod:`.words` (Simplified to Taiwan, word by word),
:mod:`.overrides` (reviewed zh-Hant corrections), :mod:`.editions` (writing
the editions), :mod:`.usage` (regional usage, style sheet), :mod:`.reports`
(coverage and lint) and :mod:`.cli` (the command line). The
Chinese-script machinery both directions share (the term table, OpenCC, CJK
text in code) is :mod:`jaxcourse.zh_hans`'s. Everything is re-exported here,
so ``from jaxcourse import i18n`` gives the whole of it.
"""

from __future__ import annotations

from .catalogs import merged
from .cli import main
from .editions import (
    UNTRANSLATED,
    code_of,
    edition,
    out_of_date,
    write,
)
from .figures import FIGURE_FONTS
from .figures import _figure_texts as _figure_texts
from .figures import _translate_figure as _translate_figure
from .layout import (
    CATALOG_DIR,
    EDITIONS,
    FIGURE,
    TERMS_FILE,
    Family,
    edition_path,
    families,
)
from .overrides import OVERRIDE_DIR, STALE_NOTE, merged_overrides, override_path
from .reports import coverage, coverage_text, lint, lint_entry, stale_overrides
from .usage import (
    STYLE_FILE,
    USAGE_FILE,
    axis_findings,
    naming_findings,
    regional_words,
    style_findings,
    usage_findings,
)
from .words import to_hant

__all__ = [
    "CATALOG_DIR",
    "EDITIONS",
    "FIGURE",
    "FIGURE_FONTS",
    "OVERRIDE_DIR",
    "STALE_NOTE",
    "STYLE_FILE",
    "TERMS_FILE",
    "UNTRANSLATED",
    "USAGE_FILE",
    "Family",
    "axis_findings",
    "code_of",
    "coverage",
    "coverage_text",
    "edition",
    "edition_path",
    "families",
    "lint",
    "lint_entry",
    "main",
    "merged",
    "merged_overrides",
    "naming_findings",
    "override_path",
    "regional_words",
    "stale_overrides",
    "style_findings",
    "out_of_date",
    "to_hant",
    "usage_findings",
    "write",
]
