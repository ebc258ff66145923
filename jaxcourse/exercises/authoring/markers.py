"""The masters' markers: solution and hidden-test regions, and what they become.

A master notebook (``solutions/*.ipynb``) marks what the learner writes
between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, and the hidden
tests that score a check cell for nbgrader between ``### BEGIN HIDDEN
TESTS`` and ``### END HIDDEN TESTS`` (nbgrader's own markers). This module
reads those markers, refuses a line nbgrader would misread as one, and
replaces the regions: a solution by the stub the learner sees, hidden tests
by nothing.
"""

from __future__ import annotations

import re

__all__ = [
    "BEGIN",
    "BEGIN_HIDDEN",
    "CODE_STUB",
    "END",
    "END_HIDDEN",
    "SOLUTION_ONLY_TAG",
    "TEXT_STUB",
    "AuthoringError",
    "has_solution",
    "strip_hidden_tests",
    "strip_solutions",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
SOLUTION_ONLY_TAG = "solution-only"
#: What a solution region becomes; nbgrader is configured with the same stubs.
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
_MARKER = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>### (BEGIN|END) SOLUTION)\s*$")
_HIDDEN = re.compile(r"^[ \t]*(?P<marker>### (BEGIN|END) HIDDEN TESTS)\s*$")
# nbgrader takes any line containing these words for a marker, wherever they
# are in the line; the course only accepts them as lines of their own, so
# that both read a master the same way.
_NBGRADER_WORDS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS",
                   "END HIDDEN TESTS")


class AuthoringError(ValueError):
    """A master notebook's markers or check cells are malformed."""


def _refuse_loose_words(number: int, line: str) -> None:
    if any(word in line for word in _NBGRADER_WORDS):
        raise AuthoringError(
            f"line {number}: {line.strip()!r} would be read as a marker by "
            f"nbgrader; write {BEGIN!r}, {END!r}, {BEGIN_HIDDEN!r} and "
            f"{END_HIDDEN!r} on lines of their own, and nothing else like them")


def strip_solutions(source: str, cell_type: str = "code") -> str:
    """Replace every marked solution region of one cell's source.

    Parameters
    ----------
    source : str
        The cell's source.
    cell_type : {"code", "markdown"}
        Code regions become ``# YOUR CODE HERE`` + ``raise
        NotImplementedError()`` at the marker's indentation; Markdown regions
        become ``YOUR ANSWER HERE``.

    Returns
    -------
    str
        The student version of the source.
    """
    stub = CODE_STUB if cell_type == "code" else TEXT_STUB
    return _replace_regions(source, _MARKER, BEGIN, END, stub)


def strip_hidden_tests(source: str) -> str:
    """Remove every region between the hidden-tests markers, markers included.

    nbgrader removes them from the student's copy, and puts them back when it
    autogrades.
    """
    return _replace_regions(source, _HIDDEN, BEGIN_HIDDEN, END_HIDDEN, None)


def _replace_regions(source: str, marker: re.Pattern, begin: str, end: str,
                     stub: str | None) -> str:
    """Replace each region between ``begin`` and ``end`` lines by ``stub``.

    ``stub`` goes in at the begin marker's indentation; ``None`` removes the
    region. With a stub (solution regions), any other line that nbgrader
    would take for a marker is refused.
    """
    out: list[str] = []
    inside = False
    # split("\n"), as nbgrader does: the two agree on every line, the last
    # one included.
    for number, line in enumerate(source.split("\n"), start=1):
        match = marker.match(line)
        if match and match["marker"] == begin:
            if inside:
                raise AuthoringError(f"line {number}: nested {begin}")
            inside = True
            if stub is not None:
                indent = match["indent"] if "indent" in marker.groupindex else ""
                out += [indent + part for part in stub.split("\n")]
        elif match:
            if not inside:
                raise AuthoringError(f"line {number}: {end} without {begin}")
            inside = False
        else:
            if stub is not None and not _HIDDEN.match(line):
                _refuse_loose_words(number, line)
            if not inside:
                out.append(line)
    if inside:
        raise AuthoringError(f"{begin} is never closed")
    return "\n".join(out)


def has_solution(source: str) -> bool:
    """Whether ``source`` holds a solution region (a ``### BEGIN SOLUTION`` line)."""
    return any((m := _MARKER.match(line)) and m["marker"] == BEGIN
               for line in source.split("\n"))
