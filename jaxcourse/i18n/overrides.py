"""Reviewed overrides: the zh-Hant text a Taiwan reader corrected, by hand.

The Traditional editions are generated from the Simplified catalogs
(:func:`.words.to_hant`). Where a reviewer writes a sentence better than the
conversion can, the correction goes in a Traditional catalog beside the
Simplified one, ``book/locales/zh_Hant/LC_MESSAGES/<family>.po``, which holds
only the corrected entries. Its ``msgid`` is the Simplified translation the
reviewer read (its source language is Simplified Chinese), its ``msgctxt``
and places (``#:``) are the Simplified entry's, its ``msgstr`` the Taiwan text.

When the Simplified translation changes, the override goes stale exactly as a
Simplified entry does when its English changes: :func:`merged_overrides`
moves it to the new Simplified text, marks it ``fuzzy`` and keeps the text it
corrected as ``#| msgid``. A stale override is not shown: the edition shows
the generated text, a Markdown cell under a line saying that its reviewed
wording is out of date (:data:`STALE_NOTE`), until a reviewer updates the
override and removes the mark.
"""

from __future__ import annotations

from pathlib import Path

from .catalogs import _place, _polib, _read
from .layout import ROOT, Family

#: Where the Traditional (Taiwan) overrides live, one catalog per family.
OVERRIDE_DIR = ROOT / "book" / "locales" / "zh_Hant" / "LC_MESSAGES"
#: Shown above a Markdown cell whose reviewed wording is stale.
STALE_NOTE = "*（本段的臺灣用語校訂已過時，以下暫用自動轉換的文字。）*"


def override_path(family: Family, root: Path = ROOT) -> Path:
    """Return where ``family``'s Traditional override catalog is (if there is one)."""
    return root / OVERRIDE_DIR.relative_to(ROOT) / f"{family.name}.po"


def _header() -> dict[str, str]:
    return {
        "Project-Id-Version": "jax-hands-on",
        "Language": "zh_Hant",
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }


def merged_overrides(family: Family, hans, root: Path = ROOT):
    """Return ``family``'s overrides brought up to date with ``hans``, or None.

    ``hans`` is the merged Simplified catalog. An override whose Simplified
    text is still there stays as it is; one whose cell now has another
    Simplified text moves to it, marked ``fuzzy`` with the text it corrected
    as ``previous_msgid``; one whose cell is gone becomes obsolete.
    """
    path = override_path(family, root)
    if not path.is_file():
        return None
    polib = _polib()
    old = _read(path)
    live = {(e.msgctxt, e.msgstr): e for e in hans
            if not e.obsolete and e.msgstr and "fuzzy" not in e.flags}
    by_place = {}
    for e in live.values():
        for where, line in e.occurrences:
            by_place[(e.msgctxt, _place(where, line))] = e
    new = polib.POFile(wrapwidth=78)
    new.metadata = _header()
    for entry in old:
        if entry.obsolete:
            new.append(entry)
            continue
        source = live.get((entry.msgctxt, entry.msgid))
        if source is None:
            moved = [by_place[(entry.msgctxt, _place(where, line))]
                     for where, line in entry.occurrences
                     if (entry.msgctxt, _place(where, line)) in by_place]
            if not moved:
                entry.obsolete = True
                new.append(entry)
                continue
            source = moved[0]
            entry.previous_msgid = entry.previous_msgid or entry.msgid
            entry.msgid = source.msgstr
            if "fuzzy" not in entry.flags:
                entry.flags.append("fuzzy")
        entry.occurrences = list(source.occurrences)
        new.append(entry)
    return new


def overridden(overrides) -> tuple[dict, set]:
    """Return the overrides in force ((context, Simplified) -> Taiwan) and the stale.

    The stale ones are the (context, Simplified text) pairs whose override is
    ``fuzzy``: their generated text is shown, under :data:`STALE_NOTE`.
    """
    if overrides is None:
        return {}, set()
    current = {}
    stale = set()
    for e in overrides:
        if e.obsolete or not e.msgstr:
            continue
        if "fuzzy" in e.flags:
            stale.add((e.msgctxt, e.msgid))
        else:
            current[(e.msgctxt, e.msgid)] = e.msgstr
    return current, stale
