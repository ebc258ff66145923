"""Where a compiled step spends its time: a trace of it, read back op by op.

``jax.profiler.trace`` records what the device ran; ``jax.profiler.ProfileData``
reads the trace back in Python. On a TPU the device's plane has a line of XLA
operations, one event per operation run, named as the compiled program names
its instructions (``fusion.12``, ``copy.3``, ``convolution.7``). The compiled
program's text (``compiled.as_text()``) gives each instruction its opcode and
its ``op_name``: the path of JAX's name stack, which holds the scopes the model
opens (``jax.named_scope``: ``attention``, ``scores``, ``mlp``, ``vocab``,
``optimizer``). Together they say which part of the step each microsecond
belongs to.

* :func:`trace_ops` runs a function under the profiler and returns the time
  of each operation (its own time: an operation that contains others, a loop
  say, counts only the time none of them ran);
* :func:`instructions` reads the compiled program's instructions;
* :func:`part_of` and :func:`parts` sort the operations into :data:`PARTS`.

On a CPU the same reader finds the operations on the host's threads (XLA's
CPU runtime names its thunks after the instructions too), so the program that
uses it can be tested anywhere; a CPU's times say nothing about a chip.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["PARTS", "instructions", "part_of", "parts", "trace_ops"]

#: The parts of a training step a profile is sorted into, in the order the
#: stacked bars draw them. ``attention`` is the whole attention sub-block (its
#: norm, projections, rotation and scores); ``copies`` are the operations that
#: only move bytes (``copy``, ``transpose``), wherever they are.
PARTS = ("attention", "mlp", "vocab", "optimizer", "copies", "other")

#: The scopes the model opens, the part each names (the first found wins).
_SCOPES = (("optimizer", "optimizer"), ("vocab", "vocab"), ("mlp", "mlp"),
           ("attention", "attention"))

_COPIES = {"copy", "copy-start", "copy-done", "transpose"}

#: Words in the names of attention's Pallas kernels.
_KERNELS = ("splash", "flash", "attention")

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"(?:^|[\s}])([a-z][a-z0-9\-]*)\(")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


def instructions(hlo_text: str) -> dict[str, dict[str, str]]:
    """Return each instruction of a compiled program: its opcode and ``op_name``.

    Parameters
    ----------
    hlo_text : str
        ``compiled.as_text()``: the optimized HLO module.

    Returns
    -------
    dict
        Instruction name (as a profile names its event) to
        ``{"opcode", "op_name"}``; ``op_name`` is ``""`` where the compiler
        left no metadata.
    """
    found: dict[str, dict[str, str]] = {}
    for line in hlo_text.splitlines():
        match = _INSTRUCTION.match(line)
        if not match or line.lstrip().startswith(("HloModule", "//")):
            continue
        name, rest = match.groups()
        # The opcode follows the result's shape; a tuple shape has spaces and
        # parentheses of its own, so take the first "word(" after the shape.
        body = rest.split(", metadata=")[0]
        opcode = _OPCODE.search(body)
        op_name = _OP_NAME.search(rest)
        found[name] = {"opcode": opcode.group(1) if opcode else "",
                       "op_name": op_name.group(1) if op_name else ""}
    return found


def part_of(name: str, opcode: str, op_name: str) -> str:
    """Return the part of :data:`PARTS` one operation belongs to.

    An operation that only moves bytes is a copy wherever it is; an
    attention kernel (a custom call named after it) is attention; otherwise
    the model's scopes named in its ``op_name`` decide (the optimizer's and
    the vocabulary's first: they hold no other).
    """
    if opcode in _COPIES or name.split(".")[0] in _COPIES:
        return "copies"
    # A Pallas kernel is a custom call that keeps no op_name; it is known by
    # the name its kernel gave it (splash_mha_fwd..., flash_attention...).
    if opcode == "custom-call" and any(word in name for word in _KERNELS):
        return "attention"
    path = op_name.lower()
    for scope, part in _SCOPES:
        if re.search(rf"(^|[/(]){scope}([/)]|$)", path):
            return part
    return "other"


def _own_times(events: Iterable[tuple[str, int, int]]) -> dict[str, list[int]]:
    """Return each name's own nanoseconds and count, from (name, start, end) events.

    Events on one line nest (a loop's event holds its body's); an event's own
    time is its duration less that of the events directly inside it.
    """
    totals: dict[str, list[int]] = {}
    stack: list[list[Any]] = []          # [name, end, own]

    def close(item: list[Any]) -> None:
        row = totals.setdefault(item[0], [0, 0])
        row[0] += item[2]
        row[1] += 1

    for name, start, end in sorted(events, key=lambda e: (e[1], -e[2])):
        while stack and stack[-1][1] <= start:
            close(stack.pop())
        if stack:
            stack[-1][2] -= end - start
        stack.append([name, end, end - start])
    while stack:
        close(stack.pop())
    return totals


def _op(event_name: str) -> str:
    """Return the instruction an event names.

    A TPU's events are named by the instruction's whole text
    (``fusion.12 = bf16[...] fusion(...)``), a CPU's by its name alone.
    """
    return event_name.split(" = ", 1)[0].strip().lstrip("%")


def _device_lines(data: Any) -> list[Any]:
    """Return the lines of XLA operations of the first accelerator's plane."""
    for plane in data.planes:
        if plane.name.startswith("/device:") and "CPU" not in plane.name:
            lines = [line for line in plane.lines if line.name == "XLA Ops"]
            if lines:
                return lines
    return []


def trace_ops(run: Callable[[], Any], known: Iterable[str]) -> dict[str, list[int]]:
    """Run ``run()`` under the profiler; return each operation's own time.

    Parameters
    ----------
    run : callable
        Runs the steps to profile and waits for them
        (``jax.block_until_ready``).
    known : iterable of str
        The compiled program's instruction names (:func:`instructions`). On
        a CPU, where XLA's operations share the host's threads with
        everything else, only events of these names are kept.

    Returns
    -------
    dict
        Operation name to ``[nanoseconds, count]`` over the whole run.
    """
    import jax

    names = set(known)
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder):
            run()
        found = sorted(Path(folder).rglob("*.xplane.pb"))
        if not found:
            raise RuntimeError("the profiler wrote no trace")
        data = jax.profiler.ProfileData.from_file(str(found[-1]))
    lines = _device_lines(data)
    totals: dict[str, list[int]] = {}
    if lines:
        for line in lines:
            events = [(_op(e.name), int(e.start_ns), int(e.start_ns + e.duration_ns))
                      for e in line.events]
            for name, (ns, count) in _own_times(events).items():
                row = totals.setdefault(name, [0, 0])
                row[0] += ns
                row[1] += count
        return totals
    for plane in data.planes:               # a CPU: the runtime's threads
        for line in plane.lines:
            for event in line.events:
                name = _op(event.name)
                if name in names:
                    row = totals.setdefault(name, [0, 0])
                    row[0] += int(event.duration_ns)
                    row[1] += 1
    return totals


def parts(ops: dict[str, list[int]], program: dict[str, dict[str, str]],
          steps: int) -> dict[str, float]:
    """Return the seconds per step of each part of :data:`PARTS`.

    Parameters
    ----------
    ops : dict
        :func:`trace_ops`'s result (or a stored copy of it).
    program : dict
        :func:`instructions` of the compiled step.
    steps : int
        How many steps the trace held.
    """
    seconds = dict.fromkeys(PARTS, 0.0)
    for name, (ns, _count) in ops.items():
        info = program.get(name, {"opcode": "", "op_name": ""})
        seconds[part_of(name, info["opcode"], info["op_name"])] += ns / 1e9 / steps
    return seconds
