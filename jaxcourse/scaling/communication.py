"""Communication: the collectives a layout needs, by reasoning and in the compiled HLO.

:func:`predicted_collectives` lists them from the layout;
:func:`compiled_collectives` reads them from XLA's compiled program; both are
priced by :func:`ring_bytes` (bytes one device sends on a ring) and summed by
:func:`collective_summary`; :func:`collective_steps` turns them into blocks for
:func:`jaxcourse.collectives.draw_steps`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .layouts import check_layout
from .model import F32, Size

__all__ = ["KINDS", "Collective", "collective_steps", "collective_summary",
           "compiled_collectives", "predicted_collectives", "ring_bytes"]


class Collective(NamedTuple):
    """One collective of a program.

    Attributes
    ----------
    kind : str
        ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all`` or
        ``collective-permute``.
    nbytes : int
        The bytes of the whole operand: for an all-gather its output, for a
        reduce-scatter its input, for an all-reduce its input (= output).
    group : int
        The number of devices taking part in each group.
    """

    kind: str
    nbytes: int
    group: int


KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
         "collective-permute")
# XLA's spellings of dtypes, and JAX's where they differ (bool, i32).
_ITEMSIZE = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "f64": 8, "s8": 1,
             "u8": 1, "pred": 1, "s64": 8, "bool": 1, "i32": 4}
_INSTRUCTION = re.compile(
    r"=\s*(?P<shape>\(.*?\)|\S+)\s+(?P<kind>" + "|".join(KINDS) + r")(?:-start)?\(")
_ARRAY = re.compile(r"(\w+)\[([\d,]*)\]")


def shape_bytes(text: str) -> int:
    """Return the bytes of every ``dtype[dims]`` array named in ``text``."""
    total = 0
    for dtype, dims in _ARRAY.findall(text):
        count = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
        total += count * _ITEMSIZE.get(dtype, 4)
    return total


def _group_size(line: str) -> int:
    # The spellings of replica groups in XLA's text: explicit lists
    # {{0,1},{2,3}}; iota tiles [groups,size]<=[n], maybe transposed
    # ([2,4]<=[4,2]T(1,0)); and named mesh axes mesh['a'=4,'b'=2] {'a'}, with
    # the devices' order between them when it is not the identity
    # (mesh['a'=4,'b'=2], device_ids=([2,4]T(1,0)) {'a'}: XLA prints that for
    # a collective it inserts itself, e.g. the gather of a reshard).
    if (found := re.search(r"replica_groups=\{\{([\d,]*)\}", line)):
        return len(found.group(1).split(","))
    if (found := re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)):
        return int(found.group(2))
    if (found := re.search(r"replica_groups=mesh\[([^\]]*)\]"
                           r"(?:,\s*device_ids=\((?:[^()]|\([^()]*\))*\))?"
                           r"\s*\{([^}]*)\}", line)):
        sizes = dict(re.findall(r"'(\w+)'=(\d+)", found.group(1)))
        axes = re.findall(r"'(\w+)'", found.group(2))
        return int(np.prod([int(sizes[a]) for a in axes]))
    if (found := re.search(r"source_target_pairs=\{(.*?)\}\s*[,}]", line)):
        return len(re.findall(r"\{", found.group(1))) or 1
    return 1


def compiled_collectives(compiled: Any) -> list[Collective]:
    """Return every collective operand in a compiled program's HLO, in order.

    ``compiled`` is the result of ``jax.jit(f).lower(*args).compile()``. XLA
    combines small all-reduces into one instruction over a tuple of operands;
    each operand is returned as a collective of its own, since that is what
    the program would do without the combining (and the bytes are the same).
    The shapes XLA prints are per device; the bytes returned are those of the
    whole operand (see :class:`Collective`).
    """
    found = []
    for line in compiled.as_text().splitlines():
        match = _INSTRUCTION.search(line)
        if not match:
            continue
        kind, group = match.group("kind"), _group_size(line)
        if group <= 1:
            continue  # over a mesh axis of size 1: nothing moves
        for dtype, dims in _ARRAY.findall(match.group("shape")):
            out_bytes = shape_bytes(f"{dtype}[{dims}]")
            nbytes = out_bytes * group if kind == "reduce-scatter" else out_bytes
            found.append(Collective(kind, nbytes, group))
    return found


def ring_bytes(kind: str, nbytes: int, group: int) -> float:
    """Return the bytes one device sends for a collective on a ring of ``group``.

    Each device sends ``(n - 1) / n`` of the operand for an all-gather or a
    reduce-scatter (``n - 1`` steps of one ``1/n`` piece), twice that for an
    all-reduce (a reduce-scatter, then an all-gather), and the whole operand
    for a ``collective-permute``, and ``(n - 1) / 2`` of the device's
    operand for an all-to-all (pieces are forwarded round the ring).
    """
    if group <= 1:
        return 0.0
    factor = (group - 1) / group
    if kind in ("all-gather", "reduce-scatter"):
        return nbytes * factor
    if kind == "all-reduce":
        return 2 * nbytes * factor
    if kind == "collective-permute":
        return float(nbytes)
    if kind == "all-to-all":
        # On the same one-way ring, the piece for the device k hops away is
        # forwarded k times: (1 + ... + (n - 1)) pieces of nbytes / n
        # (jaxcourse.collectives.bytes_sent prices direct links too).
        return nbytes * (group - 1) / 2
    raise ValueError(f"unknown collective {kind!r}; expected one of {KINDS}")


def collective_summary(found: Sequence[Collective]) -> dict[str, Any]:
    """Count collectives by kind and total the bytes one device sends."""
    counts = {kind: 0 for kind in KINDS}
    for item in found:
        counts[item.kind] += 1
    sent = sum(ring_bytes(c.kind, c.nbytes, c.group) for c in found)
    return {"counts": {k: v for k, v in counts.items() if v}, "bytes": sent}


def predicted_collectives(size: Size, layout: str, batch: int, data: int = 1,
                          model: int = 1, itemsize: int = F32,
                          regather: bool = False) -> list[Collective]:
    """Return the collectives one training step of ``layout`` needs, by reasoning.

    Parameters
    ----------
    size : Size
        The model whose step is predicted.
    layout : str
        Its layout, one of :data:`LAYOUTS`.
    batch : int
        The global batch.
    data, model : int
        The mesh's sizes.
    itemsize : int
        Bytes per number.
    regather : bool
        For the FSDP layouts: whether the backward pass gathers each weight
        again (ZeRO-3 proper, or FSDP under ``jax.checkpoint``) rather than
        keeping the forward pass's gathered copy.

    Returns
    -------
    list of Collective
        One entry per operand. Whenever the batch is split, the loss (one
        number) is summed over ``"data"``. Data parallel: an all-reduce of
        every weight's gradient over ``"data"``. FSDP: an all-gather of every
        weight (twice with ``regather``) and a reduce-scatter of every
        gradient. Tensor parallel: an all-reduce of a ``(batch / data, d)``
        activation per block forward, and per block but the first backward,
        over ``"model"``, plus the all-reduce of each weight piece's gradient
        over ``"data"`` when the batch is split. FSDP + TP: FSDP's collectives
        on each weight's ``1/model`` piece, over ``"data"``, and tensor
        parallelism's activations over ``"model"``.
    """
    check_layout(layout)
    weight = size.width * size.hidden * itemsize  # bytes of one weight matrix
    weights = 2 * size.layers
    found: list[Collective] = []
    if data > 1:
        # The loss, a mean over the whole batch: each group's sum, summed.
        found.append(Collective("all-reduce", itemsize, data))
    if layout == "data parallel":
        found += [Collective("all-reduce", weight, data)] * weights
    if layout in ("FSDP", "FSDP + TP"):
        piece = weight // (model if layout == "FSDP + TP" else 1)
        gathers = weights * (2 if regather else 1)
        found += [Collective("all-gather", piece, data)] * gathers
        found += [Collective("reduce-scatter", piece, data)] * weights
    if layout in ("tensor parallel", "FSDP + TP"):
        activation = batch // data * size.width * itemsize
        # Forward, one per block; backward, one per block but the first (no
        # gradient is needed for the inputs themselves).
        found += [Collective("all-reduce", activation, model)] * (2 * size.layers - 1)
        if layout == "tensor parallel" and data > 1:
            found += [Collective("all-reduce", weight // model, data)] * weights
    return found


def collective_steps(size: Size, layout: str, batch: int, data: int = 1,
                     model: int = 1, n: int = 4) -> list[tuple[str, str, np.ndarray]]:
    """Return the collectives of ``layout``'s step, as blocks to draw.

    Each entry is ``(lax name, what it moves × how many per step, blocks)``
    for :func:`jaxcourse.collectives.draw_steps`, drawn on ``n`` devices: a
    weight cut into ``n`` pieces is gathered, a gradient or a partial
    activation is summed (everywhere, or one piece per device). The counts
    are :func:`predicted_collectives`' for one step of ``size`` at ``batch``
    on a ``data × model`` mesh, the loss's one-number sum left out.
    """
    check_layout(layout)
    activation = batch // data * size.width * F32
    counts = {"weight": 0, "gradient": 0, "activation": 0}
    for c in predicted_collectives(size, layout, batch, data, model):
        if c.kind == "all-gather":
            counts["weight"] += 1
        elif c.kind == "reduce-scatter" or (c.kind == "all-reduce" and c.group == data
                                            and c.nbytes > F32):
            counts["gradient"] += 1
        elif c.kind == "all-reduce" and c.group == model and c.nbytes == activation:
            counts["activation"] += 1
    pieces = np.arange(n, dtype=float)[:, None]         # device d holds piece d
    partial = np.ones((n, n))                           # every device a partial sum
    steps = {"data parallel": [("psum", "gradient")],
             "FSDP": [("all_gather", "weight"), ("psum_scatter", "gradient")],
             "tensor parallel": [("psum", "activation")],
             "FSDP + TP": [("all_gather", "weight"), ("psum", "activation"),
                           ("psum_scatter", "gradient")]}[layout]
    return [(name, f"{what} × {counts[what]}",
             pieces if name == "all_gather" else partial) for name, what in steps]
