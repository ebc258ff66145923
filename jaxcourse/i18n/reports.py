"""Reports on the catalogs: how much is translated, and what a translation lost.

:func:`coverage` counts, per catalog and language, the Markdown cells
translated, stale (``fuzzy``) and missing, and the comments, exercise texts
and figure labels done. :func:`lint` checks that each translation keeps its
English's code spans, math, link targets, labels, fences, HTML tags and
headings; :func:`stale_overrides` names the reviewed zh-Hant corrections whose
Simplified source has changed since (the edition shows the generated text in
their place, a Markdown cell under a note that says so). They read the
catalogs as they are on disk (``--check`` keeps them merged); none writes.
"""

from __future__ import annotations

import re
from pathlib import Path

from .catalogs import _read
from .layout import COMMENT, EDITIONS, EXERCISE, FIGURE, ROOT, families
from .overrides import override_path


def coverage(root: Path = ROOT) -> list[dict]:
    """Return, per catalog and language, its cells translated, stale and missing."""
    rows = []
    for family in families():
        po = _read(root / family.catalog.relative_to(ROOT))
        cells = [e for e in po if not e.obsolete and e.msgctxt is None]
        comments = [e for e in po if not e.obsolete and e.msgctxt == COMMENT]
        texts = [e for e in po if not e.obsolete and e.msgctxt == EXERCISE]
        labels = [e for e in po if not e.obsolete and e.msgctxt == FIGURE]
        stale = sum(1 for e in cells if "fuzzy" in e.flags)
        done = _done(cells)
        for language in EDITIONS:  # one translation: both scripts cover the same
            rows.append({
                "catalog": family.name, "language": language, "cells": len(cells),
                "translated": done, "stale": stale,
                "missing": len(cells) - done - stale,
                "percent": 100.0 * done / len(cells) if cells else 100.0,
                "comments": f"{sum(1 for e in comments if e.msgstr)}/{len(comments)}",
                "exercise texts": (f"{_done(texts)}/{len(texts)}" if family.topic
                                   else ""),
                "figure labels": f"{_done(labels)}/{len(labels)}" if labels else "",
            })
    return rows


def _done(entries: list) -> int:
    """Count the entries translated and not stale."""
    return sum(1 for e in entries if e.msgstr and "fuzzy" not in e.flags)


def coverage_text(rows: list[dict]) -> str:
    """Return the coverage report as a fixed-width table."""
    lines = [f"{'catalog':28} {'language':8} {'cells':>5} {'done':>5} {'stale':>5} "
             f"{'missing':>7} {'%':>6} {'comments':>9} {'exercise texts':>14} "
             f"{'figure labels':>13}"]
    for r in rows:
        lines.append(f"{r['catalog']:28} {r['language']:8} {r['cells']:5d} "
                     f"{r['translated']:5d} {r['stale']:5d} {r['missing']:7d} "
                     f"{r['percent']:6.1f} {r['comments']:>9} "
                     f"{r['exercise texts']:>14} {r['figure labels']:>13}")
    return "\n".join(lines)


# A code span or inline math may wrap onto the next line (as CommonMark allows),
# never across a blank line; a translation may wrap it elsewhere.
_KEEP = {
    "code spans": re.compile(r"`(?:[^`\n]|\n(?!\s*\n))+`"),
    "math": re.compile(r"\$\$.+?\$\$|\$(?:[^$\n]|\n(?!\s*\n))+\$", re.S),
    "link targets": re.compile(r"\]\(([^)\s]+)\)"),
    "labels": re.compile(r"^\(([\w-]+)\)=", re.M),
    "fences": re.compile(r"^\s*(```|:::)", re.M),
    "html tags": re.compile(r"</?[a-zA-Z][^>]*>"),
}
_HEADING = re.compile(r"^(#{1,6}) ", re.M)


def lint_entry(msgid: str, msgstr: str) -> list[str]:
    """Return what ``msgstr`` lost of ``msgid``'s code, math, links and headings."""
    problems = []
    for what, pattern in _KEEP.items():
        want = sorted(" ".join((m.group(1) if m.groups() else m.group(0)).split())
                      for m in pattern.finditer(msgid))
        got = sorted(" ".join((m.group(1) if m.groups() else m.group(0)).split())
                     for m in pattern.finditer(msgstr))
        if want != got:
            lost = sorted(set(want) - set(got))
            added = sorted(set(got) - set(want))
            detail = "; ".join(filter(None, [lost and f"lost {lost[:3]}",
                                             added and f"added {added[:3]}"]))
            problems.append(f"{what} differ ({detail or 'counts differ'})")
    if [m.group(1) for m in _HEADING.finditer(msgid)] != [
            m.group(1) for m in _HEADING.finditer(msgstr)]:
        problems.append("headings differ in number or level")
    return problems


def lint(root: Path = ROOT, names: list[str] | None = None) -> list[str]:
    """Return a line per translation that lost code, math, links or headings."""
    found = []
    for family in families():
        if names and family.name not in names:
            continue
        po = _read(root / family.catalog.relative_to(ROOT))
        for e in po:
            if e.obsolete or not e.msgstr or e.msgctxt in (COMMENT, FIGURE):
                continue
            for problem in lint_entry(e.msgid, e.msgstr):
                where = e.occurrences[0] if e.occurrences else ("?", "?")
                found.append(f"{family.name}.po {where[0]}:{where[1]}: {problem}")
    return found


def stale_overrides(root: Path = ROOT) -> list[str]:
    """Return a line per reviewed zh-Hant override that has gone stale (``fuzzy``).

    A stale override is not shown: the reader gets the generated text again
    (and, for a Markdown cell, :data:`.overrides.STALE_NOTE` above it) until a
    reviewer rereads the new Simplified text and updates the override.
    """
    found = []
    for family in families():
        path = override_path(family, root)
        if not path.is_file():
            continue
        for e in _read(path):
            if not e.obsolete and "fuzzy" in e.flags:
                where = e.occurrences[0] if e.occurrences else ("?", "?")
                found.append(f"zh-Hant override {path.relative_to(root).as_posix()} "
                             f"{where[0]}: stale (its Simplified text changed): "
                             f"{e.msgstr[:40]!r}")
    return found
