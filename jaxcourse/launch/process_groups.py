"""Which processes a compiled program's collectives join: its replica groups read.

Chapter 8 lays a mesh over simulated nodes (one process plays one node) with
:func:`jax.experimental.mesh_utils.create_hybrid_device_mesh` and asks, for
each collective of the compiled step, whether it stays inside a process or
crosses between them. The compiled HLO answers it: every collective names its
``replica_groups``, the sets of devices that combine their data. Under ``jit``
those numbers are positions in the program's device assignment, which for a
``NamedSharding`` is its mesh's devices in row-major order.

* :func:`replica_groups` reads the groups of one HLO instruction, in either
  spelling XLA prints (an explicit list, or an iota tile);
* :func:`grouped_collectives` lists the collectives of a program's text with
  their groups;
* :func:`processes_joined` maps each group to the processes its devices
  belong to, and :func:`crosses_processes` says whether any group spans two;
* :func:`axes_of_groups` names the mesh axes a collective runs over.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["KINDS", "GroupedCollective", "axes_of_groups", "crosses_processes",
           "grouped_collectives", "processes_joined", "replica_groups"]

#: The collectives of XLA's text that name replica groups.
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<shape>\(.*?\)|\S+)\s+"
    r"(?P<kind>" + "|".join(KINDS) + r")(?:-start)?\(")
_LIST = re.compile(r"replica_groups=\{((?:\{[\d,]*\},?)*)\}")
_IOTA = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")


class GroupedCollective(NamedTuple):
    """One collective of a compiled program, with the devices it combines.

    Attributes
    ----------
    name : str
        The instruction's name in the HLO (``all-reduce.3``).
    kind : str
        ``all-reduce``, ``all-gather``, ``reduce-scatter`` or ``all-to-all``.
    shape : str
        The per-device result's type without its layouts (``f32[4,16]``, or
        ``(f32[16,16], f32[16,16])`` for several operands combined in one).
    groups : tuple of tuple of int
        The replica groups: positions in the program's device assignment.
    """

    name: str
    kind: str
    shape: str
    groups: tuple[tuple[int, ...], ...]


def replica_groups(line: str) -> tuple[tuple[int, ...], ...]:
    """Return the replica groups that one line of HLO text names.

    Parameters
    ----------
    line : str
        One instruction of a compiled program's ``as_text()``.

    Returns
    -------
    tuple of tuple of int
        Each group's device positions. ``{{0,2},{1,3}}`` gives
        ``((0, 2), (1, 3))``; the iota tile ``[2,2]<=[2,2]T(1,0)`` (the
        numbers ``0 .. 3`` laid out as ``[2,2]``, transposed, then cut into 2
        groups of 2) gives the same.

    Raises
    ------
    ValueError
        If the line names no replica groups in a spelling read here.
    """
    if (found := _LIST.search(line)):
        return tuple(tuple(int(d) for d in group.split(",") if d)
                     for group in re.findall(r"\{([\d,]*)\}", found.group(1)))
    if (found := _IOTA.search(line)):
        count, size = int(found.group(1)), int(found.group(2))
        dims = [int(d) for d in found.group(3).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if found.group(4):
            ids = ids.transpose([int(p) for p in found.group(4).split(",")])
        return tuple(tuple(int(d) for d in row) for row in ids.reshape(count, size))
    raise ValueError(f"no replica groups read in: {line.strip()[:200]}")


def grouped_collectives(hlo_text: str) -> list[GroupedCollective]:
    """Return the collectives of a compiled program's text, in order, with their groups.

    Parameters
    ----------
    hlo_text : str
        ``jax.jit(f).lower(*args).compile().as_text()``.

    Returns
    -------
    list of GroupedCollective
        One entry per instruction; an asynchronous pair (``all-reduce-start``
        and its ``-done``) counts once, by its start.
    """
    found = []
    for line in hlo_text.splitlines():
        if (match := _INSTRUCTION.search(line)):
            shape = re.sub(r"\{[\d,]*\}", "", match.group("shape"))
            found.append(GroupedCollective(match.group("name"), match.group("kind"),
                                           shape, replica_groups(line)))
    return found


def processes_joined(groups: Sequence[Sequence[int]],
                     process_of: Sequence[int]) -> list[tuple[int, ...]]:
    """Return, for each group, the processes whose devices it combines.

    Parameters
    ----------
    groups : sequence of sequence of int
        Replica groups, as :func:`replica_groups` returns them.
    process_of : sequence of int
        ``process_of[i]`` is the process of the device at position ``i`` of
        the program's device assignment (for a mesh ``m``:
        ``[d.process_index for d in m.devices.flat]``).

    Returns
    -------
    list of tuple of int
        The sorted process indices of each group's devices.
    """
    return [tuple(sorted({int(process_of[i]) for i in group})) for group in groups]


def crosses_processes(groups: Sequence[Sequence[int]],
                      process_of: Sequence[int]) -> bool:
    """Return whether any group combines devices of more than one process.

    Parameters
    ----------
    groups : sequence of sequence of int
        Replica groups, as :func:`replica_groups` returns them.
    process_of : sequence of int
        The process of each device position (see :func:`processes_joined`).

    Returns
    -------
    bool
        True when the collective's data travels between processes (on a
        cluster, between nodes); False when every group stays inside one.
    """
    return any(len(joined) > 1 for joined in processes_joined(groups, process_of))


def axes_of_groups(groups: Sequence[Sequence[int]], mesh_shape: Sequence[int],
                   axis_names: Sequence[str]) -> tuple[str, ...]:
    """Return the mesh axes whose devices the groups combine.

    Parameters
    ----------
    groups : sequence of sequence of int
        Replica groups, as :func:`replica_groups` returns them.
    mesh_shape : sequence of int
        The mesh's shape; device position ``i`` is the ``i``-th device of
        the mesh in row-major order.
    axis_names : sequence of str
        The mesh's axis names, one per entry of ``mesh_shape``.

    Returns
    -------
    tuple of str
        The fewest axes, in mesh order, such that each group is one set of
        devices that differ only along them; ``()`` when no set of axes
        gives exactly these groups.
    """
    wanted = {frozenset(int(d) for d in group) for group in groups}
    ids = np.arange(int(np.prod(mesh_shape))).reshape(tuple(mesh_shape))
    rank = len(mesh_shape)
    for size in range(1, rank + 1):
        for axes in itertools.combinations(range(rank), size):
            others = [a for a in range(rank) if a not in axes]
            tiles = ids.transpose(others + list(axes)).reshape(
                -1, int(np.prod([mesh_shape[a] for a in axes])))
            if {frozenset(int(d) for d in row) for row in tiles} == wanted:
                return tuple(axis_names[a] for a in axes)
    return ()
