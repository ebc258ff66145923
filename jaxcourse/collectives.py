"""Collectives inside ``shard_map``: a NumPy model, the real thing, and pictures.

Chapter 5 teaches ``jax.lax.psum``, ``all_gather``, ``psum_scatter``,
``ppermute`` and ``all_to_all`` by showing, for every device, the block it
holds before and after. This module is the one place that knows how:

* :func:`simulate` says what each device holds afterwards, in NumPy, from the
  blocks the devices held before (the definition of each collective);
* :func:`run_collective` runs the real JAX collective on a mesh of simulated
  devices (the jitted program is :func:`per_device_program`) and returns what
  each device holds, so the two can be compared;
* :func:`draw_collective` draws the before and after side by side, each
  number coloured by the device it came from (grey for a sum of all);
* :func:`bytes_sent` estimates how much data each device sends, on a ring or
  with direct links;
* :func:`line_mesh` builds the one-axis ``Auto`` mesh the chapter, its
  exercises and the explorer share, and :func:`ring_pairs` the pairs of a
  ring shift for ``ppermute``.

All blocks are one-dimensional here: ``blocks[d]`` is what device ``d``
holds. The chapter's notebooks need ``use_cpu_devices(8)`` before JAX starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxcourse.devices import mesh_devices

__all__ = [
    "NAMES",
    "SUM",
    "TOPOLOGIES",
    "bytes_sent",
    "draw_collective",
    "draw_steps",
    "line_mesh",
    "per_device_program",
    "ring_pairs",
    "run_collective",
    "simulate",
]

#: The collectives this module models, by their ``jax.lax`` name.
NAMES = ("psum", "all_gather", "psum_scatter", "ppermute", "all_to_all")
#: The origin given to an entry that is a sum over every device.
SUM = -1


def line_mesh(n: int, name: str = "i") -> Any:
    """Return a one-axis ``Auto`` mesh of the first ``n`` devices.

    Parameters
    ----------
    n : int
        Number of devices on the mesh axis.
    name : str
        The mesh axis name, used by the collectives.

    Raises
    ------
    DeviceSetupError
        If JAX has fewer than ``n`` devices; the message says what to do.
    """
    import jax
    from jax.sharding import AxisType

    return jax.make_mesh((n,), (name,), axis_types=(AxisType.Auto,),
                         devices=mesh_devices(n, first_cell=8))


def ring_pairs(n: int, shift: int = 1) -> list[tuple[int, int]]:
    """Return ``ppermute``'s pairs for a ring shift: ``d`` sends to ``d + shift``.

    Every device sends exactly once and receives exactly once, the last one
    wrapping around to the first (``shift`` may be negative).
    """
    return [(d, (d + shift) % n) for d in range(n)]


def _check_blocks(blocks: np.ndarray) -> np.ndarray:
    blocks = np.asarray(blocks)
    if blocks.ndim != 2:
        raise ValueError(f"blocks must be (devices, length), got shape {blocks.shape}")
    return blocks


def simulate(name: str, blocks: np.ndarray, shift: int = 1
             ) -> tuple[np.ndarray, np.ndarray]:
    """Say what every device holds after collective ``name``, in NumPy.

    Parameters
    ----------
    name : str
        One of :data:`NAMES`. ``all_gather``, ``psum_scatter`` and
        ``all_to_all`` are the ``tiled=True`` forms (blocks are concatenated
        or cut along their one axis).
    blocks : numpy.ndarray
        ``(n, length)``: row ``d`` is the block device ``d`` holds before.
        ``psum_scatter`` and ``all_to_all`` need ``length`` divisible by ``n``.
    shift : int
        For ``ppermute``: every device sends its block to device ``d + shift``.

    Returns
    -------
    values, origin : numpy.ndarray
        ``values[d]`` is what device ``d`` holds afterwards; ``origin[d, k]``
        is the device entry ``k`` came from, or :data:`SUM` for a sum over
        all devices.
    """
    blocks = _check_blocks(blocks)
    n, length = blocks.shape
    source = np.repeat(np.arange(n)[:, None], length, axis=1)
    if name == "psum":
        total = blocks.sum(axis=0)
        return np.tile(total, (n, 1)), np.full((n, length), SUM)
    if name == "all_gather":
        gathered = blocks.reshape(-1)
        return np.tile(gathered, (n, 1)), np.tile(source.reshape(-1), (n, 1))
    if name in ("psum_scatter", "all_to_all") and length % n:
        raise ValueError(f"{name} over {n} devices needs a block length divisible "
                         f"by {n}, got {length}")
    if name == "psum_scatter":
        piece = length // n
        values = blocks.sum(axis=0).reshape(n, piece)
        return values, np.full((n, piece), SUM)
    if name == "ppermute":
        order = [(d - shift) % n for d in range(n)]  # who device d receives from
        return blocks[order], source[order]
    if name == "all_to_all":
        piece = length // n
        cut = blocks.reshape(n, n, piece)   # [sender, receiver, piece]
        values = cut.transpose(1, 0, 2).reshape(n, length)
        origin = np.repeat(np.arange(n), piece)[None, :].repeat(n, axis=0)
        return values, origin
    raise ValueError(f"unknown collective {name!r}; expected one of {NAMES}")


def _collective(name: str, axis: str, n: int, shift: int):
    import jax

    if name == "psum":
        return lambda b: jax.lax.psum(b, axis)
    if name == "all_gather":
        return lambda b: jax.lax.all_gather(b, axis, tiled=True)
    if name == "psum_scatter":
        return lambda b: jax.lax.psum_scatter(b, axis, tiled=True)
    if name == "ppermute":
        return lambda b: jax.lax.ppermute(b, axis, ring_pairs(n, shift))
    if name == "all_to_all":
        return lambda b: jax.lax.all_to_all(b, axis, 0, 0, tiled=True)
    raise ValueError(f"unknown collective {name!r}; expected one of {NAMES}")


def per_device_program(name: str, mesh: Any, shift: int = 1) -> Any:
    """Return a jitted ``shard_map`` that applies collective ``name`` to each row.

    Its input is ``(n, length)``, one row per device; its output stacks what
    each device holds afterwards, one row per device, so nothing is lost even
    where the result is the same everywhere.
    """
    import jax
    from jax.sharding import PartitionSpec as P

    (axis,) = mesh.axis_names
    n = mesh.shape[axis]
    step = _collective(name, axis, n, shift)

    def on_one_device(row):
        # row: (1, length), this device's block; keep a leading axis of 1 so
        # out_specs P(axis) stacks the devices' results.
        return step(row[0])[None]

    return jax.jit(jax.shard_map(on_one_device, mesh=mesh, in_specs=P(axis),
                                 out_specs=P(axis)))


def run_collective(name: str, blocks: np.ndarray, mesh: Any, shift: int = 1
                   ) -> np.ndarray:
    """Run the real collective on ``mesh``; return what every device holds after.

    ``blocks`` is ``(n, length)`` with ``n`` the size of the mesh's one axis;
    the result has one row per device, like :func:`simulate`'s values.
    """
    blocks = _check_blocks(blocks)
    return np.asarray(per_device_program(name, mesh, shift)(blocks))


#: The two topologies :func:`bytes_sent` prices: a one-way ring, where each
#: device sends only to the next and pieces for farther devices are forwarded,
#: and direct links between every pair of devices (a full switch).
TOPOLOGIES = ("ring", "direct")


def bytes_sent(name: str, n: int, length: int, itemsize: int = 4,
               topology: str = "ring") -> int:
    """Estimate the bytes each device sends for collective ``name``.

    Per device, for a block of ``length`` items of ``itemsize`` bytes on ``n``
    devices, with the usual algorithms on ``topology`` (see
    :data:`TOPOLOGIES`): an all-gather sends ``n - 1`` blocks (on a ring, each
    block travels ``n - 1`` hops, one piece per step); a reduce-scatter
    ``(n - 1) / n`` of one; an all-reduce twice that (a reduce-scatter, then
    an all-gather of the pieces); a ring shift by one, one block. These are
    the same on both topologies. An all-to-all differs: with direct links
    each device sends the ``n - 1`` pieces that are not its own, ``(n - 1) /
    n`` of a block; on a one-way ring the piece for the device ``k`` hops
    away is sent ``k`` times (once by each device it passes), ``(n - 1) / 2``
    blocks in all. Real libraries pick other algorithms for other sizes and
    networks; the ratios between the collectives are what matters here.
    """
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown topology {topology!r}; expected one of {TOPOLOGIES}")
    block = length * itemsize
    if name == "psum":
        return 2 * (n - 1) * block // n
    if name == "all_gather":
        return (n - 1) * block
    if name == "psum_scatter":
        return (n - 1) * block // n
    if name == "all_to_all":
        if topology == "direct":
            return (n - 1) * block // n
        # Piece size block / n, sent 1 + 2 + ... + (n - 1) times.
        return (n - 1) * n // 2 * block // n
    if name == "ppermute":
        return block if n > 1 else 0
    raise ValueError(f"unknown collective {name!r}; expected one of {NAMES}")


def _colour(origin: int) -> Any:
    import matplotlib.pyplot as plt

    if origin == SUM:
        return "#d0d0d0"
    return plt.cm.tab10.colors[origin % 10]


def _draw_column(ax: Any, x: float, values: np.ndarray, origin: np.ndarray,
                 numbers: bool) -> None:
    from matplotlib.patches import Rectangle

    for k, (value, source) in enumerate(zip(values, origin, strict=True)):
        ax.add_patch(Rectangle((x - 0.4, -k - 1), 0.8, 1, facecolor=_colour(source),
                               edgecolor="white", linewidth=1.5))
        if numbers:
            text = f"{value:g}"
            ax.text(x, -k - 0.5, text, ha="center", va="center",
                    fontsize=8 if len(text) < 4 else 6,
                    color="black" if source == SUM else "white")


def draw_collective(name: str, blocks: np.ndarray, shift: int = 1,
                    title: str | None = None, language: str = "en") -> Any:
    """Draw what every device holds before and after collective ``name``.

    Each device is a column of cells, one per entry of its block, coloured by
    the device the entry came from (grey: a sum over every device). Numbers
    are written in the cells while they fit. The labels and the title are in
    ``language`` (``"en"``, ``"zh-Hant"`` or ``"zh-Hans"``; the Chinese ones
    switch matplotlib to a CJK font, :func:`jaxcourse.plotting.use_cjk_font`).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller shows or saves it).
    """
    import matplotlib.pyplot as plt

    from jaxcourse.messages import message

    blocks = _check_blocks(blocks)
    n, length = blocks.shape
    after, origin = simulate(name, blocks, shift)
    if language != "en":
        from jaxcourse.plotting import use_cjk_font

        use_cjk_font(script="SC" if language == "zh-Hans" else "TC")
    before_origin = np.repeat(np.arange(n)[:, None], length, axis=1)
    tallest = max(length, after.shape[1])
    height = 1.2 + 0.22 * tallest
    fig, axes = plt.subplots(1, 2, figsize=(2.2 + 0.75 * n, height),
                             sharey=True)
    for ax, data, source, label in (
            (axes[0], blocks, before_origin, message("draw_before", language)),
            (axes[1], after, origin, message("draw_after", language))):
        for d in range(n):
            _draw_column(ax, d, data[d], source[d], numbers=tallest <= 16)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylim(-tallest - 0.2, 0.2)
        ax.set_xticks(range(n), [str(d) for d in range(n)])
        ax.set_xlabel(message("draw_device", language))
        ax.set_yticks([])
        ax.set_title(label)
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    fig.suptitle(title or _title(name, shift, language))
    fig.tight_layout()
    return fig


def _title(name: str, shift: int, language: str = "en") -> str:
    from jaxcourse.messages import message

    if name == "ppermute":
        return message("draw_title_ppermute", language,
                       sign="+" if shift >= 0 else "-", shift=abs(shift))
    return message(f"draw_title_{name}", language)


def draw_steps(rows: list[tuple[str, list[tuple[str, str, np.ndarray]]]],
               width: float = 6.4) -> Any:
    """Draw several programs' collectives, each as :func:`draw_collective` does.

    Parameters
    ----------
    rows : list
        One ``(label, steps)`` per program; each step is ``(name, what,
        blocks)``: collective ``name`` applied to ``blocks`` (``(n, length)``,
        as for :func:`simulate`), ``what`` saying what the blocks are. A step
        is drawn in one panel: the devices' columns before, an arrow, and the
        columns after, coloured by the device each entry came from (grey: a
        sum over every device).
    width : float
        Figure width in inches (the book's text column is 6.4).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not shown; the caller shows or saves it).
    """
    import matplotlib.pyplot as plt

    columns = max(len(steps) for _, steps in rows)
    tallest = max(max(_check_blocks(b).shape[1], simulate(name, b)[0].shape[1])
                  for _, steps in rows for name, _, b in steps)
    fig, axes = plt.subplots(len(rows), columns, squeeze=False,
                             figsize=(width, len(rows) * (0.75 + 0.16 * tallest)))
    for r, (label, steps) in enumerate(rows):
        for c in range(columns):
            ax = axes[r, c]
            ax.set_axis_off()
            if c >= len(steps):
                continue
            name, what, blocks = steps[c]
            blocks = _check_blocks(blocks)
            n, length = blocks.shape
            after, origin = simulate(name, blocks)
            before_origin = np.repeat(np.arange(n)[:, None], length, axis=1)
            for d in range(n):
                _draw_column(ax, d, blocks[d], before_origin[d], numbers=False)
                _draw_column(ax, n + 1 + d, after[d], origin[d], numbers=False)
            ax.annotate("", xy=(n + 0.45, -1), xytext=(n - 0.45, -1),
                        arrowprops={"arrowstyle": "->", "lw": 1.2})
            ax.set_xlim(-0.6, 2 * n + 0.6)
            ax.set_ylim(-tallest - 0.2, 0.2)
            ax.set_title(f"{name}: {what}", fontsize=10)
        axes[r, 0].text(-0.04, 0.5, label, transform=axes[r, 0].transAxes,
                        rotation=90, ha="right", va="center", fontsize=10)
    fig.tight_layout()
    return fig
