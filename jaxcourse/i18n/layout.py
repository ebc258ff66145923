"""Where the Chinese editions' sources and outputs live: families, catalogs, paths.

A family is one gettext catalog and the English notebooks it translates (a
chapter; or a topic's solution and student notebooks, with its exercises'
texts). Every other module of :mod:`jaxcourse.i18n` starts from here: the
catalogs' folder, the term table, the editions' folders and the kinds of
entry (``msgctxt``) a catalog holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG_DIR = ROOT / "book" / "locales" / "zh_Hans" / "LC_MESSAGES"
#: Mainland term -> Taiwan term, applied before OpenCC's ``s2twp``.
TERMS_FILE = ROOT / "book" / "glossary_zh_hans_terms.tsv"
#: Language tag -> the folder of its edition beside each master.
EDITIONS = {"zh-Hans": "zh_hans", "zh-Hant": "zh_hant"}
COMMENT = "comment"
EXERCISE = "exercise"
FIGURE = "figure"


@dataclass(frozen=True)
class Family:
    """One catalog and the English notebooks it translates."""

    name: str
    masters: tuple[str, ...]
    #: The topic whose exercises' texts (titles, test descriptions, hints,
    #: mistake messages) this catalog also translates; "" for a chapter.
    topic: str = ""

    @property
    def catalog(self) -> Path:
        """The Simplified-Chinese catalog's path."""
        return CATALOG_DIR / f"{self.name}.po"


def families() -> list[Family]:
    """Return every English chapter's two families: the chapter, its exercises."""
    from .. import course

    found = []
    for topic in course.topics():
        if topic.language != "en":
            continue
        found.append(Family(Path(topic.chapter).stem, (topic.chapter,)))
        found.append(Family(Path(topic.exercises).stem,
                            (topic.exercises, topic.student), topic.key))
    return found


def edition_path(master: str, language: str) -> str:
    """Return the edition of ``master`` (relative to the root) in ``language``."""
    path = Path(master)
    return str(path.parent / EDITIONS[language] / path.name)
