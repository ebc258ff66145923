"""Binder builds the environment `make setup` builds, from binder/.

Binder (repo2docker) reads ``binder/runtime.txt`` (the Python version),
``binder/requirements.txt``, ``binder/apt.txt`` (Debian packages) and runs
``binder/postBuild``. These tests hold them to ``scripts/setup.sh``, so the
book's Binder button cannot drift from what the tests prove here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
SETUP = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
# Only the browser test needs these; a Binder session has its own browser.
BROWSER_ONLY = {"chromium", "chromium-driver"}
# The course's Slurm cluster needs root to start its daemons, which Binder does
# not give: chapter 8's Slurm cells say so there and skip.
CLUSTER_ONLY = {"slurmctld", "slurmd", "slurm-client", "munge"}
# The grader's sandbox: grading a class is a teacher's job on their own
# machine, and a Binder container does not allow the user namespaces that
# bubblewrap needs anyway.
GRADER_ONLY = {"bubblewrap"}


def _setup_apt_packages() -> set[str]:
    line = re.search(r"^APT_PACKAGES=\(([^)]*)\)$", SETUP, re.MULTILINE)
    assert line, "scripts/setup.sh no longer lists APT_PACKAGES=(...)"
    return set(shlex.split(line.group(1)))


def _lines(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_apt_txt_lists_the_system_packages_of_setup() -> None:
    wanted = _setup_apt_packages() - BROWSER_ONLY - CLUSTER_ONLY - GRADER_ONLY
    assert set(_lines(BINDER / "apt.txt")) == wanted


def test_requirements_are_the_course_pins() -> None:
    assert _lines(BINDER / "requirements.txt") == ["-r ../requirements.txt"]
    assert (ROOT / "requirements.txt").is_file()


def test_runtime_is_the_python_setup_uses() -> None:
    wanted = re.search(r"sys\.version_info\[:2\] != \((\d+), (\d+)\)", SETUP)
    assert wanted, "scripts/setup.sh no longer checks its Python version"
    assert _lines(BINDER / "runtime.txt") == [f"python-{wanted[1]}.{wanted[2]}"]


# Each postBuild command, and the setup.sh line it mirrors.
MIRRORED_STEPS = {
    "python -m pip install --no-deps --no-build-isolation -e .":
        '"$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation '
        '-e "$here"',
    "python -m jaxcourse.data": '"$VENV/bin/python" -m jaxcourse.data',
}


def test_post_build_runs_the_last_steps_of_setup() -> None:
    post_build = BINDER / "postBuild"
    assert post_build.stat().st_mode & 0o111, "binder/postBuild must be executable"
    assert _lines(post_build) == ["set -euo pipefail", *MIRRORED_STEPS]
    for command, in_setup in MIRRORED_STEPS.items():
        assert in_setup in SETUP, (
            f"scripts/setup.sh no longer runs `{in_setup}`: update binder/postBuild "
            f"(`{command}`) to match"
        )
