"""Progress of a long job: counts and an estimate, a bar only on a terminal.

The grader (each submission as it finishes, here or on Slurm), the data's
provisioning and a class release report through :class:`Progress`. On a
terminal it is a ``tqdm`` bar on stderr; anywhere else (a CI log, a pipe,
a notebook's cell) it is quiet but for one plain line per finished item,
which reads well in a log and costs nothing to print::

    grading 3/40: alice.ipynb graded (about 2 min left)
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "remaining_text"]


def remaining_text(seconds: float) -> str:
    """Return a rough time left: ``about 40 s``, ``about 3 min``, ``about 2 h``."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


class Progress:
    """Count finished items of a known total; estimate the time left.

    Parameters
    ----------
    total : int
        How many items the job has.
    what : str
        The job, as the line starts: ``grading``, ``release``.
    stream : file, optional
        Where to write; by default ``sys.stderr`` (the results stay alone on
        stdout).
    bar : bool, optional
        Draw a bar; by default only when ``stream`` is a terminal.

    Notes
    -----
    An item is counted once, however often it is reported (the Slurm path
    reports a row when a task writes it, and again when it collects it).
    The estimate is the mean time per finished item so far, times the items
    left: parallel work is counted as it finishes, so it needs no knowledge
    of how many run at once.
    """

    def __init__(self, total: int, what: str, *, stream: TextIO | None = None,
                 bar: bool | None = None) -> None:
        self.total, self.what = total, what
        self.stream = stream if stream is not None else sys.stderr
        if bar is None:
            isatty = getattr(self.stream, "isatty", None)
            bar = bool(isatty and isatty())
        self.started = time.monotonic()
        self.seen: set[str] = set()
        self._bar = None
        if bar and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=what, file=self.stream,
                             dynamic_ncols=True, leave=True)

    @property
    def count(self) -> int:
        """How many items have finished."""
        return len(self.seen)

    def left_text(self) -> str:
        """Say the time left, from the pace so far (empty before the first item)."""
        if not self.count or self.count >= self.total:
            return ""
        pace = (time.monotonic() - self.started) / self.count
        return remaining_text(pace * (self.total - self.count)) + " left"

    def done(self, item: str, note: str = "") -> None:
        """Count ``item`` as finished (once), saying ``note`` about it."""
        if item in self.seen:
            return
        self.seen.add(item)
        said = f"{item} {note}".strip()
        if self._bar is not None:
            self._bar.set_postfix_str(said, refresh=False)
            self._bar.update(1)
            return
        left = self.left_text()
        print(f"{self.what} {self.count}/{self.total}: {said}"
              + (f" ({left})" if left else ""), file=self.stream, flush=True)

    def close(self) -> None:
        """End the bar (a plain stream needs nothing)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
