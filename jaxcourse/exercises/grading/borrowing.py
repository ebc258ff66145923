"""Borrowed answers: a learner's function that is, runs or copies a reference answer.

The reference answers are installed with the course, so a notebook can hand
one in as its own: ``from solutions.bayes import sample_betas``, the same
through ``importlib`` or ``getattr``, a function of its own that calls it, or
the reference's source read from the installed file and run with ``exec``.
Each is a *borrowed* answer, and scores 0. A reference the learner pasted
into a cell is not borrowed: its code is written in the notebook, and the
grader lists it for the teacher instead
(:func:`jaxcourse.exercises.grading.tables.class_flags`).

:class:`Watch` looks, inside the submission's process
(:mod:`jaxcourse.exercises.grading.sandbox`), in three ways:

- **what the function is**: the learner's object, or what it wraps
  (``functools.wraps``, ``jax.jit``, ``functools.partial``, a bound method),
  is a reference, or runs a reference's code object;
- **what it runs**: while the checks call it, a profile hook
  (:func:`sys.setprofile`) notes every time a reference's code starts, and
  counts it when the nearest caller outside the libraries is not the course's
  own code: the learner's wrapper, ``jax.vmap`` inside it, a lambda.
  References that the checks' own machinery calls, or that one reference
  calls inside another, do not count. JAX's caches are cleared first, so a
  trace made while the cells ran is made again, in sight;
- **a copy**: a function anywhere in the process whose bytecode and constants
  equal a reference's, which the notebook's cells do not define (so it came
  from the installed file, through ``exec``): it counts as the reference,
  both as the learner's function and when it runs.

Where a grade is at stake none of this decides it: the grader's submissions
run against a copy of the course without any answer
(:mod:`jaxcourse.exercises.authoring.answerless`), where a borrowed reference raises
instead of answering, however it was reached (a course helper that calls
it, this module switched off from a cell, its source ``exec``'d). What this
module finds is the reason shown, and self-study's.

Only the registered reference functions of the exercises being graded count:
helpers that notebooks import from the course (meshes, data, ``loss_fn``)
never do. Like the grader's guard, this is a tripwire for handing in the
reference, not a wall: code written to hide the reference (its source
rewritten before ``exec``, outputs computed while the cells ran) passes, and
what runs in another process (chapter 8's launched cases, a data loader's
workers) or in a thread started before the checks is seen only for what the
function is, not for what it runs.

The hook is :func:`sys.setprofile` (the course runs on Python 3.11, before
``sys.monitoring``): it costs every Python call while it is set, a third
more time in the checks of chapter 3, so it is set only while an exercise's
checks run.

The grading process turns what the submission reported into each exercise's
feedback with :func:`verdicts`.
"""

from __future__ import annotations

import dis
import functools
import gc
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ...messages import message
from ..checking.registry import get

__all__ = ["HOWS", "Watch", "verdicts"]

#: How an answer borrowed its reference: it is the reference (or wraps it),
#: it runs the reference's code, it is the reference's code run from the
#: installed file, or it uses a library function that returns the answer
#: (:mod:`jaxcourse.exercises.checking.library_answers`, found by the grader).
HOWS = ("is", "calls", "copy", "library")
_CHAIN = 20  # wrappers followed at most (a learner's object may wrap itself)


def _nested(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code objects of the functions defined inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested(const)


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_NAMED = frozenset(dis.hasname)


def _shape(code: types.CodeType) -> tuple:
    """Return a cheap first look at a function: its arguments, the names it reads."""
    return (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            code.co_names)


def _key(code: types.CodeType) -> tuple:
    """Return what a function's code does, without where it was written.

    Its instructions, with the names it reads, its constants (nested code by
    its own key) and its jumps by instruction, not by byte: not the file, the
    line numbers, the docstring or the local variables' names. The same
    source compiles to slightly different bytes with or without the imports
    beside it (Python 3.11 calls ``jnp.exp(x)`` through ``LOAD_METHOD`` only
    when ``jnp`` is not imported in the same text), so a method's load counts
    as an attribute's: the reference run from its source by ``exec``, alone
    or with its whole file, has the key of the reference.
    """
    instructions = [i for i in dis.get_instructions(code)
                    if i.opname not in ("EXTENDED_ARG", "NOP", "RESUME")]
    index = {i.offset: n for n, i in enumerate(instructions)}
    steps = []
    for instruction in instructions:
        name, value = instruction.opname, instruction.argval
        if name == "LOAD_METHOD":
            name = "LOAD_ATTR"
        if instruction.opcode in _JUMPS:
            value = index.get(value, value)
        elif instruction.opcode in _NAMED:
            pass  # the name itself (LOAD_GLOBAL's flag for a call is left out)
        elif isinstance(value, types.CodeType):
            value = _key(value)
        elif instruction.opcode in dis.hasconst:
            value = (type(value).__name__, repr(value))
        else:
            value = instruction.arg
        steps.append((name, value))
    return (_shape(code), tuple(steps))


def _chain(obj: Any) -> list[Any]:
    """``obj`` and what it wraps, outermost first."""
    found: list[Any] = []
    while obj is not None and len(found) < _CHAIN and not any(
            obj is seen for seen in found):
        found.append(obj)
        try:
            if isinstance(obj, functools.partial):
                obj = obj.func
            elif isinstance(obj, types.MethodType):
                obj = obj.__func__
            elif isinstance(obj, types.FunctionType):
                obj = getattr(obj, "__wrapped__", None)
            else:  # jax.jit's object, a callable instance
                inner = getattr(obj, "__wrapped__", None)
                if inner is None and callable(obj):
                    inner = type(obj).__call__
                obj = inner
        except Exception:  # a learner's __getattr__: stop here
            break
    return found


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    folders = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders |= {sys.prefix, sys.base_prefix, sys.exec_prefix}
    # Not "/" (a Python installed at the root): everything would be a library.
    real = {os.path.realpath(f) for f in folders if f}
    return tuple(f + os.sep for f in real if f != os.sep)


class Watch:
    """What one submission's exercises borrow, seen from inside its process.

    Build it after the course's modules are imported and before the
    notebook's cells run, so that the references it holds are the course's
    own, whatever the cells rebind or re-register.

    Parameters
    ----------
    references : mapping of str to callable
        Exercise id -> its registered reference.
    course : sequence of str
        The folders of the course's code (:func:`jaxcourse.course.content_folders`
        in this process): code there calling a reference is the checks'
        machinery, or one reference calling another.
    """

    def __init__(self, references: Mapping[str, Callable],
                 course: Sequence[str | os.PathLike[str]]) -> None:
        self._objects: list[tuple[Any, str]] = []
        # By identity: a code object compares equal to another one with the
        # same text at the same lines (a whole file run by exec), which is a
        # copy, told apart below.
        self._codes: dict[int, str] = {}
        self._keep: list[types.CodeType] = []  # keeps the ids above valid
        self._keys: dict[tuple, str] = {}
        for reference in references.values():
            name = self._name(reference)
            for obj in _chain(reference):
                self._objects.append((obj, name))
                code = getattr(obj, "__code__", None)
                # Only code written in the course: a decorator's wrapper (the
                # one jax.pmap returns) is shared with the learner's own.
                if isinstance(code, types.CodeType) and self._in(code, course):
                    self._keys.setdefault(_key(code), name)
                    self._watch(code, name)
        self._course = tuple(os.path.realpath(f) + os.sep for f in course)
        self._libraries = _library_prefixes()
        self._kinds: dict[str, str] = {}
        self._copies: dict[int, str] = {}
        self._hits: list[str] = []

    @staticmethod
    def _name(reference: Callable) -> str:
        inner = _chain(reference)[-1]
        module = getattr(inner, "__module__", None) or ""
        qualname = getattr(inner, "__qualname__", None) or repr(inner)
        return f"{module}.{qualname}" if module else qualname

    @staticmethod
    def _in(code: types.CodeType, folders: Sequence[str | os.PathLike[str]]) -> bool:
        path = os.path.realpath(code.co_filename)
        return any(path.startswith(os.path.realpath(f) + os.sep) for f in folders)

    def _watch(self, code: types.CodeType, name: str) -> None:
        for inner in _nested(code):
            if id(inner) not in self._codes:
                self._codes[id(inner)] = name
                self._keep.append(inner)

    # ---- copies ---------------------------------------------------------------

    def find_copies(self, sources: Sequence[str]) -> None:
        """Find the references' copies that the notebook's cells do not define.

        Call it once the cells have run. Every live function whose code has a
        reference's key (:func:`_key`) but is not the reference's own code is a
        copy; those whose code the cells themselves compile to (a reference
        pasted into the notebook) are left alone. The others came from the
        installed file, through ``exec``: they are watched like the reference.
        """
        from ..checking.answers import python_sources

        shapes = {key[0] for key in self._keys}
        written = set()
        for source in python_sources(sources):
            try:
                compiled = compile(source, "<cell>", "exec")
            except (SyntaxError, ValueError):
                continue
            written.update(_key(c) for c in _nested(compiled) if _shape(c) in shapes)
        for obj in gc.get_objects():
            if type(obj) is not types.FunctionType:
                continue
            code = obj.__code__
            if id(code) in self._codes or _shape(code) not in shapes:
                continue
            try:
                key = _key(code)
            except Exception:  # code a learner assembled by hand: not a copy
                continue
            name = self._keys.get(key)
            if name is not None and key not in written:
                self._copies[id(code)] = name
                self._watch(code, name)

    # ---- what the learner's object is ----------------------------------------

    def borrowed(self, function: Any) -> tuple[str, str] | None:
        """Return ``(how, reference)`` if ``function`` is a reference or a copy.

        ``how`` is ``"is"`` or ``"copy"`` (see :data:`HOWS`); ``None`` when
        neither it nor anything it wraps is.
        """
        for obj in _chain(function):
            for reference, name in self._objects:
                if obj is reference:
                    return "is", name
            try:
                code = getattr(obj, "__code__", None)
            except Exception:  # a learner's __getattr__: not a function of ours
                continue
            if isinstance(code, types.CodeType):
                if id(code) in self._copies:
                    return "copy", self._copies[id(code)]
                if id(code) in self._codes:
                    return "is", self._codes[id(code)]
        return None

    # ---- what it runs ----------------------------------------------------------

    def _kind(self, filename: str) -> str:
        kind = self._kinds.get(filename)
        if kind is None:
            path = os.path.realpath(filename) if os.path.isabs(filename) else filename
            if path.startswith(self._course):
                kind = "course"
            elif path.startswith(self._libraries) or filename.startswith("<frozen "):
                kind = "library"
            else:  # a notebook cell, exec'd text, a file the learner wrote
                kind = "learner"
            self._kinds[filename] = kind
        return kind

    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        # Called for every call and return while it is set: the common case
        # must cost one comparison and one lookup.
        if event != "call":
            return
        name = self._codes.get(id(frame.f_code))
        if name is None:
            return
        caller = frame.f_back
        while caller is not None:
            kind = self._kind(caller.f_code.co_filename)
            if kind == "learner":
                self._hits.append(name)
                return
            if kind == "course":
                return  # the checks' machinery, or a reference calling another
            caller = caller.f_back

    def watching(self) -> _Watching:
        """Return a context in which every reference's run is noted.

        Its ``ran`` is the reference that the learner's code ran first, or
        ``None``. JAX's caches are cleared on entry: a function jitted while
        the cells ran would otherwise not be traced again, and the reference
        it calls would not run in sight.
        """
        return _Watching(self)


class _Watching:
    """The profile hook, set for one exercise's checks (:meth:`Watch.watching`)."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.ran: str | None = None

    def __enter__(self) -> _Watching:
        try:
            import jax

            jax.clear_caches()
        except Exception:  # no JAX, or an old one: nothing cached to miss
            pass
        self.watch._hits.clear()
        threading.setprofile(self.watch._profile)
        sys.setprofile(self.watch._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        self.ran = self.watch._hits[0] if self.watch._hits else None


# --------------------------------------------------------------------------
# In the grading process: what the submission reported, as feedback
# --------------------------------------------------------------------------


def verdicts(report: dict, ids: Sequence[str]) -> dict[str, str]:
    """Return, for each exercise the submission borrowed, the sentence that says so.

    ``report["borrowed"]`` maps an exercise id to ``{"how": ..., "reference":
    ...}``; anything else in it (a malformed entry, an unknown id) is ignored.
    The sentence is in the exercise's language.
    """
    found = report.get("borrowed") if isinstance(report, dict) else None
    if not isinstance(found, dict):
        return {}
    sentences = {}
    for exercise_id in ids:
        entry = found.get(exercise_id)
        if not isinstance(entry, dict):
            continue
        how, reference = entry.get("how"), entry.get("reference")
        if how not in HOWS or not isinstance(reference, str):
            continue
        exercise = get(exercise_id)
        sentences[exercise_id] = message(
            f"grading_borrowed_{how}", exercise.language,
            name=exercise.function_name, reference=reference[:120])
    return sentences
