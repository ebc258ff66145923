"""The gettext catalogs: what a family's notebooks say, merged into its ``.po`` file.

A catalog's entries are a family's Markdown cells (the whole cell is the
``msgid``), its code comments (``msgctxt "comment"``), its figures' labels
(``msgctxt "figure"``, :mod:`.figures`) and its exercises' texts (``msgctxt
"exercise"``). :func:`merged` brings a catalog up to date with the English, as
``msgmerge`` would: unchanged English keeps its translation, changed English
keeps the old one marked ``fuzzy`` (a stale entry), gone English leaves an
obsolete (``#~``) entry, revived if its English comes back.
"""

from __future__ import annotations

import difflib
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..zh_hans import code_tokens
from .figures import _figure_texts
from .layout import COMMENT, EXERCISE, FIGURE, ROOT, Family

# ---- what a notebook says: the entries -------------------------------------


def _comments(source: str) -> Iterator[tuple[tokenize.TokenInfo, str]]:
    """Yield each comment token of Python ``source`` and its text after ``#``."""
    for tok in code_tokens(source):
        if tok.type == tokenize.COMMENT:
            text = tok.string[1:].strip()
            # Tool directives, shebangs, a batch script's #SBATCH lines and
            # nbgrader's markers ("### BEGIN SOLUTION", "YOUR CODE HERE") are
            # read by tools: they stay as written.
            tool = r"(noqa|type:|fmt:|pragma|!|%%|NBVAL|#|YOUR CODE HERE|SBATCH)"
            if text and not re.match(tool, text) and tok.string[:7] != "#SBATCH":
                yield tok, text


@dataclass
class _Entry:
    msgid: str
    context: str | None
    occurrences: list[tuple[str, str]] = field(default_factory=list)


def _entries(family: Family, root: Path = ROOT) -> list[_Entry]:
    entries: dict[tuple[str | None, str], _Entry] = {}
    for master in family.masters:
        nb = nbformat.read(root / master, as_version=4)
        for cell in nb.cells:
            found: list[tuple[str | None, str]] = []
            if cell.cell_type == "markdown" and cell.source.strip():
                found.append((None, cell.source))
            elif cell.cell_type == "code":
                found.extend((COMMENT, text) for _, text in _comments(cell.source))
                for output in cell.get("outputs", []):
                    found.extend((FIGURE, text) for text in _figure_texts(output))
            for context, text in found:
                entry = entries.setdefault((context, text), _Entry(text, context))
                place = (master, cell.get("id", ""))
                if place not in entry.occurrences:
                    entry.occurrences.append(place)
    for exercise_id, module, texts in _exercise_texts(family):
        for text in texts:
            entry = entries.setdefault((EXERCISE, text), _Entry(text, EXERCISE))
            place = (module, exercise_id)
            if place not in entry.occurrences:
                entry.occurrences.append(place)
    return list(entries.values())


def _exercise_texts(family: Family) -> list[tuple[str, str, list[str]]]:
    """Return (exercise id, module path, texts but the shown solution) per exercise."""
    if not family.topic:
        return []
    from .. import course
    from ..exercises.checking.editions import texts_of
    from ..exercises.checking.registry import _REGISTRY

    module = course.load(family.topic)
    where = Path(module.__file__).resolve().relative_to(ROOT).as_posix()
    found = []
    for exercise_id, exercise in list(_REGISTRY.items()):
        if exercise_id.split(".", 1)[0] == family.topic:
            *texts, _solution = texts_of(exercise)
            found.append((exercise_id, where, [t for t in texts if t.strip()]))
    return found


# ---- the catalogs ------------------------------------------------------------


def _polib():
    try:
        import polib
    except ImportError as err:  # the editions' generator only, never the course
        raise ImportError(
            "the translation tools need polib: pip install the pin in requirements.txt"
        ) from err
    return polib


def _header(language: str = "zh_Hans") -> dict[str, str]:
    return {
        "Project-Id-Version": "jax-hands-on",
        "Language": language,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }


def _read(path: Path):
    polib = _polib()
    if path.is_file():
        return polib.pofile(str(path), wrapwidth=78)
    return polib.POFile(wrapwidth=78)


def merged(family: Family, root: Path = ROOT):
    """Return ``family``'s catalog merged with its English notebooks, as a POFile.

    Kept: every translation whose English is unchanged. Stale: a translation
    whose cell (by id) now has other English; it moves to the new text, marked
    ``fuzzy``, with the English it translated as ``previous_msgid``. Obsolete
    (``#~``): translations whose English is gone.
    """
    polib = _polib()
    old = _read(root / family.catalog.relative_to(ROOT))
    live = [e for e in old if not e.obsolete]
    # An obsolete entry whose English is back is revived as it was (as msgmerge
    # does); a live entry of the same English wins.
    by_key = {(e.msgctxt, e.msgid): e for e in old if e.obsolete}
    by_key.update({(e.msgctxt, e.msgid): e for e in live})
    by_place: dict[tuple[str | None, str], list] = {}
    # Obsolete entries too: their English is gone, their cell may still be there.
    for e in old:
        for path, line in e.occurrences:
            by_place.setdefault((e.msgctxt, _place(path, line)), []).append(e)
    new = polib.POFile(wrapwidth=78)
    new.metadata = _header()
    used = set()
    current = _entries(family, root)
    current_keys = {(e.context, e.msgid) for e in current}
    for entry in current:
        key = (entry.context, entry.msgid)
        item = polib.POEntry(msgid=entry.msgid, msgstr="", msgctxt=entry.context,
                             occurrences=list(entry.occurrences))
        previous = by_key.get(key)
        if previous is not None and previous.msgstr:
            item.msgstr = previous.msgstr
            item.flags = list(previous.flags)
            item.previous_msgid = previous.previous_msgid
            item.tcomment = previous.tcomment
            used.add(id(previous))
        else:
            # The same cell's old translation, if its English is gone.
            candidates = [e for path, line in entry.occurrences
                          for e in by_place.get((entry.context, _place(path, line)), [])
                          if e.msgstr and id(e) not in used
                          and (e.msgctxt, e.msgid) not in current_keys]
            if not candidates:
                # As msgmerge does: the closest gone English, if close enough
                # (an obsolete entry has lost the cell it came from).
                gone = [e for e in old if e.msgstr and id(e) not in used
                        and e.msgctxt == entry.context
                        and (e.msgctxt, e.msgid) not in current_keys]
                candidates = [e for e in gone if difflib.SequenceMatcher(
                    None, e.msgid, entry.msgid).ratio() >= 0.6]
            if candidates:
                best = max(candidates, key=lambda e: difflib.SequenceMatcher(
                    None, e.msgid, entry.msgid).ratio())
                item.msgstr = best.msgstr
                item.flags = ["fuzzy"]
                item.previous_msgid = best.previous_msgid or best.msgid
                item.tcomment = best.tcomment
                used.add(id(best))
        new.append(item)
    for e in list(old):
        if e.msgstr and id(e) not in used:
            e.obsolete = True
            new.append(e)
    return new


def _place(path: str, line: str) -> str:
    # polib reads "book/x.ipynb:<cell id>" as a path with no line number.
    return f"{path}:{line}" if line else path


def _text(po) -> str:
    return str(po) + "\n" if not str(po).endswith("\n") else str(po)
