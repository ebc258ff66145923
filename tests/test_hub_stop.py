"""``make hub-stop`` ends what the hub started, even a process that hid from it.

The hub runs in a PID namespace of its own (``jaxcourse.hub.start``). A
process inside it, as a student's kernel's child is, that clears its
environment (so the hub's tag is gone), ignores SIGTERM, calls ``setsid`` and
forks twice (so no process group, session or parent leads to it) still ends
with ``jaxcourse.hub.stop``: the namespace ends, and every process in it.
The process is placed there with ``nsenter``, as the hub's own spawner
places its servers and their kernels. Needs the hub (``make setup``) and
util-linux's unshare; no browser.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from processes import alive

from jaxcourse import hub as course_hub
from jaxcourse.processes import TAG_ENV, tagged

pytestmark = pytest.mark.slow

# Ignores SIGTERM, leaves its session, forks twice with an empty environment:
# the grandchild is reachable neither by tag, group, session nor parent.
ESCAPE = """
import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve(sys.executable, [sys.executable, "-c",
                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                  "time.sleep(3600)", sys.argv[1]], {})
    os._exit(0)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _escapees(mark: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and mark in (
                proc.info["cmdline"] or []):
            found.append(proc)
    return found


def test_hub_stop_ends_a_process_that_left_its_session_and_environment(
        tmp_path: Path) -> None:
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        pytest.fail("nsenter (util-linux) is missing")
    state = tmp_path / "hub"
    mark = f"jaxcourse-escapee-{secrets.token_hex(4)}"
    started = course_hub.start(_free_port(), state)
    try:
        outer = psutil.Process(started.pid)
        assert outer.name() == "unshare", \
            "the hub does not run in a namespace of its own"
        [init] = outer.children()
        # Into the hub's namespaces (user, then PID), as its spawner's children.
        subprocess.run([nsenter, "--target", str(init.pid), "--user", "--pid",
                        "--preserve-credentials", "--", sys.executable, "-c", ESCAPE,
                        mark], check=True, timeout=30, env={})
        deadline = time.monotonic() + 10
        while not _escapees(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        [escapee] = _escapees(mark)
        assert TAG_ENV not in escapee.environ()  # the tag cannot find it
        assert escapee.pid not in {p.pid for p in tagged(started.tag)}
        assert os.getsid(escapee.pid) != os.getsid(started.pid)  # left the session
        assert escapee.pid in {c.pid for c in outer.children(recursive=True)}
        seen = {p.pid for p in outer.children(recursive=True)} | {started.pid}
    finally:
        ended = course_hub.stop(state)
    assert escapee.pid in ended
    assert not _escapees(mark), "a process in the hub's namespace outlived hub-stop"
    assert not alive(seen), f"processes left after the hub stopped: {alive(seen)}"
    assert not tagged(started.tag)
    assert course_hub.running(state) is None
    assert os.path.exists(state / "jupyterhub.log")
