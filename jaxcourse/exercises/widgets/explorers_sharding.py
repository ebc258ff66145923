"""The sharding explorer: pick a mesh and a PartitionSpec, see the layout.

:class:`ShardingExplorer` lays an 8×8 example array out over 8 devices with
the mesh shape (8×1, 4×2 or 2×4, axes ``"a"`` and ``"b"``) and the
``PartitionSpec`` entries chosen in dropdowns, draws it with
``jax.debug.visualize_array_sharding`` and says whether a chosen operation on
it compiles to a program that communicates between devices. The work is done
by plain functions (:func:`place`, :func:`describe_layout`,
:func:`collectives`, :func:`communication_text`); the widget only wires the
dropdowns to them, so tests drive it without a browser.

It needs 8 devices: call ``jaxcourse.devices.use_cpu_devices(8)`` first.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from ...messages import message
from .explorer_base import Explorer, controls_row

__all__ = [
    "AXES",
    "COLLECTIVES",
    "MESH_SHAPES",
    "OPERATIONS",
    "SPEC_ENTRIES",
    "ShardingExplorer",
    "collective_counts",
    "collectives",
    "communication_text",
    "describe_layout",
    "place",
    "sharding_explorer",
]

AXES = ("a", "b")
MESH_SHAPES: dict[str, tuple[int, int]] = {"8×1": (8, 1), "4×2": (4, 2), "2×4": (2, 4)}
#: Dropdown label -> one PartitionSpec entry.
SPEC_ENTRIES: dict[str, Any] = {
    "None": None,
    "'a'": "a",
    "'b'": "b",
    "('a', 'b')": ("a", "b"),
}
#: Dropdown label -> an operation on the example array.
OPERATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "jnp.sin(x)": jnp.sin,
    "x.sum(axis=0)": lambda x: x.sum(axis=0),
    "x.sum(axis=1)": lambda x: x.sum(axis=1),
    "x @ x.T": lambda x: x @ x.T,
    "x.T @ x": lambda x: x.T @ x,
    "jnp.roll(x, 1, axis=0)": lambda x: jnp.roll(x, 1, axis=0),
}
SHAPE = (8, 8)
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
               "collective-permute")
# Matched as instructions, `name(`: the HLO text also holds metadata (file names).
_COLLECTIVE_OP = re.compile(r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def collective_counts(fn: Callable, *args: Any) -> np.ndarray:
    """Count each collective in the program XLA compiles for ``fn(*args)``.

    Returns
    -------
    numpy.ndarray
        One count per entry of :data:`COLLECTIVES`, in that order.
    """
    return compiled_collective_counts(jax.jit(fn).lower(*args).compile())


def compiled_collective_counts(compiled: Any) -> np.ndarray:
    """Count each collective in an already compiled program (``lower().compile()``).

    Returns
    -------
    numpy.ndarray
        One count per entry of :data:`COLLECTIVES`, in that order.
    """
    found = _COLLECTIVE_OP.findall(compiled.as_text())
    return np.array([found.count(name) for name in COLLECTIVES], dtype=np.int32)


def collectives(fn: Callable, *args: Any) -> list[str]:
    """Return the names of the collectives in the compiled ``fn(*args)``, sorted."""
    counts = collective_counts(fn, *args)
    return sorted(name for name, n in zip(COLLECTIVES, counts, strict=True) if n)


def place(mesh_shape: tuple[int, int], spec: P) -> jax.Array:
    """Lay the 8×8 example array (0, 1, ..., 63) out with ``spec`` on a mesh.

    Raises
    ------
    Exception
        JAX's error if the spec is invalid for the mesh (a mesh axis used
        twice, say).
    """
    devices = jax.devices()
    if len(devices) < 8:
        devices = jax.devices("cpu")  # the simulated ones, beside a single GPU
    mesh = jax.make_mesh(mesh_shape, AXES, axis_types=(AxisType.Auto,) * 2,
                         devices=devices[:8])
    x = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    return jax.device_put(x, NamedSharding(mesh, spec))


def _span(piece: slice, n: int) -> str:
    start, stop, _ = piece.indices(n)
    return f"{start}:{stop}"


def pieces(array: jax.Array) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    """Group the devices by the piece they hold: ``[(device ids, spans)]``."""
    groups: dict[tuple[str, ...], list[int]] = {}
    index_map = array.sharding.devices_indices_map(array.shape)
    for device in sorted(index_map, key=lambda d: d.id):
        spans = tuple(_span(s, n) for s, n in
                      zip(index_map[device], array.shape, strict=True))
        groups.setdefault(spans, []).append(device.id)
    return [(tuple(ids), spans) for spans, ids in groups.items()]


def describe_layout(array: jax.Array, language: str = "en") -> str:
    """Say in words how many pieces there are and where each one lives."""
    found = pieces(array)
    shape = array.sharding.shard_shape(array.shape)
    copies = len(found[0][0])
    where = (message("sharding_one_device", language) if copies == 1
             else message("sharding_copies", language, copies=copies))
    lines = [message("sharding_piece", language, shape=shape, where=where)
             if len(found) == 1 else
             message("sharding_pieces", language, n=len(found), shape=shape,
                     where=where)]
    for ids, (rows, columns) in found:
        lines.append(message("sharding_where", language, ids=",".join(map(str, ids)),
                             rows=rows, columns=columns))
    return "\n".join(lines)


def communication_text(operation: str, array: jax.Array, language: str = "en") -> str:
    """Compile ``OPERATIONS[operation]`` on ``array``; say if it communicates."""
    ops = collectives(OPERATIONS[operation], array)
    if not ops:
        return message("sharding_local", language, operation=operation)
    return message("sharding_communicates", language, operation=operation,
                   collectives=", ".join(ops))


def _narrow() -> widgets.Layout:
    # The mesh and spec dropdowns hold a few characters each: no 300 px boxes.
    return widgets.Layout(width="auto")


def spec_text(spec: P) -> str:
    """Return ``P('a', None)`` style text (PartitionSpec's repr in JAX 0.10)."""
    return repr(spec)


class ShardingExplorer(Explorer):
    """Dropdowns for a mesh, a PartitionSpec and an operation; redraws on change.

    Parameters
    ----------
    mesh : str
        Initial mesh, a key of :data:`MESH_SHAPES`.
    rows, columns : str
        Initial spec entries for dimensions 0 and 1, keys of :data:`SPEC_ENTRIES`.
    operation : str
        Initial operation, a key of :data:`OPERATIONS`.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Draw once right away.
    """

    def __init__(self, mesh: str = "4×2", rows: str = "'a'", columns: str = "None",
                 operation: str = "jnp.sin(x)", *, language: str = "en",
                 run: bool = True) -> None:
        super().__init__(language)
        self.array: jax.Array | None = None
        self.error = ""
        style = {"description_width": "initial"}
        self.mesh = widgets.Dropdown(options=list(MESH_SHAPES), value=mesh,
                                     description=self.label("sharding_mesh"),
                                     style=style, layout=_narrow())
        self.rows = widgets.Dropdown(options=list(SPEC_ENTRIES), value=rows,
                                     description=self.label("sharding_rows"),
                                     style=style, layout=_narrow())
        self.columns = widgets.Dropdown(options=list(SPEC_ENTRIES), value=columns,
                                        description=self.label("sharding_columns"),
                                        style=style, layout=_narrow())
        self.operation = widgets.Dropdown(options=list(OPERATIONS), value=operation,
                                          description=self.label("sharding_operation"),
                                          style=style)
        self.drawing = widgets.Output()
        self.layout_text = widgets.HTML()
        self.communication = widgets.HTML()
        self._on_change(self.redraw, self.mesh, self.rows, self.columns,
                        self.operation)
        self._assemble(
            [controls_row(self.mesh, self.rows, self.columns)],
            [self.drawing, self.layout_text, controls_row(self.operation),
             self.communication],
        )
        self._start(run, self.redraw)

    @property
    def spec(self) -> P:
        """The PartitionSpec the dropdowns describe."""
        return P(SPEC_ENTRIES[self.rows.value], SPEC_ENTRIES[self.columns.value])

    def redraw(self) -> str:
        """Place the array, draw it, describe it, check the operation.

        Returns the plain-text description (or the error, for an invalid spec).
        """
        self.drawing.clear_output()
        try:
            self.array = place(MESH_SHAPES[self.mesh.value], self.spec)
        except Exception as err:  # JAX's DuplicateSpecError is not a ValueError
            # E.g. P('a', ('a', 'b')): one mesh axis cannot split two dimensions.
            self.array, self.error = None, str(err).splitlines()[0]
            text = self.label("sharding_invalid", spec=spec_text(self.spec),
                              error=self.error)
            self.layout_text.value = f"<b style='color:#cf222e'>{html.escape(text)}</b>"
            self.communication.value = ""
            return text
        self.error = ""
        n_pieces = len(pieces(self.array))
        with self.drawing:
            # Two pieces get the same colour in visualize_array_sharding's
            # palette; borders tell them apart.
            jax.debug.visualize_array_sharding(self.array,
                                               use_color=n_pieces != 2)
        text = self.label("sharding_layout", spec=spec_text(self.spec),
                          mesh=self.mesh.value,
                          layout=describe_layout(self.array, self.language))
        self.layout_text.value = "<pre>" + html.escape(text) + "</pre>"
        self.communication.value = "<b>" + html.escape(communication_text(
            self.operation.value, self.array, self.language)) + "</b>"
        return text

    def live_text(self) -> str:
        """Return a deterministic plain-text form (for stored notebook outputs)."""
        return self.label("sharding_text")


def sharding_explorer(**initial: Any) -> ShardingExplorer:
    """Build the sharding explorer (drawn right away); see :class:`ShardingExplorer`."""
    return ShardingExplorer(**initial)
