"""The course's Slurm cluster for the tests: started once, stopped if we started it.

Import the fixture into a test module (``from slurm_cluster import
slurm_cluster``). Where Slurm is not installed the tests that use it are
skipped, with the reason; ``make setup`` installs it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jaxcourse import slurm


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[slurm.Status]:
    """The course's cluster, up; stopped at the end only if this fixture started it."""
    reason = slurm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    status = slurm.start(timeout=90, quiet=True)
    try:
        yield status
    finally:
        if status.started:
            slurm.stop(quiet=True)
