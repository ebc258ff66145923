"""Processes in the tests: starting a script, finding what is left, forbidding.

``run_script`` runs code in a fresh interpreter (JAX fixes its number of
devices when it starts, so a check on 8 devices needs a process of its own);
``alive`` and ``assert_no_children_left`` find what a test left behind;
``forbid_processes`` makes every way Python starts a process raise, which is
how ``make test-fast`` proves that it starts none (``--forbid-processes``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
MARK = "RESULT-JSON:"

# Names whose call starts a process (the launcher's launch, the grader's grade
# included). Code "starts a process" when it, or a function of the tests, of
# solutions/ or of exercise_kit/ that it names (followed by name, transitively),
# names one of them:
# tests/conftest.py marks such tests slow, and `make test-fast` proves with
# --forbid-processes that nothing was missed.
STARTS_A_PROCESS = frozenset({
    "subprocess", "Popen", "fork", "system", "launch", "grade", "NotebookClient",
    "start_new_kernel", "webdriver", "PreparedLaunch",
})
_FOLLOWED = (ROOT / "tests", ROOT / "solutions", ROOT / "exercise_kit")


def starts_a_process(function: object, seen: set | None = None) -> bool:
    """Whether ``function``'s code names a starter, directly or through helpers."""
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    return _names_a_starter(code, function.__globals__,
                            set() if seen is None else seen)


def _names_a_starter(code: types.CodeType, namespace: dict, seen: set) -> bool:
    if code in seen:
        return False
    seen.add(code)
    if STARTS_A_PROCESS & set(code.co_names):
        return True
    if any(_names_a_starter(c, namespace, seen) for c in code.co_consts
           if isinstance(c, types.CodeType)):  # inner functions, lambdas
        return True
    called = (namespace.get(name) for name in code.co_names)
    return any(_names_a_starter(f.__code__, f.__globals__, seen) for f in called
               if isinstance(f, types.FunctionType) and _followed(f))


def _followed(function: types.FunctionType) -> bool:
    where = Path(function.__code__.co_filename).resolve()
    return any(where.is_relative_to(folder) for folder in _FOLLOWED)


def run_script(code: str, timeout: float = 600,
               env: dict[str, str] | None = None) -> object:
    """Run ``code`` in a fresh interpreter; return the JSON it printed after MARK.

    ``env`` replaces the environment (by default this process's is inherited).
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith(MARK))
    return json.loads(line[len(MARK):])


_PER_DEVICE_COUNT = """
import json, sys
from jaxcourse.devices import use_cpu_devices

use_cpu_devices({devices})
sys.path.insert(0, {tests!r})
import exercise_answers

print({mark!r} + json.dumps(exercise_answers.{function}({ids!r})))
"""


def per_device_count(function: str) -> Callable[[int], dict]:
    """Run ``exercise_answers.<function>(ids)`` once per device count, each elsewhere.

    Returns ``on(devices)``: the result for every exercise that declares
    ``devices`` devices, computed in one fresh process with that many (JAX
    fixes its device count when it starts) the first time it is asked for.
    """
    from jaxcourse.exercises import exercise_ids, get

    found: dict[int, dict] = {}

    def on(devices: int) -> dict:
        if devices not in found:
            ids = [e for e in exercise_ids() if get(e).devices == devices]
            code = _PER_DEVICE_COUNT.format(devices=devices, mark=MARK, ids=ids,
                                            tests=str(ROOT / "tests"),
                                            function=function)
            found[devices] = run_script(code, timeout=1800,
                                        env=dict(os.environ, JAX_PLATFORMS="cpu"))
        return found[devices]

    return on


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


def assert_no_children_left(message: str, grace: float = 10.0) -> None:
    """Fail with ``message`` if this process still has a living descendant.

    A process that was ended may take a moment to go on a loaded machine, so
    the descendants get ``grace`` seconds; the message names the survivors.
    """
    deadline = time.monotonic() + grace
    while True:
        living = alive(c.pid for c in psutil.Process().children(recursive=True))
        if not living or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not living, f"{message}: {_described(living)}"


def _described(pids: Iterable[int]) -> str:
    described = []
    for pid in pids:
        try:
            described.append(f"{pid} {' '.join(psutil.Process(pid).cmdline())[:200]}")
        except psutil.Error:
            described.append(f"{pid} (gone)")
    return "; ".join(described)


class ProcessStartError(RuntimeError):
    """A process was started where none may be (``--forbid-processes``)."""


# Every way Python starts a process goes through one of these: subprocess
# (its own alias of fork_exec, or posix_spawn), multiprocessing (fork, or
# fork_exec to spawn), os.system and pty (forkpty). Each is looked up at call
# time, so replacing it here works.
_STARTERS = [(os, "fork"), (os, "forkpty"), (os, "posix_spawn"),
             (os, "posix_spawnp"), (os, "system"), (subprocess, "_fork_exec")]
if sys.platform != "win32":
    import _posixsubprocess

    _STARTERS.append((_posixsubprocess, "fork_exec"))


# What libraries run to learn about the machine, and are let through: `uname -p`
# (platform.processor(), asked when TensorFlow is imported), `ldconfig -p`
# (ctypes.util.find_library, when PyTorch is) and `fc-list` (matplotlib, when
# it rebuilds its list of fonts).
PROBES = frozenset({"uname", "ldconfig", "fc-list"})


@contextmanager
def forbid_processes(why: str) -> Iterator[None]:
    """Make every process start but :data:`PROBES` raise :class:`ProcessStartError`."""
    saved = [(module, name, getattr(module, name)) for module, name in _STARTERS
             if hasattr(module, name)]

    def refuse(name: str, original: Callable[..., object]) -> Callable[..., object]:
        def refused(*args: object, **kwargs: object) -> object:
            argv = next((a for a in args if isinstance(a, (list, tuple))), args[:1])
            program = os.path.basename(os.fsdecode(argv[0])) if argv else ""
            if program in PROBES:
                return original(*args, **kwargs)
            raise ProcessStartError(f"{name}({list(argv)[:4]}) was refused: {why}")
        return refused

    for module, name, original in saved:
        setattr(module, name, refuse(f"{module.__name__}.{name}", original))
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)
