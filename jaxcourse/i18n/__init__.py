"""Chinese editions of the English chapters and their exercises, from gettext catalogs.

Usage::

    python -m jaxcourse.i18n             # merge the English in, write the editions
    python -m jaxcourse.i18n --check     # exit 1 if a catalog or edition is stale
    python -m jaxcourse.i18n --coverage  # translated, stale, missing per catalog
    python -m jaxcourse.i18n --lint      # translations keep code, math and links

One translation, two scripts. The Simplified-Chinese text is written by people
in one gettext catalog per notebook family (``book/locales/zh_Hans/LC_MESSAGES/``:
``01_mlp.po`` for the chapter, ``01_mlp_exercises.po`` for its solution and
student notebooks), which Poedit, Weblate, Babel and ``sphinx-intl`` read. The
Traditional-Chinese (Taiwan) text is generated from it: the course's term table
(:data:`TERMS_FILE`, mainland term, Taiwan term) first, then OpenCC's
Simplified-to-Taiwan phrase conversion (``s2twp``), the reverse of chapter 8's
pipeline (:mod:`jaxcourse.zh_hans`).

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
writing the ``.po`` files), :mod:`.editions` (writing the editions),
:mod:`.reports` (coverage and lint) and :mod:`.cli` (the command line). The
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
    to_hant,
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
from .reports import coverage, coverage_text, lint, lint_entry

__all__ = [
    "CATALOG_DIR",
    "EDITIONS",
    "FIGURE",
    "FIGURE_FONTS",
    "TERMS_FILE",
    "UNTRANSLATED",
    "Family",
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
    "out_of_date",
    "to_hant",
    "write",
]
