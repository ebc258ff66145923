"""The grader's safety boundary: where one submission's code runs.

The grader (:mod:`jaxcourse.exercises.grading.cli`) starts one fresh Python
process per submission, ``python -m jaxcourse.exercises.grading.sandbox``, in a
private run folder laid out as::

    run/
      course/    a read-only copy of jaxcourse/ and solutions/ without any
                 answer (jaxcourse.exercises.authoring.answerless), first on PYTHONPATH
      work/      the working directory: a copy of the notebook, nothing else
      outbox/    what the process reports: result.json, attempts.txt

That process limits its own memory, installs a guard (an audit hook) that
refuses writes to the course, real or copied, and any look into the grading
folder outside its own run folder or into the submissions folder, imports
what every notebook needs, executes the notebook's code cells (cells that
only display a check panel or an explorer are skipped), calls the learner's
functions on every test's inputs, and writes what they returned as plain
JSON, with the exercises whose function is, runs or copies a reference
answer (:mod:`jaxcourse.exercises.grading.borrowing`, or a withheld answer reached:
:data:`jaxcourse.exercises.checking.class_release.REACHED`). It decides nothing; the
grader judges. No answer is there to borrow: the copy holds none, so what
this process reports about borrowing is only the reason a row shows.

The guard is a tripwire for honest mistakes and casual snooping, not a
security sandbox: code that calls the C library directly (``ctypes``) or
starts a shell passes beside it. The grader therefore starts this process
inside the operating system's wall (:mod:`jaxcourse.exercises.grading.isolation`),
fingerprints the course after every submission, and ends every process a
submission started.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import time
from pathlib import Path

__all__ = ["GUARD_ENV", "plan_cells", "run_submission", "skippable"]

# JSON: {"protect": [folders never to write], "private": [folders never to
# read, list or write], "own": the run folder, allowed inside "private"}.
GUARD_ENV = "JAXCOURSE_GRADING_GUARD"

# Calls that only display something and define no name: a cell made only of
# them cannot change what the checks observe, so it is not run.
_DISPLAY_ONLY = {"check_panel", "display"}
# Calls whose result is only shown or kept: they change no state that the
# learner's functions read.
_PURE_CALLS = {"print", "check"}

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_MUTATING = {
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
    "os.truncate", "os.utime", "os.symlink", "os.link", "shutil.rmtree",
    "shutil.copyfile", "shutil.move",
}  # fmt: skip
_LOOKING = {"os.listdir", "os.scandir", "os.chdir", "glob.glob"}


def skippable(source: str) -> bool:
    """Return whether a cell only displays a panel or an explorer.

    A cell is skipped only if every statement in it is a bare call of
    ``check_panel(...)``, ``display(...)`` or a function whose name ends in
    ``_explorer``, with arguments that are names or constants. Such a call
    binds no name, so the cells after it see the same namespace; a learner
    who adds anything else to the cell gets it run.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    if not tree.body:
        return False
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            return False
        name = call.func.id
        if name not in _DISPLAY_ONLY and not name.endswith("_explorer"):
            return False
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if not all(isinstance(a, ast.Name | ast.Constant) for a in arguments):
            return False
    return True


def _bound(statement: ast.stmt) -> set[str] | None:
    """Names a top-level statement binds, or ``None`` if it may do more."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [
            statement.target]
        names = set()
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif not isinstance(node, ast.Tuple | ast.List | ast.Store
                                    | ast.Starred):
                    return None  # x.attr = ..., x[i] = ...: changes an object
        return names
    if isinstance(statement, ast.Expr):
        call = statement.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and (
            call.func.id in _DISPLAY_ONLY | _PURE_CALLS
            or call.func.id.endswith("_explorer")
        ):
            return set()
    return None


def plan_cells(sources: list[str], functions: list[str]) -> list[bool]:
    """Return, for each code cell, whether it must run for the checks.

    Cells that only display a panel or an explorer (:func:`skippable`) are
    not run. Nor are the cells after the last one that defines a learner's
    function, when every statement in them only binds names that none of the
    learner's functions reads, directly or through the notebook's other
    definitions, or calls ``print``/``check``/a display helper (no call on
    an attribute, such as ``jax.config.update``, which could change global
    state). Such a cell cannot change what the functions return; in the
    exercise notebooks these are the demonstration and exploration cells.
    """
    trees: list[ast.Module | None] = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            trees.append(None)
    wanted = set(functions)
    last = -1
    definitions: dict[str, list[ast.AST]] = {}
    for index, tree in enumerate(trees):
        for statement in tree.body if tree else []:
            for name in _bound(statement) or ():
                definitions.setdefault(name, []).append(statement)
                if name in wanted and isinstance(statement, ast.FunctionDef):
                    last = index
    # The names the learner's functions read, through the notebook's own
    # definitions, to a fixed point.
    needed, frontier = set(), set(wanted)
    while frontier:
        name = frontier.pop()
        needed.add(name)
        for node in definitions.get(name, []):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and inner.id not in needed:
                    frontier.add(inner.id)
    plan = []
    for index, (source, tree) in enumerate(zip(sources, trees, strict=True)):
        if skippable(source):
            plan.append(False)
            continue
        if tree is None or index <= last:
            plan.append(True)
            continue
        bound = [_bound(s) for s in tree.body]
        plan.append(any(b is None or b & needed for b in bound))
    return plan


def _limit_memory(megabytes: int) -> None:
    # RLIMIT_DATA (heap and private mappings) rather than RLIMIT_AS: XLA and
    # the thread stacks reserve far more address space than they ever touch,
    # so an address-space limit low enough to matter breaks JAX's start-up.
    if megabytes <= 0:
        return
    try:
        import resource

        limit = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    except (ImportError, ValueError, OSError, AttributeError):
        pass  # not on this platform: documented, the wall-clock limit remains


def _install_guard(config: dict, attempts: Path) -> None:
    protect = [os.path.realpath(p) for p in config.get("protect", [])]
    private = [os.path.realpath(p) for p in config.get("private", [])]
    own = os.path.realpath(config["own"])
    busy = False

    def inside(path: str, folders: list[str]) -> bool:
        return any(path == f or path.startswith(f + os.sep) for f in folders)

    def note(what: str, path: str) -> None:
        nonlocal busy
        busy = True
        try:
            with open(attempts, "a", encoding="utf-8") as handle:
                handle.write(f"{what} {path}\n")
        finally:
            busy = False
        raise PermissionError(f"the grader does not allow this: {what} {path}")

    def hook(event: str, args: tuple) -> None:
        if busy or not (event == "open" or event in _MUTATING or event in _LOOKING):
            return
        target = args[0] if args else None
        if event == "shutil.copyfile" and len(args) > 1:
            # Copied from args[0], written to args[1]: IPython copies its
            # own files out of the (protected) environment at start-up.
            target = args[1]
        if event == "os.chdir" or event == "glob.glob":
            target = args[0]
        if isinstance(target, bytes):
            target = os.fsdecode(target)
        if target is None and event in ("os.listdir", "os.scandir"):
            target = "."
        if not isinstance(target, str | os.PathLike):
            return  # a file descriptor: opened earlier, already checked
        path = os.path.realpath(os.fspath(target))
        if inside(path, private) and not inside(path, [own]):
            note("read", path)
        if event == "open":
            mode, flags = (args[1] if len(args) > 1 else None), (
                args[2] if len(args) > 2 else 0
            )
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if not writing:
                return
        elif event in _LOOKING:
            return
        if inside(path, protect):
            note("write", path)

    sys.addaudithook(hook)


def run_submission(notebook: Path, outbox: Path, ids: list[str], modules: list[str],
                   memory_mb: int, case_limit: float | None) -> None:
    """Execute ``notebook``, observe the learner's functions, write the report.

    Parameters
    ----------
    notebook : Path
        The private copy of the submission.
    outbox : Path
        Where ``result.json`` (and ``attempts.txt``) are written.
    ids : list of str
        The exercises to observe.
    modules : list of str
        Modules imported before the notebook runs (the topic's reference
        module, which registers the exercises, and what it imports).
    memory_mb : int
        Memory limit (``RLIMIT_DATA``), 0 for none.
    case_limit : float, optional
        Seconds per test; by default each exercise's own limit.
    """
    begun = time.time()
    _limit_memory(memory_mb)
    guard = os.environ.get(GUARD_ENV)
    if guard:
        _install_guard(json.loads(guard), outbox / "attempts.txt")
    timings = {"begun": begun}
    import importlib

    import nbformat
    from IPython.core.interactiveshell import InteractiveShell

    from jaxcourse.course import content_folders

    from ..checking.class_release import REACHED
    from ..checking.observation import Observation
    from ..checking.observe import observe_all
    from ..checking.registry import get
    from .borrowing import Watch

    for name in modules:
        importlib.import_module(name)
    # The references as the course registered them, before any cell can
    # rebind, reload or re-register them.
    watch = Watch({i: get(i).reference for i in ids}, content_folders())
    shell = InteractiveShell.instance()
    timings["imported"] = time.time()
    errors, skipped = [], 0
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    functions = [get(i).function_name for i in ids]
    plan = plan_cells([c.source for c in cells], functions)
    for index, (cell, needed) in enumerate(zip(cells, plan, strict=True)):
        if not needed:
            skipped += 1
            continue
        outcome = shell.run_cell(cell.source, store_history=False)
        if not outcome.success:
            err = outcome.error_in_exec or outcome.error_before_exec
            errors.append({"cell": index + 1, "error": type(err).__name__})
    timings["cells"] = time.time()
    watch.find_copies([c.source for c in cells])
    report: dict = {"cell_errors": errors, "skipped_cells": skipped, "exercises": {},
                    "borrowed": {}}
    for exercise_id in ids:
        exercise = get(exercise_id)
        name = exercise.function_name
        borrowed = None
        if name in shell.user_ns:
            function = shell.user_ns[name]
            borrowed = watch.borrowed(function)
            if borrowed is None:
                reached = len(REACHED)
                with watch.watching() as watching:
                    observed = observe_all(exercise, function, case_limit)
                if watching.ran is not None:
                    borrowed = ("calls", watching.ran)
                elif len(REACHED) > reached:
                    # A withheld answer function (the course copy holds no
                    # answer) was asked for while the checks ran: the
                    # learner's function borrowed one, which computed nothing.
                    borrowed = ("calls", REACHED[reached])
            else:  # scored 0 whatever it returns: not worth the checks' time
                observed = [Observation("skipped")] * len(exercise.cases)
        else:
            observed = [Observation("missing")] * len(exercise.cases)
        report["exercises"][exercise_id] = [o.to_json() for o in observed]
        if borrowed is not None:
            how, reference = borrowed
            report["borrowed"][exercise_id] = {"how": how, "reference": reference}
    timings["checks"] = time.time()
    report["timings"] = timings
    partial = outbox / "result.partial"
    partial.write_text(json.dumps(report), encoding="utf-8")
    partial.replace(outbox / "result.json")
    sys.stdout.flush()
    # Skip interpreter teardown: a learner's atexit hook or thread cannot
    # change the report any more, and exiting is faster.
    os._exit(0)


def _main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="one submission (internal)")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--outbox", type=Path, required=True)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--case-time-limit", type=float, default=None)
    parser.add_argument("--modules", nargs="*", default=[])
    parser.add_argument("--exercises", nargs="+", required=True)
    args = parser.parse_args()
    run_submission(args.notebook, args.outbox, args.exercises, args.modules,
                   args.memory_mb, args.case_time_limit)


if __name__ == "__main__":
    _main()
