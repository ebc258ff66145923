r"""The collectives of a program compiled for a TPU slice, read as the TPU prints them.

:func:`jaxcourse.scaling.compiled_collectives` reads XLA:CPU's HLO, where
each collective is one instruction of the kind the program asked for. The
TPU compiler (libtpu) prints the same step otherwise, and a reader that
counts instructions miscounts it:

- **Async chains.** An all-gather the compiler overlaps with the matrix
  product that uses it is split into a start, continuations (each fused
  with a piece of the product) and a done; each piece prints the whole
  ``all-gather`` instruction again, all with one ``chain_id``. Other
  collectives run async with an ``async_collective_name``.
- **A gather done as an all-reduce.** A small piece (a norm's scale) is
  written into zeros (``dynamic-update-slice``) and all-reduced: the sum is
  the gathered array, at twice a gather's bytes on a ring.
- **A reduce-scatter done as an all-reduce.** The gradient is all-reduced
  whole and each device keeps its slice (the slice fused into the optimizer's
  update): twice a reduce-scatter's bytes.
- **A reduce-scatter fusion of a padded operand.** Over a group that is
  not one ring of the torus (16 devices of a v5p 4x4x4 cube), the gradient
  is padded (8,192 rows to 8,448), reduce-scattered by a ``kCustom`` fusion
  (``all-reduce-scatter``: a pad, an all-reduce and a slice, run as a
  reduce-scatter), and each device's piece set right by
  ``collective-permute``\ s of it, or of slices of it, to the next devices.
  The same on 8 chips where the rows do not split into whole tiles (96
  rows over 8 devices: 128 padded rows, 16 a device).
- **Combined operands.** Small all-reduces are combined into one instruction
  over a tuple; each operand is counted on its own, as on the CPU.
- **Loop bodies.** The blocks' ``scan`` is a ``while`` loop; its body is
  printed once and runs once per layer.

:func:`tpu_collectives` reads each *logical* collective once, with the form
it took and the mesh axes its replica groups span. :mod:`.tpu_matching`
lays them beside a prediction and names the reason for every byte that
differs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxcourse.scaling.communication import KINDS, ring_bytes, shape_bytes

__all__ = ["TpuCollective", "tpu_collectives"]

class TpuCollective(NamedTuple):
    """One logical collective of a compiled program.

    Attributes
    ----------
    kind : str
        The instruction XLA printed (one of :data:`jaxcourse.scaling.KINDS`).
    nbytes : int
        The whole operand's bytes, as :class:`jaxcourse.scaling.Collective`
        counts them (an all-gather's output, a reduce-scatter's input).
    group : int
        Devices in each replica group.
    axes : str
        The mesh axes the groups span, joined by ``","`` (``"data"``,
        ``"model"``, ``"data,model"``).
    form : str
        How the TPU printed it: ``"sync"``, ``"async"``, ``"async chain of
        N"`` (start, continuations, done), ``"combined, ..."`` (one operand of a
        tuple); for an all-reduce, ``"zero-padded"`` (of a piece written into
        zeros: a gather) or ``"sliced after"`` (each use keeps one device's
        piece: a reduce-scatter).
    in_loop : bool
        Inside a ``while`` loop's body (printed once, run once per trip).
    moved : int
        Where the TPU moves another operand than ``nbytes`` (a padded one),
        its bytes; 0 where it moves ``nbytes``.
    """

    kind: str
    nbytes: int
    group: int
    axes: str
    form: str
    in_loop: bool
    moved: int = 0

    @property
    def role(self) -> str:
        """What it does: a zero-padded all-reduce gathers, one sliced after scatters."""
        if "zero-padded" in self.form:
            return "all-gather"
        return "reduce-scatter" if "sliced after" in self.form else self.kind

    def sent(self) -> float:
        """Bytes one device sends for it, in the form the TPU runs it."""
        return ring_bytes(self.kind, self.moved or self.nbytes, self.group)


class _Instruction(NamedTuple):
    name: str
    shape: str
    opcode: str
    operands: list[str]
    attrs: str
    args: str


_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s")
_DEFINE = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*")
_CALLEE = re.compile(r"(?:calls|to_apply|body|condition)=%([\w.\-]+)")
_CALLEES = re.compile(r"(?:branch_computations|called_computations)=\{([^}]*)\}")


def _closing(text: str, start: int) -> int:
    """Return the index just past the bracket that closes ``text[start]``."""
    depth = 0
    pairs = {"(": ")", "{": "}", "[": "]"}
    for i in range(start, len(text)):
        if text[i] in pairs:
            depth += 1
        elif text[i] in pairs.values():
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _parse_instruction(line: str) -> _Instruction | None:
    found = _DEFINE.match(line)
    if not found:
        return None
    rest = line[found.end():]
    if rest.startswith("("):
        end = _closing(rest, 0)
    else:
        end = rest.find(" ")
    shape, rest = rest[:end], rest[end:].lstrip()
    opcode_match = re.match(r"([\w\-]+)\(", rest)
    if not opcode_match:
        return None
    close = _closing(rest, opcode_match.end() - 1)
    args = rest[opcode_match.end():close - 1]
    return _Instruction(found.group(1), shape, opcode_match.group(1),
                        re.findall(r"%([\w.\-]+)", args), rest[close:], args)


def _parse_module(text: str) -> tuple[dict[str, list[_Instruction]], str]:
    """Return each computation's instructions, and the entry computation's name.

    An instruction is one indented line, and the unindented lines after it:
    a Pallas kernel's custom call (the splash attention kernel) prints its
    ``backend_config`` over several lines, one of which starts with ``}}``.
    A computation ends at a line that is ``}`` alone.
    """
    computations: dict[str, list[_Instruction]] = {}
    entry, current = "", None
    pending: list[str] = []

    def flush() -> None:
        if current is not None and pending:
            parsed = _parse_instruction("\n".join(pending))
            if parsed:
                computations[current].append(parsed)
        pending.clear()

    for line in text.splitlines():
        if line.rstrip() == "}":
            flush()
            current = None
            continue
        if line and not line[0].isspace():
            header = _HEADER.match(line) if current is None else None
            if header and line.rstrip().endswith("{"):
                current = header.group(1)
                computations[current] = []
                if line.startswith("ENTRY"):
                    entry = current
            elif pending:
                pending.append(line)      # the instruction above goes on
            continue
        if current is None:
            continue
        flush()
        pending.append(line)
    flush()
    return computations, entry


def _loop_bodies(computations: dict[str, list[_Instruction]], entry: str) -> set[str]:
    """Return the computations that run inside a ``while`` loop's body."""
    inside: set[str] = set()
    todo = [(entry, False)]
    seen: set[tuple[str, bool]] = set()
    while todo:
        name, looped = todo.pop()
        if (name, looped) in seen or name not in computations:
            continue
        seen.add((name, looped))
        if looped:
            inside.add(name)
        for ins in computations[name]:
            for callee in _CALLEE.findall(ins.attrs):
                body = ins.opcode == "while" and f"body=%{callee}" in ins.attrs
                todo.append((callee, looped or body))
            for group in _CALLEES.findall(ins.attrs):
                todo += [(c, looped) for c in re.findall(r"%([\w.\-]+)", group)]
    return inside


def _replica_groups(attrs: str, devices: int) -> list[list[int]]:
    """Return the replica groups an instruction names, as lists of device ids.

    XLA prints them as explicit lists (``{{0,1},{2,3}}``) or as an iota
    tile (``[2,4]<=[8]``, maybe transposed: ``[2,4]<=[4,2]T(1,0)``); a
    collective-permute names ``source_target_pairs`` instead.
    """
    if (found := re.search(r"replica_groups=\{((?:\{[\d,]*\},?)*)\}", attrs)):
        groups = [[int(d) for d in g.split(",") if d]
                  for g in re.findall(r"\{([\d,]*)\}", found.group(1))]
        return [g for g in groups if g] or [list(range(devices))]
    if (found := re.search(
            r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", attrs)):
        out = [int(d) for d in found.group(1).split(",")]
        dims = [int(d) for d in found.group(2).split(",")]
        ids = np.arange(math.prod(dims)).reshape(dims)
        if found.group(3):
            ids = ids.transpose([int(d) for d in found.group(3).split(",")])
        return ids.reshape(out[0], -1).tolist()
    if (found := re.search(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", attrs)):
        return [[int(a), int(b)] for a, b in re.findall(r"\{(\d+),(\d+)\}",
                                                         found.group(1))]
    return [list(range(devices))]


def _axes_of(groups: list[list[int]], mesh_shape: Sequence[int],
             axis_names: Sequence[str]) -> str:
    """Return the mesh axes along which the devices of some group differ.

    A device's id is its position in the mesh, row-major (the program's
    device assignment is the mesh's devices in order).
    """
    varying: set[str] = set()
    for group in groups:
        coords = np.array(np.unravel_index(np.array(group), tuple(mesh_shape)))
        varying |= {axis_names[a] for a in range(len(mesh_shape))
                    if len(set(coords[a].tolist())) > 1}
    return ",".join(a for a in axis_names if a in varying)


def tpu_collectives(compiled: Any, mesh_shape: Sequence[int],
                    axis_names: Sequence[str] = ("data", "model")
                    ) -> list[TpuCollective]:
    """Return each logical collective of a compiled program once, with its form.

    Parameters
    ----------
    compiled : jax.stages.Compiled or str
        A compiled program (for a TPU slice: :func:`jaxcourse.slices.slice_mesh`,
        :func:`~.planning.compile_step` with a slice's devices), or its HLO text.
    mesh_shape, axis_names : sequence
        The mesh it was compiled on: device ``i`` of a replica group is the
        mesh's ``i``-th device in row-major order.

    Returns
    -------
    list of TpuCollective
        In the order the HLO prints them. The pieces of an async chain (one
        ``chain_id``) are one collective; each operand of a combined
        all-reduce is one; collectives over one device are left out. On
        XLA:CPU's HLO the forms are all ``"sync"`` or ``"combined"``.
    """
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    computations, entry = _parse_module(text)
    looped = _loop_bodies(computations, entry)
    callers = {callee: ins for instructions in computations.values()
               for ins in instructions for callee in _CALLEE.findall(ins.attrs)}
    devices = math.prod(mesh_shape)
    pieces: Counter = Counter()
    chained: list[tuple[tuple[str, str], str, _Instruction, list[_Instruction]]] = []
    for name, instructions in computations.items():
        for ins in instructions:
            kind = ins.opcode.removesuffix("-start")
            if kind not in KINDS:
                continue
            chain = re.search(r'chain_id="(\d+)"', ins.attrs)
            channel = re.search(r"channel_id=(\d+)", ins.attrs)
            key = (f"chain {chain.group(1)}", channel.group(1) if channel else "") \
                if chain else (name, ins.name)
            pieces[key] += 1
            if pieces[key] > 1:
                continue
            chained.append((key, name, ins, instructions))
    found = []
    for key, name, ins, instructions in chained:
        kind = ins.opcode.removesuffix("-start")
        groups = _replica_groups(ins.attrs, devices)
        group = len(groups[0])
        axes = _axes_of(groups, mesh_shape, axis_names)
        if not axes:
            continue  # over one device: nothing moves
        form = "async" if "async_collective_name" in ins.attrs else "sync"
        if pieces[key] > 1 or key[0].startswith("chain"):
            form = f"async chain of {pieces[key]}"
        arrays = re.findall(r"(\w+)\[([\d,]*)\]", ins.shape)
        if ins.opcode == "all-gather-start":
            arrays = arrays[len(arrays) // 2:]     # (operands, outputs)
        elif ins.opcode == "collective-permute-start":
            arrays = arrays[:1]                    # (operand, output, contexts)
        defined = {i.name: i for i in instructions}
        fusion = _scatter_fusion(name, callers)
        for index, (dtype, dims) in enumerate(arrays):
            mine, moved, out_kind = form, 0, kind
            operand = defined.get(ins.operands[index]) if index < len(ins.operands) \
                else None
            nbytes = shape_bytes(f"{dtype}[{dims}]")
            if kind == "all-reduce" and fusion:
                # Run as a reduce-scatter of the padded operand; the
                # gradient is the fusion's input, before the pad.
                mine, out_kind = "reduce-scatter fusion, padded", "reduce-scatter"
                moved = nbytes
                if operand is not None and operand.opcode == "pad":
                    nbytes = shape_bytes(defined[operand.operands[0]].shape) \
                        if operand.operands[0] in defined else nbytes
                moved = 0 if moved == nbytes else moved
            elif kind == "collective-permute" and _slices_a_scatter(
                    operand, defined, computations):
                mine = "re-aligns a padded reduce-scatter"
            elif kind == "all-reduce" and _writes_into_zeros(operand, computations):
                mine = "zero-padded"
            elif kind == "all-reduce" and _sliced_after(
                    ins, index if len(arrays) > 1 else None, instructions, group,
                    computations):
                mine = "sliced after"
            if len(arrays) > 1:
                mine = f"combined, {mine}"
            if kind == "reduce-scatter":
                nbytes *= group
            pairs = kind == "collective-permute"
            found.append(TpuCollective(out_kind, nbytes, 2 if pairs else group, axes,
                                       mine, name in looped, moved))
    return found


def _scatter_fusion(name: str, callers: dict[str, _Instruction]) -> bool:
    """Whether computation ``name`` is the TPU's reduce-scatter fusion.

    A ``kCustom`` fusion calling an ``all-reduce-scatter`` computation, run by
    libtpu's ``...AllReduceScatterFusion`` emitter (its ``backend_config``).
    """
    caller = callers.get(name)
    return caller is not None and caller.opcode == "fusion" and (
        name.startswith("all-reduce-scatter")
        or "AllReduceScatterFusion" in caller.attrs)


#: Instructions that move or cut data without computing on it.
_MOVES = ("slice", "slice-start", "slice-done", "copy", "copy-start", "copy-done",
          "bitcast", "get-tuple-element", "concatenate")


def _slices_a_scatter(ins: _Instruction | None, defined: dict[str, _Instruction],
                      computations: dict[str, list[_Instruction]]) -> bool:
    """Whether ``ins`` is a piece of a reduce-scatter fusion's output.

    The fusion's output itself, or what slices, copies or concatenates it
    (libtpu moves it in asynchronous slices and joins them with a
    ``ConcatBitcast`` custom-call before the collective-permute).
    """
    todo, seen = [ins], set()
    while todo:
        ins = todo.pop()
        if ins is None or ins.name in seen:
            continue
        seen.add(ins.name)
        if ins.opcode == "fusion":
            called = _CALLEE.search(ins.attrs)
            if called and (called.group(1).startswith("all-reduce-scatter")
                           or "AllReduceScatterFusion" in ins.attrs):
                return True
        elif ins.opcode in _MOVES or (ins.opcode == "custom-call"
                                      and "ConcatBitcast" in ins.attrs):
            todo += [defined.get(op) for op in ins.operands]
    return False


def _elements(shape: str) -> list[int]:
    return [math.prod(int(d) for d in dims.split(",") if d)
            for _, dims in re.findall(r"(\w+)\[([\d,]*)\]", shape)]


def _sliced_after(ins: _Instruction, index: int | None,
                  instructions: list[_Instruction], group: int,
                  computations: dict[str, list[_Instruction]]) -> bool:
    """Whether every use of an all-reduce's result keeps one device's piece of it.

    The reduce-scatter done as an all-reduce: each result (each tuple
    element, through its ``get-tuple-element``) is read only by a
    ``dynamic-slice`` of at most ``1/group`` of it, or by a fusion whose
    computation reads it only so (the optimizer's update of the device's
    piece; the scan writing the piece into its stacked gradients).
    """
    sizes = _elements(ins.shape)
    if group <= 1 or not sizes:
        return False
    if index is None:
        values = {ins.name: sizes[0]}
    else:
        # A tuple's element ``index``: read through its get-tuple-element.
        wanted = re.compile(rf"index={index}\b")
        values = {other.name: sizes[index] for other in instructions
                  if other.opcode == "get-tuple-element"
                  and other.operands == [ins.name] and wanted.search(other.attrs)}
    users = [(u, v, size) for v, size in values.items() for u in instructions
             if u.opcode != "get-tuple-element" and v in u.operands]
    return bool(users) and all(_slices(u, v, size, group, instructions, computations)
                               for u, v, size in users)


_PASS_THROUGH = ("bitcast", "convert", "copy", "reshape")


def _slices(user: _Instruction, value: str, size: int, group: int,
            instructions: list[_Instruction],
            computations: dict[str, list[_Instruction]]) -> bool:
    """Whether ``user`` reads ``value`` (of ``size`` elements) only as a piece."""
    if user.opcode in _PASS_THROUGH:
        return all(_slices(u, user.name, size, group, instructions, computations)
                   for u in instructions if user.name in u.operands) and any(
                       user.name in u.operands for u in instructions)
    if user.opcode == "dynamic-slice":
        return user.operands[0] == value and max(_elements(user.shape)) * group <= size
    if user.opcode != "fusion":
        return False
    called = _CALLEE.search(user.attrs)
    body = computations.get(called.group(1), []) if called else []
    params = {int(i.args): i.name for i in body
              if i.opcode == "parameter" and i.args.isdigit()}
    inner = [params[k] for k, op in enumerate(user.operands)
             if op == value and k in params]
    return bool(inner) and all(
        any(inner_name in u.operands for u in body)
        and all(_slices(u, inner_name, size, group, body, computations)
                for u in body if inner_name in u.operands)
        for inner_name in inner)


def _writes_into_zeros(ins: _Instruction | None,
                       computations: dict[str, list[_Instruction]]) -> bool:
    """Whether ``ins`` writes a piece into a larger array (the padded gather)."""
    if ins is None:
        return False
    if ins.opcode == "dynamic-update-slice":
        return True
    if ins.opcode == "fusion":
        called = _CALLEE.search(ins.attrs)
        body = computations.get(called.group(1), []) if called else []
        return bool(body) and body[-1].opcode == "dynamic-update-slice"
    return False
