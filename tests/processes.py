"""Process bookkeeping shared by the tests that start real processes."""

from __future__ import annotations

from collections.abc import Iterable

import psutil


def alive(pids: Iterable[int]) -> list[int]:
    """Return the pids that still name a running (not zombie) process."""
    living = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                living.append(pid)
        except psutil.NoSuchProcess:
            pass
    return living


def assert_no_children_left(message: str) -> None:
    """Fail with ``message`` if this process still has a living descendant."""
    children = psutil.Process().children(recursive=True)
    assert not alive(c.pid for c in children), message
